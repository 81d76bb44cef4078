#include "tunefleet/common/op_key.h"

#include <cstdio>

#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tunefleet/common/json_fields.h"

namespace tunefleet {

Status CheckTensorSize(const std::vector<int64_t>& shape, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements)) {
      std::string text;
      for (int64_t v : shape) text += (text.empty() ? "" : ",") + std::to_string(v);
      return InvalidArgument(where + " shape [" + text + "] holds more than 2^50 elements (no device holds it)");
    }
  }
  return Status::Ok();
}

Result<DType> ParseDType(std::string_view name) {
  if (name == "float16" || name == "fp16" || name == "half") return DType::kFloat16;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  if (name == "float32" || name == "fp32" || name == "float") return DType::kFloat32;
  if (name == "int8") return DType::kInt8;
  if (name == "int32") return DType::kInt32;
  if (name == "int64") return DType::kInt64;
  return InvalidArgument("unknown dtype '" + std::string(name) +
                         "' (expected float16, bfloat16, float32, int8, or int32 or int64 for a Gather's indices)");
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kInt8: return "int8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat32: return 4;
    case DType::kInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
}

namespace {
std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}
}  // namespace

std::string OpKey::Canonical() const {
  std::string s = "v1;soc=" + soc + ";op=" + op_type + ";in=";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ',';
    s += inputs[i].dtype + ":" + inputs[i].format + ":" + ShapeString(inputs[i].shape);
  }
  s += ";attr=";
  bool first = true;
  for (const auto& [k, v] : attrs) {
    if (!first) s += ',';
    first = false;
    s += k + "=" + v;
  }
  s += ";mv=" + std::to_string(model_version);
  return s;
}

std::string OpKey::Display() const {
  std::string s = op_type + "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ',';
    // float16 and ND, the common case, go unsaid; anything else is part of what op it is.
    if (inputs[i].dtype != "float16" || inputs[i].format != "ND") s += inputs[i].dtype + ":";
    if (inputs[i].format != "ND") s += inputs[i].format + ":";
    s += ShapeString(inputs[i].shape);
  }
  s += "]";
  if (!attrs.empty()) {
    s += "{";
    for (auto it = attrs.begin(); it != attrs.end(); ++it) s += (it == attrs.begin() ? "" : ",") + it->first + "=" + it->second;
    s += "}";
  }
  return s + "@" + soc;
}

std::string OpKeyHash::Hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

std::string OpKeyHash::Bytes() const {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(high >> (56 - 8 * i));
    out[static_cast<size_t>(8 + i)] = static_cast<char>(low >> (56 - 8 * i));
  }
  return out;
}

Result<OpKeyHash> OpKeyHash::FromHex(std::string_view hex) {
  if (hex.size() != 32) return InvalidArgument("op key hash must be 32 hex digits");
  OpKeyHash h;
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    uint64_t d;
    if (c >= '0' && c <= '9') d = static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint64_t>(c - 'A' + 10);
    else return InvalidArgument("op key hash has a non-hex digit '" + std::string(1, c) + "'");
    uint64_t& part = i < 16 ? h.high : h.low;
    part = (part << 4) | d;
  }
  return h;
}

OpKeyHash HashOpKey(const OpKey& key) {
  std::string c = key.Canonical();
  XXH128_hash_t h = XXH3_128bits(c.data(), c.size());
  return {h.high64, h.low64};
}

