// The vector ops' timing model against NPU_MODEL.md's sanity list: no config beats the
// roofline, large element-wise ops reach 80-90% of HBM bandwidth, small ops pay launch
// and scalar, double buffering helps when two pipes are busy, a row larger than UB is
// read twice, and the default tiling of BERT-base's vector ops is valid everywhere.
#include "worker/sim/vector_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "tunefleet/common/vector_space.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey Key(const std::string& op, std::vector<std::vector<int64_t>> shapes,
          const std::string& dtype = "float16", std::map<std::string, std::string> attrs = {},
          const std::string& soc = "Ascend910B2") {
  return test_support::TestKey(op, test_support::Inputs(std::move(shapes), dtype), std::move(attrs), soc);
}

// One representative key per op type, small enough to sweep every config.
std::vector<OpKey> OneKeyPerOp(const std::vector<int64_t>& shape, const std::string& dtype) {
  const int64_t last = shape.back();
  std::vector<OpKey> keys;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) keys.push_back(Key(op, {shape, shape}, dtype));
  for (const char* op : {"Relu", "Clip", "Gelu", "Sigmoid", "Silu", "Tanh", "Exp", "HardSigmoid", "HardSwish", "Sin", "Cos"}) {
    keys.push_back(Key(op, {shape}, dtype));
  }
  keys.push_back(Key("Cast", {shape}, dtype, {{"dst_type", dtype == "float32" ? "float16" : "float32"}}));
  keys.push_back(Key("FusedMulAdd", {shape, shape, shape}, dtype));
  if (last % 2 == 0) keys.push_back(Key("Rope", {shape, shape, shape}, dtype));
  keys.push_back(Key("Where", {shape, shape, {1}}, dtype));
  keys.back().inputs[0].dtype = "int8";  // the condition: bool, one byte an element
  keys.push_back(Key("Concat", {shape, shape}, dtype, {{"axis", "0"}}));
  std::vector<int64_t> image = shape;  // [N, C, H, W] of the same elements
  while (image.size() < 4) image.insert(image.begin(), 1);
  keys.push_back(Key("MaxPool", {image}, dtype, {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}}));
  keys.push_back(Key("AveragePool", {image}, dtype, {{"kernel_shape", "1,2"}, {"strides", "1,2"}}));  // H may be 1
  keys.push_back(Key("AveragePool", {image}, dtype, {{"kernel_shape", "1,2"}, {"divisor_override", "1"}}));
  keys.push_back(Key("DepthwiseConv2D", {image, {image[1], 1, 1, 3}, {image[1]}}, dtype, {{"pads", "0,0,1,1"}}));
  const std::string twice = std::to_string(image[2] * 2) + "," + std::to_string(image[3] * 2);
  keys.push_back(Key("Resize", {image}, dtype, {{"sizes", twice}}));
  keys.push_back(Key("Resize", {image}, dtype, {{"sizes", twice}, {"mode", "linear"}}));
  keys.push_back(Key("Pad", {image}, dtype, {{"pads", "0,1,2,3"}}));
  keys.push_back(Key("Pad", {image}, dtype, {{"pads", "2"}, {"mode", "edge"}}));
  keys.push_back(Key("Pad", {image}, dtype, {{"interior", "1,2"}, {"pads", "1"}}));
  keys.push_back(Key("InstanceNorm", {image, {image[1]}, {image[1]}}, dtype));
  keys.push_back(test_support::TestKey(  // the rows of a 64-row table, as many as the shape has
      "Gather", {TensorDesc{{64, last}, dtype}, TensorDesc{{std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()) / last}, "int64"}}));
  keys.push_back(Key("Softmax", {shape}, dtype));
  keys.push_back(Key("LayerNorm", {shape, {last}, {last}}, dtype));
  keys.push_back(Key("RmsNorm", {shape, {last}}, dtype));
  keys.push_back(Key("ReduceSum", {shape}, dtype));
  keys.push_back(Key("ReduceMean", {shape}, dtype));
  keys.push_back(Key("ReduceL2", {shape}, dtype));
  keys.push_back(Key("Transpose", {shape}, dtype));
  return keys;
}

class VectorModelTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& Soc(const std::string& name = "Ascend910B2") { return *catalog_.Find(name).value(); }

  TuningProblem Problem(const OpKey& key) { return test_support::ProblemOrFail(key, Soc(key.soc)); }
  KernelEstimate Run(const TuningProblem& p, const Config& c) {
    auto e = Simulate(p, c, Soc(p.key.soc));
    EXPECT_TRUE(e.ok()) << p.key.Display() << " " << p.space.Describe(c) << ": " << e.status().ToString();
    return e.ok() ? *e : KernelEstimate{};
  }
  // The best valid config and its estimate.
  std::pair<Config, KernelEstimate> Best(const TuningProblem& p) {
    Config best;
    KernelEstimate best_e;
    best_e.latency_us = std::numeric_limits<double>::infinity();
    p.space.ForEachValid([&](ConfigIndex i) {
      Config c = p.space.Decode(i);
      KernelEstimate e = Run(p, c);
      if (e.latency_us < best_e.latency_us) {
        best = c;
        best_e = e;
      }
      return true;
    });
    return {best, best_e};
  }
  Config With(const TuningProblem& p, std::map<std::string, int64_t> values) {
    Config c = p.default_config;
    for (const auto& [name, v] : values) {
      const int i = p.space.IndexOf(name);
      EXPECT_GE(i, 0) << name;
      if (i >= 0) c[static_cast<size_t>(i)] = v;
    }
    return c;
  }
};

using VectorModel = VectorModelTest;

