// Small helpers the op spaces (matmul/conv2d/vector/fused_space.cc) share: integer
// rounding, the texts constraint reasons print, element counts and shapes, integer and
// comma-separated lists, flag attributes, the names of an op table. Private to common/src/.
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/status.h"

namespace tunefleet::space_util {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
// A count as reasons print it: "512".
inline std::string N(int64_t v) { return std::to_string(v); }
// Bytes as reasons print them: "65536 B".
inline std::string B(int64_t bytes) { return std::to_string(bytes) + " B"; }

inline int64_t Elements(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// "[4096,768]".
inline std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + N(shape[i]);
  return s + "]";
}

// Whether an input of shape `in` broadcasts to `out` as NumPy and ONNX broadcast (its
// axes aligned from the right, each equal to the output's or 1; leading 1s ignored): a
// bias row [N] over [M, N], an attention mask [b, 1, s, s] over the scores [b, h, s, s],
// RoPE's cos [b, 1, s, d] over [b, h, s, d]. Such an input is read once from HBM and
// re-read from L2 for every tile (vector_model.cc).
inline bool BroadcastsTo(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  const size_t rank = in.size() - lead;
  if (rank > out.size()) return false;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = in[in.size() - 1 - i], b = out[out.size() - 1 - i];
    if (a != b && a != 1) return false;
  }
  return true;
}
inline constexpr const char* kBroadcastRule =
    "the output is the largest input's shape, and each of another input's axes, aligned from the right, must equal "
    "the output's or be 1 (NumPy's rule, with one input of the output's shape)";

// "2", "2,2", "[2, 2]" or "(2,2)" -> {2, 2}. `what` names the text in errors ("Conv2D
// attr 'pads'"), `example` shows a valid one.
inline Result<std::vector<int64_t>> ParseIntList(const std::string& text, const std::string& what,
                                                 const std::string& example) {
  std::vector<int64_t> out;
  std::string cur;
  size_t commas = 0;
  auto flush = [&]() -> Status {
    if (cur.empty()) return Status::Ok();
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(cur.data(), cur.data() + cur.size(), v);
    if (ec != std::errc() || end != cur.data() + cur.size()) {
      return InvalidArgument(what + " must be integers like \"" + example + "\", got '" + text + "'");
    }
    out.push_back(v);
    cur.clear();
    return Status::Ok();
  };
  for (char ch : text) {
    if (ch == '[' || ch == ']' || ch == '(' || ch == ')' || std::isspace(static_cast<unsigned char>(ch))) {
      TF_RETURN_IF_ERROR(flush());
    } else if (ch == ',') {
      TF_RETURN_IF_ERROR(flush());
      if (out.size() != ++commas) return InvalidArgument(what + " has an empty element: '" + text + "'");
    } else {
      cur += ch;
    }
  }
  TF_RETURN_IF_ERROR(flush());
  if (out.empty()) return InvalidArgument(what + " is empty; give integers like \"" + example + "\"");
  return out;
}

// Whether any of the named flag attrs is set. A flag is "1"/"true" or "0"/"false"; any
// other spelling ("True", "yes", "2") is refused rather than silently read as false,
// which would tune the untransposed product.
inline Result<bool> AttrFlag(const OpKey& key, std::initializer_list<const char*> names) {
  bool set = false;
  for (const char* n : names) {
    auto it = key.attrs.find(n);
    if (it == key.attrs.end()) continue;
    if (it->second == "1" || it->second == "true") set = true;
    else if (it->second != "0" && it->second != "false") {
      return InvalidArgument(key.op_type + " attrs." + n + "='" + it->second +
                             "' is not a flag: use true/false or 1/0");
    }
  }
  return set;
}

// "Relu,Clip" -> {"Relu", "Clip"}: the op names of a chain or epilogue attribute (and a
// Kernel Tuner key's values), split at every comma and kept as written, so "" is {""}
// and "a,,b" keeps its empty middle for the caller's error to name.
inline std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    out.emplace_back(text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin));
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

// The `name` of every entry of an op table, in table order.
template <typename Table>
std::vector<std::string> NamesOf(const Table& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.name);
  return names;
}

}  // namespace tunefleet::space_util
