// Graph fusion (DESIGN.md step 4, job type 1: subgraph tuning): where CANN's UB fusion can
// join a cube op and the element-wise ops after it into one fused op (fused_space.h), and
// the graph with chosen fusions applied. Which fusions pay is measured on the simulator
// (worker/profile/fusion_search.h); this file only finds and rewrites. Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

// A cube node (MatMul, BatchMatMul, Conv2D) and the element-wise nodes after it that one
// fused op could take as its epilogue: each consumes the previous one's output, which no
// other node reads and the graph does not output, as the chain's `x` (Sub and Div only as
// their left operand). Steps are chain ops (FusedChainOpNames); a MatMul's or
// BatchMatMul's Add of a 1-D operand over its output's last axis is written as BiasAdd
// (a conv's Add broadcasts over W like any Add; its per-channel bias is its own input).
struct FusionChain {
  int head = -1;           // index in Graph::nodes
  std::vector<int> steps;  // indices, in chain order (at least one)
};

// Every chain of the graph, longest, in node order. None in a graph without cube ops.
std::vector<FusionChain> FindFusionChains(const Graph& graph);

// The first `length` steps of `chain` fused into its head.
struct Fusion {
  FusionChain chain;
  size_t length = 0;  // 1 .. chain.steps.size()
};

// The fused node's op type ("FusedMatMul"), name (the node names joined by '+') and
// epilogue ("BiasAdd,Gelu").
std::string FusedOpType(const Graph& graph, const Fusion& fusion);
std::string FusedNodeName(const Graph& graph, const Fusion& fusion);
std::string FusedEpilogue(const Graph& graph, const Fusion& fusion);

// The graph with each fusion's nodes replaced by one fused node: the head's inputs and
// attributes, then each step's operand, the last step's output, `attrs.epilogue`; placed
// where the last step was. Fusions must not share nodes. kInvalidArgument naming the
// fused node when its op is not valid on `soc` (ValidateGraphOps), e.g. an epilogue too
// large for UB or an output dtype the fused op does not write.
Result<Graph> ApplyFusions(const Graph& graph, const std::vector<Fusion>& fusions, const SocSpec& soc);

}  // namespace tunefleet
