#include "tunefleet/common/graph_fusion.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/vector_space.h"

#include "space_util.h"

namespace tunefleet {
namespace {

// A Gemm heads a chain as the MatMul it is when it only adds a bias: no alpha or beta
// scale (an ONNX Gemm's 1.0 is imported as no attribute), and a C, if any, of one value
// per output column ([N] or [1, N]), which becomes the epilogue's first BiasAdd.
bool IsBiasGemm(const Graph& graph, const GraphNode& node) {
  if (node.op_type != "Gemm" || node.attrs.count("alpha") || node.attrs.count("beta")) return false;
  if (node.inputs.size() == 2) return true;
  const NamedTensor* c = graph.FindTensor(node.inputs[2]);
  if (node.inputs.size() != 3 || c == nullptr || node.outputs.empty() || node.outputs[0].desc.shape.size() != 2) return false;
  const int64_t n = node.outputs[0].desc.shape[1];
  const auto& shape = c->desc.shape;
  return (shape.size() == 1 && shape[0] == n) || (shape.size() == 2 && shape[0] == 1 && shape[1] == n);
}

bool IsCubeHead(const Graph& graph, const GraphNode& node) {
  return node.op_type == "MatMul" || node.op_type == "BatchMatMul" || node.op_type == "Conv2D" ||
         IsBiasGemm(graph, node);
}

bool IsUnaryChainOp(const std::string& op) { return IsUnaryEpilogueOp(op); }

// An op other than a cube one that applies unary chain ops to its output before writing it
// (attrs.epilogue, vector_space.h): MobileNet's depthwise convolution and its ReLU6,
// CycleGAN's InstanceNorm and its ReLU; each may end in a Quantize. A LayerNorm or
// RmsNorm takes a Quantize alone (QuantizeOnlyHead): CANN's LayerNormQuant and
// RmsNormQuant, the norm before an int8 projection in a QDQ transformer; so does a
// FlashAttention (attention_space.h: CANN's writes int8 given a quant scale), through the
// views that gather its heads back.
bool QuantizeOnlyHead(const GraphNode& node) {
  return node.op_type == "LayerNorm" || node.op_type == "RmsNorm" || node.op_type == kFlashAttentionOp;
}
bool IsEpilogueHead(const GraphNode& node) {
  return (node.op_type == "DepthwiseConv2D" || node.op_type == "InstanceNorm" || QuantizeOnlyHead(node)) &&
         node.outputs.size() == 1;
}

// A GroupNorm as torch exports it: an InstanceNorm of x viewed [N, G, -1], viewed back,
// then scaled and shifted per channel. Fused, its chain reads through the view back and
// takes the scale and shift as its own scale and bias (vector_space.h row_channels).
bool IsNormHead(const GraphNode& node) { return node.op_type == "InstanceNorm" && node.inputs.size() == 3; }

// The channels `operand` holds when, against `value` [N, C, spatial...], it broadcasts
// along axis 1 alone (a GroupNorm's gamma [C, 1, 1] or [1, C, 1, 1]): C; else 0.
int64_t PerChannelValues(const Graph& graph, const std::string& operand, const std::string& value) {
  const NamedTensor* o = graph.FindTensor(operand);
  const NamedTensor* v = graph.FindTensor(value);
  if (o == nullptr || v == nullptr || v->desc.shape.size() < 3 || o->desc.shape.size() > v->desc.shape.size()) return 0;
  std::vector<int64_t> padded(v->desc.shape.size() - o->desc.shape.size(), 1);
  padded.insert(padded.end(), o->desc.shape.begin(), o->desc.shape.end());
  for (size_t a = 0; a < padded.size(); ++a) {
    if (padded[a] != (a == 1 ? v->desc.shape[1] : 1)) return 0;
  }
  return v->desc.shape[1];
}

bool IsChainOp(const std::string& op) {
  const auto& names = FusedChainOpNames();
  return op != "BiasAdd" && std::find(names.begin(), names.end(), op) != names.end();
}

// A Cast of a float value to int8 (a QDQ model's QuantizeLinear, onnx_import): the chain
// step Quantize, its last.
bool IsQuantize(const Graph& graph, const GraphNode& node) {
  if (node.op_type != "Cast" || node.inputs.size() != 1 || node.outputs.size() != 1) return false;
  const auto to = node.attrs.find("dst_type");
  const NamedTensor* x = graph.FindTensor(node.inputs[0]);
  return to != node.attrs.end() && to->second == "int8" && x != nullptr &&
         (x->desc.dtype == "float16" || x->desc.dtype == "bfloat16" || x->desc.dtype == "float32");
}

// How many node inputs read `tensor` (a node reading it twice counts twice).
int Readers(const Graph& graph, const std::string& tensor) {
  int n = 0;
  for (const GraphNode& node : graph.nodes) n += static_cast<int>(std::count(node.inputs.begin(), node.inputs.end(), tensor));
  return n;
}

// The first node that quantizes `tensor` itself (IsQuantize), or -1.
int QuantizeReader(const Graph& graph, const std::string& tensor) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    if (IsQuantize(graph, node) && node.inputs[0] == tensor) return static_cast<int>(i);
  }
  return -1;
}

// The only node reading `tensor`, or -1 (also when the graph outputs it).
int OnlyReader(const Graph& graph, const std::string& tensor) {
  if (Readers(graph, tensor) != 1) return -1;
  if (std::find(graph.outputs.begin(), graph.outputs.end(), tensor) != graph.outputs.end()) return -1;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const auto& in = graph.nodes[i].inputs;
    if (std::find(in.begin(), in.end(), tensor) != in.end()) return static_cast<int>(i);
  }
  return -1;
}

