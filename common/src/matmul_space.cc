#include "tunefleet/common/matmul_space.h"

#include "matmul_space_impl.h"
#include "space_util.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

namespace tunefleet {
namespace {

using namespace space_util;

std::string Dims(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Result<DType> CubeInputDType(const OpKey& key, const TensorDesc& a, const TensorDesc& b) {
  if (a.dtype != b.dtype) {
    return InvalidArgument(key.op_type + " inputs A and B must share a dtype, got " + a.dtype +
                           " and " + b.dtype);
  }
  TF_ASSIGN_OR_RETURN(DType dt, ParseDType(a.dtype));
  if (dt == DType::kFloat32 || IsIndexDType(dt)) {
    return InvalidArgument(key.op_type + " on the cube takes float16, bfloat16 or int8 inputs, got " + a.dtype);
  }
  return dt;
}

Status ReadOutBytes(const OpKey& key, MatmulShape& s) {
  TF_ASSIGN_OR_RETURN(const DType out, CubeOutDType(key, s.in_dtype));
  s.out_bytes = CubeOutBytes(s.in_dtype, out);
  return Status::Ok();
}

Result<MatmulShape> BatchMatmulShapeFromOpKey(const OpKey& key) {
  if (key.inputs.size() != 2) {
    return InvalidArgument("BatchMatMul needs exactly 2 inputs (A and B), got " +
                           std::to_string(key.inputs.size()));
  }
  const TensorDesc& a = key.inputs[0];
  const TensorDesc& b = key.inputs[1];
  if (a.shape.size() < 2 || b.shape.size() < 2) {
    return InvalidArgument("BatchMatMul inputs must have at least 2 dimensions [..., rows, cols], got A " +
                           Dims(a.shape) + " and B " + Dims(b.shape));
  }
  MatmulShape s;
  TF_ASSIGN_OR_RETURN(s.in_dtype, CubeInputDType(key, a, b));
  TF_ASSIGN_OR_RETURN(s.transpose_a, AttrFlag(key, {"transpose_a", "adj_x1"}));
  TF_ASSIGN_OR_RETURN(s.transpose_b, AttrFlag(key, {"transpose_b", "adj_x2"}));
  TF_RETURN_IF_ERROR(ReadOutBytes(key, s));
  s.a_nz = a.format == "FRACTAL_NZ";
  s.b_nz = b.format == "FRACTAL_NZ";
  const size_t ra = a.shape.size(), rb = b.shape.size();
  s.m = s.transpose_a ? a.shape[ra - 1] : a.shape[ra - 2];
  s.k = s.transpose_a ? a.shape[ra - 2] : a.shape[ra - 1];
  const int64_t kb = s.transpose_b ? b.shape[rb - 1] : b.shape[rb - 2];
  s.n = s.transpose_b ? b.shape[rb - 2] : b.shape[rb - 1];
  if (kb != s.k) {
    return InvalidArgument("BatchMatMul inner dimensions differ: A has K=" + std::to_string(s.k) +
                           ", B has K=" + std::to_string(kb) + " (check transpose_a/transpose_b)");
  }
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) batch *= a.shape[i];
  if (rb == 2 && ra > 2) {
    // One weight for every batch: the batch rows stack into M, an exact MatMul.
    if (s.transpose_a || s.a_nz) {
      return InvalidArgument("BatchMatMul with a 2-D B needs an ND A that is not transposed "
                             "(its batches then stack into M); give B the batch dimensions of A");
    }
    s.m *= batch;
    return s;
  }
  if (ra != rb || !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin())) {
    return InvalidArgument("BatchMatMul batch dimensions differ: A " + Dims(a.shape) + ", B " +
                           Dims(b.shape) + " (broadcasting is not supported: give both the same "
                           "leading dimensions, or B as a 2-D weight)");
  }
  s.batch = batch;
  return s;
}

Result<MatmulShape> GemmShapeFromOpKey(const OpKey& key) {
  if (key.inputs.size() != 2 && key.inputs.size() != 3) {
    return InvalidArgument("Gemm needs 2 or 3 inputs (A, B and an optional bias C), got " +
                           std::to_string(key.inputs.size()));
  }
  const TensorDesc& a = key.inputs[0];
  const TensorDesc& b = key.inputs[1];
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    return InvalidArgument("Gemm inputs A and B must be 2-D matrices, got A " + Dims(a.shape) +
                           " and B " + Dims(b.shape));
  }
  MatmulShape s;
  TF_ASSIGN_OR_RETURN(s.in_dtype, CubeInputDType(key, a, b));
  TF_ASSIGN_OR_RETURN(s.transpose_a, AttrFlag(key, {"transA", "transpose_a"}));
  TF_ASSIGN_OR_RETURN(s.transpose_b, AttrFlag(key, {"transB", "transpose_b"}));
  TF_RETURN_IF_ERROR(ReadOutBytes(key, s));
  s.a_nz = a.format == "FRACTAL_NZ";
  s.b_nz = b.format == "FRACTAL_NZ";
  s.m = s.transpose_a ? a.shape[1] : a.shape[0];
  s.k = s.transpose_a ? a.shape[0] : a.shape[1];
  const int64_t kb = s.transpose_b ? b.shape[1] : b.shape[0];
  s.n = s.transpose_b ? b.shape[0] : b.shape[1];
  if (kb != s.k) {
    return InvalidArgument("Gemm inner dimensions differ: A has K=" + std::to_string(s.k) +
                           ", B has K=" + std::to_string(kb) + " (check transA/transB)");
  }
  if (key.inputs.size() == 3) {
    const TensorDesc& c = key.inputs[2];
    const bool row = (c.shape.size() == 1 && (c.shape[0] == s.n || c.shape[0] == 1)) ||
                     (c.shape.size() == 2 && c.shape[0] == 1 && (c.shape[1] == s.n || c.shape[1] == 1));
    if (!row) {
      return InvalidArgument("Gemm input 2 (C) must be a bias [" + std::to_string(s.n) + "], [1, " +
                             std::to_string(s.n) + "] or [1], got " + Dims(c.shape) +
                             ": a full C needs a vector epilogue this model does not time");
    }
    TF_ASSIGN_OR_RETURN(DType ct, ParseDType(c.dtype));
    s.bias_bytes = DTypeBytes(ct);
  }
  return s;
}

}  // namespace

