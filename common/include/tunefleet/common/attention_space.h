// FlashAttention (CANN's FlashAttentionScore): softmax(chain(q x k)) x v as one kernel.
// `fuse` forms it from a BatchMatMul of the scores, the element-wise ops on them (a Mul
// or Div by the scale, an Add of a mask, a Where of a causal one), a Softmax over the keys and the BatchMatMul by
// v (common/graph_fusion.h): the [Sq, Skv] scores never reach HBM. This file owns what
// both sides need: the shape read from an op key, the tiling space with its capacity
// constraints and the default tiling. Timing is in worker/sim/attention_model.h. Pure
// functions; any thread.
//
// Op key: inputs q [..., Sq, D], k, v [..., Skv, Dv], then the score chain's operands in
// chain order (as a FusedBatchMatMul's epilogue operands, broadcast to the scores
// [..., Sq, Skv]); k is the first BatchMatMul's B as the graph gives it, [..., D, Skv],
// or [..., Skv, D] with attrs.transpose_b = 1. Grouped-query attention: k and v may have
// fewer heads (axis -3) than q, a divisor of q's; each serves q's heads in groups. attrs.scores: the chain ("Div,Add"; none
// when the scores go straight to the softmax). attrs.causal = 1 (CANN's sparse_mode 3):
// the chain applies a causal mask (Graph::causal_masks), key j seen by query i only when
// j <= i + Skv - Sq, so a block of keys wholly above that line is skipped; its mask is
// still an operand, read by the blocks computed. float16 or bfloat16, the output
// [..., Sq, Dv] in the inputs' dtype; or int8 q, k and v (a QDQ model's attention, whose
// softmax output is quantized before P x v: CANN's quantized FlashAttention, P quantized
// to int8 on the vector cores), the cube packing int8 fractals, the output float16.
// attrs.epilogue = Quantize: the output written as int8 (CANN's quant_scale2; `fuse`
// gives it the quantize of its output, through the views that gather its heads).
#pragma once

#include <cstdint>
#include <vector>

#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

inline constexpr const char* kFlashAttentionOp = "FlashAttention";

struct AttentionShape {
  int64_t batch = 1;        // the leading axes' product (batch x heads)
  int64_t sq = 0, skv = 0;  // query rows, key rows
  int64_t d = 0, dv = 0;    // q's and k's head size, v's
  bool k_rows = false;      // k is [..., Skv, D] (rows of D contiguous); else [..., D, Skv]
  int64_t kv_group = 1;     // q's heads per k and v head (grouped-query attention)
  DType dtype = DType::kFloat16;      // q, k, v and P
  DType out_dtype = DType::kFloat16;  // the output: dtype, or float16 for int8; int8 quantized
  bool causal = false;      // keys after a query's own (offset Skv - Sq) are masked: skipped
  FusedChain scores;                  // the score chain before the softmax (may be empty)
  std::vector<int64_t> scores_shape;  // [..., Sq, Skv]
  std::vector<int64_t> out_shape;     // [..., Sq, Dv]
};

// kInvalidArgument naming the input or attribute to fix.
Result<AttentionShape> AttentionShapeFromOpKey(const OpKey& key);

// One cube core takes s1 query rows of one head at a time and walks the keys s2 at a
// time: it computes the [s1, s2] scores into a workspace in L2, its vector cores
// (vector_core_cnt / ai_core_cnt of them, s1 split evenly) run the score chain and the
// online softmax and hand back P, and the cube accumulates P x v. bufferNum 2 ping-pongs
// the workspace, so the cube computes the next block's scores while the vector cores
// run this one's softmax; 1 runs them in turn.
struct AttentionTiling {
  int64_t s1 = 128, s2 = 128, buffers = 2;
};

// The keys a unit of query block `block` (rows block*s1 ..) attends to: Skv, or under a
// causal mask those up to its last row's own (at least 1).
int64_t AttentionUnitKeys(const AttentionShape& shape, const AttentionTiling& tiling, int64_t block);

// What one block needs of each buffer, as the capacity constraints check it.
struct AttentionBlocking {
  int64_t vector_per_cube = 1;
  int64_t rows_per_vector = 0;  // ceil(s1 / vector_per_cube)
  int64_t l1_bytes = 0;         // q's block, then k's, v's and P's, bufferNum deep
  int64_t ub_bytes = 0;         // a vector core's scores (fp32, the softmax in place), P and operands,
                                // bufferNum deep; its rows' output accumulator and P x v (fp32); row statistics
};
AttentionBlocking ComputeAttentionBlocking(const AttentionShape& shape, const AttentionTiling& tiling,
                                           const SocSpec& soc);

// Parameters s1BaseSize (16 .. 256), s2BaseSize (64 .. 1024), bufferNum (1, 2).
// Constraints: "s1 within Sq" and "s2 within Skv" (a block larger than the first value
// that covers the axis only pads), "L1 capacity", "UB capacity".
Result<SearchSpace> AttentionTilingSpace(const AttentionShape& shape, const SocSpec& soc);
// Requires a config of AttentionTilingSpace.
AttentionTiling AttentionTilingFromConfig(const Config& config);
Config AttentionConfigFromTiling(const AttentionTiling& tiling);
// CANN's: s1 = s2 = 128, bufferNum 2, each halved until the block fits.
Result<Config> AttentionDefaultConfig(const AttentionShape& shape, const SocSpec& soc);

}  // namespace tunefleet