// A chain op node as one step of a chain whose value so far is `x`: its op name and
// operands, or an empty op when it cannot be one. `cube` is the chain's cube head (null for
// an element-wise chain): after a MatMul or BatchMatMul an Add of [N] is its bias.
struct Step {
  std::string op;
  std::vector<std::string> operands;
};
Step AsStep(const Graph& graph, const GraphNode* cube, const GraphNode& node, const std::string& x) {
  if (IsQuantize(graph, node)) return node.inputs.size() == 1 && node.inputs[0] == x ? Step{"Quantize", {}} : Step{};
  if (node.outputs.size() != 1 || !IsChainOp(node.op_type)) return {};
  const auto& in = node.inputs;
  if (IsUnaryChainOp(node.op_type)) return in.size() == 1 && in[0] == x ? Step{node.op_type, {}} : Step{};
  // An operand larger than the chain's value (an SE block's [N, C, H, W] scaled by the
  // excitation's [N, C, 1, 1]) would make the step's output larger than the chain's: it
  // starts a chain of its own instead.
  const NamedTensor* value = graph.FindTensor(x);
  auto larger = [&](const std::string& operand) {
    const NamedTensor* t = graph.FindTensor(operand);
    return value != nullptr && t != nullptr &&
           space_util::Elements(t->desc.shape) > space_util::Elements(value->desc.shape);
  };
  if (node.op_type == "Where") {  // where(condition, x, y): x is the chain's value
    return in.size() == 3 && in[1] == x && in[0] != x && in[2] != x && !larger(in[0]) && !larger(in[2])
               ? Step{node.op_type, {in[0], in[2]}}
               : Step{};
  }
  if (node.op_type == "FusedMulAdd") {
    return in.size() == 3 && in[0] == x && in[1] != x && in[2] != x && !larger(in[1]) && !larger(in[2])
               ? Step{node.op_type, {in[1], in[2]}}
               : Step{};
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
  if (larger(operand)) return {};
  // A GEMM's bias: one value per output column, [N], which an Add broadcasts over the
  // trailing axis as BiasAdd does. Not for a conv: its channel axis is not the trailing one,
  // so an Add of [C] broadcasts over W there (a per-channel bias is the conv's own input).
  const NamedTensor* t = graph.FindTensor(operand);
  if (cube != nullptr && node.op_type == "Add" && cube->op_type != "Conv2D" && t && t->desc.shape.size() == 1 &&
      !cube->outputs[0].desc.shape.empty() && t->desc.shape[0] == cube->outputs[0].desc.shape.back()) {
    return {"BiasAdd", {operand}};
  }
  return {node.op_type, {operand}};
}

// The first node of an element-wise chain as a step: its x is an input of the output's
// shape (the left one for Sub, Div and FusedMulAdd). Empty op when it cannot start one.
Step AsFirstStep(const Graph& graph, const GraphNode& node, std::string* x) {
  if (node.outputs.size() != 1 || !IsChainOp(node.op_type) || node.inputs.empty()) return {};
  const auto& out_shape = node.outputs[0].desc.shape;
  auto full = [&](const std::string& name) {
    const NamedTensor* t = graph.FindTensor(name);
    return t != nullptr && t->desc.shape == out_shape;
  };
  const bool commutative = node.op_type == "Add" || node.op_type == "Mul";
  for (size_t i = 0; i < node.inputs.size() && (i == 0 || commutative); ++i) {
    if (!full(node.inputs[i])) continue;
    Step s = AsStep(graph, nullptr, node, node.inputs[i]);
    if (!s.op.empty()) {
      *x = node.inputs[i];
      return s;
    }
  }
  return {};
}

// The chain's head as its first step (an element-wise chain's), with its x.
Step HeadStep(const Graph& graph, const FusionChain& chain, std::string* x) {
  const GraphNode& head = graph.nodes[chain.head];
  if (chain.cube) {
    *x = head.outputs[0].name;
    return {};
  }
  return AsFirstStep(graph, head, x);
}

// A view a norm head's chain may fuse over: a reshape (no window, no broadcast) of `x`
// (its steps are per element, a GroupNorm's affine per channel of the view's output).
bool IsPlainReshapeOf(const Graph& graph, const GraphNode& node, const std::string& x) {
  if (!node.IsView() || node.attrs.count(kSliceStartsAttr) || node.inputs.size() != 1 || node.inputs[0] != x ||
      node.outputs.size() != 1) {
    return false;
  }
  const NamedTensor* in = graph.FindTensor(x);
  return in != nullptr && space_util::Elements(in->desc.shape) == space_util::Elements(node.outputs[0].desc.shape);
}

// A view a cube chain may fuse over: a plain reshape of `x` that keeps its last axis, so a
// bias still runs along it.
bool IsReshapeOf(const Graph& graph, const GraphNode& node, const std::string& x) {
  if (!IsPlainReshapeOf(graph, node, x)) return false;
  const auto& in = graph.FindTensor(x)->desc.shape;
  const auto& out = node.outputs[0].desc.shape;
  return !in.empty() && !out.empty() && in.back() == out.back();
}

// Whether step i of a norm head's chain (IsNormHead) is its GroupNorm affine: a Mul first,
// an Add first or after that Mul, by a value per channel of a multiple of the norm's
// channels (its groups).
bool IsAffineStep(const Graph& graph, const FusionChain& chain, size_t i, const std::string& through) {
  const GraphNode& head = graph.nodes[chain.head];
  const GraphNode& node = graph.nodes[chain.steps[i]];
  if (!IsNormHead(head) || i > 1 || (node.op_type != "Mul" && node.op_type != "Add") ||
      (i == 1 && (node.op_type != "Add" || graph.nodes[chain.steps[0]].op_type != "Mul"))) {
    return false;
  }
  const Step step = AsStep(graph, nullptr, node, through);
  const NamedTensor* x = graph.FindTensor(head.inputs[0]);
  const int64_t channels = step.operands.size() == 1 ? PerChannelValues(graph, step.operands[0], through) : 0;
  return x != nullptr && x->desc.shape.size() >= 2 && channels > 0 && x->desc.shape[1] > 0 &&
         channels % x->desc.shape[1] == 0;
}

// Walks from `x` through the chain ops that alone read each value (a cube chain also
// through reshape views, when a step follows them, and through any plain view, a permute
// too, when the step is a quantize: it has no operand to align; a vector epilogue head's
// through unary ops only, a norm head's also through views and its GroupNorm affine).
FusionChain WalkSteps(const Graph& graph, int head, const GraphNode* cube, std::string x) {
  FusionChain chain{head, {}, cube != nullptr, {}};
  const bool unary_only = IsEpilogueHead(graph.nodes[head]);
  const bool norm = IsNormHead(graph.nodes[head]);
  const bool quantize_only = QuantizeOnlyHead(graph.nodes[head]);
  const bool viewed = cube != nullptr || norm || quantize_only;
  for (;;) {
    int next = OnlyReader(graph, x);
    std::vector<int> views;
    std::string through = x;
    bool keeps_last_axis = true;  // every view so far
    while (next >= 0 && viewed && IsPlainReshapeOf(graph, graph.nodes[next], through)) {
      keeps_last_axis = keeps_last_axis && IsReshapeOf(graph, graph.nodes[next], through);
      views.push_back(next);
      through = graph.nodes[next].outputs[0].name;
      next = OnlyReader(graph, through);
    }
    if (next < 0 && views.empty() && cube != nullptr && cube->op_type == "Conv2D") {
      // Read by others too: the value is written as well as its quantize (value_out).
      if (const int q = QuantizeReader(graph, x); q >= 0) {
        chain.steps.push_back(q);
        chain.views.push_back({});
        chain.value_out = true;
      }
      break;
    }
    if (next < 0 || AsStep(graph, cube, graph.nodes[next], through).op.empty()) break;
    const bool quantize = IsQuantize(graph, graph.nodes[next]);
    if (cube != nullptr && !keeps_last_axis && !quantize) break;
    if (quantize_only && !quantize) break;
    if (unary_only && !quantize && !IsUnaryChainOp(graph.nodes[next].op_type)) {
      FusionChain with = chain;
      with.steps.push_back(next);
      if (!IsAffineStep(graph, with, with.steps.size() - 1, through)) break;
    }
    chain.steps.push_back(next);
    chain.views.push_back(std::move(views));
    x = graph.nodes[next].outputs[0].name;
    if (quantize) break;  // the int8 value is the chain's output
  }
  return chain;
}

// The views step i of `chain` reads through (none for a chain found before views were).
const std::vector<int>& ViewsBefore(const FusionChain& chain, size_t i) {
  static const std::vector<int> none;
  return i < chain.views.size() ? chain.views[i] : none;
}

// `x` after the views step i reads through.
std::string Through(const Graph& graph, const FusionChain& chain, size_t i, std::string x) {
  for (int v : ViewsBefore(chain, i)) x = graph.nodes[v].outputs[0].name;
  return x;
}

// As the Transpose op reads it (vector_space.cc): no perm, or one written "0,2,1" or
// "[0, 2, 1]", swaps the last two axes.
bool SwapsLastTwoAxes(const GraphNode& node, const Graph& graph) {
  if (node.op_type != "Transpose" || node.inputs.size() != 1 || node.outputs.size() != 1) return false;
  const NamedTensor* in = graph.FindTensor(node.inputs[0]);
  if (in == nullptr || in->desc.shape.size() < 2) return false;
  const size_t rank = in->desc.shape.size();
  auto perm = node.attrs.find("perm");
  if (perm == node.attrs.end()) return true;
  std::vector<size_t> want(rank);
  for (size_t i = 0; i < rank; ++i) want[i] = i;
  std::swap(want[rank - 1], want[rank - 2]);
  std::string text, got;
  for (size_t i = 0; i < rank; ++i) text += (i ? "," : "") + std::to_string(want[i]);
  for (char c : perm->second) {
    if (c != ' ' && c != '[' && c != ']') got += c;
  }
  return got == text;
}

// The flag's spellings a MatMul or BatchMatMul reads (matmul_space.cc AttrFlag: either set
// means set), the canonical one first.
constexpr const char* kFlagNames[2][2] = {{"transpose_a", "adj_x1"}, {"transpose_b", "adj_x2"}};

bool FlagSet(const std::string& v) { return v == "1" || v == "true" || v == "True"; }

}  // namespace

