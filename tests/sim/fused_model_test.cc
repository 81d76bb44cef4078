// The fused ops (common/fused_space.h, worker/sim/fused_model.h) against NPU_MODEL.md's
// "Fusion" and sanity list: the fused op skips the intermediate's HBM round trip and a
// launch but adds the epilogue's vector time, so fused MatMul+Gelu beats MatMul then Gelu
// and never beats MatMul alone; no config beats the roofline; an element-wise chain
// streams at HBM speed; the event simulation schedules each epilogue after its tile's
// FIXPIPE interval and agrees with the fast path within 2% on every config of a sweep.
#include "worker/sim/fused_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey Key(const std::string& op, std::vector<TensorDesc> inputs, std::map<std::string, std::string> attrs = {}) {
  return test_support::TestKey(op, std::move(inputs), std::move(attrs));
}

OpKey Fused(const std::string& op, std::vector<TensorDesc> inputs, const std::string& epilogue,
            std::map<std::string, std::string> attrs = {}) {
  attrs["epilogue"] = epilogue;
  return Key(op, std::move(inputs), std::move(attrs));
}

OpKey Chain(const std::string& ops, std::vector<TensorDesc> inputs) {
  return Key("FusedElementwise", std::move(inputs), {{"ops", ops}});
}

class FusedModelTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  TuningProblem Problem(const OpKey& key) { return test_support::ProblemOrFail(key, soc()); }
  KernelEstimate Default(const OpKey& key) {
    TuningProblem p = Problem(key);
    auto e = Simulate(p, p.default_config, soc());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : KernelEstimate{};
  }
  EventSimResult Events(const TuningProblem& p, const Config& c, bool timeline = true) {
    auto prepared = Prepare(p, soc());
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    auto r = SimulateEvents(*prepared, c, soc(), {timeline});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : EventSimResult{};
  }
};

using FusedModel = FusedModelTest;

// BERT-base (batch 32, seq 128): the FFN's first MatMul with its bias and Gelu.
const TensorDesc kHidden{{4096, 768}};
const TensorDesc kFfn1W{{768, 3072}};
const TensorDesc kFfn1B{{3072}};

std::vector<OpKey> FusedSweepKeys() {
  return {
      Fused("FusedMatMul", {kHidden, kFfn1W, kFfn1B}, "BiasAdd,Gelu"),
      Fused("FusedMatMul", {{{4096, 3072}}, {{3072, 768}}, {{768}}, {{4096, 768}}}, "BiasAdd,Add"),
      Fused("FusedMatMul", {kHidden, {{768, 768}}, {{768}}}, "BiasAdd"),
      Fused("FusedMatMul", {{{100, 77}}, {{77, 300}}}, "Relu"),
      Fused("FusedMatMul", {{{512, 1000}}, {{1000, 48}}, {{48}}, {{512, 48}}, {{512, 48}}}, "BiasAdd,FusedMulAdd,Sigmoid"),
      Fused("FusedMatMul", {{{4096, 768}, "bfloat16"}, {{768, 3072}, "bfloat16"}, {{3072}, "bfloat16"}}, "BiasAdd,Gelu"),
      Fused("FusedMatMul", {{{2048, 1024}, "int8"}, {{1024, 1024}, "int8"}, {{1024}, "float32"}}, "BiasAdd,Relu"),
      Fused("FusedBatchMatMul", {{{384, 128, 64}}, {{384, 64, 128}}, {{1}}}, "Mul"),
      Fused("FusedBatchMatMul", {{{3, 50, 70}}, {{3, 70, 33}}}, "Tanh"),
      Fused("FusedConv2D", {{{32, 64, 56, 56}}, {{64, 64, 3, 3}}, {{64}}}, "BiasAdd,Relu", {{"pads", "1"}}),
      Fused("FusedConv2D", {{{32, 64, 56, 56}}, {{256, 64, 1, 1}}, {{256}}, {{32, 256, 56, 56}}}, "BiasAdd,Add,Relu"),
      Fused("FusedConv2D", {{{2, 5, 13, 13}}, {{7, 5, 3, 3}}, {{7, 1, 1}}}, "BiasAdd,Gelu", {{"pads", "1"}}),
      // Llama's SwiGLU and MobileNet's ReLU6 after a pointwise conv, at small sizes (the
      // event simulation of a whole Llama MLP is minutes).
      Fused("FusedMatMul", {{{256, 512}}, {{512, 1376}}, {{256, 1376}}}, "Silu,Mul"),
      Fused("FusedConv2D", {{{2, 16, 28, 28}}, {{96, 16, 1, 1}}, {{96}}}, "BiasAdd,Clip"),
      // An int8 ResNet block's end, writing its value and its quantize (value_out).
      Fused("FusedConv2D", {{{2, 64, 14, 14}, "int8"}, {{256, 64, 1, 1}, "int8"}, {{256}}, {{2, 256, 14, 14}}},
            "BiasAdd,Add,Relu,Quantize", {{"value_out", "float16"}}),
  };
}

