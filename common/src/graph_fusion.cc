#include "tunefleet/common/graph_fusion.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tunefleet/common/fused_space.h"

namespace tunefleet {
namespace {

bool IsFusionHead(const GraphNode& node) {
  return node.op_type == "MatMul" || node.op_type == "BatchMatMul" || node.op_type == "Conv2D";
}

// How many node inputs read `tensor` (a node reading it twice counts twice).
int Readers(const Graph& graph, const std::string& tensor) {
  int n = 0;
  for (const GraphNode& node : graph.nodes) n += static_cast<int>(std::count(node.inputs.begin(), node.inputs.end(), tensor));
  return n;
}

// The only node reading `tensor`, or -1.
int OnlyReader(const Graph& graph, const std::string& tensor) {
  if (Readers(graph, tensor) != 1) return -1;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const auto& in = graph.nodes[i].inputs;
    if (std::find(in.begin(), in.end(), tensor) != in.end()) return static_cast<int>(i);
  }
  return -1;
}

// The last axis of the head's output: a GEMM's N.
int64_t Columns(const GraphNode& head) {
  const auto& shape = head.outputs[0].desc.shape;
  return shape.empty() ? 0 : shape.back();
}

// As a step of a chain reading `x`: its chain op name and its operands, or an empty name
// when `node` cannot be one.
struct Step {
  std::string op;
  std::vector<std::string> operands;
};
Step AsStep(const Graph& graph, const GraphNode& head, const GraphNode& node, const std::string& x) {
  if (node.outputs.size() != 1) return {};
  const auto& chain_ops = FusedChainOpNames();
  if (node.op_type == "BiasAdd" || std::find(chain_ops.begin(), chain_ops.end(), node.op_type) == chain_ops.end()) return {};
  const auto& in = node.inputs;
  if (node.op_type == "Relu" || node.op_type == "Gelu" || node.op_type == "Sigmoid" || node.op_type == "Tanh" ||
      node.op_type == "Exp") {
    return in.size() == 1 && in[0] == x ? Step{node.op_type, {}} : Step{};
  }
  if (node.op_type == "FusedMulAdd") {
    return in.size() == 3 && in[0] == x && in[1] != x && in[2] != x ? Step{node.op_type, {in[1], in[2]}} : Step{};
  }
  if (in.size() != 2 || in[0] == in[1]) return {};
  const bool commutative = node.op_type == "Add" || node.op_type == "Mul";
  std::string operand;
  if (in[0] == x) {
    operand = in[1];
  } else if (in[1] == x && commutative) {
    operand = in[0];
  } else {
    return {};
  }
  // A GEMM's bias: one value per output column, [N], which an Add broadcasts over the
  // trailing axis as BiasAdd does. Not for a conv: its channel axis is not the trailing one,
  // so an Add of [C] broadcasts over W there (a per-channel bias is the conv's own input).
  const NamedTensor* t = graph.FindTensor(operand);
  if (node.op_type == "Add" && head.op_type != "Conv2D" && t && t->desc.shape.size() == 1 &&
      t->desc.shape[0] == Columns(head)) {
    return {"BiasAdd", {operand}};
  }
  return {node.op_type, {operand}};
}

}  // namespace

std::vector<FusionChain> FindFusionChains(const Graph& graph) {
  std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  std::vector<FusionChain> chains;
  for (size_t h = 0; h < graph.nodes.size(); ++h) {
    const GraphNode& head = graph.nodes[h];
    if (!IsFusionHead(head) || head.outputs.size() != 1) continue;
    FusionChain chain;
    chain.head = static_cast<int>(h);
    std::string x = head.outputs[0].name;
    for (;;) {
      if (outputs.count(x)) break;
      const int next = OnlyReader(graph, x);
      if (next < 0 || AsStep(graph, head, graph.nodes[next], x).op.empty()) break;
      chain.steps.push_back(next);
      x = graph.nodes[next].outputs[0].name;
    }
    if (!chain.steps.empty()) chains.push_back(std::move(chain));
  }
  return chains;
}

std::string FusedOpType(const Graph& graph, const Fusion& fusion) {
  return "Fused" + graph.nodes[fusion.chain.head].op_type;
}

std::string FusedNodeName(const Graph& graph, const Fusion& fusion) {
  std::string name = graph.nodes[fusion.chain.head].name;
  for (size_t i = 0; i < fusion.length; ++i) name += "+" + graph.nodes[fusion.chain.steps[i]].name;
  return name;
}

std::string FusedEpilogue(const Graph& graph, const Fusion& fusion) {
  const GraphNode& head = graph.nodes[fusion.chain.head];
  std::string epilogue = head.inputs.size() > 2 ? "BiasAdd" : "";  // a conv's own bias input
  std::string x = head.outputs[0].name;
  for (size_t i = 0; i < fusion.length; ++i) {
    const GraphNode& node = graph.nodes[fusion.chain.steps[i]];
    epilogue += (epilogue.empty() ? "" : ",") + AsStep(graph, head, node, x).op;
    x = node.outputs[0].name;
  }
  return epilogue;
}

Result<Graph> ApplyFusions(const Graph& graph, const std::vector<Fusion>& fusions, const SocSpec& soc) {
  std::vector<bool> removed(graph.nodes.size(), false);
  std::vector<std::optional<GraphNode>> replacement(graph.nodes.size());
  for (const Fusion& f : fusions) {
    const auto& steps = f.chain.steps;
    if (f.chain.head < 0 || static_cast<size_t>(f.chain.head) >= graph.nodes.size() || f.length == 0 ||
        f.length > steps.size()) {
      return InvalidArgument("fusion of node " + std::to_string(f.chain.head) + ": not a chain of this graph");
    }
    const GraphNode& head = graph.nodes[f.chain.head];
    GraphNode fused;
    fused.name = FusedNodeName(graph, f);
    fused.op_type = FusedOpType(graph, f);
    fused.inputs = head.inputs;
    fused.attrs = head.attrs;
    fused.attrs["epilogue"] = FusedEpilogue(graph, f);
    std::string x = head.outputs[0].name;
    for (size_t i = 0; i < f.length; ++i) {
      const GraphNode& node = graph.nodes[steps[i]];
      const Step step = AsStep(graph, head, node, x);
      if (step.op.empty()) return InvalidArgument("fusion '" + fused.name + "': '" + node.name + "' is not a chain step");
      fused.inputs.insert(fused.inputs.end(), step.operands.begin(), step.operands.end());
      x = node.outputs[0].name;
    }
    fused.outputs = graph.nodes[steps[f.length - 1]].outputs;
    std::vector<int> members{f.chain.head};
    members.insert(members.end(), steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(f.length));
    for (int m : members) {
      if (removed[m]) return InvalidArgument("fusion '" + fused.name + "' shares node '" + graph.nodes[m].name + "' with another");
      removed[m] = true;
    }
    replacement[steps[f.length - 1]] = std::move(fused);
  }
  Graph out = graph;
  out.nodes.clear();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (replacement[i]) {
      out.nodes.push_back(std::move(*replacement[i]));
    } else if (!removed[i]) {
      out.nodes.push_back(graph.nodes[i]);
    }
  }
  TF_RETURN_IF_ERROR(ValidateGraphOps(out, soc));
  return out;
}

}  // namespace tunefleet
