// The MatMul timing model against NPU_MODEL.md: the roofline, monotonicity, capacity
// rejections, the pto-isa calibration table and the trade-offs a tuner must see.
#include "worker/sim/matmul_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <vector>

#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey MatmulKey(int64_t m, int64_t n, int64_t k, const char* dtype = "float16") {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "MatMul";
  key.inputs = {{{m, k}, dtype, "ND"}, {{k, n}, dtype, "ND"}};
  return key;
}

MatmulShape Shape(int64_t m, int64_t n, int64_t k) {
  MatmulShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

// The pto-isa GEMM's tiling (NPU_MODEL.md "Calibration"): 128/256/64, stepK=4, L0A/L0B
// ping-ponged, L0C single (two 128x256 fp32 tiles would overflow it), 24 cores.
MatmulTiling PtoIsaTiling() {
  MatmulTiling t;
  t.base_m = 128;
  t.base_n = 256;
  t.base_k = 64;
  t.step_ka = t.step_kb = 4;
  t.db_l0a = t.db_l0b = true;
  t.db_l0c = false;
  t.used_cores = 24;
  return t;
}

class MatmulModelTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  TuningProblem Problem(int64_t m, int64_t n, int64_t k) {
    auto p = MakeTuningProblem(MatmulKey(m, n, k), soc());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }
  KernelEstimate Estimate(const MatmulShape& s, const MatmulTiling& t) {
    auto e = EstimateMatmul(s, t, soc());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : KernelEstimate{};
  }
};

using MatmulModel = MatmulModelTest;

TEST_F(MatmulModel, NoConfigBeatsTheRoofline) {
  struct Dims {
    int64_t m, n, k;
  };
  for (Dims d : {Dims{64, 64, 64}, Dims{100, 300, 77}, Dims{512, 256, 128}, Dims{2048, 48, 1000}}) {
    TuningProblem p = Problem(d.m, d.n, d.k);
    MatmulShape shape = *MatmulShapeFromOpKey(p.key);
    Config c;
    int64_t checked = 0;
    p.space.ForEachValid([&](ConfigIndex i) {
      p.space.DecodeInto(i, c);
      KernelEstimate e = Estimate(shape, MatmulTilingFromConfig(c));
      const double roof = RooflineUs(e, soc());
      EXPECT_GE(e.latency_us, roof) << p.space.Describe(c);
      EXPECT_GE(e.duration_us * (1 + 1e-12), e.hbm_bytes / (soc().hbm_bandwidth_gbps * 1e3))
          << p.space.Describe(c);
      for (double busy : e.busy_us)
        EXPECT_LE(busy, e.duration_us * (1 + 1e-9)) << p.space.Describe(c);
      ++checked;
      return !HasFailure();
    });
    EXPECT_GT(checked, 1000) << d.m << "x" << d.n << "x" << d.k;
  }
}

// Sizes step by 32 elements, so no step changes whether a row stride is 32-byte aligned
// (a misaligned smaller shape may rightly be slower than an aligned bigger one).
TEST_F(MatmulModel, BiggerProblemsNeverGetFasterWithTheSameTiling) {
  MatmulTiling small;
  small.base_m = small.base_n = small.base_k = 32;
  small.step_m = small.step_n = 2;
  small.step_ka = small.step_kb = 2;
  small.db_l0a = small.db_l0b = small.db_l0c = true;
  small.swizzle = 2;
  small.used_cores = 24;
  MatmulTiling wide = PtoIsaTiling();
  wide.iterate_order = 1;
  wide.used_cores = 20;
  MatmulTiling stepped = PtoIsaTiling();
  stepped.step_m = 2;
  stepped.step_ka = stepped.step_kb = 1;
  stepped.base_n = 128;
  MatmulShape nd = Shape(1000, 1000, 1000);
  MatmulShape weight_nz = nd;
  weight_nz.transpose_b = weight_nz.b_nz = true;
  MatmulShape int8_t_a = nd;
  int8_t_a.in_dtype = DType::kInt8;
  int8_t_a.transpose_a = true;
  MatmulShape batched = nd;
  batched.batch = 3;
  for (const MatmulShape& layout : {nd, weight_nz, int8_t_a, batched}) {
    for (const MatmulTiling& t : {small, wide, stepped, PtoIsaTiling()}) {
      for (int dim = 0; dim < 3; ++dim) {
        double prev = 0;
        for (int64_t x = 32; x <= 12288; x += (x < 1024 ? 32 : 160)) {
          MatmulShape s = layout;
          (dim == 0 ? s.m : dim == 1 ? s.n : s.k) = x;
          double now = Estimate(s, t).latency_us;
          ASSERT_GE(now, prev * (1 - 1e-12)) << "dim " << dim << " = " << x << " base " << t.base_m
                                             << "x" << t.base_n << "x" << t.base_k;
          prev = now;
        }
      }
    }
  }
}

