// Graph fusion (DESIGN.md step 4, job type 1: subgraph tuning), NPU_MODEL.md's three kinds:
// a cube op and the element-wise ops after it as one fused op (FusedMatMul etc.), a chain
// of element-wise ops as one FusedElementwise (fused_space.h), and a Transpose folded into
// the MatMul that reads it. Where each can happen, and the graph with chosen ones applied.
// Which pay is measured on the simulator (worker/profile/fusion_search.h); this file only
// finds and rewrites. Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

// A head node and the element-wise nodes after it that one fused op could take: each
// consumes the previous one's output, which no other node reads and the graph does not
// output, as the chain's `x` (Sub, Div and FusedMulAdd only as their left operand). Steps
// are chain ops (FusedChainOpNames). The head is a cube node (MatMul, BatchMatMul, Conv2D:
// the steps are its epilogue, and its Add of a 1-D operand over a GEMM's last axis is
// written as BiasAdd; a conv's Add broadcasts over W like any Add, its per-channel bias is
// its own input; or a Gemm without alpha or beta whose C, if any, is a bias [N] or [1, N]:
// fused as a FusedMatMul, C its first BiasAdd, transA/transB as transpose_a/transpose_b),
// or a chain op whose x has the output's shape (a FusedElementwise), or a
// DepthwiseConv2D, whose steps are unary ops only (Relu, Clip, Gelu, Sigmoid, Silu, Tanh, Exp,
// HardSigmoid, HardSwish, LeakyRelu: MobileNet's ReLU6, MobileNetV3's Hardswish), fused as the
// DepthwiseConv2D with attrs.epilogue; `cube` is false. An InstanceNorm heads such a chain
// too, read through reshape views, and a GroupNorm's affine after it (a Mul, then an Add,
// by values per channel of the view back to [N, C, ...]) are its first steps: fused, they
// are the norm's scale and bias inputs, not epilogue ops (CANN's GroupNormSilu).
struct FusionChain {
  int head = -1;           // index in Graph::nodes
  std::vector<int> steps;  // indices, in chain order (at least one)
  bool cube = true;        // the head is a cube op
  // A cube chain may read through reshape views (HF GPT-2's Conv1D: addmm, then view):
  // views[i] are the views between step i's x and the value before it, in order (empty
  // for most). A view fused over keeps the element count and the last axis; the fused
  // op writes the last step's output, and an operand of that step's full shape is read
  // through a view at the head's output shape.
  std::vector<std::vector<int>> views;
  // The last step is a Quantize whose input other nodes read too (a ResNet block's output:
  // the next block's quantized input and its float16 residual). A Conv2D chain takes it
  // anyway, as CANN's multi-output quant fusions do (TbeConvDequantVaddMultiOutReluQuantFusion):
  // fused with it, the op also writes that input (attrs.value_out, a second output).
  bool value_out = false;
};

// Every chain of the graph, longest: the cube ones in node order, then the element-wise
// ones among the nodes no cube chain reaches.
std::vector<FusionChain> FindFusionChains(const Graph& graph);

// The first `length` steps of `chain` fused into its head.
struct Fusion {
  FusionChain chain;
  size_t length = 0;  // 1 .. chain.steps.size()
};

// The fused node's op type ("FusedMatMul", "FusedElementwise", "DepthwiseConv2D"), name (the node names joined
// by '+') and chain (its attrs.epilogue, or attrs.ops: "BiasAdd,Gelu").
std::string FusedOpType(const Graph& graph, const Fusion& fusion);
std::string FusedNodeName(const Graph& graph, const Fusion& fusion);
std::string FusedEpilogue(const Graph& graph, const Fusion& fusion);

// The graph with each fusion's nodes replaced by one fused node: a cube head's inputs and
// attributes (an element-wise head's x and operand), then each step's operands, the last
// step's output, `attrs.epilogue` (`attrs.ops`); placed where the last step was. Fusions must not share nodes. kInvalidArgument naming the
// fused node when its op is not valid on `soc` (ValidateGraphOps), e.g. an epilogue too
// large for UB or an output dtype the fused op does not write. `checks`: as ValidateGraphOps's
// (a caller applying many candidates to one graph learns each unchanged key once).
Result<Graph> ApplyFusions(const Graph& graph, const std::vector<Fusion>& fusions, const SocSpec& soc,
                           OpChecks* checks = nullptr);

