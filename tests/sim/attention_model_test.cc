// FlashAttention (common/attention_space.h, worker/sim/attention_model.h) against
// NPU_MODEL.md's sanity list and what fusing attention is for: the [Sq, Skv] scores
// never reach HBM, so one kernel beats the three it replaces (the scores' BatchMatMul with
// its chain, the Softmax, P x v) where the scores are large; no config beats the
// roofline; ping-pong pays when both sides are busy; a block too large for L1 or UB is
// refused with a reason naming the buffer; the key's mistakes are named.
#include "worker/sim/attention_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

using test_support::Inputs;

OpKey Key(const std::string& op, std::vector<TensorDesc> inputs, std::map<std::string, std::string> attrs = {}) {
  return test_support::TestKey(op, std::move(inputs), std::move(attrs));
}

// Stable Diffusion's UNet self-attention at 64x64 latents: 2 x 8 heads, 4096 tokens, head size 40,
// scaled by a Mul, k given [D, Skv] as the export's view of k.transpose(-2, -1).
OpKey SdAttention() {
  return Key("FlashAttention", Inputs({{2, 8, 4096, 40}, {2, 8, 40, 4096}, {2, 8, 4096, 40}, {1}}), {{"scores", "Mul"}});
}

class AttentionModel : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  KernelEstimate Run(const OpKey& key, const Config* config = nullptr) {
    TuningProblem p = test_support::ProblemOrFail(key, soc());
    auto e = Simulate(p, config ? *config : p.default_config, soc());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : KernelEstimate{};
  }
};

// GPT-2's attention at 1024 tokens: 8 x 12 heads, divided by the scale, then the Where of
// its int8 [1, 1, 1024, 1024] mask; causal when the mask is one (attrs.causal).
OpKey Gpt2Attention(bool causal, int64_t sq = 1024, int64_t skv = 1024) {
  std::vector<TensorDesc> in = Inputs({{8, 12, sq, 64}, {8, 12, 64, skv}, {8, 12, skv, 64}, {1}});
  in.push_back(TensorDesc{{1, 1, sq, skv}, "int8", "ND"});
  in.push_back(TensorDesc{{1}, "float16", "ND"});
  std::map<std::string, std::string> attrs{{"scores", "Div,Where"}};
  if (causal) attrs["causal"] = "1";
  return Key("FlashAttention", std::move(in), std::move(attrs));
}

OpKey BertAttention(const std::string& dtype = "float16") {
  return Key("FlashAttention",
             Inputs({{32, 12, 128, 64}, {32, 12, 64, 128}, {32, 12, 128, 64}, {1}, {32, 1, 1, 128}}, dtype),
             {{"scores", "Div,Add"}});
}

TEST_F(AttentionModel, OneKernelBeatsTheThreeItReplacesWhenTheScoresAreLarge) {
  const KernelEstimate fa = Run(SdAttention());
  const KernelEstimate scores =
      Run(Key("FusedBatchMatMul", Inputs({{2, 8, 4096, 40}, {2, 8, 40, 4096}, {1}}), {{"epilogue", "Mul"}}));
  const KernelEstimate softmax = Run(Key("Softmax", Inputs({{2, 8, 4096, 4096}})));
  const KernelEstimate pv = Run(Key("BatchMatMul", Inputs({{2, 8, 4096, 4096}, {2, 8, 4096, 40}})));
  const double unfused = scores.latency_us + softmax.latency_us + pv.latency_us;
  EXPECT_LT(fa.latency_us, 0.6 * unfused) << fa.latency_us << " us against " << unfused << " us";
  // HBM sees q, k, v, the output and the scale once: 4 x 16 x 4096 x 40 fp16 + 2 B.
  const double tensors = 4.0 * 16 * 4096 * 40 * 2;
  EXPECT_DOUBLE_EQ(fa.hbm_bytes, tensors + 2);
  EXPECT_DOUBLE_EQ(fa.compulsory_bytes, fa.hbm_bytes);
  // The scores (fp16, 16 x 4096 x 4096) went to HBM and back in the unfused kernels.
  EXPECT_GT(scores.hbm_bytes + softmax.hbm_bytes + pv.hbm_bytes, 10 * fa.hbm_bytes);
  EXPECT_GT(fa.l2_bytes, 16.0 * 4096 * 4096 * 4) << "the workspace's scores are L2 traffic";
  EXPECT_DOUBLE_EQ(fa.flops, 2.0 * 16 * 4096 * 4096 * 80);
  EXPECT_EQ(fa.block_dim, 24);
  EXPECT_GT(fa.BusyUs(Pipe::kCube), 0);
  EXPECT_GT(fa.BusyUs(Pipe::kVector), 0);
}