std::vector<FusionChain> FindFusionChains(const Graph& graph) {
  std::vector<FusionChain> chains;
  std::set<int> in_cube_chain;  // and in a vector epilogue head's
  for (size_t h = 0; h < graph.nodes.size(); ++h) {
    const GraphNode& head = graph.nodes[h];
    const bool cube = IsCubeHead(graph, head);
    if ((!cube && !IsEpilogueHead(head)) || head.outputs.size() != 1) continue;
    FusionChain chain = WalkSteps(graph, static_cast<int>(h), cube ? &head : nullptr, head.outputs[0].name);
    if (chain.steps.empty()) continue;
    in_cube_chain.insert(chain.steps.begin(), chain.steps.end());
    chains.push_back(std::move(chain));
  }
  // Element-wise chains, among the nodes no cube op could take: each starts where its x
  // does not come from a chain op that it alone reads (that one would start it).
  for (size_t h = 0; h < graph.nodes.size(); ++h) {
    if (in_cube_chain.count(static_cast<int>(h))) continue;
    std::string x;
    if (AsFirstStep(graph, graph.nodes[h], &x).op.empty()) continue;
    const int producer = graph.ProducerOf(x);
    if (producer >= 0 && !in_cube_chain.count(producer) && OnlyReader(graph, x) == static_cast<int>(h)) {
      std::string px;
      if (!AsFirstStep(graph, graph.nodes[producer], &px).op.empty()) continue;  // inside another's chain
    }
    FusionChain chain = WalkSteps(graph, static_cast<int>(h), nullptr, graph.nodes[h].outputs[0].name);
    if (!chain.steps.empty()) chains.push_back(std::move(chain));
  }
  return chains;
}

