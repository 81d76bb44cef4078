// KtCache: a Kernel Tuner cache file (../shared/datasets/README.md) as a search space
// plus one measured outcome per config index. The space is the FULL product of
// `tune_params` in `tune_params_keys` order (indices are the product's). The kernel's
// restrictions are not known in advance (Schoonhoven et al. 2022), so a config absent
// from `cache` is simply absent. The device's capacity is known: as Kernel Tuner does for
// every search space, configs whose block_size_x x block_size_y x block_size_z exceeds
// kMaxThreadsPerBlock (1024 on every CUDA and HIP GPU) are a constraint, unless the cache
// measured such a block (its device runs them). Config values are int64: a parameter
// whose values are all JSON integers keeps them; any other parameter (floats, strings,
// booleans) is encoded by position 0..n-1 in its list, and value_labels() keeps the
// original text. Immutable once loaded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {

class KtCache {
 public:
  static constexpr int64_t kMaxThreadsPerBlock = 1024;  // Kernel Tuner's max_threads
  enum class Outcome { kMeasured, kFailed, kAbsent };
  struct Measurement {
    Outcome outcome = Outcome::kAbsent;
    double time_ms = 0;    // the objective, when kMeasured
    std::string failure;   // e.g. "CompilationFailedConfig", when kFailed
  };

  // Reads a .json or .json.gz file (gzip is detected from the content, not the name).
  // kNotFound when the file cannot be opened; kInvalidArgument naming the path and what
  // is wrong for a corrupt gzip stream, bad JSON or a cache that breaks the format.
  static Result<KtCache> Load(const std::string& path);
  // Parses the JSON text; `source` names it in error messages.
  static Result<KtCache> Parse(std::string_view json_text, std::string_view source);

  const SearchSpace& space() const { return space_; }
  const std::string& kernel_name() const { return kernel_name_; }
  const std::string& device_name() const { return device_name_; }
  // Per parameter, each value's text as in the file (e.g. "1.5", "\"float4\"").
  const std::vector<std::vector<std::string>>& value_labels() const { return value_labels_; }
  // True for the parameters encoded by position rather than by value.
  const std::vector<bool>& by_position() const { return by_position_; }

  // kAbsent for an index outside the product as well as for one missing from `cache`.
  Measurement Lookup(ConfigIndex index) const;
  size_t measured_count() const { return measured_count_; }
  size_t failed_count() const { return failed_count_; }
  // kMaxThreadsPerBlock when the space carries it as a constraint, else 0.
  int64_t thread_limit() const { return thread_limit_; }
  // The fastest measured config and its time; requires measured_count() > 0.
  ConfigIndex best_index() const { return best_index_; }
  double best_time_ms() const { return best_time_ms_; }

 private:
  explicit KtCache(SearchSpace space) : space_(std::move(space)) {}
  // Rebuilds space_ from `params` with the threads-per-block constraint when the cache
  // has block sizes and measured no block over kMaxThreadsPerBlock.
  Status ApplyThreadLimit(std::vector<Parameter> params);

  SearchSpace space_;
  std::string kernel_name_;
  std::string device_name_;
  std::vector<std::vector<std::string>> value_labels_;
  std::vector<bool> by_position_;
  std::unordered_map<ConfigIndex, Measurement> entries_;
  size_t measured_count_ = 0;
  size_t failed_count_ = 0;
  int64_t thread_limit_ = 0;
  ConfigIndex best_index_ = 0;
  double best_time_ms_ = 0;
};

// Tuning over measured data: an op key with SoC kReplaySoc and a cache's kernel name as
// its op type (attr "device", when given, must be the cache's device_name; inputs only
// name the problem) is tuned over the cache's full product. Workers started with
// `--evaluator replay` advertise kReplaySoc and serve the times.
inline constexpr std::string_view kReplaySoc = "replay";

// The tuning problem of `key` over `cache`: its space, and the product's first config as
// the baseline (a Kernel Tuner cache names no default). kInvalidArgument naming what to
// fix when the key's SoC is not kReplaySoc, its op type is not the cache's kernel or its
// attr "device" names another device.
Result<TuningProblem> MakeReplayProblem(const OpKey& key, const KtCache& cache);

}  // namespace tunefleet
