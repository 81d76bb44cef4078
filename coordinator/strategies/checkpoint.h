// Checkpoint bytes of a strategy's state (Strategy::Checkpoint / Restore): a tag naming
// the strategy, then fixed-width little-endian fields. The writer appends; the reader
// reports the first short or mismatched read as one kInvalidArgument, so a corrupt or
// foreign checkpoint is refused instead of restoring half a state. Plain values.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"

namespace tunefleet::coordinator {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string_view tag) { String(tag); }
  void U64(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void F64(double v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void String(std::string_view s) {
    U64(s.size());
    out_.append(s);
  }
  void Rng(const std::mt19937_64& rng) {
    std::ostringstream s;
    s << rng;
    String(s.str());
  }
  void Indices(const std::vector<ConfigIndex>& v) {
    U64(v.size());
    for (ConfigIndex i : v) U64(i);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class CheckpointReader {
 public:
  // Fails later reads (and status()) when the tag differs.
  CheckpointReader(std::string_view bytes, std::string_view tag) : in_(bytes) {
    if (String() != tag) Fail("it is not a checkpoint of strategy '" + std::string(tag) + "'");
  }
  uint64_t U64() {
    uint64_t v = 0;
    Read(&v, sizeof v);
    return v;
  }
  double F64() {
    double v = 0;
    Read(&v, sizeof v);
    return v;
  }
  std::string String() {
    uint64_t n = U64();
    if (n > in_.size()) {
      Fail("a string runs past the end");
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  void Rng(std::mt19937_64& rng) {
    std::istringstream s(String());
    s >> rng;
    if (!s) Fail("the random generator state does not parse");
  }
  std::vector<ConfigIndex> Indices() {
    uint64_t n = U64();
    if (n > in_.size() / 8) {
      Fail("an index list runs past the end");
      return {};
    }
    std::vector<ConfigIndex> v(n);
    for (auto& i : v) i = U64();
    return v;
  }
  bool failed() const { return !error_.empty(); }
  // OK when every read succeeded and nothing is left over.
  Status status() const {
    if (error_.empty() && !in_.empty()) return InvalidArgument("strategy checkpoint has trailing bytes");
    return error_.empty() ? Status::Ok() : InvalidArgument("strategy checkpoint unreadable: " + error_);
  }

 private:
  void Read(void* out, size_t n) {
    if (in_.size() < n) {
      Fail("it ends early");
      return;
    }
    std::memcpy(out, in_.data(), n);
    in_.remove_prefix(n);
  }
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    in_ = {};
  }
  std::string_view in_;
  std::string error_;
};

}  // namespace tunefleet::coordinator
