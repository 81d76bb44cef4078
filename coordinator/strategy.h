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
};

// "exhaustive" walks the valid space in index order; "random" draws valid configs
// uniformly without replacement. kInvalidArgument listing the known names otherwise.
// The space must outlive the strategy.
Result<std::unique_ptr<Strategy>> MakeStrategy(const std::string& name, const SearchSpace& space,
                                               uint64_t seed);
std::vector<std::string> StrategyNames();
// kInvalidArgument listing the known names when name is not one of them.
Status CheckStrategyName(const std::string& name);

}  // namespace tunefleet::coordinator