struct Sweep {
  int64_t checked = 0;
  int64_t within_2_percent = 0;
  double worst = 0;
  std::string worst_what;
};

// The cube op's own fast-path / event-simulation difference on the cube part of `c`.
double CubeError(const TuningProblem& inner, const Config& c, const SocSpec& soc) {
  const Config cube(c.begin(), c.begin() + kFusedEpiSplitParam);
  auto prepared = Prepare(inner, soc);
  auto fast = Simulate(*prepared, cube, soc);
  auto ev = SimulateEvents(*prepared, cube, soc, {false});
  return fast.ok() && ev.ok() ? std::abs(ev->estimate.latency_us / fast->latency_us - 1) : 1.0;
}

// Up to `per_key` valid configs of each key by a prime stride through the space, each
// within `bound`. A fused cube op's two paths take the tile drains from the cube op's own
// two paths (tests/sim/event_sim_test.cc holds those to 2%), so a failure reports how far
// the cube op alone is off.
Sweep RunSweep(const SocSpec& soc, const std::vector<OpKey>& keys, int per_key, double bound) {
  Sweep s;
  for (const OpKey& key : keys) {
    auto problem = MakeTuningProblem(key, soc);
    EXPECT_TRUE(problem.ok()) << key.Display() << ": " << problem.status().ToString();
    if (!problem.ok()) continue;
    const TuningProblem& p = *problem;
    auto prepared = Prepare(p, soc);
    EXPECT_TRUE(prepared.ok());
    if (!prepared.ok()) continue;
    std::optional<TuningProblem> inner;
    if (IsFusedCubeOpType(key.op_type)) inner = *MakeTuningProblem(*FusedCubeInnerKey(key), soc);
    const uint64_t size = p.space.size();
    const uint64_t stride = 1000003 % size == 0 ? 1 : 1000003;
    int found = 0;
    Config c = p.default_config;
    for (uint64_t i = 0, idx = p.default_index; i < size && found < per_key; ++i) {
      if (i > 0) {
        idx = (idx + stride) % size;
        p.space.DecodeInto(idx, c);
        if (!p.space.Validate(c).ok()) continue;
      }
      ++found;
      auto fast = Simulate(*prepared, c, soc);
      auto ev = SimulateEvents(*prepared, c, soc, {false});
      EXPECT_TRUE(fast.ok() && ev.ok());
      if (!fast.ok() || !ev.ok()) continue;
      // NPU_MODEL.md's first sanity rule, on both paths.
      EXPECT_GE(fast->latency_us * (1 + 1e-9), RooflineUs(*fast, soc)) << key.Display() << " " << p.space.Describe(c);
      EXPECT_GE(ev->estimate.latency_us * (1 + 1e-9), RooflineUs(ev->estimate, soc)) << key.Display();
      const double err = std::abs(ev->estimate.latency_us / fast->latency_us - 1);
      ++s.checked;
      if (err <= 0.02) ++s.within_2_percent;
      if (err > s.worst) {
        s.worst = err;
        s.worst_what = key.Display() + " " + p.space.Describe(c);
      }
      if (err <= bound) continue;
      ADD_FAILURE() << key.Display() << " " << p.space.Describe(c) << ": fast " << fast->latency_us << " us, events "
                    << ev->estimate.latency_us << " us; the cube op alone differs by "
                    << (inner ? CubeError(*inner, c, soc) : 0.0);
    }
    EXPECT_GE(found, 10) << key.Display();
  }
  std::printf("fused sweep: %lld configs, %lld within 2%%, worst %.4f at %s\n", static_cast<long long>(s.checked),
              static_cast<long long>(s.within_2_percent), s.worst, s.worst_what.c_str());
  return s;
}

