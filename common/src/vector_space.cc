#include "tunefleet/common/vector_space.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <numeric>

#include "space_util.h"
#include "window_attrs.h"

namespace tunefleet {
namespace {

using namespace space_util;

struct OpInfo {
  const char* name;
  VectorOp op;
  VectorFamily family;
  int inputs;     // required inputs; 0: two or more (Concat)
  int temps;      // intermediate compute-dtype buffers of the op itself
  bool int8_ok;   // the op accepts int8 (computed in fp16 after a cast)
  bool indices_ok = false;  // it also computes on int32 and int64 (index arithmetic, below)
};

// Rope (rotary position embedding, x * cos + rotate_half(x) * sin over x's last axis,
// rotate_half(x) = [-x2, x1] of its halves x1, x2): inputs x, cos, sin; its temp holds the
// rotated half's product before the add.
// Where (select, ONNX's Where, CANN's Select): inputs condition, x, y; the condition is a
// bool tensor, one byte an element, declared int8 (graphs carry no bool), and charged at the
// data's width like the other inputs (docs/architecture.md).
// Concat (CANN's ConcatD): its inputs, equal but on attrs.axis, copied into one output
// through UB (MTE2 in, MTE3 out, no vector instruction); it reads as many elements as it
// writes, so it is timed as one full input of the output's elements, read in bursts of
// its contiguous pieces (an input's elements from the axis on; their mean).
// Silu (x * sigmoid(x), CANN's Swish with scale 1; Llama's MLP and EfficientNet's
// activation, which PyTorch exports as a Sigmoid and a Mul): its temp keeps x beside the
// sigmoid.
// HardSigmoid and HardSwish (CANN's HardSigmoid and HardSwish; MobileNetV3's gate and
// activation): max(0, min(1, alpha x + beta)) and x times it, alpha and beta left out of
// the key (they leave the cost alone). Sin and Cos (a diffusion model's timestep embedding,
// sinusoidal positions computed at run time): a range reduction and a polynomial.
// LeakyRelu (CANN's LeakyRelu; a GAN discriminator's and YOLOv3/v4's activation): max(x,
// alpha x), its temp alpha x; Elu: x where positive, alpha (exp(x) - 1) elsewhere, its temp
// exp(x); Softplus (log(1 + exp(x)); Mish's inner op, which exports as Softplus, Tanh,
// Mul); Abs and Log; Max and Min of two inputs (ONNX's two-input Max and Min, CANN's
// Maximum and Minimum; broadcast as Add); PRelu (x where positive, slope x elsewhere, the
// slope a per-channel input broadcast over x; its temp slope x). alpha is left out of the
// key (it leaves the cost alone).
// Clip (ONNX's Clip, CANN's ClipByValue; MobileNet's ReLU6): x bounded below and above by
// constants, which leave its cost alone and are not part of its key.
// MaxPool (CANN's MaxPoolV3, ONNX's MaxPool): x [N, C, H, W], attrs kernel_shape "kh,kw",
// strides "sh,sw" (default 1,1) and pads "top,bottom,left,right" (default 0, each below
// the kernel: a window holds at least one element of x); output [N, C, Ho, Wo], rounded
// down. A tile of output elements reads their windows' rows of x once (rows shared with
// the next tile are not charged again), and takes kh*kw vmax an element. AveragePool
// (CANN's AvgPoolV2, ONNX's AveragePool; DenseNet's transitions): the same windows, a
// vadd per window element and a vmuls by the reciprocal of its count; with attrs
// divisor_override 1 (torch's, aclnnAvgPool2d's divisorOverride) it divides by 1, a sum
// pool without the vmuls (a ReduceSum over axes before the last: a sentence embedding's
// masked sum over the sequence).
// DepthwiseConv2D (CANN's DepthwiseConv2D, ONNX's Conv with group = C_in = C_out:
// MobileNet's and EfficientNet's 3x3 and 5x5 per-channel convolutions): x [N, C, H, W],
// filter [C, 1, kh, kw] and an optional bias [C]; strides, pads and dilations as
// Conv2D's. Each output channel reads one input channel, so there is no reduction over
// channels for the cube to do: it is timed on the vector unit like a pooling's windows,
// a multiply-accumulate (vmla) per window element and a vadd of the bias, the filter
// and bias read as broadcast inputs (docs/architecture.md). attrs.epilogue "Clip" (or
// "Relu", "Gelu,..." : unary element-wise ops in order) applies them to each output in UB
// before it is written, as CANN fuses MobileNet's ReLU6 into it.
// Gather (CANN's GatherV2 on axis 0, ONNX's Gather, torch's nn.Embedding: a model's token
// embedding): the rows of a table [rows, cols] that int32 or int64 indices of any shape
// pick; output [indices..., cols]. A copy through UB as Concat's: each output row a burst
// read from wherever its row lies in the table (HBM: a lookup rarely repeats within a tile),
// its index read beside it, no vector instruction.
// Resize (CANN's ResizeNearestNeighborV2 and ResizeBilinearV2, ONNX's Resize, torch's
// nn.Upsample and interpolate: a feature pyramid's and a U-Net's upsampling): x [N, C, H,
// W] to [N, C, Ho, Wo], attrs sizes "Ho,Wo" (required) and mode "nearest" (default) or
// "linear". Element-wise over its output, each output row read from one input row
// (nearest) or two (linear) in a burst: a tile reads its share of the input, all of it
// when it grows (x2: a quarter of the output's elements), at most what it picks when it
// shrinks. Nearest copies (no vector instruction); linear blends two rows and two columns:
// per output element a vsub, vmul, vadd along W and again along H = 6.
// Pad (CANN's PadV3, ONNX's Pad, torch's F.pad and ReflectionPad2d: a GAN's or a
// style-transfer net's reflect padding, a padding no convolution reads alone): x [N, C, H,
// W] grown by attrs.pads [top, bottom, left, right] (window_attrs.h), attrs.mode
// "constant" (default), "reflect" or "edge", and attrs.interior [h, w] zeros between
// neighbouring rows and columns (a transposed convolution's input dilated by its stride,
// constant mode only). A copy as a nearest Resize's: each output row a burst from one
// input row, a tile reading its share of the input once; the padding's values are written
// beside them, no vector instruction.
// InstanceNorm (CANN's InstanceNorm, ONNX's InstanceNormalization, torch's InstanceNorm2d,
// and GroupNorm as torch exports it: an InstanceNormalization of x viewed [N, G, -1]): x
// [N, C, spatial...] normalised over its spatial axes per (n, c), then scaled and shifted by
// scale [C] and bias [C]. Row-wise with a row per (n, c) of the spatial elements; per row
// y = x * a + b, a = scale * rstd and b = bias - mean * a (2 instructions an element after
// the statistics' 3), its scale and bias two scalars a row. attrs.epilogue: unary ops
// applied to y in UB before it is written (a CycleGAN block's ReLU, a GroupNorm's SiLU, as
// CANN's GroupNormSilu runs them), their instructions added, as DepthwiseConv2D's.
// Temps: Gelu keeps x^3 / the exponent beside the output; Tanh keeps exp(2x)+1 for the
// division; Softmax keeps exp(x - max) until the sum is known; LayerNorm keeps x - mean;
// RmsNorm keeps x^2 for the sum.
// Index arithmetic (RoBERTa's position ids from its token ids: ids.ne(pad), a cumsum over
// the sequence, times the mask, plus pad): Add, Sub and Mul also compute on int32 and int64
// (the vector unit's integer vadd and vmul, int64 at 8 bytes an element); Equal (ONNX's
// Equal, CANN's Equal) compares two inputs of one dtype into a bool, int8, output; Not
// (ONNX's Not, CANN's LogicalNot) negates a bool; Cast also turns a bool into int32 or
// int64 and int32 and int64 into each other. CumSum (ONNX's CumSum, CANN's Cumsum) is
// row-wise: the running sum along the last axis, of float or integer rows, as a scan of
// ceil(log2(cols)) vadds of the row shifted by 1, 2, 4, ... (Hillis and Steele's).
// ReduceMax and ReduceMin (ONNX's, CANN's ReduceMaxD and ReduceMinD over the last axis: a
// point cloud's or a sentence embedding's max pooling, torch's amax): a running vmax or vmin
// an element, [rows, 1].
// ReduceL2 (ONNX's ReduceL2 over the last axis, torch's F.normalize's norm; CANN's LpNormV2
// with p 2): sqrt of a row's sum of squares, [rows, 1]; its temp keeps x^2 for the sum.
constexpr OpInfo kOps[] = {
    {"Add", VectorOp::kAdd, VectorFamily::kElementwise, 2, 0, true, true},
    {"Sub", VectorOp::kSub, VectorFamily::kElementwise, 2, 0, true, true},
    {"Mul", VectorOp::kMul, VectorFamily::kElementwise, 2, 0, true, true},
    {"Div", VectorOp::kDiv, VectorFamily::kElementwise, 2, 0, false},
    {"Relu", VectorOp::kRelu, VectorFamily::kElementwise, 1, 0, true},
    {"Gelu", VectorOp::kGelu, VectorFamily::kElementwise, 1, 1, false},
    {"Sigmoid", VectorOp::kSigmoid, VectorFamily::kElementwise, 1, 0, false},
    {"Silu", VectorOp::kSilu, VectorFamily::kElementwise, 1, 1, false},
    {"HardSigmoid", VectorOp::kHardSigmoid, VectorFamily::kElementwise, 1, 0, false},
    {"HardSwish", VectorOp::kHardSwish, VectorFamily::kElementwise, 1, 1, false},
    {"Sin", VectorOp::kSin, VectorFamily::kElementwise, 1, 1, false},
    {"Cos", VectorOp::kCos, VectorFamily::kElementwise, 1, 1, false},
    {"Equal", VectorOp::kEqual, VectorFamily::kElementwise, 2, 0, true, true},
    {"Not", VectorOp::kNot, VectorFamily::kElementwise, 1, 0, true},
    {"Tanh", VectorOp::kTanh, VectorFamily::kElementwise, 1, 1, false},
    {"LeakyRelu", VectorOp::kLeakyRelu, VectorFamily::kElementwise, 1, 1, false},
    {"Elu", VectorOp::kElu, VectorFamily::kElementwise, 1, 1, false},
    {"Softplus", VectorOp::kSoftplus, VectorFamily::kElementwise, 1, 0, false},
    {"Abs", VectorOp::kAbs, VectorFamily::kElementwise, 1, 0, false},
    {"Log", VectorOp::kLog, VectorFamily::kElementwise, 1, 0, false},
    {"Max", VectorOp::kMax, VectorFamily::kElementwise, 2, 0, false},
    {"Min", VectorOp::kMin, VectorFamily::kElementwise, 2, 0, false},
    {"PRelu", VectorOp::kPRelu, VectorFamily::kElementwise, 2, 1, false},
    {"Exp", VectorOp::kExp, VectorFamily::kElementwise, 1, 0, false},
    {"Cast", VectorOp::kCast, VectorFamily::kElementwise, 1, 0, true},
    {"FusedMulAdd", VectorOp::kFusedMulAdd, VectorFamily::kElementwise, 3, 0, false},
    {"Rope", VectorOp::kRope, VectorFamily::kElementwise, 3, 1, false},
    {"Where", VectorOp::kWhere, VectorFamily::kElementwise, 3, 0, false},
    {"Concat", VectorOp::kConcat, VectorFamily::kElementwise, 0, 0, true},
    {"MaxPool", VectorOp::kMaxPool, VectorFamily::kElementwise, 1, 0, false},
    {"AveragePool", VectorOp::kAvgPool, VectorFamily::kElementwise, 1, 0, false},
    {"Clip", VectorOp::kClip, VectorFamily::kElementwise, 1, 0, true},
    {"DepthwiseConv2D", VectorOp::kDepthwiseConv, VectorFamily::kElementwise, 2, 0, true},
    {"Gather", VectorOp::kGather, VectorFamily::kElementwise, 2, 0, true},
    {"Resize", VectorOp::kResize, VectorFamily::kElementwise, 1, 0, false},
    {"Pad", VectorOp::kPad, VectorFamily::kElementwise, 1, 0, true},
    {"Softmax", VectorOp::kSoftmax, VectorFamily::kRowwise, 1, 1, false},
    {"LayerNorm", VectorOp::kLayerNorm, VectorFamily::kRowwise, 3, 1, false},
    {"RmsNorm", VectorOp::kRmsNorm, VectorFamily::kRowwise, 2, 1, false},
    {"InstanceNorm", VectorOp::kInstanceNorm, VectorFamily::kRowwise, 3, 1, false},
    {"ReduceSum", VectorOp::kReduceSum, VectorFamily::kRowwise, 1, 0, false},
    {"ReduceMean", VectorOp::kReduceMean, VectorFamily::kRowwise, 1, 0, false},
    {"ReduceL2", VectorOp::kReduceL2, VectorFamily::kRowwise, 1, 1, false},
    {"ReduceMax", VectorOp::kReduceMax, VectorFamily::kRowwise, 1, 0, false},
    {"ReduceMin", VectorOp::kReduceMin, VectorFamily::kRowwise, 1, 0, false},
    {"CumSum", VectorOp::kCumSum, VectorFamily::kRowwise, 1, 0, false, true},
    {"Transpose", VectorOp::kTranspose, VectorFamily::kTranspose, 1, 0, true},
};

const OpInfo* FindOp(std::string_view name) {
  for (const OpInfo& o : kOps) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

// An attribute naming an axis must name the last one (the only reduction axis modelled).
Status CheckLastAxis(const OpKey& key, const char* attr, size_t rank) {
  auto it = key.attrs.find(attr);
  if (it == key.attrs.end()) return Status::Ok();
  const std::string& v = it->second;
  if (v == "-1" || v == N(static_cast<int64_t>(rank) - 1) || v == "[-1]") return Status::Ok();
  return InvalidArgument(key.op_type + " attrs." + attr + "='" + v +
                         "': only the last axis is supported (-1 or " + N(static_cast<int64_t>(rank) - 1) + ")");
}

// Concat's attrs.axis (required; negative counts from the end) of its inputs' rank.
Result<size_t> ConcatAxis(const OpKey& key) {
  auto it = key.attrs.find("axis");
  const int64_t rank = static_cast<int64_t>(key.inputs[0].shape.size());
  int64_t axis = 0;
  if (it == key.attrs.end() ||
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), axis).ptr !=
          it->second.data() + it->second.size() ||
      it->second.empty() || axis < -rank || axis >= rank) {
    return InvalidArgument("Concat needs attrs.axis, the axis its inputs are joined on: an integer in [" +
                           N(-rank) + ", " + N(rank - 1) + "]" +
                           (it == key.attrs.end() ? std::string() : ", got '" + it->second + "'"));
  }
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

// The vector unit computes bf16 in fp32 and int8 in fp16 (no bf16/int8 arithmetic):
// one cast temp per input.
void SetCompute(VectorShape& s, int inputs) {
  if (s.dtype == DType::kBFloat16) {
    s.compute_dtype = DType::kFloat32;
    s.temps += inputs;
  } else if (s.dtype == DType::kInt8) {
    s.compute_dtype = DType::kFloat16;
    s.temps += inputs;
  } else {
    s.compute_dtype = s.dtype;
  }
}

Status CheckCastPair(const OpKey& key, DType from, DType to) {
  auto is = [&](DType a, DType b) { return (from == a && to == b) || (from == b && to == a); };
  if (is(DType::kFloat16, DType::kFloat32) || is(DType::kBFloat16, DType::kFloat32) ||
      is(DType::kFloat16, DType::kBFloat16) || is(DType::kFloat16, DType::kInt8) ||
      (IsIndexDType(from) && (to == DType::kFloat16 || to == DType::kFloat32)) ||
      ((from == DType::kInt8 || IsIndexDType(from)) && IsIndexDType(to))) {  // a bool or an index into an index
    return Status::Ok();
  }
  if (IsIndexDType(to)) {
    return InvalidArgument(key.op_type + " attrs.dst_type: cannot cast " + std::string(DTypeName(from)) + " to " +
                           std::string(DTypeName(to)) +
                           ": " + kIndexDTypeRule);
  }
  return InvalidArgument(key.op_type + " attrs.dst_type: cannot cast " + std::string(DTypeName(from)) +
                         " to " + std::string(DTypeName(to)) +
                         " (supported: float16<->float32, bfloat16<->float32, float16<->bfloat16, float16<->int8, "
                         "int32 or int64 -> float16 or float32)");
}

std::vector<int64_t> CoreValues(const SocSpec& soc) {
  std::vector<int64_t> cores;
  for (int64_t c : {1, 2, 4, 8, 16, 24, 32, 40, 48}) {
    if (c < soc.vector_core_cnt) cores.push_back(c);
  }
  cores.push_back(soc.vector_core_cnt);
  return cores;
}

// Values of a list up to the first one >= cap (larger ones only add empty tile space).
std::vector<int64_t> UpTo(std::vector<int64_t> all, int64_t cap) {
  std::sort(all.begin(), all.end());
  std::vector<int64_t> out;
  for (int64_t v : all) {
    out.push_back(v);
    if (v >= cap) break;
  }
  return out;
}

std::vector<int64_t> TileLengthValues(int64_t elements) {
  std::vector<int64_t> all;
  for (int64_t v = 8; v <= 65536; v *= 2) all.push_back(v);
  for (int64_t v = 96; v <= 49152; v *= 2) all.push_back(v);
  // At least 32 so every dtype has an aligned value.
  return UpTo(std::move(all), std::max<int64_t>(elements, 32));
}

// Rope's tile lengths: whole rotary rows (both halves of a row in one tile), doubling.
std::vector<int64_t> RotaryTileLengthValues(int64_t cols, int64_t elements) {
  std::vector<int64_t> all;
  for (int64_t v = cols; v <= 65536; v *= 2) all.push_back(v);
  return UpTo(std::move(all), std::max<int64_t>(elements, 32));
}

std::vector<int64_t> RowsPerTileValues(int64_t rows) {
  std::vector<int64_t> all;
  for (int64_t v = 1; v <= 4096; v *= 2) all.push_back(v);
  return UpTo(std::move(all), rows);
}

std::vector<int64_t> TransposeTileValues(int64_t dim) {
  return UpTo({8, 16, 32, 64, 128, 256, 512}, std::max<int64_t>(dim, 32));
}

int64_t ElementwiseBytesPerElement(const VectorShape& s) {
  // A Resize's input rows of a tile are at most a tile's elements (when it grows, fewer).
  const int inputs = s.full_inputs + s.broadcast_inputs + (s.source_elements > 0 ? 1 : 0);
  return static_cast<int64_t>(inputs) * DTypeBytes(s.dtype) +
         DTypeBytes(s.out_dtype) + static_cast<int64_t>(s.temps) * DTypeBytes(s.compute_dtype);
}

// Row-wise per-row UB bytes of inputs, outputs and temps (each padded to ubblock_size),
// without the per-tile reduction output and the resident gamma/beta.
int64_t RowwiseRowBytes(const VectorShape& s, int64_t align) {
  const int64_t in = RoundUp(s.cols * DTypeBytes(s.dtype), align);
  const int64_t out = IsReduce(s) ? 0 : RoundUp(s.cols * DTypeBytes(s.out_dtype), align);
  const int64_t tmp = s.temps * RoundUp(s.cols * DTypeBytes(s.compute_dtype), align);
  return in + out + tmp;
}

// A depthwise convolution's kernel [kh, kw], from its filter [C, 1, kh, kw] and optional
// bias [C]; each other than x counts as a broadcast input of `s`.
Result<window_attrs::Hw> DepthwiseKernel(const OpKey& key, VectorShape& s) {
  const std::vector<int64_t>& x = key.inputs[0].shape;
  const std::vector<int64_t>& f = key.inputs[1].shape;
  if (f.size() != 4 || f[0] != x[1] || f[1] != 1) {
    return InvalidArgument("DepthwiseConv2D input 1 (filter) shape " + ShapeText(f) + " must be [C, 1, kh, kw] = [" +
                           N(x[1]) + ", 1, kh, kw]: one filter per channel of x (a channel multiplier other than 1 "
                           "is a grouped Conv2D)");
  }
  if (f[2] > window_attrs::kMaxWindowAttr || f[3] > window_attrs::kMaxWindowAttr) {
    return InvalidArgument("DepthwiseConv2D filter " + ShapeText(f) + " is larger than " +
                           N(window_attrs::kMaxWindowAttr) + " on H or W");
  }
  if (key.inputs.size() == 3 && key.inputs[2].shape != std::vector<int64_t>{x[1]}) {
    return InvalidArgument("DepthwiseConv2D input 2 (bias) shape " + ShapeText(key.inputs[2].shape) + " must be [C] = [" +
                           N(x[1]) + "]");
  }
  for (size_t i = 1; i < key.inputs.size(); ++i) {
    ++s.broadcast_inputs;
    s.broadcast_elements += Elements(key.inputs[i].shape);
  }
  return window_attrs::Hw{f[2], f[3]};
}

// DepthwiseConv2D's and InstanceNorm's attrs.epilogue: unary element-wise ops, "Clip" or
// "Relu,Sigmoid", and last Quantize, the value written as int8 (a vconv: CANN's
// AscendQuant fused into the op); LayerNorm's and RmsNorm's (`quantize_only`) Quantize
// alone, as CANN's LayerNormQuant and RmsNormQuant.
Status ReadUnaryEpilogue(const OpKey& key, VectorShape& s, bool quantize_only = false) {
  const auto it = key.attrs.find("epilogue");
  if (it == key.attrs.end()) return Status::Ok();
  int temps = 0;
  bool quantized = false;
  for (const std::string& name : SplitCommas(it->second)) {
    if (quantized) {
      return InvalidArgument(key.op_type + " attr 'epilogue' '" + it->second +
                             "': Quantize writes the int8 output, so it is the epilogue's last op");
    }
    if (name == "Quantize") {
      s.epilogue.push_back(VectorOp::kCast);
      s.out_dtype = DType::kInt8;
      quantized = true;
      continue;
    }
    if (quantize_only) {
      return InvalidArgument(key.op_type + " attr 'epilogue' '" + it->second + "': " + key.op_type +
                             " takes Quantize alone (its output written as int8)");
    }
    const OpInfo* o = FindOp(name);
    if (o == nullptr || !IsUnaryEpilogueOp(name)) {
      return InvalidArgument(key.op_type + " attr 'epilogue' op '" + name +
                             "' is not a unary element-wise op (Relu, Clip, Gelu, Sigmoid, Silu, Tanh, Exp, "
                             "HardSigmoid, HardSwish, LeakyRelu; last Quantize), in "
                             "'" + it->second + "'");
    }
    s.epilogue.push_back(o->op);
    temps = std::max(temps, o->temps);
  }
  s.temps += temps;
  return Status::Ok();
}

// Gather: input 0 the table [rows, cols], input 1 the indices (int32 or int64).
Result<VectorShape> GatherShape(const OpKey& key, VectorShape s) {
  const TensorDesc& table = key.inputs[0];
  const TensorDesc& indices = key.inputs[1];
  if (table.shape.size() != 2) {
    return InvalidArgument("Gather input 0 (the table) shape " + ShapeText(table.shape) +
                           ": a table is [rows, cols] (an embedding's [vocabulary, hidden])");
  }
  if (auto it = key.attrs.find("axis"); it != key.attrs.end() && it->second != "0") {
    return InvalidArgument("Gather attrs.axis='" + it->second + "': only rows of the table are gathered (axis 0)");
  }
  TF_ASSIGN_OR_RETURN(const DType index, ParseDType(indices.dtype));
  if (!IsIndexDType(index)) {
    return InvalidArgument("Gather input 1 (the indices) dtype " + indices.dtype + ": indices are int32 or int64");
  }
  TF_ASSIGN_OR_RETURN(s.dtype, ParseDType(table.dtype));
  if (IsIndexDType(s.dtype)) {
    return InvalidArgument("Gather input 0 (the table) dtype " + table.dtype +
                           ": a table is float16, bfloat16, float32 or int8");
  }
  s.out_dtype = s.compute_dtype = s.dtype;  // copied, not computed
  s.cols = table.shape[1];
  const int64_t rows = Elements(indices.shape);
  if (rows > kMaxTensorElements / s.cols) {
    return InvalidArgument("Gather output " + ShapeText(indices.shape) + " x " + N(s.cols) +
                           " holds more than 2^50 elements");
  }
  s.elements = rows * s.cols;
  s.full_inputs = 1;  // the rows it reads are as many elements as it writes
  s.index_bytes = DTypeBytes(index);
  return s;
}

// Resize: x [N, C, H, W] to attrs.sizes [Ho, Wo] by attrs.mode.
Result<VectorShape> ResizeShape(const OpKey& key, VectorShape s) {
  const std::vector<int64_t>& x = key.inputs[0].shape;
  if (x.size() != 4) {
    return InvalidArgument("Resize input 0 shape " + ShapeText(x) + ": a 2-D resize takes x as [N, C, H, W]");
  }
  TF_ASSIGN_OR_RETURN(const window_attrs::Hw out, window_attrs::ReadHw(key, "sizes", 1, std::nullopt, "112,112"));
  int rows_read = 1;  // input rows an output row blends
  if (auto it = key.attrs.find("mode"); it != key.attrs.end() && it->second != "nearest") {
    if (it->second != "linear") {
      return InvalidArgument("Resize attrs.mode='" + it->second + "': nearest or linear (bilinear over H and W)");
    }
    s.temps = 1;  // the blended row beside the output
    rows_read = 2;
  }
  s.elements = x[0] * x[1] * out[0] * out[1];
  s.window = rows_read * rows_read;
  s.source_elements = std::min(Elements(x), s.elements * s.window);
  s.cols = out[1];
  if (rows_read == 1) {
    s.compute_dtype = s.dtype;  // copied, not computed
  } else {
    SetCompute(s, 1);
  }
  return s;
}

// Pad: x [N, C, H, W] grown by attrs.pads and attrs.interior in attrs.mode.
Result<VectorShape> PadShape(const OpKey& key, VectorShape s) {
  const std::vector<int64_t>& x = key.inputs[0].shape;
  if (x.size() != 4) {
    return InvalidArgument("Pad input 0 shape " + ShapeText(x) + ": a 2-D padding takes x as [N, C, H, W]");
  }
  TF_ASSIGN_OR_RETURN(const window_attrs::Pads pads, window_attrs::ReadPads(key));
  TF_ASSIGN_OR_RETURN(const window_attrs::Hw interior, window_attrs::ReadHw(key, "interior", 0, window_attrs::Hw{0, 0}));
  const auto mode = key.attrs.find("mode");
  if (mode != key.attrs.end() && mode->second != "constant" && mode->second != "reflect" && mode->second != "edge") {
    return InvalidArgument("Pad attrs.mode='" + mode->second + "': constant, reflect or edge");
  }
  if (mode != key.attrs.end() && mode->second != "constant" && (interior[0] > 0 || interior[1] > 0)) {
    return InvalidArgument("Pad attrs.interior with attrs.mode='" + mode->second +
                           "': zeros between elements (a transposed convolution's dilated input) are constant only");
  }
  // ONNX's reflect mirrors without the border row: it needs more rows than it adds.
  if (mode != key.attrs.end() && mode->second == "reflect" &&
      (std::max(pads[0], pads[1]) >= x[2] || std::max(pads[2], pads[3]) >= x[3])) {
    return InvalidArgument("Pad attrs.pads " + N(pads[0]) + "," + N(pads[1]) + "," + N(pads[2]) + "," + N(pads[3]) +
                           ": a reflect padding must be smaller than the axis it mirrors (" + ShapeText(x) + ")");
  }
  const int64_t h = x[2] + (x[2] - 1) * interior[0] + pads[0] + pads[1];
  const int64_t w = x[3] + (x[3] - 1) * interior[1] + pads[2] + pads[3];
  if (static_cast<double>(x[0]) * static_cast<double>(x[1]) * static_cast<double>(h) * static_cast<double>(w) >
      static_cast<double>(kMaxTensorElements)) {
    return InvalidArgument("Pad output of " + ShapeText(x) + " padded holds more than 2^50 elements");
  }
  s.elements = x[0] * x[1] * h * w;
  s.window = 1;
  s.source_elements = Elements(x);
  s.cols = w;
  s.compute_dtype = s.dtype;  // copied, not computed
  return s;
}

// InstanceNorm: x [N, C, spatial...], scale [C], bias [C]; a row per (n, c). Fused with a
// GroupNorm's affine (graph_fusion.h), x is [N, G, ...] and scale or bias a value per
// channel of the tensor before its view, k * G of them: k channels of a row each its own.
Result<VectorShape> InstanceNormShape(const OpKey& key, VectorShape s) {
  const std::vector<int64_t>& x = key.inputs[0].shape;
  if (x.size() < 3) {
    return InvalidArgument("InstanceNorm input 0 shape " + ShapeText(x) +
                           ": x is [N, C, spatial...], normalised over the spatial axes");
  }
  s.rows = x[0] * x[1];
  s.cols = Elements(x) / s.rows;
  for (size_t i = 1; i <= 2; ++i) {
    const std::vector<int64_t>& p = key.inputs[i].shape;
    const int64_t values = Elements(p);
    const bool one_axis = std::count_if(p.begin(), p.end(), [](int64_t d) { return d != 1; }) <= 1;
    if (!one_axis || values % x[1] != 0 || s.cols % (values / x[1]) != 0) {
      return InvalidArgument("InstanceNorm input " + N(static_cast<int64_t>(i)) + (i == 1 ? " (scale)" : " (bias)") +
                             " shape " + ShapeText(p) + " must be [" + N(x[1]) +
                             "], one value a channel of input 0 (or, a GroupNorm's, k * " + N(x[1]) +
                             " values, k dividing a row's " + N(s.cols) + " elements)");
    }
    s.row_channels = std::max(s.row_channels, values / x[1]);
  }
  SetCompute(s, 1);
  TF_RETURN_IF_ERROR(ReadUnaryEpilogue(key, s));
  return s;
}

// MaxPool, AveragePool and DepthwiseConv2D: windows over [N, C, H, W], each output element
// reading its window of its own channel.
Result<VectorShape> WindowShape(const OpKey& key, VectorShape s) {
  const std::string& op = key.op_type;
  const bool depthwise = s.op == VectorOp::kDepthwiseConv;
  const std::vector<int64_t>& x = key.inputs[0].shape;
  if (x.size() != 4) {
    return InvalidArgument(op + " input 0 shape " + ShapeText(x) + ": a 2-D " + (depthwise ? "convolution" : "pooling") +
                           " takes x as [N, C, H, W]");
  }
  window_attrs::Hw k{}, dilation{1, 1};
  if (depthwise) {
    TF_ASSIGN_OR_RETURN(k, DepthwiseKernel(key, s));
    TF_ASSIGN_OR_RETURN(dilation, window_attrs::ReadHw(key, "dilations", 1, window_attrs::Hw{1, 1}));
    if (s.dtype == DType::kInt8) s.out_dtype = DType::kFloat16;  // a QDQ model's: int8 in, dequantized out
    TF_RETURN_IF_ERROR(ReadUnaryEpilogue(key, s));
  } else {
    TF_ASSIGN_OR_RETURN(k, window_attrs::ReadHw(key, "kernel_shape", 1, std::nullopt));
  }
  if (auto d = key.attrs.find("divisor_override"); d != key.attrs.end()) {
    const std::string what = op + " attr 'divisor_override'";
    TF_ASSIGN_OR_RETURN(const std::vector<int64_t> divisor, ParseIntList(d->second, what, "1"));
    if (s.op != VectorOp::kAvgPool || divisor.size() != 1 || divisor[0] < 1) {
      return InvalidArgument(what + " '" + d->second + "': " +
                             (s.op != VectorOp::kAvgPool ? "only AveragePool divides its windows"
                                                         : "must be one positive integer (1: a sum pool)"));
    }
    s.divides = divisor[0] != 1;
  }
  TF_ASSIGN_OR_RETURN(const window_attrs::Hw stride, window_attrs::ReadHw(key, "strides", 1, window_attrs::Hw{1, 1}));
  TF_ASSIGN_OR_RETURN(const window_attrs::Pads pad, window_attrs::ReadPads(key));
  int64_t out = x[0] * x[1];
  for (size_t a = 0; a < 2; ++a) {
    const int64_t before = pad[2 * a], after = pad[2 * a + 1];
    const int64_t extent = dilation[a] * (k[a] - 1) + 1;
    if (!depthwise && (before >= k[a] || after >= k[a])) {
      return InvalidArgument(op + " attr 'pads' " + N(before) + "," + N(after) + " on " + (a == 0 ? "H" : "W") +
                             ": each pad must be smaller than the kernel's " + N(k[a]) +
                             " (a window must hold an element of x)");
    }
    const int64_t span = x[2 + a] + before + after;
    if (span < extent) {
      return InvalidArgument(op + (depthwise ? " filter extent " : " kernel_shape ") + N(extent) + " is larger than x's " +
                             (a == 0 ? "H " : "W ") + N(x[2 + a]) + " with its pads");
    }
    out *= (span - extent) / stride[a] + 1;
  }
  s.elements = out;
  s.full_inputs = static_cast<int>(CeilDiv(Elements(x), out));
  s.window = static_cast<int>(k[0] * k[1]);
  SetCompute(s, s.full_inputs + s.broadcast_inputs);
  return s;
}

}  // namespace

bool IsReduce(const VectorShape& s) {
  return s.op == VectorOp::kReduceSum || s.op == VectorOp::kReduceMean || s.op == VectorOp::kReduceL2 ||
         s.op == VectorOp::kReduceMax || s.op == VectorOp::kReduceMin;
}

int NormParams(const VectorShape& s) {
  return s.op == VectorOp::kLayerNorm ? 2 : s.op == VectorOp::kRmsNorm ? 1 : 0;
}

const std::vector<std::string>& VectorOpTypes() {
  static const std::vector<std::string> kTypes = NamesOf(kOps);
  return kTypes;
}

bool IsVectorOpType(std::string_view op_type) { return FindOp(op_type) != nullptr; }

bool ComputesOnIndices(std::string_view op_type) {
  const OpInfo* info = FindOp(op_type);
  return info != nullptr && info->indices_ok;
}

bool IsUnaryEpilogueOp(std::string_view op_type) {
  for (const char* op : {"Relu", "Clip", "Gelu", "Sigmoid", "Silu", "Tanh", "Exp", "HardSigmoid", "HardSwish", "LeakyRelu"}) {
    if (op_type == op) return true;
  }
  return false;
}

Status CanonicalWindowAttrs(OpKey& key) {
  if (key.op_type == "Resize") {
    TF_ASSIGN_OR_RETURN(const window_attrs::Hw sizes, window_attrs::ReadHw(key, "sizes", 1, std::nullopt));
    window_attrs::WriteHw(key, "sizes", sizes, std::nullopt);
    if (auto it = key.attrs.find("mode"); it != key.attrs.end() && it->second == "nearest") key.attrs.erase(it);
    return Status::Ok();
  }
  if (key.op_type == "Pad") {
    TF_ASSIGN_OR_RETURN(const window_attrs::Pads pads, window_attrs::ReadPads(key));
    window_attrs::WritePads(key, pads);
    TF_ASSIGN_OR_RETURN(const window_attrs::Hw interior,
                        window_attrs::ReadHw(key, "interior", 0, window_attrs::Hw{0, 0}));
    window_attrs::WriteHw(key, "interior", interior, 0);
    if (auto it = key.attrs.find("mode"); it != key.attrs.end() && it->second == "constant") key.attrs.erase(it);
    return Status::Ok();
  }
  if (key.op_type != "DepthwiseConv2D") {
    TF_ASSIGN_OR_RETURN(const window_attrs::Hw k, window_attrs::ReadHw(key, "kernel_shape", 1, std::nullopt));
    window_attrs::WriteHw(key, "kernel_shape", k, std::nullopt);
  }
  for (const char* name : {"strides", "dilations"}) {
    if (!key.attrs.contains(name)) continue;
    TF_ASSIGN_OR_RETURN(const window_attrs::Hw hw, window_attrs::ReadHw(key, name, 1, window_attrs::Hw{1, 1}));
    window_attrs::WriteHw(key, name, hw, 1);
  }
  TF_ASSIGN_OR_RETURN(const window_attrs::Pads pads, window_attrs::ReadPads(key));
  window_attrs::WritePads(key, pads);
  return Status::Ok();
}

Result<VectorShape> VectorShapeFromOpKey(const OpKey& key) {
  const OpInfo* info = FindOp(key.op_type);
  if (info == nullptr) return InvalidArgument("op type '" + key.op_type + "' is not a vector op");
  const std::string& op = key.op_type;
  if (info->inputs == 0 && key.inputs.size() < 2) {
    return InvalidArgument(op + " needs at least 2 inputs, got " + N(static_cast<int64_t>(key.inputs.size())));
  }
  if (info->op == VectorOp::kDepthwiseConv && (key.inputs.size() < 2 || key.inputs.size() > 3)) {
    return InvalidArgument(op + " needs 2 or 3 inputs (x [N, C, H, W], filter [C, 1, kh, kw] and an optional bias [C]), got " +
                           N(static_cast<int64_t>(key.inputs.size())));
  }
  if (info->inputs != 0 && info->op != VectorOp::kDepthwiseConv && static_cast<int>(key.inputs.size()) != info->inputs) {
    return InvalidArgument(op + " needs exactly " + N(info->inputs) + " input" +
                           (info->inputs > 1 ? "s" : "") + ", got " + N(static_cast<int64_t>(key.inputs.size())));
  }
  for (size_t i = 0; i < key.inputs.size(); ++i) {
    const TensorDesc& t = key.inputs[i];
    const std::string where = op + " input " + N(static_cast<int64_t>(i));
    if (t.shape.empty()) return InvalidArgument(where + " shape is empty (give at least one axis)");
    for (int64_t d : t.shape) {
      if (d <= 0) return InvalidArgument(where + " shape " + ShapeText(t.shape) + " has a non-positive axis");
    }
    if (t.format != "ND") return InvalidArgument(where + " format " + t.format + ": vector ops take ND");
  }
  if (info->op == VectorOp::kGather) {
    VectorShape s;
    s.op = info->op;
    s.family = info->family;
    return GatherShape(key, std::move(s));
  }
  // Where's input 0 is its condition; its data are inputs 1 and 2.
  const size_t data = info->op == VectorOp::kWhere ? 1 : 0;
  if (data == 1 && key.inputs[0].dtype != "int8") {
    return InvalidArgument("Where input 0 (the condition) dtype " + key.inputs[0].dtype +
                           ": a condition is bool, one byte an element; declare it int8");
  }
  for (size_t i = data + 1; i < key.inputs.size(); ++i) {
    // An int8 depthwise convolution's bias is float (its dequantized int32 bias).
    const bool int8_bias = info->op == VectorOp::kDepthwiseConv && i == 2 && key.inputs[0].dtype == "int8" &&
                           (key.inputs[i].dtype == "float16" || key.inputs[i].dtype == "float32");
    if (key.inputs[i].dtype != key.inputs[data].dtype && !int8_bias) {
      return InvalidArgument(op + " input " + N(static_cast<int64_t>(i)) + " dtype " + key.inputs[i].dtype +
                             " differs from input " + N(static_cast<int64_t>(data)) + "'s " + key.inputs[data].dtype);
    }
  }
  VectorShape s;
  s.op = info->op;
  s.family = info->family;
  TF_ASSIGN_OR_RETURN(s.dtype, ParseDType(key.inputs[data].dtype));
  s.out_dtype = s.dtype;
  // A Cast's is said with its dst_type.
  if (IsIndexDType(s.dtype) && s.op != VectorOp::kCast && !info->indices_ok) {
    return InvalidArgument(op + " input " + N(static_cast<int64_t>(data)) + " dtype " + key.inputs[data].dtype +
                           ": " + kIndexDTypeRule + "; use float16, bfloat16, float32" + (info->int8_ok ? " or int8" : ""));
  }
  if (s.op == VectorOp::kNot && s.dtype != DType::kInt8) {
    return InvalidArgument("Not input 0 dtype " + key.inputs[0].dtype + ": Not negates a bool; declare it int8");
  }
  if (s.dtype == DType::kInt8 && !info->int8_ok) {
    return InvalidArgument(op + " input " + N(static_cast<int64_t>(data)) +
                           " dtype int8 is not supported (use float16, bfloat16 or float32)");
  }
  s.temps = info->temps;
  const std::vector<int64_t>& x = key.inputs[0].shape;

  if (s.op == VectorOp::kConcat) {
    TF_ASSIGN_OR_RETURN(const size_t axis, ConcatAxis(key));
    for (size_t i = 0; i < key.inputs.size(); ++i) {
      const std::vector<int64_t>& in = key.inputs[i].shape;
      bool same = in.size() == x.size();
      for (size_t d = 0; same && d < x.size(); ++d) same = d == axis || in[d] == x[d];
      if (!same) {
        return InvalidArgument("Concat input " + N(static_cast<int64_t>(i)) + " shape " + ShapeText(in) +
                               " must equal input 0's " + ShapeText(x) + " on every axis but attrs.axis " +
                               N(static_cast<int64_t>(axis)));
      }
      s.elements += Elements(in);
      s.cols += Elements(std::vector<int64_t>(in.begin() + static_cast<std::ptrdiff_t>(axis), in.end()));
    }
    s.cols /= static_cast<int64_t>(key.inputs.size());  // the mean piece: a row of the output holds one of each
    s.full_inputs = 1;  // its inputs together are read once, as many elements as it writes
    s.compute_dtype = s.dtype;  // copied, not computed
    return s;
  }
  if (s.op == VectorOp::kMaxPool || s.op == VectorOp::kAvgPool || s.op == VectorOp::kDepthwiseConv) {
    return WindowShape(key, std::move(s));
  }
  if (s.op == VectorOp::kResize) return ResizeShape(key, std::move(s));
  if (s.op == VectorOp::kPad) return PadShape(key, std::move(s));
  switch (s.family) {
    case VectorFamily::kElementwise: {
      // The output is the inputs' broadcast shape, NumPy's: each axis, aligned from the
      // right, the inputs' size there or 1. An input of that shape is read whole; the others
      // broadcast (a bias row; each side of an outer product, timesteps [b, 1] by
      // frequencies [1, d], which no input of the output's shape is).
      std::vector<int64_t> out;
      for (size_t i = 0; i < key.inputs.size(); ++i) {
        const std::vector<int64_t>& in = key.inputs[i].shape;
        if (in.size() > out.size()) out.insert(out.begin(), in.size() - out.size(), 1);
        for (size_t d = 0; d < in.size(); ++d) {
          int64_t& o = out[out.size() - in.size() + d];
          if (in[d] != o && in[d] != 1 && o != 1) {
            return InvalidArgument(op + " input " + N(static_cast<int64_t>(i)) + " shape " + ShapeText(in) +
                                   " does not broadcast with the inputs before it (" + ShapeText(out) +
                                   "): aligned from the right, each axis must be the same size or 1 (NumPy's rule)");
          }
          o = std::max(o, in[d]);
        }
      }
      if (Elements(out) > kMaxTensorElements) {
        return InvalidArgument(op + " output " + ShapeText(out) + " holds more than 2^50 elements");
      }
      s.elements = Elements(out);
      for (const TensorDesc& t : key.inputs) {
        if (Elements(t.shape) == s.elements) {
          ++s.full_inputs;
          continue;
        }
        ++s.broadcast_inputs;
        s.broadcast_elements += Elements(t.shape);
      }
      if (s.op == VectorOp::kRope) {
        // x is the output; cos and sin broadcast to it, each row of the rotary dimension whole.
        if (Elements(x) != s.elements) {
          return InvalidArgument("Rope inputs broadcast to " + ShapeText(out) + ", larger than input 0 (x) " +
                                 ShapeText(x) + ": x is the output, and cos and sin broadcast to it");
        }
        s.cols = x.back();
        if (s.cols % 2 != 0) {
          return InvalidArgument("Rope input 0 (x) shape " + ShapeText(x) +
                                 ": its last axis, the rotary dimension, is " + N(s.cols) +
                                 "; it must be even (its two halves are rotated into each other)");
        }
        for (size_t i = 1; i < key.inputs.size(); ++i) {
          if (key.inputs[i].shape.back() != s.cols) {
            return InvalidArgument("Rope input " + N(static_cast<int64_t>(i)) + " (" + (i == 1 ? "cos" : "sin") +
                                   ") shape " + ShapeText(key.inputs[i].shape) + ": its last axis must be x's, " +
                                   N(s.cols) + " (one angle per element of a rotary row)");
          }
        }
      }
      if (s.op == VectorOp::kCast) {
        auto it = key.attrs.find("dst_type");
        if (it == key.attrs.end()) {
          return InvalidArgument("Cast needs attrs.dst_type (float16, bfloat16, float32 or int8)");
        }
        Result<DType> to = ParseDType(it->second);
        if (!to.ok()) return InvalidArgument("Cast attrs.dst_type: " + to.status().message());
        if (*to == s.dtype) return InvalidArgument("Cast attrs.dst_type equals the input dtype: nothing to cast");
        TF_RETURN_IF_ERROR(CheckCastPair(key, s.dtype, *to));
        s.out_dtype = *to;
        // vconv has no fp16<->bf16 and no int64 -> fp16: those go through fp32.
        const bool via_fp32 = (s.dtype == DType::kFloat16 && *to == DType::kBFloat16) ||
                              (s.dtype == DType::kBFloat16 && *to == DType::kFloat16) ||
                              (s.dtype == DType::kInt64 && *to == DType::kFloat16);
        s.compute_dtype = DTypeBytes(s.dtype) >= DTypeBytes(*to) ? s.dtype : *to;
        if (via_fp32) {
          s.compute_dtype = DType::kFloat32;
          s.temps = 1;
        }
      } else {
        SetCompute(s, info->inputs);
      }
      if (s.op == VectorOp::kEqual) s.out_dtype = DType::kInt8;  // a bool an element
      return s;
    }
    case VectorFamily::kRowwise: {
      if (s.op == VectorOp::kInstanceNorm) return InstanceNormShape(key, std::move(s));
      s.cols = x.back();
      s.rows = Elements(x) / s.cols;
      TF_RETURN_IF_ERROR(CheckLastAxis(key, s.op == VectorOp::kLayerNorm ? "begin_norm_axis"
                                            : IsReduce(s)                 ? "axes"
                                                                          : "axis",
                                       x.size()));
      for (int i = 1; i <= NormParams(s); ++i) {
        const std::vector<int64_t>& g = key.inputs[static_cast<size_t>(i)].shape;
        if (Elements(g) != s.cols || g.back() != s.cols) {
          return InvalidArgument(op + " input " + N(i) + (i == 1 ? " (gamma)" : " (beta)") + " shape " + ShapeText(g) +
                                 " must be [" + N(s.cols) + "], the normalised last axis of input 0");
        }
      }
      SetCompute(s, 1);
      if (s.op == VectorOp::kLayerNorm || s.op == VectorOp::kRmsNorm) TF_RETURN_IF_ERROR(ReadUnaryEpilogue(key, s, true));
      return s;
    }
    case VectorFamily::kTranspose: {
      if (x.size() < 2) {
        return InvalidArgument("Transpose input 0 shape " + ShapeText(x) + " needs at least 2 axes");
      }
      auto it = key.attrs.find("perm");
      if (it != key.attrs.end()) {
        std::string want;
        for (size_t i = 0; i < x.size(); ++i) {
          size_t a = i + 2 == x.size() ? i + 1 : i + 1 == x.size() ? i - 1 : i;
          want += (i ? "," : "") + N(static_cast<int64_t>(a));
        }
        std::string got;
        for (char c : it->second) {
          if (c != ' ' && c != '[' && c != ']') got += c;
        }
        if (got != want) {
          return InvalidArgument("Transpose attrs.perm='" + it->second +
                                 "': only swapping the last two axes is supported (perm " + want + ")");
        }
      }
      s.rows = x[x.size() - 2];
      s.cols = x.back();
      s.batch = Elements(x) / (s.rows * s.cols);
      s.compute_dtype = s.dtype;
      return s;
    }
  }
  return Internal("unhandled vector family");
}

std::vector<std::string> VectorParamNames(VectorFamily family) {
  switch (family) {
    case VectorFamily::kElementwise:
      return {"tileLength", "bufferNum", "usedCores"};
    case VectorFamily::kRowwise:
      return {"rowsPerTile", "bufferNum", "usedCores"};
    case VectorFamily::kTranspose:
      return {"tileRows", "tileCols", "usedCores"};
  }
  return {};
}

VectorBlocking ComputeVectorBlocking(const VectorShape& s, const VectorTiling& t,
                                     const SocSpec& soc) {
  VectorBlocking b;
  const int64_t align = soc.ubblock_size;
  switch (s.family) {
    case VectorFamily::kElementwise:
      b.tiles = CeilDiv(s.elements, t.tile_length);
      b.ub_bytes = t.tile_length * ElementwiseBytesPerElement(s) * t.buffer_num;
      break;
    case VectorFamily::kRowwise: {
      b.tiles = CeilDiv(s.rows, t.rows_per_tile);
      b.row_bytes_padded = RoundUp(s.cols * DTypeBytes(s.dtype), align);
      const int64_t reduce_out =
          IsReduce(s) ? RoundUp(t.rows_per_tile * DTypeBytes(s.out_dtype), align) : 0;
      // A normalisation's gamma (and beta) stay resident for all rows: single-buffered.
      const int64_t resident = NormParams(s) * b.row_bytes_padded;
      b.ub_bytes = (t.rows_per_tile * RowwiseRowBytes(s, align) + reduce_out) * t.buffer_num + resident;
      if (t.rows_per_tile == 1 && b.ub_bytes > soc.ub_size) {
        // One row does not fit: stream it in chunks (gamma/beta chunks stream beside it).
        b.split_rows = true;
        const int64_t per_elem = DTypeBytes(s.dtype) * (1 + NormParams(s)) +
                                 (IsReduce(s) ? 0 : DTypeBytes(s.out_dtype)) +
                                 s.temps * DTypeBytes(s.compute_dtype);
        const int64_t elem_align = std::max<int64_t>(1, align / DTypeBytes(s.dtype));
        const int64_t budget = soc.ub_size - (IsReduce(s) ? 2 * align : 0);
        b.chunk_cols = std::max(elem_align, budget / (t.buffer_num * per_elem) / elem_align * elem_align);
        b.ub_bytes = b.chunk_cols * per_elem * t.buffer_num + (IsReduce(s) ? 2 * align : 0);
      }
      break;
    }
    case VectorFamily::kTranspose:
      b.tiles = s.batch * CeilDiv(s.rows, t.tile_rows) * CeilDiv(s.cols, t.tile_cols);
      // Input and transposed output tile, ping-ponged.
      b.ub_bytes = t.tile_rows * t.tile_cols * DTypeBytes(s.dtype) * 2 * 2;
      break;
  }
  b.tiles_per_core = CeilDiv(b.tiles, std::max<int64_t>(1, t.used_cores));
  return b;
}

Result<SearchSpace> VectorTilingSpace(const VectorShape& shape, const SocSpec& soc) {
  const std::vector<std::string> names = VectorParamNames(shape.family);
  std::vector<Parameter> params;
  switch (shape.family) {
    case VectorFamily::kElementwise:
      params = {{names[0], shape.op == VectorOp::kRope ? RotaryTileLengthValues(shape.cols, shape.elements)
                                                       : TileLengthValues(shape.elements)},
                {names[1], {1, 2}},
                {names[2], CoreValues(soc)}};
      break;
    case VectorFamily::kRowwise:
      params = {{names[0], RowsPerTileValues(shape.rows)}, {names[1], {1, 2}}, {names[2], CoreValues(soc)}};
      break;
    case VectorFamily::kTranspose:
      params = {{names[0], TransposeTileValues(shape.rows)},
                {names[1], TransposeTileValues(shape.cols)},
                {names[2], CoreValues(soc)}};
      break;
  }
  const SocSpec spec = soc;
  auto tiling = [shape](const Config& c) { return VectorTilingFromConfig(shape, c); };
  std::vector<SearchSpace::Constraint> constraints;
  switch (shape.family) {
    case VectorFamily::kElementwise:
      constraints.push_back(
          {"tile alignment", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
             const VectorTiling t = tiling(c);
             for (DType d : {shape.dtype, shape.out_dtype}) {
               const int64_t bytes = t.tile_length * DTypeBytes(d);
               if (bytes % spec.ubblock_size != 0) {
                 return Violated(why, [&] { return "tileLength*bytes = " + N(t.tile_length) + "*" + N(DTypeBytes(d)) + " = " + B(bytes) + " (" +
                        std::string(DTypeName(d)) + ") is not a multiple of ubblock_size " + B(spec.ubblock_size); });
               }
             }
             return true;
           }});
      constraints.push_back(
          {"UB capacity", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
             const VectorTiling t = tiling(c);
             const VectorBlocking b = ComputeVectorBlocking(shape, t, spec);
             if (b.ub_bytes > spec.ub_size) {
               return Violated(why, [&] { return "UB footprint tileLength*bytes(inputs+outputs+temps)*bufferNum = " + N(t.tile_length) + "*" +
                      N(ElementwiseBytesPerElement(shape)) + "*" + N(t.buffer_num) + " = " + B(b.ub_bytes) +
                      " exceeds ub_size " + B(spec.ub_size); });
             }
             return true;
           }});
      break;
    case VectorFamily::kRowwise:
      constraints.push_back(
          {"UB capacity", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
             const VectorTiling t = tiling(c);
             const VectorBlocking b = ComputeVectorBlocking(shape, t, spec);
             if (b.ub_bytes > spec.ub_size) {
               return Violated(why, [&] { return "UB footprint of rowsPerTile=" + N(t.rows_per_tile) + " rows (" + B(b.row_bytes_padded) +
                      " padded per input row, with outputs and temps) * bufferNum " + N(t.buffer_num) + " = " +
                      B(b.ub_bytes) + " exceeds ub_size " + B(spec.ub_size) +
                      " (rowsPerTile=1 streams a row that does not fit, at a second HBM pass)"; });
             }
             return true;
           }});
      break;
    case VectorFamily::kTranspose:
      constraints.push_back(
          {"tile alignment", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
             const VectorTiling t = tiling(c);
             const int64_t bytes = DTypeBytes(shape.dtype);
             if (t.tile_cols * bytes % spec.ubblock_size != 0) {
               return Violated(why, [&] { return "tileCols*bytes = " + B(t.tile_cols * bytes) + " (a loaded row) is not a multiple of ubblock_size " +
                      B(spec.ubblock_size); });
             }
             if (t.tile_rows * bytes % spec.ubblock_size != 0) {
               return Violated(why, [&] { return "tileRows*bytes = " + B(t.tile_rows * bytes) + " (a stored row) is not a multiple of ubblock_size " +
                      B(spec.ubblock_size); });
             }
             return true;
           }});
      constraints.push_back(
          {"UB capacity", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
             const VectorTiling t = tiling(c);
             const VectorBlocking b = ComputeVectorBlocking(shape, t, spec);
             if (b.ub_bytes > spec.ub_size) {
               return Violated(why, [&] { return "UB footprint tileRows*tileCols*bytes*2 (in+out)*2 (ping-pong) = " + B(b.ub_bytes) +
                      " exceeds ub_size " + B(spec.ub_size); });
             }
             return true;
           }});
      break;
  }
  constraints.push_back(
      {"cores have tiles", [shape, spec, tiling](const SearchSpace&, const Config& c, std::string* why) -> bool {
         const VectorTiling t = tiling(c);
         const VectorBlocking b = ComputeVectorBlocking(shape, t, spec);
         if (t.used_cores > b.tiles) {
           return Violated(why, [&] { return "usedCores=" + N(t.used_cores) + " exceeds the " + N(b.tiles) + " tiles to hand out"; });
         }
         return true;
       }});
  return SearchSpace::Create(std::move(params), std::move(constraints));
}

