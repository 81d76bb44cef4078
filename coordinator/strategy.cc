#include "coordinator/strategy.h"

#include "coordinator/strategies/checkpoint.h"
#include "coordinator/strategies/guided.h"

#include <algorithm>
#include <random>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tunefleet::coordinator {
namespace {

class ExhaustiveStrategy final : public Strategy {
 public:
  explicit ExhaustiveStrategy(const SearchSpace& space) : space_(space) {}

  Batch Ask(size_t max_configs, const Taken& taken) override {
    Batch b;
    b.is_range = true;
    b.begin = cursor_;
    bool hole = false;  // a taken valid config inside the range: must send a list
    const ConfigIndex scan = std::max<ConfigIndex>(kExhaustiveScanPerAsk, 2 * static_cast<ConfigIndex>(max_configs));
    while (cursor_ < space_.size() && b.configs.size() < max_configs &&
           (b.configs.empty() || cursor_ - b.begin < scan)) {
      ConfigIndex i = cursor_++;
      space_.DecodeInto(i, config_);
      if (!space_.IsValid(config_)) continue;
      if (taken && taken(i)) {
        hole = true;
        continue;
      }
      b.configs.push_back(i);
    }
    b.end = cursor_;
    if (hole) b.is_range = false;
    if (b.configs.empty()) b.is_range = false;
    return b;
  }
  void Tell(ConfigIndex, std::optional<double>) override {}
  bool IgnoresResults() const override { return true; }

  std::string Checkpoint() const override {
    CheckpointWriter w("exhaustive");
    w.U64(cursor_);
    return w.Take();
  }
  Status Restore(std::string_view bytes) override {
    CheckpointReader r(bytes, "exhaustive");
    cursor_ = r.U64();
    return r.status();
  }

 private:
  const SearchSpace& space_;
  ConfigIndex cursor_ = 0;
  Config config_;
};

// Rejection sampling over the product while valid configs are plentiful; once draws
// mostly miss, it enumerates what is left and shuffles it, so it always terminates.
class RandomStrategy final : public Strategy {
 public:
  RandomStrategy(const SearchSpace& space, uint64_t seed) : space_(space), rng_(seed) {}

  Batch Ask(size_t max_configs, const Taken& taken) override {
    Batch b;
    while (b.configs.size() < max_configs) {
      std::optional<ConfigIndex> next = Next(taken);
      if (!next) break;
      b.configs.push_back(*next);
    }
    return b;
  }
  void Tell(ConfigIndex, std::optional<double>) override {}
  bool IgnoresResults() const override { return true; }

  std::string Checkpoint() const override {
    CheckpointWriter w("random");
    w.Rng(rng_);
    std::vector<ConfigIndex> proposed(proposed_.begin(), proposed_.end());
    std::sort(proposed.begin(), proposed.end());
    w.Indices(proposed);
    w.U64(enumerated_);
    w.Indices(rest_);
    return w.Take();
  }
  Status Restore(std::string_view bytes) override {
    CheckpointReader r(bytes, "random");
    r.Rng(rng_);
    std::vector<ConfigIndex> proposed = r.Indices();
    proposed_ = std::unordered_set<ConfigIndex>(proposed.begin(), proposed.end());
    enumerated_ = r.U64() != 0;
    rest_ = r.Indices();
    return r.status();
  }

 private:
  // A draw the task already has (the default tiling, a warm start, or -- after a restart
  // -- a result recorded since the checkpoint this was restored from) is consumed as the
  // uninterrupted run consumed it: remembered as proposed, and not counted as a miss. So
  // a restored random task redraws its recorded configs, skips them, and goes on with the
  // very draws the uninterrupted run made next. (Counting them as misses switched a task
  // with more than kMaxRejections results since its checkpoint to a reshuffled
  // enumeration, and it ended with another best.)
  std::optional<ConfigIndex> Next(const Taken& taken) {
    if (!enumerated_) {
      std::uniform_int_distribution<ConfigIndex> dist(0, space_.size() - 1);
      for (int misses = 0; misses < kMaxRejections;) {
        ConfigIndex i = dist(rng_);
        if (proposed_.count(i)) {
          ++misses;
          continue;
        }
        space_.DecodeInto(i, config_);
        if (!space_.IsValid(config_)) {
          ++misses;
          continue;
        }
        proposed_.insert(i);
        if (taken && taken(i)) {
          misses = 0;
          continue;
        }
        return i;
      }
      enumerated_ = true;
      space_.ForEachValid([&](ConfigIndex i) {
        if (!proposed_.count(i)) rest_.push_back(i);
        return true;
      });
      std::shuffle(rest_.begin(), rest_.end(), rng_);
      std::reverse(rest_.begin(), rest_.end());  // pop_back yields the shuffled order
    }
    while (!rest_.empty()) {
      ConfigIndex i = rest_.back();
      rest_.pop_back();
      proposed_.insert(i);
      if (!taken || !taken(i)) return i;
    }
    return std::nullopt;
  }