std::string FusedOpType(const Graph& graph, const Fusion& fusion) {
  if (IsEpilogueHead(graph.nodes[fusion.chain.head])) return graph.nodes[fusion.chain.head].op_type;
  if (!fusion.chain.cube) return kFusedElementwiseOp;
  const std::string& head = graph.nodes[fusion.chain.head].op_type;
  return head == "Gemm" ? "FusedMatMul" : "Fused" + head;
}

std::string FusedNodeName(const Graph& graph, const Fusion& fusion) {
  std::string name = graph.nodes[fusion.chain.head].name;
  for (size_t i = 0; i < fusion.length; ++i) name += "+" + graph.nodes[fusion.chain.steps[i]].name;
  return name;
}

std::string FusedEpilogue(const Graph& graph, const Fusion& fusion) {
  const GraphNode& head = graph.nodes[fusion.chain.head];
  const GraphNode* cube = fusion.chain.cube ? &head : nullptr;
  std::string x;
  std::string ops = HeadStep(graph, fusion.chain, &x).op;
  if (cube && head.inputs.size() > 2) ops = "BiasAdd";  // a conv's or a Gemm's own bias input
  if (!cube) x = head.outputs[0].name;
  for (size_t i = 0; i < fusion.length; ++i) {
    const GraphNode& node = graph.nodes[fusion.chain.steps[i]];
    const std::string through = Through(graph, fusion.chain, i, x);
    x = node.outputs[0].name;
    if (IsAffineStep(graph, fusion.chain, i, through)) continue;  // the norm's own scale or bias
    ops += (ops.empty() ? "" : ",") + AsStep(graph, cube, node, through).op;
  }
  return ops;
}