TEST_F(VectorModel, NoConfigOfAnyVectorOpBeatsItsRoofline) {
  int64_t checked = 0;
  for (const auto& [shape, dtype] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{64, 768}, "float16"}, {{3, 100, 50}, "float32"}, {{512, 1024}, "bfloat16"}}) {
    for (const OpKey& key : OneKeyPerOp(shape, dtype)) {
      TuningProblem p = Problem(key);
      int64_t valid = 0;
      p.space.ForEachValid([&](ConfigIndex i) {
        Config c = p.space.Decode(i);
        KernelEstimate e = Run(p, c);
        const SocSpec& soc = Soc();
        EXPECT_GE(e.latency_us, RooflineUs(e, soc)) << key.Display() << " " << p.space.Describe(c);
        EXPECT_GE(e.duration_us * (1 + 1e-12), e.hbm_bytes / (soc.hbm_bandwidth_gbps * 1e3)) << key.Display();
        EXPECT_GE(e.hbm_bytes * (1 + 1e-12), e.compulsory_bytes) << key.Display();
        EXPECT_GT(e.compute_roof_flops, 0) << key.Display();
        for (Pipe pipe : {Pipe::kMte2, Pipe::kVector, Pipe::kMte3, Pipe::kScalar}) {
          EXPECT_LE(e.Ratio(pipe), 1 + 1e-9) << key.Display() << " " << PipeRatioName(pipe) << " "
                                             << p.space.Describe(c);
        }
        EXPECT_GE(e.block_dim, 1);
        EXPECT_LE(e.block_dim, soc.vector_core_cnt);
        ++valid;
        return true;
      });
      EXPECT_GT(valid, 0) << key.Display() << " has no valid config";
      checked += valid;
    }
  }
  // Rows too long for UB (the two-pass path), broadcasts, int8 and casts through fp32.
  const std::vector<OpKey> more = {
      Key("Softmax", {{8, 40000}}, "float32"),
      Key("LayerNorm", {{8, 40000}, {40000}, {40000}}, "float32"),
      Key("RmsNorm", {{8, 40000}, {40000}}, "float32"),
      Key("ReduceMean", {{8, 70000}}, "float32"),
      Key("ReduceL2", {{8, 70000}}, "float32"),
      Key("CumSum", {{8, 70000}}, "float32"),  // a running sum: one pass over the chunks
      Key("CumSum", {{32, 128}}, "int32"),
      Key("Equal", {{32, 128}, {1}}, "int64"),
      Key("Not", {{32, 128}}, "int8"),
      Key("Add", {{4096}, {4096}}, "int64"),
      Key("Mul", {{4096}, {4096}}, "int32"),
      Key("Add", {{300, 77}, {77}}),
      Key("Mul", {{1}, {4096, 10}}, "float32"),
      Key("Add", {{1000, 33}, {1000, 33}}, "int8"),
      Key("Cast", {{5000}}, "float16", {{"dst_type", "bfloat16"}}),
      Key("Transpose", {{7, 33, 100}}, "int8"),
  };
  for (const OpKey& key : more) {
    TuningProblem p = Problem(key);
    p.space.ForEachValid([&](ConfigIndex i) {
      KernelEstimate e = Run(p, p.space.Decode(i));
      EXPECT_GE(e.latency_us, RooflineUs(e, Soc())) << key.Display() << " " << p.space.Describe(p.space.Decode(i));
      ++checked;
      return true;
    });
  }
  EXPECT_GT(checked, 1000);
}

TEST_F(VectorModel, LargeFp16AddWithTheBestTilingReaches80To90PercentOfHbmBandwidth) {
  for (const char* soc : {"Ascend910B2", "Ascend910B4", "Ascend910"}) {
    // 64M fp16 elements: 256 MiB read, 128 MiB written.
    TuningProblem p = Problem(Key("Add", {{8192, 8192}, {8192, 8192}}, "float16", {}, soc));
    auto [best, e] = Best(p);
    const double achieved = e.compulsory_bytes / (e.latency_us * 1e-6);
    const double share = achieved / (Soc(soc).hbm_bandwidth_gbps * 1e9);
    std::printf("%s Add 64M fp16: best %s, %.1f us, %.0f GB/s = %.1f%% of HBM peak\n", soc,
                p.space.Describe(best).c_str(), e.latency_us, achieved / 1e9, share * 100);
    EXPECT_GE(share, 0.80) << soc;
    EXPECT_LE(share, 0.90) << soc;
    EXPECT_GT(e.Ratio(Pipe::kMte2), e.Ratio(Pipe::kVector)) << "a large Add is memory-bound";
  }
}

// HBM is shared by the cores that are active (NPU_MODEL.md "Memory"): in a partial last
// wave fewer cores split it, so a memory-bound op is not faster on fewer cores. Softmax
// [64, 200000] has 64 rows: on 48 cores 16 of them run a second row, on 32 every core
// runs two. The model charged the 16 a 1/48 share and took 99 us on 48 cores, 71 on 32.
TEST_F(VectorModel, AMemoryBoundOpWithAPartialLastWaveIsNotFasterOnFewerCores) {
  for (const OpKey& key : {Key("Softmax", {{64, 200000}}), Key("Add", {{50, 1000000}, {50, 1000000}}),
                           Key("Gelu", {{70, 100000}})}) {
    TuningProblem p = Problem(key);
    std::map<int64_t, double> best_by_cores;
    p.space.ForEachValid([&](ConfigIndex i) {
      const Config c = p.space.Decode(i);
      const double latency = Run(p, c).latency_us;
      auto [it, fresh] = best_by_cores.try_emplace(p.space.Get(c, "usedCores"), latency);
      if (!fresh) it->second = std::min(it->second, latency);
      return true;
    });
    ASSERT_TRUE(best_by_cores.count(32) && best_by_cores.count(48)) << key.Display();
    std::printf("%s best on 32 / 48 cores: %.2f / %.2f us\n", key.Display().c_str(), best_by_cores[32],
                best_by_cores[48]);
    EXPECT_LE(best_by_cores[48], best_by_cores[32] * 1.005) << key.Display();
  }
}

TEST_F(VectorModel, SmallOpsAreDominatedByLaunchAndScalarOverhead) {
  for (const OpKey& key : OneKeyPerOp({1, 256}, "float16")) {
    TuningProblem p = Problem(key);
    KernelEstimate e = Run(p, p.default_config);
    const double overhead = e.launch_us + e.BusyUs(Pipe::kScalar);
    EXPECT_GT(overhead / e.latency_us, 0.6) << key.Display() << " launch " << e.launch_us << " scalar "
                                            << e.BusyUs(Pipe::kScalar) << " of " << e.latency_us;
    EXPECT_LT(e.BusyUs(Pipe::kVector) / e.latency_us, 0.1) << key.Display();
  }
}