  static constexpr int kMaxRejections = 256;
  const SearchSpace& space_;
  std::mt19937_64 rng_;
  std::unordered_set<ConfigIndex> proposed_;
  bool enumerated_ = false;
  std::vector<ConfigIndex> rest_;
  Config config_;
};

}  // namespace

Status CheckStrategyName(const std::string& name) {
  for (const auto& n : StrategyNames()) {
    if (n == name) return Status::Ok();
  }
  return InvalidArgument(fmt::format("unknown strategy '{}' (known: {})", name, fmt::join(StrategyNames(), ", ")));
}

Result<std::unique_ptr<Strategy>> MakeStrategy(const std::string& name, const SearchSpace& space,
                                               uint64_t seed, uint64_t budget, bool ends_early) {
  if (name == "exhaustive") return std::unique_ptr<Strategy>(std::make_unique<ExhaustiveStrategy>(space));
  if (name == "random") return std::unique_ptr<Strategy>(std::make_unique<RandomStrategy>(space, seed));
  if (name == "annealing") return MakeSimulatedAnnealing(space, seed);
  if (name == "genetic") return MakeGenetic(space, seed);
  if (name == "ils") return MakeIteratedLocalSearch(space, seed);
  if (name == "model") {
    ModelOptions options;
    options.budget = budget;
    return MakeModelBased(space, seed, options);
  }
  if (name == "auto") return MakeStrategy(AutoChoice(space.size(), budget, ends_early), space, seed, budget);
  return CheckStrategyName(name);
}

// In spaces over ModelOptions::large_space, auto runs ils below this budget, annealing from it.
constexpr uint64_t kAnnealingFromBudget = 75;

std::string AutoChoice(ConfigIndex space_size, uint64_t budget, bool ends_early) {
  // Measured (bench/README.md, "strategies"): the model-based search is the best of
  // ours on conv A100 at every budget from 25 to 400 and, within 0.001, on all three
  // Kernel Tuner caches up to 50; since its late local refinement (stop 40) also on
  // dedispersion at 200-400, where annealing led; genetic is as good on pnpoly from 100
  // up, but falls 0.04-0.20 short of it on conv. A budget that covers the whole product
  // is cheapest walked in order: no model, compact range jobs.
  if ((budget == 0 && !ends_early) || budget >= space_size) return "exhaustive";
  // Spaces over 2^20 configs (every tiling space of the simulated NPU; the Kernel Tuner
  // caches are far smaller): measured on BERT-base's and ResNet-50's ops (bench/README.md,
  // npu_strategies), iterated local search, walking from the default tiling, finds the
  // most below 75 evaluations (0.932 against annealing's 0.923 at 60) and annealing from
  // there (0.940 against 0.938 at 75, 0.962 against the model's 0.937 at 100 on
  // ResNet-50's convs), sequentially and with 8 in flight; the model trails the better
  // of them by up to 0.031 and misses 99% of the optimum within 3000 evaluations 2-3x
  // as often as annealing.
  // No evaluation budget but seconds or patience: open-ended, as the largest budgets.
  if (space_size > ModelOptions{}.large_space) {
    return budget != 0 && budget < kAnnealingFromBudget ? "ils" : "annealing";
  }
  return "model";
}

std::string StrategyThatRan(const std::string& name, ConfigIndex space_size, uint64_t budget, bool ends_early) {
  return name == "auto" ? "auto (" + AutoChoice(space_size, budget, ends_early) + ")" : name;
}

std::vector<std::string> StrategyNames() {
  return {"exhaustive", "random", "annealing", "genetic", "ils", "model", "auto"};
}

}  // namespace tunefleet::coordinator
