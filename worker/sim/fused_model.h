// Timing of a cube op with a fused element-wise epilogue (FusedMatMul, FusedBatchMatMul,
// FusedConv2D; common/fused_space.h), composed from the cube model's public plan
// (cube_model_impl.h) and the event simulation (event_sim.h) without touching them.
// Each output tile, once FIXPIPE has drained it to a GM workspace that stays in L2
// (NPU_MODEL.md: on A2 parts cube-to-vector data goes through L2/GM), is split over the
// cube core's vector cores, which read it and the chain's operands (MTE2), run the
// chain in fp32 (VECTOR) and write only the final output (MTE3): the intermediate never
// reaches HBM and there is one launch. Both paths share the per-sub-tile stage costs:
// the fast path composes them in closed form over the fast path's tile drain times,
// the event simulation schedules them after each FIXPIPE interval of the cube's
// timeline. FusedElementwise needs nothing here: it is a VectorShape with a chain.
// Pure functions; any thread.
#pragma once

#include <cstdint>

#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/cube_model_impl.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// One epilogue sub-tile on one vector core: stage cycles (DMA latency, bursts and the
// core's HBM share applied, as vector_model.cc does) and the HBM-share time the fluid
// budget charges for it.
struct EpiloguePlan {
  int64_t split = 1;            // sub-tiles per cube output tile on each vector core
  int64_t vector_per_cube = 1;  // vector cores sharing one cube core's tiles
  double scalar = 0, mte2 = 0, vec = 0, mte3 = 0;
  double mte2_latency = 0;
  double hbm_cycles = 0;        // the vector core's HBM share for the sub-tile's HBM bytes
  int instructions_per_element = 0;
};

struct FusedCubePlan {
  CubePlan cube;
  EpiloguePlan epilogue;
  double hbm_floor_us = 0;
  KernelEstimate estimate;  // the fast path's
};

// kInvalidArgument for a tiling no space would produce (as EstimateMatmul).
Status CheckFusedCubeTiling(const FusedCubeShape& shape, const MatmulTiling& tiling, int64_t epi_split);

// The fast path. Latency = one launch + max(the critical core's cube chain, its vector
// core's epilogue chain after the tiles' drains, the HBM floor of the fused traffic).
// Busy: the cube core's pipes, and VECTOR / MTE3 of one of its vector cores (the
// epilogue's MTE2 and SCALAR on the vector core are not in the estimate; see the
// timeline). Requires CheckFusedCubeTiling(...).ok(); capacity is NOT checked here.
KernelEstimate EstimateFusedCube(const FusedCubeShape& shape, const MatmulTiling& tiling, int64_t epi_split,
                                 const SocSpec& soc, FusedCubePlan* plan = nullptr);

// The event simulation: the cube op's SimulateEvents, then each cube core group's
// vector cores run the epilogue sub-tiles released by the FIXPIPE intervals. The
// timeline holds the cube core groups, each followed by its vector cores' group (ids
// ai_core_cnt + core * vector_per_cube + j). `key` is the fused op key (the cube part
// is simulated as its own problem). Requires a config valid in the fused space.
Result<EventSimResult> SimulateFusedCubeEvents(const OpKey& key, const FusedCubeShape& shape, const Config& config,
                                               const SocSpec& soc, const EventSimOptions& options);

}  // namespace tunefleet::sim