TEST_F(MatmulModel, EstimateRejectsATilingNoSpaceWouldProduce) {
  MatmulTiling t = PtoIsaTiling();
  t.base_k = 40;
  auto e = EstimateMatmul(Shape(256, 256, 256), t, soc());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(EstimateMatmul(Shape(0, 256, 256), PtoIsaTiling(), soc()).ok());
}

TEST_F(MatmulModel, SimulateRejectsEachOverflowingBufferByName) {
  TuningProblem p = Problem(4096, 4096, 4096);
  MatmulTiling base = MatmulTilingFromConfig(p.default_config);
  struct Case {
    const char* buffer;
    MatmulTiling t;
  };
  std::vector<Case> cases;
  MatmulTiling t = base;
  t.base_m = 256;
  t.base_k = 128;
  t.db_l0a = true;  // 2 x 64 KiB
  cases.push_back({"L0A", t});
  t = base;
  t.base_n = 256;
  t.base_k = 128;
  t.db_l0b = true;
  cases.push_back({"L0B", t});
  t = base;
  t.base_m = 128;
  t.base_n = 256;
  t.db_l0c = true;  // 2 x 128 KiB fp32
  cases.push_back({"L0C", t});
  t = base;
  t.base_m = t.base_n = 128;
  t.base_k = 64;
  t.step_m = t.step_n = 4;
  t.step_ka = t.step_kb = 4;
  t.db_l0c = false;
  cases.push_back({"L1", t});
  for (const Case& c : cases) {
    auto e = Simulate(p, MatmulConfigFromTiling(c.t), soc());
    ASSERT_FALSE(e.ok()) << c.buffer;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(c.buffer), std::string::npos) << e.status().message();
  }
}

TEST_F(MatmulModel, SimulateEqualsTheModelForAValidConfig) {
  TuningProblem p = Problem(1024, 768, 512);
  auto via_sim = Simulate(p, p.default_config, soc());
  ASSERT_TRUE(via_sim.ok()) << via_sim.status().ToString();
  KernelEstimate direct =
      Estimate(*MatmulShapeFromOpKey(p.key), MatmulTilingFromConfig(p.default_config));
  EXPECT_DOUBLE_EQ(via_sim->latency_us, direct.latency_us);
  EXPECT_EQ(via_sim->block_dim, direct.block_dim);
  EXPECT_GT(via_sim->latency_us, soc().kernel_launch_us);
}

TEST_F(MatmulModel, SimulateRejectsUnknownOpsWrongSocsAndShortConfigs) {
  TuningProblem p = Problem(64, 64, 64);
  TuningProblem other = p;
  other.key.op_type = "Frobnicate";
  auto unknown = Simulate(other, p.default_config, soc());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("Frobnicate"), std::string::npos);
  other = p;
  other.key.soc = "Ascend910";
  EXPECT_FALSE(Simulate(other, p.default_config, soc()).ok());
  Config short_config(p.default_config.begin(), p.default_config.end() - 1);
  auto bad = Simulate(p, short_config, soc());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// NPU_MODEL.md "Calibration": the pto-isa GEMM on a 24-core 910B2-class part.
