// Strategy: how a task chooses the configs to measure. Ask/tell: Ask() hands out the
// next batch of valid, never-proposed configs (the caller passes what is already taken,
// e.g. results recovered after a restart); Tell() reports a result in any order.
// Deterministic given the seed and the order of calls. Owned by one task, used only by
// the coordinator's loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"

namespace tunefleet::coordinator {

struct Batch {
  std::vector<ConfigIndex> configs;  // valid configs, in proposal order
  // Set when configs are exactly the valid configs of the product range [begin, end):
  // the job is then sent as that compact range.
  bool is_range = false;
  ConfigIndex begin = 0, end = 0;
};

class Strategy {
 public:
  using Taken = std::function<bool(ConfigIndex)>;
  virtual ~Strategy() = default;
  // Up to max_configs configs; an empty batch means the strategy has nothing left.
  virtual Batch Ask(size_t max_configs, const Taken& taken) = 0;
  // latency is nullopt for a config that failed.
  virtual void Tell(ConfigIndex index, std::optional<double> latency_us) = 0;
  // Configs per job this strategy wants when the submission names none (0: the
  // coordinator's default). Strategies that learn from results want small jobs, so
  // most of the budget is spent after they have seen something.
  virtual size_t PreferredJobSize() const { return 0; }
  // True when what it proposes does not depend on results (exhaustive, random): restored
  // from its checkpoint it continues exactly whatever was told since, so the coordinator
  // keeps no plan log for it (plan_replay.h), which would cost a write per job.
  virtual bool IgnoresResults() const { return false; }

  // Everything Ask and Tell depend on, as bytes. Restore() on a strategy made with the
  // same name, space and seed continues exactly as this one would (same proposals for
  // the same results). kInvalidArgument when the bytes are not such a checkpoint; the
  // strategy is then unusable and must be recreated.
  virtual std::string Checkpoint() const = 0;
  virtual Status Restore(std::string_view bytes) = 0;
};

// What one exhaustive Ask scans of the product at most, once it has a config: at least
// this many indices, and twice the configs asked for (so a space at least half valid
// still fills its jobs). On a sparse space a job then holds fewer configs than asked,
// and the coordinator's loop, which plans it, stays responsive: a 512-config job of a
// 2%-valid MatMul scanned 22,000 indices, 40-800 ms under ASan and load, long enough for
// its workers to miss heartbeats; 4,096 take about 0.4 ms (bench/space_scan).
inline constexpr ConfigIndex kExhaustiveScanPerAsk = 4096;

// "exhaustive" walks the valid space in index order; "random" draws valid configs
// uniformly without replacement; "annealing", "genetic", "ils" (iterated local search)
// and "model" (surrogate-model-guided evolution) learn from results; "auto", the
// default, picks by the space's size and the budget what bench/strategies and
// bench/npu_strategies measured best (AutoChoice, strategy.cc).
// kInvalidArgument listing the known names otherwise. The space must outlive the strategy.
// `budget` is the evaluations the task may spend (0: the whole valid space), and
// `ends_early` says a time limit or patience may end it before that; only "auto" looks
// at them.
Result<std::unique_ptr<Strategy>> MakeStrategy(const std::string& name, const SearchSpace& space,
                                               uint64_t seed, uint64_t budget = 0, bool ends_early = false);
// What "auto" chooses for a space of `space_size` configs and `budget` evaluations. With
// no evaluation budget it walks the whole valid space in order, unless `ends_early`: a
// walk cut short by seconds or patience has seen only the first configs in index order
// (the default tilings' 32.151 us where annealing found 23.813 in the same 2 s), so it
// searches as for an open-ended budget.
std::string AutoChoice(ConfigIndex space_size, uint64_t budget, bool ends_early = false);
// The name a knowledge-base entry keeps: `name`, and for "auto" its choice, "auto (model)".
std::string StrategyThatRan(const std::string& name, ConfigIndex space_size, uint64_t budget,
                            bool ends_early = false);
std::vector<std::string> StrategyNames();
// kInvalidArgument listing the known names when name is not one of them.
Status CheckStrategyName(const std::string& name);

}  // namespace tunefleet::coordinator
