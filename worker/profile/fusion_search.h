// ChooseFusions (DESIGN.md step 4: subgraph tuning, job type 1, before operator tuning):
// which of a model's fusions (common/graph_fusion.h) to apply, measured on the simulator at
// default tilings. First each Transpose fold alone in the whole graph, kept when the step
// is shorter (then: less kernel time); then, on the graph with those, each attention as one
// FlashAttention, kept likewise; then, on the graph with those, each chain's fusions
// (its head with the first 1..n of its steps) alone, the best kept when it beats the chain
// unfused. All kept run together for the step time before and after. Pure function.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::profile {

// One fusion of a chain, tried alone.
struct FusionOption {
  size_t length = 0;  // steps fused into the head
  std::string name, op_type, epilogue;  // an attention's epilogue: its score chain
  bool attention = false;             // a FlashAttention made of an attention (not a chain after one)
  bool causal = false;                // a FlashAttention that skips the blocks a causal mask masks
  bool value_out = false;             // also writes the value before its Quantize (FusionChain::value_out)
  double step_us = 0, kernel_us = 0;  // the step and its summed kernel time, with it
  std::string refused;                // why the fused op is not valid (then not timed)
};

struct FusionDecision {
  std::vector<std::string> nodes;     // the chain: head, then its steps
  double unfused_step_us = 0, unfused_kernel_us = 0;
  std::vector<FusionOption> options;  // lengths 1 .. steps
  size_t chosen = 0;                  // index + 1 of the option applied; 0: left unfused
  const FusionOption* Chosen() const { return chosen ? &options[chosen - 1] : nullptr; }
};

// One Transpose fold (MatMul + Transpose), tried alone.
struct FoldDecision {
  std::string transpose, consumer, flag;  // the flag it flips on the consumer
  double unfused_step_us = 0, unfused_kernel_us = 0;
  double step_us = 0, kernel_us = 0;
  std::string refused;  // why the folded op is not valid (then not timed)
  bool applied = false;
};

struct FusionReport {
  std::string model, soc;
  bool training = false;
  Graph fused;  // the graph with every chosen fold and fusion applied
  std::vector<FoldDecision> folds;
  std::vector<FusionDecision> decisions;  // on the graph with the folds applied
  double baseline_us = 0, result_us = 0;  // step times at default tilings
  size_t kernels_before = 0, kernels_after = 0;

  double ImprovementPercent() const;
  size_t Applied() const;  // fusions of chains applied (folds apart)
  size_t FoldsApplied() const;
  // AOE's report keys for the step (model_baseline_performance(ms), ...), the fused ops
  // and the chains left unfused with the reason.
  nlohmann::json ToJson() const;
};

// kInvalidArgument naming the node when the graph itself does not run on `soc`.
// `threads`: how many candidates are timed at once (each alone, as above); the report is
// the same for any count.
Result<FusionReport> ChooseFusions(const Graph& graph, const SocSpec& soc, int threads = 1);

}  // namespace tunefleet::profile