TEST_F(VectorModel, TheMoreMemoryBoundConfigShowsTheHigherMte2Ratio) {
  // bf16 Gelu computes in fp32 with casts: one core is vector-bound; all 48 cores share
  // HBM and become memory-bound with the same tile.
  TuningProblem p = Problem(Key("Gelu", {{4096, 3072}}, "bfloat16"));
  KernelEstimate one = Run(p, With(p, {{"tileLength", 4096}, {"bufferNum", 2}, {"usedCores", 1}}));
  KernelEstimate all = Run(p, With(p, {{"tileLength", 4096}, {"bufferNum", 2}, {"usedCores", 48}}));
  std::printf("Gelu bf16 1 core: mte2 %.2f vec %.2f; 48 cores: mte2 %.2f vec %.2f\n", one.Ratio(Pipe::kMte2),
              one.Ratio(Pipe::kVector), all.Ratio(Pipe::kMte2), all.Ratio(Pipe::kVector));
  EXPECT_GT(one.Ratio(Pipe::kVector), one.Ratio(Pipe::kMte2)) << "one core is vector-bound";
  EXPECT_GT(all.Ratio(Pipe::kMte2), one.Ratio(Pipe::kMte2) + 0.1);
  EXPECT_GT(all.MemoryBound(), 1.0);
  EXPECT_LT(one.MemoryBound(), 1.0);
  // Across ops at one tiling: Add has less vector work per byte than Gelu.
  TuningProblem add = Problem(Key("Add", {{4096, 3072}, {4096, 3072}}, "bfloat16"));
  KernelEstimate add_one = Run(add, With(add, {{"tileLength", 4096}, {"bufferNum", 2}, {"usedCores", 1}}));
  EXPECT_GT(add_one.Ratio(Pipe::kMte2), one.Ratio(Pipe::kMte2));
}

TEST_F(VectorModel, DoubleBufferingHelpsWhenMte2AndVectorAreBothBusy) {
  TuningProblem p = Problem(Key("Gelu", {{4096, 3072}}, "float32"));
  KernelEstimate single = Run(p, With(p, {{"tileLength", 4096}, {"bufferNum", 1}, {"usedCores", 4}}));
  KernelEstimate twice = Run(p, With(p, {{"tileLength", 4096}, {"bufferNum", 2}, {"usedCores", 4}}));
  ASSERT_GT(single.Ratio(Pipe::kMte2), 0.2);
  ASSERT_GT(single.Ratio(Pipe::kVector), 0.2);
  EXPECT_LT(twice.latency_us * 1.5, single.latency_us)
      << "bufferNum=2 " << twice.latency_us << " us vs 1: " << single.latency_us << " us";
}

TEST_F(VectorModel, DoubleBufferingNeverHurtsAtTheSameTile) {
  for (const OpKey& key : OneKeyPerOp({96, 1000}, "float16")) {
    TuningProblem p = Problem(key);
    if (p.space.IndexOf("bufferNum") < 0) continue;
    p.space.ForEachValid([&](ConfigIndex i) {
      Config c = p.space.Decode(i);
      if (p.space.Get(c, "bufferNum") != 2) return true;
      Config serial = With(p, {});
      serial = c;
      serial[static_cast<size_t>(p.space.IndexOf("bufferNum"))] = 1;
      if (!p.space.Validate(serial).ok()) return true;
      EXPECT_LE(Run(p, c).latency_us, Run(p, serial).latency_us * (1 + 1e-9))
          << key.Display() << " " << p.space.Describe(c);
      return true;
    });
  }
}

TEST_F(VectorModel, ALayerNormRowLargerThanUbCostsASecondHbmPass) {
  const SocSpec& soc = Soc();
  // fp32 rows of 64K elements (256 KiB) do not fit the 192 KiB UB; rows of 4K do.
  TuningProblem big = Problem(Key("LayerNorm", {{256, 65536}, {65536}, {65536}}, "float32"));
  TuningProblem small = Problem(Key("LayerNorm", {{4096, 4096}, {4096}, {4096}}, "float32"));
  KernelEstimate b = Run(big, big.default_config);
  KernelEstimate s = Run(small, small.default_config);
  const double x_bytes = 256.0 * 65536 * 4;
  EXPECT_NEAR(b.hbm_bytes, 3 * x_bytes + 2 * 65536 * 4, 1) << "x read twice, y written once";
  EXPECT_NEAR(s.hbm_bytes, 2 * x_bytes + 2 * 4096 * 4, 1) << "x read once, y written once";
  // Same element count: the split rows take at least 4/3 of the time.
  EXPECT_GT(b.duration_us, s.duration_us * 1.3) << b.duration_us << " vs " << s.duration_us;
  // A reduction accumulates chunk by chunk: no second pass.
  TuningProblem sum = Problem(Key("ReduceSum", {{256, 65536}}, "float32"));
  EXPECT_NEAR(Run(sum, sum.default_config).hbm_bytes, x_bytes + 256 * 4, 1);
  // The split is a modelled cost, not a rejection: rowsPerTile=1 stays valid either way.
  VectorShape shape = *VectorShapeFromOpKey(big.key);
  VectorTiling t = VectorTilingFromConfig(shape, big.default_config);
  EXPECT_TRUE(ComputeVectorBlocking(shape, t, soc).split_rows);
  EXPECT_EQ(t.rows_per_tile, 1);
}

TEST_F(VectorModel, ARowThatFitsOnlySingleBufferedIsFasterInOnePass) {
  // fp16 Softmax row of 24K elements: in + out + temp = 144 KiB fits once, not twice.
  TuningProblem p = Problem(Key("Softmax", {{512, 24576}}, "float16"));
  KernelEstimate split = Run(p, With(p, {{"rowsPerTile", 1}, {"bufferNum", 2}, {"usedCores", 48}}));
  KernelEstimate whole = Run(p, With(p, {{"rowsPerTile", 1}, {"bufferNum", 1}, {"usedCores", 48}}));
  EXPECT_GT(split.hbm_bytes, whole.hbm_bytes * 1.4);
  EXPECT_LT(whole.latency_us, split.latency_us);
}

TEST_F(VectorModel, NarrowTransposeTilesPayShortBurstPenalties) {
  TuningProblem p = Problem(Key("Transpose", {{4096, 4096}}, "float16"));
  KernelEstimate narrow = Run(p, With(p, {{"tileRows", 16}, {"tileCols", 16}, {"usedCores", 48}}));
  KernelEstimate square = Run(p, With(p, {{"tileRows", 128}, {"tileCols", 128}, {"usedCores", 48}}));
  EXPECT_GT(narrow.latency_us, square.latency_us * 1.5);
  EXPECT_EQ(narrow.BusyUs(Pipe::kVector), 0) << "Transpose is pure MTE cost";
  EXPECT_EQ(narrow.hbm_bytes, square.hbm_bytes);
}

