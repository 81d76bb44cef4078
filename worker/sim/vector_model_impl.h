// The vector model's decomposition as the event simulation (event_sim.cc) walks it:
// the busiest core's tile kinds in program order with their per-tile MTE2 / VECTOR /
// MTE3 / SCALAR stage cycles (DMA latency, bursts and the core's HBM share already
// applied), the HBM share each transfer takes, and the fast path's own estimate. The
// busiest cores' last item runs while the other cores are done, at a larger HBM share:
// `last` holds those tiles' costs.
// Private to worker/sim/; plain values, any thread.
#pragma once

#include <cstdint>

#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/vector_space.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

struct VectorTilePlan {
  int64_t count = 0;  // tiles of this kind on the busiest core
  double scalar = 0, mte2 = 0, vec = 0, mte3 = 0;  // stage cycles of one tile
  double mte2_latency = 0, mte3_latency = 0;       // DMA first-byte latency within them
  double read_hbm_cycles = 0, write_hbm_cycles = 0;  // the core's HBM-share time per tile
};
struct VectorPlan {
  int64_t cores = 0;
  int64_t tiles = 0;        // tiles of the launch (row-wise split: rows x chunks x passes)
  int64_t per_core = 0;     // work items (tiles, or rows when split) of the busiest core
  bool ping_pong = true;
  bool split_rows = false;  // kinds[0..n_kinds) alternate per row, chunks_per_row each
  int64_t chunks_per_row = 1;
  int n_kinds = 0;
  VectorTilePlan kinds[2];  // count: all of the kind's tiles on the busiest core
  VectorTilePlan last[2];   // the same kinds' tiles that run after the other cores are done
  int64_t last_tiles = 0;   // such tiles, all at the end of the last kind; 0 when all cores run per_core
  double prologue = 0;      // gamma/beta load before the loop (MTE2)
  double hbm_floor_us = 0;
  KernelEstimate estimate;  // the fast path's result
};

// EstimateVector, also filling in `plan` when non-null.
Result<KernelEstimate> EstimateVectorPlanned(const VectorShape& shape, const VectorTiling& tiling,
                                             const SocSpec& soc, VectorPlan* plan);

}  // namespace tunefleet::sim
