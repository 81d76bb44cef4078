// Graph: a model as a DAG of ops over named tensors, read from tunefleet's JSON graph
// format (docs/profiling.md "Model graph format"): graph inputs (copied H2D every step),
// weights (resident on the device), nodes (op type, input tensor names, output tensors,
// attributes) and graph outputs (copied D2H). Each kernel node maps to an OpKey, so its
// tuning problem and default tiling come from MakeTuningProblem. Plain copyable values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

// Op type of a metadata-only view: no kernel, no time; its output aliases its input's
// buffer (same element count, a broadcast of it read at the larger shape, or a window of
// it). Stands in for Reshape/Flatten, for the head-split permutes that CANN fuses into the
// producing MatMul (NPU_MODEL.md "MatMul + Transpose"), for ONNX's Expand, and for Split
// and Slice (PyTorch's split and narrow are views).
inline constexpr const char* kReshapeOp = "Reshape";
// A view's attribute making it a window: its start on every input axis ("0,0,768"); the
// output's shape is the window's. Its reader's key and time are those of a tensor of the
// window's shape: the longer row stride of a window that cuts the last axis (a q of a
// fused QKV) is not charged (docs/architecture.md, simulator limits).
inline constexpr const char* kSliceStartsAttr = "slice_starts";

struct NamedTensor {
  std::string name;
  TensorDesc desc;
  int64_t Bytes() const;  // elements * dtype bytes
};

struct GraphNode {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;  // tensor names
  std::vector<NamedTensor> outputs;
  std::map<std::string, std::string> attrs;
  bool IsView() const { return op_type == kReshapeOp; }
};

struct Graph {
  std::string name;
  std::string soc;
  std::vector<NamedTensor> inputs;   // fed by the host every step (H2D)
  std::vector<NamedTensor> weights;  // resident parameters; their gradients are all-reduced
  std::vector<std::string> outputs;  // tensor names copied back every step (D2H)
  // Inputs and outputs kept on the device between steps (a decoding step's KV cache: the
  // past keys and values in, the present ones out): no H2D or D2H copy; a resident
  // input's buffer lives the whole step.
  std::vector<std::string> resident;
  // Tensors whose values are a causal mask: over the last two axes [Sq, Skv], every key
  // j > query i + Skv - Sq masked (false, or a large negative when added to the scores),
  // for every leading index; what it keeps below is its own (a padding mask folded in
  // masks more). The ONNX import finds constant ones (GPT-2's tril buffer); `--causal-mask`
  // names others (Llama's mask input, or the mask an export computes from its padding
  // mask). A FlashAttention whose score chain applies one skips the blocks it masks whole
  // (attention_space.h).
  std::vector<std::string> causal_masks;
  std::vector<GraphNode> nodes;
  double host_preprocess_us = 0;     // host work per step before the H2D copies
  int devices = 1;                   // data-parallel replicas (all-reduce when > 1 and training)
  bool training = false;             // add backward ops and gradient all-reduce

  // The descriptor of a tensor by name (graph input, weight or node output), or nullptr.
  const NamedTensor* FindTensor(const std::string& name) const;
  // Index of the node producing `tensor`, or -1 for graph inputs and weights.
  int ProducerOf(const std::string& tensor) const;
  bool IsWeight(const std::string& tensor) const;
  bool IsResident(const std::string& tensor) const;
  bool IsCausalMask(const std::string& tensor) const;
};

// Keeps graph input or output `tensor` on the device (Graph::resident; once, however often
// asked). kInvalidArgument listing the graph's inputs and outputs for any other name.
Status MarkResident(Graph& graph, const std::string& tensor);
// Lists `tensor` (an input, weight or node output) in Graph::causal_masks (once).
// kInvalidArgument for a name the graph has no tensor of, or a tensor of rank below 2.
Status MarkCausalMask(Graph& graph, const std::string& tensor);

// A graph's tensors by name, read once: Graph's own lookups scan every node, so a loop
// over every node's inputs was quadratic (profiling a 20,000-node chain took 21 s).
// Answers as Graph's lookups do. Refers into the graph, which must outlive it unchanged.
class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);
  const Graph& graph() const { return graph_; }
  const NamedTensor* FindTensor(const std::string& name) const;
  int ProducerOf(const std::string& tensor) const;
  bool IsWeight(const std::string& tensor) const;

 private:
  struct Entry {
    const NamedTensor* tensor = nullptr;  // the first input, weight or output of the name
    int producer = -1;                    // the first node that outputs it
    bool weight = false;
  };
  const Entry* Find(const std::string& name) const;

  const Graph& graph_;
  std::unordered_map<std::string_view, Entry> by_name_;
};