VectorTiling VectorTilingFromConfig(const VectorShape& shape, const Config& c) {
  VectorTiling t;
  switch (shape.family) {
    case VectorFamily::kElementwise:
      t.tile_length = c[0];
      t.buffer_num = c[1];
      break;
    case VectorFamily::kRowwise:
      t.rows_per_tile = c[0];
      t.buffer_num = c[1];
      break;
    case VectorFamily::kTranspose:
      t.tile_rows = c[0];
      t.tile_cols = c[1];
      t.buffer_num = 2;
      break;
  }
  t.used_cores = c[2];
  return t;
}

Config VectorConfigFromTiling(const VectorShape& shape, const VectorTiling& t) {
  switch (shape.family) {
    case VectorFamily::kElementwise:
      return {t.tile_length, t.buffer_num, t.used_cores};
    case VectorFamily::kRowwise:
      return {t.rows_per_tile, t.buffer_num, t.used_cores};
    case VectorFamily::kTranspose:
      return {t.tile_rows, t.tile_cols, t.used_cores};
  }
  return {};
}

VectorTiling VectorDefaultTiling(const VectorShape& shape, const SocSpec& soc) {
  // Builds the space's own checks so the default is valid by construction: the largest
  // candidate (per family) that passes them, then the most cores the tiles allow.
  Result<SearchSpace> space = VectorTilingSpace(shape, soc);
  VectorTiling best;
  best.buffer_num = 2;
  best.used_cores = 1;
  if (!space.ok()) return best;
  const std::vector<int64_t> cores = CoreValues(soc);
  auto valid = [&](const VectorTiling& t) {
    return space->Validate(VectorConfigFromTiling(shape, t)).ok();
  };
  auto with_cores = [&](VectorTiling t) {
    const int64_t tiles = ComputeVectorBlocking(shape, t, soc).tiles;
    t.used_cores = 1;
    for (int64_t c : cores) {
      if (c <= tiles) t.used_cores = c;
    }
    return t;
  };
  const std::vector<Parameter>& p = space->params();
  switch (shape.family) {
    case VectorFamily::kElementwise: {
      // CANN: split the elements evenly over all vector cores, then the largest tile of
      // a core's share that fits UB with double buffering.
      const int64_t per_core = CeilDiv(shape.elements, soc.vector_core_cnt);
      bool found = false;
      for (int64_t len : p[0].values) {
        VectorTiling t = best;
        t.tile_length = len;
        t = with_cores(t);
        if (!valid(t)) continue;
        if (!found || len <= per_core) {
          best = t;
          found = true;
        }
      }
      break;
    }
    case VectorFamily::kRowwise: {
      const int64_t per_core = CeilDiv(shape.rows, soc.vector_core_cnt);
      best.rows_per_tile = 1;
      best = with_cores(best);
      for (int64_t rpt : p[0].values) {
        VectorTiling t = best;
        t.rows_per_tile = rpt;
        t = with_cores(t);
        if (rpt <= per_core && valid(t)) best = t;
      }
      break;
    }
    case VectorFamily::kTranspose: {
      // Square tiles, as large as UB takes and the matrix needs.
      bool found = false;
      for (int64_t r : p[0].values) {
        for (int64_t c : p[1].values) {
          VectorTiling t = best;
          t.tile_rows = r;
          t.tile_cols = c;
          t = with_cores(t);
          if (!valid(t)) continue;
          const int64_t side = std::min(r, c);
          const int64_t best_side = found ? std::min(best.tile_rows, best.tile_cols) : -1;
          if (!found || side > best_side || (side == best_side && r * c > best.tile_rows * best.tile_cols)) {
            best = t;
            found = true;
          }
        }
      }
      break;
    }
  }
  return best;
}

}  // namespace tunefleet
