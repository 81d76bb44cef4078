#include "worker/sim/simulator.h"

#include <algorithm>
#include <string>

#include "worker/sim/attention_model.h"
#include "worker/sim/conv2d_model.h"
#include "worker/sim/fused_model.h"
#include "worker/sim/matmul_model.h"
#include "worker/sim/vector_model.h"

namespace tunefleet::sim {

Result<PreparedProblem> Prepare(const TuningProblem& problem, const SocSpec& soc) {
  if (problem.key.soc != soc.name) {
    return InvalidArgument("op key is for SoC '" + problem.key.soc + "' but the spec is '" +
                           soc.name + "'");
  }
  PreparedProblem prepared;
  prepared.problem = &problem;
  if (IsCubeGemmOpType(problem.key.op_type)) {
    TF_ASSIGN_OR_RETURN(prepared.matmul, CubeGemmShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kMatmul;
    return prepared;
  }
  if (problem.key.op_type == "Conv2D") {
    TF_ASSIGN_OR_RETURN(prepared.conv2d, Conv2dShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kConv2d;
    return prepared;
  }
  if (IsVectorOpType(problem.key.op_type)) {
    TF_ASSIGN_OR_RETURN(prepared.vector, VectorShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kVector;
    return prepared;
  }
  if (problem.key.op_type == kFusedElementwiseOp) {
    TF_ASSIGN_OR_RETURN(prepared.vector, FusedElementwiseShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kVector;
    return prepared;
  }
  if (IsFusedCubeOpType(problem.key.op_type)) {
    TF_ASSIGN_OR_RETURN(prepared.fused, FusedCubeShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kFusedCube;
    return prepared;
  }
  if (problem.key.op_type == kFlashAttentionOp) {
    TF_ASSIGN_OR_RETURN(prepared.attention, AttentionShapeFromOpKey(problem.key));
    prepared.op = PreparedProblem::Op::kAttention;
    return prepared;
  }
  return InvalidArgument("op type '" + problem.key.op_type +
                         "' has no timing model in the simulator");
}

Result<KernelEstimate> Simulate(const PreparedProblem& prepared, const Config& config,
                                const SocSpec& soc) {
  TF_RETURN_IF_ERROR(prepared.problem->space.Validate(config));
  switch (prepared.op) {
    case PreparedProblem::Op::kMatmul:
      return EstimateMatmul(prepared.matmul, MatmulTilingFromConfig(config), soc);
    case PreparedProblem::Op::kConv2d:
      return EstimateConv2d(prepared.conv2d, MatmulTilingFromConfig(config), soc);
    case PreparedProblem::Op::kVector:
      return EstimateVector(prepared.vector, VectorTilingFromConfig(prepared.vector, config), soc);
    case PreparedProblem::Op::kFusedCube: {
      const MatmulTiling t = FusedCubeTilingFromConfig(config);
      const int64_t split = FusedEpiSplitFromConfig(config);
      TF_RETURN_IF_ERROR(CheckFusedCubeTiling(prepared.fused, t, split));
      return EstimateFusedCube(prepared.fused, t, split, soc);
    }
    case PreparedProblem::Op::kAttention:
      return EstimateAttention(prepared.attention, AttentionTilingFromConfig(config), soc);
  }
  return Internal("unhandled op in Simulate");
}

Result<KernelEstimate> Simulate(const TuningProblem& problem, const Config& config,
                                const SocSpec& soc) {
  TF_ASSIGN_OR_RETURN(PreparedProblem prepared, Prepare(problem, soc));
  return Simulate(prepared, config, soc);
}

double RooflineUs(const KernelEstimate& estimate, const SocSpec& soc) {
  const double roof =
      estimate.compute_roof_flops > 0 ? estimate.compute_roof_flops : soc.CubePeakFlops();
  const double compute_us = estimate.flops / roof * 1e6;
  const double memory_us = estimate.compulsory_bytes / (soc.hbm_bandwidth_gbps * 1e3);
  return std::max(compute_us, memory_us);
}

}  // namespace tunefleet::sim
