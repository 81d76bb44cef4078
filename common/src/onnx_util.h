// Reading ONNX nodes: attributes, the standard domain, a Constant node's value. Shared by
// the importer and its constant folding (internal to common/src/).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
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

}  // namespace tunefleet::onnx_util