TEST_F(VectorModel, UsesTheVectorCoresOfEachSoc) {
  for (const char* soc : {"Ascend910B2", "Ascend910B4", "Ascend910"}) {
    TuningProblem p = Problem(Key("Relu", {{4096, 3072}}, "float16", {}, soc));
    KernelEstimate e = Run(p, p.default_config);
    EXPECT_EQ(e.block_dim, Soc(soc).vector_core_cnt) << soc;
    EXPECT_NEAR(e.compute_roof_flops, Soc(soc).vector_core_cnt * 128.0 * Soc(soc).cube_freq_mhz * 1e6, 1) << soc;
  }
}

TEST_F(VectorModel, FloatThirtyTwoTakesTwiceTheVectorCyclesOfFloat16) {
  // One core, tiles of 16K elements (two 255-repeat instructions in fp32, one in fp16):
  // fp32 needs twice the 256-byte repeats.
  TuningProblem h = Problem(Key("Tanh", {{64, 8192}}, "float16"));
  TuningProblem f = Problem(Key("Tanh", {{64, 8192}}, "float32"));
  KernelEstimate eh = Run(h, With(h, {{"tileLength", 16384}, {"bufferNum", 1}, {"usedCores", 1}}));
  KernelEstimate ef = Run(f, With(f, {{"tileLength", 16384}, {"bufferNum", 1}, {"usedCores", 1}}));
  EXPECT_NEAR(ef.BusyUs(Pipe::kVector) / eh.BusyUs(Pipe::kVector), 2.0, 0.1);
}

TEST_F(VectorModel, InstructionCountsFollowTheDocumentedDecompositions) {
  auto count = [](const OpKey& k) { return VectorInstructionsPerElement(*VectorShapeFromOpKey(k)); };
  EXPECT_EQ(count(Key("Add", {{16}, {16}})), 1);
  EXPECT_EQ(count(Key("Gelu", {{16}})), 8);
  EXPECT_EQ(count(Key("Sigmoid", {{16}})), 4);
  EXPECT_EQ(count(Key("Silu", {{16}})), 5) << "a sigmoid and a vmul by x";
  EXPECT_EQ(count(Key("Tanh", {{16}})), 5);
  EXPECT_EQ(count(Key("FusedMulAdd", {{16}, {16}, {16}})), 2);
  EXPECT_EQ(count(Key("Rope", {{16}, {16}, {16}})), 3);
  OpKey where = Key("Where", {{16}, {16}, {16}});
  where.inputs[0].dtype = "int8";
  EXPECT_EQ(count(where), 2) << "vcmp into a select mask, vsel";
  EXPECT_EQ(count(Key("Concat", {{16}, {16}}, "bfloat16", {{"axis", "0"}})), 0) << "a copy, not a computation";
  EXPECT_EQ(count(test_support::TestKey("Gather", {TensorDesc{{8, 16}, "bfloat16"}, TensorDesc{{4}, "int32"}})), 0)
      << "a copy, not a computation";
  EXPECT_EQ(count(Key("MaxPool", {{1, 1, 8, 8}}, "float16", {{"kernel_shape", "3,3"}})), 9) << "a vmax per window element";
  EXPECT_EQ(count(Key("Clip", {{16}})), 2) << "vmaxs, vmins";
  EXPECT_EQ(count(Key("AveragePool", {{1, 1, 8, 8}}, "float16", {{"kernel_shape", "3,3"}})), 10)
      << "a vadd per window element, a vmuls by 1/count";
  EXPECT_EQ(count(Key("AveragePool", {{1, 1, 8, 8}}, "float16", {{"kernel_shape", "3,3"}, {"divisor_override", "2"}})),
            10)
      << "a vmuls by 1/2";
  EXPECT_EQ(count(Key("AveragePool", {{1, 1, 8, 8}}, "float16", {{"kernel_shape", "3,3"}, {"divisor_override", "1"}})),
            9)
      << "a sum pool: no vmuls";
  EXPECT_EQ(count(Key("ReduceL2", {{4, 16}})), 2) << "vmul (square), running vadd";
  EXPECT_EQ(count(Key("Equal", {{16}, {1}}, "int64")), 2) << "vcmp into a mask, vsel";
  EXPECT_EQ(count(Key("Not", {{16}}, "int8")), 3) << "vnot between the int8 op's two vconvs through fp16";
  EXPECT_EQ(count(Key("Add", {{16}, {16}}, "int32")), 1) << "the integer vadd, no casts";
  EXPECT_EQ(count(Key("CumSum", {{4, 16}}, "int32")), 4) << "a scan: shifted by 1, 2, 4, 8";
  EXPECT_EQ(count(Key("CumSum", {{4, 128}}, "int32")), 7);
  EXPECT_EQ(count(Key("CumSum", {{4, 100}})), 7) << "ceil(log2(100))";
  EXPECT_EQ(count(Key("MaxPool", {{1, 1, 8, 8}}, "float16", {{"kernel_shape", "2,2"}, {"strides", "2"}})), 4);
  EXPECT_EQ(count(Key("DepthwiseConv2D", {{1, 4, 8, 8}, {4, 1, 3, 3}})), 9) << "a vmla per window element";
  EXPECT_EQ(count(Key("DepthwiseConv2D", {{1, 4, 8, 8}, {4, 1, 3, 3}, {4}})), 10) << "and a vadd of the bias";
  EXPECT_EQ(count(Key("DepthwiseConv2D", {{1, 4, 8, 8}, {4, 1, 3, 3}, {4}}, "float16", {{"epilogue", "Clip"}})), 12)
      << "and its ReLU6's vmaxs, vmins";
  EXPECT_EQ(count(Key("DepthwiseConv2D", {{1, 4, 8, 8}, {4, 1, 3, 3}}, "int8")), 12)
      << "int8: a vconv per input in (x is 64 elements for 36 outputs: 2, the filter 1), none out (it writes the "
         "float16 it computes)";
  EXPECT_EQ(count(Key("Add", {{16}, {16}}, "bfloat16")), 4) << "two casts in, add, one cast out";
  EXPECT_EQ(count(Key("Cast", {{16}}, "int32", {{"dst_type", "float16"}})), 1);
  EXPECT_EQ(count(Key("Resize", {{1, 1, 8, 8}}, "float16", {{"sizes", "16,16"}})), 0) << "nearest copies";
  EXPECT_EQ(count(Key("Resize", {{1, 1, 8, 8}}, "float16", {{"sizes", "16,16"}, {"mode", "linear"}})), 6)
      << "vsub, vmul, vadd along W and along H";
  EXPECT_EQ(count(Key("Cast", {{16}}, "int64", {{"dst_type", "float16"}})), 2) << "via float32";
  EXPECT_EQ(count(Key("Pad", {{1, 1, 8, 8}}, "bfloat16", {{"pads", "1"}, {"mode", "reflect"}})), 0) << "a copy";
  EXPECT_EQ(count(Key("Softmax", {{4, 16}})), 5);
  EXPECT_EQ(count(Key("LayerNorm", {{4, 16}, {16}, {16}})), 7);
  EXPECT_EQ(count(Key("LayerNorm", {{4, 16}, {16}, {16}}, "float16", {{"epilogue", "Quantize"}})), 8)
      << "and the vconv to int8";
  EXPECT_EQ(count(Key("RmsNorm", {{4, 16}, {16}}, "float16", {{"epilogue", "Quantize"}})), 5);
  EXPECT_EQ(count(Key("InstanceNorm", {{1, 4, 16}, {4}, {4}})), 5) << "statistics 3, then x * a + b";
  EXPECT_EQ(count(Key("InstanceNorm", {{1, 4, 16}, {4}, {4}}, "float16", {{"epilogue", "Relu"}})), 6)
      << "and its ReLU's vmax";
  EXPECT_EQ(count(Key("HardSigmoid", {{16}})), 4) << "vmuls, vadds, vmins, vmaxs";
  EXPECT_EQ(count(Key("HardSwish", {{16}})), 5) << "and a vmul by x";
  EXPECT_EQ(count(Key("Sin", {{16}})), 15) << "range reduction 4, polynomial 10, sign 1";
  EXPECT_EQ(count(Key("Cos", {{16}})), 16) << "and pi/2 first";
  EXPECT_EQ(count(Key("RmsNorm", {{4, 16}, {16}})), 4);
}