TEST_F(AttentionModel, NoConfigBeatsTheRoofline) {
  const OpKey whisper = Key("FlashAttention", Inputs({{8, 8, 1500, 64}, {8, 8, 64, 1500}, {8, 8, 1500, 64}}));
  for (const OpKey& key : {SdAttention(), BertAttention(), whisper, BertAttention("bfloat16"), Gpt2Attention(true)}) {
    TuningProblem p = test_support::ProblemOrFail(key, soc());
    size_t valid = 0;
    for (ConfigIndex i : p.space.EnumerateValid()) {
      const Config c = p.space.Decode(i);
      const KernelEstimate e = Run(key, &c);
      EXPECT_GE(e.latency_us, RooflineUs(e, soc())) << key.Canonical() << " " << p.space.Describe(c);
      EXPECT_GT(e.duration_us, 0);
      ++valid;
    }
    EXPECT_GE(valid, 8u) << key.Canonical();
  }
}

TEST_F(AttentionModel, PingPongPaysWhenBothSidesAreBusy) {
  TuningProblem p = test_support::ProblemOrFail(SdAttention(), soc());
  int pairs = 0;
  for (ConfigIndex i : p.space.EnumerateValid()) {
    const Config c = p.space.Decode(i);
    if (c[2] != 1) continue;
    const Config both = {c[0], c[1], 2};
    if (!p.space.IsValid(both)) continue;
    EXPECT_LT(Run(SdAttention(), &both).latency_us, Run(SdAttention(), &c).latency_us) << p.space.Describe(c);
    ++pairs;
  }
  EXPECT_GE(pairs, 5);
}

TEST_F(AttentionModel, TheDefaultIsCannsBlockAndLargerBlocksAreRefusedNamingTheBuffer) {
  TuningProblem p = test_support::ProblemOrFail(SdAttention(), soc());
  EXPECT_EQ(p.default_config, (Config{128, 128, 2}));
  const Status l1 = p.space.Validate({256, 1024, 2});
  EXPECT_NE(l1.message().find("L1 footprint"), std::string::npos) << l1.message();
  EXPECT_NE(l1.message().find("l1_size 524288 B"), std::string::npos) << l1.message();
  const Status ub = p.space.Validate({128, 512, 1});
  EXPECT_NE(ub.message().find("UB footprint"), std::string::npos) << ub.message();
  // BERT's 128 keys: one block of 128 covers them, 256 only pads.
  TuningProblem bert = test_support::ProblemOrFail(BertAttention(), soc());
  const Status pads = bert.space.Validate({128, 256, 1});
  EXPECT_NE(pads.message().find("more than one block of Skv=128"), std::string::npos) << pads.message();
}

