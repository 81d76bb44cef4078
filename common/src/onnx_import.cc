#include "tunefleet/common/onnx_import.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace tunefleet {
namespace {

constexpr const char* kDefaultSoc = "Ascend910B2";
constexpr const char* kSupported =
    "MatMul, Gemm, Conv (2-D), Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Exp, Gelu (or the x*0.5*(1+erf(x/sqrt 2)) "
    "pattern), Softmax and LayerNormalization over the last axis, Transpose, Cast, and as views Reshape, Flatten, "
    "Squeeze, Unsqueeze, Identity, Dropout";

std::optional<std::string> DTypeOf(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return "float32";
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::BFLOAT16: return "bfloat16";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64";
    default: return std::nullopt;
  }
}

struct TensorInfo {
  int elem_type = 0;
  std::vector<int64_t> shape;
  bool known = false;  // every dimension has a size
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

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = Attr(n, name);
  return a ? a->i() : fallback;
}
std::vector<int64_t> IntsAttr(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = Attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}
std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

bool IsStandardDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Whether Convert handles the node's op: standard ops, and Gelu / FastGelu also in the
// com.microsoft domain (onnxruntime's). Constant is handled apart.
bool KnownOp(const onnx::NodeProto& n) {
  static const std::set<std::string> kStandard = {
      "MatMul", "Gemm", "Conv", "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Gelu", "Softmax",
      "LayerNormalization", "Transpose", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  if (IsStandardDomain(n.domain())) return kStandard.count(n.op_type()) > 0;
  return n.domain() == "com.microsoft" && (n.op_type() == "Gelu" || (n.op_type() == "FastGelu" && n.input_size() == 1));
}

std::string UnknownOpMessage(const onnx::NodeProto& n, const std::string& where) {
  return fmt::format("{}: ONNX op '{}{}' has no tunefleet equivalent (supported: {})", where,
                     n.domain().empty() ? "" : n.domain() + ".", n.op_type(), kSupported);
}

// One ONNX node as a tunefleet node (op, inputs, attrs); the outputs are filled by the caller.
struct Converted {
  std::string op;
  std::vector<std::string> inputs;
  std::map<std::string, std::string> attrs;
};

Result<Converted> Convert(const onnx::NodeProto& n, const std::string& where,
                          const std::map<std::string, TensorInfo>& info, int opset) {
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
    if (rank(0) != 4) return InvalidArgument(where + ": only 2-D convolutions (NCHW input) are supported");
    if (const auto* pad = Attr(n, "auto_pad"); pad && pad->s() != "NOTSET") {
      return InvalidArgument(where + ": auto_pad '" + pad->s() + "' is not supported: export with explicit pads");
    }
    c.op = "Conv2D";
    c.inputs = first(3);
    if (auto s = IntsAttr(n, "strides"); !s.empty()) c.attrs["strides"] = Join(s);
    if (auto d = IntsAttr(n, "dilations"); !d.empty()) c.attrs["dilations"] = Join(d);
    if (auto p = IntsAttr(n, "pads"); p.size() == 4) {
      c.attrs["pads"] = Join({p[0], p[2], p[1], p[3]});  // ONNX: top, left, bottom, right
    } else if (!p.empty()) {
      return InvalidArgument(where + ": pads must have 4 values for a 2-D convolution");
    }
    if (int64_t g = IntAttr(n, "group", 1); g != 1) c.attrs["groups"] = std::to_string(g);
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Relu" || op == "Sigmoid" ||
             op == "Tanh" || op == "Exp") {
    c.op = op;
    c.inputs = first(n.input_size());
  } else if (op == "Gelu" || (op == "FastGelu" && n.input_size() == 1)) {
    c.op = "Gelu";
    c.inputs = first(1);
  } else if (op == "Softmax") {
    if (!last_axis(IntAttr(n, "axis", opset >= 13 ? -1 : 1))) {
      return InvalidArgument(where + ": Softmax runs over the last axis only");
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
  } else {
    return InvalidArgument(UnknownOpMessage(n, where));
  }
  return c;
}

// IEEE half (and bfloat16) bits as a float.
double HalfToDouble(uint32_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(static_cast<double>(frac), -24)
                      : exp == 31 ? std::numeric_limits<double>::infinity()
                                  : std::ldexp(static_cast<double>(frac | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// The value of a one-element constant (float, double, float16, bfloat16), if it holds one.
std::optional<double> ScalarValue(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  if (n != 1) return std::nullopt;
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
      if (t.float_data_size() == 1) return t.float_data(0);
      float f = 0;
      if (raw.size() != sizeof f) return std::nullopt;
      std::memcpy(&f, raw.data(), sizeof f);
      return f;
    }
    case onnx::TensorProto::DOUBLE: {
      if (t.double_data_size() == 1) return t.double_data(0);
      double d = 0;
      if (raw.size() != sizeof d) return std::nullopt;
      std::memcpy(&d, raw.data(), sizeof d);
      return d;
    }
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      uint16_t bits = 0;
      if (t.int32_data_size() == 1) {
        bits = static_cast<uint16_t>(t.int32_data(0));
      } else if (raw.size() == 2) {
        std::memcpy(&bits, raw.data(), 2);
      } else {
        return std::nullopt;
      }
      if (t.data_type() == onnx::TensorProto::FLOAT16) return HalfToDouble(bits);
      const uint32_t wide = static_cast<uint32_t>(bits) << 16;
      float f = 0;
      std::memcpy(&f, &wide, sizeof f);
      return f;
    }
    default: return std::nullopt;
  }
}

// Exporters before opset 20 write GELU as x * 0.5 * (1 + erf(x / sqrt(2))): five nodes,
// which become one Gelu (as CANN's graph engine fuses them). Matches Div(x, sqrt 2) or
// Mul(x, 1/sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5), and the form with
// Mul(x, 0.5) first, where each intermediate has one reader and each constant holds that
// value (within float16's precision). The Gelu takes the last node's place and name; each
// node keeps its index in the ONNX graph (what names a nameless node).
std::vector<std::pair<onnx::NodeProto, int>> FoldErfGelu(const onnx::GraphProto& g,
                                                         const std::map<std::string, const onnx::TensorProto*>& constants) {
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> readers;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) producer[o] = i;
    for (const auto& in : g.node(i).input()) readers[in].push_back(i);
  }
  std::set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  auto only_reader = [&](const std::string& t) {
    auto r = readers.find(t);
    return r != readers.end() && r->second.size() == 1 && !outputs.count(t) ? r->second[0] : -1;
  };
  auto is = [&](const std::string& name, double want) {
    auto c = constants.find(name);
    auto v = c == constants.end() ? std::nullopt : ScalarValue(*c->second);
    return v && std::abs(*v - want) <= 2e-3 * std::abs(want);
  };
  // The other input of a two-input node of `op` that reads `t` (either side when it commutes).
  auto other = [&](int i, const char* op, const std::string& t, bool commutes) -> std::optional<std::string> {
    if (i < 0) return std::nullopt;
    const auto& n = g.node(i);
    if (n.op_type() != op || !IsStandardDomain(n.domain()) || n.input_size() != 2 || n.output_size() != 1) {
      return std::nullopt;
    }
    if (n.input(0) == t) return n.input(1);
    if (commutes && n.input(1) == t) return n.input(0);
    return std::nullopt;
  };
  std::vector<int> replaced_by(static_cast<size_t>(g.node_size()), -1);  // node -> the Gelu's last node
  std::map<int, std::string> gelu_input;                                  // last node -> x
  for (int e = 0; e < g.node_size(); ++e) {
    const auto& erf = g.node(e);
    if (erf.op_type() != "Erf" || !IsStandardDomain(erf.domain()) || erf.input_size() != 1 || erf.output_size() != 1) {
      continue;
    }
    auto p = producer.find(erf.input(0));
    if (p == producer.end() || only_reader(erf.input(0)) != e) continue;
    const int d = p->second;
    const auto& div = g.node(d);
    if (div.input_size() != 2 || !IsStandardDomain(div.domain())) continue;
    std::string x;
    if (div.op_type() == "Div" && is(div.input(1), std::sqrt(2.0))) {
      x = div.input(0);
    } else if (div.op_type() == "Mul" && is(div.input(1), std::sqrt(0.5))) {
      x = div.input(0);
    } else if (div.op_type() == "Mul" && is(div.input(0), std::sqrt(0.5))) {
      x = div.input(1);
    } else {
      continue;
    }
    const int a = only_reader(erf.output(0));
    auto one = other(a, "Add", erf.output(0), true);
    if (!one || !is(*one, 1.0)) continue;
    const int m1 = only_reader(g.node(a).output(0));
    auto by = other(m1, "Mul", g.node(a).output(0), true);
    if (!by) continue;
    std::vector<int> nodes{d, e, a, m1};
    int last = -1;
    if (*by == x) {  // x * (1 + erf) then * 0.5
      const int m2 = only_reader(g.node(m1).output(0));
      auto half = other(m2, "Mul", g.node(m1).output(0), true);
      if (!half || !is(*half, 0.5)) continue;
      nodes.push_back(m2);
      last = m2;
    } else {  // (x * 0.5) * (1 + erf)
      auto h = producer.find(*by);
      if (h == producer.end() || only_reader(*by) != m1) continue;
      auto half = other(h->second, "Mul", x, true);
      if (!half || !is(*half, 0.5)) continue;
      nodes.push_back(h->second);
      last = m1;
    }
    if (std::any_of(nodes.begin(), nodes.end(), [&](int i) { return replaced_by[i] >= 0; })) continue;
    for (int i : nodes) replaced_by[i] = last;
    gelu_input[last] = x;
  }
  std::vector<std::pair<onnx::NodeProto, int>> out;
  for (int i = 0; i < g.node_size(); ++i) {
    if (replaced_by[i] < 0) {
      out.emplace_back(g.node(i), i);
    } else if (replaced_by[i] == i) {
      onnx::NodeProto gelu;
      gelu.set_op_type("Gelu");
      gelu.set_name(g.node(i).name());
      gelu.add_input(gelu_input[i]);
      gelu.add_output(g.node(i).output(0));
      out.emplace_back(std::move(gelu), i);
    }
  }
  return out;
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