Result<Graph> ApplyFusions(const Graph& graph, const std::vector<Fusion>& fusions, const SocSpec& soc,
                           OpChecks* checks) {
  std::vector<bool> removed(graph.nodes.size(), false);
  std::vector<std::vector<GraphNode>> replacement(graph.nodes.size());  // views of operands, then the fused node
  for (const Fusion& f : fusions) {
    const auto& steps = f.chain.steps;
    if (f.chain.head < 0 || static_cast<size_t>(f.chain.head) >= graph.nodes.size() || f.length == 0 ||
        f.length > steps.size()) {
      return InvalidArgument("fusion of node " + std::to_string(f.chain.head) + ": not a chain of this graph");
    }
    const GraphNode& head = graph.nodes[f.chain.head];
    const GraphNode* cube = f.chain.cube ? &head : nullptr;
    GraphNode fused;
    fused.name = FusedNodeName(graph, f);
    fused.op_type = FusedOpType(graph, f);
    std::string x;
    if (IsEpilogueHead(head)) {
      fused.inputs = head.inputs;
      fused.attrs = head.attrs;
      if (const std::string epilogue = FusedEpilogue(graph, f); !epilogue.empty()) fused.attrs["epilogue"] = epilogue;
      x = head.outputs[0].name;
    } else if (cube) {
      fused.inputs = head.inputs;
      fused.attrs = head.attrs;
      // An int8 head writing float16 (a QDQ model's, onnx_import): what a fused cube op of
      // int8 inputs writes anyway (fused_space.h), so not an attribute of it.
      if (auto it = fused.attrs.find("out_dtype"); it != fused.attrs.end() && it->second == "float16") fused.attrs.erase(it);
      if (head.op_type == "Gemm") {
        // As the MatMul it is: transA / transB under the names a MatMul reads.
        for (int i = 0; i < 2; ++i) {
          const char* gemm_flag = i == 0 ? "transA" : "transB";
          auto it = fused.attrs.find(gemm_flag);
          if (it == fused.attrs.end()) continue;
          const bool set = FlagSet(it->second);
          fused.attrs.erase(it);
          if (set) fused.attrs[kFlagNames[i][0]] = "1";
        }
      }
      fused.attrs["epilogue"] = FusedEpilogue(graph, f);
      x = head.outputs[0].name;
    } else {
      const Step first = HeadStep(graph, f.chain, &x);
      if (first.op.empty()) return InvalidArgument("fusion '" + fused.name + "': '" + head.name + "' cannot start a chain");
      fused.inputs = {x};
      fused.inputs.insert(fused.inputs.end(), first.operands.begin(), first.operands.end());
      fused.attrs["ops"] = FusedEpilogue(graph, f);
      x = head.outputs[0].name;
    }
    std::vector<int> members{f.chain.head};
    std::vector<GraphNode> operand_views;  // full-size operands read at the head's output shape
    for (size_t i = 0; i < f.length; ++i) {
      const GraphNode& node = graph.nodes[steps[i]];
      const std::string through = Through(graph, f.chain, i, x);
      const Step step = AsStep(graph, cube, node, through);
      if (step.op.empty()) return InvalidArgument("fusion '" + fused.name + "': '" + node.name + "' is not a chain step");
      const auto& views = ViewsBefore(f.chain, i);
      members.insert(members.end(), views.begin(), views.end());
      x = node.outputs[0].name;
      if (IsAffineStep(graph, f.chain, i, through)) {  // the norm's scale (Mul) or bias (Add) from now on
        fused.inputs[step.op == "Mul" ? 1 : 2] = step.operands[0];
        continue;
      }
      for (const std::string& operand : step.operands) {
        const NamedTensor* t = graph.FindTensor(operand);
        const NamedTensor& at = head.outputs[0];
        if (cube == nullptr || t == nullptr || t->desc.shape == at.desc.shape ||
            space_util::Elements(t->desc.shape) != space_util::Elements(at.desc.shape)) {
          fused.inputs.push_back(operand);
          continue;
        }
        const std::string name = fused.name + "/" + operand;
        fused.inputs.push_back(name);
        if (std::any_of(operand_views.begin(), operand_views.end(), [&](const GraphNode& v) { return v.name == name; })) {
          continue;  // an operand the chain reads twice: one view
        }
        GraphNode view;
        view.name = name;
        view.op_type = kReshapeOp;
        view.inputs = {operand};
        view.outputs = {{name, TensorDesc{at.desc.shape, t->desc.dtype, t->desc.format}}};
        operand_views.push_back(std::move(view));
      }
    }
    fused.outputs = graph.nodes[steps[f.length - 1]].outputs;
    // With the value before its Quantize as a second output, the fused op stands where that
    // value was made: its other readers may come before the Quantize.
    int at = steps[f.length - 1];
    if (f.chain.value_out && f.length == steps.size()) {
      const NamedTensor* value = graph.FindTensor(graph.nodes[steps.back()].inputs[0]);
      if (value == nullptr) return InvalidArgument("fusion '" + fused.name + "': its quantize reads no tensor");
      fused.outputs.push_back(*value);
      fused.attrs["value_out"] = value->desc.dtype;
      at = f.length >= 2 ? steps[f.length - 2] : f.chain.head;
    }
    members.insert(members.end(), steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(f.length));
    for (int m : members) {
      if (removed[m]) return InvalidArgument("fusion '" + fused.name + "' shares node '" + graph.nodes[m].name + "' with another");
      removed[m] = true;
    }
    operand_views.push_back(std::move(fused));
    replacement[at] = std::move(operand_views);
  }
  Graph out = graph;
  out.nodes.clear();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!replacement[i].empty()) {
      for (GraphNode& node : replacement[i]) out.nodes.push_back(std::move(node));
    } else if (!removed[i]) {
      out.nodes.push_back(graph.nodes[i]);
    }
  }
  TF_RETURN_IF_ERROR(ValidateGraphOps(out, soc, checks));
  return out;
}

namespace {

bool FlagOn(const GraphNode& node, int input) {
  for (const char* name : kFlagNames[input]) {
    if (auto it = node.attrs.find(name); it != node.attrs.end() && FlagSet(it->second)) return true;
  }
  return false;
}

bool IsBatchMatMul(const GraphNode& node) { return node.op_type == "BatchMatMul" && node.outputs.size() == 1; }

// The score chain's step `node` reads the value so far as x: its op and operands.
Step ScoreStep(const Graph& graph, const GraphNode& node, const std::string& x) {
  static const std::set<std::string> kScoreOps = {"Mul", "Div", "Add", "Sub", "Where"};
  if (!kScoreOps.count(node.op_type)) return {};
  return AsStep(graph, nullptr, node, x);
}

// A view that keeps `shape` and is the only reader of its input.
bool IsShapeView(const Graph& graph, const GraphNode& node, const std::vector<int64_t>& shape) {
  return node.IsView() && node.inputs.size() == 1 && node.outputs.size() == 1 && node.outputs[0].desc.shape == shape &&
         OnlyReader(graph, node.inputs[0]) >= 0;
}

// GQA's repeat_kv as torch exports it, read back from its output `t`: the tensor before it
// and its three views (appended to `views`), or `t` when it is not one.
std::string Ungrouped(const Graph& graph, const std::string& t, std::vector<int>* views) {
  auto view_of = [&](const std::string& out) {
    const int p = graph.ProducerOf(out);
    return p >= 0 && graph.nodes[p].IsView() && graph.nodes[p].inputs.size() == 1 && OnlyReader(graph, out) >= 0 ? p : -1;
  };
  auto shape = [&](const std::string& name) {
    const NamedTensor* n = graph.FindTensor(name);
    return n ? n->desc.shape : std::vector<int64_t>{};
  };
  const int r = view_of(t);
  const int e = r >= 0 ? view_of(graph.nodes[r].inputs[0]) : -1;
  const int u = e >= 0 ? view_of(graph.nodes[e].inputs[0]) : -1;
  if (u < 0) return t;
  const std::string& x = graph.nodes[u].inputs[0];
  const std::vector<int64_t> out = shape(t), expanded = shape(graph.nodes[r].inputs[0]),
                             unsqueezed = shape(graph.nodes[e].inputs[0]), in = shape(x);
  const size_t n = out.size();
  if (n < 3 || in.size() != n || expanded.size() != n + 1 || unsqueezed.size() != n + 1) return t;
  const size_t h = n - 3;  // the heads' axis
  for (size_t i = 0; i < n; ++i) {
    if (i == h) continue;
    if (in[i] != out[i] || expanded[i < h ? i : i + 1] != out[i] || unsqueezed[i < h ? i : i + 1] != out[i]) return t;
  }
  if (in[h] <= 0 || expanded[h] != in[h] || unsqueezed[h] != in[h] || unsqueezed[h + 1] != 1 ||
      expanded[h] * expanded[h + 1] != out[h] || out[h] == in[h]) {
    return t;
  }
  views->insert(views->end(), {r, e, u});
  return x;
}

}  // namespace