TEST_F(AttentionModel, KRowsStreamInOneBurstWhereKColumnsTakeOnePerHeadElement) {
  const OpKey rows = Key("FlashAttention", Inputs({{2, 8, 4096, 40}, {2, 8, 4096, 40}, {2, 8, 4096, 40}}), {{"transpose_b", "1"}});
  const OpKey columns = Key("FlashAttention", Inputs({{2, 8, 4096, 40}, {2, 8, 40, 4096}, {2, 8, 4096, 40}}));
  const KernelEstimate r = Run(rows), c = Run(columns);
  EXPECT_LT(r.BusyUs(Pipe::kMte2), c.BusyUs(Pipe::kMte2));
  EXPECT_LE(r.latency_us, c.latency_us);
  EXPECT_DOUBLE_EQ(r.hbm_bytes, c.hbm_bytes);
}

TEST_F(AttentionModel, TheKeysMistakesAreNamed) {
  auto error = [&](const OpKey& key) {
    auto p = MakeTuningProblem(key, soc());
    EXPECT_FALSE(p.ok()) << key.Canonical();
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 32, 40}}))).find("Skv = 64"),
            std::string::npos);
  std::vector<TensorDesc> int8_qk = Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}}, "int8");
  int8_qk.push_back(Inputs({{2, 8, 64, 40}})[0]);
  EXPECT_NE(error(Key("FlashAttention", int8_qk)).find("(v) dtype float16 differs from q's int8"), std::string::npos);
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 64, 40}, {1}}))).find("no attrs.scores"),
            std::string::npos);
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 64, 40}, {1}}), {{"scores", "Mull"}}))
                .find("'Mull' is not a chain op"),
            std::string::npos);
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 64, 40}, {3, 64}}), {{"scores", "Add"}}))
                .find("does not broadcast"),
            std::string::npos);
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}}))).find("needs q, k and v"), std::string::npos);
  EXPECT_NE(error(Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 64, 40}}), {{"scale", "0.1"}}))
                .find("has no attribute 'scale'"),
            std::string::npos);
}

// A QDQ model's BERT attention: q, k and v int8, the scale and mask float16.
OpKey BertInt8Attention() {
  std::vector<TensorDesc> in = Inputs({{32, 12, 128, 64}, {32, 12, 64, 128}, {32, 12, 128, 64}}, "int8");
  for (const TensorDesc& t : Inputs({{1}, {32, 1, 1, 128}})) in.push_back(t);
  return Key("FlashAttention", std::move(in), {{"scores", "Div,Add"}});
}

// CANN's quantized FlashAttention: the cube packs 32 int8 elements of K in a fractal where
// it packs 16 fp16 ones, so each step's two GEMMs take half the cycles; q, k and v are
// read in half the bytes, the output is written float16 all the same, or int8 when
// quantized.
TEST_F(AttentionModel, AnInt8AttentionPacksInt8FractalsAndWritesFloat16UnlessQuantized) {
  const OpKey int8 = BertInt8Attention(), fp16 = BertAttention();
  auto shape8 = AttentionShapeFromOpKey(int8);
  auto shape16 = AttentionShapeFromOpKey(fp16);
  ASSERT_TRUE(shape8.ok()) << shape8.status().ToString();
  ASSERT_TRUE(shape16.ok()) << shape16.status().ToString();
  EXPECT_EQ(shape8->dtype, DType::kInt8);
  EXPECT_EQ(shape8->out_dtype, DType::kFloat16);
  EXPECT_EQ(shape16->out_dtype, DType::kFloat16);
  auto written = WrittenDType(int8);
  ASSERT_TRUE(written.ok() && written->has_value()) << written.status().ToString();
  EXPECT_EQ(**written, DType::kFloat16);
  const AttentionTiling t{128, 128, 2};
  AttentionPlan plan8, plan16;
  const KernelEstimate e8 = EstimateAttention(*shape8, t, soc(), &plan8);
  const KernelEstimate e16 = EstimateAttention(*shape16, t, soc(), &plan16);
  EXPECT_DOUBLE_EQ(plan8.full.cube, plan16.full.cube / 2) << "D = 64 and the keys' 128 are whole int8 fractals";
  // q, k and v are 3 of the 4 [32, 12, 128, 64] tensors read or written: 5/8 of the bytes.
  const double qkvo = 32.0 * 12 * 128 * 64 * 2;  // one of them in float16
  EXPECT_NEAR(e16.compulsory_bytes - e8.compulsory_bytes, 3 * qkvo / 2, 1);
  EXPECT_LT(e8.latency_us, e16.latency_us);
  EXPECT_LT(plan8.o_write, 1.01 * plan16.o_write);
  EXPECT_GT(plan8.o_write, 0.99 * plan16.o_write) << "the output is float16 either way";
  // Quantized as it is written (attrs.epilogue Quantize, `fuse`'s for an int8 projection
  // after it): int8 out, a byte an element less.
  OpKey quantized = int8;
  quantized.attrs["epilogue"] = "Quantize";
  auto shape_q = AttentionShapeFromOpKey(quantized);
  ASSERT_TRUE(shape_q.ok()) << shape_q.status().ToString();
  EXPECT_EQ(shape_q->out_dtype, DType::kInt8);
  AttentionPlan plan_q;
  const KernelEstimate eq = EstimateAttention(*shape_q, t, soc(), &plan_q);
  EXPECT_NEAR(e8.compulsory_bytes - eq.compulsory_bytes, qkvo / 2, 1);
  EXPECT_LT(plan_q.o_write, plan8.o_write);
  EXPECT_LE(eq.latency_us, e8.latency_us);
  quantized.attrs["epilogue"] = "Relu";
  auto refused = AttentionShapeFromOpKey(quantized);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("takes Quantize alone"), std::string::npos) << refused.status().message();
}