TEST_F(FusedModel, EventSimulationAgreesWithTheFastPathWithinTwoPercentOnEveryFusedCubeConfigOfTheSweep) {
  const Sweep s = RunSweep(soc(), FusedSweepKeys(), 60, 0.02);
  EXPECT_GE(s.checked, 600);
  EXPECT_EQ(s.within_2_percent, s.checked);
}

TEST_F(FusedModel, EventSimulationAgreesWithTheFastPathWithinTwoPercentOnEveryChainConfigOfTheSweep) {
  const Sweep s = RunSweep(soc(),
                           {Chain("Mul,Add,Relu", {{{4096, 768}}, {{4096, 768}}, {{4096, 768}}}),
                            Chain("BiasAdd,Gelu", {{{4096, 3072}}, {{3072}}}),
                            Chain("Add,Relu", {{{1000, 37}, "bfloat16"}, {{1000, 37}, "bfloat16"}}),
                            Chain("Mul,Relu", {{{7, 33}, "int8"}, {{1}, "int8"}}),
                            Chain("Sigmoid,Mul", {{{32, 64, 56, 56}}, {{32, 64, 56, 56}}})},
                           60, 0.02);
  EXPECT_GE(s.checked, 200);
}

Config With(const TuningProblem& p, Config c, std::map<std::string, int64_t> values) {
  for (const auto& [name, v] : values) c[static_cast<size_t>(p.space.IndexOf(name))] = v;
  return c;
}

TEST_F(FusedModel, FusedMatMulGeluBeatsMatMulThenGeluButNeverTheMatMulAlone) {
  // BERT-base FFN1, default tilings (CANN's): the fused op saves the [4096, 3072]
  // intermediate's HBM write and re-read and a launch, and pays only the last tiles'
  // epilogue beyond the MatMul's own time.
  const KernelEstimate mm = Default(Key("MatMul", {kHidden, kFfn1W}));
  const KernelEstimate gelu = Default(Key("Gelu", {{{4096, 3072}}}));
  const KernelEstimate bias = Default(Key("Add", {{{4096, 3072}}, kFfn1B}));
  const KernelEstimate fused_gelu = Default(Fused("FusedMatMul", {kHidden, kFfn1W}, "Gelu"));
  const KernelEstimate fused = Default(Fused("FusedMatMul", {kHidden, kFfn1W, kFfn1B}, "BiasAdd,Gelu"));
  std::printf("BERT FFN1: MatMul %.1f + Add %.1f + Gelu %.1f us unfused; fused Gelu %.1f, fused BiasAdd,Gelu %.1f us\n",
              mm.latency_us, bias.latency_us, gelu.latency_us, fused_gelu.latency_us, fused.latency_us);
  EXPECT_LT(fused_gelu.latency_us, mm.latency_us + gelu.latency_us);
  EXPECT_LT(fused.latency_us, mm.latency_us + bias.latency_us + gelu.latency_us);
  EXPECT_GT(fused_gelu.latency_us, mm.latency_us);
  EXPECT_GT(fused.latency_us, fused_gelu.latency_us);
  // One launch, and the intermediate never reaches HBM: only the fp16 output is written.
  EXPECT_DOUBLE_EQ(fused.launch_us, soc().kernel_launch_us);
  const double mm_out = 4096.0 * 3072 * 2;  // the MatMul's own fp16 output
  EXPECT_NEAR(fused.hbm_bytes, mm.hbm_bytes - mm_out + 3072 * 2 + 4096.0 * 3072 * 2, 1);
  EXPECT_LT(fused.hbm_bytes, mm.hbm_bytes + bias.hbm_bytes + gelu.hbm_bytes);
  EXPECT_GT(fused.BusyUs(Pipe::kVector), 0.0);
  EXPECT_DOUBLE_EQ(fused.BusyUs(Pipe::kCube), mm.BusyUs(Pipe::kCube));

  // The same on the other fused shapes of the layer and on ResNet-50's conv + bias + Relu.
  struct Pair {
    OpKey fused;
    std::vector<OpKey> unfused;
  };
  const TensorDesc ffn2_x{{4096, 3072}}, ffn2_w{{3072, 768}}, row{{768}}, h{{4096, 768}};
  const std::vector<Pair> pairs = {
      {Fused("FusedMatMul", {ffn2_x, ffn2_w, row, h}, "BiasAdd,Add"),
       {Key("MatMul", {ffn2_x, ffn2_w}), Key("Add", {h, row}), Key("Add", {h, h})}},
      {Fused("FusedMatMul", {kHidden, {{768, 768}}, row}, "BiasAdd"),
       {Key("MatMul", {kHidden, {{768, 768}}}), Key("Add", {h, row})}},
      {Fused("FusedConv2D", {{{32, 64, 56, 56}}, {{64, 64, 3, 3}}, {{64, 1, 1}}}, "BiasAdd,Relu", {{"pads", "1"}}),
       {Key("Conv2D", {{{32, 64, 56, 56}}, {{64, 64, 3, 3}}, {{64}}}, {{"pads", "1"}}), Key("Relu", {{{32, 64, 56, 56}}})}},
  };
  for (const Pair& pair : pairs) {
    const KernelEstimate f = Default(pair.fused);
    double unfused = 0;
    for (const OpKey& k : pair.unfused) unfused += Default(k).latency_us;
    const double alone = Default(pair.unfused.front()).latency_us;
    std::printf("%s: fused %.1f us, unfused %.1f us, cube alone %.1f us\n", pair.fused.Display().c_str(), f.latency_us,
                unfused, alone);
    EXPECT_LT(f.latency_us, unfused) << pair.fused.Display();
    EXPECT_GT(f.latency_us, alone) << pair.fused.Display();
  }
}

