// Reading ONNX nodes: attributes, the standard domain, a Constant node's value, a constant
// tensor's integer values or one number. Shared by the importer and its constant folding
// (internal to common/src/).
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tunefleet::onnx_util {

inline const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
inline int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = Attr(n, name);
  return a ? a->i() : fallback;
}
inline std::vector<int64_t> IntsAttr(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = Attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

inline bool IsStandardDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// A Constant node's value as a tensor: `value`, or the scalar and list forms
// (value_float(s), value_int(s)); nullopt for the others (sparse, strings).
inline std::optional<onnx::TensorProto> ConstantTensor(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    onnx::TensorProto t;
    if (a.name() == "value" && a.has_t()) return a.t();
    if (a.name() == "value_float") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(a.f());
    } else if (a.name() == "value_int") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_int64_data(a.i());
    } else if (a.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(a.floats_size());
      for (float f : a.floats()) t.add_float_data(f);
    } else if (a.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(a.ints_size());
      for (int64_t i : a.ints()) t.add_int64_data(i);
    } else {
      continue;
    }
    return t;
  }
  return std::nullopt;
}

// IEEE half (and bfloat16) bits as a float.
inline double HalfToDouble(uint32_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(static_cast<double>(frac), -24)
                      : exp == 31 ? std::numeric_limits<double>::infinity()
                                  : std::ldexp(static_cast<double>(frac | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// Integer values of a constant (int64 or int32), as ReduceMean's axes input (opset 18).
inline std::optional<std::vector<int64_t>> IntValues(const onnx::TensorProto& t) {
  std::vector<int64_t> v;
  const std::string& raw = t.raw_data();
  if (t.data_type() == onnx::TensorProto::INT32 && !raw.empty()) {
    if (raw.size() % 4 != 0) return std::nullopt;
    std::vector<int32_t> narrow(raw.size() / 4);
    std::memcpy(narrow.data(), raw.data(), raw.size());
    v.assign(narrow.begin(), narrow.end());
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    if (!raw.empty()) {
      if (raw.size() % 8 != 0) return std::nullopt;
      v.resize(raw.size() / 8);
      std::memcpy(v.data(), raw.data(), raw.size());
    } else {
      v.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    v.assign(t.int32_data().begin(), t.int32_data().end());
  } else {
    return std::nullopt;
  }
  return v;
}

// The one value of a tensor given as a typed field or as raw bytes.
template <typename T, typename Repeated>
inline std::optional<double> OneValue(const Repeated& typed, const std::string& raw) {
  if (typed.size() == 1) return typed.Get(0);
  T v{};
  if (raw.size() != sizeof v) return std::nullopt;
  std::memcpy(&v, raw.data(), sizeof v);
  return v;
}

// The value of a one-element constant (float, double, float16, bfloat16), if it holds one.
inline std::optional<double> ScalarValue(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  if (n != 1 || t.dims_size() > 1) return std::nullopt;  // more axes would broadcast x's rank up
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32: {
      auto v = IntValues(t);
      return v && v->size() == 1 ? std::optional<double>(static_cast<double>(v->front())) : std::nullopt;
    }
    case onnx::TensorProto::FLOAT: return OneValue<float>(t.float_data(), raw);
    case onnx::TensorProto::DOUBLE: return OneValue<double>(t.double_data(), raw);
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

}  // namespace tunefleet::onnx_util