// Rope does in one pass what its written-out form does in three element-wise kernels at
// least (x * cos, rotate_half(x) * sin, their sum), so it is faster than those three, and
// its broadcast cos and sin cost less than full-size ones.
TEST_F(VectorModel, RopeIsCheaperThanTheElementwiseKernelsItReplaces) {
  const std::vector<int64_t> q = {32, 2048, 128}, angles = {2048, 128};
  auto best = [&](const OpKey& k) { return Best(Problem(k)).second.latency_us; };
  const double rope = best(Key("Rope", {q, angles, angles}));
  const double written_out = 2 * best(Key("Mul", {q, angles})) + best(Key("Add", {q, q}));
  const double full = best(Key("Rope", {q, q, q}));
  std::printf("Rope [32,2048,128] best %.2f us; Mul, Mul, Add %.2f us; with full-size cos, sin %.2f us\n", rope,
              written_out, full);
  EXPECT_LT(rope, written_out);
  EXPECT_LT(rope, full) << "cos and sin re-read from L2 rather than streamed from HBM";
}

// Concat reads each input's contiguous piece as a burst of its own: joining on the last
// axis (a partial rotary embedding's halves of 32) moves the same bytes as joining on the
// first, in many more bursts, so it is slower.
TEST_F(VectorModel, AConcatOnTheLastAxisPaysABurstPerPiece) {
  auto best = [&](const OpKey& k) { return Best(Problem(k)).second; };
  const KernelEstimate rows = best(Key("Concat", {{32768, 64}, {32768, 64}}, "float16", {{"axis", "0"}}));
  const KernelEstimate pieces = best(Key("Concat", {{65536, 32}, {65536, 32}}, "float16", {{"axis", "1"}}));
  EXPECT_EQ(pieces.compulsory_bytes, rows.compulsory_bytes) << "the same elements in and out";
  EXPECT_GT(pieces.latency_us, rows.latency_us * 1.1);
  std::printf("Concat of 4 Mi elements: joined on the first axis %.2f us, on the last in pieces of 32 %.2f us\n",
              rows.latency_us, pieces.latency_us);
  auto shape = VectorShapeFromOpKey(Key("Concat", {{4096, 32}, {4096, 16}}, "float16", {{"axis", "-1"}}));
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->cols, 24) << "the mean piece: each row of the output holds one of 32 and one of 16";
}

// Gather (an embedding lookup) reads the rows it picks and an index each, and writes them:
// its compulsory bytes are exactly those. Each row is a burst of its own, so the same
// elements in narrow rows (a 64-wide table's) take longer than in Llama's 4096-wide ones.
TEST_F(VectorModel, AGatherReadsItsRowsAndIndicesAndPaysABurstPerRow) {
  auto best = [&](const OpKey& k) { return Best(Problem(k)).second; };
  auto gather = [](int64_t table_rows, int64_t cols, int64_t ids) {
    return test_support::TestKey("Gather", {TensorDesc{{table_rows, cols}}, TensorDesc{{ids}, "int64"}});
  };
  const KernelEstimate wide = best(gather(32000, 4096, 2048));
  const KernelEstimate narrow = best(gather(100000, 64, 2048 * 64));
  const double elements = 2048.0 * 4096;
  EXPECT_EQ(wide.compulsory_bytes, elements * 2 * 2 + 2048 * 8) << "rows in and out, an int64 index per row";
  EXPECT_EQ(narrow.compulsory_bytes, elements * 2 * 2 + 2048 * 64 * 8);
  const SocSpec& soc = Soc();
  EXPECT_GE(wide.latency_us, wide.compulsory_bytes / (soc.hbm_bandwidth_gbps * 1e3));
  EXPECT_GT(narrow.latency_us, wide.latency_us * 1.1);
  std::printf("Gather of 8 Mi elements: 2048 rows of 4096 %.2f us, 131072 rows of 64 %.2f us\n", wide.latency_us,
              narrow.latency_us);
}

// A feature pyramid's x2 nearest upsampling reads its input once and writes four times as
// much: its compulsory bytes are exactly those, so it is faster than a Relu of its output's
// size, which reads all of it; bilinear, six vector instructions an element more, is not
// faster than nearest.
TEST_F(VectorModel, AResizeReadsItsInputOnceAndWritesItsOutput) {
  auto best = [&](const OpKey& k) { return Best(Problem(k)).second; };
  const KernelEstimate nearest = best(Key("Resize", {{8, 256, 40, 40}}, "float16", {{"sizes", "80,80"}}));
  const KernelEstimate linear =
      best(Key("Resize", {{8, 256, 40, 40}}, "float16", {{"sizes", "80,80"}, {"mode", "linear"}}));
  const KernelEstimate relu = best(Key("Relu", {{8, 256, 80, 80}}));
  const double in = 8.0 * 256 * 40 * 40 * 2, out = 4 * in;
  EXPECT_EQ(nearest.compulsory_bytes, in + out);
  EXPECT_EQ(linear.compulsory_bytes, in + out);
  const SocSpec& soc = Soc();
  EXPECT_GE(nearest.latency_us, (in + out) / (soc.hbm_bandwidth_gbps * 1e3));
  EXPECT_LT(nearest.latency_us, relu.latency_us);
  EXPECT_GE(linear.latency_us, nearest.latency_us);
  std::printf("Resize [8,256,40,40] -> 80x80: nearest %.2f us, linear %.2f us; Relu of the output %.2f us\n",
              nearest.latency_us, linear.latency_us, relu.latency_us);
}

