// The vector ops' tuning problems (NPU_MODEL.md "Element-wise", "Softmax / LayerNorm /
// Reduce", "Transpose"): the shape read from an op key, each family's parameter space
// with its UB-capacity and 32-byte-alignment constraints, CANN-like default tilings, and
// the work decomposition (tiles, tiles per core, UB bytes) that the timing model in
// worker/sim/vector_model.cc shares. Vector ops run on the vector cores
// (vector_core_cnt). Plain values and pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

enum class VectorFamily {
  kElementwise,  // params tileLength, bufferNum, usedCores
  kRowwise,      // params rowsPerTile, bufferNum, usedCores (over the last axis only)
  kTranspose,    // params tileRows, tileCols, usedCores (swaps the last two axes)
};

enum class VectorOp {
  kAdd, kSub, kMul, kDiv, kRelu, kGelu, kSigmoid, kSilu, kTanh, kExp, kCast, kFusedMulAdd, kRope, kWhere, kConcat, kMaxPool, kAvgPool, kClip,
  kDepthwiseConv, kGather, kResize, kPad, kHardSigmoid, kHardSwish, kSin, kCos, kEqual, kNot,
  kLeakyRelu, kElu, kSoftplus, kAbs, kLog, kMax, kMin, kPRelu,
  kSoftmax, kLayerNorm, kRmsNorm, kInstanceNorm, kReduceSum, kReduceMean, kReduceL2, kReduceMax, kReduceMin, kCumSum,
  kTranspose,
};

// The op types handled here, in a stable order ("Add", ..., "Transpose").
const std::vector<std::string>& VectorOpTypes();
bool IsVectorOpType(std::string_view op_type);
// The vector ops that also compute on int32 and int64 (index arithmetic: Add, Sub, Mul,
// Equal, CumSum); every other op refuses them with kIndexDTypeRule, and Cast converts them.
bool ComputesOnIndices(std::string_view op_type);
// The unary element-wise ops a fused op may apply to its value in UB: Relu, Clip, Gelu,
// Sigmoid, Silu, Tanh, Exp, HardSigmoid, HardSwish, LeakyRelu (a DepthwiseConv2D's whole
// epilogue, a chain's unary steps).
bool IsUnaryEpilogueOp(std::string_view op_type);

struct VectorShape {
  VectorOp op = VectorOp::kAdd;
  VectorFamily family = VectorFamily::kElementwise;
  DType dtype = DType::kFloat16;      // inputs (gamma/beta of LayerNorm too)
  DType out_dtype = DType::kFloat16;  // Cast: attrs.dst_type; else = dtype
  DType compute_dtype = DType::kFloat16;  // what the vector unit computes in
  // Element-wise: output elements; inputs of the output's shape; inputs broadcast to it
  // (a trailing-axes suffix or one element, re-read from L2) and their total elements.
  int64_t elements = 0;
  int full_inputs = 0;
  int broadcast_inputs = 0;
  int64_t broadcast_elements = 0;
  // Row-wise: rows x cols (cols = last axis). Transpose: batch matrices of rows x cols.
  // Rope (element-wise): cols = the rotary dimension (x's last axis), whole rows per tile.
  // Concat (element-wise): cols = its inputs' mean contiguous piece (an input's elements
  // from the joined axis on), each piece a DMA burst of its own. Gather (element-wise):
  // cols = a table row, each row a burst of its own.
  int64_t rows = 0, cols = 0;
  int64_t batch = 1;
  // MaxPool and AveragePool (element-wise over their output): the window's elements, one
  // vmax (vadd) each per output element. Resize: the input elements an output element
  // blends, 1 (nearest) or 4 (linear). Its input is counted as full_inputs inputs of the output's size (its
  // elements over the output's, rounded up: 4 for a 3x3 window at stride 2).
  int window = 0;
  // AveragePool: whether it divides each window's sum (false with attrs.divisor_override 1,
  // torch's avg_pool2d(divisor_override=1) and a ReduceSum over axes before the last: a
  // sum pool, without the vmuls).
  bool divides = true;
  // Compute-dtype buffers of one tile besides inputs and outputs (casts, intermediates).
  int temps = 0;
  // FusedElementwise (fused_space.h): the chain's ops in order, `op` then being kAdd;
  // the vector model charges the sum of their instructions. Empty for a single op.
  std::vector<VectorOp> chain;
  // InstanceNorm: the scale and bias values a row applies, each to its share of the row
  // (1; a GroupNorm's channels per group when its affine is fused in).
  int64_t row_channels = 1;
  // DepthwiseConv2D and InstanceNorm: the unary ops (a ReLU6's Clip) applied to each output
  // in UB before it is written (attrs.epilogue, graph_fusion.h); their instructions are added.
  std::vector<VectorOp> epilogue;
  // Gather: the bytes of one index (4 or 8), read per output row of cols elements.
  int index_bytes = 0;
  // Resize: the input elements it reads (x's, or fewer when it shrinks), each tile of
  // output elements reading its share of them; cols = an output row, each a burst.
  int64_t source_elements = 0;

