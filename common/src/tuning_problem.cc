#include "tunefleet/common/tuning_problem.h"

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/vector_space.h"

namespace tunefleet {

Result<TuningProblem> MakeTuningProblem(const OpKey& key, const SocSpec& soc) {
  if (key.soc != soc.name) {
    return InvalidArgument("op key is for SoC '" + key.soc + "' but the spec is '" + soc.name + "'");
  }
  if (IsCubeGemmOpType(key.op_type)) {
    TF_ASSIGN_OR_RETURN(MatmulShape shape, CubeGemmShapeFromOpKey(key));
    TF_ASSIGN_OR_RETURN(SearchSpace space, MatmulTilingSpace(shape, soc));
    Config def = MatmulConfigFromTiling(MatmulDefaultTiling(shape, soc));
    Status valid = space.Validate(def);
    if (!valid.ok()) return Internal("default tiling is invalid (a bug): " + valid.message());
    TF_ASSIGN_OR_RETURN(ConfigIndex def_index, space.Encode(def));
    return TuningProblem{key, std::move(space), std::move(def), def_index};
  }
  if (key.op_type == "Conv2D") {
    TF_ASSIGN_OR_RETURN(Conv2dShape shape, Conv2dShapeFromOpKey(key));
    TF_ASSIGN_OR_RETURN(SearchSpace space, Conv2dTilingSpace(shape, soc));
    TF_ASSIGN_OR_RETURN(MatmulTiling tiling, Conv2dDefaultTiling(shape, soc));
    Config def = MatmulConfigFromTiling(tiling);
    Status valid = space.Validate(def);
    if (!valid.ok()) return Internal("Conv2D default tiling is invalid (a bug): " + valid.message());
    TF_ASSIGN_OR_RETURN(ConfigIndex def_index, space.Encode(def));
    return TuningProblem{key, std::move(space), std::move(def), def_index};
  }
  if (IsFusedCubeOpType(key.op_type)) {
    TF_ASSIGN_OR_RETURN(FusedCubeShape shape, FusedCubeShapeFromOpKey(key));
    TF_ASSIGN_OR_RETURN(SearchSpace space, FusedCubeTilingSpace(shape, soc));
    TF_ASSIGN_OR_RETURN(Config def, FusedCubeDefaultConfig(shape, soc));
    TF_ASSIGN_OR_RETURN(ConfigIndex def_index, space.Encode(def));
    return TuningProblem{key, std::move(space), std::move(def), def_index};
  }
  if (IsVectorOpType(key.op_type) || key.op_type == kFusedElementwiseOp) {
    TF_ASSIGN_OR_RETURN(VectorShape shape, key.op_type == kFusedElementwiseOp ? FusedElementwiseShapeFromOpKey(key)
                                                                              : VectorShapeFromOpKey(key));
    TF_ASSIGN_OR_RETURN(SearchSpace space, VectorTilingSpace(shape, soc));
    Config def = VectorConfigFromTiling(shape, VectorDefaultTiling(shape, soc));
    Status valid = space.Validate(def);
    if (!valid.ok()) return Internal(key.op_type + " default tiling is invalid (a bug): " + valid.message());
    TF_ASSIGN_OR_RETURN(ConfigIndex def_index, space.Encode(def));
    return TuningProblem{key, std::move(space), std::move(def), def_index};
  }
  std::string known;
  for (const auto& t : TunableOpTypes()) known += (known.empty() ? "" : ", ") + t;
  return InvalidArgument("op type '" + key.op_type + "' cannot be tuned yet (tunable: " + known + ")");
}

std::vector<std::string> TunableOpTypes() {
  std::vector<std::string> types = {"MatMul", "BatchMatMul", "Gemm", "Conv2D"};
  for (const std::string& t : VectorOpTypes()) types.push_back(t);
  for (const char* t : {"FusedMatMul", "FusedBatchMatMul", "FusedConv2D", kFusedElementwiseOp}) types.push_back(t);
  return types;
}

}  // namespace tunefleet
