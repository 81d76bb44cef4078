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
// Under a causal mask (AttentionShape::causal) a unit walks only the keys its rows see
// (AttentionUnitKeys): the units of a head differ in length, and they are handed to the
// cores longest first, each to the core with the least work so far (CANN's load balance
// of sparse_mode 3); k's and v's re-reads, the mask's reads, the workspace and the FLOPs
// are those of the blocks computed.
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// One step's stage cycles over a block of keys.
struct AttentionStep {
  double cube = 0, mte1 = 0, mte2 = 0, fixpipe = 0, scalar = 0;  // the cube core
  double v_mte2 = 0, vec = 0, v_mte3 = 0, v_scalar = 0;          // one of its vector cores
  // The cube's pipes overlap within a step; the vector core's do with ping-pong.
  double CubeSide() const;
  double VectorSide(bool ping_pong) const;
};

// The units of one query block (one per head): the keys they walk, in `steps` s2 blocks
// of which the last is `last`, and their cycles. Without a causal mask every unit is one kind.
struct AttentionUnitKind {
  int64_t keys = 0, steps = 0, count = 0;
  AttentionStep last;
  double cycles = 0;
};

struct AttentionPlan {
  int64_t cores = 0;          // cube cores used (vector cores: vector_per_cube each)
  int64_t units = 0;          // (head, s1 block) pairs of the launch
  int64_t units_per_core = 0;  // on the busiest core
  int64_t kv_steps = 0;       // s2 blocks per unit
  double cube_step = 0, vector_step = 0;  // cycles of one full s2 step on each side
  double unit = 0;            // cycles of one unit
  bool ping_pong = true;      // bufferNum 2
  AttentionStep full, last;   // an s2 step, and the last (partial) one
  double unit_setup = 0, q_load = 0;  // a unit's scalar setup and q block load
  double normalise = 0, o_write = 0;  // its final 1/sum and output write
  double hbm_floor_us = 0, l2_floor_us = 0;
  std::vector<AttentionUnitKind> kinds;  // by query block under a causal mask, else one
};

// Each core's units as indices into plan.kinds, in the order it runs them: round-robin
// when every unit is one kind, else longest first to the least loaded core (ties: the
// lower core).
std::vector<std::vector<int>> AssignAttentionUnits(const AttentionPlan& plan);

// Requires a tiling of AttentionTilingSpace(shape, soc) (capacity is not checked here).
KernelEstimate EstimateAttention(const AttentionShape& shape, const AttentionTiling& tiling, const SocSpec& soc,
                                 AttentionPlan* plan = nullptr);

// The event simulation: each core's units walked step by step. A step's scores start when
// the cube finished the previous step's and the workspace buffer is free (the vector side
// done with the block before last with bufferNum 2, with the last one with 1); its softmax
// when its scores are drained and the previous softmax is done. The timeline holds the
// cube cores that run units_per_core units, then their vector cores (ids ai_core_cnt +
// core * vector_per_cube + j), then the same for the cores that run one unit fewer. The
// estimate's busy columns are the critical cube core's, VECTOR and MTE3 its vector core's,
// as the fast path's. kInvalidArgument for a config the space refuses.
Result<EventSimResult> SimulateAttentionEvents(const AttentionShape& shape, const SearchSpace& space, const Config& config,
                                               const SocSpec& soc, const EventSimOptions& options);

}  // namespace tunefleet::sim