DType CubeDefaultOutDType(DType in) { return in; }

int64_t CubeOutBytes(DType in, DType out) {
  return in == DType::kInt8 && out == DType::kInt8 ? 4 : DTypeBytes(out);  // int8: int32
}

Result<DType> CubeOutDType(const OpKey& key, DType in) {
  auto it = key.attrs.find("out_dtype");
  if (it == key.attrs.end()) return CubeDefaultOutDType(in);
  auto out = ParseDType(it->second);
  const bool ok = out.ok() && (*out == DType::kFloat16 || *out == DType::kFloat32 ||
                               (*out == DType::kBFloat16 && in != DType::kInt8));
  if (!ok) {
    return InvalidArgument(key.op_type + " attrs.out_dtype='" + it->second + "' is not an output the cube writes: use " +
                           (in == DType::kInt8 ? "float16 or float32, or leave it out for int32"
                                               : "float16, bfloat16 or float32 (left out: the inputs' dtype)"));
  }
  return *out;
}

Status CanonicalTransposeFlags(OpKey& key) {
  for (const auto& [canonical, a, b] : {std::tuple{"transpose_a", "adj_x1", "transA"},
                                        std::tuple{"transpose_b", "adj_x2", "transB"}}) {
    TF_ASSIGN_OR_RETURN(const bool set, AttrFlag(key, {canonical, a, b}));
    key.attrs.erase(canonical);
    key.attrs.erase(a);
    key.attrs.erase(b);
    if (set) key.attrs[canonical] = "1";
  }
  return Status::Ok();
}

bool IsCubeGemmOpType(std::string_view op_type) {
  return op_type == "MatMul" || op_type == "BatchMatMul" || op_type == "Gemm";
}

