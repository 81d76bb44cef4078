#include "tunefleet/common/onnx_import.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/vector_space.h"

#include "onnx_const_fold.h"
#include "onnx_pads.h"
#include "onnx_util.h"
#include "space_util.h"
#include "window_attrs.h"

namespace tunefleet {
namespace {

using onnx_util::Attr;
using onnx_util::ConstantTensor;
using onnx_util::IntAttr;
using onnx_util::IntsAttr;
using onnx_util::IntValues;
using onnx_util::IsStandardDomain;
using onnx_util::ScalarValue;

constexpr const char* kDefaultSoc = "Ascend910B2";
constexpr const char* kSupported =
    "MatMul, Gemm, Einsum (of two operands, a batched matrix product: torch.einsum's attention and projections), "
    "Conv (2-D; 1-D as a Conv2D of height 1), Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Exp, Gelu (or written out: "
    "x*0.5*(1+erf(x/sqrt 2)), 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))), Softmax (over any axis from opset 13, one not last between views) and LayerNormalization over the "
    "last axis (or written out: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta), "
    "RMSNormalization over the last axis (or written out: Pow 2, ReduceMean, Add eps, Sqrt, Div or Reciprocal and Mul, "
    "Mul gamma), RoPE written out as HF's apply_rotary_pos_emb (x*cos + Concat(Neg(x[..., h:]), x[..., :h])*sin over "
    "the whole last axis), Transpose, Cast, index arithmetic (Equal, Not, CumSum along the last axis, and Add, Sub, "
    "Mul of int32 or int64: RoBERTa's position ids), and as views Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, "
    "Expand (a broadcast, GQA's repeat_kv; its shape a constant, or arithmetic on constants only), Pad of zeros, Split and Slice "
    "(windows: a fused QKV's parts, a mask cut to length; constant bounds, step 1) and Gather of one constant index "
    "(a window: ViT's class token x[:, 0]), Gather of a 2-D table's rows by int32 or int64 indices (an embedding: "
    "torch's nn.Embedding of token ids), Resize (2-D, NCHW, nearest or linear: nn.Upsample, "
    "interpolate), Pad (2-D, NCHW, over H and W: constant, reflect or edge; of zeros read only by a Conv, the "
    "Conv's padding), ConvTranspose (2-D; kernel equal to stride, U-Net's 2x2/2: a MatMul; else a Conv2D of its "
    "input dilated by a Pad kernel), Where (a select: GPT-2's causal torch.where), Concat (a copy: a KV cache, a "
    "partial rotary embedding's parts), MaxPool and AveragePool (2-D, NCHW), GlobalAveragePool and ReduceMean over "
    "axes 2, 3 of NCHW (a ReduceMean over H*W), ReduceMean and ReduceSum over neighbouring axes (the last ones: a "
    "row-wise kernel; over earlier ones: an AveragePool, a sum's with divisor_override 1), ReduceMax over neighbouring axes (over earlier ones a MaxPool), ReduceMin "
    "and ReduceL2 over the last "
    "axes (torch's F.normalize), InstanceNormalization (torch's InstanceNorm2d, and "
    "GroupNorm as torch exports it), GroupNormalization (opset 18 or 21), HardSigmoid and HardSwish (MobileNetV3), LeakyRelu, PRelu, Elu, Softplus (Mish as Softplus, Tanh, Mul), Abs, Log, Max and Min of two, Sin and Cos, Clip (constant bounds: MobileNet's ReLU6), BatchNormalization (inference: a "
    "FusedMulAdd per channel), QuantizeLinear and DequantizeLinear (onnxruntime's QDQ format: a MatMul, Gemm or "
    "Conv between dequantizes of int8 data an int8 cube op writing float16; other quantizes and dequantizes Casts)";

std::optional<std::string> DTypeOf(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return "float32";
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::BFLOAT16: return "bfloat16";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::BOOL: return "int8";  // one byte an element (Where's condition)
    case onnx::TensorProto::UINT8: return "int8";  // one byte: QuantizeLinear's default output
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64";
    default: return std::nullopt;
  }
}

struct TensorInfo {
  int elem_type = 0;
  std::vector<int64_t> shape;
  bool known = false;  // every dimension has a size
  bool constant = false;  // an initializer or a Constant node's value
};

TensorInfo InfoOf(const onnx::TypeProto& type) {
  TensorInfo t;
  if (!type.has_tensor_type()) return t;
  t.elem_type = type.tensor_type().elem_type();
  if (!type.tensor_type().has_shape()) return t;
  t.known = true;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() <= 0) t.known = false;
    t.shape.push_back(d.has_dim_value() ? d.dim_value() : 0);
  }
  return t;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// What a tunefleet graph's tensors may be (graph.h's JSON reader).
bool IsGraphDType(const std::string& dtype) {
  return dtype == "float16" || dtype == "bfloat16" || dtype == "float32" || dtype == "int8" || dtype == "int32" ||
         dtype == "int64";
}

// Whether constant `t` holds a causal mask (Graph::causal_masks): over its last two axes
// [R, C], C >= R, every column j > row i + C - R masked, for every leading index: a
// bool false, a float (added to the scores) at most -1e4 (-inf, or the dtype's lowest,
// as exporters write it). Below, it may keep or mask as it likes (a padding mask folded
// in). A weight's random values fail at the first row.
bool HoldsCausalMask(const onnx::TensorProto& t) {
  if (t.dims_size() < 2) return false;
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  const int64_t rows = t.dims(t.dims_size() - 2), cols = t.dims(t.dims_size() - 1);
  if (n <= 0 || rows < 1 || cols < rows) return false;
  const std::string& raw = t.raw_data();
  const auto count = static_cast<size_t>(n);
  std::function<double(size_t)> at;  // element i as a number; a bool's kept is 1
  bool is_bool = false;
  switch (t.data_type()) {
    case onnx::TensorProto::BOOL:
      is_bool = true;
      if (raw.size() == count) {
        at = [&](size_t i) { return raw[i] != 0 ? 1.0 : 0.0; };
      } else if (static_cast<size_t>(t.int32_data_size()) == count) {
        at = [&](size_t i) { return t.int32_data(static_cast<int>(i)) != 0 ? 1.0 : 0.0; };
      }
      break;
    case onnx::TensorProto::FLOAT:
      if (raw.size() == 4 * count) {
        at = [&](size_t i) {
          float f = 0;
          std::memcpy(&f, raw.data() + 4 * i, 4);
          return static_cast<double>(f);
        };
      } else if (static_cast<size_t>(t.float_data_size()) == count) {
        at = [&](size_t i) { return static_cast<double>(t.float_data(static_cast<int>(i))); };
      }
      break;
    case onnx::TensorProto::FLOAT16:
      if (raw.size() == 2 * count) {
        at = [&](size_t i) {
          uint16_t bits = 0;
          std::memcpy(&bits, raw.data() + 2 * i, 2);
          return onnx_util::HalfToDouble(bits);
        };
      } else if (static_cast<size_t>(t.int32_data_size()) == count) {
        at = [&](size_t i) { return onnx_util::HalfToDouble(static_cast<uint32_t>(t.int32_data(static_cast<int>(i)))); };
      }
      break;
    default: break;
  }
  if (!at) return false;
  for (size_t i = 0; i < count; ++i) {
    const int64_t j = static_cast<int64_t>(i) % cols, row = static_cast<int64_t>(i) / cols % rows;
    if (j <= row + cols - rows) continue;
    const double v = at(i);
    if (is_bool ? v != 0.0 : !(v <= -1e4)) return false;
  }
  return true;
}

// The domain of the ops a fold writes that ONNX has no op for (Rope); a model may hold
// them too.
constexpr const char* kTunefleetDomain = "ai.tunefleet";

// Whether Convert handles the node's op: standard ops, and Gelu / FastGelu also in the
// com.microsoft domain (onnxruntime's). Constant is handled apart.
// Split and Slice: each output a window view of the input (GraphFromOnnxFile).
bool IsWindowOp(const onnx::NodeProto& n) {
  return IsStandardDomain(n.domain()) && (n.op_type() == "Split" || n.op_type() == "Slice");
}

// A Gather of one constant index (ViT's x[:, 0]): a window view (GraphFromOnnxFile).
bool IsConstantPick(const onnx::NodeProto& n, const std::map<std::string, const onnx::TensorProto*>& constants) {
  if (!IsStandardDomain(n.domain()) || n.op_type() != "Gather" || n.input_size() != 2 || n.output_size() != 1) {
    return false;
  }
  const auto c = constants.find(n.input(1));
  const auto v = c == constants.end() ? std::nullopt : IntValues(*c->second);
  return v && v->size() == 1;
}

// A Pad's mode, whether its value is 0, and its pads as written (the begin of each axis
// padded, then each end) over `axes` (empty: every axis, in order). Its pads and value are
// attributes before opset 11 and inputs from 11, its axes an input from 18; nullopt when one
// is not a constant.
struct PadSpec {
  std::string mode = "constant";
  bool zero = true;
  std::vector<int64_t> pads, axes;
};
std::optional<PadSpec> ReadPadSpec(const onnx::NodeProto& n,
                                   const std::map<std::string, const onnx::TensorProto*>& constants) {
  if (!IsStandardDomain(n.domain()) || n.op_type() != "Pad" || n.input_size() < 1 || n.output_size() != 1) {
    return std::nullopt;
  }
  auto constant = [&](int i) -> const onnx::TensorProto* {
    const auto c = constants.find(n.input(i));
    return c == constants.end() ? nullptr : c->second;
  };
  auto given = [&](int i) { return n.input_size() > i && !n.input(i).empty(); };
  PadSpec s;
  if (const auto* mode = Attr(n, "mode")) s.mode = mode->s();
  if (!given(1)) {
    s.pads = IntsAttr(n, "pads");
    if (const auto* value = Attr(n, "value")) s.zero = value->f() == 0;
    return s;
  }
  const auto* pads = constant(1);
  const auto values = pads ? IntValues(*pads) : std::nullopt;
  if (!values) return std::nullopt;
  s.pads = *values;
  if (given(2)) {
    const auto* value = constant(2);
    const auto v = value ? ScalarValue(*value) : std::nullopt;
    if (!v) return std::nullopt;
    s.zero = *v == 0;
  }
  if (given(3)) {
    const auto* axes = constant(3);
    const auto a = axes ? IntValues(*axes) : std::nullopt;
    if (!a) return std::nullopt;
    s.axes = *a;
  }
  return s;
}

// Each of `rank` axes' [begin, end] padding; nullopt when the pads do not match the axes.
std::optional<std::vector<std::array<int64_t, 2>>> PadsPerAxis(const PadSpec& spec, size_t rank) {
  std::vector<int64_t> axes = spec.axes;
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (axes.empty() || spec.pads.size() != 2 * axes.size()) return std::nullopt;
  std::vector<std::array<int64_t, 2>> out(rank, {0, 0});
  const int64_t r = static_cast<int64_t>(rank);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 0 || a >= r) return std::nullopt;
    out[static_cast<size_t>(a)] = {spec.pads[k], spec.pads[k + axes.size()]};
  }
  return out;
}

// The [top, bottom, left, right] padding of a Pad of x [N, C, H, W] that pads H and W by
// at least 0 and N and C not at all; else an error that says what it does instead.
Result<std::array<int64_t, 4>> HwPads(const PadSpec& spec, const std::string& where) {
  const auto axes = PadsPerAxis(spec, 4);
  if (!axes) {
    return InvalidArgument(fmt::format("{}: its {} pads do not match the {} axes it pads", where, spec.pads.size(),
                                       spec.axes.empty() ? 4 : spec.axes.size()));
  }
  for (size_t a = 0; a < 4; ++a) {
    const auto [begin, end] = (*axes)[a];
    if (begin < 0 || end < 0) {
      return InvalidArgument(fmt::format("{}: a negative pad on axis {} crops; only padding is supported (a Slice "
                                         "crops)",
                                         where, a));
    }
    if (a < 2 && (begin != 0 || end != 0)) {
      return InvalidArgument(fmt::format("{}: it pads axis {} ({}); only H and W are padded", where, a,
                                         a == 0 ? "N" : "C"));
    }
  }
  return std::array<int64_t, 4>{(*axes)[2][0], (*axes)[2][1], (*axes)[3][0], (*axes)[3][1]};
}

// A Pad that pads nothing (torch's export writes one of zeros before an AveragePool): a view.
bool IsNoOpPad(const onnx::NodeProto& n, const std::map<std::string, const onnx::TensorProto*>& constants) {
  const auto spec = ReadPadSpec(n, constants);
  return spec && std::all_of(spec->pads.begin(), spec->pads.end(), [](int64_t p) { return p == 0; });
}

// A ReduceMean's, ReduceSum's, ReduceL2's, ReduceMax's or ReduceMin's axes as written: an attribute before opset 18
// (ReduceSum: 13), an input from then; empty when it gives none (every axis); nullopt when the input is
// not a constant.
std::optional<std::vector<int64_t>> ReduceAxes(const onnx::NodeProto& n,
                                               const std::map<std::string, const onnx::TensorProto*>& constants,
                                               int opset) {
  std::optional<std::vector<int64_t>> axes;
  if (opset < (n.op_type() == "ReduceSum" ? 13 : 18)) {
    axes = IntsAttr(n, "axes");
  } else if (n.input_size() >= 2 && !n.input(1).empty()) {
    const auto c = constants.find(n.input(1));
    if (c != constants.end()) axes = IntValues(*c->second);
  } else {
    axes = std::vector<int64_t>{};
  }
  return axes;
}

bool IsReduce(const onnx::NodeProto& n) {
  return IsStandardDomain(n.domain()) &&
         (n.op_type() == "ReduceMean" || n.op_type() == "ReduceSum" || n.op_type() == "ReduceL2" ||
          n.op_type() == "ReduceMax" || n.op_type() == "ReduceMin") &&
         n.input_size() >= 1 && n.output_size() == 1;
}

bool KnownOp(const onnx::NodeProto& n) {
  static const std::set<std::string> kStandard = {
      "MatMul", "Gemm", "Conv", "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Gelu", "Softmax",
      "LayerNormalization", "RMSNormalization", "Transpose", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
      "Identity", "Dropout", "Expand", "Split", "Slice", "Where", "Concat", "Gather", "Resize", "ConvTranspose",
      "MaxPool", "AveragePool", "GlobalAveragePool", "Clip", "BatchNormalization", "Pad", "InstanceNormalization",
      "HardSigmoid", "HardSwish", "Sin", "Cos", "GroupNormalization", "Equal", "Not", "CumSum", "Einsum",
      "LeakyRelu", "Elu", "Softplus", "Abs", "Log", "Max", "Min", "PRelu", "QuantizeLinear", "DequantizeLinear"};
  if (IsStandardDomain(n.domain())) return kStandard.count(n.op_type()) > 0 || IsReduce(n);
  if (n.domain() == kTunefleetDomain) return n.op_type() == "Rope" || n.op_type() == "Silu";
  return n.domain() == "com.microsoft" && (n.op_type() == "Gelu" || (n.op_type() == "FastGelu" && n.input_size() == 1));
}

// Whether the importer models the node: an op it converts, or a pattern that is a view in
// the graph (a constant pick, a Pad of zeros).
bool Importable(const onnx::NodeProto& n, const std::map<std::string, const onnx::TensorProto*>& constants) {
  return KnownOp(n) || IsConstantPick(n, constants) || IsNoOpPad(n, constants);
}

std::string UnknownOpMessage(const onnx::NodeProto& n, const std::string& where) {
  static const std::set<std::string> kOfAFold = {"Erf", "Pow", "ReduceMean", "Sqrt", "Reciprocal"};
  // What each op that PyTorch exports and tunefleet has no kernel for usually comes
  // from, and what to export instead.
  static const std::map<std::string, std::string> kAdvice = {
      {"Shape", "shape arithmetic on a tensor ONNX's shape inference could not size (a dynamic-axes export's Shape "
                "of a tensor it sizes, once --dim gives every symbolic dimension, is computed at import): export "
                "with fixed shapes (torch.onnx.export without dynamic_axes, with do_constant_folding=True)"},
      {"ConstantOfShape", "shape arithmetic on a tensor's shape: export with fixed shapes and constant folding on "
                          "(arithmetic on constants only, such as GQA's repeat_kv writes, is folded)"},
      {"Range", "shape arithmetic: export with fixed shapes and constant folding on"},
      {"Neg", "a negation (RoPE's rotate_half when it does not fold: x*cos + cat(-x[..., h:], x[..., :h])*sin over the "
              "whole last axis folds into one Rope)"},
  };
  const bool fold_part = IsStandardDomain(n.domain()) && kOfAFold.count(n.op_type()) > 0;
  if (auto advice = kAdvice.find(n.op_type()); IsStandardDomain(n.domain()) && advice != kAdvice.end()) {
    return fmt::format("{}: ONNX op '{}' has no tunefleet equivalent: {} (supported: {})", where, n.op_type(),
                       advice->second, kSupported);
  }
  return fmt::format("{}: ONNX op '{}{}' has no tunefleet equivalent (supported: {}){}", where,
                     n.domain().empty() ? "" : n.domain() + ".", n.op_type(), kSupported,
                     fold_part ? "; a LayerNorm, RMSNorm or GELU written out folds into one op only in the forms "
                                 "docs/profiling.md \"ONNX models\" lists (each constant holding its value, gamma and beta "
                                 "weights, nothing outside the chain reading inside it)"
                               : "");
}