// Parses and validates the structure: unique node and tensor names, every input produced
// by a graph input, weight or node, graph outputs exist, no cycle, positive shapes, known
// dtypes, devices >= 1, host_preprocess_us >= 0. Errors name the node and field to fix
// ("node 'ffn.gelu': input 'x' is not a graph input, weight or node output").
// `soc_override`, when set, replaces the file's "soc".
Result<Graph> GraphFromJson(const nlohmann::json& j, const std::string& soc_override = "");
Result<Graph> LoadGraphFile(const std::string& path, const std::string& soc_override = "");
// The graph in the format GraphFromJson reads (GraphFromJson(GraphToJson(g)) == g).
nlohmann::json GraphToJson(const Graph& graph);

// Node indices in a topological order (ties keep file order).
Result<std::vector<int>> TopologicalOrder(const Graph& graph);
// The same through an index a caller already built (RunGraph: one index per run).
Result<std::vector<int>> TopologicalOrder(const GraphIndex& index);

// The op key of a kernel node (not a view): the graph's SoC, the node's op type and
// attributes, its input tensors' descriptors.
OpKey NodeOpKey(const Graph& graph, const GraphNode& node);
// The same through an index: for loops over many nodes.
OpKey NodeOpKey(const GraphIndex& index, const GraphNode& node);

// The two GEMMs a cube kernel's backward runs in a training step: dX = dY x W^T
// ([M,N] x [N,K]) and dW = X^T x dY ([K,M] x [M,N]), per batch, a conv as its implicit
// GEMM (its col2im scatter is not modelled): MatMul (BatchMatMul when batched) op keys in
// the forward's input dtype, ND, reading X, W and dY as they are stored (W^T is W with
// transpose_b; with a forward transpose flag, the gradient of that input is written in
// its stored layout, so dX = W x dY^T when X is read transposed). What RunGraph times for a training step and what `tune`
// of a training graph tunes beside the forward kernels. Empty for an op that is not a
// cube op (MatMul, BatchMatMul, Gemm, Conv2D or a fused one).
Result<std::vector<OpKey>> BackwardGemmKeys(const OpKey& forward);
inline constexpr const char* kBackwardGemmSuffixes[2] = {"_grad.dX", "_grad.dW"};

// The kernels a step of the graph runs with a tiling to tune, named: every kernel node
// (views have none) as the node, and in a training graph each cube node's backward GEMMs
// as "<node>_grad.dX" and "<node>_grad.dW" (a vector op's backward follows its forward's
// config). Errors name the node.
struct NamedKernel {
  std::string name;
  OpKey key;
  int node = -1;          // index in Graph::nodes
  bool backward = false;  // one of the node's backward GEMMs
};
Result<std::vector<NamedKernel>> TunableKernels(const Graph& graph);

// What ValidateGraphOps learns of one op key on one SoC, whichever node has it: whether
// it is a valid tunable op (MakeTuningProblem, which searches its default tiling), the
// dtype and the element count it writes. A caller that validates many variants of one
// graph (fuse times hundreds) keeps one OpChecks across them, so each key is learnt once.
// Not thread-safe.
class OpChecks {
 public:
  struct Facts {
    Status problem;                      // MakeTuningProblem's status
    std::optional<DType> written;        // WrittenDType, when known
    std::optional<int64_t> elements;     // OutputElements
  };
  const Facts& Of(const OpKey& key, const SocSpec& soc);
  size_t size() const { return facts_.size(); }

 private:
  std::unordered_map<std::string, Facts> facts_;  // by SoC name and canonical key
};

// Checks that every kernel node is a valid instance of a tunable op on `soc`
// (MakeTuningProblem) and that views keep the element count; errors name the node.
// `checks`: the facts of keys already learnt, and where new ones go (null: this call's own).
Status ValidateGraphOps(const Graph& graph, const SocSpec& soc, OpChecks* checks = nullptr);
Status ValidateGraphOps(const GraphIndex& index, const SocSpec& soc, OpChecks* checks = nullptr);

}  // namespace tunefleet
