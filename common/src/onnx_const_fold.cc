#include "onnx_const_fold.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx_util.h"

namespace tunefleet::onnx_fold {
namespace {

using onnx_util::Attr;

using onnx::TensorProto;

// An integer or bool tensor's values, widened to int64; or a float scalar's, in `f`.
struct Ints {
  int type = TensorProto::INT64;  // INT64, INT32 or BOOL; FLOAT or DOUBLE (one element)
  std::vector<int64_t> dims;
  std::vector<int64_t> v;
  std::vector<double> f;
};

bool IsFloatType(int t) { return t == TensorProto::FLOAT || t == TensorProto::DOUBLE; }

std::optional<int64_t> Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) return std::nullopt;
    n *= d;
  }
  return n;
}

bool IsIntType(int t) { return t == TensorProto::INT64 || t == TensorProto::INT32 || t == TensorProto::BOOL; }

std::optional<Ints> Read(const TensorProto& t) {
  if (t.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  if (IsFloatType(t.data_type())) {
    const auto x = onnx_util::ScalarValue(t);
    if (!x) return std::nullopt;
    return Ints{t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()), {}, {*x}};
  }
  if (!IsIntType(t.data_type())) return std::nullopt;
  Ints out;
  out.type = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  const auto n = Count(out.dims);
  if (!n) return std::nullopt;
  const std::string& raw = t.raw_data();
  if (!raw.empty()) {
    const size_t width = out.type == TensorProto::INT64 ? 8 : out.type == TensorProto::INT32 ? 4 : 1;
    if (raw.size() != static_cast<size_t>(*n) * width) return std::nullopt;
    for (size_t i = 0; i < static_cast<size_t>(*n); ++i) {
      if (width == 8) {
        int64_t x = 0;
        std::memcpy(&x, raw.data() + i * 8, 8);
        out.v.push_back(x);
      } else if (width == 4) {
        int32_t x = 0;
        std::memcpy(&x, raw.data() + i * 4, 4);
        out.v.push_back(x);
      } else {
        out.v.push_back(raw[i] != 0);
      }
    }
  } else if (out.type == TensorProto::INT64) {
    out.v.assign(t.int64_data().begin(), t.int64_data().end());
  } else {
    out.v.assign(t.int32_data().begin(), t.int32_data().end());  // INT32 and BOOL
  }
  if (static_cast<int64_t>(out.v.size()) != *n) return std::nullopt;
  return out;
}

TensorProto Write(const Ints& x) {
  TensorProto t;
  t.set_data_type(x.type);
  for (int64_t d : x.dims) t.add_dims(d);
  for (double f : x.f) {
    if (x.type == TensorProto::FLOAT) {
      t.add_float_data(static_cast<float>(f));
    } else {
      t.add_double_data(f);
    }
  }
  for (int64_t v : x.v) {
    if (x.type == TensorProto::INT64) {
      t.add_int64_data(v);
    } else {
      t.add_int32_data(static_cast<int32_t>(v));
    }
  }
  return t;
}

