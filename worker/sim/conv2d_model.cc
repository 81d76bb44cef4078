#include "worker/sim/conv2d_model.h"

#include <algorithm>
#include <cmath>

namespace tunefleet::sim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

CubeASide Conv2dASide(const Conv2dShape& shape, const MatmulTiling& t, const SocSpec& soc) {
  const MatmulShape gemm = Conv2dGemm(shape);
  const double in = DTypeBytes(shape.in_dtype);
  const int64_t tiles_m = CeilDiv(gemm.m, t.base_m);
  const int64_t blocks_m = CeilDiv(tiles_m, t.step_m);
  const int64_t block_rows = t.step_m * t.base_m;
  const int64_t rows_of[2] = {block_rows, gemm.m - (blocks_m - 1) * block_rows};
  // A pass over K loads, chunk by chunk, the window of every channel a chunk touches.
  const double loads = static_cast<double>(
      Conv2dChannelLoadsPerPass(shape, std::min(t.step_ka * t.base_k, gemm.k)));
  CubeASide a;
  for (int i = 0; i < 2; ++i) {
    const double window = Conv2dWindowPixels(shape, rows_of[i]);
    a.pass_bytes[i] = loads * window * in;
    // NCHW rows of a channel are contiguous; like a K-major MatMul A, the load to L1's
    // fractal layout cuts them into baseM-pixel bursts.
    a.pass_bursts[i] = loads * std::ceil(window / static_cast<double>(t.base_m));
  }
  // Channel planes are what the DMA strides over (a row of A^T in MatMul terms).
  a.misaligned = (shape.in_h * shape.in_w * DTypeBytes(shape.in_dtype)) % soc.ubblock_size != 0;
  a.total = static_cast<double>(shape.batch * shape.GroupInChannels() * shape.in_h * shape.in_w) * in;
  a.panel = static_cast<double>(shape.GroupInChannels()) *
            Conv2dWindowPixels(shape, std::min(gemm.m, block_rows)) * in;
  return a;
}

Result<KernelEstimate> EstimateConv2d(const Conv2dShape& shape, const MatmulTiling& t,
                                      const SocSpec& soc) {
  if (shape.out_h <= 0 || shape.out_w <= 0 || shape.groups <= 0 || shape.in_h <= 0 ||
      shape.in_w <= 0 || shape.stride_h <= 0 || shape.stride_w <= 0) {
    return InvalidArgument("Conv2D shape is not one Conv2dShapeFromOpKey would produce");
  }
  const MatmulShape gemm = Conv2dGemm(shape);
  TF_RETURN_IF_ERROR(CheckCubeTiling(gemm, t));
  const CubeASide a = Conv2dASide(shape, t, soc);
  return EstimateCube(gemm, t, &a, soc);
}

}  // namespace tunefleet::sim
