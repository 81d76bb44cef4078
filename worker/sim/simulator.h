// The simulated NPU's entry point for one (tuning problem, config): validates the config
// against the problem's space, then runs the op's timing model (MatMul, Conv2D, vector
// ops, fused ops, FlashAttention). Nothing is cached across calls; a PreparedProblem holds what is derived once per
// op key so a worker slot pays only validation and the model per config. Pure functions,
// any thread; a PreparedProblem borrows its TuningProblem, which must outlive it.
#pragma once

#include <string_view>

#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/tuning_problem.h"
#include "tunefleet/common/vector_space.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// What Simulate needs from an op key, parsed once.
struct PreparedProblem {
  enum class Op { kMatmul, kConv2d, kVector, kFusedCube, kAttention };
  const TuningProblem* problem = nullptr;  // borrowed
  Op op = Op::kMatmul;
  MatmulShape matmul;  // when op == kMatmul (MatMul, BatchMatMul, Gemm)
  Conv2dShape conv2d;  // when op == kConv2d
  VectorShape vector;  // when op == kVector (FusedElementwise too: a chain VectorShape)
  FusedCubeShape fused;  // when op == kFusedCube (FusedMatMul, FusedBatchMatMul, FusedConv2D)
  AttentionShape attention;  // when op == kAttention (FlashAttention)
};

// kInvalidArgument when the op key's type has no timing model or its inputs do not
// describe the op; kInvalidArgument when `soc` is not the SoC the key names.
Result<PreparedProblem> Prepare(const TuningProblem& problem, const SocSpec& soc);

// The estimate of `config`, or kInvalidArgument with the space's reason (it names the
// violated buffer or limit, e.g. "L0A capacity: ... exceeds l0_a_size 65536 B").
Result<KernelEstimate> Simulate(const PreparedProblem& prepared, const Config& config,
                                const SocSpec& soc);
// Prepare + Simulate in one call.
Result<KernelEstimate> Simulate(const TuningProblem& problem, const Config& config,
                                const SocSpec& soc);

// The op's roofline in us: max(flops / compute roof, compulsory bytes / HBM bandwidth),
// compulsory bytes being inputs read once and outputs written once. No config beats it.
double RooflineUs(const KernelEstimate& estimate, const SocSpec& soc);

}  // namespace tunefleet::sim