std::vector<int> AttentionFusion::Members() const {
  std::vector<int> m{scores};
  m.insert(m.end(), steps.begin(), steps.end());
  m.push_back(softmax);
  if (quantize >= 0) m.push_back(quantize);
  m.insert(m.end(), views.begin(), views.end());
  m.push_back(output);
  std::sort(m.begin(), m.end());  // graph order
  return m;
}

std::vector<AttentionFusion> FindAttentionFusions(const Graph& graph) {
  std::vector<AttentionFusion> found;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& sm = graph.nodes[i];
    if (sm.op_type != "Softmax" || sm.inputs.size() != 1 || sm.outputs.size() != 1) continue;
    const int rank = static_cast<int>(sm.outputs[0].desc.shape.size());
    if (auto it = sm.attrs.find("axis"); it != sm.attrs.end() && it->second != "-1" && it->second != std::to_string(rank - 1)) {
      continue;
    }
    AttentionFusion a;
    std::string probs = sm.outputs[0].name;
    int output = OnlyReader(graph, probs);
    while (output >= 0 && (IsShapeView(graph, graph.nodes[output], sm.outputs[0].desc.shape) ||
                           (a.quantize < 0 && IsQuantize(graph, graph.nodes[output])))) {
      if (graph.nodes[output].IsView()) {
        a.views.push_back(output);
      } else {
        a.quantize = output;
      }
      probs = graph.nodes[output].outputs[0].name;
      output = OnlyReader(graph, probs);
    }
    if (output < 0 || !IsBatchMatMul(graph.nodes[output]) || graph.nodes[output].inputs.size() != 2 ||
        graph.nodes[output].inputs[0] != probs || FlagOn(graph.nodes[output], 0) || FlagOn(graph.nodes[output], 1)) {
      continue;
    }
    // P x v in int8 (its P the quantized softmax) or in the softmax's own dtype.
    const NamedTensor* p_in = graph.FindTensor(probs);
    if ((a.quantize >= 0) != (p_in != nullptr && p_in->desc.dtype == "int8")) continue;
    // Back from the softmax through the score chain to the scores' BatchMatMul.
    a.softmax = static_cast<int>(i);
    a.output = output;
    std::string x = sm.inputs[0];
    while (a.scores < 0) {
      const int p = graph.ProducerOf(x);
      if (p < 0 || OnlyReader(graph, x) < 0) break;
      const GraphNode& node = graph.nodes[p];
      if (IsShapeView(graph, node, sm.outputs[0].desc.shape)) {
        a.views.push_back(p);
        x = node.inputs[0];
        continue;
      }
      if (IsBatchMatMul(node)) {
        if (node.inputs.size() == 2 && !FlagOn(node, 0) && rank >= 3) a.scores = p;
        break;
      }
      // The value so far has the scores' shape and comes from a node (a mask may too).
      std::string prev;
      for (const std::string& in : node.inputs) {
        const NamedTensor* t = graph.FindTensor(in);
        if (!ScoreStep(graph, node, in).op.empty() && graph.ProducerOf(in) >= 0 && t != nullptr &&
            t->desc.shape == node.outputs[0].desc.shape) {
          prev = in;
          break;
        }
      }
      if (prev.empty()) break;
      a.steps.insert(a.steps.begin(), p);
      a.step_x.insert(a.step_x.begin(), prev);
      x = prev;
    }
    if (a.scores < 0) continue;
    a.k = Ungrouped(graph, graph.nodes[a.scores].inputs[1], &a.views);
    a.v = Ungrouped(graph, graph.nodes[a.output].inputs[1], &a.views);
    found.push_back(std::move(a));
  }
  return found;
}

std::string AttentionNodeName(const Graph& graph, const AttentionFusion& fusion) {
  std::string name;
  for (int m : fusion.Members()) {
    if (!graph.nodes[m].IsView()) name += (name.empty() ? "" : "+") + graph.nodes[m].name;
  }
  return name;
}

