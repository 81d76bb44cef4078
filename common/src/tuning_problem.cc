#include "tunefleet/common/tuning_problem.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/vector_space.h"
#include "space_util.h"

namespace tunefleet {
namespace {

using space_util::Elements;

// Bytes of the op's input tensors, in double: a shape typed by hand may overflow int64.
// An input whose dtype does not parse counts 0 here; the op's own parser names it.
double InputBytes(const OpKey& key) {
  double bytes = 0;
  for (const TensorDesc& t : key.inputs) {
    auto dtype = ParseDType(t.dtype);
    double elements = dtype.ok() ? DTypeBytes(*dtype) : 0;
    for (int64_t d : t.shape) elements *= static_cast<double>(d);
    bytes += elements;
  }
  return bytes;
}

// The GEMM a cube op runs (a conv's implicit im2col GEMM, a fused op's GEMM without its
// epilogue); nullopt for other ops and for a key that does not describe a valid op.
std::optional<MatmulShape> CubeGemm(const OpKey& key) {
  if (IsCubeGemmOpType(key.op_type)) {
    auto shape = CubeGemmShapeFromOpKey(key);
    if (shape.ok()) return *shape;
  } else if (key.op_type == "Conv2D") {
    auto shape = Conv2dShapeFromOpKey(key);
    if (shape.ok()) return Conv2dGemm(*shape);
  } else if (IsFusedCubeOpType(key.op_type)) {
    auto shape = FusedCubeShapeFromOpKey(key);
    if (shape.ok()) return shape->gemm;
  }
  return std::nullopt;
}

// The attributes each op type reads. Anything else is a typo ("stride" for "strides",
// ONNX's "group" for "groups") that would otherwise tune another op than meant, and
// would split the knowledge base's key of the same op.
const std::vector<std::string>* KnownAttrs(const std::string& op_type) {
  static const std::map<std::string, std::vector<std::string>> known = {
      {"MatMul", {"out_dtype", "transpose_a", "transpose_b"}},
      {"BatchMatMul", {"adj_x1", "adj_x2", "out_dtype", "transpose_a", "transpose_b"}},
      {"Gemm", {"alpha", "beta", "out_dtype", "transA", "transB", "transpose_a", "transpose_b"}},
      {"Conv2D", {"data_format", "dilations", "groups", "out_dtype", "pads", "strides"}},
      {"FusedMatMul", {"epilogue", "transpose_a", "transpose_b", "value_out"}},
      {"FusedBatchMatMul", {"adj_x1", "adj_x2", "epilogue", "transpose_a", "transpose_b", "value_out"}},
      {"FusedConv2D", {"data_format", "dilations", "epilogue", "groups", "pads", "strides", "value_out"}},
      {kFusedElementwiseOp, {"ops"}},
      {kFlashAttentionOp, {"adj_x2", "causal", "epilogue", "scores", "transB", "transpose_b"}},
      {"Cast", {"dst_type"}},
      {"Transpose", {"perm"}},
      {"Concat", {"axis"}},
      {"MaxPool", {"kernel_shape", "pads", "strides"}},
      {"AveragePool", {"divisor_override", "kernel_shape", "pads", "strides"}},
      {"DepthwiseConv2D", {"dilations", "epilogue", "pads", "strides"}},
      {"Gather", {"axis"}},
      {"Resize", {"mode", "sizes"}},
      {"Pad", {"interior", "mode", "pads"}},
      {"Softmax", {"axis"}},
      {"LayerNorm", {"begin_norm_axis", "epilogue"}},
      {"RmsNorm", {"epilogue"}},
      {"InstanceNorm", {"epilogue"}},
      {"ReduceSum", {"axes"}},
      {"ReduceMean", {"axes"}},
      {"ReduceL2", {"axes"}},
  };
  static const std::vector<std::string> none;
  if (auto it = known.find(op_type); it != known.end()) return &it->second;
  return IsVectorOpType(op_type) ? &none : nullptr;
}

Status CheckKnownAttrs(const OpKey& key) {
  const std::vector<std::string>* known = KnownAttrs(key.op_type);
  if (!known) return Status::Ok();  // not a tunable op type: said below
  for (const auto& [name, value] : key.attrs) {
    if (std::find(known->begin(), known->end(), name) != known->end()) continue;
    std::string list;
    for (const auto& k : *known) list += (list.empty() ? "" : ", ") + k;
    return InvalidArgument(key.op_type + " has no attribute '" + name + "' (" +
                           (list.empty() ? std::string("it takes none") : "known: " + list) + ")");
  }
  return Status::Ok();
}

// The axes of `shape` merged into groups that end at the given cuts, each a number of
// trailing axes (sorted ascending, below shape.size()): [b, s, h] cut at {1} is [b*s, h].
std::vector<int64_t> MergeAxes(const std::vector<int64_t>& shape, const std::vector<size_t>& cuts) {
  std::vector<int64_t> out;
  size_t end = shape.size();
  for (auto cut = cuts.begin();; ++cut) {  // from the right
    const size_t begin = cut == cuts.end() ? 0 : shape.size() - *cut;
    int64_t n = 1;
    for (size_t d = begin; d < end; ++d) n *= shape[d];
    out.push_back(n);
    if (cut == cuts.end()) break;
    end = begin;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Result<VectorShape> VectorShapeOf(const OpKey& key) {
  return key.op_type == kFusedElementwiseOp ? FusedElementwiseShapeFromOpKey(key) : VectorShapeFromOpKey(key);
}

// A vector op's kernel sees element counts, not axes: an element-wise op its output's
// elements and each broadcast input's, a row-wise op rows x the last axis, a transpose
// batches of the last two axes. So `Add [b, s, h]` (an ONNX export's) and `Add [b*s, h]`
// (a JSON graph's) are one op, written here in one spelling that keeps the axes a reader
// needs: an element-wise output's last axis and every axis a broadcast input starts at
// ([b*s, h] with a bias [h]; [b, s, h] with a position table [s, h]), leading 1s of a
// broadcast input dropped; a row-wise op's [rows, cols] with gamma and beta [cols]; a
// transpose's [batch, rows, cols] ([rows, cols] for one); the axis attributes, which can
// only name the last axes, left out. A key whose inputs broadcast otherwise (a mask
// [b, 1, s, s] over [b, h, s, s]) or that does not parse keeps its shapes; and a rewrite
// is kept only when it parses to the same VectorShape, so the space and timing are the
// key's own.
void CanonicalVectorShapes(OpKey& key) {
  // Concat's cost is its inputs' and output's element counts, but the axis it joins them on
  // is the op: its key keeps its axes; so do the poolings' and Resize's, which run over H and W.
  if (key.op_type == "MaxPool" || key.op_type == "AveragePool" || key.op_type == "DepthwiseConv2D" ||
      key.op_type == "Resize" || key.op_type == "Pad") {
    // A key that does not parse keeps its spelling: its error is said where it is used.
    if (VectorShapeFromOpKey(key).ok()) (void)CanonicalWindowAttrs(key);
    return;
  }
  if (key.op_type == "Gather") {
    // Its cost is the rows it picks, not how its indices are laid out: [b, s] is [b*s].
    if (!VectorShapeFromOpKey(key).ok()) return;
    key.inputs[1].shape = {Elements(key.inputs[1].shape)};
    key.attrs.erase("axis");
    return;
  }
  if ((key.op_type != kFusedElementwiseOp && !IsVectorOpType(key.op_type)) || key.op_type == "Concat") return;
  const Result<VectorShape> shape = VectorShapeOf(key);
  if (!shape.ok()) return;
  OpKey out = key;
  auto strip = [](std::vector<int64_t> s) {
    while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
    return s;
  };
  switch (shape->family) {
    case VectorFamily::kElementwise: {
      size_t big = 0;
      if (key.op_type != kFusedElementwiseOp) {
        for (size_t i = 1; i < key.inputs.size(); ++i) {
          if (Elements(key.inputs[i].shape) > Elements(key.inputs[big].shape)) big = i;
        }
      }
      const std::vector<int64_t> full = key.inputs[big].shape;
      std::vector<size_t> cuts;
      if (full.size() > 1) cuts.push_back(1);
      for (const TensorDesc& t : key.inputs) {
        if (t.shape == full) continue;
        const std::vector<int64_t> s = strip(t.shape);
        if (s == std::vector<int64_t>{1}) continue;  // one element
        if (s.size() >= full.size() || !std::equal(s.begin(), s.end(), full.end() - static_cast<long>(s.size()))) {
          return;  // not a trailing run of the output's axes
        }
        cuts.push_back(s.size());
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (TensorDesc& t : out.inputs) {
        if (t.shape == full) {
          t.shape = MergeAxes(full, cuts);
          continue;
        }
        const std::vector<int64_t> s = strip(t.shape);
        std::vector<size_t> within;
        for (size_t c : cuts) {
          if (c < s.size()) within.push_back(c);
        }
        t.shape = s == std::vector<int64_t>{1} ? s : MergeAxes(s, within);
      }
      break;
    }
    case VectorFamily::kRowwise:
      if (shape->op == VectorOp::kInstanceNorm) {  // its scale and bias are a channel's: keep N and C
        out.inputs[0].shape = {key.inputs[0].shape[0], key.inputs[0].shape[1], shape->cols};
        for (size_t i = 1; i < out.inputs.size(); ++i) out.inputs[i].shape = {Elements(key.inputs[i].shape)};
        break;
      }
      out.inputs[0].shape = {shape->rows, shape->cols};
      for (size_t i = 1; i < out.inputs.size(); ++i) out.inputs[i].shape = {shape->cols};
      for (const char* axis : {"axis", "axes", "begin_norm_axis"}) out.attrs.erase(axis);
      break;
    case VectorFamily::kTranspose:
      out.inputs[0].shape = shape->batch > 1 ? std::vector<int64_t>{shape->batch, shape->rows, shape->cols}
                                             : std::vector<int64_t>{shape->rows, shape->cols};
      out.attrs.erase("perm");
      break;
  }
  const Result<VectorShape> again = VectorShapeOf(out);
  if (again.ok() && *again == *shape) key = std::move(out);
}

std::string GiB(double bytes) { return fmt::format("{:.3g} GiB", bytes / double(int64_t{1} << 30)); }

}  // namespace

Result<OpKey> CanonicalOpKey(const OpKey& key) {
  OpKey out = key;
  for (TensorDesc& in : out.inputs) {
    if (auto dt = ParseDType(in.dtype); dt.ok()) in.dtype = std::string(DTypeName(*dt));
  }
  if (!KnownAttrs(out.op_type)) return out;  // not an op the simulator knows (a replayed kernel): as given
  TF_RETURN_IF_ERROR(CheckKnownAttrs(out));
  const std::string gemm_or_conv = IsFusedCubeOpType(out.op_type) ? FusedCubeInnerOpType(out.op_type) : out.op_type;
  if (IsCubeGemmOpType(gemm_or_conv) || out.op_type == kFlashAttentionOp) TF_RETURN_IF_ERROR(CanonicalTransposeFlags(out));
  // A BatchMatMul of an ND [..., M, K] by one [K, N] weight is the MatMul [batch*M, K] x
  // [K, N] (BatchMatmulShapeFromOpKey stacks its batches into M, the same space and
  // timing): one key, so a layer exported to ONNX (whose MatMul of a 3-D activation is
  // a BatchMatMul) and the same layer as a JSON graph share their knowledge-base entries.
  if (out.op_type == "BatchMatMul" && out.inputs.size() == 2 && out.inputs[0].shape.size() > 2 &&
      out.inputs[1].shape.size() == 2 && !out.attrs.count("transpose_a") && out.inputs[0].format == "ND") {
    std::vector<int64_t>& a = out.inputs[0].shape;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < a.size(); ++d) rows *= a[d];
    a = {rows, a.back()};
    out.op_type = "MatMul";
  }
  if (gemm_or_conv == "Conv2D") TF_RETURN_IF_ERROR(CanonicalConv2dAttrs(out));
  CanonicalVectorShapes(out);
  if (auto it = out.attrs.find("out_dtype"); it != out.attrs.end() && !out.inputs.empty()) {
    // A cube op's output dtype by name, and left out when it is the inputs' (the default).
    auto in = ParseDType(out.inputs[0].dtype);
    auto dt = ParseDType(it->second);
    if (dt.ok()) it->second = std::string(DTypeName(*dt));
    // (int8 inputs write int32 by default, which no out_dtype names: an int8 there is
    // refused by the shape, not taken for the default.)
    if (in.ok() && dt.ok() && *in != DType::kInt8 && *dt == CubeDefaultOutDType(*in)) out.attrs.erase(it);
  }
  if (auto it = out.attrs.find("dst_type"); it != out.attrs.end()) {
    if (auto dt = ParseDType(it->second); dt.ok()) it->second = std::string(DTypeName(*dt));
  }
  return out;
}

Result<TuningProblem> MakeTuningProblem(const OpKey& key, const SocSpec& soc) {
  if (key.soc != soc.name) {
    return InvalidArgument("op key is for SoC '" + key.soc + "' but the spec is '" + soc.name + "'");
  }
  TF_RETURN_IF_ERROR(CheckKnownAttrs(key));
  if (!soc.supports_bf16) {
    auto bf16 = [](const std::string& name) {
      auto dt = ParseDType(name);
      return dt.ok() && *dt == DType::kBFloat16;
    };
    bool uses = false;
    for (const char* attr : {"dst_type", "out_dtype"}) {
      const auto it = key.attrs.find(attr);
      uses = uses || (it != key.attrs.end() && bf16(it->second));
    }
    for (const TensorDesc& in : key.inputs) uses = uses || bf16(in.dtype);
    if (uses) {
      return InvalidArgument(soc.name + " has no bfloat16 (its Intrinsic_mmad lists none): use float16 there, or a "
                             "part that has it (Ascend910B2, Ascend910B4)");
    }
  }
  // An op whose operands cannot be in device memory at once is not an op this SoC runs
  // (NPU_MODEL.md: a capacity is a reason, never a silent number). Cube ops also write
  // their GEMM output (a fused op its fp32 accumulator, to a workspace).
  // The output is added only once the inputs fit: then the GEMM's int64 sizes, parsed
  // from those inputs, cannot have overflowed.
  const double memory = static_cast<double>(soc.memory_size);
  double bytes = InputBytes(key);
  if (memory > 0 && bytes <= memory) {
    if (std::optional<MatmulShape> g = CubeGemm(key)) {
      bytes += static_cast<double>(g->m) * static_cast<double>(g->n) * static_cast<double>(g->batch) *
               static_cast<double>(g->out_bytes);
    }
  }
  if (memory > 0 && bytes > memory) {
    return InvalidArgument(fmt::format(
        "its tensors need {}, more than {}'s {} of HBM (memory_size); split the op or check its shape",
        GiB(bytes), soc.name, GiB(memory)));
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
  if (key.op_type == kFlashAttentionOp) {
    TF_ASSIGN_OR_RETURN(AttentionShape shape, AttentionShapeFromOpKey(key));
    TF_ASSIGN_OR_RETURN(SearchSpace space, AttentionTilingSpace(shape, soc));
    TF_ASSIGN_OR_RETURN(Config def, AttentionDefaultConfig(shape, soc));
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

double CubeUsefulFlops(const OpKey& key) {
  const std::optional<MatmulShape> g = CubeGemm(key);
  if (!g) return 0;
  return 2.0 * static_cast<double>(g->m) * static_cast<double>(g->n) * static_cast<double>(g->k) *
         static_cast<double>(g->batch);
}

namespace {

// Launch + roofline of a GEMM whose A side holds `a_bytes` per batch (a conv's input
// feature map rather than its im2col matrix), writing g.out_bytes per output element.
double GemmFloorUs(const MatmulShape& g, double a_bytes, const SocSpec& soc) {
  const double out_bytes = static_cast<double>(g.out_bytes);
  const double in = DTypeBytes(g.in_dtype);
  const double batch = static_cast<double>(g.batch);
  const double k = static_cast<double>(g.k), n = static_cast<double>(g.n);
  const double bytes = batch * (a_bytes + k * n * in + static_cast<double>(g.m) * n * out_bytes) +
                       batch * n * static_cast<double>(g.bias_bytes);
  // The cube does cube_k_size fp16 (2-byte) elements of K per cycle, twice as many int8 ones.
  const double peak = soc.CubePeakFlops() * 2.0 / in;
  const double flops = 2.0 * static_cast<double>(g.m) * n * k * batch;
  const double roofline_us =
      std::max(flops / peak * 1e6, bytes / (soc.hbm_bandwidth_gbps * 1e3));
  return soc.kernel_launch_us + roofline_us;
}

}  // namespace

double CubeLatencyFloorUs(const OpKey& key, const SocSpec& soc) {
  if (soc.hbm_bandwidth_gbps <= 0 || soc.CubePeakFlops() <= 0) return 0;
  if (IsCubeGemmOpType(key.op_type)) {
    auto shape = CubeGemmShapeFromOpKey(key);
    if (!shape.ok()) return 0;
    const double a_bytes = static_cast<double>(shape->m) * static_cast<double>(shape->k) *
                           DTypeBytes(shape->in_dtype);
    return GemmFloorUs(*shape, a_bytes, soc);
  }
  if (key.op_type == "Conv2D") {
    auto shape = Conv2dShapeFromOpKey(key);
    if (!shape.ok()) return 0;
    const double a_bytes = static_cast<double>(shape->batch * shape->GroupInChannels() *
                                               shape->in_h * shape->in_w) *
                           DTypeBytes(shape->in_dtype);
    return GemmFloorUs(Conv2dGemm(*shape), a_bytes, soc);
  }
  return 0;
}

std::optional<int64_t> OutputElements(const OpKey& key) {
  if (std::optional<MatmulShape> g = CubeGemm(key)) return g->m * g->n * g->batch;
  if (key.op_type == kFlashAttentionOp) {
    auto a = AttentionShapeFromOpKey(key);
    if (!a.ok()) return std::nullopt;
    return a->batch * a->sq * a->dv;
  }
  Result<VectorShape> v = key.op_type == kFusedElementwiseOp ? FusedElementwiseShapeFromOpKey(key)
                          : IsVectorOpType(key.op_type)      ? VectorShapeFromOpKey(key)
                                                             : Result<VectorShape>(InvalidArgument("not a vector op"));
  if (!v.ok()) return std::nullopt;
  switch (v->family) {
    case VectorFamily::kElementwise: return v->elements;
    case VectorFamily::kRowwise:
      return IsReduce(*v) ? v->rows : v->rows * v->cols;
    case VectorFamily::kTranspose: return v->batch * v->rows * v->cols;
  }
  return std::nullopt;
}

Result<std::optional<DType>> WrittenDType(const OpKey& key) {
  if (IsFusedCubeOpType(key.op_type)) {
    TF_ASSIGN_OR_RETURN(FusedCubeShape s, FusedCubeShapeFromOpKey(key));
    return std::optional<DType>(s.out_dtype);
  }
  if (key.op_type == kFlashAttentionOp) {
    TF_ASSIGN_OR_RETURN(AttentionShape a, AttentionShapeFromOpKey(key));
    return std::optional<DType>(a.out_dtype);
  }
  if (IsCubeGemmOpType(key.op_type) || key.op_type == "Conv2D") {
    if (key.inputs.empty()) return std::optional<DType>();
    TF_ASSIGN_OR_RETURN(const DType in, ParseDType(key.inputs[0].dtype));
    TF_ASSIGN_OR_RETURN(const DType out, CubeOutDType(key, in));
    if (in == DType::kInt8 && out == DType::kInt8) return std::optional<DType>();  // int32: no dtype name
    return std::optional<DType>(out);
  }
  if (key.op_type == kFusedElementwiseOp || IsVectorOpType(key.op_type)) {
    TF_ASSIGN_OR_RETURN(VectorShape v, key.op_type == kFusedElementwiseOp ? FusedElementwiseShapeFromOpKey(key)
                                                                          : VectorShapeFromOpKey(key));
    return std::optional<DType>(v.out_dtype);
  }
  return std::optional<DType>();
}

std::vector<std::string> TunableOpTypes() {
  std::vector<std::string> types = {"MatMul", "BatchMatMul", "Gemm", "Conv2D"};
  for (const std::string& t : VectorOpTypes()) types.push_back(t);
  for (const char* t : {"FusedMatMul", "FusedBatchMatMul", "FusedConv2D", kFusedElementwiseOp, kFlashAttentionOp}) {
    types.push_back(t);
  }
  return types;
}

}  // namespace tunefleet