Result<OpKey> OpKeyFromJson(const nlohmann::json& j, std::string_view default_soc) {
  if (!j.is_object()) return InvalidArgument("an op must be a JSON object");
  TF_RETURN_IF_ERROR(
      CheckKnownFields(j, {"name", "op", "op_type", "soc", "inputs", "attrs", "count", "model_version"}, "op"));
  OpKey key;
  // model_version is what OpKeyToJson writes; a key of another simulator version would
  // never be tuned here, so it is refused rather than looked up as a miss.
  if (j.contains("model_version") &&
      (!j["model_version"].is_number_integer() || j["model_version"].get<int64_t>() != kSimModelVersion)) {
    return InvalidArgument("op 'model_version' " + j["model_version"].dump() + " is not this simulator's (" +
                           std::to_string(kSimModelVersion) + "); leave it out");
  }
  if (j.contains("soc")) {
    if (!j["soc"].is_string()) return InvalidArgument("op field 'soc' must be a string");
    key.soc = j["soc"].get<std::string>();
  } else {
    key.soc = std::string(default_soc);
  }
  if (key.soc.empty()) return InvalidArgument("op has no 'soc' and no default SoC was given");
  const char* op_field = j.contains("op") ? "op" : "op_type";
  if (!j.contains(op_field) || !j[op_field].is_string()) {
    return InvalidArgument("op needs a string field 'op' (e.g. \"MatMul\")");
  }
  key.op_type = j[op_field].get<std::string>();
  if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].empty()) {
    return InvalidArgument("op '" + key.op_type + "' needs a non-empty 'inputs' array");
  }
  for (size_t i = 0; i < j["inputs"].size(); ++i) {
    const auto& t = j["inputs"][i];
    std::string where = "op '" + key.op_type + "' input " + std::to_string(i);
    if (!t.is_object() || !t.contains("shape") || !t["shape"].is_array()) {
      return InvalidArgument(where + " needs a 'shape' array");
    }
    TF_RETURN_IF_ERROR(CheckKnownFields(t, {"shape", "dtype", "format"}, where));
    TensorDesc d;
    for (const auto& dim : t["shape"]) {
      if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) {
        return InvalidArgument(where + " shape must hold positive integers");
      }
      d.shape.push_back(dim.get<int64_t>());
    }
    TF_RETURN_IF_ERROR(CheckTensorSize(d.shape, where));
    if (t.contains("dtype")) {
      if (!t["dtype"].is_string()) return InvalidArgument(where + " dtype must be a string");
      TF_ASSIGN_OR_RETURN(DType dt, ParseDType(t["dtype"].get<std::string>()));
      d.dtype = std::string(DTypeName(dt));
    }
    if (t.contains("format")) {
      if (!t["format"].is_string()) return InvalidArgument(where + " format must be a string");
      d.format = t["format"].get<std::string>();
      if (d.format != "ND" && d.format != "FRACTAL_NZ") {
        return InvalidArgument(where + " format must be ND or FRACTAL_NZ, not '" + d.format + "'");
      }
    }
    key.inputs.push_back(std::move(d));
  }
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) return InvalidArgument("op 'attrs' must be an object");
    for (const auto& [k, v] : j["attrs"].items()) {
      if (v.is_string()) key.attrs[k] = v.get<std::string>();
      else if (v.is_boolean()) key.attrs[k] = v.get<bool>() ? "1" : "0";
      else if (v.is_number_integer()) key.attrs[k] = std::to_string(v.get<int64_t>());
      else return InvalidArgument("op attribute '" + k + "' must be a string, bool or integer");
    }
  }
  // A NUL would be cut off on the wire and in stored records (Cap'n Proto text), so the
  // key read back would hash to another entry than the one written.
  auto has_nul = [](const std::string& v) { return v.find('\0') != std::string::npos; };
  bool nul = has_nul(key.soc) || has_nul(key.op_type);
  for (const auto& [k, v] : key.attrs) nul = nul || has_nul(k) || has_nul(v);
  if (nul) return InvalidArgument("op '" + key.Display() + "' has a NUL character in its SoC, op type or attributes");
  return key;
}

nlohmann::json OpKeyToJson(const OpKey& key) {
  nlohmann::json j;
  j["soc"] = key.soc;
  j["op"] = key.op_type;
  j["inputs"] = nlohmann::json::array();
  for (const auto& t : key.inputs) {
    j["inputs"].push_back({{"shape", t.shape}, {"dtype", t.dtype}, {"format", t.format}});
  }
  j["attrs"] = nlohmann::json::object();
  for (const auto& [k, v] : key.attrs) j["attrs"][k] = v;
  j["model_version"] = key.model_version;
  return j;
}

}  // namespace tunefleet
