// The pieces of MatMul's tiling space, for the ops that reuse it over an implicit GEMM
// (Conv2D's im2col view adds its own constraints to these). MatmulTilingSpace is
// exactly Create(MatmulTilingParameters, MatmulTilingConstraints). Private to common/.
#pragma once

#include <vector>

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet {

// kMatmulParams in order, with value lists trimmed to the shape.
std::vector<Parameter> MatmulTilingParameters(const MatmulShape& shape, const SocSpec& soc);
// CANN's TCubeTiling capacity and shape constraints; each reason names the buffer.
std::vector<SearchSpace::Constraint> MatmulTilingConstraints(const MatmulShape& shape,
                                                             const SocSpec& soc);

}  // namespace tunefleet
