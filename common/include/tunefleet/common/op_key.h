// OpKey: the identity of one tuning problem (SoC, op type, input tensors, attributes,
// simulator model version). Canonical() is the one serialisation that is hashed; the
// 128-bit XXH3 hash of it keys the knowledge base. Plain copyable values.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/status.h"

namespace tunefleet {

// Version of the simulator's timing model; part of every op key, so a model change
// never serves stale tuning results.
// 5: a vector op's HBM share follows the cores active in its last wave; 6: cube ops
// write their output dtype (out_dtype), not always fp32; 7: a pooling's or depthwise
// convolution's tile reads its share of x in one DMA instruction (strided bursts), not one
// per output's worth.
inline constexpr uint32_t kSimModelVersion = 7;

// int32 and int64 are index dtypes: a Gather's indices (an embedding's token ids), an
// integer attention mask, or the position ids computed from them (RoBERTa's): a Gather
// reads them, a Cast turns them into float16, float32 or the other index dtype, Equal
// compares them, Add, Sub, Mul and CumSum compute on them (index arithmetic), and every
// other op refuses them (IsIndexDType).
enum class DType { kFloat16, kBFloat16, kFloat32, kInt8, kInt32, kInt64 };
Result<DType> ParseDType(std::string_view name);
std::string_view DTypeName(DType dtype);
int DTypeBytes(DType dtype);
inline bool IsIndexDType(DType dtype) { return dtype == DType::kInt32 || dtype == DType::kInt64; }
// What the ops that refuse an index dtype say about it.
inline constexpr const char* kIndexDTypeRule =
    "int32 and int64 are a Gather's indices, cast, compared by Equal and computed on by Add, Sub, Mul and CumSum "
    "(index arithmetic: position ids) only";

struct TensorDesc {
  std::vector<int64_t> shape;
  std::string dtype = "float16";
  std::string format = "ND";
  bool operator==(const TensorDesc&) const = default;
};

// At most 2^50 elements in a tensor: far above any device's memory, and far enough below
// int64's range that element and byte counts never wrap (a [2^32, 2^32 + 1] input wrapped
// to a few GiB and was profiled).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 50;
// kInvalidArgument "WHERE: shape [...] holds more than 2^50 elements" past it.
Status CheckTensorSize(const std::vector<int64_t>& shape, const std::string& where);

struct OpKey {
  std::string soc;
  std::string op_type;
  std::vector<TensorDesc> inputs;
  std::map<std::string, std::string> attrs;  // sorted, so canonical order is free
  uint32_t model_version = kSimModelVersion;

  bool operator==(const OpKey&) const = default;

  // "v1;soc=Ascend910B2;op=MatMul;in=float16:ND:1024x1024,float16:ND:1024x1024;attr=;mv=1"
  std::string Canonical() const;
  // A short human form: "MatMul[1024x1024,1024x1024]@Ascend910B2"; an input's dtype and
  // format when not float16 and ND ("bfloat16:64x64", "float16:NZ:..."), the attributes
  // in braces ("MatMul[...]{out_dtype=float32,transpose_b=1}@..."): two ops that differ
  // display differently.
  std::string Display() const;
};

struct OpKeyHash {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const OpKeyHash&) const = default;
  auto operator<=>(const OpKeyHash&) const = default;
  std::string Hex() const;                 // 32 lowercase hex digits
  std::string Bytes() const;               // 16 big-endian bytes (RocksDB key)
  static Result<OpKeyHash> FromHex(std::string_view hex);
};

// Stable across runs, processes and machines: XXH3-128 of Canonical().
OpKeyHash HashOpKey(const OpKey& key);

// JSON form used by examples and the CLI:
// {"soc":"Ascend910B2","op":"MatMul","inputs":[{"shape":[64,64],"dtype":"float16"}],
//  "attrs":{"transpose_a":"0"}}. Errors name the offending field.
Result<OpKey> OpKeyFromJson(const nlohmann::json& j, std::string_view default_soc = "");
nlohmann::json OpKeyToJson(const OpKey& key);

}  // namespace tunefleet
