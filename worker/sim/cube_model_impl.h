// The cube core shared by MatMul and the ops that run as an implicit GEMM on it
// (Conv2D's im2col): per-block pipe costs, L2/HBM sharing and the last wave in closed
// form, each block kind's time from its MTE2/MTE1/CUBE/FIXPIPE/scalar recurrence walked
// with periodic jumps (cube_recurrence.h, matmul_model.cc). Such an op only says how
// MTE2 streams its A operand into L1; everything else is the GEMM's. Private to
// worker/sim/; pure functions, any thread.
#pragma once

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/cube_recurrence.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// How MTE2 reads the A operand of an implicit GEMM, per batch. Index 0 describes a
// block in an interior block row (stepM*baseM rows of M), index 1 one in the last
// block row (the rows left over).
struct CubeASide {
  double pass_bytes[2] = {0, 0};   // bytes one block reads in one pass over all of K
  double pass_bursts[2] = {0, 0};  // contiguous bursts of that pass
  bool misaligned = false;         // a row stride that is not 32-byte aligned
  double total = 0;                // A's bytes in GM: read once from HBM (compulsory)
  double panel = 0;                // bytes of one interior block row's A (L2 working set)
};

// What the event simulation (event_sim.cc) needs of the closed form's decomposition:
// the per-step pipe costs the recurrence walks, one entry per block kind with its
// MTE2/FIXPIPE costs already stretched by the shared-fabric factor, and the estimate's
// non-timing fields. Kinds are sorted slowest first, as the fast path's critical core
// takes them.
struct CubeBlockPlan {
  int64_t count = 0;             // blocks of this kind in the launch
  int64_t tiles = 0;             // base output tiles of one block
  double mte2_cycles = 0;        // the block's whole MTE2 time (bursts, reloads, fabric)
  double first_chunk_cycles = 0; // MTE2 time of its first L1 chunk pair
  double fix_tile_cycles = 0;    // FIXPIPE time of one output tile
  double fast_cycles = 0;        // the fast path's time of the block
};
struct CubePlan {
  int64_t cores = 0, waves = 0;
  CubePipe pipe;
  CubeBlockPlan kinds[4];
  double hbm_floor_us = 0;
  KernelEstimate estimate;  // the fast path's result (its timing fields are the fast path's)
};

// kInvalidArgument for a shape or tiling no space would produce (see EstimateMatmul).
Status CheckCubeTiling(const MatmulShape& gemm, const MatmulTiling& tiling);
// The cube kernel's estimate. `a_side` null: A is the GEMM's own [M, K] matrix as
// MatmulShape describes it (MatMul). Requires CheckCubeTiling(gemm, tiling).ok().
// `plan` non-null: also fills in the decomposition the event simulation walks.
KernelEstimate EstimateCube(const MatmulShape& gemm, const MatmulTiling& tiling,
                            const CubeASide* a_side, const SocSpec& soc,
                            CubePlan* plan = nullptr);

}  // namespace tunefleet::sim