// A GAN's ReflectionPad2d(3) of [8, 64, 128, 128]: it reads its input once and writes the
// padded output, its compulsory bytes exactly those, whatever its mode. Each output row is
// a burst from its input row: the same elements in rows of 1024 pad faster than in rows of
// 16, and faster than a Relu of their output's size, which reads all of it.
TEST_F(VectorModel, APadReadsItsInputOnceAndWritesItsOutput) {
  auto best = [&](const OpKey& k) { return Best(Problem(k)).second; };
  const KernelEstimate pad = best(Key("Pad", {{8, 64, 128, 128}}, "float16", {{"pads", "3"}, {"mode", "reflect"}}));
  const KernelEstimate zeros = best(Key("Pad", {{8, 64, 128, 128}}, "float16", {{"pads", "3"}}));
  const KernelEstimate wide = best(Key("Pad", {{8, 64, 16, 1024}}, "float16", {{"pads", "3"}}));
  const KernelEstimate narrow = best(Key("Pad", {{8, 64, 1024, 16}}, "float16", {{"pads", "3"}}));
  const KernelEstimate relu = best(Key("Relu", {{8, 64, 22, 1030}}));
  const double in = 8.0 * 64 * 128 * 128 * 2, out = 8.0 * 64 * 134 * 134 * 2;
  EXPECT_EQ(pad.compulsory_bytes, in + out);
  EXPECT_GE(pad.latency_us, (in + out) / (Soc().hbm_bandwidth_gbps * 1e3));
  EXPECT_EQ(zeros.latency_us, pad.latency_us) << "the mode picks what is written, not how much";
  EXPECT_LT(wide.latency_us, narrow.latency_us);
  EXPECT_LT(wide.latency_us, relu.latency_us);
  std::printf("Pad [8,64,128,128] reflect 3: %.2f us; [8,64,16,1024] %.2f us, [8,64,1024,16] %.2f us, a Relu of "
              "their output %.2f us\n",
              pad.latency_us, wide.latency_us, narrow.latency_us, relu.latency_us);
}

// ResNet's stem pooling (3x3, stride 2, pad 1, 112 -> 56) reads its input once and writes
// a quarter of it: its compulsory bytes are exactly those; it is slower than a copy of
// those bytes would be (nine vmax an output element) and faster than the Relu before it,
// which writes the full size.
TEST_F(VectorModel, AMaxPoolReadsItsInputOnceAndTakesAVmaxPerWindowElement) {
  const std::map<std::string, std::string> stem = {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}};
  const auto [config, pool] = Best(Problem(Key("MaxPool", {{8, 64, 112, 112}}, "float16", stem)));
  const double in = 8.0 * 64 * 112 * 112 * 2, out = 8.0 * 64 * 56 * 56 * 2;
  EXPECT_EQ(pool.compulsory_bytes, in + out);
  const SocSpec& soc = Soc();
  EXPECT_GE(pool.latency_us, (in + out) / (soc.hbm_bandwidth_gbps * 1e3));
  const KernelEstimate relu = Best(Problem(Key("Relu", {{8, 64, 112, 112}}))).second;
  std::printf("MaxPool 3x3/2 [8,64,112,112] best %.2f us (vector %.2f us); Relu of its input %.2f us\n",
              pool.latency_us, pool.BusyUs(Pipe::kVector), relu.latency_us);
  EXPECT_GT(pool.BusyUs(Pipe::kVector), relu.BusyUs(Pipe::kVector) * 2) << "9 vmax on a quarter of the elements";
  // A window of 2x2 at stride 2 reads as much and computes less.
  const KernelEstimate small = Best(Problem(Key("MaxPool", {{8, 64, 112, 112}}, "float16",
                                                {{"kernel_shape", "2,2"}, {"strides", "2,2"}}))).second;
  EXPECT_EQ(small.compulsory_bytes, pool.compulsory_bytes);
  EXPECT_LT(small.BusyUs(Pipe::kVector), pool.BusyUs(Pipe::kVector));
}