TEST_F(MatmulModel, ReproducesThePtoIsaGemmTableWithin15Percent) {
  struct Row {
    int64_t size;
    double measured_us;
    double cube_ratio;
  };
  const Row rows[] = {
      {1536, 38.8, 0.545}, {3072, 206.7, 0.790}, {6144, 1506.0, 0.867}, {7680, 3168.0, 0.806}};
  std::vector<KernelEstimate> got;
  for (const Row& r : rows) {
    KernelEstimate e = Estimate(Shape(r.size, r.size, r.size), PtoIsaTiling());
    std::printf(
        "  %5lld: model %8.1f us measured %8.1f us (%+5.1f%%)  mac %.3f (meas %.3f)  "
        "mte2 %.3f  TFLOP/s %.0f\n",
        static_cast<long long>(r.size), e.latency_us, r.measured_us,
        100 * (e.latency_us / r.measured_us - 1), e.Ratio(Pipe::kCube), r.cube_ratio,
        e.Ratio(Pipe::kMte2), e.AchievedFlopsPerS() / 1e12);
    EXPECT_NEAR(e.latency_us / r.measured_us, 1.0, 0.15) << r.size;
    EXPECT_NEAR(e.Ratio(Pipe::kCube), r.cube_ratio, 0.10) << r.size;
    got.push_back(e);
  }
  // Efficiency rises with size, then falls at 7680 where the load pipe saturates.
  EXPECT_LT(got[0].ComputeEfficiency(), got[1].ComputeEfficiency());
  EXPECT_LT(got[1].ComputeEfficiency(), got[2].ComputeEfficiency());
  EXPECT_GT(got[2].ComputeEfficiency(), got[3].ComputeEfficiency());
  EXPECT_LT(got[0].Ratio(Pipe::kCube), got[1].Ratio(Pipe::kCube));
  EXPECT_LT(got[1].Ratio(Pipe::kCube), got[2].Ratio(Pipe::kCube));
  EXPECT_GT(got[2].Ratio(Pipe::kCube), got[3].Ratio(Pipe::kCube));
  // GM->L1 was 72% busy at 1536 and 98% at 7680.
  EXPECT_NEAR(got[0].Ratio(Pipe::kMte2), 0.72, 0.12);
  EXPECT_GT(got[3].Ratio(Pipe::kMte2), 0.90);
  EXPECT_GT(got[3].Ratio(Pipe::kMte2), got[3].Ratio(Pipe::kCube));
}

TEST_F(MatmulModel, BestTilingOfALargeFp16GemmReaches70To90PercentOfPeak) {
  TuningProblem p = Problem(4096, 4096, 4096);
  MatmulShape shape = *MatmulShapeFromOpKey(p.key);
  const int core_param = p.space.IndexOf("usedCores");
  double best = std::numeric_limits<double>::infinity();
  Config c;
  std::string best_desc;
  p.space.ForEachValid([&](ConfigIndex i) {
    p.space.DecodeInto(i, c);
    if (c[static_cast<size_t>(core_param)] != soc().ai_core_cnt)
      return true;  // fewer cores never win here
    KernelEstimate e = Estimate(shape, MatmulTilingFromConfig(c));
    if (e.latency_us < best) {
      best = e.latency_us;
      best_desc = p.space.Describe(c);
    }
    return true;
  });
  const double efficiency = 2.0 * 4096.0 * 4096.0 * 4096.0 / (best * 1e-6) / soc().CubePeakFlops();
  std::printf("  best %s: %.1f us, %.1f%% of peak\n", best_desc.c_str(), best, 100 * efficiency);
  EXPECT_GE(efficiency, 0.70) << best_desc;
  EXPECT_LE(efficiency, 0.90) << best_desc;
  // CANN's default tiling is the baseline a tuner improves on.
  auto def = Simulate(p, p.default_config, soc());
  ASSERT_TRUE(def.ok());
  EXPECT_GT(def->latency_us, best);
}

// FIXPIPE converts the accumulator to the op's output dtype: an fp16 MatMul (CANN's
// default for fp16 inputs) writes half the bytes of one with out_dtype float32, which
// the calibration kernel (NPU_MODEL.md) is.
TEST_F(MatmulModel, AnFp16OutputIsHalfTheBytesAndFixpipeTimeOfAnFp32One) {
  OpKey key = MatmulKey(4096, 3072, 768);
  const MatmulShape half = *MatmulShapeFromOpKey(key);
  key.attrs["out_dtype"] = "float32";
  const MatmulShape full = *MatmulShapeFromOpKey(key);
  EXPECT_EQ(half.out_bytes, 2);
  EXPECT_EQ(full.out_bytes, 4);
  const MatmulTiling t = MatmulDefaultTiling(half, soc());
  const KernelEstimate a = Estimate(half, t), b = Estimate(full, t);
  EXPECT_DOUBLE_EQ(b.compulsory_bytes - a.compulsory_bytes, 4096.0 * 3072 * 2);
  EXPECT_DOUBLE_EQ(b.hbm_bytes - a.hbm_bytes, 4096.0 * 3072 * 2);
  EXPECT_NEAR(a.BusyUs(Pipe::kFixpipe) / b.BusyUs(Pipe::kFixpipe), 0.5, 0.05);
  EXPECT_LT(a.latency_us, b.latency_us);
  key.attrs["out_dtype"] = "int8";
  auto bad = MatmulShapeFromOpKey(key);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("use float16, bfloat16 or float32"), std::string::npos) << bad.status().message();
}

