// The cube core shared by MatMul and the ops that run as an implicit GEMM on it
// (Conv2D's im2col): one closed-form model of MTE2/MTE1/CUBE/FIXPIPE/scalar per L1
// block, L2/HBM sharing and the last wave (matmul_model.cc). Such an op only says how
// MTE2 streams its A operand into L1; everything else is the GEMM's. Private to
// worker/sim/; pure functions, any thread.
#pragma once

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
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

// kInvalidArgument for a shape or tiling no space would produce (see EstimateMatmul).
Status CheckCubeTiling(const MatmulShape& gemm, const MatmulTiling& tiling);
// The cube kernel's estimate. `a_side` null: A is the GEMM's own [M, K] matrix as
// MatmulShape describes it (MatMul). Requires CheckCubeTiling(gemm, tiling).ok().
KernelEstimate EstimateCube(const MatmulShape& gemm, const MatmulTiling& tiling,
                            const CubeASide* a_side, const SocSpec& soc);

}  // namespace tunefleet::sim