TEST_F(AttentionModel, TheEventSimulationAgreesWithTheFastPathWithinTwoPercentOnEveryConfig) {
  const OpKey whisper = Key("FlashAttention", Inputs({{8, 8, 1500, 64}, {8, 8, 64, 1500}, {8, 8, 1500, 64}}));
  const OpKey odd = Key("FlashAttention", Inputs({{3, 5, 77, 24}, {3, 5, 77, 24}, {3, 5, 77, 40}}), {{"transpose_b", "1"}});
  double worst = 0;
  size_t configs = 0;
  const OpKey odd_causal = Key("FlashAttention", Inputs({{3, 5, 77, 24}, {3, 5, 77, 24}, {3, 5, 77, 40}, {1, 1, 77, 77}}),
                                {{"transpose_b", "1"}, {"scores", "Add"}, {"causal", "1"}});
  for (const OpKey& key : {SdAttention(), BertAttention(), BertInt8Attention(), whisper, odd, Gpt2Attention(true), odd_causal}) {
    TuningProblem p = test_support::ProblemOrFail(key, soc());
    auto prepared = Prepare(p, soc());
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    for (ConfigIndex i : p.space.EnumerateValid()) {
      const Config c = p.space.Decode(i);
      const KernelEstimate fast = Run(key, &c);
      auto events = SimulateEvents(*prepared, c, soc(), {true});
      ASSERT_TRUE(events.ok()) << events.status().ToString();
      const double off = std::abs(events->estimate.latency_us / fast.latency_us - 1);
      EXPECT_LT(off, 0.02) << key.Canonical() << " " << p.space.Describe(c);
      worst = std::max(worst, off);
      ++configs;
      EXPECT_GE(events->estimate.latency_us, RooflineUs(events->estimate, soc()));
      // Cube cores, then their vector cores; each step's scores drain before its softmax.
      const Timeline& tl = events->timeline;
      ASSERT_GE(tl.cores.size(), 2u);
      EXPECT_LT(tl.cores[0].core_ids.back(), soc().ai_core_cnt);
      EXPECT_GE(tl.cores[1].core_ids.front(), soc().ai_core_cnt);
      const auto& drains = tl.cores[0].Of(Pipe::kFixpipe);
      const auto& softmax = tl.cores[1].Of(Pipe::kVector);
      ASSERT_FALSE(drains.empty());
      EXPECT_GE(softmax.front().start_us, drains.front().end_us);
    }
  }
  EXPECT_GT(configs, 40u);
  std::printf("FlashAttention: %zu configs, event simulation within %.2f%% of the fast path\n", configs, 100 * worst);
}