TEST_F(FusedModel, NoFusedConfigFinishesBeforeItsCubeAloneHasComputed) {
  // Whatever the tiling, the epilogue only adds work after the cube's tiles: the fused op
  // never ends before the cube op's pipes would (its HBM floor aside: the fused op
  // writes fp16 where the cube op writes its fp32 accumulator).
  for (const OpKey& key : FusedSweepKeys()) {
    TuningProblem p = Problem(key);
    auto prepared = Prepare(p, soc());
    ASSERT_TRUE(prepared.ok());
    auto inner = MakeTuningProblem(*FusedCubeInnerKey(key), soc());
    ASSERT_TRUE(inner.ok());
    int checked = 0;
    Config c;
    for (uint64_t idx = p.default_index, i = 0; i < p.space.size() && checked < 30; ++i, idx = (idx + 7919) % p.space.size()) {
      p.space.DecodeInto(idx, c);
      if (!p.space.Validate(c).ok()) continue;
      ++checked;
      const KernelEstimate f = *Simulate(*prepared, c, soc());
      const KernelEstimate alone = *Simulate(*inner, Config(c.begin(), c.begin() + kFusedEpiSplitParam), soc());
      const double pipes_us = alone.BusyUs(Pipe::kCube);
      EXPECT_GT(f.duration_us, pipes_us) << key.Display() << " " << p.space.Describe(c);
      EXPECT_GE(f.latency_us * (1 + 1e-9), std::min(alone.latency_us, f.launch_us + f.hbm_bytes / (soc().hbm_bandwidth_gbps * 1e3)))
          << key.Display() << " " << p.space.Describe(c);
    }
    EXPECT_GT(checked, 5) << key.Display();
  }
}

TEST_F(FusedModel, AChainOfThreeOnALargeTensorStreamsAt80To90PercentOfHbmBandwidth) {
  const TensorDesc x{{8192, 8192}};
  const OpKey chain = Chain("Mul,Add,Relu", {x, x, x});
  const KernelEstimate e = Default(chain);
  const double share = e.compulsory_bytes / (e.latency_us * 1e-6) / (soc().hbm_bandwidth_gbps * 1e9);
  std::printf("Mul,Add,Relu on 64M fp16: %.1f us, %.1f%% of HBM peak\n", e.latency_us, share * 100);
  EXPECT_GE(share, 0.80);
  EXPECT_LE(share, 0.90);
  // Three launches and two intermediates' round trips more when unfused.
  const double unfused = Default(Key("Mul", {x, x})).latency_us + Default(Key("Add", {x, x})).latency_us +
                         Default(Key("Relu", {x})).latency_us;
  EXPECT_LT(e.latency_us, 0.65 * unfused);  // 512 MiB moved instead of 896 MiB
  EXPECT_DOUBLE_EQ(e.compulsory_bytes, 8192.0 * 8192 * 2 * 4);
}

