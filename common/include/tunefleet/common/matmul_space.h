// MatMul's tuning problem (NPU_MODEL.md "MatMul / BatchMatMul / Gemm"): the shape
// read from an op key, the TCubeTiling-like parameter space with CANN's capacity
// constraints, and CANN's default tiling. Work decomposition shared with the timing
// model: the output is cut into L1 blocks of (stepM*baseM) x (stepN*baseN) handed to
// usedCores cores wave by wave; K is never split across cores.
#pragma once

#include <cstdint>
#include <string_view>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  DType in_dtype = DType::kFloat16;  // inputs; accumulation in fp32 (int8: int32)
  bool transpose_a = false, transpose_b = false;
  bool a_nz = false, b_nz = false;   // FRACTAL_NZ in GM (long bursts) vs ND
  int64_t bias_bytes = 0;  // Gemm's C as a bias row [N]: bytes per element; 0 = none
  // Bytes per output element FIXPIPE writes (it converts from the accumulator on the
  // way): from an op key, its out_dtype (CubeOutBytes); a shape built in code writes the
  // 4-byte accumulator, as the calibration kernel (NPU_MODEL.md) and a fused op's
  // epilogue workspace do.
  int64_t out_bytes = 4;
};

struct MatmulTiling {
  int64_t base_m = 0, base_n = 0, base_k = 0;
  int64_t step_m = 1, step_n = 1, step_ka = 1, step_kb = 1;
  bool db_l0a = false, db_l0b = false, db_l0c = false;
  int64_t iterate_order = 0;  // 0: M fastest over blocks, 1: N fastest
  int64_t swizzle = 1;        // L2 swizzle group: blocks of this many rows walked together
  int64_t used_cores = 1;
};

// Reads MatMul (A[M,K] x B[K,N], transpose_a/transpose_b attrs) from an op key.
// kInvalidArgument naming the field when shapes disagree or the dtype is unsupported.
Result<MatmulShape> MatmulShapeFromOpKey(const OpKey& key);

// The ops that run as one GEMM on the cube with the MatMul space: MatMul, BatchMatMul
// (A [..., M, K] x B [..., K, N], equal leading dims, or a 2-D B folded into M when A is
// not transposed; transpose_a/transpose_b or CANN's adj_x1/adj_x2) and Gemm (ONNX: 2-D
// A and B, transA/transB or transpose_a/transpose_b, alpha, beta, optional C that must
// be a bias [N], [1, N] or [1], added by FIXPIPE). kInvalidArgument naming the input
// or attribute to fix.
bool IsCubeGemmOpType(std::string_view op_type);
Result<MatmulShape> CubeGemmShapeFromOpKey(const OpKey& key);

// What a cube op (MatMul, BatchMatMul, Gemm, Conv2D) writes: attr out_dtype (float16,
// bfloat16 or float32), by default its inputs' dtype, as CANN's MatMul does; int8
// inputs write int32 unless out_dtype is float16 or float32 (dequantised by FIXPIPE).
// kInvalidArgument naming the value to fix.
Result<DType> CubeOutDType(const OpKey& key, DType in);
DType CubeDefaultOutDType(DType in);  // kInt8 stands for int32 there
int64_t CubeOutBytes(DType in, DType out);

// Rewrites the transpose flags of a cube GEMM's key in one spelling, so spellings of the
// same op share one op key: transpose_a / transpose_b (also for adj_x1 / adj_x2 and
// transA / transB) "1" when set, left out when not. kInvalidArgument for a value that is
// not a flag (true/false or 1/0).
Status CanonicalTransposeFlags(OpKey& key);

// Parameter names, in space order.
inline constexpr const char* kMatmulParams[] = {
    "baseM", "baseN", "baseK", "stepM", "stepN", "stepKa", "stepKb",
    "dbL0A", "dbL0B", "dbL0C", "iterateOrder", "swizzle", "usedCores"};

Result<SearchSpace> MatmulTilingSpace(const MatmulShape& shape, const SocSpec& soc);
// Requires a config of MatmulTilingSpace (any, valid or not).
MatmulTiling MatmulTilingFromConfig(const Config& config);
Config MatmulConfigFromTiling(const MatmulTiling& t);
// CANN's heuristic: large square base blocks, all usable cores, double buffering on,
// clamped to the shape so it is always valid.
MatmulTiling MatmulDefaultTiling(const MatmulShape& shape, const SocSpec& soc);

// Derived quantities, shared by constraints and the timing model.
struct MatmulBlocking {
  int64_t pad_m = 0, pad_n = 0, pad_k = 0;  // rounded up to 16
  int64_t tiles_m = 0, tiles_n = 0;         // base tiles
  int64_t blocks_m = 0, blocks_n = 0;       // L1 blocks of step*base
  int64_t blocks = 0;                       // per batch
  int64_t l1_bytes = 0, l0a_bytes = 0, l0b_bytes = 0, l0c_bytes = 0;
};
MatmulBlocking ComputeMatmulBlocking(const MatmulShape& shape, const MatmulTiling& t);

}  // namespace tunefleet
