// Wire encoding: every socket carries one Cap'n Proto Envelope per message. This is
// the one place Cap'n Proto errors become Status: Decode() bounds traversal and
// nesting, checks the protocol version, and turns any throw into kInvalidArgument.
// Also converts OpKey, KbEntry and config values between tunefleet types and schema
// builders.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>

#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"
#include "tunefleet/schemas/envelope.capnp.h"
#include "tunefleet/schemas/kb.capnp.h"

namespace tunefleet::wire {

// A message being built: call Body() to fill exactly one union member, then Encode().
class Outgoing {
 public:
  Outgoing();
  schema::Envelope::Builder Envelope() { return envelope_; }
  schema::Envelope::Body::Builder Body() { return envelope_.initBody(); }
  // Flat bytes ready for a ZeroMQ frame.
  kj::Array<capnp::word> Encode();

 private:
  capnp::MallocMessageBuilder builder_;
  schema::Envelope::Builder envelope_;
};

// A received message; owns its words so readers stay valid while it lives.
class Incoming {
 public:
  schema::Envelope::Reader Envelope() const { return envelope_; }
  schema::Envelope::Body::Which Which() const { return envelope_.getBody().which(); }

 private:
  friend Result<std::unique_ptr<Incoming>> Decode(const void* data, size_t size);
  Incoming() = default;
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  schema::Envelope::Reader envelope_;
};

// kInvalidArgument for a truncated or malformed message, one over the traversal
// limits, or a protocol version other than schema::PROTOCOL_VERSION.
Result<std::unique_ptr<Incoming>> Decode(const void* data, size_t size);

// Runs fn (which may throw kj::Exception on a malformed message) and converts a
// throw into kInvalidArgument with context. Use around every message handler.
template <typename Fn>
Status Guard(const char* context, Fn&& fn) {
  try {
    return fn();
  } catch (const kj::Exception& e) {
    return InvalidArgument(std::string(context) + ": malformed message: " +
                           e.getDescription().cStr());
  }
}

void FillOpKey(schema::OpKey::Builder b, const OpKey& key);
// kInvalidArgument naming the field when the reader is structurally wrong.
Result<OpKey> ReadOpKey(schema::OpKey::Reader r);

// The knowledge-base record on the wire and on disk (schemas/kb.capnp KbRecord).
void FillKbRecord(schema::KbRecord::Builder b, const KbEntry& e);
Result<KbEntry> ReadKbRecord(schema::KbRecord::Reader r);

// Why a task's configs failed, with counts (schemas/kb.capnp FailureCount): in the task
// record on disk and in status replies.
using FailureReasons = std::vector<std::pair<std::string, uint64_t>>;
void FillFailureReasons(capnp::List<schema::FailureCount>::Builder out, const FailureReasons& reasons);
FailureReasons ReadFailureReasons(capnp::List<schema::FailureCount>::Reader in);

void FillConfig(capnp::List<schema::ParamValue>::Builder b, const SearchSpace& space,
                const Config& config);

}  // namespace tunefleet::wire