// CANN's sparse_mode 3: a query block walks only the keys up to its last row's own. At
// 1024 tokens in blocks of 128 that is 36 of the 64 blocks of each head, and the units,
// now of 1 to 8 blocks, are spread over the cores so that each does a fair share.
TEST_F(AttentionModel, ACausalMaskSkipsTheKeyBlocksItMasksWhole) {
  const KernelEstimate full = Run(Gpt2Attention(false)), causal = Run(Gpt2Attention(true));
  const double share = 36.0 / 64;
  EXPECT_DOUBLE_EQ(causal.flops, share * full.flops);
  const double tensors = 4.0 * 96 * 1024 * 64 * 2, operands = 2 + 1024 * 1024 + 2;
  EXPECT_DOUBLE_EQ(full.hbm_bytes, tensors + operands);
  EXPECT_DOUBLE_EQ(causal.hbm_bytes, tensors + share * operands) << "k and v are all read; the mask's blocks computed";
  EXPECT_LT(causal.l2_bytes, 0.6 * full.l2_bytes) << "the workspace of the blocks skipped";
  // The busiest core does a fair share: 36 blocks of each of 96 heads over 24 cores, 144
  // blocks, against 256 without the mask.
  const double cube = causal.BusyUs(Pipe::kCube) / full.BusyUs(Pipe::kCube);
  EXPECT_GT(cube, share - 0.005);
  EXPECT_LT(cube, share + 0.02);
  EXPECT_LT(causal.latency_us, 0.62 * full.latency_us) << causal.latency_us << " us against " << full.latency_us;
  EXPECT_GE(causal.latency_us, RooflineUs(causal, soc()));
  // Each head's units all assigned once, and no core over a fair share by more than the longest unit.
  auto shape = AttentionShapeFromOpKey(Gpt2Attention(true));
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  AttentionPlan plan;
  TuningProblem p = test_support::ProblemOrFail(Gpt2Attention(true), soc());
  EstimateAttention(*shape, AttentionTilingFromConfig(p.default_config), soc(), &plan);
  ASSERT_EQ(plan.kinds.size(), 8u);
  std::vector<int64_t> assigned(plan.kinds.size(), 0);
  double most = 0, least = 1e300, total = 0;
  for (const std::vector<int>& units : AssignAttentionUnits(plan)) {
    double load = 0;
    for (int k : units) {
      ++assigned[static_cast<size_t>(k)];
      load += plan.kinds[static_cast<size_t>(k)].cycles;
    }
    most = std::max(most, load);
    least = std::min(least, load);
    total += load;
  }
  const AttentionTiling tiling = AttentionTilingFromConfig(p.default_config);
  ASSERT_EQ(tiling.s1, 128);  // the 8 query blocks, of 128 to 1024 keys
  for (size_t k = 0; k < plan.kinds.size(); ++k) {
    EXPECT_EQ(assigned[k], 96) << "query block " << k;
    EXPECT_EQ(plan.kinds[k].keys, 128 * static_cast<int64_t>(k + 1));
    EXPECT_EQ(plan.kinds[k].steps, 128 * static_cast<int64_t>(k + 1) / tiling.s2);
  }
  EXPECT_LE(most - least, plan.kinds.back().cycles);
  EXPECT_DOUBLE_EQ(causal.duration_us * soc().CyclesPerUs(), most);
  EXPECT_LT(most, 1.05 * total / 24);
}