// NumPy broadcasting of the inputs into a tensor of `type`, fn computing each element from
// the inputs' elements at that position.
std::optional<Ints> Broadcast(const std::vector<const Ints*>& in, int type,
                              const std::function<std::optional<int64_t>(const std::vector<int64_t>&)>& fn) {
  size_t rank = 0;
  for (const Ints* t : in) rank = std::max(rank, t->dims.size());
  std::vector<int64_t> dims(rank, 1);
  for (const Ints* t : in) {
    for (size_t i = 0; i < t->dims.size(); ++i) {
      int64_t& o = dims[rank - t->dims.size() + i];
      const int64_t d = t->dims[i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  }
  const auto n = Count(dims);
  if (!n) return std::nullopt;
  Ints out{type, dims, {}, {}};
  std::vector<int64_t> at(rank, 0), args(in.size());
  for (int64_t k = 0; k < *n; ++k) {
    for (size_t j = 0; j < in.size(); ++j) {
      const Ints& t = *in[j];
      int64_t flat = 0;
      for (size_t i = 0; i < t.dims.size(); ++i) {
        flat = flat * t.dims[i] + (t.dims[i] == 1 ? 0 : at[rank - t.dims.size() + i]);
      }
      args[j] = t.v[static_cast<size_t>(flat)];
    }
    auto r = fn(args);
    if (!r) return std::nullopt;
    out.v.push_back(*r);
    for (size_t i = rank; i-- > 0;) {
      if (++at[i] < dims[i]) break;
      at[i] = 0;
    }
  }
  return out;
}

// An axis of `rank` axes, negative counting from the end; nullopt when out of range.
std::optional<size_t> Axis(int64_t a, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) return std::nullopt;
  return static_cast<size_t>(a < 0 ? a + r : a);
}

// Unsqueeze's and Squeeze's axes: an input from opset 13, an attribute before.
std::optional<std::vector<int64_t>> AxesOf(const onnx::NodeProto& n, const std::vector<const Ints*>& in) {
  if (in.size() >= 2) return in[1]->v;
  if (const auto* a = Attr(n, "axes")) return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  return std::nullopt;
}

// v when the type holds it: a result that overflows is not folded (the node stays, and
// is refused or run as it is), never wrapped.
std::optional<int64_t> Fit(int type, std::optional<int64_t> v) {
  if (v && type == TensorProto::INT32 && (*v < INT32_MIN || *v > INT32_MAX)) return std::nullopt;
  return v;
}

bool AddOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool SubOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool MulOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

// Arithmetic on float scalars (PyTorch's attention scale, GPT-2's `full([], d ** 0.5)`:
// Pow(64, 0.5), a ConstantOfShape of the empty shape, Add): Add, Sub, Mul, Div, Pow, Sqrt,
// each result a finite number.
std::optional<Ints> EvalFloat(const onnx::NodeProto& n, const std::vector<const Ints*>& in) {
  const std::string& op = n.op_type();
  const int type = in[0]->type;
  std::vector<int64_t> dims;
  for (const Ints* t : in) {
    if (t->type != type || t->f.size() != 1) return std::nullopt;
    if (t->dims.size() > dims.size()) dims = t->dims;  // every axis 1: the longest rank
  }
  std::optional<double> r;
  const double a = in[0]->f[0], b = in.size() > 1 ? in[1]->f[0] : 0;
  if (in.size() == 2 && op == "Add") r = a + b;
  if (in.size() == 2 && op == "Sub") r = a - b;
  if (in.size() == 2 && op == "Mul") r = a * b;
  if (in.size() == 2 && op == "Div") r = a / b;
  if (in.size() == 2 && op == "Pow") r = std::pow(a, b);
  if (in.size() == 1 && op == "Sqrt") r = std::sqrt(a);
  if (!r || !std::isfinite(*r) || (type == TensorProto::FLOAT && std::abs(*r) > std::numeric_limits<float>::max())) {
    return std::nullopt;
  }
  return Ints{type, dims, {}, {*r}};
}

std::optional<Ints> Eval(const onnx::NodeProto& n, const std::vector<const Ints*>& in) {
  const std::string& op = n.op_type();
  if (!in.empty() && IsFloatType(in[0]->type)) return EvalFloat(n, in);
  for (const Ints* t : in) {
    if (IsFloatType(t->type)) return std::nullopt;  // a float beside integers (Where's branches)
  }
  using Op = std::function<std::optional<int64_t>(int64_t, int64_t)>;
  auto binary = [&](int type, const Op& f) -> std::optional<Ints> {
    if (in.size() != 2 || in[0]->type != in[1]->type) return std::nullopt;
    return Broadcast(in, type, [&](const std::vector<int64_t>& a) { return Fit(type, f(a[0], a[1])); });
  };
  const int type = in.empty() ? TensorProto::INT64 : in[0]->type;
  const bool arithmetic = type != TensorProto::BOOL;
  // f(a, b, &r) stores a op b in r and says whether it overflowed.
  auto checked = [](bool (*f)(int64_t, int64_t, int64_t*)) -> Op {
    return [f](int64_t a, int64_t b) -> std::optional<int64_t> {
      int64_t r = 0;
      if (f(a, b, &r)) return std::nullopt;
      return r;
    };
  };
  if (op == "Add" && arithmetic) return binary(type, checked(AddOverflows));
  if (op == "Sub" && arithmetic) return binary(type, checked(SubOverflows));
  if (op == "Mul" && arithmetic) return binary(type, checked(MulOverflows));
  if (op == "Div" && arithmetic) {
    return binary(type, [](int64_t a, int64_t b) {
      return b == 0 || (a == INT64_MIN && b == -1) ? std::nullopt : std::optional<int64_t>(a / b);
    });
  }
  if (op == "Equal") return binary(TensorProto::BOOL, [](int64_t a, int64_t b) { return int64_t{a == b}; });
  if (op == "Where") {
    if (in.size() != 3 || in[0]->type != TensorProto::BOOL || in[1]->type != in[2]->type) return std::nullopt;
    return Broadcast(in, in[1]->type, [](const std::vector<int64_t>& a) { return a[0] ? a[1] : a[2]; });
  }
  if (op == "ConstantOfShape") {
    if (in.size() != 1 || in[0]->dims.size() != 1) return std::nullopt;
    const auto* value = Attr(n, "value");
    if (value == nullptr || !value->has_t()) return std::nullopt;  // float 0 by default: not shape arithmetic
    auto fill = Read(value->t());
    if (!fill || fill->v.size() + fill->f.size() != 1) return std::nullopt;
    Ints out{fill->type, in[0]->v, {}, {}};
    const auto count = Count(out.dims);
    if (!count || (!fill->f.empty() && *count != 1)) return std::nullopt;  // floats: scalars only
    out.v.assign(fill->v.empty() ? 0 : static_cast<size_t>(*count), fill->v.empty() ? 0 : fill->v[0]);
    out.f = fill->f;
    return out;
  }
  if (op == "Concat") {
    const auto* axis_attr = Attr(n, "axis");
    if (in.empty() || axis_attr == nullptr) return std::nullopt;
    const size_t rank = in[0]->dims.size();
    const auto axis = Axis(axis_attr->i(), rank);
    if (!axis) return std::nullopt;
    Ints out{type, in[0]->dims, {}, {}};
    out.dims[*axis] = 0;
    for (const Ints* t : in) {
      if (t->type != type || t->dims.size() != rank) return std::nullopt;
      for (size_t i = 0; i < rank; ++i) {
        if (i != *axis && t->dims[i] != in[0]->dims[i]) return std::nullopt;
      }
      out.dims[*axis] += t->dims[*axis];
    }
    if (!Count(out.dims)) return std::nullopt;
    int64_t outer = 1;
    for (size_t i = 0; i < *axis; ++i) outer *= out.dims[i];
    for (int64_t o = 0; o < outer; ++o) {
      for (const Ints* t : in) {
        const int64_t block = outer == 0 ? 0 : static_cast<int64_t>(t->v.size()) / outer;
        out.v.insert(out.v.end(), t->v.begin() + o * block, t->v.begin() + (o + 1) * block);
      }
    }
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    auto axes = AxesOf(n, in);
    Ints out = *in[0];
    if (op == "Squeeze") {
      std::vector<bool> drop(out.dims.size(), !axes);  // no axes: every axis of size 1
      for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
        const auto at = Axis(a, out.dims.size());
        if (!at || out.dims[*at] != 1) return std::nullopt;
        drop[*at] = true;
      }
      std::vector<int64_t> kept;
      for (size_t i = 0; i < out.dims.size(); ++i) {
        if (!(drop[i] && out.dims[i] == 1)) kept.push_back(out.dims[i]);
      }
      out.dims = kept;
      return out;
    }
    if (!axes) return std::nullopt;
    const size_t rank = out.dims.size() + axes->size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : *axes) {
      const auto at = Axis(a, rank);
      if (!at || inserted[*at]) return std::nullopt;
      inserted[*at] = true;
    }
    std::vector<int64_t> dims;
    for (size_t i = 0, k = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : out.dims[k++]);
    out.dims = dims;
    return out;
  }
  if (op == "Reshape") {  // a shape list reshaped (repeat_kv's [b, kv, 1, s, d] as [5])
    const auto* allowzero = Attr(n, "allowzero");
    if (in.size() != 2 || in[1]->dims.size() != 1 || (allowzero != nullptr && allowzero->i() != 0)) return std::nullopt;
    const auto count = Count(in[0]->dims);
    if (!count) return std::nullopt;
    std::vector<int64_t> dims;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < in[1]->v.size(); ++i) {
      int64_t d = in[1]->v[i];
      if (d == 0) {
        if (i >= in[0]->dims.size()) return std::nullopt;
        d = in[0]->dims[i];
      }
      if (d == -1) {
        if (infer >= 0) return std::nullopt;
        infer = static_cast<int64_t>(dims.size());
        d = 1;
      } else if (d < 0) {
        return std::nullopt;
      }
      dims.push_back(d);
      known *= d;
    }
    if (infer >= 0) {
      if (known == 0 || *count % known != 0) return std::nullopt;
      dims[static_cast<size_t>(infer)] = *count / known;
    } else if (known != *count) {
      return std::nullopt;
    }
    Ints out = *in[0];
    out.dims = dims;
    return out;
  }
  if (op == "Cast") {
    const auto* to = Attr(n, "to");
    if (to == nullptr || !IsIntType(static_cast<int>(to->i()))) return std::nullopt;
    Ints out = *in[0];
    out.type = static_cast<int>(to->i());
    for (int64_t& v : out.v) {
      if (out.type == TensorProto::BOOL) v = v != 0;
      if (out.type == TensorProto::INT32 && (v < INT32_MIN || v > INT32_MAX)) return std::nullopt;
    }
    return out;
  }
  // Opset 10 on (bounds as inputs), one axis, either direction: a shape list's part, or
  // torch's F.pad pads, whose [n, 2] pairs it reverses with step -1.
  if (op == "Slice" && in.size() >= 3 && !in[0]->dims.empty()) {
    auto one = [&](size_t i, int64_t fallback) -> std::optional<int64_t> {
      if (i >= in.size()) return fallback;
      return in[i]->v.size() == 1 ? std::optional<int64_t>(in[i]->v[0]) : std::nullopt;
    };
    const auto start = one(1, 0), end = one(2, 0), axis = one(3, 0), step = one(4, 1);
    if (!start || !end || !axis || !step || *step == 0) return std::nullopt;
    const auto axis_at = Axis(*axis, in[0]->dims.size());
    if (!axis_at) return std::nullopt;
    const size_t at = *axis_at;
    const int64_t size = in[0]->dims[at];
    // ONNX's clamps: [0, size] going forwards, [-1, size - 1] going backwards.
    const int64_t low = *step > 0 ? 0 : -1, high = *step > 0 ? size : size - 1;
    auto clamp = [&](int64_t b) { return std::clamp<int64_t>(b < 0 ? b + size : b, low, high); };
    std::vector<int64_t> picked;
    for (int64_t i = std::max<int64_t>(clamp(*start), 0); size > 0 && (*step > 0 ? i < clamp(*end) : i > clamp(*end));
         i += *step) {
      picked.push_back(i);
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < at; ++d) outer *= in[0]->dims[d];
    for (size_t d = at + 1; d < in[0]->dims.size(); ++d) inner *= in[0]->dims[d];
    Ints out{type, in[0]->dims, {}, {}};
    out.dims[at] = static_cast<int64_t>(picked.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i : picked) {
        const auto from = in[0]->v.begin() + (o * size + i) * inner;
        out.v.insert(out.v.end(), from, from + inner);
      }
    }
    return out;
  }
  if (op == "Transpose" && in.size() == 1) {  // torch's F.pad pads, [2, n] back to [n, 2]
    const size_t rank = in[0]->dims.size();
    std::vector<int64_t> perm;
    if (const auto* p = Attr(n, "perm")) perm.assign(p->ints().begin(), p->ints().end());
    if (perm.empty()) {
      for (size_t d = rank; d > 0; --d) perm.push_back(static_cast<int64_t>(d - 1));
    }
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) return std::nullopt;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return std::nullopt;
      seen[static_cast<size_t>(p)] = true;
    }
    std::vector<int64_t> stride(rank, 1);
    for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * in[0]->dims[d];
    Ints out{type, {}, {}, {}};
    for (int64_t p : perm) out.dims.push_back(in[0]->dims[static_cast<size_t>(p)]);
    std::vector<int64_t> index(rank, 0);  // the output's index, last axis fastest
    for (size_t k = 0; k < in[0]->v.size(); ++k) {
      int64_t from = 0;
      for (size_t d = 0; d < rank; ++d) from += index[d] * stride[static_cast<size_t>(perm[d])];
      out.v.push_back(in[0]->v[static_cast<size_t>(from)]);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < out.dims[d]) break;
        index[d] = 0;
      }
    }
    return out;
  }
  if (op == "Gather") {
    const auto* axis_attr = Attr(n, "axis");
    if (in.size() != 2 || in[0]->dims.size() != 1 || (axis_attr != nullptr && !Axis(axis_attr->i(), 1))) {
      return std::nullopt;
    }
    const int64_t size = in[0]->dims[0];
    Ints out{type, in[1]->dims, {}, {}};
    for (int64_t i : in[1]->v) {
      if (i < -size || i >= size) return std::nullopt;
      out.v.push_back(in[0]->v[static_cast<size_t>(i < 0 ? i + size : i)]);
    }
    return out;
  }
  return std::nullopt;
}

