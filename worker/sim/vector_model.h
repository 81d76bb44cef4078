// The closed-form timing model of the vector ops (element-wise, row-wise Softmax /
// LayerNorm / Reduce, Transpose) on the vector cores (NPU_MODEL.md "Pipes and timing"):
// per tile MTE2 (GM -> UB), VECTOR (repeats of 256 B, at most 255 per instruction),
// MTE3 (UB -> GM) and SCALAR stages, pipelined with bufferNum=2 and serial with 1, HBM
// shared by the active cores, DMA latency and burst overhead, kernel launch and the
// last-wave imbalance, in O(1). Pure function; any thread. Validate the tiling first.
#pragma once

#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/vector_space.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// Latency and per-pipe busy time of `shape` with `tiling` on `soc`. kInvalidArgument
// only for tilings no space would produce (non-positive sizes, bufferNum not 1 or 2);
// UB capacity and alignment are NOT checked here (tunefleet::VectorTilingSpace does).
Result<KernelEstimate> EstimateVector(const VectorShape& shape, const VectorTiling& tiling,
                                      const SocSpec& soc);

// Vector instructions per element, in the op's compute dtype, of a single-pass tile
// (casts of bf16/int8 included). Exposed so tests can pin the documented counts.
int VectorInstructionsPerElement(const VectorShape& shape);

}  // namespace tunefleet::sim