TEST_F(FusedModel, TheChainChargesEveryOpsVectorInstructions) {
  // Gelu's 8 instructions per element plus the bias add's 1 (vector_model.cc's counts).
  const TensorDesc x{{4096, 3072}};
  const KernelEstimate chain = Default(Chain("BiasAdd,Gelu", {x, kFfn1B}));
  const KernelEstimate add = Default(Key("Add", {x, kFfn1B}));
  EXPECT_DOUBLE_EQ(chain.flops, 9.0 * 4096 * 3072);
  EXPECT_DOUBLE_EQ(add.flops, 1.0 * 4096 * 3072);
  EXPECT_GT(chain.BusyUs(Pipe::kVector), 5 * add.BusyUs(Pipe::kVector));
}

TEST_F(FusedModel, AnEpilogueTileThatOverflowsUbIsRejectedWithAReasonNamingUb) {
  TuningProblem p = Problem(Fused("FusedMatMul", {kHidden, kFfn1W, kFfn1B}, "BiasAdd,Gelu"));
  Config c = With(p, p.default_config, {{"baseM", 128}, {"baseN", 256}, {"dbL0C", 0}, {"epiSplit", 1}});
  auto e = Simulate(p, c, soc());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("epilogue UB capacity"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("ub_size 196608 B"), std::string::npos) << e.status().message();
  // A larger split fits.
  EXPECT_TRUE(Simulate(p, With(p, c, {{"epiSplit", 4}}), soc()).ok());
  // The cube's own limits keep their names.
  auto l0 = Simulate(p, With(p, c, {{"baseM", 256}, {"baseK", 128}, {"epiSplit", 8}}), soc());
  ASSERT_FALSE(l0.ok());
  EXPECT_NE(l0.status().message().find("L0A capacity"), std::string::npos) << l0.status().message();
  // The chain's UB footprint counts every input, the output and the temps.
  TuningProblem chain = Problem(Chain("Mul,Add,Gelu", {{{4096, 3072}}, {{4096, 3072}}, {{4096, 3072}}}));
  auto big = Simulate(chain, With(chain, chain.default_config, {{"tileLength", 16384}, {"bufferNum", 2}}), soc());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("UB capacity"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("16384*10*2"), std::string::npos) << big.status().message();
}

TEST_F(FusedModel, TheMoreMemoryBoundConfigShowsTheHigherMte2Ratio) {
  // As MatmulModel's: baseK=16 halves A's bursts and doubles their overhead.
  TuningProblem p = Problem(Fused("FusedMatMul", {{{4096, 4096}}, {{4096, 4096}}, {{4096}}}, "BiasAdd,Relu"));
  const Config compute = With(p, p.default_config, {{"baseM", 128}, {"baseN", 256}, {"baseK", 64}, {"stepKa", 4},
                                                     {"stepKb", 4}, {"dbL0C", 0}, {"epiSplit", 4}});
  const Config memory = With(p, compute, {{"baseK", 16}, {"stepKa", 1}, {"stepKb", 1}});
  const KernelEstimate c = *Simulate(p, compute, soc());
  const KernelEstimate m = *Simulate(p, memory, soc());
  EXPECT_GT(m.Ratio(Pipe::kMte2) / m.Ratio(Pipe::kCube), c.Ratio(Pipe::kMte2) / c.Ratio(Pipe::kCube));
  EXPECT_GT(m.latency_us, c.latency_us);
}

