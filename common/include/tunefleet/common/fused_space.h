// The fused ops that subgraph tuning creates (NPU_MODEL.md "Graph-level decisions":
// CANN's UB fusion): a cube op with an element-wise epilogue (FusedMatMul,
// FusedBatchMatMul, FusedConv2D; attrs.epilogue = "BiasAdd,Gelu") and an element-wise
// chain (FusedElementwise; attrs.ops = "Mul,Add,Relu"). This file owns what both sides
// need: the shapes read from an op key, the tiling spaces with their constraints and the
// default tilings. Timing is in worker/sim/fused_model.h. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/vector_space.h"

namespace tunefleet {

// Ops a chain may hold: BiasAdd (an Add whose operand is a row over the output's channel
// axis), Add, Sub, Mul, Div (one operand each), FusedMulAdd (two: x*a + b), Where (two:
// where(condition, x, y), GPT-2's causal mask; the condition may be int8), and the unary
// Relu, Clip, Gelu, Sigmoid, Silu, Tanh, Exp, HardSigmoid, HardSwish (MobileNetV3's
// activation and gate), LeakyRelu (a GAN's or a detector's), and last Quantize (the value
// written as int8: a QDQ model's QuantizeLinear, CANN's AscendQuant fused into the op). Each step with operands consumes the next operand inputs in order.
const std::vector<std::string>& FusedChainOpNames();

// One step of a chain: the vector op it is (BiasAdd is kAdd) and its operands, as indices
// into the shape's `operands`.
struct FusedStep {
  VectorOp op = VectorOp::kAdd;
  bool bias = false;
  int first_operand = 0;
  int operands = 0;
};

// An extra input a chain reads: the output's shape (full: streamed from HBM with the
// tile) or broadcast to it (a bias row, a scalar: re-read from L2 per tile).
struct FusedOperand {
  DType dtype = DType::kFloat16;
  int64_t elements = 0;
  bool full = false;
};

struct FusedChain {
  std::vector<FusedStep> steps;
  std::vector<FusedOperand> operands;
  std::vector<VectorOp> ops;  // steps' ops in order (what the vector model charges)
  int temps = 0;              // compute-dtype temp buffers of the chain's ops (max over them)
  bool quantized = false;     // it ends in Quantize: the op writes int8
};

// ---- Cube op + element-wise epilogue ----

// The cube part is MatMul, BatchMatMul or Conv2D exactly as the unfused op parses it
// (its first two inputs and every attribute but `epilogue` and `value_out`); the
// epilogue's operand inputs follow. The epilogue computes in fp32 on the accumulator tile and writes the
// output once, in float16 (float16 or int8 inputs: int8 is dequantised first) or
// bfloat16 (bfloat16 inputs). The unfused bias input of Conv2D is expressed as a BiasAdd.
bool IsFusedCubeOpType(std::string_view op_type);
// "FusedMatMul" -> "MatMul" etc.; "" for other op types.
std::string FusedCubeInnerOpType(std::string_view op_type);

struct FusedCubeShape {
  bool conv = false;
  MatmulShape gemm;         // the GEMM the cube runs (Conv2dGemm for a conv)
  Conv2dShape conv2d;       // when conv
  FusedChain epilogue;
  bool dequant = false;     // int8 inputs: the int32 accumulator is scaled to fp16 first
  DType out_dtype = DType::kFloat16;
  // attrs.value_out (float16 or bfloat16), with an epilogue ending in Quantize: the op also
  // writes the value before the Quantize, as a second output, for the readers that take
  // it as it is (a ResNet block's output, both the next block's quantized input and its
  // float16 residual: CANN's TbeConvDequantVaddMultiOutReluQuantFusion). 0: no second output.
  int64_t value_out_bytes = 0;
  std::vector<int64_t> out_shape;  // [M, N], [..., M, N] or NCHW [N, Cout, Ho, Wo]
  int64_t out_elements = 0;
};

// The op key of the cube part alone (op type without "Fused", first two inputs, attrs
// without `epilogue`, out_dtype float32): the unfused cube op writing the fp32
// accumulator the epilogue reads (int8: its int32 one), as the fused kernel's cube does.
Result<OpKey> FusedCubeInnerKey(const OpKey& key);
// kInvalidArgument naming the input or attribute to fix: an unknown epilogue op, the
// wrong number of operand inputs, an operand that does not broadcast to the output.
Result<FusedCubeShape> FusedCubeShapeFromOpKey(const OpKey& key);

// The epilogue's work split: a cube core's output tile (baseM x baseN, fp32) is shared by
// its vector cores (vector_core_cnt / ai_core_cnt of them, rows split evenly); each cuts
// its rows into epiSplit sub-tiles, ping-ponged in UB.
struct EpilogueBlocking {
  int64_t vector_per_cube = 1;
  int64_t rows_per_vector = 0;  // ceil(baseM / vector_per_cube)
  int64_t sub_rows = 0;         // rows of one sub-tile
  int64_t sub_elements = 0;     // sub_rows * baseN
  int64_t bytes_per_element = 0;  // UB bytes per element of one buffer set
  int64_t ub_bytes = 0;         // sub_elements * bytes_per_element * 2 (ping-pong)
};
EpilogueBlocking ComputeEpilogueBlocking(const FusedCubeShape& shape, const MatmulTiling& tiling,
                                         int64_t epi_split, const SocSpec& soc);

// The cube op's parameters (kMatmulParams) followed by "epiSplit" (1, 2, 4, 8). The cube
// op's constraints (named as there) plus "epilogue split fits the tile" and "epilogue UB
// capacity" (the sub-tile's accumulator, operands, output and temps, ping-ponged).
Result<SearchSpace> FusedCubeTilingSpace(const FusedCubeShape& shape, const SocSpec& soc);
inline constexpr int kFusedEpiSplitParam = 13;  // index of "epiSplit"
// Requires a config of FusedCubeTilingSpace.
MatmulTiling FusedCubeTilingFromConfig(const Config& config);
int64_t FusedEpiSplitFromConfig(const Config& config);
// The cube op's default tiling and the smallest epiSplit whose sub-tile fits UB.
Result<Config> FusedCubeDefaultConfig(const FusedCubeShape& shape, const SocSpec& soc);

// ---- Element-wise chain ----

// FusedElementwise: input 0 is x (its shape is the output's), the chain's operands
// follow; all inputs share one dtype, which is also the output's (int8 only when every op
// accepts it: Add, Sub, Mul, Relu, BiasAdd). The result is an element-wise VectorShape
// (op kAdd, `chain` set) with the inputs, temps and casts of the whole chain, so the
// element-wise space, default tiling and vector model apply unchanged.
inline constexpr const char* kFusedElementwiseOp = "FusedElementwise";
Result<VectorShape> FusedElementwiseShapeFromOpKey(const OpKey& key);

}  // namespace tunefleet
