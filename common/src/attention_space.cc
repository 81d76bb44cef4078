#include "tunefleet/common/attention_space.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "tunefleet/common/matmul_space.h"
#include "space_util.h"

namespace tunefleet {
namespace {

using namespace space_util;

constexpr int64_t kS1Values[] = {16, 32, 64, 128, 256};
constexpr int64_t kS2Values[] = {64, 128, 256, 512, 1024};
constexpr int64_t kBufferValues[] = {1, 2};
constexpr int64_t kScoreBytes = 4;  // the scores and the output accumulator are fp32
constexpr int64_t kRowStatsBytes = 3 * 32;  // a row's max, sum and rescale factor, 32-byte aligned each

// A block (parameter `param`, named `block` in reasons) is at most the first value that
// covers its axis: a larger one only pads.
SearchSpace::Constraint WithinAxis(std::string name, size_t param, std::string block, int64_t smallest,
                                   std::string axis_name, int64_t axis) {
  return {std::move(name), [=](const SearchSpace&, const Config& c, std::string* why) -> bool {
            if (c[param] == smallest || c[param] / 2 < axis) return true;
            return Violated(why, [&] {
              return block + "=" + N(c[param]) + " is more than one block of " + axis_name + "=" + N(axis) +
                     " (a smaller block covers it)";
            });
          }};
}

}  // namespace

Result<AttentionShape> AttentionShapeFromOpKey(const OpKey& key) {
  if (key.op_type != kFlashAttentionOp) return InvalidArgument("op type '" + key.op_type + "' is not FlashAttention");
  if (key.inputs.size() < 3) {
    return InvalidArgument("FlashAttention needs q, k and v first, then the score chain's operands; got " +
                           N(static_cast<int64_t>(key.inputs.size())) + " input(s)");
  }
  const auto chain = key.attrs.find("scores");
  const bool has_chain = chain != key.attrs.end() && !chain->second.empty();
  // The scores are q x k as the graph's BatchMatMul ran them, the chain its epilogue.
  // Grouped-query attention: k and v with fewer heads than q, read as if repeated.
  const TensorDesc& q = key.inputs[0];
  TensorDesc k = key.inputs[1];
  int64_t group = 1;
  if (q.shape.size() >= 3 && k.shape.size() == q.shape.size()) {
    const size_t h = q.shape.size() - 3;
    const bool same_lead = std::equal(q.shape.begin(), q.shape.begin() + static_cast<std::ptrdiff_t>(h), k.shape.begin());
    if (same_lead && k.shape[h] > 0 && k.shape[h] != q.shape[h] && q.shape[h] % k.shape[h] == 0) {
      group = q.shape[h] / k.shape[h];
      k.shape[h] = q.shape[h];
    }
  }
  OpKey scores;
  scores.op_type = has_chain ? "FusedBatchMatMul" : "BatchMatMul";
  scores.soc = key.soc;
  scores.inputs = {q, k};
  scores.inputs.insert(scores.inputs.end(), key.inputs.begin() + 3, key.inputs.end());
  if (auto it = key.attrs.find("transpose_b"); it != key.attrs.end()) scores.attrs["transpose_b"] = it->second;
  if (has_chain) scores.attrs["epilogue"] = chain->second;
  if (!has_chain && key.inputs.size() > 3) {
    return InvalidArgument("FlashAttention has " + N(static_cast<int64_t>(key.inputs.size() - 3)) +
                           " input(s) after v but no attrs.scores: name the score chain that reads them (e.g. \"Div,Add\")");
  }
  const char* context =
      "FlashAttention's scores q x k (its inputs 0, 1, then 3.. as the FusedBatchMatMul's 0, 1, then 2..; attrs.scores as its "
      "epilogue)";
  AttentionShape s;
  MatmulShape gemm;
  if (has_chain) {
    Result<FusedCubeShape> fused = FusedCubeShapeFromOpKey(scores);
    if (!fused.ok()) return fused.status().WithContext(context);
    gemm = fused->gemm;
    s.scores = fused->epilogue;
    s.scores_shape = fused->out_shape;
  } else {
    Result<MatmulShape> plain = CubeGemmShapeFromOpKey(scores);
    if (!plain.ok()) return plain.status().WithContext(context);
    gemm = *plain;
    s.scores_shape = key.inputs[0].shape;
    if (s.scores_shape.size() >= 2) s.scores_shape.back() = gemm.n;
  }
  if (gemm.transpose_a) return InvalidArgument("FlashAttention's q is [..., Sq, D]: it takes no transpose_a");
  if (gemm.in_dtype != DType::kFloat16 && gemm.in_dtype != DType::kBFloat16 && gemm.in_dtype != DType::kInt8) {
    return InvalidArgument("FlashAttention input 0 dtype " + key.inputs[0].dtype + ": it runs float16, bfloat16 or int8");
  }
  s.batch = gemm.batch;
  s.sq = gemm.m;
  s.skv = gemm.n;
  s.d = gemm.k;
  s.k_rows = gemm.transpose_b;
  s.kv_group = group;
  s.dtype = gemm.in_dtype;
  s.out_dtype = s.dtype == DType::kInt8 ? DType::kFloat16 : s.dtype;
  if (auto e = key.attrs.find("epilogue"); e != key.attrs.end()) {
    if (e->second != "Quantize") {
      return InvalidArgument("FlashAttention attrs.epilogue='" + e->second +
                             "': it takes Quantize alone (the output written as int8)");
    }
    s.out_dtype = DType::kInt8;
  }
  TF_ASSIGN_OR_RETURN(s.causal, AttrFlag(key, {"causal"}));
  if (s.causal && s.skv < s.sq) {
    return InvalidArgument("a causal FlashAttention needs Skv >= Sq (each query sees the keys up to its own, the last Sq "
                           "of them); got Sq=" + N(s.sq) + ", Skv=" + N(s.skv));
  }
  if (s.causal && !has_chain) {
    return InvalidArgument("a causal FlashAttention applies its mask in the score chain: attrs.scores names none");
  }
  const TensorDesc& v = key.inputs[2];
  if (v.dtype != q.dtype) return InvalidArgument("FlashAttention input 2 (v) dtype " + v.dtype + " differs from q's " + q.dtype);
  if (v.format != "ND") return InvalidArgument("FlashAttention input 2 (v) format " + v.format + ": v is ND");
  const std::vector<int64_t> lead(q.shape.begin(), q.shape.end() - 2);
  std::vector<int64_t> v_lead(key.inputs[1].shape.begin(), key.inputs[1].shape.end() - 2);  // k's heads
  if (v.shape.size() != q.shape.size() || !std::equal(v_lead.begin(), v_lead.end(), v.shape.begin()) ||
      v.shape[v.shape.size() - 2] != s.skv || v.shape.back() <= 0) {
    return InvalidArgument("FlashAttention input 2 (v) shape " + ShapeText(v.shape) + " must be [..., Skv, Dv] with k's leading axes " +
                           ShapeText(v_lead) + " and Skv = " + N(s.skv) + " (k's keys)");
  }
  s.dv = v.shape.back();
  s.out_shape = lead;
  s.out_shape.push_back(s.sq);
  s.out_shape.push_back(s.dv);
  return s;
}

int64_t AttentionUnitKeys(const AttentionShape& shape, const AttentionTiling& tiling, int64_t block) {
  if (!shape.causal) return shape.skv;
  const int64_t last_row = std::min(shape.sq, (block + 1) * tiling.s1);  // one past it
  return std::clamp<int64_t>(last_row + shape.skv - shape.sq, 1, shape.skv);
}

AttentionBlocking ComputeAttentionBlocking(const AttentionShape& shape, const AttentionTiling& t, const SocSpec& soc) {
  AttentionBlocking b;
  b.vector_per_cube = std::max<int64_t>(1, soc.vector_core_cnt / std::max(1, soc.ai_core_cnt));
  b.rows_per_vector = CeilDiv(t.s1, b.vector_per_cube);
  const int64_t in = DTypeBytes(shape.dtype);
  const int64_t d = RoundUp(shape.d, 16), dv = RoundUp(shape.dv, 16);
  b.l1_bytes = (t.s1 * d + t.buffers * (t.s2 * d + t.s2 * dv + t.s1 * t.s2)) * in;
  // Every operand takes a block buffer, broadcast ones too (as the fused epilogue counts them).
  int64_t per_score = kScoreBytes + in;
  for (const FusedOperand& o : shape.scores.operands) per_score += DTypeBytes(o.dtype);
  const int64_t r = b.rows_per_vector;
  // The chain, the max's subtraction and the exp run in place on the scores.
  b.ub_bytes = t.buffers * r * t.s2 * per_score + 2 * r * dv * kScoreBytes + r * kRowStatsBytes;
  return b;
}

Result<SearchSpace> AttentionTilingSpace(const AttentionShape& shape, const SocSpec& soc) {
  std::vector<Parameter> params = {{"s1BaseSize", {std::begin(kS1Values), std::end(kS1Values)}},
                                   {"s2BaseSize", {std::begin(kS2Values), std::end(kS2Values)}},
                                   {"bufferNum", {std::begin(kBufferValues), std::end(kBufferValues)}}};
  const SocSpec spec = soc;
  std::vector<SearchSpace::Constraint> constraints;
  constraints.push_back(WithinAxis("s1 within Sq", 0, "s1BaseSize", kS1Values[0], "Sq", shape.sq));
  constraints.push_back(WithinAxis("s2 within Skv", 1, "s2BaseSize", kS2Values[0], "Skv", shape.skv));
  constraints.push_back({"L1 capacity", [shape, spec](const SearchSpace&, const Config& c, std::string* why) -> bool {
                           const AttentionBlocking b = ComputeAttentionBlocking(shape, AttentionTilingFromConfig(c), spec);
                           if (b.l1_bytes <= spec.l1_size) return true;
                           return Violated(why, [&] {
                             return "L1 footprint (s1*D + bufferNum*(s2*D + s2*Dv + s1*s2)) * dtype bytes = " + B(b.l1_bytes) +
                                    " exceeds l1_size " + B(spec.l1_size) + " (lower s1BaseSize, s2BaseSize or bufferNum)";
                           });
                         }});
  constraints.push_back({"UB capacity", [shape, spec](const SearchSpace&, const Config& c, std::string* why) -> bool {
                           const AttentionBlocking b = ComputeAttentionBlocking(shape, AttentionTilingFromConfig(c), spec);
                           if (b.ub_bytes <= spec.ub_size) return true;
                           return Violated(why, [&] {
                             return "UB footprint of a vector core's " + N(b.rows_per_vector) + " rows (scores, P and operands * bufferNum, " +
                                    "the output accumulator and P x v, row statistics) = " + B(b.ub_bytes) +
                                    " exceeds ub_size " + B(spec.ub_size) + " (lower s2BaseSize, s1BaseSize or bufferNum)";
                           });
                         }});
  return SearchSpace::Create(std::move(params), std::move(constraints));
}

AttentionTiling AttentionTilingFromConfig(const Config& config) { return {config[0], config[1], config[2]}; }

Config AttentionConfigFromTiling(const AttentionTiling& t) { return {t.s1, t.s2, t.buffers}; }

Result<Config> AttentionDefaultConfig(const AttentionShape& shape, const SocSpec& soc) {
  TF_ASSIGN_OR_RETURN(SearchSpace space, AttentionTilingSpace(shape, soc));
  // CANN's default block, each side halved (the keys' side first) until it fits; at the
  // axis's own size when that is smaller.
  auto clamp = [](int64_t want, int64_t axis, const auto& values) {
    for (int64_t v : values) {
      if (v >= axis) return std::min(want, v);
    }
    return want;
  };
  for (int64_t buffers : {2, 1}) {
    for (int64_t s1 = clamp(128, shape.sq, kS1Values); s1 >= kS1Values[0]; s1 /= 2) {
      for (int64_t s2 = clamp(128, shape.skv, kS2Values); s2 >= kS2Values[0]; s2 /= 2) {
        Config c = AttentionConfigFromTiling({s1, s2, buffers});
        if (space.IsValid(c)) return c;
      }
    }
  }
  Status why = space.Validate(AttentionConfigFromTiling({kS1Values[0], kS2Values[0], 1}));
  return InvalidArgument("no FlashAttention tiling fits D=" + N(shape.d) + ", Dv=" + N(shape.dv) + ": " + why.message());
}

}  // namespace tunefleet
