// The closed-form timing model of Conv2D (NPU_MODEL.md "Conv2D"): the implicit-im2col
// GEMM on the MatMul model's cube core (cube_model_impl.h), with MTE2's A side reading
// the input feature map window of each L1 block (whole input rows with the kernel's
// halo, re-read by the next block: the overlap L1 does not reuse) instead of an [M, K]
// matrix. MTE1/CUBE/FIXPIPE work on the im2col tiles as in MatMul. Pure; any thread.
#pragma once

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/cube_model_impl.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// How MTE2 streams the input windows of `shape` under `tiling` (per group). A 1x1
// stride-1 unpadded conv gives exactly the A side of Conv2dGemm(shape) as a MatMul.
CubeASide Conv2dASide(const Conv2dShape& shape, const MatmulTiling& tiling, const SocSpec& soc);

// Latency and per-pipe busy time; compulsory bytes are x + weight + output once, flops
// 2*N*Ho*Wo*Cout*(Cin/groups)*kh*kw. kInvalidArgument only for tilings no space would
// produce (as EstimateMatmul); capacity limits are NOT checked here (sim::Simulate does).
Result<KernelEstimate> EstimateConv2d(const Conv2dShape& shape, const MatmulTiling& tiling,
                                      const SocSpec& soc);

}  // namespace tunefleet::sim