// Attention as one FlashAttention (common/attention_space.h; CANN's FlashAttentionScore):
// a BatchMatMul of the scores q x k, the chain ops on them (each reading the value so far:
// a Mul or Div by the scale, an Add of a mask, GPT-2's Where of a causal mask), a Softmax
// over the last axis and a BatchMatMul reading its output as A (P x v); between any two of
// them, views that keep the scores' shape (a Cast the import makes a view: GPT-2's scores,
// LLaMA's float32 Softmax cast back). Each intermediate is read by the next node only and
// is not a graph output; neither BatchMatMul transposes A, P x v does not transpose v. In a
// training graph its backward (CANN's FlashAttentionScoreGrad) costs twice its forward, as
// every op without a GEMM form (graph_run.cc); its probabilities are no longer kept for it.
struct AttentionFusion {
  int scores = -1;         // the first BatchMatMul (index in Graph::nodes)
  std::vector<int> steps;  // the score chain, in order (may be empty)
  std::vector<std::string> step_x;  // the tensor each step reads as the scores so far
  int softmax = -1;
  // A QDQ model's quantize of the softmax output (a Cast to int8) before an int8 P x v:
  // the FlashAttention quantizes P itself (attention_space.h); -1 when there is none.
  int quantize = -1;
  std::vector<int> views;  // the views among them, and those of a repeat_kv it reads through
  int output = -1;
  // What the FlashAttention reads as k and v: the BatchMatMuls' B, or, under grouped-query
  // attention, the key and value heads before repeat_kv (x [.., Hkv, S, D] unsqueezed to
  // [.., Hkv, 1, S, D], expanded to [.., Hkv, G, S, D], viewed [.., Hkv*G, S, D]).
  std::string k, v;
  std::vector<int> Members() const;  // all of them, in graph order
};
std::vector<AttentionFusion> FindAttentionFusions(const Graph& graph);
// The kernels' node names joined by '+' (views left out), and the score chain ("Div,Add";
// "" for none).
std::string AttentionNodeName(const Graph& graph, const AttentionFusion& fusion);
std::string AttentionScoreChain(const Graph& graph, const AttentionFusion& fusion);
// Whether the score chain applies one of Graph::causal_masks (or a view of one: a window,
// a reshape of its leading axes) that masks every key j > query i + Skv - Sq over the
// scores' own [Sq, Skv]: a Where keeping the scores where it holds, or an Add of it.
// The FlashAttention then skips the key blocks it masks whole (attrs.causal).
bool AttentionIsCausal(const Graph& graph, const AttentionFusion& fusion);
// The masks the score chain applies (a Where's condition, an Add's operand, over the
// scores' own [Sq, Skv]) that may be causal but are not said to be: graph inputs (or views
// of one), whose values the import cannot see (a constant's it reads; a mask computed in
// the graph is more often a bias or a padding mask than causal, and is not listed). Empty
// when the attention is causal already, or has one query (a decoding step sees every key). What `fuse` suggests `--causal-mask` for.
std::vector<std::string> UndeclaredMasks(const Graph& graph, const AttentionFusion& fusion);
// The graph with each attention replaced by one FlashAttention node where its P x v was:
// inputs q, k (with the first BatchMatMul's transpose_b), v, then the chain's operands;
// attrs.scores the chain, attrs.causal when AttentionIsCausal. Validated as ApplyFusions.
Result<Graph> ApplyAttentionFusions(const Graph& graph, const std::vector<AttentionFusion>& fusions, const SocSpec& soc,
                                    OpChecks* checks = nullptr);

// MatMul + Transpose: a Transpose (it swaps its input's last two axes: attrs.perm "0,1,3,2",
// "[0, 1, 3, 2]" or none) whose output only a MatMul or BatchMatMul reads, as A (input 0)
// or B (input 1); or reads through a Cast and views of the whole of it (an int8 model's
// quantize and dequantize of k^T before the scores' BatchMatMul), each the only reader of
// what it reads: element-wise, they commute with the transpose.
struct TransposeFold {
  int transpose = -1, consumer = -1;  // indices in Graph::nodes
  int input = 0;
  std::vector<int> between;  // the Cast and views, in order from the Transpose
};
std::vector<TransposeFold> FindTransposeFolds(const Graph& graph);
// The consumer's flag a fold flips: transpose_a (input 0) or transpose_b.
std::string TransposeFlag(const GraphNode& consumer, int input);
// The graph with each fold applied: the consumer reads the Transpose's input with its flag
// flipped (set when neither spelling, transpose_b or CANN's adj_x2, was; the other spelling
// erased), and the Transpose is gone; nodes between them read and write the untransposed
// layout. Validated as ApplyFusions.
Result<Graph> ApplyTransposeFolds(const Graph& graph, const std::vector<TransposeFold>& folds, const SocSpec& soc,
                                  OpChecks* checks = nullptr);

}  // namespace tunefleet