Result<MatmulShape> CubeGemmShapeFromOpKey(const OpKey& key) {
  if (key.op_type == "BatchMatMul") return BatchMatmulShapeFromOpKey(key);
  if (key.op_type == "Gemm") return GemmShapeFromOpKey(key);
  if (key.op_type == "MatMul") return MatmulShapeFromOpKey(key);
  return InvalidArgument("op type '" + key.op_type + "' is not MatMul, BatchMatMul or Gemm");
}

Result<MatmulShape> MatmulShapeFromOpKey(const OpKey& key) {
  if (key.inputs.size() != 2) {
    return InvalidArgument(key.op_type + " needs exactly 2 inputs (A and B), got " +
                           std::to_string(key.inputs.size()));
  }
  const TensorDesc& a = key.inputs[0];
  const TensorDesc& b = key.inputs[1];
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    return InvalidArgument(key.op_type + " inputs must be 2-D matrices");
  }
  if (a.dtype != b.dtype) {
    return InvalidArgument(key.op_type + " inputs must share a dtype, got " + a.dtype + " and " +
                           b.dtype);
  }
  TF_ASSIGN_OR_RETURN(DType dt, ParseDType(a.dtype));
  if (dt == DType::kFloat32 || IsIndexDType(dt)) {
    return InvalidArgument(key.op_type + " on the cube takes float16, bfloat16 or int8 inputs, got " + a.dtype);
  }
  MatmulShape s;
  s.in_dtype = dt;
  TF_ASSIGN_OR_RETURN(s.transpose_a, AttrFlag(key, {"transpose_a"}));
  TF_ASSIGN_OR_RETURN(s.transpose_b, AttrFlag(key, {"transpose_b"}));
  TF_RETURN_IF_ERROR(ReadOutBytes(key, s));
  s.a_nz = a.format == "FRACTAL_NZ";
  s.b_nz = b.format == "FRACTAL_NZ";
  s.m = s.transpose_a ? a.shape[1] : a.shape[0];
  s.k = s.transpose_a ? a.shape[0] : a.shape[1];
  int64_t kb = s.transpose_b ? b.shape[1] : b.shape[0];
  s.n = s.transpose_b ? b.shape[0] : b.shape[1];
  if (kb != s.k) {
    return InvalidArgument(key.op_type + " inner dimensions differ: A has K=" + std::to_string(s.k) +
                           ", B has K=" + std::to_string(kb));
  }
  return s;
}

MatmulBlocking ComputeMatmulBlocking(const MatmulShape& shape, const MatmulTiling& t) {
  MatmulBlocking b;
  const int64_t in_bytes = DTypeBytes(shape.in_dtype);
  b.pad_m = RoundUp(shape.m, 16);
  b.pad_n = RoundUp(shape.n, 16);
  b.pad_k = RoundUp(shape.k, 16);
  b.tiles_m = CeilDiv(shape.m, t.base_m);
  b.tiles_n = CeilDiv(shape.n, t.base_n);
  b.blocks_m = CeilDiv(b.tiles_m, t.step_m);
  b.blocks_n = CeilDiv(b.tiles_n, t.step_n);
  b.blocks = b.blocks_m * b.blocks_n;
  b.l0a_bytes = t.base_m * t.base_k * in_bytes * (t.db_l0a ? 2 : 1);
  b.l0b_bytes = t.base_k * t.base_n * in_bytes * (t.db_l0b ? 2 : 1);
  b.l0c_bytes = t.base_m * t.base_n * 4 * (t.db_l0c ? 2 : 1);
  // L1 holds stepKa A chunks and stepKb B chunks, ping-ponged so MTE2 overlaps MTE1.
  b.l1_bytes = (t.step_m * t.base_m * t.step_ka * t.base_k +
                t.step_kb * t.base_k * t.step_n * t.base_n) *
               in_bytes * 2;
  return b;
}

