// Conv2D's tuning problem (NPU_MODEL.md "Conv2D"): the shape and attributes read from an
// op key, the implicit-im2col view onto the MatMul space (M = N*Ho*Wo, K = Cin/g*kh*kw,
// N = Cout/g, groups as the batch), the input-feature-map window an L1 A block needs
// (rows incl. halo) — shared by the L1 constraint and the timing model — and the default
// tiling. Plain values and pure functions; any thread.
#pragma once

#include <cstdint>

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

// x [N, Cin, H, W] (NCHW, ND in GM) convolved with weight [Cout, Cin/groups, kh, kw],
// plus an optional bias [Cout] that FIXPIPE adds.
struct Conv2dShape {
  int64_t batch = 1, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  DType in_dtype = DType::kFloat16;  // x and weight; accumulation in fp32 (int8: int32)
  int64_t bias_bytes = 0;            // bytes per element of the bias; 0 = no bias
  int64_t out_bytes = 4;             // per output element (CubeOutBytes; matmul_space.h)
  int64_t out_h = 0, out_w = 0;      // derived by Conv2dShapeFromOpKey

  int64_t GroupInChannels() const { return in_channels / groups; }
  int64_t GroupOutChannels() const { return out_channels / groups; }
  int64_t KernelExtentH() const { return (kernel_h - 1) * dilation_h + 1; }
  int64_t KernelExtentW() const { return (kernel_w - 1) * dilation_w + 1; }
};

// Reads Conv2D from an op key: inputs x and weight (same dtype: float16, bfloat16 or
// int8) and an optional bias [Cout] (any dtype), attrs "strides" (1 or 2 values, or 4 in NCHW order with 1 for N and C),
// "pads" (1 value, 2 = [h, w], or 4 = [top, bottom, left, right] as CANN's Conv2D),
// "dilations" (like strides), "groups" (default 1), "data_format" (NCHW only). List
// attrs are strings such as "2,2" or "[1, 1]". kInvalidArgument naming the field for a
// channel mismatch, groups that do not divide the channels, an output size <= 0, etc.
Result<Conv2dShape> Conv2dShapeFromOpKey(const OpKey& key);

// Rewrites key's Conv2D attrs (FusedConv2D's too) in one spelling each, so spellings of
// the same conv share one op key: strides and dilations "h,w", pads "top,bottom,left,right",
// groups one integer, each left out at its default (1,1 / 0 / 1), data_format left out
// (NCHW is the only one). The errors of Conv2dShapeFromOpKey for an attr it cannot read.
Status CanonicalConv2dAttrs(OpKey& key);

// The implicit im2col GEMM: A [M, K] is read K-major (NCHW keeps a channel's pixels
// contiguous, so transpose_a), B is the weight [N, K] (transpose_b), batch = groups.
MatmulShape Conv2dGemm(const Conv2dShape& shape);

// Input pixels of one channel (one group's channel of the images the block touches)
// that MTE2 loads for `out_pixels` consecutive output pixels: whole input rows with the
// kernel's halo once the block spans an output row, a row segment below that. Average
// over block alignments (for traffic); exact for a 1x1 stride-1 unpadded conv
// (= out_pixels). Requires out_pixels > 0.
double Conv2dWindowPixels(const Conv2dShape& shape, int64_t out_pixels);
// The largest such window over alignments (a segment split by a row boundary; whole
// rows straddling one more output row or image): what an L1 buffer must be sized for.
int64_t Conv2dWindowPixelsMax(const Conv2dShape& shape, int64_t out_pixels);
// Channel loads one full pass over K costs when K (ordered cin, kh, kw) is cut into
// chunks of k_chunk: every chunk loads the window of each channel it touches, so a
// channel split by a chunk boundary is loaded twice. >= GroupInChannels().
int64_t Conv2dChannelLoadsPerPass(const Conv2dShape& shape, int64_t k_chunk);
// The most channels one chunk of k_chunk K-elements touches.
int64_t Conv2dChannelsPerChunkMax(const Conv2dShape& shape, int64_t k_chunk);
// L1 bytes of one A buffer: the window of the channels one stepKa*baseK chunk touches,
// for a stepM*baseM block (not ping-ponged; the constraint doubles it).
int64_t Conv2dWindowL1Bytes(const Conv2dShape& shape, const MatmulTiling& tiling);

// The MatMul space of Conv2dGemm(shape) with one more constraint: 2 x (input window +
// stepKb*baseK*stepN*baseN*in_bytes) <= l1_size ("L1 capacity (input window)").
Result<SearchSpace> Conv2dTilingSpace(const Conv2dShape& shape, const SocSpec& soc);
// CANN-like heuristic: MatmulDefaultTiling of the GEMM, shrunk (baseK, then baseM) until
// the input window fits L1. kInvalidArgument naming in_w when not even the smallest
// tiling fits (an input row too wide for L1).
Result<MatmulTiling> Conv2dDefaultTiling(const Conv2dShape& shape, const SocSpec& soc);

}  // namespace tunefleet