// Every tensor's type and shape, inferred afresh by ONNX (strict: a node it cannot infer is
// an error naming it) on a copy of `model` with `nodes` (GELUs folded), in which Gelu and
// FastGelu, which libonnx 1.12 has no schema for, are Relus: element-wise, the same shape.
Result<std::map<std::string, TensorInfo>> InferShapes(const onnx::ModelProto& model,
                                                      const std::vector<std::pair<onnx::NodeProto, int>>& nodes,
                                                      const std::map<std::string, TensorInfo>& constants,
                                                      const std::string& path) {
  onnx::ModelProto probe = model;
  onnx::GraphProto& pg = *probe.mutable_graph();
  pg.clear_node();
  for (const auto& [n, index] : nodes) {
    onnx::NodeProto* copy = pg.add_node();
    *copy = n;
    if (n.op_type() == "Gelu" || n.op_type() == "FastGelu") {
      copy->set_op_type("Relu");
      copy->set_domain("");
      copy->clear_attribute();
    }
  }
  pg.clear_value_info();
  for (auto& output : *pg.mutable_output()) output.mutable_type()->mutable_tensor_type()->clear_shape();
  try {
    onnx::shape_inference::InferShapes(probe, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/false, /*strict_mode=*/1));
  } catch (const std::exception& e) {
    return InvalidArgument(path + ": ONNX shape inference failed (fix the model): " + e.what());
  }
  std::map<std::string, TensorInfo> info;
  for (const auto& vi : pg.input()) info[vi.name()] = InfoOf(vi.type());
  for (const auto& vi : pg.value_info()) info[vi.name()] = InfoOf(vi.type());
  for (const auto& vi : pg.output()) info[vi.name()] = InfoOf(vi.type());
  for (const auto& [name, c] : constants) info[name] = c;
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
  // Constants: initializers and Constant nodes (the GELU fold reads their values).
  std::map<std::string, const onnx::TensorProto*> constant_values;
  std::map<std::string, TensorInfo> constants;
  for (const auto& t : g.initializer()) {
    constant_values[t.name()] = &t;
    constants[t.name()] = TensorInfo{t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()), true};
  }
  for (const auto& n : g.node()) {
    if (n.op_type() != "Constant" || !IsStandardDomain(n.domain())) continue;
    const auto* value = Attr(n, "value");
    if (value == nullptr || !value->has_t() || n.output_size() != 1) {
      return InvalidArgument(fmt::format("{}: node '{}' (Constant): only a Constant holding a tensor 'value' is supported",
                                         path, n.name()));
    }
    constant_values[n.output(0)] = &value->t();
    constants[n.output(0)] =
        TensorInfo{value->t().data_type(), std::vector<int64_t>(value->t().dims().begin(), value->t().dims().end()), true};
  }
  const std::vector<std::pair<onnx::NodeProto, int>> nodes = FoldErfGelu(g, constant_values);

  // Each node named (a nameless one as <OpType>_<its index in the file>), and its op known,
  // before shape inference: an op it does not know is named here, not as an inference error.
  std::set<std::string> graph_outputs;
  for (const auto& o : g.output()) graph_outputs.insert(o.name());
  std::vector<std::string> node_names;
  std::set<std::string> names;
  for (const auto& [n, index] : nodes) {
    const std::string base = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
    std::string name = base;
    for (int k = 2; names.count(name); ++k) name = base + "_" + std::to_string(k);
    names.insert(name);
    node_names.push_back(name);
    const std::string where = fmt::format("{}: node '{}' ({})", path, name, n.op_type());
    if (n.op_type() == "Constant" && IsStandardDomain(n.domain())) continue;
    if (!KnownOp(n)) return InvalidArgument(UnknownOpMessage(n, where));
    if (n.output_size() == 0 || n.output(0).empty()) return InvalidArgument(where + ": it has no output");
    for (int o = 1; o < n.output_size(); ++o) {
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
  }

  TF_ASSIGN_OR_RETURN(auto info, InferShapes(model, nodes, constants, path));

  Graph out;
  out.name = g.name().empty() ? std::filesystem::path(path).stem().string() : g.name();
  out.soc = options.soc.empty() ? kDefaultSoc : options.soc;
  std::set<std::string> referenced;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& n = nodes[i].first;
    if (n.op_type() == "Constant" && IsStandardDomain(n.domain())) continue;
    const std::string& name = node_names[i];
    const std::string where = fmt::format("{}: node '{}' ({})", path, name, n.op_type());
    TF_ASSIGN_OR_RETURN(Converted c, Convert(n, where, info, opset));
    GraphNode node;
    node.name = name;
    node.op_type = c.op;
    for (auto& input : c.inputs) {
      if (input.empty()) continue;  // an optional input left out
      referenced.insert(input);
      node.inputs.push_back(std::move(input));
    }
    node.attrs = std::move(c.attrs);
    const auto t = info.find(n.output(0));
    if (t == info.end() || !t->second.known) {
      return InvalidArgument(where + ": ONNX shape inference gave no shape for its output '" + n.output(0) + "'");
    }
    auto dtype = DTypeOf(t->second.elem_type);
    if (!dtype) return InvalidArgument(where + ": its output '" + n.output(0) + "' has a dtype tunefleet does not model");
    node.outputs.push_back({n.output(0), TensorDesc{t->second.shape, *dtype, "ND"}});
    out.nodes.push_back(std::move(node));
  }
  auto tensor = [&](const std::string& name, const TensorInfo& t) -> Result<NamedTensor> {
    auto dtype = DTypeOf(t.elem_type);
    if (!dtype) return InvalidArgument(path + ": tensor '" + name + "' has a dtype tunefleet does not model");
    if (t.shape.empty()) return NamedTensor{name, TensorDesc{{1}, *dtype, "ND"}};  // a scalar
    return NamedTensor{name, TensorDesc{t.shape, *dtype, "ND"}};
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
  for (const auto& o : g.output()) out.outputs.push_back(o.name());
  // Through the JSON reader: one set of structural checks (names, dangling inputs, cycles).
  auto checked = GraphFromJson(GraphToJson(out));
  if (!checked.ok()) return checked.status().WithContext(path);
  return checked;
}

}  // namespace tunefleet
