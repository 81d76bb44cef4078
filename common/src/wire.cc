#include "tunefleet/common/wire.h"

#include <cstring>

#include "tunefleet/common/protocol.h"

namespace tunefleet::wire {

Outgoing::Outgoing() : envelope_(builder_.initRoot<schema::Envelope>()) {
  envelope_.setProtocolVersion(schema::PROTOCOL_VERSION);
}

kj::Array<capnp::word> Outgoing::Encode() { return capnp::messageToFlatArray(builder_); }

Result<std::unique_ptr<Incoming>> Decode(const void* data, size_t size) {
  if (size == 0 || size % sizeof(capnp::word) != 0) {
    return InvalidArgument("message of " + std::to_string(size) +
                           " bytes is not a whole number of Cap'n Proto words");
  }
  std::unique_ptr<Incoming> in(new Incoming());
  // ZeroMQ frames are not guaranteed word-aligned; copy into owned, aligned words.
  in->words_ = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(in->words_.begin(), data, size);
  capnp::ReaderOptions options;
  options.traversalLimitInWords = protocol::kTraversalLimitWords;
  options.nestingLimit = protocol::kNestingLimit;
  Status s = Guard("decode", [&]() -> Status {
    in->reader_ = std::make_unique<capnp::FlatArrayMessageReader>(in->words_.asPtr(), options);
    in->envelope_ = in->reader_->getRoot<schema::Envelope>();
    uint32_t version = in->envelope_.getProtocolVersion();
    if (version != schema::PROTOCOL_VERSION) {
      return InvalidArgument("protocol version " + std::to_string(version) +
                             " is not supported (this build speaks " +
                             std::to_string(schema::PROTOCOL_VERSION) + ")");
    }
    // Touch the union so a body pointer out of bounds fails here, not later.
    (void)in->envelope_.getBody().which();
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return in;
}

void FillOpKey(schema::OpKey::Builder b, const OpKey& key) {
  b.setSoc(key.soc);
  b.setOpType(key.op_type);
  auto inputs = b.initInputs(static_cast<unsigned>(key.inputs.size()));
  for (unsigned i = 0; i < key.inputs.size(); ++i) {
    const TensorDesc& t = key.inputs[i];
    auto shape = inputs[i].initShape(static_cast<unsigned>(t.shape.size()));
    for (unsigned d = 0; d < t.shape.size(); ++d) shape.set(d, t.shape[d]);
    inputs[i].setDtype(t.dtype);
    inputs[i].setFormat(t.format);
  }
  auto attrs = b.initAttrs(static_cast<unsigned>(key.attrs.size()));
  unsigned i = 0;
  for (const auto& [k, v] : key.attrs) {
    attrs[i].setName(k);
    attrs[i].setValue(v);
    ++i;
  }
  b.setModelVersion(key.model_version);
}

Result<OpKey> ReadOpKey(schema::OpKey::Reader r) {
  OpKey key;
  key.soc = r.getSoc();
  key.op_type = r.getOpType();
  if (key.soc.empty()) return InvalidArgument("op key has no SoC");
  if (key.op_type.empty()) return InvalidArgument("op key has no op type");
  for (auto t : r.getInputs()) {
    TensorDesc d;
    for (int64_t dim : t.getShape()) {
      if (dim <= 0) return InvalidArgument("op key input shape holds a non-positive dimension");
      d.shape.push_back(dim);
    }
    TF_RETURN_IF_ERROR(CheckTensorSize(d.shape, "op key input"));
    d.dtype = t.getDtype();
    d.format = t.getFormat();
    key.inputs.push_back(std::move(d));
  }
  for (auto a : r.getAttrs()) key.attrs[a.getName()] = a.getValue();
  key.model_version = r.getModelVersion();
  return key;
}

void FillConfig(capnp::List<schema::ParamValue>::Builder b, const SearchSpace& space,
                const Config& config) {
  for (unsigned i = 0; i < b.size() && i < config.size(); ++i) {
    b[i].setName(space.params()[i].name);
    b[i].setValue(config[i]);
  }
}

void FillFailureReasons(capnp::List<schema::FailureCount>::Builder out, const FailureReasons& reasons) {
  for (unsigned i = 0; i < out.size() && i < reasons.size(); ++i) {
    out[i].setReason(reasons[i].first);
    out[i].setCount(reasons[i].second);
  }
}

FailureReasons ReadFailureReasons(capnp::List<schema::FailureCount>::Reader in) {
  FailureReasons out;
  for (auto f : in) out.emplace_back(f.getReason(), f.getCount());
  return out;
}

void FillKbRecord(schema::KbRecord::Builder b, const KbEntry& e) {
  FillOpKey(b.initOpKey(), e.key);
  b.setBestConfigIndex(e.best_index);
  auto cfg = b.initBestConfig(static_cast<unsigned>(e.best_config.size()));
  for (unsigned i = 0; i < e.best_config.size(); ++i) {
    cfg[i].setName(e.best_config[i].first);
    cfg[i].setValue(e.best_config[i].second);
  }
  b.setBestLatencyUs(e.best_latency_us);
  b.setBaselineLatencyUs(e.baseline_latency_us);
  b.setImprovement(e.improvement);
  b.setStrategy(e.strategy);
  b.setEvaluations(e.evaluations);
  b.setJobId(e.job_id);
  b.setTimestampUnixMs(e.timestamp_ms);
  b.setSoc(e.key.soc);
  b.setModelVersion(e.key.model_version);
}

Result<KbEntry> ReadKbRecord(schema::KbRecord::Reader r) {
  KbEntry e;
  TF_ASSIGN_OR_RETURN(e.key, ReadOpKey(r.getOpKey()));
  e.best_index = r.getBestConfigIndex();
  for (auto p : r.getBestConfig()) e.best_config.emplace_back(p.getName(), p.getValue());
  e.best_latency_us = r.getBestLatencyUs();
  e.baseline_latency_us = r.getBaselineLatencyUs();
  e.improvement = r.getImprovement();
  e.strategy = r.getStrategy();
  e.evaluations = r.getEvaluations();
  e.job_id = r.getJobId();
  e.timestamp_ms = r.getTimestampUnixMs();
  return e;
}

}  // namespace tunefleet::wire
