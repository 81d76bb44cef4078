// Verify (DESIGN.md step 5): the model run once with its default tilings and once with the
// tuned configs, the step times and every kernel's time before and after, reported under
// AOE's own keys (model_baseline_performance(ms), model_result_performance(ms),
// model_performance_improvement, repo_modified_operators). Pure: the configs come from
// the caller (the knowledge base, through `tunefleet report`).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::profile {

struct OpChange {
  std::string name, op_type, op_key;  // node name (backward kernels "<name>_grad"), OpKey::Display()
  double before_us = 0, after_us = 0;
  bool tuned = false;  // its op key had a config
};

struct VerifyReport {
  std::string model, soc;
  double baseline_us = 0, result_us = 0;  // step times
  std::vector<OpChange> ops;              // every kernel, in the baseline run's start order

  // Share of the baseline step time saved, in percent (negative when slower).
  double ImprovementPercent() const;
  size_t TunedKernels() const;
  // AOE's report keys; repo_modified_operators lists the tuned kernels.
  nlohmann::json ToJson() const;
};

// `configs` by OpKey::Canonical() of the node's op key (NodeOpKey), as RunOptions takes
// them. kInvalidArgument naming the node when a config is not valid for its op.
Result<VerifyReport> Verify(const Graph& graph, const SocSpec& soc, const std::map<std::string, Config>& configs);

}  // namespace tunefleet::profile