TEST_F(FusedModel, EachEpilogueRunsOnTheVectorCoresAfterItsTilesFixpipeDrain) {
  TuningProblem p = Problem(Fused("FusedMatMul", {{{1024, 768}}, {{768, 768}}, {{768}}}, "BiasAdd,Gelu"));
  const EventSimResult r = Events(p, p.default_config);
  const Timeline& t = r.timeline;
  ASSERT_EQ(t.cores.size() % 2, 0u);
  ASSERT_GE(t.cores.size(), 2u);
  std::vector<int64_t> aiv_ids;
  for (size_t g = 0; g + 1 < t.cores.size(); g += 2) {
    const CoreTimeline& cube = t.cores[g];
    const CoreTimeline& aiv = t.cores[g + 1];
    ASSERT_FALSE(cube.Of(Pipe::kFixpipe).empty());
    EXPECT_TRUE(aiv.Of(Pipe::kCube).empty());
    EXPECT_EQ(aiv.core_ids.size(), 2 * cube.core_ids.size()) << "two vector cores per cube core on the 910B";
    aiv_ids.insert(aiv_ids.end(), aiv.core_ids.begin(), aiv.core_ids.end());
    std::map<int64_t, double> drained;
    for (const auto& i : cube.Of(Pipe::kFixpipe)) drained[i.tile] = i.end_us;
    ASSERT_FALSE(aiv.Of(Pipe::kVector).empty());
    EXPECT_EQ(aiv.Of(Pipe::kMte3).size(), aiv.Of(Pipe::kVector).size());
    for (const auto& i : aiv.Of(Pipe::kMte2)) EXPECT_GE(i.start_us + 1e-9, drained.at(i.tile)) << i.tile;
    for (const auto& pipe : aiv.pipes) {
      for (size_t i = 1; i < pipe.size(); ++i) EXPECT_LE(pipe[i - 1].end_us, pipe[i].start_us + 1e-9);
    }
    EXPECT_GT(aiv.EndUs(), cube.Of(Pipe::kFixpipe).back().end_us);
  }
  std::sort(aiv_ids.begin(), aiv_ids.end());
  EXPECT_EQ(static_cast<int64_t>(aiv_ids.size()), 2 * r.estimate.block_dim);
  EXPECT_EQ(aiv_ids.front(), soc().ai_core_cnt);
  // The estimate's busy times are the critical pair's timeline's.
  const CoreTimeline& crit_aiv = t.cores.at(static_cast<size_t>(t.critical));
  EXPECT_NEAR(r.estimate.BusyUs(Pipe::kVector), crit_aiv.BusyUs(Pipe::kVector), 1e-9);
  EXPECT_NEAR(r.estimate.BusyUs(Pipe::kCube), t.cores.at(static_cast<size_t>(t.critical) - 1).BusyUs(Pipe::kCube), 1e-9);
  EXPECT_NEAR(r.timeline.duration_us, r.estimate.duration_us, 1e-12);
}

TEST_F(FusedModel, Bf16AndInt8RunAndTheirEpiloguesCostTheirCasts) {
  const OpKey f16 = Fused("FusedMatMul", {kHidden, kFfn1W, kFfn1B}, "BiasAdd,Relu");
  const OpKey bf16 = Fused("FusedMatMul", {{{4096, 768}, "bfloat16"}, {{768, 3072}, "bfloat16"}, {{3072}, "bfloat16"}},
                           "BiasAdd,Relu");
  const OpKey i8 = Fused("FusedMatMul", {{{4096, 768}, "int8"}, {{768, 3072}, "int8"}, {{3072}, "float16"}}, "BiasAdd,Relu");
  for (const OpKey& key : {f16, bf16, i8}) {
    auto prepared = Prepare(Problem(key), soc());
    ASSERT_TRUE(prepared.ok());
    FusedCubePlan plan;
    TuningProblem p = Problem(key);
    EstimateFusedCube(prepared->fused, FusedCubeTilingFromConfig(p.default_config),
                      FusedEpiSplitFromConfig(p.default_config), soc(), &plan);
    // BiasAdd 1 + Relu 1 + bias cast 1 + output cast 1, and int8's dequantisation 2.
    EXPECT_EQ(plan.epilogue.instructions_per_element, key.inputs[0].dtype == "int8" ? 6 : 4) << key.Display();
    EXPECT_GT(Default(key).latency_us, 0.0);
  }
  EXPECT_EQ(Prepare(Problem(bf16), soc())->fused.out_dtype, DType::kBFloat16);
  EXPECT_EQ(Prepare(Problem(i8), soc())->fused.out_dtype, DType::kFloat16);
  // int8 doubles the cube's rate: the fused int8 op is faster than the fp16 one.
  EXPECT_LT(Default(i8).latency_us, Default(f16).latency_us);
  // fp32 chains compute natively; bf16 chains compute in fp32 with a cast per input.
  const TensorDesc x{{4096, 768}};
  EXPECT_GT(Default(Chain("Add,Relu", {{{4096, 768}, "float32"}, {{4096, 768}, "float32"}})).latency_us,
            Default(Chain("Add,Relu", {x, x})).latency_us);
}