// A sentence embedding's masked sum over the sequence (a ReduceSum over axis 1 of [32, 128,
// 384], imported as a sum pool of window [128, 1]): its tile reads its 128 window rows in one
// DMA instruction of strided bursts, so it streams near HBM's rate, as the element-wise Mul
// before it does, instead of paying 128 DMA latencies a tile (50 us for 3 MB, model
// version 6); and it costs no more than the mean's pooling, which adds a vmuls. A
// divisor_override that is not one positive integer, or on MaxPool, is refused by name.
TEST_F(VectorModel, ASumPoolOverTheSequenceStreamsItsWindowRowsInOneDmaInstruction) {
  const std::vector<int64_t> x = {32, 1, 128, 384};
  const TuningProblem sum = Problem(Key("AveragePool", {x}, "float16", {{"kernel_shape", "128,1"}, {"divisor_override", "1"}}));
  const TuningProblem mean = Problem(Key("AveragePool", {x}, "float16", {{"kernel_shape", "128,1"}}));
  const KernelEstimate at_default = Run(sum, sum.default_config);
  const KernelEstimate best = Best(sum).second;
  const KernelEstimate mul = Run(Problem(Key("Mul", {{32, 128, 384}, {32, 128, 384}})),
                                 Problem(Key("Mul", {{32, 128, 384}, {32, 128, 384}})).default_config);
  const SocSpec& soc = Soc();
  const double floor_us = at_default.compulsory_bytes / (soc.hbm_bandwidth_gbps * 1e3);
  std::printf("sum pool [32,1,128,384] window [128,1]: default %.2f us, best %.2f us, HBM floor %.2f us; Mul of its input "
              "%.2f us\n", at_default.latency_us, best.latency_us, floor_us, mul.latency_us);
  EXPECT_EQ(at_default.compulsory_bytes, 32.0 * 128 * 384 * 2 + 32.0 * 384 * 2);
  // One tile a core, so its load, adds and write cannot overlap: about 3x the floor. 128 DMA
  // latencies a tile were 23x.
  EXPECT_LT(at_default.duration_us, 4 * floor_us);
  EXPECT_LT(at_default.latency_us, mul.latency_us) << "it reads a third of the Mul's bytes and writes 1/128 of them";
  EXPECT_LE(at_default.latency_us, Run(mean, mean.default_config).latency_us);
  EXPECT_LT(at_default.BusyUs(Pipe::kVector), Run(mean, mean.default_config).BusyUs(Pipe::kVector));
  for (const auto& [op, divisor, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"AveragePool", "0", "must be one positive integer"},
           {"AveragePool", "1,1", "must be one positive integer"},
           {"AveragePool", "x", "must be integers"},
           {"MaxPool", "1", "only AveragePool divides its windows"}}) {
    auto s = VectorShapeFromOpKey(Key(op, {x}, "float16", {{"kernel_shape", "128,1"}, {"divisor_override", divisor}}));
    ASSERT_FALSE(s.ok()) << op << " " << divisor;
    EXPECT_NE(s.status().message().find(op + " attr 'divisor_override'"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
  }
}

// F.normalize's norm (ReduceL2 over the last axis): one value a row, like ReduceSum's, with a
// vmul more an element and a sqrt more a row, so it costs at least the ReduceSum of the same
// rows and reads the same bytes.
TEST_F(VectorModel, AReduceL2IsAReduceSumOfSquares) {
  const TuningProblem l2 = Problem(Key("ReduceL2", {{4096, 384}}));
  const TuningProblem sum = Problem(Key("ReduceSum", {{4096, 384}}));
  const KernelEstimate a = Run(l2, l2.default_config), b = Run(sum, sum.default_config);
  EXPECT_EQ(a.compulsory_bytes, 4096.0 * 384 * 2 + 4096.0 * 2);
  EXPECT_EQ(a.compulsory_bytes, b.compulsory_bytes);
  EXPECT_GT(a.BusyUs(Pipe::kVector), b.BusyUs(Pipe::kVector));
  EXPECT_GE(a.latency_us, b.latency_us);
  EXPECT_FALSE(VectorShapeFromOpKey(Key("ReduceL2", {{4096, 384}}, "float16", {{"axes", "0"}})).ok())
      << "only the last axis";
}

// MobileNetV2's first depthwise 3x3 ([32, 32, 112, 112], pad 1): it reads x and writes
// its output once, plus the filter and bias; it is bound by those bytes, not by the
// vector unit; and it takes a fraction of the time the same convolution takes as a grouped
// Conv2D on the cube, which pads each channel's one-row GEMM to whole fractals.
TEST_F(VectorModel, ADepthwiseConvIsBoundByItsBytesNotByFractalPadding) {
  const std::vector<int64_t> x = {32, 32, 112, 112};
  const KernelEstimate dw =
      Best(Problem(Key("DepthwiseConv2D", {x, {32, 1, 3, 3}, {32}}, "float16", {{"pads", "1"}}))).second;
  const double bytes = 2.0 * (32.0 * 32 * 112 * 112) * 2 + (32 * 9 + 32) * 2;
  EXPECT_EQ(dw.compulsory_bytes, bytes);
  const SocSpec& soc = Soc();
  const double roofline = bytes / (soc.hbm_bandwidth_gbps * 1e3);
  EXPECT_GE(dw.latency_us, roofline);
  EXPECT_LT(dw.latency_us, 3 * roofline) << "bound by its bytes";
  EXPECT_LT(dw.BusyUs(Pipe::kVector), dw.latency_us);
  const TuningProblem grouped =
      Problem(Key("Conv2D", {x, {32, 1, 3, 3}, {32}}, "float16", {{"pads", "1,1,1,1"}, {"groups", "32"}}));
  const KernelEstimate cube = Best(grouped).second;
  std::printf("Depthwise 3x3 [32,32,112,112]: vector %.2f us (roofline %.2f us); as a grouped Conv2D %.2f us (%.1fx)\n",
              dw.latency_us, roofline, cube.latency_us, cube.latency_us / dw.latency_us);
  EXPECT_LT(dw.latency_us * 4, cube.latency_us);
}

// A mask broadcast over the heads is read from HBM once (then from L2): the Add moves
// the scores twice and the mask once, not the mask once per head.
TEST_F(VectorModel, AnInputBroadcastOverMiddleAxesIsReadFromHbmOnce) {
  TuningProblem masked = Problem(Key("Add", {{2, 16, 256, 256}, {2, 1, 256, 256}}));
  TuningProblem full = Problem(Key("Add", {{2, 16, 256, 256}, {2, 16, 256, 256}}));
  const KernelEstimate m = Run(masked, masked.default_config);
  const KernelEstimate f = Run(full, full.default_config);
  const double scores = 2.0 * 16 * 256 * 256 * 2;
  EXPECT_NEAR(m.hbm_bytes, 2 * scores + scores / 16, 1);
  EXPECT_NEAR(f.hbm_bytes, 3 * scores, 1);
  EXPECT_LT(m.latency_us, f.latency_us);
}

// LLaMA's RMSNorm: x / sqrt(mean(x^2) + eps) * gamma reads one weight row, not two, and
// neither centres nor shifts: cheaper than the LayerNorm of the same rows at every
// config, in one HBM pass while a row fits UB and two when it does not.
TEST_F(VectorModel, AnRmsNormCostsLessThanALayerNormOfTheSameRows) {
  for (const std::vector<int64_t>& rows : {std::vector<int64_t>{4096, 4096}, std::vector<int64_t>{256, 65536}}) {
    const int64_t cols = rows.back();
    TuningProblem rms = Problem(Key("RmsNorm", {rows, {cols}}, "float32"));
    TuningProblem ln = Problem(Key("LayerNorm", {rows, {cols}, {cols}}, "float32"));
    ASSERT_EQ(rms.space.size(), ln.space.size());
    int compared = 0;
    rms.space.ForEachValid([&](ConfigIndex i) {
      const Config c = rms.space.Decode(i);
      if (!ln.space.Validate(c).ok()) return true;
      KernelEstimate r = Run(rms, c);
      KernelEstimate l = Run(ln, c);
      EXPECT_LT(r.BusyUs(Pipe::kVector), l.BusyUs(Pipe::kVector)) << rms.space.Describe(c);
      EXPECT_LE(r.latency_us, l.latency_us * (1 + 1e-9)) << rms.space.Describe(c);
      EXPECT_NEAR(l.hbm_bytes - r.hbm_bytes, cols * 4.0, 1) << "one weight row fewer";
      ++compared;
      return true;
    });
    EXPECT_GT(compared, 0);
    const double x_bytes = static_cast<double>(rows[0]) * cols * 4;
    const double passes = cols == 65536 ? 2 : 1;  // 256 KiB rows do not fit the 192 KiB UB
    EXPECT_NEAR(Run(rms, rms.default_config).hbm_bytes, (passes + 1) * x_bytes + cols * 4, 1)
        << "x read " << passes << "x, y written once, gamma once";
  }
}

// A style-transfer net's InstanceNorm2d of [8, 128, 64, 64]: a row per (n, c) normalised and
// scaled by that channel's scalars reads x once and writes y, no weight row; cheaper than the
// LayerNorm of the same rows at every config, in one HBM pass while a row fits UB and two
// when it does not.
TEST_F(VectorModel, AnInstanceNormCostsLessThanALayerNormOfTheSameRows) {
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{8, 128, 64, 64}, std::vector<int64_t>{1, 32, 256, 256}}) {
    const int64_t rows = x[0] * x[1], cols = x[2] * x[3];
    TuningProblem in = Problem(Key("InstanceNorm", {x, {x[1]}, {x[1]}}, "float32"));
    TuningProblem ln = Problem(Key("LayerNorm", {{rows, cols}, {cols}, {cols}}, "float32"));
    ASSERT_EQ(in.space.size(), ln.space.size());
    int compared = 0;
    in.space.ForEachValid([&](ConfigIndex i) {
      const Config c = in.space.Decode(i);
      if (!ln.space.Validate(c).ok()) return true;
      const KernelEstimate n = Run(in, c);
      const KernelEstimate l = Run(ln, c);
      EXPECT_LT(n.BusyUs(Pipe::kVector), l.BusyUs(Pipe::kVector)) << in.space.Describe(c);
      EXPECT_LE(n.latency_us, l.latency_us * (1 + 1e-9)) << in.space.Describe(c);
      ++compared;
      return true;
    });
    EXPECT_GT(compared, 0);
    const double x_bytes = static_cast<double>(rows) * cols * 4;
    const double passes = cols == 65536 ? 2 : 1;  // 256 KiB rows do not fit the 192 KiB UB
    EXPECT_NEAR(Run(in, in.default_config).hbm_bytes, (passes + 1) * x_bytes, 1)
        << "x read " << passes << "x, y written once";
  }
}

