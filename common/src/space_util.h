// Small helpers the op spaces (matmul/conv2d/vector/fused_space.cc) share: integer
// rounding, the texts constraint reasons print, element counts and shapes, the names of
// an op table. Private to
// common/src/.
#pragma once

#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

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

// The `name` of every entry of an op table, in table order.
template <typename Table>
std::vector<std::string> NamesOf(const Table& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.name);
  return names;
}

}  // namespace tunefleet::space_util