std::vector<Parameter> MatmulTilingParameters(const MatmulShape& shape, const SocSpec& soc) {
  std::vector<int64_t> cores;
  for (int64_t c : {1, 2, 4, 8, 12, 16, 20, 24, 32}) {
    if (c < soc.ai_core_cnt) cores.push_back(c);
  }
  cores.push_back(soc.ai_core_cnt);
  // Base blocks larger than the padded dimension only add padding; leaving them out of
  // the value lists keeps small shapes' spaces small (the constraint still guards).
  auto bases = [](int64_t dim, std::initializer_list<int64_t> all) {
    std::vector<int64_t> out;
    for (int64_t v : all) {
      if (v <= RoundUp(dim, 16) || out.empty()) out.push_back(v);
    }
    return out;
  };
  std::vector<Parameter> params = {
      {"baseM", bases(shape.m, {16, 32, 64, 128, 256})},
      {"baseN", bases(shape.n, {16, 32, 64, 128, 256})},
      {"baseK", bases(shape.k, {16, 32, 64, 128})},
      {"stepM", {1, 2, 4}},
      {"stepN", {1, 2, 4}},
      {"stepKa", {1, 2, 4}},
      {"stepKb", {1, 2, 4}},
      {"dbL0A", {0, 1}},
      {"dbL0B", {0, 1}},
      {"dbL0C", {0, 1}},
      {"iterateOrder", {0, 1}},
      {"swizzle", {1, 2, 4}},
      {"usedCores", cores},
  };
  return params;
}

std::vector<SearchSpace::Constraint> MatmulTilingConstraints(const MatmulShape& shape,
                                                             const SocSpec& soc) {
  const SocSpec spec = soc;  // captured by value: the space outlives no SoC catalog
  auto tiling = [](const Config& c) { return MatmulTilingFromConfig(c); };
  std::vector<SearchSpace::Constraint> constraints = {
      {"base block fits the shape",
       [shape, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulTiling t = tiling(c);
         MatmulBlocking b = ComputeMatmulBlocking(shape, t);
         if (t.base_m > b.pad_m) return Violated(why, [&] { return "baseM=" + std::to_string(t.base_m) + " exceeds M rounded up to 16 (" + std::to_string(b.pad_m) + ")"; });
         if (t.base_n > b.pad_n) return Violated(why, [&] { return "baseN=" + std::to_string(t.base_n) + " exceeds N rounded up to 16 (" + std::to_string(b.pad_n) + ")"; });
         if (t.base_k > b.pad_k) return Violated(why, [&] { return "baseK=" + std::to_string(t.base_k) + " exceeds K rounded up to 16 (" + std::to_string(b.pad_k) + ")"; });
         return true;
       }},
      {"steps fit the shape",
       [shape, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulTiling t = tiling(c);
         MatmulBlocking b = ComputeMatmulBlocking(shape, t);
         int64_t k_tiles = CeilDiv(shape.k, t.base_k);
         if (t.step_m > b.tiles_m) return Violated(why, [&] { return "stepM=" + std::to_string(t.step_m) + " exceeds the " + std::to_string(b.tiles_m) + " baseM tiles of M"; });
         if (t.step_n > b.tiles_n) return Violated(why, [&] { return "stepN=" + std::to_string(t.step_n) + " exceeds the " + std::to_string(b.tiles_n) + " baseN tiles of N"; });
         if (t.step_ka > k_tiles) return Violated(why, [&] { return "stepKa=" + std::to_string(t.step_ka) + " exceeds the " + std::to_string(k_tiles) + " baseK tiles of K"; });
         if (t.step_kb > k_tiles) return Violated(why, [&] { return "stepKb=" + std::to_string(t.step_kb) + " exceeds the " + std::to_string(k_tiles) + " baseK tiles of K"; });
         return true;
       }},
      {"L0A capacity",
       [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulBlocking b = ComputeMatmulBlocking(shape, tiling(c));
         if (b.l0a_bytes > spec.l0_a_size) return Violated(why, [&] { return "baseM*baseK*in_bytes*(1+dbL0A) = " + B(b.l0a_bytes) + " exceeds l0_a_size " + B(spec.l0_a_size); });
         return true;
       }},
      {"L0B capacity",
       [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulBlocking b = ComputeMatmulBlocking(shape, tiling(c));
         if (b.l0b_bytes > spec.l0_b_size) return Violated(why, [&] { return "baseK*baseN*in_bytes*(1+dbL0B) = " + B(b.l0b_bytes) + " exceeds l0_b_size " + B(spec.l0_b_size); });
         return true;
       }},
      {"L0C capacity",
       [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulBlocking b = ComputeMatmulBlocking(shape, tiling(c));
         if (b.l0c_bytes > spec.l0_c_size) return Violated(why, [&] { return "baseM*baseN*4*(1+dbL0C) = " + B(b.l0c_bytes) + " exceeds l0_c_size " + B(spec.l0_c_size); });
         return true;
       }},
      {"L1 capacity",
       [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulBlocking b = ComputeMatmulBlocking(shape, tiling(c));
         if (b.l1_bytes > spec.l1_size) return Violated(why, [&] { return "2*(stepM*baseM*stepKa*baseK + stepKb*baseK*stepN*baseN)*in_bytes = " + B(b.l1_bytes) + " exceeds l1_size " + B(spec.l1_size); });
         return true;
       }},
      {"cores have blocks",
       [shape, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         MatmulTiling t = tiling(c);
         MatmulBlocking b = ComputeMatmulBlocking(shape, t);
         int64_t work = b.blocks * shape.batch;
         if (t.used_cores > work) return Violated(why, [&] { return "usedCores=" + std::to_string(t.used_cores) + " exceeds the " + std::to_string(work) + " L1 blocks to hand out"; });
         return true;
       }},
  };
  return constraints;
}