// A chunk of 128 queries after 896 cached keys: every query sees every key up to its own,
// which for a single block of 128 is all of them.
TEST_F(AttentionModel, ACausalChunkAfterCachedKeysSeesTheKeysUpToItsOwn) {
  EXPECT_DOUBLE_EQ(Run(Gpt2Attention(true, 128, 1024)).latency_us, Run(Gpt2Attention(false, 128, 1024)).latency_us);
  const Config c = AttentionConfigFromTiling({64, 128, 2});  // two query blocks: 960 and 1024 keys
  EXPECT_LT(Run(Gpt2Attention(true, 128, 1024), &c).flops, Run(Gpt2Attention(false, 128, 1024), &c).flops);
  auto error = [&](const OpKey& key) {
    auto p = MakeTuningProblem(key, soc());
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_NE(error(Gpt2Attention(true, 1024, 128)).find("needs Skv >= Sq"), std::string::npos) << error(Gpt2Attention(true, 1024, 128));
  OpKey yes = Gpt2Attention(true);
  yes.attrs["causal"] = "yes";
  EXPECT_NE(error(yes).find("attrs.causal='yes' is not a flag"), std::string::npos) << error(yes);
  const OpKey no_chain = Key("FlashAttention", Inputs({{2, 8, 64, 40}, {2, 8, 40, 64}, {2, 8, 64, 40}}), {{"causal", "1"}});
  EXPECT_NE(error(no_chain).find("attrs.scores names none"), std::string::npos) << error(no_chain);
}

// Llama-3-8B's grouped-query attention: 32 query heads, 8 key/value heads.
TEST_F(AttentionModel, GroupedQueryAttentionReadsEachKeyAndValueHeadOnceFromHbm) {
  const OpKey gqa = Key("FlashAttention", Inputs({{1, 32, 2048, 128}, {1, 8, 2048, 128}, {1, 8, 2048, 128}}), {{"transpose_b", "1"}});
  const OpKey repeated = Key("FlashAttention", Inputs({{1, 32, 2048, 128}, {1, 32, 2048, 128}, {1, 32, 2048, 128}}), {{"transpose_b", "1"}});
  TuningProblem p = test_support::ProblemOrFail(gqa, soc());
  auto shape = AttentionShapeFromOpKey(gqa);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->kv_group, 4);
  EXPECT_EQ(shape->batch, 32);
  const KernelEstimate g = Run(gqa), r = Run(repeated);
  const double head = 2048.0 * 128 * 2;  // one head's [2048, 128] in fp16
  EXPECT_DOUBLE_EQ(g.hbm_bytes, 32 * 2 * head + 8 * 2 * head) << "q and the output per query head, k and v per key head";
  EXPECT_DOUBLE_EQ(r.hbm_bytes, 32 * 4 * head);
  EXPECT_DOUBLE_EQ(g.l2_bytes - r.l2_bytes, 24 * 2 * head) << "the group's other heads re-read k and v from L2";
  EXPECT_LE(g.latency_us, r.latency_us);
  EXPECT_DOUBLE_EQ(g.flops, r.flops);
  auto bad = MakeTuningProblem(Key("FlashAttention", Inputs({{1, 32, 2048, 128}, {1, 5, 2048, 128}, {1, 5, 2048, 128}}),
                                   {{"transpose_b", "1"}}),
                               soc());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("batch dimensions differ"), std::string::npos) << bad.status().message();
}

TEST_F(AttentionModel, RunsOnEverySoc) {
  for (const std::string& name : catalog_.Names()) {
    const SocSpec& spec = *catalog_.Find(name).value();
    OpKey key = BertAttention();
    key.soc = name;
    TuningProblem p = test_support::ProblemOrFail(key, spec);
    auto e = Simulate(p, p.default_config, spec);
    ASSERT_TRUE(e.ok()) << name << ": " << e.status().ToString();
    EXPECT_GE(e->latency_us, RooflineUs(*e, spec)) << name;
  }
}

}  // namespace
}  // namespace tunefleet::sim