namespace {

// How far past its own row each row of `tensor` may keep keys (C - R over its last two
// axes [R, C]; every later key masked) when it is one of the graph's causal masks, or a
// view of one that keeps its last two axes or takes a window of them (GPT-2's
// bias[:, :, k - q : k, :k], left unfolded by the export): a window from row r0, column
// c0 masks every j > i + offset + r0 - c0.
std::optional<int64_t> CausalOffset(const Graph& graph, const std::string& tensor) {
  const NamedTensor* t = graph.FindTensor(tensor);
  if (t == nullptr || t->desc.shape.size() < 2) return std::nullopt;
  const std::vector<int64_t>& shape = t->desc.shape;
  const size_t rank = shape.size();
  if (graph.IsCausalMask(tensor)) return shape[rank - 1] - shape[rank - 2];
  const int p = graph.ProducerOf(tensor);
  if (p < 0 || !graph.nodes[p].IsView() || graph.nodes[p].inputs.size() != 1) return std::nullopt;
  const GraphNode& view = graph.nodes[p];
  const NamedTensor* in = graph.FindTensor(view.inputs[0]);
  const std::optional<int64_t> offset = CausalOffset(graph, view.inputs[0]);
  if (!offset || in == nullptr) return std::nullopt;
  const std::vector<int64_t>& from = in->desc.shape;
  const auto starts = view.attrs.find(kSliceStartsAttr);
  if (starts == view.attrs.end()) {
    // A reshape or broadcast of the leading axes only.
    const bool same = from.size() >= 2 && std::equal(from.end() - 2, from.end(), shape.end() - 2);
    return same ? offset : std::nullopt;
  }
  auto at = space_util::ParseIntList(starts->second, "slice_starts", "0,0");
  if (!at.ok() || at->size() != rank || from.size() != rank) return std::nullopt;
  return *offset + (*at)[rank - 2] - (*at)[rank - 1];
}

// The masks the score chain applies over the scores' own [Sq, Skv]: a Where's condition
// (it keeps the scores where the mask holds), an Add's operand (it adds 0 there).
std::vector<std::string> ScoreMasks(const Graph& graph, const AttentionFusion& fusion) {
  const std::vector<int64_t>& scores = graph.nodes[fusion.scores].outputs[0].desc.shape;
  std::vector<std::string> masks;
  for (size_t i = 0; i < fusion.steps.size() && i < fusion.step_x.size(); ++i) {
    const Step step = ScoreStep(graph, graph.nodes[fusion.steps[i]], fusion.step_x[i]);
    if ((step.op != "Where" && step.op != "Add") || step.operands.empty()) continue;
    const NamedTensor* t = graph.FindTensor(step.operands[0]);
    if (t != nullptr && t->desc.shape.size() >= 2 && scores.size() >= 2 &&
        std::equal(t->desc.shape.end() - 2, t->desc.shape.end(), scores.end() - 2)) {
      masks.push_back(step.operands[0]);
    }
  }
  return masks;
}

}  // namespace

bool AttentionIsCausal(const Graph& graph, const AttentionFusion& fusion) {
  const std::vector<int64_t>& scores = graph.nodes[fusion.scores].outputs[0].desc.shape;
  // Masking every key j > query i + Skv - Sq; a mask that masks from an earlier key on
  // masks these too.
  for (const std::string& mask : ScoreMasks(graph, fusion)) {
    const std::optional<int64_t> offset = CausalOffset(graph, mask);
    if (offset && *offset <= scores[scores.size() - 1] - scores[scores.size() - 2]) return true;
  }
  return false;
}

std::vector<std::string> UndeclaredMasks(const Graph& graph, const AttentionFusion& fusion) {
  std::vector<std::string> masks;
  const std::vector<int64_t>& scores = graph.nodes[fusion.scores].outputs[0].desc.shape;
  // One query (a decoding step) sees every key: a causal mask would skip nothing.
  if (AttentionIsCausal(graph, fusion) || scores.size() < 2 || scores[scores.size() - 2] < 2) return masks;
  for (const std::string& mask : ScoreMasks(graph, fusion)) {
    std::string root = mask;
    for (int p = graph.ProducerOf(root); p >= 0 && graph.nodes[p].IsView() && graph.nodes[p].inputs.size() == 1;
         p = graph.ProducerOf(root)) {
      root = graph.nodes[p].inputs[0];
    }
    if (graph.ProducerOf(root) < 0 && !graph.IsWeight(root)) masks.push_back(mask);
  }
  return masks;
}

std::string AttentionScoreChain(const Graph& graph, const AttentionFusion& fusion) {
  std::string ops;
  for (size_t i = 0; i < fusion.steps.size() && i < fusion.step_x.size(); ++i) {
    ops += (ops.empty() ? "" : ",") + ScoreStep(graph, graph.nodes[fusion.steps[i]], fusion.step_x[i]).op;
  }
  return ops;
}