Result<SearchSpace> MatmulTilingSpace(const MatmulShape& shape, const SocSpec& soc) {
  return SearchSpace::Create(MatmulTilingParameters(shape, soc), MatmulTilingConstraints(shape, soc));
}

MatmulTiling MatmulTilingFromConfig(const Config& c) {
  MatmulTiling t;
  t.base_m = c[0];
  t.base_n = c[1];
  t.base_k = c[2];
  t.step_m = c[3];
  t.step_n = c[4];
  t.step_ka = c[5];
  t.step_kb = c[6];
  t.db_l0a = c[7] != 0;
  t.db_l0b = c[8] != 0;
  t.db_l0c = c[9] != 0;
  t.iterate_order = c[10];
  t.swizzle = c[11];
  t.used_cores = c[12];
  return t;
}

Config MatmulConfigFromTiling(const MatmulTiling& t) {
  return {t.base_m, t.base_n, t.base_k, t.step_m, t.step_n, t.step_ka, t.step_kb,
          t.db_l0a, t.db_l0b, t.db_l0c, t.iterate_order, t.swizzle, t.used_cores};
}

MatmulTiling MatmulDefaultTiling(const MatmulShape& shape, const SocSpec& soc) {
  auto largest_at_most = [](int64_t cap, std::initializer_list<int64_t> vals) {
    int64_t best = *vals.begin();
    for (int64_t v : vals) if (v <= cap) best = v;
    return best;
  };
  MatmulTiling t;
  t.base_m = largest_at_most(RoundUp(shape.m, 16), {16, 32, 64, 128});
  t.base_n = largest_at_most(RoundUp(shape.n, 16), {16, 32, 64, 128});
  t.base_k = largest_at_most(RoundUp(shape.k, 16), {16, 32, 64});
  t.db_l0a = t.db_l0b = t.db_l0c = true;
  MatmulBlocking b = ComputeMatmulBlocking(shape, t);
  int64_t work = b.blocks * shape.batch;
  t.used_cores = 1;
  for (int64_t c : {1, 2, 4, 8, 12, 16, 20, 24, 32}) {
    if (c <= work && c <= soc.ai_core_cnt) t.used_cores = c;
  }
  if (work >= soc.ai_core_cnt) t.used_cores = soc.ai_core_cnt;
  return t;
}

}  // namespace tunefleet