// A GroupNorm fused with its affine and SiLU (fuse, as CANN's GroupNormSilu): each row of
// [1, 32, 65536] applies 4 channels' scale and bias, so it costs more vector time than the
// InstanceNorm of ones and zeros it replaces, but less than that norm plus the element-wise
// pass (Mul, Add, Silu) it saves, which reads and writes the tensor once more.
TEST_F(VectorModel, AGroupNormFusedWithItsAffineAndSiluSavesAPass) {
  const std::vector<int64_t> x = {1, 32, 65536}, image = {1, 128, 128, 128};
  TuningProblem plain = Problem(Key("InstanceNorm", {x, {32}, {32}}));
  TuningProblem group = Problem(Key("InstanceNorm", {x, {128}, {128}}));
  TuningProblem fused = Problem(Key("InstanceNorm", {x, {128}, {128}}, "float16", {{"epilogue", "Silu"}}));
  TuningProblem affine = Problem(Key("FusedElementwise", {image, {128, 1, 1}, {128, 1, 1}}, "float16", {{"ops", "Mul,Add,Silu"}}));
  const KernelEstimate p = Run(plain, plain.default_config), g = Run(group, group.default_config);
  const KernelEstimate f = Run(fused, fused.default_config), a = Run(affine, affine.default_config);
  EXPECT_GT(g.BusyUs(Pipe::kVector), p.BusyUs(Pipe::kVector)) << "3 more channels' a and b a row";
  EXPECT_GT(f.BusyUs(Pipe::kVector), g.BusyUs(Pipe::kVector)) << "and the SiLU";
  EXPECT_LT(f.latency_us, p.latency_us + a.latency_us);
  EXPECT_NEAR(f.hbm_bytes, p.hbm_bytes, 1) << "the same passes over x; no other";
}

TEST_F(VectorModel, BertBaseVectorOpsHaveValidDefaultsThatTuningImproves) {
  // Batch 32, seq 128, hidden 768, 12 heads.
  const std::vector<OpKey> keys = {
      Key("Add", {{4096, 3072}, {4096, 3072}}),
      Key("Add", {{4096, 3072}, {3072}}),  // bias, broadcast over rows
      Key("Gelu", {{4096, 3072}}),
      Key("LayerNorm", {{4096, 768}, {768}, {768}}),
      Key("Softmax", {{32, 12, 128, 128}}),
      Key("Transpose", {{32, 12, 128, 64}}, "float16", {{"perm", "0,1,3,2"}}),
  };
  for (const char* soc : {"Ascend910B2", "Ascend910B4", "Ascend910"}) {
    for (OpKey key : keys) {
      key.soc = soc;
      TuningProblem p = Problem(key);
      ASSERT_TRUE(p.space.Validate(p.default_config).ok()) << key.Display();
      KernelEstimate def = Run(p, p.default_config);
      EXPECT_EQ(def.block_dim, Soc(soc).vector_core_cnt) << key.Display() << " uses all vector cores";
      auto [best, e] = Best(p);
      EXPECT_LE(e.latency_us, def.latency_us) << key.Display();
      if (std::string(soc) == "Ascend910B2") {
        std::printf("%-40s default %-40s %8.1f us  best %-40s %8.1f us\n", key.Display().c_str(),
                    p.space.Describe(p.default_config).c_str(), def.latency_us, p.space.Describe(best).c_str(),
                    e.latency_us);
      }
    }
  }
}

TEST_F(VectorModel, ConfigsViolatingCapacityOrAlignmentAreRejectedBySimulate) {
  TuningProblem p = Problem(Key("Add", {{4096, 3072}, {4096, 3072}}));
  auto e = Simulate(p, With(p, {{"tileLength", 65536}, {"bufferNum", 2}}), Soc());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("ub_size"), std::string::npos) << e.status().message();
  auto a = Simulate(p, With(p, {{"tileLength", 8}}), Soc());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("ubblock_size"), std::string::npos) << a.status().message();
}

}  // namespace
}  // namespace tunefleet::sim
