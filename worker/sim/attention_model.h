// Timing of FlashAttention (common/attention_space.h), CANN's FlashAttentionScore on an A2
// part: each cube core takes s1 query rows of one head (a unit) and walks the keys s2 at
// a time. A step computes the [s1, s2] scores (MTE2 brings k's and v's blocks from L2,
// MTE1 feeds L0, the cube multiplies, FIXPIPE drains the fp32 scores to a workspace in
// L2); the core's vector cores (their rows of s1 each) read them, run the score chain and
// the online softmax (running max, exp, running sum, rescale of the output accumulator)
// and write P back; the cube accumulates P x v. With bufferNum 2 the workspace
// ping-pongs and a step costs the slower side; with 1 the sides take turns. A unit also
// loads its q block, normalises and writes its [s1, Dv] output once. The scores never
// reach HBM: it moves q, k, v and the output once (k's and v's re-reads by the next units
// of a head are L2 hits while a wave's heads fit l2_size), and the workspace's traffic is
// L2's. Latency = one launch + max(the busiest core's units, the HBM floor, the L2 floor).
// Pure functions; any thread.
#pragma once

#include <cstdint>

#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/soc_spec.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

struct AttentionPlan {
  int64_t cores = 0;          // cube cores used (vector cores: vector_per_cube each)
  int64_t units = 0;          // (head, s1 block) pairs of the launch
  int64_t units_per_core = 0;  // on the busiest core
  int64_t kv_steps = 0;       // s2 blocks per unit
  double cube_step = 0, vector_step = 0;  // cycles of one full s2 step on each side
  double unit = 0;            // cycles of one unit
  double hbm_floor_us = 0, l2_floor_us = 0;
};

// Requires a tiling of AttentionTilingSpace(shape, soc) (capacity is not checked here).
KernelEstimate EstimateAttention(const AttentionShape& shape, const AttentionTiling& tiling, const SocSpec& soc,
                                 AttentionPlan* plan = nullptr);

}  // namespace tunefleet::sim
