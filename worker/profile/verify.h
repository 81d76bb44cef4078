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
  bool backward = false;
  // Launch + on-device duration in the step: the time the kernel holds its stream, what
  // `tune` measures and the knowledge base keeps as an op's latency, so one op's gain
  // reads the same in both (the duration alone is op_summary.csv's Duration).
  double before_us = 0, after_us = 0;
  // Its op key had a config. A vector kernel's backward time follows its forward's
  // config (graph_run.h: twice its forward), so it counts with it; a cube kernel's
  // backward runs its two GEMMs (BackwardGemmKeys), tuned when both have a config.
  bool tuned = false;
};

struct VerifyReport {
  std::string model, soc;
  bool training = false;
  int devices = 1;
  double baseline_us = 0, result_us = 0;  // step times
  std::vector<OpChange> ops;              // every kernel, in the baseline run's start order

  // Share of the baseline step time saved, in percent (negative when slower).
  double ImprovementPercent() const;
  size_t TunedKernels() const;
  // Tuned kernels that run slower than at their default tiling (a noisy measurement's
  // best, or concurrent kernels sharing HBM).
  std::vector<const OpChange*> SlowerKernels() const;
  // AOE's report keys; repo_modified_operators lists the tuned kernels.
  nlohmann::json ToJson() const;
};

// AOE's improvement text: percent with two decimals ("12.34%"); -0.00% is 0.00%.
std::string Percent(double x);

// `configs` by OpKey::Canonical() of the node's op key (NodeOpKey), as RunOptions takes
// them. kInvalidArgument naming the node when a config is not valid for its op.
Result<VerifyReport> Verify(const Graph& graph, const SocSpec& soc, const std::map<std::string, Config>& configs);

}  // namespace tunefleet::profile