Result<Graph> ApplyAttentionFusions(const Graph& graph, const std::vector<AttentionFusion>& fusions, const SocSpec& soc,
                                    OpChecks* checks) {
  std::vector<bool> removed(graph.nodes.size(), false);
  std::vector<std::optional<GraphNode>> replacement(graph.nodes.size());
  for (const AttentionFusion& a : fusions) {
    for (int m : a.Members()) {
      if (m < 0 || static_cast<size_t>(m) >= graph.nodes.size()) return InvalidArgument("an attention fusion that is not one of this graph's");
    }
    const GraphNode& scores = graph.nodes[a.scores];
    GraphNode fused;
    fused.name = AttentionNodeName(graph, a);
    fused.op_type = kFlashAttentionOp;
    fused.inputs = {scores.inputs[0], a.k.empty() ? scores.inputs[1] : a.k,
                    a.v.empty() ? graph.nodes[a.output].inputs[1] : a.v};
    if (FlagOn(scores, 1)) fused.attrs["transpose_b"] = "1";
    for (size_t i = 0; i < a.steps.size(); ++i) {
      const GraphNode& node = graph.nodes[a.steps[i]];
      const Step step = i < a.step_x.size() ? ScoreStep(graph, node, a.step_x[i]) : Step{};
      if (step.op.empty()) return InvalidArgument("attention '" + fused.name + "': '" + node.name + "' is not a score step");
      fused.inputs.insert(fused.inputs.end(), step.operands.begin(), step.operands.end());
    }
    if (const std::string chain = AttentionScoreChain(graph, a); !chain.empty()) fused.attrs["scores"] = chain;
    if (AttentionIsCausal(graph, a)) fused.attrs["causal"] = "1";
    fused.outputs = graph.nodes[a.output].outputs;
    for (int m : a.Members()) {
      if (removed[m]) return InvalidArgument("attention '" + fused.name + "' shares node '" + graph.nodes[m].name + "' with another");
      removed[m] = true;
    }
    replacement[a.output] = std::move(fused);
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
  TF_RETURN_IF_ERROR(ValidateGraphOps(out, soc, checks));
  return out;
}

std::vector<TransposeFold> FindTransposeFolds(const Graph& graph) {
  std::vector<TransposeFold> folds;
  for (size_t t = 0; t < graph.nodes.size(); ++t) {
    const GraphNode& node = graph.nodes[t];
    if (!SwapsLastTwoAxes(node, graph)) continue;
    std::string x = node.outputs[0].name;
    int consumer = OnlyReader(graph, x);
    std::vector<int> between;
    bool cast = false;  // one at most
    while (consumer >= 0) {
      const GraphNode& n = graph.nodes[consumer];
      const bool elementwise = (n.op_type == "Cast" && !cast && n.inputs.size() == 1 && n.outputs.size() == 1) ||
                               (n.IsView() && !n.attrs.count(kSliceStartsAttr) && n.inputs.size() == 1 &&
                                n.outputs.size() == 1 && n.outputs[0].desc.shape == node.outputs[0].desc.shape);
      if (!elementwise) break;
      cast = cast || n.op_type == "Cast";
      between.push_back(consumer);
      x = n.outputs[0].name;
      consumer = OnlyReader(graph, x);
    }
    if (consumer < 0) continue;
    const GraphNode& c = graph.nodes[consumer];
    if (c.op_type != "MatMul" && c.op_type != "BatchMatMul") continue;
    for (int input = 0; input < 2 && input < static_cast<int>(c.inputs.size()); ++input) {
      if (c.inputs[input] == x) folds.push_back({static_cast<int>(t), consumer, input, between});
    }
  }
  return folds;
}

std::string TransposeFlag(const GraphNode&, int input) { return kFlagNames[input == 0 ? 0 : 1][0]; }

Result<Graph> ApplyTransposeFolds(const Graph& graph, const std::vector<TransposeFold>& folds, const SocSpec& soc,
                                  OpChecks* checks) {
  Graph out = graph;
  std::vector<bool> removed(graph.nodes.size(), false);
  for (const TransposeFold& f : folds) {
    auto in_graph = [&](int i) { return i >= 0 && static_cast<size_t>(i) < graph.nodes.size(); };
    // What each node of the path reads: the Transpose's output, then each one's before.
    bool path = in_graph(f.transpose) && in_graph(f.consumer) && !removed[f.transpose];
    std::string x = path ? graph.nodes[f.transpose].outputs[0].name : "";
    for (int b : f.between) {
      path = path && in_graph(b) && graph.nodes[b].inputs.size() == 1 && graph.nodes[b].inputs[0] == x &&
             graph.nodes[b].outputs.size() == 1;
      x = path ? graph.nodes[b].outputs[0].name : "";
    }
    if (!path || f.input < 0 || f.input > 1 || graph.nodes[f.consumer].inputs.size() <= static_cast<size_t>(f.input) ||
        graph.nodes[f.consumer].inputs[f.input] != x) {
      return InvalidArgument("a transpose fold that is not one of this graph's");
    }
    GraphNode& c = out.nodes[f.consumer];
    bool set = false;
    for (const char* name : kFlagNames[f.input]) {
      if (auto it = c.attrs.find(name); it != c.attrs.end()) {
        set = set || FlagSet(it->second);
        c.attrs.erase(it);
      }
    }
    c.attrs[kFlagNames[f.input][0]] = set ? "0" : "1";
    const std::string& untransposed = graph.nodes[f.transpose].inputs[0];
    if (f.between.empty()) {
      c.inputs[f.input] = untransposed;
    } else {
      out.nodes[f.between.front()].inputs[0] = untransposed;
      const NamedTensor* in = graph.FindTensor(untransposed);
      if (in == nullptr) return InvalidArgument("a transpose fold of '" + untransposed + "', which the graph has not");
      for (int b : f.between) out.nodes[b].outputs[0].desc.shape = in->desc.shape;
    }
    removed[f.transpose] = true;
  }
  std::vector<GraphNode> kept;
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    if (!removed[i]) kept.push_back(std::move(out.nodes[i]));
  }
  out.nodes = std::move(kept);
  TF_RETURN_IF_ERROR(ValidateGraphOps(out, soc, checks));
  return out;
}

}  // namespace tunefleet