// A Gather of one constant index `values[0]` from data of `shape` (ViT's and BERT's pooler
// x[:, 0]) as the window it picks: a window view of size 1 on the axis, named as the node,
// then, for a scalar index, a view dropping the axis. `desc` is the node's output.
Result<std::vector<GraphNode>> PickNodes(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                                         std::vector<int64_t> shape, const std::vector<int64_t>& values,
                                         TensorDesc desc) {
  const int64_t rank = static_cast<int64_t>(shape.size()), axis = IntAttr(n, "axis", 0);
  if (axis < -rank || axis >= rank) {
    return InvalidArgument(fmt::format("{}: axis {} is outside its input's {} axes", where, axis, rank));
  }
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  const int64_t at = values[0] < 0 ? values[0] + shape[a] : values[0];
  if (at < 0 || at >= shape[a]) {
    return InvalidArgument(
        fmt::format("{}: index {} is outside axis {} of its input, of size {}", where, values[0], a, shape[a]));
  }
  std::vector<int64_t> starts(shape.size(), 0);
  starts[a] = at;
  shape[a] = 1;
  const bool keeps_axis = desc.shape.size() == shape.size();
  const std::string picked = keeps_axis ? n.output(0) : n.output(0) + "/window";
  std::vector<GraphNode> nodes;
  nodes.push_back(GraphNode{name, kReshapeOp, {n.input(0)}, {{picked, {shape, desc.dtype, "ND"}}}, {}});
  nodes.back().attrs[kSliceStartsAttr] = Join(starts);
  if (!keeps_axis) nodes.push_back(GraphNode{name + "/view", kReshapeOp, {picked}, {{n.output(0), std::move(desc)}}, {}});
  return nodes;
}

// A Pad of x `shape` that pads (IsNoOpPad is a view): over H and W of [N, C, H, W], constant
// (any value), reflect or edge, its pads constants: a Pad kernel (vector_space.h), named as
// the node, attrs pads [top, bottom, left, right].
Result<GraphNode> PadNode(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                          const std::vector<int64_t>& shape,
                          const std::map<std::string, const onnx::TensorProto*>& constants, TensorDesc desc) {
  const auto spec = ReadPadSpec(n, constants);
  if (!spec) {
    return InvalidArgument(where + ": its pads, value and axes must be constants (export with fixed shapes and "
                                   "constant folding on)");
  }
  if (spec->mode != "constant" && spec->mode != "reflect" && spec->mode != "edge") {
    return InvalidArgument(where + ": mode '" + spec->mode + "' is not supported (constant, reflect or edge)");
  }
  if (shape.size() != 4) {
    return InvalidArgument(fmt::format("{}: only a 2-D padding (x [N, C, H, W], over H and W) is a kernel; its input "
                                       "is [{}]",
                                       where, Join(shape)));
  }
  TF_ASSIGN_OR_RETURN(const auto pads, HwPads(*spec, where));
  GraphNode node{name, "Pad", {n.input(0)}, {{n.output(0), std::move(desc)}}, {}};
  node.attrs["pads"] = fmt::format("{},{},{},{}", pads[0], pads[1], pads[2], pads[3]);
  if (spec->mode != "constant") node.attrs["mode"] = spec->mode;
  return node;
}

// A ReduceMean, ReduceSum, ReduceL2, ReduceMax or ReduceMin of x `shape` over `axes`, a contiguous run of them
// ([A, K, B]: K the elements reduced, A before, B after), between two views (`<node>/rows`
// and `<node>/view`, which gives ONNX's output, keepdims or not). When the run ends at the
// last axis, the row-wise kernel of its name over rows [A, K], named as the node (a
// GlobalAveragePool, or an SE block's x.mean((2, 3)), is a ReduceMean over H*W; torch's
// F.normalize a ReduceL2). Else a mean is an AveragePool of window [K, 1] over x viewed
// [A, 1, K, B] (timm's token pooling: ATC's ReduceMeanD adds K rows of B elements, what the
// pooling's cost counts), a sum the same pooling with divisor_override 1 (a sentence
// embedding's masked sum over the sequence) and a max a MaxPool of that window (a point
// cloud's max pooling over its points); an L2 norm or a minimum there is refused.
Result<std::vector<GraphNode>> ReduceNodes(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                                           const std::vector<int64_t>& shape,
                                           const std::map<std::string, const onnx::TensorProto*>& constants,
                                           int opset, TensorDesc desc) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const bool global = n.op_type() == "GlobalAveragePool";
  if (global && rank < 3) return InvalidArgument(where + ": GlobalAveragePool takes x as [N, C, spatial...]");
  std::optional<std::vector<int64_t>> axes = global ? std::vector<int64_t>{} : ReduceAxes(n, constants, opset);
  if (!axes) return InvalidArgument(where + ": its axes must be a constant (export with constant folding on)");
  for (int64_t a = 2; global && a < rank; ++a) axes->push_back(a);
  const std::string op = global ? "ReduceMean" : n.op_type();
  if (axes->empty()) {
    if (IntAttr(n, "noop_with_empty_axes", 0) != 0) {
      return std::vector<GraphNode>{GraphNode{name, kReshapeOp, {n.input(0)}, {{n.output(0), std::move(desc)}}, {}}};
    }
    for (int64_t a = 0; a < rank; ++a) axes->push_back(a);
  }
  for (int64_t& a : *axes) {
    if (a < -rank || a >= rank) {
      return InvalidArgument(fmt::format("{}: axis {} is outside its input's {} axes", where, a, rank));
    }
    if (a < 0) a += rank;
  }
  std::sort(axes->begin(), axes->end());
  if (axes->back() - axes->front() + 1 != static_cast<int64_t>(axes->size())) {
    return InvalidArgument(fmt::format("{}: it reduces axes [{}], which are not next to each other; only a run of "
                                       "neighbouring axes is supported",
                                       where, Join(*axes)));
  }
  int64_t before = 1, reduced = 1, after = 1;
  for (int64_t a = 0; a < rank; ++a) {
    (a < axes->front() ? before : a > axes->back() ? after : reduced) *= shape[static_cast<size_t>(a)];
  }
  const std::string rows = n.output(0) + "/rows", reduced_name = n.output(0) + "/reduced";
  std::vector<GraphNode> nodes;
  if (after == 1) {
    nodes.push_back(
        GraphNode{name + "/rows", kReshapeOp, {n.input(0)}, {{rows, {{before, reduced}, desc.dtype, "ND"}}}, {}});
    nodes.push_back(GraphNode{name, op, {rows}, {{reduced_name, {{before, 1}, desc.dtype, "ND"}}}, {}});
  } else {
    if (op == "ReduceL2") {
      return InvalidArgument(fmt::format("{}: a ReduceL2 over axes [{}], before the last, is not supported (an L2 "
                                         "norm over the last axes is: normalise over dim=-1)",
                                         where, Join(*axes)));
    }
    if (op == "ReduceMin") {
      return InvalidArgument(fmt::format("{}: a ReduceMin over axes [{}], before the last, is not supported (a "
                                         "minimum over the last axes is, and a ReduceMax over any)",
                                         where, Join(*axes)));
    }
    if (reduced > window_attrs::kMaxWindowAttr) {
      return InvalidArgument(fmt::format("{}: it {} {} elements, more than a pooling window's {}", where,
                                         op == "ReduceSum" ? "sums" : op == "ReduceMax" ? "takes the maximum of" : "averages", reduced,
                                         window_attrs::kMaxWindowAttr));
    }
    nodes.push_back(GraphNode{name + "/rows", kReshapeOp, {n.input(0)},
                              {{rows, {{before, 1, reduced, after}, desc.dtype, "ND"}}}, {}});
    nodes.push_back(GraphNode{name, op == "ReduceMax" ? "MaxPool" : "AveragePool", {rows},
                              {{reduced_name, {{before, 1, 1, after}, desc.dtype, "ND"}}}, {}});
    nodes.back().attrs["kernel_shape"] = fmt::format("{},1", reduced);
    if (op == "ReduceSum") nodes.back().attrs["divisor_override"] = "1";
  }
  nodes.push_back(GraphNode{name + "/view", kReshapeOp, {reduced_name}, {{n.output(0), std::move(desc)}}, {}});
  return nodes;
}