TEST_F(MatmulModel, SmallerBaseKIsMoreMemoryBound) {
  MatmulShape s = Shape(4096, 4096, 4096);
  MatmulTiling compute = PtoIsaTiling();
  MatmulTiling memory = compute;
  memory.base_k = 16;  // 32-byte A bursts: the burst overhead doubles A's cost
  memory.step_ka = memory.step_kb = 1;
  KernelEstimate c = Estimate(s, compute);
  KernelEstimate m = Estimate(s, memory);
  EXPECT_GT(m.MemoryBound(), c.MemoryBound());
  EXPECT_GT(m.Ratio(Pipe::kMte2) / m.Ratio(Pipe::kCube),
            c.Ratio(Pipe::kMte2) / c.Ratio(Pipe::kCube));
  EXPECT_GT(m.latency_us, c.latency_us);
}

TEST_F(MatmulModel, DoubleBufferingNeverHurts) {
  for (int64_t size : {96, 1000}) {
    TuningProblem p = Problem(size, size, size);
    MatmulShape shape = *MatmulShapeFromOpKey(p.key);
    Config c;
    int64_t compared = 0;
    p.space.ForEachValid([&](ConfigIndex i) {
      p.space.DecodeInto(i, c);
      MatmulTiling off = MatmulTilingFromConfig(c);
      if (off.db_l0a || off.db_l0b || off.db_l0c) return true;
      const double t_off = Estimate(shape, off).latency_us;
      for (int mask = 1; mask < 8; ++mask) {
        MatmulTiling on = off;
        on.db_l0a = mask & 1;
        on.db_l0b = mask & 2;
        on.db_l0c = mask & 4;
        if (!p.space.Validate(MatmulConfigFromTiling(on)).ok()) continue;
        EXPECT_LE(Estimate(shape, on).latency_us, t_off * 1.0001)
            << p.space.Describe(c) << " mask " << mask;
        ++compared;
      }
      return !HasFailure();
    });
    EXPECT_GT(compared, 1000);
  }
}

TEST_F(MatmulModel, DoubleBufferingHelpsWhenTwoPipesAreBusy) {
  // MTE1 (320 cycles a step) and CUBE (512) are both busy: ping-pong hides the loads.
  MatmulShape s = Shape(4096, 4096, 4096);
  MatmulTiling on = PtoIsaTiling();
  MatmulTiling off = on;
  off.db_l0a = off.db_l0b = false;
  EXPECT_LT(Estimate(s, on).latency_us, 0.8 * Estimate(s, off).latency_us);
}

TEST_F(MatmulModel, ABlockCountJustAboveACoreMultipleIsSlowerPerBlock) {
  MatmulTiling t = PtoIsaTiling();                                 // 128 x 256 blocks
  KernelEstimate exact = Estimate(Shape(128 * 48, 256, 2048), t);  // 48 blocks, 2 waves
  KernelEstimate above = Estimate(Shape(128 * 49, 256, 2048), t);  // 49 blocks, 3 waves
  EXPECT_EQ(exact.block_dim, 24);
  EXPECT_EQ(above.block_dim, 24);
  EXPECT_GT(above.duration_us / 49, 1.2 * exact.duration_us / 48);
}

TEST_F(MatmulModel, PaddedEdgeTilesWasteCubeWork) {
  MatmulTiling t = PtoIsaTiling();
  KernelEstimate aligned = Estimate(Shape(3072, 3072, 3072), t);
  KernelEstimate ragged = Estimate(Shape(3072 + 16, 3072, 3072), t);  // one more 128-row tile
  EXPECT_GT(ragged.BusyUs(Pipe::kCube) / ragged.flops, aligned.BusyUs(Pipe::kCube) / aligned.flops);
}

