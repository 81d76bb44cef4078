#include "tunefleet/common/conv2d_space.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>
#include <string>
#include <vector>

#include "matmul_space_impl.h"
#include "space_util.h"
#include "window_attrs.h"

namespace tunefleet {
namespace {

using namespace space_util;
using window_attrs::Pads;

std::string Str(int64_t v) { return std::to_string(v); }

Result<int64_t> ReadGroups(const OpKey& key) {
  auto it = key.attrs.find("groups");
  if (it == key.attrs.end()) return int64_t{1};
  TF_ASSIGN_OR_RETURN(std::vector<int64_t> g, ParseIntList(it->second, "Conv2D attr 'groups'", "32"));
  if (g.size() != 1 || g[0] <= 0) {
    return InvalidArgument("Conv2D attr 'groups' must be one positive integer, got '" + it->second + "'");
  }
  return g[0];
}

Status CheckDataFormat(const OpKey& key) {
  if (auto it = key.attrs.find("data_format"); it != key.attrs.end() && it->second != "NCHW") {
    return InvalidArgument("Conv2D attr 'data_format' must be NCHW, got '" + it->second + "'");
  }
  return Status::Ok();
}

}  // namespace

Status CanonicalConv2dAttrs(OpKey& key) {
  TF_RETURN_IF_ERROR(CheckDataFormat(key));
  key.attrs.erase("data_format");
  for (const char* name : {"strides", "dilations"}) {
    TF_ASSIGN_OR_RETURN(const window_attrs::Hw hw, window_attrs::ReadHw(key, name, 1, window_attrs::Hw{1, 1}));
    window_attrs::WriteHw(key, name, hw, 1);
  }
  TF_ASSIGN_OR_RETURN(const Pads pads, window_attrs::ReadPads(key));
  window_attrs::WritePads(key, pads);
  TF_ASSIGN_OR_RETURN(const int64_t groups, ReadGroups(key));
  key.attrs.erase("groups");
  if (groups != 1) key.attrs["groups"] = Str(groups);
  return Status::Ok();
}

Result<Conv2dShape> Conv2dShapeFromOpKey(const OpKey& key) {
  if (key.inputs.size() != 2 && key.inputs.size() != 3) {
    return InvalidArgument("Conv2D needs 2 or 3 inputs (x [N, Cin, H, W], weight "
                           "[Cout, Cin/groups, kh, kw] and an optional bias [Cout]), got " +
                           Str(static_cast<int64_t>(key.inputs.size())));
  }
  const TensorDesc& x = key.inputs[0];
  const TensorDesc& w = key.inputs[1];
  if (x.shape.size() != 4) {
    return InvalidArgument("Conv2D input 0 (x) must be 4-D [N, Cin, H, W], got " +
                           Str(static_cast<int64_t>(x.shape.size())) + " dimensions");
  }
  if (w.shape.size() != 4) {
    return InvalidArgument("Conv2D input 1 (weight) must be 4-D [Cout, Cin/groups, kh, kw], got " +
                           Str(static_cast<int64_t>(w.shape.size())) + " dimensions");
  }
  if (x.format != "ND" || w.format != "ND") {
    return InvalidArgument("Conv2D inputs must be in ND format (NCHW x, [Cout, Cin/g, kh, kw] weight)");
  }
  if (x.dtype != w.dtype) {
    return InvalidArgument("Conv2D x and weight must share a dtype, got " + x.dtype + " and " + w.dtype);
  }
  TF_ASSIGN_OR_RETURN(DType dt, ParseDType(x.dtype));
  if (dt == DType::kFloat32 || IsIndexDType(dt)) {
    return InvalidArgument("Conv2D on the cube takes float16, bfloat16 or int8 inputs, not " + x.dtype);
  }
  for (size_t i = 0; i < 4; ++i) {
    if (x.shape[i] <= 0 || w.shape[i] <= 0) {
      return InvalidArgument("Conv2D x and weight dimensions must be positive");
    }
  }
  TF_RETURN_IF_ERROR(CheckDataFormat(key));
  Conv2dShape s;
  s.in_dtype = dt;
  TF_ASSIGN_OR_RETURN(const DType out, CubeOutDType(key, dt));
  s.out_bytes = CubeOutBytes(dt, out);
  s.batch = x.shape[0];
  s.in_channels = x.shape[1];
  s.in_h = x.shape[2];
  s.in_w = x.shape[3];
  s.out_channels = w.shape[0];
  s.kernel_h = w.shape[2];
  s.kernel_w = w.shape[3];
  TF_ASSIGN_OR_RETURN(s.groups, ReadGroups(key));
  if (s.in_channels % s.groups != 0) {
    return InvalidArgument("Conv2D attr 'groups'=" + Str(s.groups) + " does not divide x's Cin=" +
                           Str(s.in_channels));
  }
  if (s.out_channels % s.groups != 0) {
    return InvalidArgument("Conv2D attr 'groups'=" + Str(s.groups) + " does not divide weight's Cout=" +
                           Str(s.out_channels));
  }
  if (w.shape[1] != s.in_channels / s.groups) {
    return InvalidArgument("Conv2D channel mismatch: weight dimension 1 is " + Str(w.shape[1]) +
                           " but x's Cin/groups is " + Str(s.in_channels) + "/" + Str(s.groups) +
                           " = " + Str(s.in_channels / s.groups));
  }
  if (key.inputs.size() == 3) {
    const TensorDesc& bias = key.inputs[2];
    if (bias.shape.size() != 1 || bias.shape[0] != s.out_channels) {
      return InvalidArgument("Conv2D input 2 (bias) must be [Cout] = [" + Str(s.out_channels) + "]");
    }
    TF_ASSIGN_OR_RETURN(DType bias_dtype, ParseDType(bias.dtype));
    if (IsIndexDType(bias_dtype)) {
      return InvalidArgument("Conv2D input 2 (bias) dtype " + bias.dtype + ": a bias is float16, bfloat16 or float32");
    }
    s.bias_bytes = DTypeBytes(bias_dtype);
  }
  TF_ASSIGN_OR_RETURN(const window_attrs::Hw stride, window_attrs::ReadHw(key, "strides", 1, window_attrs::Hw{1, 1}));
  TF_ASSIGN_OR_RETURN(const window_attrs::Hw dilation,
                      window_attrs::ReadHw(key, "dilations", 1, window_attrs::Hw{1, 1}));
  TF_ASSIGN_OR_RETURN(const Pads pads, window_attrs::ReadPads(key));
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.dilation_h = dilation[0];
  s.dilation_w = dilation[1];
  s.pad_top = pads[0];
  s.pad_bottom = pads[1];
  s.pad_left = pads[2];
  s.pad_right = pads[3];
  const int64_t span_h = s.in_h + s.pad_top + s.pad_bottom - s.KernelExtentH();
  const int64_t span_w = s.in_w + s.pad_left + s.pad_right - s.KernelExtentW();
  s.out_h = span_h < 0 ? 0 : span_h / s.stride_h + 1;
  s.out_w = span_w < 0 ? 0 : span_w / s.stride_w + 1;
  if (s.out_h <= 0 || s.out_w <= 0) {
    return InvalidArgument("Conv2D output size is " + Str(s.out_h) + "x" + Str(s.out_w) +
                           ": the kernel (with 'dilations') is larger than x's H/W plus 'pads'");
  }
  return s;
}

MatmulShape Conv2dGemm(const Conv2dShape& s) {
  MatmulShape g;
  g.batch = s.groups;
  g.m = s.batch * s.out_h * s.out_w;
  g.k = s.GroupInChannels() * s.kernel_h * s.kernel_w;
  g.n = s.GroupOutChannels();
  g.in_dtype = s.in_dtype;
  g.transpose_a = true;
  g.transpose_b = true;
  g.bias_bytes = s.bias_bytes;
  g.out_bytes = s.out_bytes;
  return g;
}

double Conv2dWindowPixels(const Conv2dShape& s, int64_t r) {
  const int64_t plane = s.out_h * s.out_w;
  const int64_t in_plane = s.in_h * s.in_w;
  if (r >= plane) {  // whole images; the division is exact when r is a multiple of plane
    return static_cast<double>(std::min(r, s.batch * plane) * in_plane) / static_cast<double>(plane);
  }
  if (r >= s.out_w) {
    // r / out_w output rows (fractional: the average over alignments) need
    // (rows - 1) * stride_h + kernel extent input rows of in_w pixels, at most the image.
    const int64_t num = ((r - s.out_w) * s.stride_h + s.KernelExtentH() * s.out_w) * s.in_w;
    return std::min(static_cast<double>(in_plane),
                    static_cast<double>(num) / static_cast<double>(s.out_w));
  }
  // Within one output row: a segment of kernel-extent input rows.
  return static_cast<double>(std::min(s.KernelExtentH(), s.in_h) *
                             std::min(s.in_w, (r - 1) * s.stride_w + s.KernelExtentW()));
}

int64_t Conv2dWindowPixelsMax(const Conv2dShape& s, int64_t r) {
  const int64_t plane = s.out_h * s.out_w;
  const int64_t in_plane = s.in_h * s.in_w;
  if (r >= plane) {  // whole images, plus one straddled
    return std::min(s.batch, CeilDiv(r - 1, plane) + 1) * in_plane;
  }
  if (r < s.out_w) {
    // A row segment, or two when it straddles a row (or image) boundary: each needs
    // kernel-extent rows of ((its pixels - 1) * stride + kernel extent) columns.
    const int64_t one = std::min(s.in_w, (r - 1) * s.stride_w + s.KernelExtentW());
    const int64_t two = r < 2 ? 0 : std::min(2 * s.in_w, (r - 2) * s.stride_w + 2 * s.KernelExtentW());
    return std::min(s.KernelExtentH(), s.in_h) * std::max(one, two);
  }
  // r pixels touch at most this many output rows (one more when they straddle a row),
  // and may straddle an image boundary, which costs a second kernel-extent halo.
  const int64_t out_rows = (r + s.out_w - 2) / s.out_w + 1;
  const int64_t extra_halo = std::max<int64_t>(0, s.KernelExtentH() - s.stride_h);
  const int64_t rows = (out_rows - 1) * s.stride_h + s.KernelExtentH() + extra_halo;
  return std::min(rows, std::min(s.batch, int64_t{2}) * s.in_h) * s.in_w;
}

int64_t Conv2dChannelLoadsPerPass(const Conv2dShape& s, int64_t k_chunk) {
  const int64_t khkw = s.kernel_h * s.kernel_w;
  const int64_t k = s.GroupInChannels() * khkw;
  const int64_t chunks = CeilDiv(k, k_chunk);
  // Boundary j*k_chunk falls between channels iff j is a multiple of khkw / gcd.
  const int64_t period = khkw / std::gcd(k_chunk, khkw);
  const int64_t aligned = (chunks - 1) / period;
  return s.GroupInChannels() + (chunks - 1) - aligned;
}

int64_t Conv2dChannelsPerChunkMax(const Conv2dShape& s, int64_t k_chunk) {
  const int64_t khkw = s.kernel_h * s.kernel_w;
  // Chunks start at multiples of k_chunk: aligned to channels when khkw divides it,
  // otherwise a chunk may start anywhere inside a channel.
  const int64_t most = k_chunk % khkw == 0 ? k_chunk / khkw : (k_chunk + 2 * khkw - 2) / khkw;
  return std::min(most, s.GroupInChannels());
}

int64_t Conv2dWindowL1Bytes(const Conv2dShape& s, const MatmulTiling& t) {
  return Conv2dChannelsPerChunkMax(s, t.step_ka * t.base_k) *
         Conv2dWindowPixelsMax(s, t.step_m * t.base_m) * DTypeBytes(s.in_dtype);
}

Result<SearchSpace> Conv2dTilingSpace(const Conv2dShape& shape, const SocSpec& soc) {
  const MatmulShape gemm = Conv2dGemm(shape);
  std::vector<SearchSpace::Constraint> constraints = MatmulTilingConstraints(gemm, soc);
  const int64_t l1_size = soc.l1_size;
  const int64_t in_bytes = DTypeBytes(shape.in_dtype);
  constraints.push_back(
      {"L1 capacity (input window)",
       [shape, l1_size, in_bytes](const SearchSpace&, const Config& c, std::string* why) -> bool {
         const MatmulTiling t = MatmulTilingFromConfig(c);
         const int64_t window = Conv2dWindowL1Bytes(shape, t);
         const int64_t b_chunk = t.step_kb * t.base_k * t.step_n * t.base_n * in_bytes;
         const int64_t bytes = 2 * (window + b_chunk);
         if (bytes <= l1_size) return true;
         return Violated(why, [&] { return "2*(input window of a stepM*baseM block for a stepKa*baseK chunk (" +
                Str(window) + " B) + stepKb*baseK*stepN*baseN*in_bytes) = " + Str(bytes) +
                " B exceeds l1_size " + Str(l1_size) + " B"; });
       }});
  return SearchSpace::Create(MatmulTilingParameters(gemm, soc), std::move(constraints));
}

Result<MatmulTiling> Conv2dDefaultTiling(const Conv2dShape& shape, const SocSpec& soc) {
  const MatmulShape gemm = Conv2dGemm(shape);
  TF_ASSIGN_OR_RETURN(SearchSpace space, Conv2dTilingSpace(shape, soc));
  const MatmulTiling start = MatmulDefaultTiling(gemm, soc);
  // Shrink what the window grows with: baseK (channels per chunk) first, then baseM
  // (output rows per block). Smaller base blocks only add blocks, so the usedCores of
  // the MatMul default still has work.
  for (int64_t base_m = start.base_m; base_m >= 16; base_m /= 2) {
    for (int64_t base_k = start.base_k; base_k >= 16; base_k /= 2) {
      MatmulTiling t = start;
      t.base_m = base_m;
      t.base_k = base_k;
      if (space.IsValid(MatmulConfigFromTiling(t))) return t;
    }
  }
  return InvalidArgument("Conv2D x's in_w=" + Str(shape.in_w) +
                         " is too wide: even a 16-pixel block's input rows do not fit l1_size " +
                         Str(soc.l1_size) + " B");
}

}  // namespace tunefleet