// A Constant node of `value` in the place of `n`: its name and output.
onnx::NodeProto ConstantNode(const onnx::NodeProto& n, const Ints& value) {
  onnx::NodeProto c;
  c.set_name(n.name());
  c.set_op_type("Constant");
  c.add_output(n.output(0));
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = Write(value);
  return c;
}

// A Constant node's value when it is an integer or bool tensor.
std::optional<Ints> ConstantValue(const onnx::NodeProto& n) {
  const auto t = onnx_util::ConstantTensor(n);
  return t ? Read(*t) : std::nullopt;
}

}  // namespace

int FoldKnownShapes(onnx::ModelProto& model) {
  int total = 0;
  for (int round = 0; round < kMaxShapeRounds; ++round) {
    // A fixed-shape export has no Shape node: no inference to run (the importer runs its own).
    const auto& nodes = model.graph().node();
    if (std::none_of(nodes.begin(), nodes.end(), [](const onnx::NodeProto& n) {
          return onnx_util::IsStandardDomain(n.domain()) && n.op_type() == "Shape";
        })) {
      break;
    }
    onnx::ModelProto probe = model;
    onnx::GraphProto& pg = *probe.mutable_graph();
    pg.clear_value_info();
    for (auto& output : *pg.mutable_output()) output.mutable_type()->mutable_tensor_type()->clear_shape();
    try {
      // With data propagation, a Reshape to a Shape's value (GroupNorm's view back, torch's
      // x.view(n, c, h * w) of traced sizes) is sized in the same pass, not a round later.
      onnx::shape_inference::InferShapes(
          probe, onnx::OpSchemaRegistry::Instance(),
          onnx::ShapeInferenceOptions(/*check_type=*/false, /*strict_mode=*/0, /*data_prop=*/true));
    } catch (const std::exception&) {
      break;  // the importer's strict inference names what is wrong
    }
    std::map<std::string, std::vector<int64_t>> shapes;  // tensors whose every axis has a size
    auto take = [&](const onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
      std::vector<int64_t> dims;
      for (const auto& d : vi.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) return;
        dims.push_back(d.dim_value());
      }
      shapes[vi.name()] = std::move(dims);
    };
    for (const auto& vi : pg.input()) take(vi);
    for (const auto& vi : pg.value_info()) take(vi);
    for (const auto& t : pg.initializer()) shapes[t.name()] = std::vector<int64_t>(t.dims().begin(), t.dims().end());
    int folded = 0;
    for (auto& n : *model.mutable_graph()->mutable_node()) {
      if (!onnx_util::IsStandardDomain(n.domain()) || n.op_type() != "Shape" || n.input_size() != 1 ||
          n.output_size() != 1) {
        continue;
      }
      const auto shape = shapes.find(n.input(0));
      if (shape == shapes.end()) continue;
      const int64_t rank = static_cast<int64_t>(shape->second.size());
      auto bound = [rank](int64_t b) { return std::clamp<int64_t>(b < 0 ? b + rank : b, 0, rank); };
      const int64_t start = bound(onnx_util::IntAttr(n, "start", 0)), end = bound(onnx_util::IntAttr(n, "end", rank));
      Ints dims{TensorProto::INT64, {std::max<int64_t>(0, end - start)}, {}, {}};
      for (int64_t i = start; i < end; ++i) dims.v.push_back(shape->second[static_cast<size_t>(i)]);
      n = ConstantNode(n, dims);
      ++folded;
    }
    if (folded == 0) break;
    total += folded + FoldConstantArithmetic(*model.mutable_graph());
  }
  return total;
}

int FoldConstantArithmetic(onnx::GraphProto& g) {
  std::map<std::string, Ints> known;
  for (const auto& t : g.initializer()) {
    if (auto v = Read(t)) known.emplace(t.name(), std::move(*v));
  }
  int folded = 0;
  for (auto& n : *g.mutable_node()) {
    if (!onnx_util::IsStandardDomain(n.domain()) || n.output_size() != 1) continue;
    if (n.op_type() == "Constant") {
      if (auto v = ConstantValue(n)) known[n.output(0)] = std::move(*v);
      continue;
    }
    std::vector<const Ints*> in;
    for (const auto& name : n.input()) {
      auto it = name.empty() ? known.end() : known.find(name);
      if (it == known.end()) break;
      in.push_back(&it->second);
    }
    if (in.empty() || static_cast<int>(in.size()) != n.input_size()) continue;
    auto value = Eval(n, in);
    if (!value) continue;
    n = ConstantNode(n, *value);
    known[n.output(0)] = std::move(*value);
    ++folded;
  }
  return folded;
}

}  // namespace tunefleet::onnx_fold