// An int8 ResNet block's output is both the next block's quantized input and its float16
// residual: with attrs.value_out the fused convolution writes both (CANN's multi-output
// quant fusion), its epilogue one vconv and one float16 write more than the int8 one
// alone, and cheaper than writing float16 and quantizing it in a Cast kernel after.
TEST_F(FusedModel, AValueOutIsOneMoreWriteOfTheValueBeforeTheQuantize) {
  const std::vector<TensorDesc> in{{{32, 64, 56, 56}, "int8"}, {{256, 64, 1, 1}, "int8"}, {{256}}, {{32, 256, 56, 56}}};
  const OpKey int8_only = Fused("FusedConv2D", in, "BiasAdd,Add,Relu,Quantize");
  const OpKey both = Fused("FusedConv2D", in, "BiasAdd,Add,Relu,Quantize", {{"value_out", "float16"}});
  const OpKey float_only = Fused("FusedConv2D", in, "BiasAdd,Add,Relu");
  const OpKey cast = Key("Cast", {{{32, 256, 56, 56}}}, {{"dst_type", "int8"}});
  auto prepared = Prepare(Problem(both), soc());
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  EXPECT_EQ(prepared->fused.out_dtype, DType::kInt8);
  EXPECT_EQ(prepared->fused.value_out_bytes, 2);
  // One config for both: the bytes differ by the float16 value exactly.
  const TuningProblem p = Problem(int8_only);
  const MatmulTiling t = FusedCubeTilingFromConfig(p.default_config);
  const int64_t split = FusedEpiSplitFromConfig(p.default_config);
  FusedCubePlan alone, twice;
  const KernelEstimate a = EstimateFusedCube(Prepare(p, soc())->fused, t, split, soc(), &alone);
  const KernelEstimate b = EstimateFusedCube(prepared->fused, t, split, soc(), &twice);
  EXPECT_DOUBLE_EQ(b.hbm_bytes - a.hbm_bytes, 32.0 * 256 * 56 * 56 * 2);
  EXPECT_EQ(twice.epilogue.instructions_per_element, alone.epilogue.instructions_per_element + 1);
  EXPECT_GT(b.latency_us, a.latency_us);
  EXPECT_LT(Default(both).latency_us, Default(float_only).latency_us + Default(cast).latency_us);
  // Only a quantized epilogue has a value before its Quantize, in the dtype it computes.
  for (const auto& [epilogue, dtype] : {std::pair{"BiasAdd,Add,Relu", "float16"}, {"BiasAdd,Add,Relu,Quantize", "float32"}}) {
    auto refused = FusedCubeShapeFromOpKey(Fused("FusedConv2D", in, epilogue, {{"value_out", dtype}}));
    ASSERT_FALSE(refused.ok()) << epilogue << " " << dtype;
    EXPECT_NE(refused.status().message().find("attrs.value_out='" + std::string(dtype) + "'"), std::string::npos)
        << refused.status().ToString();
  }
}

TEST_F(FusedModel, RunsOnEverySoc) {
  for (const char* name : {"Ascend910B2", "Ascend910B4", "Ascend910"}) {
    const SocSpec& s = *catalog_.Find(name).value();
    OpKey key = Fused("FusedMatMul", {kHidden, kFfn1W, kFfn1B}, "BiasAdd,Gelu");
    key.soc = name;
    auto p = MakeTuningProblem(key, s);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    auto e = Simulate(*p, p->default_config, s);
    ASSERT_TRUE(e.ok()) << name;
    auto prepared = Prepare(*p, s);
    auto ev = SimulateEvents(*prepared, p->default_config, s, {false});
    ASSERT_TRUE(ev.ok()) << name;
    EXPECT_NEAR(ev->estimate.latency_us / e->latency_us, 1.0, 0.02) << name;
  }
}

}  // namespace
}  // namespace tunefleet::sim
