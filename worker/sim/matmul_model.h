// The closed-form ("fast path") timing model of MatMul on one SoC (NPU_MODEL.md "Pipes
// and timing" and "MatMul / BatchMatMul / Gemm"): pipe-level steady state of the K loop
// of each L1 block, its fill and drain, L2 reuse of the A/B panels, HBM contention and
// the last-wave imbalance, in O(1) without allocation. Pure function; any thread.
// It assumes a tiling that satisfies the space's constraints: validate first
// (tunefleet::MatmulTilingSpace, or sim::Simulate, which does). The core is shared with
// Conv2D's implicit GEMM through cube_model_impl.h.
#pragma once

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// Latency and per-pipe busy time of A[M,K] x B[K,N] (per batch) with `tiling` on `soc`.
// kInvalidArgument only for inputs no tiling space would produce (a non-positive
// dimension or step, a base block that is not a positive multiple of 16); capacity
// and alignment limits are NOT checked here. usedCores above the number of L1 blocks
// or the SoC's core count is clamped.
Result<KernelEstimate> EstimateMatmul(const MatmulShape& shape, const MatmulTiling& tiling,
                                      const SocSpec& soc);

}  // namespace tunefleet::sim