  // Two keys with equal shapes have one search space and one timing (CanonicalOpKey).
  friend bool operator==(const VectorShape&, const VectorShape&) = default;
};

// The per-channel weights a normalisation reads beside x, one row of cols each, resident
// in UB for all rows: LayerNorm's gamma and beta (2), RmsNorm's gamma (1); 0 otherwise.
int NormParams(const VectorShape& s);
// A row-wise reduction (ReduceSum, ReduceMean, ReduceL2): one value a row, [rows, 1].
bool IsReduce(const VectorShape& s);


struct VectorTiling {
  int64_t tile_length = 0;    // element-wise: elements per UB tile
  int64_t rows_per_tile = 0;  // row-wise
  int64_t tile_rows = 0, tile_cols = 0;  // transpose: input rows x cols per tile
  int64_t buffer_num = 2;     // 1 or 2 (transpose: always 2)
  int64_t used_cores = 1;
};

// Reads a vector op from an op key. kInvalidArgument naming the field (input i's
// shape or dtype, attrs.dst_type, attrs.axis, attrs.perm, ...) when it does not describe
// a supported instance.
Result<VectorShape> VectorShapeFromOpKey(const OpKey& key);

// A window op's (MaxPool's, AveragePool's, DepthwiseConv2D's) attributes in the spelling
// CanonicalConv2dAttrs writes Conv2D's in: kernel_shape "kh,kw", strides and dilations
// "h,w" and pads "top,bottom,left,right", each but kernel_shape left out at its default
// (1,1 / 0), so that ONNX's explicit zero pads and a JSON graph's missing ones are one
// op; a Resize's sizes "Ho,Wo", its mode left out at nearest. kInvalidArgument naming the
// attribute when one does not parse.
Status CanonicalWindowAttrs(OpKey& key);

// Parameter names of the family, in space order.
std::vector<std::string> VectorParamNames(VectorFamily family);

Result<SearchSpace> VectorTilingSpace(const VectorShape& shape, const SocSpec& soc);
// Requires a config of VectorTilingSpace(shape, ...) (any, valid or not).
VectorTiling VectorTilingFromConfig(const VectorShape& shape, const Config& config);
Config VectorConfigFromTiling(const VectorShape& shape, const VectorTiling& t);
// CANN-like heuristic: all vector cores the work allows, double buffering, the largest
// tile that fits UB and is not larger than one core's share. Always valid.
VectorTiling VectorDefaultTiling(const VectorShape& shape, const SocSpec& soc);

// Derived quantities shared by constraints and the timing model.
struct VectorBlocking {
  int64_t tiles = 0;           // tiles in the whole launch
  int64_t tiles_per_core = 0;  // on the busiest core: ceil(tiles / used cores)
  int64_t ub_bytes = 0;        // UB footprint of the tiling (all buffers)
  // Row-wise only: a row that does not fit UB is split into chunks of chunk_cols
  // elements and read twice from HBM (statistics pass, then the normalising pass).
  bool split_rows = false;
  int64_t chunk_cols = 0;
  int64_t row_bytes_padded = 0;  // one row of the input in UB, padded to ubblock_size
};
VectorBlocking ComputeVectorBlocking(const VectorShape& shape, const VectorTiling& t,
                                     const SocSpec& soc);

}  // namespace tunefleet
