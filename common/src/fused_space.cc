#include "tunefleet/common/fused_space.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "matmul_space_impl.h"
#include "space_util.h"

namespace tunefleet {
namespace {

using namespace space_util;

constexpr int64_t kAccBytes = 4;  // the cube's accumulator (fp32 / int32) the epilogue reads
constexpr int64_t kEpiSplits[] = {1, 2, 4, 8};

struct ChainOpInfo {
  const char* name;
  VectorOp op;
  int operands;
  int temps;  // as vector_space.cc: Gelu and Tanh keep one intermediate beside the value
  bool int8_ok;
  bool bias;
};

constexpr ChainOpInfo kChainOps[] = {
    {"BiasAdd", VectorOp::kAdd, 1, 0, true, true},
    {"Add", VectorOp::kAdd, 1, 0, true, false},
    {"Sub", VectorOp::kSub, 1, 0, true, false},
    {"Mul", VectorOp::kMul, 1, 0, true, false},
    {"Div", VectorOp::kDiv, 1, 0, false, false},
    {"FusedMulAdd", VectorOp::kFusedMulAdd, 2, 0, false, false},
    {"Relu", VectorOp::kRelu, 0, 0, true, false},
    {"Clip", VectorOp::kClip, 0, 0, true, false},
    {"Gelu", VectorOp::kGelu, 0, 1, false, false},
    {"Sigmoid", VectorOp::kSigmoid, 0, 0, false, false},
    {"Silu", VectorOp::kSilu, 0, 1, false, false},
    {"Tanh", VectorOp::kTanh, 0, 1, false, false},
    {"Exp", VectorOp::kExp, 0, 0, false, false},
    {"HardSigmoid", VectorOp::kHardSigmoid, 0, 0, false, false},
    {"HardSwish", VectorOp::kHardSwish, 0, 1, false, false},
    {"LeakyRelu", VectorOp::kLeakyRelu, 0, 1, false, false},
    // The chain's value quantized to int8 as it is written (CANN's AscendQuant fused into
    // the op before it, a QDQ model's QuantizeLinear): a vconv; the chain's last op.
    {"Quantize", VectorOp::kCast, 0, 0, false, false},
    // where(condition, x, y): GPT-2's causal mask; the condition (int8 or bool read as int8)
    // and y are its operands, in that order.
    {"Where", VectorOp::kWhere, 2, 0, false, false},
};

const ChainOpInfo* FindChainOp(std::string_view name) {
  for (const ChainOpInfo& o : kChainOps) {
    if (name == o.name) return &o;
  }
  return nullptr;
}


// Parses attrs[attr] ("BiasAdd,Gelu": op names joined by commas, no spaces, so one chain
// has one op key) into steps; operands are numbered in order.
Result<FusedChain> ParseChain(const OpKey& key, const char* attr) {
  auto it = key.attrs.find(attr);
  if (it == key.attrs.end() || it->second.empty()) {
    return InvalidArgument(key.op_type + " needs attrs." + attr + ", the chain of ops joined by commas (e.g. \"BiasAdd,Gelu\")");
  }
  std::string known;
  for (const std::string& n : FusedChainOpNames()) known += (known.empty() ? "" : ", ") + n;
  FusedChain chain;
  const std::string& text = it->second;
  for (const std::string& name : SplitCommas(text)) {
    const ChainOpInfo* info = FindChainOp(name);
    if (info == nullptr) {
      return InvalidArgument(key.op_type + " attrs." + attr + "='" + text + "': '" + name +
                             "' is not a chain op (write the ops joined by ',' without spaces; ops: " + known + ")");
    }
    FusedStep step;
    step.op = info->op;
    step.bias = info->bias;
    step.first_operand = static_cast<int>(chain.operands.size());
    step.operands = info->operands;
    chain.steps.push_back(step);
    if (chain.quantized) {
      return InvalidArgument(key.op_type + " attrs." + attr + "='" + text +
                             "': Quantize writes the int8 output, so it is the chain's last op");
    }
    chain.quantized = name == "Quantize";
    chain.ops.push_back(info->op);
    chain.operands.resize(chain.operands.size() + static_cast<size_t>(info->operands));
    chain.temps = std::max(chain.temps, info->temps);
  }
  return chain;
}

bool ChainInt8Ok(const OpKey& key, const char* attr) {
  for (const std::string& name : SplitCommas(key.attrs.at(attr))) {
    const ChainOpInfo* info = FindChainOp(name);
    if (info == nullptr || !info->int8_ok) return false;
  }
  return true;
}

// The step that consumes operand `index` (for error messages).
const FusedStep& StepOf(const FusedChain& chain, int index) {
  for (const FusedStep& s : chain.steps) {
    if (index >= s.first_operand && index < s.first_operand + s.operands) return s;
  }
  return chain.steps.back();
}

std::shared_ptr<const SearchSpace> CubeSpace(const FusedCubeShape& shape, const SocSpec& soc, Status& status) {
  Result<SearchSpace> space =
      shape.conv ? Conv2dTilingSpace(shape.conv2d, soc) : MatmulTilingSpace(shape.gemm, soc);
  if (!space.ok()) {
    status = space.status();
    return nullptr;
  }
  return std::make_shared<const SearchSpace>(std::move(space).value());
}

}  // namespace

const std::vector<std::string>& FusedChainOpNames() {
  static const std::vector<std::string> kNames = NamesOf(kChainOps);
  return kNames;
}

bool IsFusedCubeOpType(std::string_view op_type) { return !FusedCubeInnerOpType(op_type).empty(); }

std::string FusedCubeInnerOpType(std::string_view op_type) {
  if (op_type == "FusedMatMul") return "MatMul";
  if (op_type == "FusedBatchMatMul") return "BatchMatMul";
  if (op_type == "FusedConv2D") return "Conv2D";
  return "";
}

Result<OpKey> FusedCubeInnerKey(const OpKey& key) {
  OpKey inner = key;
  inner.op_type = FusedCubeInnerOpType(key.op_type);
  if (inner.op_type.empty()) return InvalidArgument("op type '" + key.op_type + "' is not a fused cube op");
  if (key.inputs.size() < 2) {
    return InvalidArgument(key.op_type + " needs the " + inner.op_type +
                           "'s two inputs first, then the epilogue's operands; got " + N(static_cast<int64_t>(key.inputs.size())));
  }
  inner.inputs.resize(2);
  inner.attrs.erase("epilogue");
  inner.attrs.erase("value_out");
  // Inside the fused kernel the cube hands its fp32 accumulator to the epilogue.
  auto in = ParseDType(inner.inputs[0].dtype);
  if (!in.ok() || *in != DType::kInt8) inner.attrs["out_dtype"] = "float32";
  return inner;
}

Result<FusedCubeShape> FusedCubeShapeFromOpKey(const OpKey& key) {
  TF_ASSIGN_OR_RETURN(OpKey inner, FusedCubeInnerKey(key));
  FusedCubeShape s;
  if (inner.op_type == "Conv2D") {
    s.conv = true;
    TF_ASSIGN_OR_RETURN(s.conv2d, Conv2dShapeFromOpKey(inner));
    s.gemm = Conv2dGemm(s.conv2d);
    s.out_shape = {s.conv2d.batch, s.conv2d.out_channels, s.conv2d.out_h, s.conv2d.out_w};
  } else {
    TF_ASSIGN_OR_RETURN(s.gemm, CubeGemmShapeFromOpKey(inner));
    const std::vector<int64_t>& a = key.inputs[0].shape;
    if (inner.op_type == "BatchMatMul") {
      s.out_shape.assign(a.begin(), a.end() - 2);
      s.out_shape.push_back(s.gemm.transpose_a ? a[a.size() - 1] : a[a.size() - 2]);
      s.out_shape.push_back(s.gemm.n);
    } else {
      s.out_shape = {s.gemm.m, s.gemm.n};
    }
  }
  s.out_elements = Elements(s.out_shape);
  // The cube writes its accumulator to the epilogue's L2 workspace; the epilogue
  // writes the op's output (out_dtype below).
  s.conv2d.out_bytes = kAccBytes;
  s.gemm.out_bytes = kAccBytes;
  s.dequant = s.gemm.in_dtype == DType::kInt8;
  s.out_dtype = s.gemm.in_dtype == DType::kBFloat16 ? DType::kBFloat16 : DType::kFloat16;
  TF_ASSIGN_OR_RETURN(s.epilogue, ParseChain(key, "epilogue"));
  if (auto v = key.attrs.find("value_out"); v != key.attrs.end()) {
    // The value before the Quantize, in the dtype the op writes unquantized.
    const DType value = s.out_dtype;
    if (!s.epilogue.quantized || v->second != DTypeName(value)) {
      return InvalidArgument(key.op_type + " attrs.value_out='" + v->second + "': only an epilogue ending in Quantize " +
                             "also writes its value, in " + std::string(DTypeName(value)) + " (epilogue '" +
                             key.attrs.at("epilogue") + "')");
    }
    s.value_out_bytes = DTypeBytes(value);
  }
  if (s.epilogue.quantized) s.out_dtype = DType::kInt8;
  const size_t want = 2 + s.epilogue.operands.size();
  if (key.inputs.size() != want) {
    return InvalidArgument(key.op_type + " with epilogue '" + key.attrs.at("epilogue") + "' needs " + N(static_cast<int64_t>(want)) +
                           " inputs (the " + inner.op_type + "'s two, then " + N(static_cast<int64_t>(want - 2)) +
                           " operand(s) in chain order), got " + N(static_cast<int64_t>(key.inputs.size())));
  }
  const int64_t channels = s.conv ? s.conv2d.out_channels : s.gemm.n;
  bool needs_cast = false;
  for (size_t i = 0; i < s.epilogue.operands.size(); ++i) {
    const TensorDesc& t = key.inputs[2 + i];
    const std::string where = key.op_type + " input " + N(static_cast<int64_t>(2 + i));
    FusedOperand& o = s.epilogue.operands[i];
    TF_ASSIGN_OR_RETURN(o.dtype, ParseDType(t.dtype));
    const FusedStep& of = StepOf(s.epilogue, static_cast<int>(i));
    const bool condition = of.op == VectorOp::kWhere && static_cast<int>(i) == of.first_operand;
    if ((o.dtype == DType::kInt8 && !condition) || IsIndexDType(o.dtype)) {
      return InvalidArgument(where + " dtype " + t.dtype +
                             ": epilogue operands are float16, bfloat16 or float32 (a Where's condition also int8)");
    }
    if (t.format != "ND") return InvalidArgument(where + " format " + t.format + ": epilogue operands are ND");
    needs_cast = needs_cast || o.dtype != DType::kFloat32;
    o.elements = Elements(t.shape);
    o.full = t.shape == s.out_shape;
    const FusedStep& step = StepOf(s.epilogue, static_cast<int>(i));
    if (step.bias) {
      // A bias is one value per output channel: N of the GEMM, Cout of NCHW (given as
      // [Cout], [Cout,1,1] or [1,Cout,1,1], as CANN's BiasAdd takes it).
      const bool row = o.elements == channels &&
                       (s.conv ? t.shape.back() == channels || BroadcastsTo(t.shape, {channels, 1, 1})
                               : BroadcastsTo(t.shape, s.out_shape));
      if (!row) {
        return InvalidArgument(where + " (BiasAdd's bias) shape " + ShapeText(t.shape) + " must hold one value per output channel: [" +
                               N(channels) + "]" + (s.conv ? " or [" + N(channels) + ",1,1]" : ""));
      }
      o.full = false;
      continue;
    }
    if (!o.full && !BroadcastsTo(t.shape, s.out_shape)) {
      return InvalidArgument(where + " shape " + ShapeText(t.shape) + " does not broadcast to the output " + ShapeText(s.out_shape) +
                             ": " + kBroadcastRule);
    }
  }
  if (needs_cast) s.epilogue.temps += 1;  // an operand is cast to fp32 beside the accumulator
  return s;
}

EpilogueBlocking ComputeEpilogueBlocking(const FusedCubeShape& shape, const MatmulTiling& t,
                                         int64_t epi_split, const SocSpec& soc) {
  EpilogueBlocking b;
  b.vector_per_cube = std::max<int64_t>(1, soc.vector_core_cnt / std::max(1, soc.ai_core_cnt));
  b.rows_per_vector = CeilDiv(t.base_m, b.vector_per_cube);
  b.sub_rows = CeilDiv(b.rows_per_vector, std::max<int64_t>(1, epi_split));
  b.sub_elements = b.sub_rows * t.base_n;
  b.bytes_per_element =
      kAccBytes + DTypeBytes(shape.out_dtype) + shape.value_out_bytes + shape.epilogue.temps * kAccBytes;
  // Every operand takes a sub-tile buffer, broadcast ones too (conservative, as the
  // element-wise space counts them).
  for (const FusedOperand& o : shape.epilogue.operands) b.bytes_per_element += DTypeBytes(o.dtype);
  b.ub_bytes = b.sub_elements * b.bytes_per_element * 2;
  return b;
}

Result<SearchSpace> FusedCubeTilingSpace(const FusedCubeShape& shape, const SocSpec& soc) {
  Status status;
  std::shared_ptr<const SearchSpace> cube = CubeSpace(shape, soc, status);
  if (!cube) return status;
  std::vector<Parameter> params = cube->params();
  params.push_back({"epiSplit", {std::begin(kEpiSplits), std::end(kEpiSplits)}});
  const SocSpec spec = soc;
  std::vector<SearchSpace::Constraint> constraints;
  // The cube op's own constraints, on the config's first 13 values; the reason keeps
  // their names ("L0A capacity: ...").
  constraints.push_back({"cube tiling", [cube](const SearchSpace&, const Config& c, std::string* why) {
                           // Reused per thread: spaces validate millions of configs.
                           thread_local Config prefix;
                           prefix.assign(c.begin(), c.begin() + kFusedEpiSplitParam);
                           if (!why) return cube->IsValid(prefix);
                           Status valid = cube->Validate(prefix);
                           if (!valid.ok()) *why = valid.message();
                           return valid.ok();
                         }});
  constraints.push_back({"epilogue split fits the tile", [shape, spec](const SearchSpace&, const Config& c, std::string* why) -> bool {
                           const int64_t split = FusedEpiSplitFromConfig(c);
                           const EpilogueBlocking b = ComputeEpilogueBlocking(shape, FusedCubeTilingFromConfig(c), split, spec);
                           if (split > b.rows_per_vector) {
                             return Violated(why, [&] { return "epiSplit=" + N(split) + " exceeds the " + N(b.rows_per_vector) +
                                    " rows of a baseM tile each vector core takes"; });
                           }
                           return true;
                         }});
  constraints.push_back({"epilogue UB capacity", [shape, spec](const SearchSpace&, const Config& c, std::string* why) -> bool {
                           const int64_t split = FusedEpiSplitFromConfig(c);
                           const EpilogueBlocking b = ComputeEpilogueBlocking(shape, FusedCubeTilingFromConfig(c), split, spec);
                           if (b.ub_bytes > spec.ub_size) {
                             return Violated(why, [&] { return "UB footprint of an epilogue sub-tile sub_rows*baseN*(accumulator+operands+output+temps bytes)*2 = " +
                                    N(b.sub_rows) + "*" + N(c[1]) + "*" + N(b.bytes_per_element) + "*2 = " + B(b.ub_bytes) +
                                    " exceeds ub_size " + B(spec.ub_size) + " (raise epiSplit or lower baseM/baseN)"; });
                           }
                           return true;
                         }});
  return SearchSpace::Create(std::move(params), std::move(constraints));
}

MatmulTiling FusedCubeTilingFromConfig(const Config& config) { return MatmulTilingFromConfig(config); }

int64_t FusedEpiSplitFromConfig(const Config& config) { return config[kFusedEpiSplitParam]; }

Result<Config> FusedCubeDefaultConfig(const FusedCubeShape& shape, const SocSpec& soc) {
  MatmulTiling t;
  if (shape.conv) {
    TF_ASSIGN_OR_RETURN(t, Conv2dDefaultTiling(shape.conv2d, soc));
  } else {
    t = MatmulDefaultTiling(shape.gemm, soc);
  }
  TF_ASSIGN_OR_RETURN(SearchSpace space, FusedCubeTilingSpace(shape, soc));
  // Halve baseN only if not even epiSplit 8 fits (a chain with many operands).
  for (; t.base_n >= 16; t.base_n /= 2) {
    for (int64_t split : kEpiSplits) {
      Config c = MatmulConfigFromTiling(t);
      c.push_back(split);
      if (space.IsValid(c)) return c;
    }
  }
  return Internal("no fused default tiling fits (a bug)");
}

Result<VectorShape> FusedElementwiseShapeFromOpKey(const OpKey& key) {
  if (key.op_type != kFusedElementwiseOp) return InvalidArgument("op type '" + key.op_type + "' is not FusedElementwise");
  TF_ASSIGN_OR_RETURN(FusedChain chain, ParseChain(key, "ops"));
  const size_t want = 1 + chain.operands.size();
  if (key.inputs.size() != want) {
    return InvalidArgument("FusedElementwise with ops '" + key.attrs.at("ops") + "' needs " + N(static_cast<int64_t>(want)) +
                           " inputs (x, then " + N(static_cast<int64_t>(want - 1)) + " operand(s) in chain order), got " +
                           N(static_cast<int64_t>(key.inputs.size())));
  }
  const std::vector<int64_t>& out = key.inputs[0].shape;
  VectorShape s;
  s.op = VectorOp::kAdd;
  s.family = VectorFamily::kElementwise;
  s.chain = chain.ops;
  for (size_t i = 0; i < key.inputs.size(); ++i) {
    const TensorDesc& t = key.inputs[i];
    const std::string where = "FusedElementwise input " + N(static_cast<int64_t>(i));
    if (t.shape.empty()) return InvalidArgument(where + " shape is empty (give at least one axis)");
    for (int64_t d : t.shape) {
      if (d <= 0) return InvalidArgument(where + " shape " + ShapeText(t.shape) + " has a non-positive axis");
    }
    if (t.format != "ND") return InvalidArgument(where + " format " + t.format + ": vector ops take ND");
    if (t.dtype != key.inputs[0].dtype) {
      return InvalidArgument(where + " dtype " + t.dtype + " differs from input 0's " + key.inputs[0].dtype);
    }
    if (t.shape == out) {
      ++s.full_inputs;
      continue;
    }
    const FusedStep& step = StepOf(chain, static_cast<int>(i) - 1);
    if (!BroadcastsTo(t.shape, out) || (step.bias && Elements(t.shape) != out.back())) {
      return InvalidArgument(where + " shape " + ShapeText(t.shape) + " does not broadcast to x's " + ShapeText(out) +
                             (step.bias ? ": BiasAdd's bias is one value per element of x's last axis"
                                        : std::string(": ") + kBroadcastRule));
    }
    ++s.broadcast_inputs;
    s.broadcast_elements += Elements(t.shape);
  }
  TF_ASSIGN_OR_RETURN(s.dtype, ParseDType(key.inputs[0].dtype));
  if (IsIndexDType(s.dtype)) {
    return InvalidArgument("FusedElementwise input 0 dtype " + key.inputs[0].dtype +
                           ": " + kIndexDTypeRule + "; use float16, bfloat16, float32 or int8");
  }
  if (s.dtype == DType::kInt8 && !ChainInt8Ok(key, "ops")) {
    return InvalidArgument("FusedElementwise input 0 dtype int8: only a chain of Add, Sub, Mul, Relu and BiasAdd takes int8");
  }
  s.out_dtype = chain.quantized ? DType::kInt8 : s.dtype;
  s.elements = Elements(out);
  s.temps = chain.temps;
  // As vector_space.cc: the vector unit computes bf16 in fp32 and int8 in fp16, with one
  // cast temp per input.
  const int inputs = static_cast<int>(key.inputs.size());
  if (s.dtype == DType::kBFloat16) {
    s.compute_dtype = DType::kFloat32;
    s.temps += inputs;
  } else if (s.dtype == DType::kInt8) {
    s.compute_dtype = DType::kFloat16;
    s.temps += inputs;
  } else {
    s.compute_dtype = s.dtype;
  }
  return s;
}

}  // namespace tunefleet