// A GroupNormalization (opset 18: scale and bias a group's, [G]; 21: a channel's, [C]) of
// x `shape` [N, C, spatial...] as the InstanceNorm kernel of its groups, named as the node,
// between two views: x read as [N, G, C / G * spatial] (`<node>/groups`), the kernel's
// output as ONNX's (`<node>/view`). The kernel applies a channel's scale and bias to its
// part of the group's row (vector_space.h row_channels), as CANN's GroupNorm.
Result<std::vector<GraphNode>> GroupNormNodes(const onnx::NodeProto& n, const std::string& name,
                                              const std::string& where, const std::vector<int64_t>& shape,
                                              TensorDesc desc) {
  const int64_t groups = IntAttr(n, "num_groups", 0);
  if (shape.size() < 3 || n.input_size() != 3) {
    return InvalidArgument(where + ": GroupNormalization takes x [N, C, spatial...], scale and bias");
  }
  if (groups <= 0 || shape[1] % groups != 0) {
    return InvalidArgument(fmt::format("{}: its num_groups ({}) must be set and divide x's {} channels", where,
                                       groups, shape[1]));
  }
  if (IntAttr(n, "stash_type", 1) != 1) {
    return InvalidArgument(where + ": stash_type must be 1 (statistics in float32, as the kernel keeps them)");
  }
  const int64_t row = std::accumulate(shape.begin() + 2, shape.end(), shape[1] / groups, std::multiplies<int64_t>());
  const std::string grouped = n.output(0) + "/groups", normed = n.output(0) + "/norm";
  std::vector<GraphNode> nodes;
  nodes.push_back(GraphNode{name + "/groups", kReshapeOp, {n.input(0)},
                            {{grouped, {{shape[0], groups, row}, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name, "InstanceNorm", {grouped, n.input(1), n.input(2)},
                            {{normed, {{shape[0], groups, row}, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name + "/view", kReshapeOp, {normed}, {{n.output(0), std::move(desc)}}, {}});
  return nodes;
}

// An inference BatchNormalization of x `shape` [N, C, ...] (one a torch export did not fold
// into the convolution before it: BatchNorm1d after a Linear, a pre-activation block's BN
// before its convolution) as what ATC runs: x * a + b per channel, a FusedMulAdd named as
// the node, reading the scale and bias (which the running mean and variance fold into at
// compile time) through views [C, 1, ...] that broadcast over the spatial axes.
Result<std::vector<GraphNode>> BatchNormNodes(const onnx::NodeProto& n, const std::string& name,
                                              const std::string& where, const std::vector<int64_t>& shape,
                                              const std::map<std::string, TensorInfo>& info,
                                              const std::map<std::string, const onnx::TensorProto*>& constants,
                                              TensorDesc desc) {
  const bool statistics_out = std::any_of(n.output().begin() + 1, n.output().end(), [](const std::string& o) { return !o.empty(); });
  if (IntAttr(n, "training_mode", 0) != 0 || statistics_out) {
    return InvalidArgument(where + ": a training-mode BatchNormalization (batch statistics) is not supported: export "
                                   "the model in eval mode");
  }
  if (shape.size() < 2 || n.input_size() != 5) {
    return InvalidArgument(where + ": BatchNormalization takes x [N, C, ...], scale, B, mean and var");
  }
  std::vector<GraphNode> nodes;
  std::vector<std::string> params;
  for (int i = 1; i <= 2; ++i) {
    const auto p = info.find(n.input(i));
    // A constant: an initializer, or one read through Identity (torch's export shares equal
    // initializers, a fresh model's BatchNorm weights among them, that way).
    if (p == info.end() || !constants.count(n.input(i)) || p->second.shape != std::vector<int64_t>{shape[1]}) {
      return InvalidArgument(fmt::format("{}: its {} must be a constant of x's {} channels", where,
                                         i == 1 ? "scale" : "B", shape[1]));
    }
    if (shape.size() == 2) {  // [N, C]: [C] broadcasts as it is
      params.push_back(n.input(i));
      continue;
    }
    std::vector<int64_t> per_channel(shape.size() - 1, 1);
    per_channel[0] = shape[1];
    params.push_back(n.output(0) + (i == 1 ? "/scale" : "/bias"));
    nodes.push_back(GraphNode{name + (i == 1 ? "/scale" : "/bias"), kReshapeOp, {n.input(i)},
                              {{params.back(), {per_channel, desc.dtype, "ND"}}}, {}});
  }
  nodes.push_back(GraphNode{name, "FusedMulAdd", {n.input(0), params[0], params[1]}, {{n.output(0), std::move(desc)}}, {}});
  return nodes;
}

// A transposed convolution whose windows overlap (a GAN's 4x4 at stride 2, a decoder's 3x3
// at stride 2 with output_padding 1) as CANN's Conv2DBackpropInput runs it on the cube: the
// convolution at stride 1 of x dilated by the stride (s - 1 zeros between neighbours, a
// Pad kernel `<node>/dilate`; none at stride 1), padded by d(k - 1) - pads (plus
// output_padding at the end), by the weight [Cin, Cout/g, kh, kw] read as [Cout, Cin/g, kh,
// kw] (a view `<node>/w`: ATC flips and transposes it at compile time), its bias the
// convolution's. A Conv2D named as the node.
Result<std::vector<GraphNode>> OverlappingConvTransposeNodes(const onnx::NodeProto& n, const std::string& name,
                                                             const std::string& where, const std::vector<int64_t>& x,
                                                             const std::vector<int64_t>& k, int64_t groups,
                                                             TensorDesc desc) {
  auto pair = [&](const char* attr, int64_t fallback) -> Result<std::array<int64_t, 2>> {
    const std::vector<int64_t> v = IntsAttr(n, attr);
    if (v.empty()) return std::array<int64_t, 2>{fallback, fallback};
    if (v.size() != 2) {
      return InvalidArgument(fmt::format("{}: {} must have 2 values for a 2-D transposed convolution", where, attr));
    }
    return std::array<int64_t, 2>{v[0], v[1]};
  };
  TF_ASSIGN_OR_RETURN(const auto stride, pair("strides", 1));
  TF_ASSIGN_OR_RETURN(const auto dilation, pair("dilations", 1));
  TF_ASSIGN_OR_RETURN(const auto extra, pair("output_padding", 0));
  std::vector<int64_t> pads = IntsAttr(n, "pads");  // [top, left, bottom, right]
  if (pads.empty()) pads.assign(4, 0);
  if (pads.size() != 4) return InvalidArgument(where + ": pads must have 4 values for a 2-D transposed convolution");
  std::array<int64_t, 4> conv_pads{};  // [top, bottom, left, right]
  for (int a = 0; a < 2; ++a) {
    if (stride[a] < 1 || dilation[a] < 1 || extra[a] < 0 || extra[a] >= std::max(stride[a], dilation[a])) {
      return InvalidArgument(fmt::format("{}: strides [{}], dilations [{}] and output_padding [{}] are not a valid "
                                         "transposed convolution",
                                         where, Join(IntsAttr(n, "strides")), Join(IntsAttr(n, "dilations")),
                                         Join(IntsAttr(n, "output_padding"))));
    }
    const int64_t reach = dilation[a] * (k[2 + a] - 1);
    conv_pads[2 * a] = reach - pads[a];
    conv_pads[2 * a + 1] = reach - pads[2 + a] + extra[a];
    if (conv_pads[2 * a] < 0 || conv_pads[2 * a + 1] < 0) {
      return InvalidArgument(fmt::format("{}: pads [{}] exceed the kernel's reach ({}): it crops its output, which is "
                                         "not supported",
                                         where, Join(pads), reach));
    }
  }
  const int64_t cout = k[1] * groups;
  const std::array<int64_t, 2> dilated{(x[2] - 1) * stride[0] + 1, (x[3] - 1) * stride[1] + 1};
  const int64_t ho = dilated[0] + conv_pads[0] + conv_pads[1] - dilation[0] * (k[2] - 1);
  const int64_t wo = dilated[1] + conv_pads[2] + conv_pads[3] - dilation[1] * (k[3] - 1);
  if (desc.shape != std::vector<int64_t>{x[0], cout, ho, wo}) {
    return InvalidArgument(fmt::format("{}: its output [{}] is not the [{}, {}, {}, {}] its strides, pads and "
                                       "output_padding give",
                                       where, Join(desc.shape), x[0], cout, ho, wo));
  }
  const std::string out = n.output(0);
  std::vector<GraphNode> nodes;
  std::string input = n.input(0);
  if (stride[0] > 1 || stride[1] > 1) {
    input = out + "/dilated";
    nodes.push_back(GraphNode{name + "/dilate", "Pad", {n.input(0)},
                              {{input, {{x[0], x[1], dilated[0], dilated[1]}, desc.dtype, "ND"}}}, {}});
    nodes.back().attrs["interior"] = fmt::format("{},{}", stride[0] - 1, stride[1] - 1);
  }
  nodes.push_back(GraphNode{name + "/w", kReshapeOp, {n.input(1)},
                            {{out + "/w", {{cout, x[1] / groups, k[2], k[3]}, desc.dtype, "ND"}}}, {}});
  std::vector<std::string> inputs{input, out + "/w"};
  if (n.input_size() >= 3 && !n.input(2).empty()) inputs.push_back(n.input(2));
  GraphNode conv{name, "Conv2D", inputs, {{out, std::move(desc)}}, {}};
  conv.attrs["pads"] = fmt::format("{},{},{},{}", conv_pads[0], conv_pads[1], conv_pads[2], conv_pads[3]);
  if (dilation[0] > 1 || dilation[1] > 1) conv.attrs["dilations"] = fmt::format("{},{}", dilation[0], dilation[1]);
  if (groups != 1) conv.attrs["groups"] = std::to_string(groups);
  nodes.push_back(std::move(conv));
  return nodes;
}

// A 2-D ConvTranspose whose kernel equals its stride (U-Net's 2x2/2 up-convolution): each
// output pixel takes exactly one input pixel's contribution, so it is the GEMM x [N*H*W,
// Cin] by its weight [Cin, Cout*kh*kw], as CANN's Conv2DTranspose computes it on the cube,
// written into the output's layout (a view, as a head split's permute is). The MatMul is
// named as the node; a bias is an Add of [Cout, 1, 1] after it. Others (overlapping
// windows: 3x3/2 with pads; groups) are OverlappingConvTransposeNodes'.
Result<std::vector<GraphNode>> ConvTransposeNodes(const onnx::NodeProto& n, const std::string& name,
                                                  const std::string& where, const std::vector<int64_t>& x,
                                                  const std::map<std::string, TensorInfo>& info, TensorDesc desc) {
  const auto w = n.input_size() >= 2 ? info.find(n.input(1)) : info.end();
  if (x.size() != 4 || w == info.end() || w->second.shape.size() != 4 || desc.shape.size() != 4) {
    return InvalidArgument(where + ": only a 2-D transposed convolution (NCHW input, weight [Cin, Cout, kh, kw]) is "
                                   "supported");
  }
  const std::vector<int64_t>& k = w->second.shape;
  auto all = [&](const char* attr, int64_t value) {
    const std::vector<int64_t> v = IntsAttr(n, attr);
    return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == value; });
  };
  const int64_t groups = IntAttr(n, "group", 1);
  if (groups < 1 || k[0] != x[1] || x[1] % groups != 0) {
    return InvalidArgument(fmt::format("{}: its weight [{}] does not match x's {} channels in {} groups", where,
                                       Join(k), x[1], groups));
  }
  const std::vector<int64_t> strides = IntsAttr(n, "strides");
  const bool kernel_is_stride = strides.size() == 2 && strides[0] == k[2] && strides[1] == k[3];
  if (!kernel_is_stride || !all("pads", 0) || !all("dilations", 1) || !all("output_padding", 0) || groups != 1) {
    return OverlappingConvTransposeNodes(n, name, where, x, k, groups, std::move(desc));
  }
  const int64_t cout = k[1], pixels = x[0] * x[2] * x[3];
  const std::string out = n.output(0);
  std::vector<GraphNode> nodes;
  nodes.push_back(GraphNode{name + "/x_rows", kReshapeOp, {n.input(0)}, {{out + "/x_rows", {{pixels, x[1]}, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name + "/w_cols", kReshapeOp, {n.input(1)},
                            {{out + "/w_cols", {{k[0], cout * k[2] * k[3]}, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name, "MatMul", {out + "/x_rows", out + "/w_cols"},
                            {{out + "/gemm", {{pixels, cout * k[2] * k[3]}, desc.dtype, "ND"}}}, {}});
  const bool bias = n.input_size() >= 3 && !n.input(2).empty();
  nodes.push_back(GraphNode{name + "/out", kReshapeOp, {out + "/gemm"}, {{bias ? out + "/nobias" : out, desc}}, {}});
  if (bias) {
    nodes.push_back(GraphNode{name + "/bias", kReshapeOp, {n.input(2)}, {{out + "/bias", {{cout, 1, 1}, desc.dtype, "ND"}}}, {}});
    nodes.push_back(GraphNode{name + "/bias_add", "Add", {out + "/nobias", out + "/bias"}, {{out, std::move(desc)}}, {}});
  }
  return nodes;
}

// A 1-D Conv (Whisper's and wav2vec 2.0's audio front ends, a TCN) of x `x` [N, C, L] as
// the 2-D convolution of height 1 it is, as ATC runs Conv1D: x viewed [N, C, 1, L]
// (`<node>/x2d`), the weight [O, C / g, K] viewed [O, C / g, 1, K] (`<node>/w2d`), the
// Conv2D (DepthwiseConv2D for one filter per channel) named as the node, pads [0, 0,
// begin, end], strides and dilations [1, s]; its output [N, O, 1, L'] viewed as ONNX's.
Result<std::vector<GraphNode>> Conv1dNodes(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                                           const std::vector<int64_t>& x,
                                           const std::map<std::string, TensorInfo>& info, TensorDesc desc) {
  const auto w = n.input_size() >= 2 ? info.find(n.input(1)) : info.end();
  if (w == info.end() || w->second.shape.size() != 3 || desc.shape.size() != 3) {
    return InvalidArgument(where + ": a 1-D convolution takes x [N, C, L] and a weight [O, C / group, K]");
  }
  auto one = [&](const char* attr, int64_t fallback) -> Result<int64_t> {
    const std::vector<int64_t> v = IntsAttr(n, attr);
    if (v.empty()) return fallback;
    if (v.size() != 1) return InvalidArgument(fmt::format("{}: {} must have 1 value for a 1-D convolution", where, attr));
    return v[0];
  };
  TF_ASSIGN_OR_RETURN(const int64_t stride, one("strides", 1));
  TF_ASSIGN_OR_RETURN(const int64_t dilation, one("dilations", 1));
  std::vector<int64_t> pads = IntsAttr(n, "pads");
  if (pads.empty()) pads = {0, 0};
  if (pads.size() != 2) return InvalidArgument(where + ": pads must have 2 values for a 1-D convolution");
  const std::vector<int64_t>& k = w->second.shape;
  const int64_t groups = IntAttr(n, "group", 1);
  const std::string out = n.output(0);
  std::vector<GraphNode> nodes;
  nodes.push_back(GraphNode{name + "/x2d", kReshapeOp, {n.input(0)},
                            {{out + "/x2d", {{x[0], x[1], 1, x[2]}, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name + "/w2d", kReshapeOp, {n.input(1)},
                            {{out + "/w2d", {{k[0], k[1], 1, k[2]}, desc.dtype, "ND"}}}, {}});
  const bool depthwise = groups > 1 && k[0] == groups && k[1] == 1;
  GraphNode conv{name, depthwise ? "DepthwiseConv2D" : "Conv2D", {out + "/x2d", out + "/w2d"},
                 {{out + "/2d", {{desc.shape[0], desc.shape[1], 1, desc.shape[2]}, desc.dtype, "ND"}}}, {}};
  if (n.input_size() >= 3 && !n.input(2).empty()) conv.inputs.push_back(n.input(2));
  conv.attrs["pads"] = fmt::format("0,0,{},{}", pads[0], pads[1]);
  if (stride != 1) conv.attrs["strides"] = fmt::format("1,{}", stride);
  if (dilation != 1) conv.attrs["dilations"] = fmt::format("1,{}", dilation);
  if (groups != 1 && !depthwise) conv.attrs["groups"] = std::to_string(groups);
  nodes.push_back(std::move(conv));
  nodes.push_back(GraphNode{name + "/view", kReshapeOp, {out + "/2d"}, {{out, std::move(desc)}}, {}});
  return nodes;
}

// An Einsum's terms, one character per dimension ("..." written out as '0', '1', ... from
// the innermost of the dimensions it stands for), and each letter's size. libonnx 1.12
// infers only an Einsum's rank; this gives its output's shape too (InferShapes).
struct EinsumTerms {
  std::string a, b, out;
  std::map<char, int64_t> size;
  std::vector<int64_t> OutShape() const {
    std::vector<int64_t> shape;
    for (char c : out) shape.push_back(size.at(c));
    return shape;
  }
};

Result<EinsumTerms> ParseEinsum(const onnx::NodeProto& n, const std::string& where, const std::vector<int64_t>& a_shape,
                                const std::vector<int64_t>& b_shape) {
  const auto* attr = Attr(n, "equation");
  std::string eq = attr ? attr->s() : "";
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (n.input_size() != 2 || comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) {
    return InvalidArgument(fmt::format("{}: Einsum '{}': only an Einsum of two operands (a matrix product) is "
                                       "supported",
                                       where, eq));
  }
  size_t ellipsis_rank = 0;
  auto expand = [&](std::string term, size_t rank) -> Result<std::string> {
    const size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    const size_t letters = term.size() - 3;
    if (letters > rank) return InvalidArgument(fmt::format("{}: Einsum '{}' names more axes than its operand has", where, eq));
    std::string dims;
    for (size_t d = rank - letters; d-- > 0;) dims += static_cast<char>('0' + d);
    ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    return term.replace(dots, 3, dims);
  };
  EinsumTerms t;
  TF_ASSIGN_OR_RETURN(t.a, expand(lhs.substr(0, comma), a_shape.size()));
  TF_ASSIGN_OR_RETURN(t.b, expand(lhs.substr(comma + 1), b_shape.size()));
  auto count = [&](char c) { return std::count(t.a.begin(), t.a.end(), c) + std::count(t.b.begin(), t.b.end(), c); };
  if (arrow != std::string::npos) {
    t.out = eq.substr(arrow + 2);
    if (const size_t dots = t.out.find("..."); dots != std::string::npos) {
      std::string dims;
      for (size_t d = ellipsis_rank; d-- > 0;) dims += static_cast<char>('0' + d);
      t.out.replace(dots, 3, dims);
    }
  } else {  // implicit: the ellipsis, then the letters named once, in alphabetical order
    for (size_t d = ellipsis_rank; d-- > 0;) t.out += static_cast<char>('0' + d);
    std::string once;
    for (char c : t.a + t.b) {
      if (std::isalpha(static_cast<unsigned char>(c)) && count(c) == 1) once += c;
    }
    std::sort(once.begin(), once.end());
    t.out += once;
  }
  using Term = std::pair<const std::string*, const std::vector<int64_t>*>;
  for (const auto& [term, shape] : {Term{&t.a, &a_shape}, Term{&t.b, &b_shape}}) {
    if (term->size() != shape->size()) {
      return InvalidArgument(fmt::format("{}: Einsum '{}' names {} axes of a rank-{} operand", where, eq, term->size(),
                                         shape->size()));
    }
    for (size_t d = 0; d < term->size(); ++d) {
      const char c = (*term)[d];
      if (std::count(term->begin(), term->end(), c) > 1) {
        return InvalidArgument(fmt::format("{}: Einsum '{}' repeats '{}' within a term (a diagonal): only a matrix "
                                           "product is supported",
                                           where, eq, c));
      }
      if (auto [it, added] = t.size.emplace(c, (*shape)[d]); !added && it->second != (*shape)[d]) {
        return InvalidArgument(fmt::format("{}: Einsum '{}' sizes '{}' {} and {} (a broadcast): only operands of equal "
                                           "sizes are supported",
                                           where, eq, c, it->second, (*shape)[d]));
      }
    }
  }
  for (char c : t.out) {
    if (!t.size.count(c) || std::count(t.out.begin(), t.out.end(), c) > 1) {
      return InvalidArgument(fmt::format("{}: Einsum '{}': output axis '{}' is in no operand, or named twice", where, eq, c));
    }
  }
  return t;
}

// An Einsum of two operands that is a (batched) matrix product, as torch.einsum exports
// attention ("bhqd,bhkd->bhqk", then "bhqk,bhkd->bhqd") or a projection ("bnd,dk->bnk"),
// written as CANN runs it: one MatMul or BatchMatMul. Each letter is a batch letter (both
// operands and the output), a row letter (the first operand and the output), a column
// letter (the second and the output) or a contracted one (both operands, not the output).
// Each operand is viewed [batch..., rows, K] or, when its innermost letter says it is
// stored the other way round, [batch..., K, rows] with transpose_a (transpose_b for the
// second); an output whose innermost letter is a row letter is computed as B^T A^T, the
// operands swapped, so no Transpose kernel is needed. Any other reordering is a view, as
// the importer writes a permute (Convert, "Transpose"). The product is named as the node;
// views named <node>/a, <node>/b and <node>/view stand where the shapes differ. `dtype`
// is the output's.
Result<std::vector<GraphNode>> EinsumNodes(const onnx::NodeProto& n, const std::string& name, const std::string& where,
                                           const std::map<std::string, TensorInfo>& info, const std::string& dtype) {
  std::vector<int64_t> shapes[2];
  for (int i = 0; i < 2 && i < n.input_size(); ++i) {
    const auto it = info.find(n.input(i));
    if (it == info.end() || !it->second.known) return InvalidArgument(where + ": its operands' shapes are not known");
    shapes[i] = it->second.shape;
  }
  TF_ASSIGN_OR_RETURN(const EinsumTerms terms, ParseEinsum(n, where, shapes[0], shapes[1]));
  const std::string &a = terms.a, &b = terms.b, &out = terms.out;
  const std::string eq = Attr(n, "equation")->s();
  TensorDesc desc{terms.OutShape(), dtype, "ND"};
  auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  std::string batch, rows, cols, contracted;
  for (char c : out) {
    (in(a, c) && in(b, c) ? batch : in(a, c) ? rows : cols) += c;
  }
  for (char c : a) {
    if (in(b, c) && !in(out, c)) contracted += c;
  }
  for (char c : a + b) {
    if (!in(out, c) && !(in(a, c) && in(b, c))) {
      return InvalidArgument(fmt::format("{}: Einsum '{}' sums '{}' of one operand: only a matrix product (each letter "
                                         "left out of the output in both operands) is supported",
                                         where, eq, c));
    }
  }
  auto product = [&](const std::string& letters) {
    int64_t p = 1;
    for (char c : letters) p *= terms.size.at(c);
    return p;
  };
  std::vector<int64_t> batch_shape;
  for (char c : batch) batch_shape.push_back(terms.size.at(c));
  auto with_batch = [&](int64_t x, int64_t y) {
    std::vector<int64_t> s = batch_shape;
    s.push_back(x);
    s.push_back(y);
    return s;
  };
  // The output innermost in a row letter: out^T = B^T A^T, with the operands' roles swapped.
  const bool swap = !out.empty() && in(rows, out.back());
  const int first = swap ? 1 : 0;
  const std::string& first_term = swap ? b : a;
  const std::string& second_term = swap ? a : b;
  const std::string& first_rows = swap ? cols : rows;
  const std::string& second_cols = swap ? rows : cols;
  const bool transpose_first = !first_term.empty() && in(first_rows, first_term.back());
  const bool transpose_second = !second_term.empty() && in(contracted, second_term.back());
  const int64_t r = product(first_rows), k = product(contracted), c = product(second_cols);
  std::vector<GraphNode> nodes;
  auto operand = [&](int i, std::vector<int64_t> shape, const std::string& suffix) {
    if (shape == shapes[i]) return n.input(i);
    const std::string viewed = n.output(0) + "/" + suffix;
    nodes.push_back(GraphNode{name + "/" + suffix, kReshapeOp, {n.input(i)}, {{viewed, {shape, desc.dtype, "ND"}}}, {}});
    return viewed;
  };
  const std::string x = operand(first, transpose_first ? with_batch(k, r) : with_batch(r, k), swap ? "b" : "a");
  const std::string y = operand(1 - first, transpose_second ? with_batch(c, k) : with_batch(k, c), swap ? "a" : "b");
  const std::vector<int64_t> product_shape = with_batch(r, c);
  const bool direct = product_shape == desc.shape;
  GraphNode matmul{name, batch.empty() ? "MatMul" : "BatchMatMul", {x, y},
                   {{direct ? n.output(0) : n.output(0) + "/product", {product_shape, desc.dtype, "ND"}}}, {}};
  if (transpose_first) matmul.attrs["transpose_a"] = "1";
  if (transpose_second) matmul.attrs["transpose_b"] = "1";
  nodes.push_back(std::move(matmul));
  if (!direct) {
    nodes.push_back(GraphNode{name + "/view", kReshapeOp, {n.output(0) + "/product"}, {{n.output(0), std::move(desc)}}, {}});
  }
  return nodes;
}

// A Softmax over axis `axis` of x (opset 13 on; not the last: the last is Convert's):
// YOLOv8's distribution focal loss head, a softmax over the 16 bins of [b, 4, 16, anchors].
// x viewed with that axis moved last (`<node>/last`), the Softmax named as the node over
// it, its output viewed back (`<node>/view`): a permute is a view to the importer
// (Convert, "Transpose"), as CANN's SoftmaxV2 reads any axis in place.
std::vector<GraphNode> SoftmaxOverAxisNodes(const onnx::NodeProto& n, const std::string& name,
                                            const std::vector<int64_t>& x, size_t axis, TensorDesc desc) {
  std::vector<int64_t> moved = x;
  moved.erase(moved.begin() + static_cast<std::ptrdiff_t>(axis));
  moved.push_back(x[axis]);
  const std::string out = n.output(0);
  std::vector<GraphNode> nodes;
  nodes.push_back(GraphNode{name + "/last", kReshapeOp, {n.input(0)}, {{out + "/last", {moved, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name, "Softmax", {out + "/last"}, {{out + "/softmax", {moved, desc.dtype, "ND"}}}, {}});
  nodes.push_back(GraphNode{name + "/view", kReshapeOp, {out + "/softmax"}, {{out, std::move(desc)}}, {}});
  return nodes;
}

// One filter per channel (group = C_in = C_out, the filter [C, 1, kh, kw]): a depthwise
// convolution, a vector op (vector_space.h); a Conv of other groups stays on the cube.
bool IsDepthwiseConv(const onnx::NodeProto& n, const std::map<std::string, TensorInfo>& info) {
  const int64_t g = IntAttr(n, "group", 1);
  const auto filter = n.input_size() > 1 ? info.find(n.input(1)) : info.end();
  return g > 1 && filter != info.end() && filter->second.shape.size() == 4 && filter->second.shape[0] == g &&
         filter->second.shape[1] == 1;
}

// A QDQ model's int8 cube ops (onnxruntime's QDQ format, what int8 deployment starts
// from): each MatMul, Gemm or 2-D Conv of one group whose x and weight (A and B) are both
// DequantizeLinear outputs of int8 or uint8 data, every consumer of those dequantizes such
// an op, as ATC runs them: the cube reads the int8 data and writes float16 (its dequant in
// the fixpipe). A depthwise Conv (one filter per channel, a DepthwiseConv2D: vector_space.h)
// is taken so too: it reads the int8 data and writes float16. Returns the dequantizes (by
// node index), each a view of its int8 input in the graph, and the ops, the cube ones
// writing float16 by attrs.out_dtype. Any other
// dequantize is a Cast kernel back to float; a weight's that no int8 cube op reads is
// computed at compile time, as any node of constants.
struct QuantizedCubes {
  std::set<size_t> dequantizes, cubes;
};
QuantizedCubes FindQuantizedCubes(const std::vector<std::pair<onnx::NodeProto, int>>& nodes,
                                  const std::map<std::string, TensorInfo>& info, const std::set<std::string>& graph_outputs) {
  std::map<std::string, size_t> dequantize_of;  // output -> node
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& n = nodes[i].first;
    for (const auto& in : n.input()) readers[in].push_back(i);
    if (!IsStandardDomain(n.domain()) || n.op_type() != "DequantizeLinear" || n.output_size() != 1) continue;
    const auto t = info.find(n.input(0));
    if (t != info.end() && t->second.known &&
        (t->second.elem_type == onnx::TensorProto::INT8 || t->second.elem_type == onnx::TensorProto::UINT8)) {
      dequantize_of[n.output(0)] = i;
    }
  }
  auto is_cube = [&](const onnx::NodeProto& n) {
    if (!IsStandardDomain(n.domain()) || n.input_size() < 2) return false;
    if (n.op_type() == "MatMul" || n.op_type() == "Gemm") return true;
    const auto x = info.find(n.input(0));  // a 2-D convolution: a 1-D one is written as one (Conv1dNodes)
    return n.op_type() == "Conv" && (IntAttr(n, "group", 1) == 1 || IsDepthwiseConv(n, info)) && x != info.end() &&
           x->second.shape.size() == 4;
  };
  QuantizedCubes q;
  for (const auto& [out, i] : dequantize_of) {
    if (!graph_outputs.count(out)) q.dequantizes.insert(i);
  }
  // A dequantize stays a view while every reader is a cube op both of whose data inputs
  // are such views: dropping one can drop others, so until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = q.dequantizes.begin(); it != q.dequantizes.end();) {
      bool keeps = true;
      for (size_t r : readers[nodes[*it].first.output(0)]) {
        const onnx::NodeProto& reader = nodes[r].first;
        keeps = keeps && is_cube(reader);
        for (int k = 0; keeps && k < 2; ++k) {
          const auto d = dequantize_of.find(reader.input(k));
          keeps = d != dequantize_of.end() && q.dequantizes.count(d->second);
        }
        if (!keeps) break;
      }
      if (keeps) {
        ++it;
      } else {
        it = q.dequantizes.erase(it);
        changed = true;
      }
    }
  }
  for (size_t d : q.dequantizes) {
    for (size_t r : readers[nodes[d].first.output(0)]) q.cubes.insert(r);
  }
  return q;
}

// One ONNX node as a tunefleet node (op, inputs, attrs); the outputs are filled by the caller.
struct Converted {
  std::string op;
  std::vector<std::string> inputs;
  std::map<std::string, std::string> attrs;
};

// A 2-D Conv's or pooling's ONNX pads [top, left, bottom, right] into attrs.pads
// [top, bottom, left, right] (window_attrs.h, CANN Conv2D's order); `what` names the op
// when they are not 4.
Status CopyPads2d(const onnx::NodeProto& n, const std::string& where, const std::string& what, Converted& c) {
  const std::vector<int64_t> p = IntsAttr(n, "pads");
  if (p.empty()) return Status::Ok();
  if (p.size() != 4) return InvalidArgument(where + ": pads must have 4 values for " + what);
  c.attrs["pads"] = Join({p[0], p[2], p[1], p[3]});
  return Status::Ok();
}

Result<Converted> Convert(const onnx::NodeProto& n, const std::string& where,
                          const std::map<std::string, TensorInfo>& info,
                          const std::map<std::string, const onnx::TensorProto*>& constants, int opset) {
  const std::string& op = n.op_type();
  auto rank = [&](int i) -> size_t {
    auto it = i < n.input_size() ? info.find(n.input(i)) : info.end();
    return it == info.end() ? 0 : it->second.shape.size();
  };
  auto first = [&](int count) {
    return std::vector<std::string>(n.input().begin(), n.input().begin() + std::min(count, n.input_size()));
  };
  auto last_axis = [&](int64_t axis) { return axis == -1 || (rank(0) > 0 && axis == static_cast<int64_t>(rank(0)) - 1); };
  Converted c;
  if (!KnownOp(n)) return InvalidArgument(UnknownOpMessage(n, where));
  if (op == "MatMul") {
    c.op = rank(0) == 2 && rank(1) == 2 ? "MatMul" : "BatchMatMul";
    c.inputs = first(2);
  } else if (op == "Gemm") {
    c.op = "Gemm";
    const auto* beta = Attr(n, "beta");
    c.inputs = first(beta && beta->f() == 0.0f ? 2 : 3);  // beta 0: C is not added
    for (const char* flag : {"transA", "transB"}) {
      if (IntAttr(n, flag, 0)) c.attrs[flag] = "1";
    }
    for (const char* scale : {"alpha", "beta"}) {
      if (const auto* a = Attr(n, scale); a && a->f() != 1.0f && a->f() != 0.0f) c.attrs[scale] = fmt::format("{}", a->f());
    }
  } else if (op == "Conv") {
    if (rank(0) != 4) {
      return InvalidArgument(where + ": only 1-D and 2-D convolutions (NCL or NCHW input) are supported");
    }
    c.inputs = first(3);
    if (auto s = IntsAttr(n, "strides"); !s.empty()) c.attrs["strides"] = Join(s);
    if (auto d = IntsAttr(n, "dilations"); !d.empty()) c.attrs["dilations"] = Join(d);
    TF_RETURN_IF_ERROR(CopyPads2d(n, where, "a 2-D convolution", c));
    const int64_t g = IntAttr(n, "group", 1);
    const bool depthwise = IsDepthwiseConv(n, info);
    c.op = depthwise ? "DepthwiseConv2D" : "Conv2D";
    if (g != 1 && !depthwise) c.attrs["groups"] = std::to_string(g);
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Relu" || op == "Sigmoid" ||
             op == "Tanh" || op == "Exp" || op == "Silu" || op == "HardSigmoid" || op == "HardSwish" || op == "Sin" ||
             op == "Cos" || op == "Equal" || op == "Not" || op == "LeakyRelu" || op == "Elu" || op == "Softplus" ||
             op == "Abs" || op == "Log" || op == "Max" || op == "Min" || op == "PRelu") {
    // Silu is ai.tunefleet's (Folds::Silu's); HardSigmoid's, LeakyRelu's and Elu's alpha and
    // beta leave their cost alone.
    if ((op == "Max" || op == "Min") && n.input_size() != 2) {
      return InvalidArgument(fmt::format("{}: {} of {} inputs: only an element-wise {} of two is supported", where, op,
                                         n.input_size(), op == "Max" ? "maximum" : "minimum"));
    }
    c.op = op;
    c.inputs = first(n.input_size());
  } else if (op == "CumSum") {
    // RoBERTa's position ids: torch.cumsum(mask, dim=1) of the [batch, seq] mask, a
    // running sum along the last axis (vector_space.h).
    const auto axis = n.input_size() == 2 && constants.count(n.input(1)) ? IntValues(*constants.at(n.input(1)))
                                                                          : std::nullopt;
    if (!axis || axis->size() != 1) return InvalidArgument(where + ": its axis must be a constant");
    if (!last_axis((*axis)[0])) {
      return InvalidArgument(fmt::format("{}: it sums along axis {} of {}; only a running sum along the last axis "
                                         "is supported",
                                         where, (*axis)[0], rank(0)));
    }
    if (IntAttr(n, "exclusive", 0) != 0 || IntAttr(n, "reverse", 0) != 0) {
      return InvalidArgument(where + ": an exclusive or reverse running sum is not supported (torch.cumsum's is "
                                     "neither)");
    }
    c.op = "CumSum";
    c.inputs = first(1);
  } else if (op == "Resize") {
    // A feature pyramid's or U-Net's upsampling (torch's nn.Upsample, interpolate): over H
    // and W of NCHW to the size inference gives its output (from its scales or sizes).
    const auto* mode_attr = Attr(n, "mode");
    const std::string mode = mode_attr ? mode_attr->s() : "nearest";
    const auto out = info.find(n.output(0));
    const auto in = info.find(n.input(0));
    if (rank(0) != 4 || out == info.end() || out->second.shape.size() != 4 || in == info.end()) {
      return InvalidArgument(where + ": only a 2-D resize (NCHW input, over H and W) is supported");
    }
    if (out->second.shape[0] != in->second.shape[0] || out->second.shape[1] != in->second.shape[1]) {
      return InvalidArgument(fmt::format("{}: it resizes N or C too ([{}] to [{}]); only H and W are resized", where,
                                         Join(in->second.shape), Join(out->second.shape)));
    }
    if (mode != "nearest" && mode != "linear") {
      return InvalidArgument(where + ": mode '" + mode + "' is not supported (nearest, or linear: bilinear over H and W)");
    }
    c.op = "Resize";
    c.inputs = first(1);
    c.attrs["sizes"] = fmt::format("{},{}", out->second.shape[2], out->second.shape[3]);
    if (mode != "nearest") c.attrs["mode"] = mode;
  } else if (op == "InstanceNormalization") {
    // torch's InstanceNorm2d, and its GroupNorm (x viewed [N, G, -1], scale ones and bias
    // zeros of [G], the affine Mul and Add after): over the spatial axes of [N, C, ...].
    if (rank(0) < 3) return InvalidArgument(where + ": InstanceNormalization takes x as [N, C, spatial...]");
    c.op = "InstanceNorm";
    c.inputs = first(3);
  } else if (op == "Gather") {
    // An embedding lookup: the rows of a [vocabulary, hidden] table picked by token ids
    // (vector_space.h). One constant index is a window view (PickNodes), never here.
    const int64_t axis = IntAttr(n, "axis", 0);
    if (rank(0) != 2 || (axis != 0 && axis != -2)) {
      return InvalidArgument(fmt::format(
          "{}: a Gather is a kernel only as an embedding lookup, the rows (axis 0) of a 2-D table picked by int32 or "
          "int64 indices (torch's nn.Embedding); this one gathers axis {} of a {}-D input (one constant index, ViT's "
          "x[:, 0], is a window view; a Gather in shape arithmetic means: export with fixed shapes and constant "
          "folding on)",
          where, axis, rank(0)));
    }
    c.op = "Gather";
    c.inputs = first(2);
  } else if (op == "Concat") {
    // A copy kernel (a KV cache's past and new keys, a partial rotary embedding's rotated
    // and passed parts), or a view of its one input.
    c.inputs = first(n.input_size());
    const int64_t r = static_cast<int64_t>(rank(0)), axis = IntAttr(n, "axis", 0);
    if (n.input_size() == 1) {
      c.op = kReshapeOp;
    } else {
      c.op = "Concat";
      c.attrs["axis"] = std::to_string(axis < 0 ? axis + r : axis);
    }
  } else if (op == "MaxPool" || op == "AveragePool") {
    const std::string pooling = op == "MaxPool" ? "max pooling" : "average pooling";
    if (rank(0) != 4) return InvalidArgument(where + ": only 2-D " + pooling + " (NCHW input) is supported");
    // auto_pad and ceil_mode are pads by now (onnx_pads.h).
    for (int64_t d : IntsAttr(n, "dilations")) {
      if (d != 1) return InvalidArgument(where + ": dilated " + pooling + " is not supported");
    }
    if (IntAttr(n, "storage_order", 0) != 0) return InvalidArgument(where + ": storage_order 1 is not supported");
    c.op = op;  // AveragePool's count_include_pad changes what it divides by, not its cost
    c.inputs = first(1);
    c.attrs["kernel_shape"] = Join(IntsAttr(n, "kernel_shape"));
    if (auto s = IntsAttr(n, "strides"); !s.empty()) c.attrs["strides"] = Join(s);
    TF_RETURN_IF_ERROR(CopyPads2d(n, where, "a 2-D " + pooling, c));
  } else if (op == "Clip") {
    // Its bounds (inputs from opset 11, attributes before) leave its cost alone: data of
    // the op, not tensors it reads.
    for (int i = 1; i < n.input_size(); ++i) {
      const auto bound = info.find(n.input(i));
      if (!n.input(i).empty() && (bound == info.end() || !bound->second.constant)) {
        return InvalidArgument(where + ": Clip's " + (i == 1 ? "min" : "max") +
                               " is computed from a tensor: export it as a constant");
      }
    }
    c.op = "Clip";
    c.inputs = first(1);
  } else if (op == "Where") {
    c.op = "Where";  // condition (bool, carried as int8), x, y
    c.inputs = first(3);
  } else if (op == "Gelu" || (op == "FastGelu" && n.input_size() == 1)) {
    c.op = "Gelu";
    c.inputs = first(1);
  } else if (op == "Softmax") {
    if (!last_axis(IntAttr(n, "axis", opset >= 13 ? -1 : 1))) {
      // From opset 13 another axis is SoftmaxOverAxisNodes' (once x's shape is known); before,
      // a Softmax flattens x into 2-D at its axis: over the trailing axes.
      if (opset >= 13) return InvalidArgument(where + ": its input's shape is not known");
      return InvalidArgument(where + ": a Softmax before opset 13 over axes other than the last one (it flattens x "
                                     "at its axis) is not supported: export with opset 13 or later");
    }
    c.op = "Softmax";
    c.inputs = first(1);
  } else if (op == "LayerNormalization") {
    if (!last_axis(IntAttr(n, "axis", -1))) return InvalidArgument(where + ": LayerNormalization runs over the last axis only");
    if (n.input_size() < 3 || n.input(2).empty()) {
      return InvalidArgument(where + ": LayerNormalization needs its bias input B (tunefleet's LayerNorm takes x, gamma, beta)");
    }
    c.op = "LayerNorm";
    c.inputs = first(3);
  } else if (op == "RMSNormalization") {
    if (!last_axis(IntAttr(n, "axis", -1))) return InvalidArgument(where + ": RMSNormalization runs over the last axis only");
    if (n.input_size() < 2 || n.input(1).empty()) {
      return InvalidArgument(where + ": RMSNormalization needs its scale input (tunefleet's RmsNorm takes x, gamma)");
    }
    c.op = "RmsNorm";
    c.inputs = first(2);
  } else if (op == "Transpose") {
    c.inputs = first(1);
    std::vector<int64_t> perm = IntsAttr(n, "perm");
    if (perm.empty()) {
      for (size_t i = rank(0); i-- > 0;) perm.push_back(static_cast<int64_t>(i));  // ONNX: reversed axes
    }
    std::vector<int64_t> swap(perm.size());
    for (size_t i = 0; i < swap.size(); ++i) swap[i] = static_cast<int64_t>(i);
    if (swap.size() >= 2) std::swap(swap[swap.size() - 1], swap[swap.size() - 2]);
    if (perm == swap) {
      c.op = "Transpose";
      c.attrs["perm"] = Join(perm);
    } else {
      // Any other permute (a head split's 0,2,1,3) is a view, as in the JSON examples: CANN
      // writes it into the producing op's output layout (NPU_MODEL.md "MatMul + Transpose").
      c.op = kReshapeOp;
    }
  } else if (op == "Rope") {  // ai.tunefleet: Folds::Rope's, or the model's own
    if (n.input_size() != 3) return InvalidArgument(where + ": Rope takes x, cos and sin");
    const auto x = info.find(n.input(0));
    const int64_t r = static_cast<int64_t>(rank(0));
    auto axis_of = [&](const char* attr) {
      const int64_t a = IntAttr(n, attr, -1);
      return a < 0 ? a + r : a;
    };
    if (r == 0 || axis_of("axis") != r - 1 || axis_of("slice_axis") != r - 1) {
      return InvalidArgument(fmt::format("{}: RoPE's rotate_half over axis {} of a rank-{} x: only over the last axis "
                                         "(the head dimension) is supported",
                                         where, IntAttr(n, "slice_axis", -1), r));
    }
    const int64_t d = x->second.shape.back(), half = IntAttr(n, "half", d / 2);
    if (2 * half != d) {
      return InvalidArgument(fmt::format("{}: RoPE rotates halves of {} of a head dimension of {}: only a rotation of "
                                         "the whole head dimension is supported (HF's rotate_half; a partial rotary embedding, GPT-NeoX's "
                                         "rotary_pct < 1, rotates its slice x[..., :r] whole and concatenates x[..., r:])",
                                         where, half, d));
    }
    c.op = "Rope";
    c.inputs = first(3);
  } else if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    // A quantize is a Cast to int8 (uint8 is one byte too); a dequantize that no int8 cube
    // op takes in (QuantizedCubes) a Cast back, what the scale and zero point leave alone.
    const auto out = info.find(n.output(0));
    const auto to = out == info.end() ? std::nullopt : DTypeOf(out->second.elem_type);
    if (!to) return InvalidArgument(where + ": its output's dtype is not one tunefleet models");
    c.op = "Cast";
    c.inputs = first(1);
    c.attrs["dst_type"] = *to;
  } else if (op == "Cast") {
    auto to = DTypeOf(static_cast<int>(IntAttr(n, "to", 0)));
    if (!to) return InvalidArgument(where + ": Cast to a dtype tunefleet does not model");
    c.op = "Cast";
    c.inputs = first(1);
    c.attrs["dst_type"] = *to;
  } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
             op == "Dropout") {
    c.op = kReshapeOp;
    c.inputs = first(1);  // the shape / axes inputs are data of the view, not tensors it reads
  } else if (op == "Expand") {
    // A broadcast view (GQA's repeat_kv): its reader reads the input at the expanded shape,
    // as a stride-0 view or CANN's grouped-query attention does; nothing is copied.
    if (n.input_size() != 2 || !info.count(n.input(1)) || !info.at(n.input(1)).constant) {
      return InvalidArgument(where + ": Expand's shape is computed from a tensor: export with fixed shapes and "
                                     "constant folding on");
    }
    c.op = kReshapeOp;
    c.inputs = first(1);
  } else {
    return InvalidArgument(UnknownOpMessage(n, where));
  }
  return c;
}

// The start on every axis of each window a Split or Slice cuts from its input (one per
// output; an output not written is skipped by the caller), as a view's attrs.slice_starts.
// The windows' shapes are ONNX's inferred ones. kInvalidArgument, saying what to export
// instead, for bounds computed from a tensor or a step other than 1.
Result<std::vector<std::vector<int64_t>>> WindowStarts(
    const onnx::NodeProto& n, const std::string& where, const std::map<std::string, TensorInfo>& info,
    const std::map<std::string, const onnx::TensorProto*>& constants, int opset) {
  if (n.input_size() < 1 || (n.op_type() == "Slice" && n.output_size() != 1)) {
    return InvalidArgument(where + ": a " + n.op_type() + " reads one tensor" +
                           (n.op_type() == "Slice" ? " and writes one" : ""));
  }
  const auto in = info.find(n.input(0));
  if (in == info.end() || !in->second.known) return InvalidArgument(where + ": its input's shape is not known");
  const std::vector<int64_t>& shape = in->second.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto axis_of = [&](int64_t a) -> Result<size_t> {
    if (a < -rank || a >= rank) {
      return InvalidArgument(fmt::format("{}: axis {} is outside its input's {} axes", where, a, rank));
    }
    return static_cast<size_t>(a < 0 ? a + rank : a);
  };
  if (n.op_type() == "Split") {
    TF_ASSIGN_OR_RETURN(const size_t axis, axis_of(IntAttr(n, "axis", 0)));
    std::vector<std::vector<int64_t>> starts;
    int64_t at = 0;
    for (int o = 0; o < n.output_size(); ++o) {
      starts.emplace_back(shape.size(), 0);
      starts.back()[axis] = at;
      const auto out = info.find(n.output(o));
      if (out == info.end() || !out->second.known || out->second.shape.size() != shape.size()) {
        return InvalidArgument(fmt::format("{}: ONNX shape inference gave no shape for its output {}", where, o));
      }
      at += out->second.shape[axis];
    }
    return starts;
  }
  // Slice: bounds as constant inputs from opset 10, attributes before.
  auto ints = [&](int input, const char* attr) -> Result<std::optional<std::vector<int64_t>>> {
    if (opset < 10) {
      if (Attr(n, attr) == nullptr) return std::optional<std::vector<int64_t>>();
      return std::optional<std::vector<int64_t>>(IntsAttr(n, attr));
    }
    if (input >= n.input_size() || n.input(input).empty()) return std::optional<std::vector<int64_t>>();
    auto c = constants.find(n.input(input));
    auto v = c == constants.end() ? std::nullopt : IntValues(*c->second);
    if (!v) {
      return InvalidArgument(fmt::format("{}: its {} are computed from a tensor: export with fixed shapes and constant "
                                         "folding on, so that a Slice's bounds are constants",
                                         where, attr));
    }
    return std::optional<std::vector<int64_t>>(std::move(*v));
  };
  TF_ASSIGN_OR_RETURN(auto begin, ints(1, "starts"));
  TF_ASSIGN_OR_RETURN(auto end, ints(2, "ends"));
  TF_ASSIGN_OR_RETURN(auto axes, ints(3, "axes"));
  TF_ASSIGN_OR_RETURN(auto steps, ints(4, "steps"));
  if (!begin || !end || begin->size() != end->size()) {
    return InvalidArgument(where + ": a Slice needs as many starts as ends");
  }
  if (!axes) {
    axes.emplace();
    for (size_t a = 0; a < begin->size(); ++a) axes->push_back(static_cast<int64_t>(a));
  }
  if (axes->size() != begin->size() || (steps && steps->size() != begin->size())) {
    return InvalidArgument(where + ": a Slice needs one axis and one step per start");
  }
  std::vector<int64_t> starts(shape.size(), 0);
  for (size_t i = 0; i < begin->size(); ++i) {
    if (steps && (*steps)[i] != 1) {
      return InvalidArgument(fmt::format("{}: a Slice with step {} reads every so many elements; only step 1 (a window "
                                         "of its input, read as a view) is supported",
                                         where, (*steps)[i]));
    }
    TF_ASSIGN_OR_RETURN(const size_t axis, axis_of((*axes)[i]));
    const int64_t dim = shape[axis], b = (*begin)[i];
    starts[axis] = std::clamp<int64_t>(b < 0 ? b + dim : b, 0, dim);
  }
  return std::vector<std::vector<int64_t>>{starts};
}

// Exporters write some ops CANN's graph engine fuses as several primitive nodes; these
// folds turn each such chain back into the one op (what tunefleet, like CANN, runs as one
// kernel):
// - GELU before opset 20: x * 0.5 * (1 + erf(x / sqrt 2)), and its tanh approximation
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) (GPT-2's gelu_new, PyTorch's
//   approximate='tanh'), with x^3 as Pow(x, 3) or two Muls;
// - LayerNorm before opset 17: ReduceMean, Sub, Pow 2 (or Mul by itself), ReduceMean, Add
//   eps, Sqrt, Div, Mul gamma, Add beta (PyTorch's export; the Sub may be written twice);
// - SiLU: Sigmoid(x) and x * it (PyTorch's export of F.silu: Llama's MLP, EfficientNet),
//   as ai.tunefleet's Silu (CANN's Swish).
// A chain folds only when each constant holds its value (within float16's precision) and
// nothing outside the chain reads an intermediate. The folded node takes the place and the
// name of the chain's last node; every node keeps its index in the file (what names a
// nameless node). Chains that do not match are left as they are, and their Erf, Pow,
// ReduceMean or Sqrt is then refused by name.
class Folds {
 public:
  Folds(const onnx::GraphProto& g, const std::map<std::string, const onnx::TensorProto*>& constants, int opset)
      : g_(g), constants_(constants), opset_(opset), replaced_by_(static_cast<size_t>(g.node_size()), -1) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& o : g.node(i).output()) producer_[o] = i;
      for (const auto& in : g.node(i).input()) readers_[in].push_back(i);
    }
    for (const auto& o : g.output()) outputs_.insert(o.name());
  }

  // Whether the node at `index` in the file is a folded chain's last one (after Run()).
  bool Folded(int index) const { return folded_.count(index) > 0; }

  std::vector<std::pair<onnx::NodeProto, int>> Run() {
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      if (!IsStandardDomain(n.domain()) || n.input_size() < 1 || n.output_size() != 1) continue;
      if (n.op_type() == "Erf") ErfGelu(i);
      if (n.op_type() == "Tanh") TanhGelu(i);
      if (n.op_type() == "Sqrt") LayerNorm(i);
      if (n.op_type() == "Sqrt") RmsNorm(i);  // where no LayerNorm was folded
      if (n.op_type() == "Concat") Rope(i);
      if (n.op_type() == "Sigmoid") Silu(i);
      if (n.op_type() == "Pad") PadIntoConv(i);
    }
    std::vector<std::pair<onnx::NodeProto, int>> out;
    for (int i = 0; i < g_.node_size(); ++i) {
      if (replaced_by_[i] < 0) {
        out.emplace_back(g_.node(i), i);
      } else if (replaced_by_[i] == i) {
        out.emplace_back(folded_[i], i);
      }
    }
    return out;
  }

 private:
  // x * 0.5 * (1 + erf(x / sqrt 2)): Div by sqrt 2 or Mul by 1/sqrt 2 feeds the Erf.
  void ErfGelu(int e) {
    const int d = Producer(g_.node(e).input(0));
    if (d < 0) return;
    std::optional<std::string> x;
    if (const auto& div = g_.node(d);
        div.input_size() == 2 && Other(d, "Div", div.input(0), false) && Is(div.input(1), std::sqrt(2.0))) {
      x = g_.node(d).input(0);
    } else {
      x = OtherThan(d, "Mul", std::sqrt(0.5));
    }
    if (!x) return;
    std::vector<int> nodes{d, e};
    if (auto last = GeluTail(e, *x, nodes)) Fold(nodes, *last, Gelu(*x));
  }

  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
  void TanhGelu(int t) {
    const int scale = Producer(g_.node(t).input(0));
    auto sum = OtherThan(scale, "Mul", std::sqrt(2.0 / M_PI));
    const int add = sum ? Producer(*sum) : -1;
    if (add < 0 || g_.node(add).op_type() != "Add" || g_.node(add).input_size() != 2) return;
    for (int side = 0; side < 2; ++side) {  // x + 0.044715 x^3, either way round
      const std::string& x = g_.node(add).input(side);
      const int cubed_scale = Producer(g_.node(add).input(1 - side));
      auto cube = OtherThan(cubed_scale, "Mul", 0.044715);
      const int c = cube ? Producer(*cube) : -1;
      std::vector<int> nodes{t, scale, add, cubed_scale};
      if (c < 0 || !Cube(c, x, nodes)) continue;
      if (auto last = GeluTail(t, x, nodes)) Fold(nodes, *last, Gelu(x));
      return;
    }
  }

  // SiLU (Swish): Sigmoid(x) and a Mul of x by it, either way round.
  void Silu(int s) {
    const std::string& x = g_.node(s).input(0);
    const int m = OnlyReader(g_.node(s).output(0));
    if (m < 0 || Other(m, "Mul", g_.node(s).output(0), true) != x) return;
    onnx::NodeProto silu;
    silu.set_op_type("Silu");
    silu.set_domain(kTunefleetDomain);
    silu.add_input(x);
    Fold({s, m}, m, std::move(silu));
  }

  // A Pad of zeros over H and W whose only reader is a 2-D Conv (tf2onnx's "SAME" padding
  // of a strided convolution, an F.pad before one): the Conv's own pads, as ATC folds it.
  void PadIntoConv(int p) {
    const auto& pad = g_.node(p);
    const int c = OnlyReader(pad.output(0));
    if (c < 0) return;
    const auto& conv = g_.node(c);
    if (!IsStandardDomain(conv.domain()) || conv.op_type() != "Conv" || conv.input_size() < 2 ||
        conv.input(0) != pad.output(0)) {
      return;
    }
    // VALID pads nothing (tf2onnx's Pad before a strided "same" convolution): the Pad's are its.
    const auto* auto_pad = Attr(conv, "auto_pad");
    if (auto_pad && auto_pad->s() != "NOTSET" && auto_pad->s() != "VALID") return;
    const auto w = constants_.find(conv.input(1));
    const auto hw = ZeroPadOfHW(pad);
    std::vector<int64_t> pads = IntsAttr(conv, "pads");
    if (pads.empty()) pads.assign(4, 0);
    if (w == constants_.end() || w->second->dims_size() != 4 || !hw || pads.size() != 4) return;
    for (size_t k = 0; k < 4; ++k) pads[k] += (*hw)[k];
    onnx::NodeProto folded = conv;
    folded.clear_output();
    folded.set_input(0, pad.input(0));
    folded.clear_attribute();
    for (const auto& a : conv.attribute()) {
      if (a.name() != "auto_pad") *folded.add_attribute() = a;
    }
    onnx::AttributeProto* attr = nullptr;
    for (auto& a : *folded.mutable_attribute()) {
      if (a.name() == "pads") attr = &a;
    }
    if (attr == nullptr) {
      attr = folded.add_attribute();
      attr->set_name("pads");
      attr->set_type(onnx::AttributeProto::INTS);
    }
    attr->clear_ints();
    for (int64_t v : pads) attr->add_ints(v);
    Fold({p, c}, c, std::move(folded));
  }

  // A constant-mode Pad of zeros of a 4-D tensor that pads only H and W, by at least 0:
  // its pads in a Conv's order [top, left, bottom, right].
  std::optional<std::array<int64_t, 4>> ZeroPadOfHW(const onnx::NodeProto& n) const {
    const auto spec = ReadPadSpec(n, constants_);
    if (!spec || spec->mode != "constant" || !spec->zero) return std::nullopt;
    const auto hw = HwPads(*spec, "");
    if (!hw.ok()) return std::nullopt;
    const auto [top, bottom, left, right] = *hw;
    return std::array<int64_t, 4>{top, left, bottom, right};
  }

  // Whether node c computes x^3: Pow(x, 3), or Mul(x, Mul(x, x)) either way round.
  bool Cube(int c, const std::string& x, std::vector<int>& nodes) {
    const auto& n = g_.node(c);
    nodes.push_back(c);
    if (n.op_type() == "Pow") return n.input_size() == 2 && n.input(0) == x && Is(n.input(1), 3.0);
    auto square = Other(c, "Mul", x, true);
    const int s = square ? Producer(*square) : -1;
    if (s < 0 || g_.node(s).op_type() != "Mul" || g_.node(s).input_size() != 2 || g_.node(s).input(0) != x ||
        g_.node(s).input(1) != x) {
      return false;
    }
    nodes.push_back(s);
    return true;
  }

  // The common end of both GELUs, after `core` (the Erf or Tanh): Add 1, then Mul by x and
  // Mul by 0.5 in either order. Appends its nodes; the last one's index, if it matches.
  std::optional<int> GeluTail(int core, const std::string& x, std::vector<int>& nodes) {
    const int a = OnlyReader(g_.node(core).output(0));
    auto one = Other(a, "Add", g_.node(core).output(0), true);
    if (!one || !Is(*one, 1.0)) return std::nullopt;
    const int m1 = OnlyReader(g_.node(a).output(0));
    auto by = Other(m1, "Mul", g_.node(a).output(0), true);
    if (!by) return std::nullopt;
    nodes.insert(nodes.end(), {a, m1});
    if (*by == x || Is(*by, 0.5)) {  // (1 + core) * x then * 0.5 or / 2, or * 0.5 then * x
      const int m2 = OnlyReader(g_.node(m1).output(0));
      const std::string& t = g_.node(m1).output(0);
      const auto times = Other(m2, "Mul", t, true);
      const auto over = Other(m2, "Div", t, false);
      const bool ends = *by == x ? (times && Is(*times, 0.5)) || (over && Is(*over, 2.0)) : times && *times == x;
      if (!ends) return std::nullopt;
      nodes.push_back(m2);
      return m2;
    }
    const int h = Producer(*by);  // (x * 0.5) * (1 + core)
    auto half = Other(h, "Mul", x, true);
    if (!half || !Is(*half, 0.5)) return std::nullopt;
    nodes.push_back(h);
    return m1;
  }

  // What LayerNorm and RMSNorm share under their Sqrt `q`: Add eps (a scalar in (0, 0.01])
  // to ReduceMean over one axis, keeping it, of Pow(t, 2) or Mul(t, t).
  struct MeanOfSquare {
    int sq = -1, var = -1, eps_add = -1;
    int64_t axis = 0;
    double eps = 0;
    std::string t;  // what is squared
  };
  std::optional<MeanOfSquare> MeanOfSquareUnder(int q) const {
    const int eps_add = Producer(g_.node(q).input(0));
    if (eps_add < 0 || g_.node(eps_add).op_type() != "Add" || g_.node(eps_add).input_size() != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      auto eps = Scalar(g_.node(eps_add).input(1 - side));
      if (!eps || *eps <= 0 || *eps > 1e-2) continue;
      const int var = Producer(g_.node(eps_add).input(side));
      auto axis = MeanAxis(var);
      const int sq = axis ? Producer(g_.node(var).input(0)) : -1;
      if (sq < 0 || g_.node(sq).input_size() != 2) return std::nullopt;
      const auto& sqn = g_.node(sq);
      const bool squared = (sqn.op_type() == "Pow" && Is(sqn.input(1), 2.0)) ||
                           (sqn.op_type() == "Mul" && sqn.input(0) == sqn.input(1));
      if (!squared) return std::nullopt;
      return MeanOfSquare{sq, var, eps_add, *axis, *eps, sqn.input(0)};
    }
    return std::nullopt;
  }

  // The Cast of `t` back from float32 that PyTorch's fp16 export writes after a norm
  // computed in float32: its output, with the Cast added to `nodes`.
  std::optional<std::string> CastBack(const std::string& t, std::vector<int>& nodes) const {
    const int narrow = OnlyReader(t);
    if (narrow < 0 || g_.node(narrow).op_type() != "Cast" || g_.node(narrow).output_size() != 1) return std::nullopt;
    nodes.push_back(narrow);
    return g_.node(narrow).output(0);
  }

  // ReduceMean(x) -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div -> Mul gamma ->
  // Add beta, anchored at the Sqrt `q`; both means over the same one axis, keeping it.
  void LayerNorm(int q) {
    const auto ms = MeanOfSquareUnder(q);
    if (!ms) return;
    std::vector<int> nodes{ms->sq, ms->var, ms->eps_add, q};
    // PyTorch's fp16 export casts the difference to float32 for the variance and the
    // division, and the quotient back before gamma: the LayerNorm kernel does the same.
    const std::string& diff = ms->t;
    const int widen = Producer(diff);
    const bool widened = widen >= 0 && g_.node(widen).op_type() == "Cast" && g_.node(widen).input_size() == 1;
    if (widened) nodes.push_back(widen);
    const int centre = Producer(widened ? g_.node(widen).input(0) : diff);
    if (centre < 0 || g_.node(centre).op_type() != "Sub" || g_.node(centre).input_size() != 2) return;
    const std::string x = g_.node(centre).input(0);
    const int mean = Producer(g_.node(centre).input(1));
    if (mean < 0 || MeanAxis(mean) != ms->axis || g_.node(mean).input(0) != x) return;
    const int div = OnlyReader(g_.node(q).output(0));
    if (div < 0 || g_.node(div).op_type() != "Div" || g_.node(div).input_size() != 2 ||
        g_.node(div).output_size() != 1 || g_.node(div).input(1) != g_.node(q).output(0)) {
      return;
    }
    nodes.insert(nodes.end(), {mean, centre, div});
    const int numerator = g_.node(div).input(0) == diff ? centre : Producer(g_.node(div).input(0));
    if (numerator != centre) {  // the Sub written a second time
      if (numerator < 0 || g_.node(numerator).op_type() != "Sub" || g_.node(numerator).input_size() != 2 ||
          g_.node(numerator).input(0) != x || g_.node(numerator).input(1) != g_.node(mean).output(0)) {
        return;
      }
      nodes.push_back(numerator);
    }
    std::optional<std::string> normalized = g_.node(div).output(0);
    if (widened) normalized = CastBack(*normalized, nodes);
    if (!normalized) return;
    // gamma and beta are weights of the model (a tensor of the chain, or a residual,
    // would make it something else): constants of one axis, or more of size 1 before it.
    const int scale = OnlyReader(*normalized);
    auto gamma = Other(scale, "Mul", *normalized, true);
    if (!gamma || !IsChannelConstant(*gamma)) return;
    const int shift = OnlyReader(g_.node(scale).output(0));
    auto beta = Other(shift, "Add", g_.node(scale).output(0), true);
    if (!beta || !IsChannelConstant(*beta)) return;
    nodes.insert(nodes.end(), {scale, shift});
    Fold(nodes, shift, Norm("LayerNormalization", {x, *gamma, *beta}, *ms));
  }

  // x / sqrt(mean(x^2) + eps) * gamma, as LLaMA's and T5's RMSNorm export it, anchored at
  // the Sqrt `q`: Pow 2 (or Mul(x, x)) -> ReduceMean -> Add eps -> Sqrt, then Div(x, ...)
  // or Reciprocal (Div(1, ...)) and Mul by x, then Mul by gamma. HF's x.to(float32) is a
  // Cast before the square (T5 multiplies the uncast x), and a Cast may follow the
  // normalisation. A squared Sub is a LayerNorm's (or not quite one: left as it is).
  void RmsNorm(int q) {
    if (replaced_by_[q] >= 0) return;
    const auto ms = MeanOfSquareUnder(q);
    if (!ms) return;
    const std::string& x32 = ms->t;  // x, or x cast to float32
    std::vector<int> nodes{ms->sq, ms->var, ms->eps_add, q};
    const int widen = Producer(x32);
    if (widen >= 0 && g_.node(widen).op_type() == "Sub") return;
    const bool widened = widen >= 0 && g_.node(widen).op_type() == "Cast" && g_.node(widen).input_size() == 1;
    const std::string x = widened ? g_.node(widen).input(0) : x32;
    auto is_x = [&](const std::optional<std::string>& t) { return t && (*t == x32 || *t == x); };
    // x / sqrt, or x * (1 / sqrt) with the reciprocal as Reciprocal or Div(1, sqrt).
    const std::string& root = g_.node(q).output(0);
    const int after = OnlyReader(root);
    if (after < 0 || g_.node(after).output_size() != 1) return;
    const auto& an = g_.node(after);
    std::optional<std::string> normalized;
    int times = -1;
    if (an.op_type() == "Div" && an.input_size() == 2 && an.input(1) == root && is_x(an.input(0))) {
      normalized = an.output(0);
      times = after;
      nodes.push_back(after);
    } else {
      const bool reciprocal = (an.op_type() == "Reciprocal" && an.input_size() == 1 && IsStandardDomain(an.domain())) ||
                              (an.input_size() == 2 && an.input(1) == root && Other(after, "Div", an.input(0), false) &&
                               Is(an.input(0), 1.0));
      if (!reciprocal) return;
      times = OnlyReader(an.output(0));
      if (!is_x(Other(times, "Mul", an.output(0), true))) return;
      normalized = g_.node(times).output(0);
      nodes.insert(nodes.end(), {after, times});
    }
    // The widening Cast is the kernel's own when only the chain reads its output; in a
    // float32 export it is a no-op the residual Add reads too, and stays outside.
    const auto& widened_readers = readers_.find(x32);
    const bool own_cast = widened && !outputs_.count(x32) && widened_readers != readers_.end() &&
                          std::all_of(widened_readers->second.begin(), widened_readers->second.end(),
                                      [&](int r) { return r == ms->sq || r == times; });
    if (own_cast) nodes.push_back(widen);
    if (const int narrow = OnlyReader(*normalized); narrow >= 0 && g_.node(narrow).op_type() == "Cast") {
      normalized = CastBack(*normalized, nodes);
    }
    const int scale = OnlyReader(*normalized);
    auto gamma = Other(scale, "Mul", *normalized, true);
    if (!gamma || !IsChannelConstant(*gamma)) return;
    nodes.push_back(scale);
    Fold(nodes, scale, Norm("RMSNormalization", {own_cast ? x : x32, *gamma}, *ms));
  }

  // Rotary position embedding as HF's apply_rotary_pos_emb exports it (Llama, Mistral,
  // Qwen, GPT-NeoX at rotary_pct 1): x * cos + rotate_half(x) * sin, where rotate_half(x) =
  // Concat(Neg(x[..., h:]), x[..., :h]) over one axis, anchored at the Concat; the Muls
  // and the Add in either operand order. The slices' bounds are constants (a fixed-shape
  // export); whether their axis is the last and h half of it is known only after shape
  // inference, so the folded node carries them and Convert checks them.
  void Rope(int cat) {
    const auto& c = g_.node(cat);
    if (c.input_size() != 2 || !Attr(c, "axis")) return;
    const int neg = Producer(c.input(0));
    if (neg < 0 || g_.node(neg).op_type() != "Neg" || g_.node(neg).input_size() != 1) return;
    const auto upper = SliceOf(Producer(g_.node(neg).input(0)));  // x[..., h:]
    const auto lower = SliceOf(Producer(c.input(1)));              // x[..., :h]
    if (!upper || !lower || upper->x != lower->x || upper->axis != lower->axis || lower->start != 0 ||
        lower->end <= 0 || upper->start != lower->end || upper->end < 2 * lower->end) {
      return;
    }
    const std::string& x = lower->x;
    const int by_sin = OnlyReader(c.output(0));
    const auto sin = Other(by_sin, "Mul", c.output(0), true);
    if (!sin) return;
    const int add = OnlyReader(g_.node(by_sin).output(0));
    const auto rotated = Other(add, "Add", g_.node(by_sin).output(0), true);
    if (!rotated) return;
    const int by_cos = Producer(*rotated);
    const auto cos = Other(by_cos, "Mul", x, true);
    if (!cos) return;
    onnx::NodeProto rope;
    rope.set_domain(kTunefleetDomain);
    rope.set_op_type("Rope");
    for (const std::string& in : {x, *cos, *sin}) rope.add_input(in);
    for (const auto& [name, value] : {std::pair<const char*, int64_t>{"axis", IntAttr(c, "axis", 0)},
                                      {"slice_axis", lower->axis},
                                      {"half", lower->end}}) {
      auto* a = rope.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
    Fold({lower->node, upper->node, neg, cat, by_sin, by_cos, add}, add, std::move(rope));
  }

  // A Slice of one axis with constant bounds and step 1 (opset 10 on: bounds as inputs).
  struct OneSlice {
    int node = -1;
    std::string x;
    int64_t start = 0, end = 0, axis = 0;
  };
  std::optional<OneSlice> SliceOf(int i) const {
    if (i < 0) return std::nullopt;
    const auto& n = g_.node(i);
    if (n.op_type() != "Slice" || n.input_size() < 4 || opset_ < 10) return std::nullopt;
    auto one = [&](int input) -> std::optional<int64_t> {
      auto t = constants_.find(n.input(input));
      auto v = t == constants_.end() ? std::nullopt : IntValues(*t->second);
      return v && v->size() == 1 ? std::optional<int64_t>(v->front()) : std::nullopt;
    };
    const auto start = one(1), end = one(2), axis = one(3);
    const auto step = n.input_size() > 4 && !n.input(4).empty() ? one(4) : std::optional<int64_t>(1);
    if (!start || !end || !axis || step != 1) return std::nullopt;
    return OneSlice{i, n.input(0), *start, *end, *axis};
  }

  // A folded norm: ONNX's op over the mean's axis with its epsilon.
  static onnx::NodeProto Norm(const char* op, const std::vector<std::string>& inputs, const MeanOfSquare& ms) {
    onnx::NodeProto n;
    n.set_op_type(op);
    for (const std::string& in : inputs) n.add_input(in);
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(ms.axis);
    auto* e = n.add_attribute();
    e->set_name("epsilon");
    e->set_type(onnx::AttributeProto::FLOAT);
    e->set_f(static_cast<float>(ms.eps));
    return n;
  }

  // The one axis a ReduceMean node averages over, keeping it (axes as an attribute, or as
  // a constant input from opset 18).
  std::optional<int64_t> MeanAxis(int i) const {
    if (i < 0) return std::nullopt;
    const auto& n = g_.node(i);
    if (n.op_type() != "ReduceMean" || !IsStandardDomain(n.domain()) || n.input_size() < 1 ||
        IntAttr(n, "keepdims", 1) != 1) {
      return std::nullopt;
    }
    // Before opset 18 the axes are an attribute; from 18 an input (an attribute there is
    // not ReduceMean's: refused by inference when not folded).
    std::optional<std::vector<int64_t>> axes;
    if (opset_ < 18) axes = IntsAttr(n, "axes");
    if (opset_ >= 18 && n.input_size() >= 2 && !n.input(1).empty()) {
      auto c = constants_.find(n.input(1));
      axes = c == constants_.end() ? std::nullopt : IntValues(*c->second);
    }
    if (!axes || axes->size() != 1) return std::nullopt;
    return axes->front();
  }

  bool IsChannelConstant(const std::string& name) const {
    auto c = constants_.find(name);
    if (c == constants_.end() || c->second->dims_size() == 0) return false;
    const auto& dims = c->second->dims();
    return std::all_of(dims.begin(), dims.end() - 1, [](int64_t d) { return d == 1; });
  }

  static onnx::NodeProto Gelu(const std::string& x) {
    onnx::NodeProto gelu;
    gelu.set_op_type("Gelu");
    gelu.add_input(x);
    return gelu;
  }

  // Replaces `nodes` by `folded` at `last`, if none is folded already and nothing outside
  // them reads what any but `last` writes.
  void Fold(const std::vector<int>& nodes, int last, onnx::NodeProto folded) {
    const std::set<int> chain(nodes.begin(), nodes.end());
    for (int i : chain) {
      if (replaced_by_[i] >= 0) return;
      if (i == last) continue;
      for (const auto& o : g_.node(i).output()) {
        if (outputs_.count(o)) return;
        auto r = readers_.find(o);
        if (r == readers_.end()) continue;
        if (std::any_of(r->second.begin(), r->second.end(), [&](int k) { return !chain.count(k); })) return;
      }
    }
    for (int i : chain) replaced_by_[i] = last;
    folded.set_name(g_.node(last).name());
    folded.add_output(g_.node(last).output(0));
    folded_[last] = std::move(folded);
  }

  int Producer(const std::string& t) const {
    auto p = producer_.find(t);
    if (p == producer_.end()) return -1;
    const auto& n = g_.node(p->second);
    return IsStandardDomain(n.domain()) && n.output_size() == 1 ? p->second : -1;
  }
  int OnlyReader(const std::string& t) const {
    auto r = readers_.find(t);
    return r != readers_.end() && r->second.size() == 1 && !outputs_.count(t) ? r->second[0] : -1;
  }
  std::optional<double> Scalar(const std::string& name) const {
    auto c = constants_.find(name);
    return c == constants_.end() ? std::nullopt : ScalarValue(*c->second);
  }
  bool Is(const std::string& name, double want) const {
    auto v = Scalar(name);
    return v && std::abs(*v - want) <= 2e-3 * std::abs(want);
  }
  // The other input of two-input node i of `op` that reads `t` (either side when it
  // commutes).
  std::optional<std::string> Other(int i, const char* op, const std::string& t, bool commutes) const {
    if (i < 0) return std::nullopt;
    const auto& n = g_.node(i);
    if (n.op_type() != op || !IsStandardDomain(n.domain()) || n.input_size() != 2 || n.output_size() != 1) {
      return std::nullopt;
    }
    if (n.input(0) == t) return n.input(1);
    if (commutes && n.input(1) == t) return n.input(0);
    return std::nullopt;
  }
  // The input of commuting two-input node i of `op` beside a constant holding `value`.
  std::optional<std::string> OtherThan(int i, const char* op, double value) const {
    if (i < 0 || g_.node(i).input_size() != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      if (Is(g_.node(i).input(side), value)) return Other(i, op, g_.node(i).input(side), true);
    }
    return std::nullopt;
  }

  const onnx::GraphProto& g_;
  const std::map<std::string, const onnx::TensorProto*>& constants_;
  const int opset_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  std::set<std::string> outputs_;
  std::vector<int> replaced_by_;          // node -> the last node of the chain folded into it
  std::map<int, onnx::NodeProto> folded_;  // last node -> what replaces the chain
};

// A node's name, or for a nameless one <OpType>_<its index in the file>.
std::string NodeName(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

// ONNX's data flow: every tensor a node reads is a graph input, an initializer or the
// output of an earlier node (nodes in topological order), and every tensor has one
// producer. kInvalidArgument naming the node and the tensor otherwise.
Status CheckDataFlow(const onnx::GraphProto& g, const std::set<std::string>& initializers, const std::string& path) {
  std::map<std::string, std::string> provided;  // tensor -> what provides it
  for (const auto& in : g.input()) provided[in.name()] = "graph input '" + in.name() + "'";
  for (const auto& t : initializers) provided.try_emplace(t, "initializer '" + t + "'");
  std::map<std::string, std::string> written_later;
  auto name_of = [&](int i) { return NodeName(g.node(i), i); };
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) written_later.try_emplace(o, name_of(i));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) {
      if (in.empty() || provided.count(in)) continue;
      auto later = written_later.find(in);
      if (later != written_later.end()) {
        return InvalidArgument(fmt::format("{}: node '{}' reads '{}' before node '{}' writes it: nodes must be in "
                                           "topological order (and the graph free of cycles)",
                                           path, name_of(i), in, later->second));
      }
      return InvalidArgument(
          fmt::format("{}: node '{}' reads '{}', which no node, graph input or initializer provides", path, name_of(i), in));
    }
    for (const auto& o : n.output()) {
      if (o.empty()) continue;
      auto [it, fresh] = provided.try_emplace(o, "node '" + name_of(i) + "'");
      if (!fresh) {
        return InvalidArgument(fmt::format("{}: node '{}' writes '{}', which {} already provides: every tensor must "
                                           "have one producer",
                                           path, name_of(i), o, it->second));
      }
    }
  }
  return Status::Ok();
}

// How errors name a node: "<path>: node '<name>' (<op>)", "(<op> written out)" for a fold.
std::string Where(const std::string& path, const std::string& name, const onnx::NodeProto& n, bool folded) {
  return fmt::format("{}: node '{}' ({}{})", path, name, n.op_type(), folded ? " written out" : "");
}

// Gives every symbolic dimension of the graph's inputs its size from `options.dims`;
// kInvalidArgument listing the dimensions without one, or a size for none.
Status SizeSymbolicDims(onnx::GraphProto& g, const std::set<std::string>& initializers, const OnnxImportOptions& options,
                        const std::string& path) {
  std::set<std::string> missing;
  std::set<std::string> used_dims;
  for (auto& input : *g.mutable_input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* d = shape->mutable_dim(i);
      if (d->has_dim_value() && d->dim_value() > 0) continue;
      if (d->has_dim_param() && !d->dim_param().empty()) {
        auto size = options.dims.find(d->dim_param());
        if (size == options.dims.end()) {
          missing.insert(d->dim_param());
          continue;
        }
        used_dims.insert(d->dim_param());
        d->set_dim_value(size->second);
      } else {
        return InvalidArgument(fmt::format("{}: input '{}' dimension {} has no size and no name: fix the model", path,
                                           input.name(), i));
      }
    }
  }
  if (!missing.empty()) {
    std::string names, example;
    for (const auto& m : missing) {
      names += (names.empty() ? "" : ", ") + m;
      example += " --dim " + m + "=N";
    }
    return InvalidArgument(path + ": symbolic dimensions without a size: " + names + ": give" + example);
  }
  for (const auto& [name, size] : options.dims) {
    if (!used_dims.count(name)) return InvalidArgument(path + ": --dim " + name + ": the model has no such symbolic dimension");
  }
  return Status::Ok();
}

// What ATC computes at compile time of `candidates` (nodes whose inputs are all constants,
// in topological order), given the inferred `info`: a node that is not a view and writes
// float or bool (cos and sin tables, a causal mask) becomes the constant it computes, a
// weight of its shape with no kernel; and any candidate whose outputs only folded nodes
// read (the positions' arange and the views before the tables), which no kernel needs.
// What stays (a view of a constant, integer arithmetic a kernel or view reads: shape
// arithmetic whose values matter) is not folded and is imported as before. Returns the
// folded nodes; their outputs are added to `constants` (and marked constant in `info`).
std::set<size_t> FoldAtCompileTime(const std::vector<std::pair<onnx::NodeProto, int>>& nodes,
                                   const std::set<std::string>& graph_outputs,
                                   const std::map<std::string, const onnx::TensorProto*>& constant_values,
                                   const std::set<size_t>& candidates, std::map<std::string, TensorInfo>& info,
                                   std::map<std::string, TensorInfo>& constants) {
  static const std::set<std::string> kViews = {"Identity", "Reshape", "Flatten", "Squeeze",
                                               "Unsqueeze", "Dropout", "Expand"};
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& input : nodes[i].first.input()) readers[input].push_back(i);
  }
  // Walked backwards: a node's readers come after it, so whether they fold is known.
  std::vector<bool> folded(nodes.size(), false);
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    const onnx::NodeProto& n = nodes[*it].first;
    const bool view = IsWindowOp(n) || IsConstantPick(n, constant_values) ||
                      (IsStandardDomain(n.domain()) && kViews.count(n.op_type()));
    bool floats = !view, unread = true;
    for (const auto& o : n.output()) {
      const auto t = info.find(o);
      const int type = t == info.end() ? 0 : t->second.elem_type;
      floats = floats && t != info.end() && t->second.known &&
               (type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
                type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::BOOL);
      unread = unread && !graph_outputs.count(o);
      for (size_t r : readers[o]) unread = unread && folded[r];
    }
    if (!floats && !unread) continue;
    folded[*it] = true;
    for (const auto& o : n.output()) {
      info[o].constant = true;
      constants[o] = info[o];
    }
  }
  std::set<size_t> out;
  for (size_t i : candidates) {
    if (folded[i]) out.insert(i);
  }
  return out;
}

// Every tensor's type and shape, inferred afresh by ONNX (strict: a node it cannot infer is
// an error naming it) on a copy of `model` with `nodes` (chains folded), in which Gelu,
// FastGelu, GroupNormalization (opset 18) and RMSNormalization (opset 23), which libonnx
// 1.12 has no schema for, are Relus: the same shape as x.
Result<std::map<std::string, TensorInfo>> InferShapes(const onnx::ModelProto& model,
                                                      const std::vector<std::pair<onnx::NodeProto, int>>& nodes,
                                                      const std::map<std::string, TensorInfo>& constants,
                                                      int opset, const std::string& path) {
  onnx::ModelProto probe = model;
  onnx::GraphProto& pg = *probe.mutable_graph();
  pg.clear_node();
  for (const auto& [n, index] : nodes) {
    onnx::NodeProto* copy = pg.add_node();
    *copy = n;
    // LayerNormalization has a schema from opset 17: a folded one in an older model is
    // inferred as the element-wise op of its input it is, shape-wise.
    if (n.op_type() == "Gelu" || n.op_type() == "FastGelu" || n.op_type() == "RMSNormalization" ||
        n.op_type() == "GroupNormalization" ||
        (n.domain() == kTunefleetDomain && (n.op_type() == "Rope" || n.op_type() == "Silu")) ||
        (n.op_type() == "LayerNormalization" && opset < 17)) {
      copy->set_op_type("Relu");
      copy->set_domain("");
      copy->clear_attribute();
      copy->mutable_input()->DeleteSubrange(1, copy->input_size() - 1);
    }
  }
  pg.clear_value_info();
  for (auto& output : *pg.mutable_output()) output.mutable_type()->mutable_tensor_type()->clear_shape();
  std::map<std::string, TensorInfo> info;
  // libonnx infers an Einsum's rank only: each one whose operands are sized is sized here
  // (ParseEinsum), and inference runs again for what reads it, until no Einsum is left (at
  // most once per Einsum: each round sizes at least one).
  int64_t rounds = 0;
  const auto einsums = std::count_if(pg.node().begin(), pg.node().end(),
                                     [](const onnx::NodeProto& n) { return n.op_type() == "Einsum"; });
  for (bool again = true; again;) {
    try {
      onnx::shape_inference::InferShapes(probe, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(/*check_type=*/false, /*strict_mode=*/1));
    } catch (const std::exception& e) {
      return InvalidArgument(path + ": ONNX shape inference failed (fix the model): " + e.what());
    }
    info.clear();
    for (const auto& vi : pg.input()) info[vi.name()] = InfoOf(vi.type());
    for (const auto& vi : pg.value_info()) info[vi.name()] = InfoOf(vi.type());
    for (const auto& vi : pg.output()) info[vi.name()] = InfoOf(vi.type());
    for (const auto& [name, c] : constants) info[name] = c;
    again = false;
    for (const onnx::NodeProto& n : pg.node()) {
      if (n.op_type() != "Einsum" || !IsStandardDomain(n.domain()) || n.input_size() != 2 || n.output_size() != 1) {
        continue;
      }
      const auto a = info.find(n.input(0)), b = info.find(n.input(1)), out = info.find(n.output(0));
      if (a == info.end() || b == info.end() || !a->second.known || !b->second.known ||
          (out != info.end() && out->second.known)) {
        continue;
      }
      auto terms = ParseEinsum(n, "", a->second.shape, b->second.shape);
      if (!terms.ok()) continue;  // EinsumNodes says why, naming the node
      onnx::TypeProto* type = nullptr;
      for (auto& vi : *pg.mutable_value_info()) {
        if (vi.name() == n.output(0)) type = vi.mutable_type();
      }
      for (auto& vi : *pg.mutable_output()) {
        if (vi.name() == n.output(0)) type = vi.mutable_type();
      }
      if (!type) {
        auto* vi = pg.add_value_info();
        vi->set_name(n.output(0));
        type = vi->mutable_type();
      }
      auto* tensor = type->mutable_tensor_type();
      tensor->set_elem_type(a->second.elem_type);
      tensor->clear_shape();
      for (int64_t d : terms->OutShape()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
      again = true;
    }
    // A size inference dropped: the nodes reading it are named as unsized when imported.
    if (again && ++rounds > einsums) break;
  }
  return info;
}

}  // namespace

bool IsOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Result<std::pair<std::string, int64_t>> ParseDimFlag(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string bad = "--dim '" + text + "': expected NAME=SIZE, e.g. --dim batch=32";
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size()) return InvalidArgument(bad);
  const std::string digits = text.substr(eq + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return InvalidArgument(bad);
  int64_t size = 0;
  try {
    size = std::stoll(digits);
  } catch (const std::exception&) {
    return InvalidArgument("--dim '" + text + "': the size is too large");
  }
  if (size <= 0) return InvalidArgument("--dim '" + text + "': the size must be positive");
  return std::pair<std::string, int64_t>(text.substr(0, eq), size);
}

Result<Graph> GraphFromOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read ONNX model '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph()) {
    return InvalidArgument(path + ": not an ONNX model (a ModelProto with a graph)");
  }
  onnx::GraphProto& g = *model.mutable_graph();
  int opset = 0;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  }
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());

  TF_RETURN_IF_ERROR(SizeSymbolicDims(g, initializers, options, path));
  TF_RETURN_IF_ERROR(CheckDataFlow(g, initializers, path));
  onnx_fold::FoldConstantArithmetic(g);
  onnx_fold::FoldKnownShapes(model);  // a dynamic-axes export's Shape arithmetic, now that --dim sized it
  // Constants: initializers and Constant nodes (the GELU fold reads their values).
  std::map<std::string, const onnx::TensorProto*> constant_values;
  std::map<std::string, TensorInfo> constants;
  for (const auto& t : g.initializer()) {
    constant_values[t.name()] = &t;
    constants[t.name()] =
        TensorInfo{t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()), true, true};
  }
  std::deque<onnx::TensorProto> made;  // Constants' scalar and list forms, as tensors
  for (const auto& n : g.node()) {
    if (n.op_type() != "Constant" || !IsStandardDomain(n.domain())) continue;
    std::optional<onnx::TensorProto> value = n.output_size() == 1 ? ConstantTensor(n) : std::nullopt;
    if (!value) {
      return InvalidArgument(fmt::format("{}: node '{}' (Constant): only a Constant holding one output's value, "
                                         "value_float(s) or value_int(s) is supported",
                                         path, n.name()));
    }
    const onnx::TensorProto& t = made.emplace_back(std::move(*value));
    constant_values[n.output(0)] = &t;
    constants[n.output(0)] =
        TensorInfo{t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()), true, true};
  }
  // torch.onnx.export writes equal initializers once and the others as Identity of it (a
  // freshly initialised model's LayerNorm gammas): such an Identity's output is that
  // constant to the folds (a view in the graph).
  for (const auto& n : g.node()) {
    if (n.op_type() != "Identity" || !IsStandardDomain(n.domain()) || n.input_size() != 1 || n.output_size() != 1) continue;
    if (auto c = constant_values.find(n.input(0)); c != constant_values.end()) constant_values[n.output(0)] = c->second;
  }
  Folds folds(g, constant_values, opset);
  std::vector<std::pair<onnx::NodeProto, int>> nodes = folds.Run();
  // Nodes that compute from constants only (RoPE's cos and sin tables from the positions, a
  // causal mask from torch.full and triu, when the exporter left them) are computed by ATC
  // at compile time (FoldAtCompileTime, once their outputs' types are inferred).
  std::set<size_t> compile_time;
  {
    std::set<std::string> known;
    for (const auto& [name, c] : constants) known.insert(name);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const onnx::NodeProto& n = nodes[i].first;
      if (IsStandardDomain(n.domain()) && n.op_type() == "Constant") continue;
      bool from_constants = n.input_size() > 0;
      for (const auto& input : n.input()) from_constants = from_constants && (input.empty() || known.count(input));
      if (!from_constants) continue;
      compile_time.insert(i);
      for (const auto& o : n.output()) known.insert(o);
    }
  }

  // Each node named (a nameless one as <OpType>_<its index in the file>), and its op known,
  // before shape inference: an op it does not know is named here, not as an inference error.
  std::set<std::string> graph_outputs;
  for (const auto& o : g.output()) graph_outputs.insert(o.name());
  // A node kept in the graph: its op modelled, and one output that others read.
  auto check_node = [&](const onnx::NodeProto& n, const std::string& where) -> Status {
    if (!Importable(n, constant_values)) return InvalidArgument(UnknownOpMessage(n, where));
    if (n.output_size() == 0 || n.output(0).empty()) return InvalidArgument(where + ": it has no output");
    for (int o = 1; o < n.output_size() && !IsWindowOp(n); ++o) {
      if (n.output(o).empty()) continue;
      bool read = graph_outputs.count(n.output(o)) > 0;
      for (const auto& [other, k] : nodes) {
        read = read || std::find(other.input().begin(), other.input().end(), n.output(o)) != other.input().end();
      }
      if (read) {
        return InvalidArgument(where + ": its output " + std::to_string(o) + " ('" + n.output(o) +
                               "') is read by another node or is a graph output: only the first output is modelled");
      }
    }
    return Status::Ok();
  };
  std::vector<std::string> node_names;
  std::set<std::string> names;
  for (const auto& [n, index] : nodes) {
    const std::string base = NodeName(n, index);
    std::string name = base;
    for (int k = 2; names.count(name); ++k) name = base + "_" + std::to_string(k);
    names.insert(name);
    node_names.push_back(name);
    if (n.op_type() == "Constant" && IsStandardDomain(n.domain())) continue;
    // A node from constants may be folded (any op): checked once its outputs' types are known.
    if (compile_time.count(node_names.size() - 1)) continue;
    TF_RETURN_IF_ERROR(check_node(n, Where(path, name, n, folds.Folded(index))));
  }

  TF_ASSIGN_OR_RETURN(auto info, InferShapes(model, nodes, constants, opset, path));
  // auto_pad, a ConvTranspose's output_shape and a pool's ceil_mode as the explicit pads
  // they stand for, now that inference has sized each input and output (onnx_pads.h).
  for (size_t i = 0; i < nodes.size(); ++i) {
    onnx::NodeProto& n = nodes[i].first;
    if (!onnx_pads::NeedsExplicitPads(n)) continue;
    const std::string where = Where(path, node_names[i], n, folds.Folded(nodes[i].second));
    const auto x = info.find(n.input(0));
    const auto y = n.output_size() > 0 ? info.find(n.output(0)) : info.end();
    const auto w = n.input_size() > 1 ? info.find(n.input(1)) : info.end();
    if (x == info.end() || !x->second.known) return InvalidArgument(where + ": its input's shape is not known");
    TF_ASSIGN_OR_RETURN(n, onnx_pads::WithExplicitPads(n, where, x->second.shape,
                                                        y == info.end() ? std::vector<int64_t>{} : y->second.shape,
                                                        w == info.end() ? std::vector<int64_t>{} : w->second.shape));
  }
  // A QDQ model's int8 cube ops read their weights' int8 data, not a weight dequantized at
  // compile time.
  const QuantizedCubes quantized = FindQuantizedCubes(nodes, info, graph_outputs);
  for (size_t i : quantized.dequantizes) compile_time.erase(i);
  for (size_t i : quantized.cubes) compile_time.erase(i);
  const std::set<size_t> folded =
      FoldAtCompileTime(nodes, graph_outputs, constant_values, compile_time, info, constants);
  for (size_t i : compile_time) {
    // A node from constants that stays (a view of one; integer arithmetic read by a kernel or
    // view): checked as any other node.
    const onnx::NodeProto& n = nodes[i].first;
    if (folded.count(i)) continue;
    TF_RETURN_IF_ERROR(check_node(n, Where(path, node_names[i], n, folds.Folded(nodes[i].second))));
  }

  // float32 runs as float16, as ATC's default precision_mode (force_fp16) runs it (the
  // cube takes no float32), unless the caller keeps it.
  auto Precision = [&options](const std::string& dtype) {
    return dtype == "float32" && !options.keep_fp32 ? std::string("float16") : dtype;
  };
  Graph out;
  out.name = g.name().empty() ? std::filesystem::path(path).stem().string() : g.name();
  out.soc = options.soc.empty() ? kDefaultSoc : options.soc;
  std::set<std::string> referenced;
  auto output_desc = [&](const std::string& where, const std::string& name) -> Result<TensorDesc> {
    const auto t = info.find(name);
    if (t == info.end() || !t->second.known) {
      return InvalidArgument(where + ": ONNX shape inference gave no shape for its output '" + name + "'");
    }
    auto dtype = DTypeOf(t->second.elem_type);
    if (!dtype || !IsGraphDType(*dtype)) {
      return InvalidArgument(where + ": its output '" + name + "' is " +
                             onnx::TensorProto::DataType_Name(t->second.elem_type) +
                             ", a dtype tunefleet's graphs do not carry (float16, bfloat16, float32, int8, and int32 "
                             "or int64 indices)");
    }
    return TensorDesc{t->second.shape, Precision(*dtype), "ND"};
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& n = nodes[i].first;
    if (n.op_type() == "Constant" && IsStandardDomain(n.domain())) continue;
    if (folded.count(i)) continue;  // a constant: its referenced outputs are weights
    const std::string& name = node_names[i];
    const std::string where = Where(path, name, n, folds.Folded(nodes[i].second));
    if (quantized.dequantizes.count(i)) {  // the int8 data an int8 cube op reads
      const auto data = info.find(n.input(0));
      referenced.insert(n.input(0));
      out.nodes.push_back(
          GraphNode{name, kReshapeOp, {n.input(0)}, {{n.output(0), TensorDesc{data->second.shape, "int8", "ND"}}}, {}});
      continue;
    }
    if (IsWindowOp(n)) {
      TF_ASSIGN_OR_RETURN(auto starts, WindowStarts(n, where, info, constant_values, opset));
      for (int o = 0; o < n.output_size(); ++o) {
        if (n.output(o).empty()) continue;
        GraphNode view;
        view.name = o == 0 ? name : fmt::format("{}.{}", name, o);  // Split: one view per output
        view.op_type = kReshapeOp;
        view.inputs = {n.input(0)};
        referenced.insert(n.input(0));
        view.attrs[kSliceStartsAttr] = Join(starts[static_cast<size_t>(o)]);
        TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(o)));
        view.outputs.push_back({n.output(o), std::move(desc)});
        out.nodes.push_back(std::move(view));
      }
      continue;
    }
    if (IsNoOpPad(n, constant_values)) {
      TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
      referenced.insert(n.input(0));
      out.nodes.push_back(GraphNode{name, kReshapeOp, {n.input(0)}, {{n.output(0), std::move(desc)}}, {}});
      continue;
    }
    if (IsStandardDomain(n.domain()) && n.op_type() == "Softmax" && opset >= 13) {
      const auto data = info.find(n.input(0));
      const int64_t rank = data == info.end() ? 0 : static_cast<int64_t>(data->second.shape.size());
      int64_t axis = IntAttr(n, "axis", -1);
      if (axis < 0) axis += rank;
      if (data != info.end() && data->second.known && axis >= 0 && axis < rank - 1) {
        TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
        referenced.insert(n.input(0));
        for (GraphNode& node :
             SoftmaxOverAxisNodes(n, name, data->second.shape, static_cast<size_t>(axis), std::move(desc))) {
          out.nodes.push_back(std::move(node));
        }
        continue;
      }
    }
    if (IsReduce(n) || (IsStandardDomain(n.domain()) && n.op_type() == "GlobalAveragePool")) {
      TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
      const auto data = info.find(n.input(0));
      if (data == info.end() || !data->second.known) return InvalidArgument(where + ": its input's shape is not known");
      TF_ASSIGN_OR_RETURN(std::vector<GraphNode> written,
                          ReduceNodes(n, name, where, data->second.shape, constant_values, opset, std::move(desc)));
      for (GraphNode& node : written) {
        referenced.insert(node.inputs.begin(), node.inputs.end());
        out.nodes.push_back(std::move(node));
      }
      continue;
    }
    if (IsStandardDomain(n.domain()) && n.op_type() == "Einsum") {
      const auto operand = info.find(n.input(0));
      const auto dtype = operand == info.end() ? std::nullopt : DTypeOf(operand->second.elem_type);
      if (!dtype || !IsGraphDType(*dtype)) return InvalidArgument(where + ": its operands' dtype is not known");
      TF_ASSIGN_OR_RETURN(std::vector<GraphNode> written, EinsumNodes(n, name, where, info, Precision(*dtype)));
      for (GraphNode& node : written) {
        referenced.insert(node.inputs.begin(), node.inputs.end());
        out.nodes.push_back(std::move(node));
      }
      continue;
    }
    if (IsStandardDomain(n.domain()) && n.op_type() == "Pad") {
      TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
      const auto data = info.find(n.input(0));
      if (data == info.end() || !data->second.known) return InvalidArgument(where + ": its input's shape is not known");
      TF_ASSIGN_OR_RETURN(GraphNode node, PadNode(n, name, where, data->second.shape, constant_values, std::move(desc)));
      referenced.insert(n.input(0));
      out.nodes.push_back(std::move(node));
      continue;
    }
    // Nodes written as several tunefleet nodes: a kernel and the views around it.
    const auto rank_of = [&](const std::string& t) {
      const auto it = info.find(t);
      return it == info.end() ? size_t{0} : it->second.shape.size();
    };
    const bool conv1d = IsStandardDomain(n.domain()) && n.op_type() == "Conv" && rank_of(n.input(0)) == 3;
    if (IsConstantPick(n, constant_values) || conv1d ||
        (IsStandardDomain(n.domain()) && (n.op_type() == "BatchNormalization" || n.op_type() == "ConvTranspose" ||
                                          n.op_type() == "GroupNormalization"))) {
      TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
      const auto data = info.find(n.input(0));
      if (data == info.end() || !data->second.known) return InvalidArgument(where + ": its input's shape is not known");
      const std::vector<int64_t>& shape = data->second.shape;
      TF_ASSIGN_OR_RETURN(
          std::vector<GraphNode> written,
          n.op_type() == "Gather"          ? PickNodes(n, name, where, shape, *IntValues(*constant_values.at(n.input(1))), desc)
          : n.op_type() == "ConvTranspose"      ? ConvTransposeNodes(n, name, where, shape, info, desc)
          : conv1d                              ? Conv1dNodes(n, name, where, shape, info, desc)
          : n.op_type() == "GroupNormalization" ? GroupNormNodes(n, name, where, shape, desc)
                                                : BatchNormNodes(n, name, where, shape, info, constant_values, desc));
      for (GraphNode& node : written) {
        referenced.insert(node.inputs.begin(), node.inputs.end());
        out.nodes.push_back(std::move(node));
      }
      continue;
    }
    TF_ASSIGN_OR_RETURN(Converted c, Convert(n, where, info, constant_values, opset));
    if (c.op == "Cast") {
      // A Cast to the dtype its input already has (PyTorch's .to() of a tensor of that
      // dtype, or float32 <-> float16 once float32 is run as float16) moves nothing: a view.
      c.attrs["dst_type"] = Precision(c.attrs["dst_type"]);
      auto from = info.find(n.input(0));
      auto from_dtype = from == info.end() ? std::nullopt : DTypeOf(from->second.elem_type);
      if (from_dtype && Precision(*from_dtype) == c.attrs["dst_type"]) {
        c.op = kReshapeOp;
        c.attrs.clear();
      }
    }
    GraphNode node;
    node.name = name;
    node.op_type = c.op;
    for (auto& input : c.inputs) {
      if (input.empty()) continue;  // an optional input left out
      referenced.insert(input);
      node.inputs.push_back(std::move(input));
    }
    node.attrs = std::move(c.attrs);
    TF_ASSIGN_OR_RETURN(TensorDesc desc, output_desc(where, n.output(0)));
    // Views of ids or of a mask pass them on, a Cast converts them, and index arithmetic
    // (vector_space.h) computes on them; any other integer result has no kernel.
    const bool yields_indices = node.op_type == kReshapeOp || node.op_type == "Cast" || ComputesOnIndices(node.op_type);
    if (!yields_indices && (desc.dtype == "int32" || desc.dtype == "int64")) {
      return InvalidArgument(where + ": its output '" + n.output(0) + "' is " + desc.dtype +
                             ": integer arithmetic tunefleet has no kernel for (" + kIndexDTypeRule +
                             "; shape arithmetic on a tensor's shape: export with fixed shapes and constant folding "
                             "on)");
    }
    // int8 in, dequantized out (a DepthwiseConv2D of int8 writes float16 without saying so)
    if (quantized.cubes.count(i) && node.op_type != "DepthwiseConv2D") node.attrs["out_dtype"] = desc.dtype;
    node.outputs.push_back({n.output(0), std::move(desc)});
    out.nodes.push_back(std::move(node));
  }
  auto tensor = [&](const std::string& name, const TensorInfo& t) -> Result<NamedTensor> {
    auto dtype = DTypeOf(t.elem_type);
    if (!dtype || !IsGraphDType(*dtype)) {
      return InvalidArgument(fmt::format("{}: tensor '{}' is {}, a dtype tunefleet's graphs do not carry (float16, "
                                         "bfloat16, float32, int8 and bool, as int8, are, and int32 or int64 as a "
                                         "Gather's indices, an embedding's token ids)",
                                         path, name, onnx::TensorProto::DataType_Name(t.elem_type)));
    }
    if (t.shape.empty()) return NamedTensor{name, TensorDesc{{1}, Precision(*dtype), "ND"}};  // a scalar
    return NamedTensor{name, TensorDesc{t.shape, Precision(*dtype), "ND"}};
  };
  for (const auto& input : g.input()) {
    if (initializers.count(input.name()) || !referenced.count(input.name())) continue;
    TF_ASSIGN_OR_RETURN(NamedTensor t, tensor(input.name(), info[input.name()]));
    out.inputs.push_back(std::move(t));
  }
  for (const auto& [name, c] : constants) {
    if (!referenced.count(name)) continue;  // a Reshape's shape, a Squeeze's axes: data, not weights
    TF_ASSIGN_OR_RETURN(NamedTensor t, tensor(name, c));
    out.weights.push_back(std::move(t));
  }
  // Causal masks: the constants whose values are one, and those the file's metadata
  // names (an example exporter's, which drops the weights' data after checking them).
  for (const auto& w : out.weights) {
    const auto values = constant_values.find(w.name);
    if (values != constant_values.end() && HoldsCausalMask(*values->second)) out.causal_masks.push_back(w.name);
  }
  for (const auto& entry : model.metadata_props()) {
    if (entry.key() != kCausalMasksMetadataKey) continue;
    for (const std::string& name : space_util::SplitCommas(entry.value())) {
      Status marked = MarkCausalMask(out, name);
      if (!marked.ok()) return marked.WithContext(fmt::format("{}: metadata_props '{}'", path, kCausalMasksMetadataKey));
    }
  }
  for (const auto& o : g.output()) out.outputs.push_back(o.name());
  // A decoding step's KV cache stays on the device: HF's and optimum's `past_key_values.*`
  // inputs and `present.*` outputs (and the past_k / present_k of scripts/make_llama_onnx.py).
  for (const auto& input : out.inputs) {
    if (input.name.rfind("past", 0) == 0) out.resident.push_back(input.name);
  }
  for (const auto& o : out.outputs) {
    if (o.rfind("present", 0) == 0) out.resident.push_back(o);
  }
  // Through the JSON reader: one set of structural checks (names, dangling inputs, cycles).
  auto checked = GraphFromJson(GraphToJson(out));
  if (!checked.ok()) return checked.status().WithContext(path);
  return checked;
}

}  // namespace tunefleet
