// SearchSpace: an op's tuning space as ordered parameters (each a finite list of
// values) plus constraints. A config is a mixed-radix index into the product of the
// value lists (last parameter varies fastest), so [begin, end) is a compact job.
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/status.h"

namespace tunefleet {

using ConfigIndex = uint64_t;
using Config = std::vector<int64_t>;  // one value per parameter, in parameter order

struct Parameter {
  std::string name;
  std::vector<int64_t> values;  // distinct, non-empty
};

class SearchSpace {
 public:
  // Whether the config satisfies the constraint. When it does not and `why` is not null,
  // *why is set to a reason that names the violated quantity, e.g. "L0A footprint 81920 B
  // exceeds l0_a_size 65536 B" (Violated() below). Reasons are built only when asked
  // for: strategies scan sparse spaces (an exhaustive job of a 32x64x32 MatMul checks
  // 22,000 configs for 512) and formatting a reason for each was most of the cost.
  using Check = std::function<bool(const SearchSpace& space, const Config& config, std::string* why)>;
  struct Constraint {
    std::string name;
    Check check;
  };

  // Fails with kInvalidArgument on an empty parameter list, an empty or duplicated
  // value list, duplicate names, or a product that overflows 2^63.
  static Result<SearchSpace> Create(std::vector<Parameter> params,
                                    std::vector<Constraint> constraints);

  size_t dims() const { return params_.size(); }
  const std::vector<Parameter>& params() const { return params_; }
  // Number of configs in the full product (valid or not).
  uint64_t size() const { return size_; }

  // Requires index < size().
  Config Decode(ConfigIndex index) const;
  void DecodeInto(ConfigIndex index, Config& out) const;
  // kInvalidArgument when a value is not in its parameter's list or dims differ.
  Result<ConfigIndex> Encode(const Config& config) const;

  // Position of a parameter by name; -1 if absent.
  int IndexOf(std::string_view name) const;
  // A config given by parameter name (a knowledge-base entry's best_config), in
  // parameter order; kInvalidArgument naming a parameter it lacks. Names the space does
  // not have are ignored; values are not checked (Encode, Validate).
  Result<Config> FromNamed(const std::vector<std::pair<std::string, int64_t>>& named) const;
  // Value of the named parameter in config; requires the name to exist.
  int64_t Get(const Config& config, std::string_view name) const;

  // OK, or kInvalidArgument naming the first violated constraint and why.
  Status Validate(const Config& config) const;
  Status ValidateIndex(ConfigIndex index) const;
  // Validate(config).ok() without building a reason: for scans over many configs.
  // Requires config.size() == dims().
  bool IsValid(const Config& config) const;
  // False also for an index outside the space.
  bool IsValidIndex(ConfigIndex index) const;

  // Calls fn for every valid index in increasing order; stops early when fn returns false.
  void ForEachValid(const std::function<bool(ConfigIndex)>& fn) const;
  std::vector<ConfigIndex> EnumerateValid() const;

  // "baseM=128 baseN=256 ..." in parameter order.
  std::string Describe(const Config& config) const;

 private:
  SearchSpace(std::vector<Parameter> params, std::vector<Constraint> constraints);

  std::vector<Parameter> params_;
  std::vector<Constraint> constraints_;
  std::vector<uint64_t> radix_;
  uint64_t size_ = 0;
};

// For a Check's body: false, with *why = explain() when a reason was asked for.
template <typename Explain>
bool Violated(std::string* why, Explain&& explain) {
  if (why) *why = explain();
  return false;
}

}  // namespace tunefleet