TEST_F(MatmulModel, MisalignedRowStrideAndNdWeightsStreamSlower) {
  MatmulTiling t = PtoIsaTiling();
  t.base_k = 32;
  t.step_ka = t.step_kb = 2;
  MatmulShape aligned = Shape(2048, 2048, 2048);
  MatmulShape misaligned = Shape(2048, 2048, 2047 + 2);  // K*2 B = 4098: not 32-byte aligned
  EXPECT_GT(Estimate(misaligned, t).BusyUs(Pipe::kMte2),
            1.05 * Estimate(aligned, t).BusyUs(Pipe::kMte2));
  MatmulShape nd = aligned;
  nd.transpose_b = true;  // weight stored [N, K]: baseK-long bursts
  MatmulShape nz = nd;
  nz.b_nz = true;
  EXPECT_LT(Estimate(nz, t).BusyUs(Pipe::kMte2), 0.9 * Estimate(nd, t).BusyUs(Pipe::kMte2));
}

TEST_F(MatmulModel, SwizzleKeepsPanelsInL2WhenAnOperandOutgrowsIt) {
  MatmulShape s = Shape(16384, 8192, 4096);  // A = 128 MiB: re-reads across N miss
  MatmulTiling plain = PtoIsaTiling();
  MatmulTiling swizzled = plain;
  swizzled.swizzle = 4;
  KernelEstimate a = Estimate(s, plain);
  KernelEstimate b = Estimate(s, swizzled);
  EXPECT_LT(b.hbm_bytes, 0.8 * a.hbm_bytes);
  EXPECT_LE(b.latency_us, a.latency_us);
}

TEST_F(MatmulModel, Int8UsesTheDoubleRateCube) {
  auto p8 = MakeTuningProblem(MatmulKey(2048, 2048, 2048, "int8"), soc());
  ASSERT_TRUE(p8.ok());
  MatmulShape s8 = *MatmulShapeFromOpKey(p8->key);
  MatmulTiling t = PtoIsaTiling();
  KernelEstimate e8 = Estimate(s8, t);
  KernelEstimate e16 = Estimate(Shape(2048, 2048, 2048), t);
  EXPECT_DOUBLE_EQ(e8.compute_roof_flops, 2 * soc().CubePeakFlops());
  EXPECT_NEAR(e8.BusyUs(Pipe::kCube), e16.BusyUs(Pipe::kCube) / 2, 1e-9);
  EXPECT_GE(e8.latency_us, RooflineUs(e8, soc()));
}

TEST_F(MatmulModel, FewerCoresAreSlowerForALargeProblem) {
  MatmulShape s = Shape(4096, 4096, 1024);
  MatmulTiling t = PtoIsaTiling();
  double prev = std::numeric_limits<double>::infinity();
  for (int64_t cores : {1, 2, 4, 8, 16, 24}) {
    t.used_cores = cores;
    KernelEstimate e = Estimate(s, t);
    EXPECT_EQ(e.block_dim, cores);
    EXPECT_LT(e.latency_us, prev) << cores;
    prev = e.latency_us;
  }
}

TEST_F(MatmulModel, TinyProblemsAreDominatedByLaunchAndScalar) {
  TuningProblem p = Problem(16, 16, 16);
  auto e = Simulate(p, p.default_config, soc());
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->launch_us, 0.5 * e->latency_us);
  EXPECT_LT(e->ComputeEfficiency(), 0.001);
}

TEST(KernelEstimate, RatiosAreBusyOverDuration) {
  KernelEstimate e;
  EXPECT_EQ(e.Ratio(Pipe::kCube), 0);
  e.duration_us = 10;
  e.BusyUs(Pipe::kCube) = 8;
  e.BusyUs(Pipe::kMte2) = 4;
  EXPECT_DOUBLE_EQ(e.Ratio(Pipe::kCube), 0.8);
  EXPECT_DOUBLE_EQ(e.MemoryBound(), 0.5);
  EXPECT_EQ(PipeRatioName(Pipe::kCube), "aic_mac_ratio");
}

}  // namespace
}  // namespace tunefleet::sim
