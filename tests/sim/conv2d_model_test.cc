// The Conv2D timing model against NPU_MODEL.md: the roofline over many configs of
// ResNet-50 convolutions, capacity rejections by name, monotonicity in the problem,
// the 1x1 conv that must cost exactly its MatMul, the halo a 3x3 window re-reads, and
// depthwise convolution.
#include "worker/sim/conv2d_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/cube_model_impl.h"
#include "worker/sim/matmul_model.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey ConvKey(int64_t n, int64_t cin, int64_t hw, int64_t cout, int64_t k, int64_t stride = 1,
              int64_t pad = 0, int64_t groups = 1) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "Conv2D";
  key.inputs = {{{n, cin, hw, hw}, "float16", "ND"}, {{cout, cin / groups, k, k}, "float16", "ND"}};
  if (stride != 1) key.attrs["strides"] = std::to_string(stride) + "," + std::to_string(stride);
  if (pad != 0) key.attrs["pads"] = std::to_string(pad);
  if (groups != 1) key.attrs["groups"] = std::to_string(groups);
  return key;
}

// A tiling valid for the ResNet-50 shapes used below (128 x 128 blocks, K chunks of 64).
MatmulTiling Plain() {
  MatmulTiling t;
  t.base_m = t.base_n = 128;
  t.base_k = 64;
  t.step_ka = t.step_kb = 2;
  t.db_l0a = t.db_l0b = true;
  t.used_cores = 24;
  return t;
}

// MTE2's input bytes: every HBM byte but the written output, plus the L2 hits.
double Mte2ReadBytes(const KernelEstimate& e, const Conv2dShape& s) {
  const double out = static_cast<double>(s.batch * s.out_channels * s.out_h * s.out_w) * 4;
  return e.hbm_bytes - out + e.l2_bytes;
}

class Conv2dModelTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  TuningProblem Problem(const OpKey& key) { return test_support::ProblemOrFail(key, soc()); }
  KernelEstimate Estimate(const Conv2dShape& s, const MatmulTiling& t) {
    auto e = EstimateConv2d(s, t, soc());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : KernelEstimate{};
  }
};

using Conv2dModel = Conv2dModelTest;

TEST_F(Conv2dModel, NoConfigOfAResNet50ConvBeatsTheRoofline) {
  const OpKey keys[] = {ConvKey(32, 3, 224, 64, 7, 2, 3),   ConvKey(32, 64, 56, 64, 3, 1, 1),
                        ConvKey(32, 256, 56, 512, 1, 2, 0), ConvKey(32, 128, 28, 512, 1),
                        ConvKey(32, 256, 28, 256, 3, 2, 1), ConvKey(32, 512, 7, 512, 3, 1, 1)};
  for (const OpKey& key : keys) {
    TuningProblem p = Problem(key);
    auto prepared = Prepare(p, soc());
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
    int64_t checked = 0;
    // Every 211th config of the product (a prime stride crosses all parameters).
    for (ConfigIndex i = 0; i < p.space.size() && !HasFailure(); i += 211) {
      const Config c = p.space.Decode(i);
      if (!p.space.Validate(c).ok()) continue;
      auto e = Simulate(*prepared, c, soc());
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      EXPECT_GE(e->latency_us, RooflineUs(*e, soc())) << key.Display() << " " << p.space.Describe(c);
      EXPECT_GE(e->hbm_bytes, e->compulsory_bytes * (1 - 1e-12)) << p.space.Describe(c);
      for (double busy : e->busy_us)
        EXPECT_LE(busy, e->duration_us * (1 + 1e-9)) << p.space.Describe(c);
      ++checked;
    }
    EXPECT_GT(checked, 1000) << key.Display();
  }
}

TEST_F(Conv2dModel, CompulsoryBytesAreInputWeightAndOutputOnceAndFlopsTheConvs) {
  Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(32, 64, 56, 64, 3, 1, 1)).value();
  KernelEstimate e = Estimate(s, Plain());
  const double x = 32.0 * 64 * 56 * 56 * 2, w = 64.0 * 64 * 9 * 2, y = 32.0 * 64 * 56 * 56 * 2;
  EXPECT_DOUBLE_EQ(e.compulsory_bytes, x + w + y) << "an fp16 conv writes fp16";
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * 32 * 56 * 56 * 64 * 64 * 9);
  OpKey fp32_out = ConvKey(32, 64, 56, 64, 3, 1, 1);
  fp32_out.attrs["out_dtype"] = "float32";
  KernelEstimate wide = Estimate(Conv2dShapeFromOpKey(fp32_out).value(), Plain());
  EXPECT_DOUBLE_EQ(wide.compulsory_bytes, x + w + 2 * y);
  EXPECT_GT(wide.BusyUs(Pipe::kFixpipe), e.BusyUs(Pipe::kFixpipe)) << "FIXPIPE writes twice the bytes";
}

TEST_F(Conv2dModel, SimulateRejectsEachOverflowingBufferByName) {
  TuningProblem p = Problem(ConvKey(32, 256, 56, 256, 3, 1, 1));
  const MatmulTiling base = MatmulTilingFromConfig(p.default_config);
  struct Case {
    const char* reason;
    MatmulTiling t;
  };
  std::vector<Case> cases;
  MatmulTiling t = base;
  t.base_m = 256;
  t.base_k = 128;
  t.db_l0a = true;
  cases.push_back({"L0A capacity", t});
  t = base;
  t.base_n = 256;
  t.base_k = 128;
  t.db_l0b = true;
  cases.push_back({"L0B capacity", t});
  t = base;
  t.base_m = 128;
  t.base_n = 256;
  t.db_l0c = true;
  cases.push_back({"L0C capacity", t});
  t = base;
  t.base_m = t.base_n = 128;
  t.base_k = 64;
  t.step_m = 4;
  t.step_n = 2;
  t.step_ka = t.step_kb = 4;
  t.db_l0c = false;
  cases.push_back({"L1 capacity", t});
  for (const Case& c : cases) {
    auto e = Simulate(p, MatmulConfigFromTiling(c.t), soc());
    ASSERT_FALSE(e.ok()) << c.reason;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(c.reason), std::string::npos) << e.status().message();
  }
  // A 1x1 conv loads whole input rows: 128 pixels span 4 rows of 56 = 224 pixels of
  // each of 512 channels, too much for L1 though the im2col chunks fit.
  TuningProblem pointwise = Problem(ConvKey(32, 512, 56, 64, 1));
  t = MatmulTiling{64, 64, 128, 2, 1, 4, 4, true, true, true, 0, 1, 24};
  cases = {{"L1 capacity (input window)", t}};
  for (const Case& c : cases) {
    auto e = Simulate(pointwise, MatmulConfigFromTiling(c.t), soc());
    ASSERT_FALSE(e.ok()) << c.reason;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(c.reason), std::string::npos) << e.status().message();
  }
}

TEST_F(Conv2dModel, SimulateEqualsTheModelForAValidConfig) {
  TuningProblem p = Problem(ConvKey(32, 64, 56, 64, 3, 1, 1));
  auto via_sim = Simulate(p, p.default_config, soc());
  ASSERT_TRUE(via_sim.ok()) << via_sim.status().ToString();
  KernelEstimate direct =
      Estimate(Conv2dShapeFromOpKey(p.key).value(), MatmulTilingFromConfig(p.default_config));
  EXPECT_DOUBLE_EQ(via_sim->latency_us, direct.latency_us);
  EXPECT_GT(via_sim->latency_us, RooflineUs(*via_sim, soc()));
}

// Sizes step so that channel planes stay 32-byte aligned (a misaligned smaller shape
// may rightly be slower than an aligned bigger one).
TEST_F(Conv2dModel, BiggerProblemsNeverGetFasterWithTheSameTiling) {
  MatmulTiling wide = Plain();
  wide.iterate_order = 1;
  wide.swizzle = 2;
  MatmulTiling small;
  small.base_m = small.base_n = small.base_k = 32;
  small.step_m = 2;
  small.step_ka = small.step_kb = 1;
  small.db_l0a = small.db_l0b = small.db_l0c = true;
  small.used_cores = 16;
  for (const OpKey& key : {ConvKey(8, 64, 56, 64, 3, 1, 1), ConvKey(8, 64, 56, 128, 1, 2, 0),
                           ConvKey(8, 32, 56, 64, 7, 2, 3)}) {
    for (const MatmulTiling& t : {Plain(), wide, small}) {
      for (int dim = 0; dim < 4; ++dim) {
        double prev = 0;
        for (int64_t x = 16; x <= 512; x += 16) {
          OpKey grown = key;
          if (dim == 0) grown.inputs[0].shape[0] = x / 16;                           // batch
          if (dim == 1) grown.inputs[0].shape[1] = grown.inputs[1].shape[1] = x;     // Cin
          if (dim == 2) grown.inputs[1].shape[0] = x;                                // Cout
          if (dim == 3) grown.inputs[0].shape[2] = grown.inputs[0].shape[3] = x / 4 + 12;  // H=W
          auto s = Conv2dShapeFromOpKey(grown);
          ASSERT_TRUE(s.ok()) << s.status().ToString();
          const double now = Estimate(*s, t).latency_us;
          ASSERT_GE(now, prev * (1 - 1e-12)) << key.Display() << " dim " << dim << " = " << x;
          prev = now;
        }
      }
    }
  }
}

// NPU_MODEL.md "Conv2D": the im2col view of a 1x1 stride-1 unpadded conv IS a MatMul:
// x [N, Cin, H*W] is A stored K-major, the weight [Cout, Cin] is B stored N-major.
TEST_F(Conv2dModel, AOneByOneUnitStrideConvCostsExactlyTheEquivalentMatmul) {
  for (int64_t batch : {1, 32}) {
    const OpKey conv_key = ConvKey(batch, 256, 56, 64, 1);
    TuningProblem conv = Problem(conv_key);
    OpKey mm_key;
    mm_key.soc = "Ascend910B2";
    mm_key.op_type = "MatMul";
    mm_key.inputs = {{{256, batch * 56 * 56}, "float16", "ND"}, {{64, 256}, "float16", "ND"}};
    mm_key.attrs = {{"transpose_a", "1"}, {"transpose_b", "1"}};
    TuningProblem mm = Problem(mm_key);
    ASSERT_EQ(conv.space.size(), mm.space.size());
    auto conv_prepared = Prepare(conv, soc()).value();
    auto mm_prepared = Prepare(mm, soc()).value();
    int64_t compared = 0;
    for (ConfigIndex i = 0; i < conv.space.size() && !HasFailure(); i += 23) {
      const Config c = conv.space.Decode(i);
      if (!conv.space.Validate(c).ok()) continue;
      auto a = Simulate(conv_prepared, c, soc());
      auto b = Simulate(mm_prepared, c, soc());
      ASSERT_TRUE(a.ok() && b.ok()) << conv.space.Describe(c);
      EXPECT_DOUBLE_EQ(a->latency_us, b->latency_us) << conv.space.Describe(c);
      EXPECT_DOUBLE_EQ(a->hbm_bytes, b->hbm_bytes) << conv.space.Describe(c);
      EXPECT_DOUBLE_EQ(a->l2_bytes, b->l2_bytes) << conv.space.Describe(c);
      EXPECT_DOUBLE_EQ(a->compulsory_bytes, b->compulsory_bytes);
      EXPECT_DOUBLE_EQ(a->flops, b->flops);
      for (int pipe = 0; pipe < kPipeCount; ++pipe)
        EXPECT_DOUBLE_EQ(a->busy_us[pipe], b->busy_us[pipe]) << pipe << " " << conv.space.Describe(c);
      ++compared;
    }
    EXPECT_GT(compared, 1000) << batch;
  }
}

// The halo: a 3x3 window reads input rows its neighbour block reads again. Without that
// amplification its im2col GEMM would read each block's own input pixels once per pass.
TEST_F(Conv2dModel, A3x3ConvCostsMoreMte2BytesThanItsIm2colMatmulWithoutAmplification) {
  const Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(32, 128, 28, 128, 3, 1, 1)).value();
  const MatmulShape gemm = Conv2dGemm(s);
  for (MatmulTiling t : {Plain(), MatmulTiling{64, 128, 64, 2, 1, 4, 2, true, true, false, 0, 1, 24}}) {
    const CubeASide amplified = Conv2dASide(s, t, soc());
    // The same A side with the window's overlap free: each channel load (as many as the
    // conv's: chunk boundaries split some channels) reads only the input pixels of the
    // block's own output pixels, once, in bursts of baseM.
    CubeASide flat = amplified;
    const int64_t block_rows = t.step_m * t.base_m;
    const int64_t blocks_m = (gemm.m + block_rows - 1) / block_rows;
    const int64_t rows_of[2] = {block_rows, gemm.m - (blocks_m - 1) * block_rows};
    const int64_t loads = Conv2dChannelLoadsPerPass(s, std::min(t.step_ka * t.base_k, gemm.k));
    for (int i = 0; i < 2; ++i) {
      flat.pass_bytes[i] = static_cast<double>(rows_of[i] * loads * 2);
      flat.pass_bursts[i] = static_cast<double>(loads * ((rows_of[i] + t.base_m - 1) / t.base_m));
      EXPECT_GT(amplified.pass_bytes[i], flat.pass_bytes[i]) << i;
    }
    const KernelEstimate conv = EstimateCube(gemm, t, &amplified, soc());
    const KernelEstimate plain = EstimateCube(gemm, t, &flat, soc());
    EXPECT_GT(Mte2ReadBytes(conv, s), Mte2ReadBytes(plain, s));
    EXPECT_GT(conv.BusyUs(Pipe::kMte2), plain.BusyUs(Pipe::kMte2));
    // The cube work is the GEMM's either way.
    EXPECT_DOUBLE_EQ(conv.BusyUs(Pipe::kCube), plain.BusyUs(Pipe::kCube));
    EXPECT_DOUBLE_EQ(conv.BusyUs(Pipe::kMte1), plain.BusyUs(Pipe::kMte1));
    EXPECT_DOUBLE_EQ(EstimateConv2d(s, t, soc())->latency_us, conv.latency_us);
  }
}

// Implicit im2col is the point of the op: reading windows beats materialising the
// 9x larger im2col matrix and running it as a MatMul.
TEST_F(Conv2dModel, ImplicitIm2colReadsFarLessThanAnExplicitIm2colMatmul) {
  const Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(32, 128, 28, 128, 3, 1, 1)).value();
  const MatmulShape gemm = Conv2dGemm(s);
  const KernelEstimate conv = Estimate(s, Plain());
  auto explicit_mm = EstimateMatmul(gemm, Plain(), soc());
  ASSERT_TRUE(explicit_mm.ok());
  // Per block and pass: 136 channel windows (8 chunk boundaries split a channel) of
  // 6.6 input rows of 28 pixels, against 128 rows of the 1152-wide im2col matrix.
  const CubeASide a = Conv2dASide(s, Plain(), soc());
  EXPECT_LT(a.pass_bytes[0], 0.2 * 128 * 1152 * 2);
  EXPECT_LT(Mte2ReadBytes(conv, s), Mte2ReadBytes(*explicit_mm, s));
  EXPECT_LT(conv.BusyUs(Pipe::kMte2), explicit_mm->BusyUs(Pipe::kMte2));
  EXPECT_LE(conv.latency_us, explicit_mm->latency_us);
}

TEST_F(Conv2dModel, LargerStepMReReadsLessHalo) {
  // Each block re-reads (kh - stride) input rows of its neighbour: bigger blocks, fewer.
  const Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(32, 64, 56, 64, 3, 1, 1)).value();
  MatmulTiling one = Plain();
  one.step_ka = one.step_kb = 1;
  MatmulTiling four = one;
  four.step_m = 4;
  const double per_pixel_one = Conv2dASide(s, one, soc()).pass_bytes[0] / (one.step_m * one.base_m);
  const double per_pixel_four = Conv2dASide(s, four, soc()).pass_bytes[0] / (four.step_m * four.base_m);
  EXPECT_LT(per_pixel_four, per_pixel_one);
  EXPECT_LT(Mte2ReadBytes(Estimate(s, four), s), Mte2ReadBytes(Estimate(s, one), s));
}

TEST_F(Conv2dModel, DepthwiseConvRunsAsOneTinyGemmPerChannel) {
  const OpKey dw_key = ConvKey(32, 64, 56, 64, 3, 1, 1, 64);
  TuningProblem dw = Problem(dw_key);
  auto e = Simulate(dw, dw.default_config, soc());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_GE(e->latency_us, RooflineUs(*e, soc()));
  EXPECT_DOUBLE_EQ(e->flops, 2.0 * 32 * 56 * 56 * 64 * 9);
  EXPECT_EQ(e->block_dim, soc().ai_core_cnt);
  // N = 1 and K = 9 pad to whole 16x16x16 fractals: far less efficient than the dense conv.
  TuningProblem dense = Problem(ConvKey(32, 64, 56, 64, 3, 1, 1));
  auto d = Simulate(dense, dense.default_config, soc());
  ASSERT_TRUE(d.ok());
  EXPECT_LT(e->ComputeEfficiency(), 0.1 * d->ComputeEfficiency());
  // Tuning still has a space to search and finds no config under the roofline.
  Config c;
  int64_t checked = 0;
  dw.space.ForEachValid([&](ConfigIndex i) {
    if (i % 7) return true;
    dw.space.DecodeInto(i, c);
    auto x = Simulate(dw, c, soc());
    EXPECT_TRUE(x.ok());
    if (x.ok()) {
      EXPECT_GE(x->latency_us, RooflineUs(*x, soc())) << dw.space.Describe(c);
    }
    ++checked;
    return !HasFailure();
  });
  EXPECT_GT(checked, 100);
}

TEST_F(Conv2dModel, ABiasCostsItsBytesOnce) {
  OpKey key = ConvKey(32, 64, 56, 256, 1);
  OpKey biased = key;
  biased.inputs.push_back({{256}, "float32", "ND"});
  TuningProblem plain = Problem(key);
  TuningProblem with = Problem(biased);
  auto p = Simulate(plain, plain.default_config, soc());
  auto b = Simulate(with, plain.default_config, soc());
  ASSERT_TRUE(p.ok() && b.ok());
  EXPECT_DOUBLE_EQ(b->compulsory_bytes - p->compulsory_bytes, 256 * 4);
  EXPECT_DOUBLE_EQ(b->hbm_bytes - p->hbm_bytes, 256 * 4);
  EXPECT_GE(b->latency_us, p->latency_us);
  EXPECT_GE(b->latency_us, RooflineUs(*b, soc()));
}

TEST_F(Conv2dModel, Int8UsesTheDoubleRateCubeAndHalfTheInputBytes) {
  OpKey key = ConvKey(32, 128, 28, 128, 3, 1, 1);
  OpKey int8 = key;
  int8.inputs[0].dtype = int8.inputs[1].dtype = "int8";
  const Conv2dShape s16 = Conv2dShapeFromOpKey(key).value();
  const Conv2dShape s8 = Conv2dShapeFromOpKey(int8).value();
  const KernelEstimate e16 = Estimate(s16, Plain());
  const KernelEstimate e8 = Estimate(s8, Plain());
  EXPECT_DOUBLE_EQ(e8.compute_roof_flops, 2 * soc().CubePeakFlops());
  EXPECT_NEAR(e8.BusyUs(Pipe::kCube), e16.BusyUs(Pipe::kCube) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(Conv2dASide(s8, Plain(), soc()).total, Conv2dASide(s16, Plain(), soc()).total / 2);
  EXPECT_GE(e8.latency_us, RooflineUs(e8, soc()));
  TuningProblem p = Problem(int8);
  EXPECT_TRUE(Simulate(p, p.default_config, soc()).ok());
}

TEST_F(Conv2dModel, EstimateRejectsATilingNoSpaceWouldProduce) {
  const Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(1, 64, 56, 64, 3, 1, 1)).value();
  MatmulTiling t = Plain();
  t.base_k = 40;
  auto e = EstimateConv2d(s, t, soc());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  Conv2dShape empty = s;
  empty.out_h = 0;
  EXPECT_FALSE(EstimateConv2d(empty, Plain(), soc()).ok());
}

}  // namespace
}  // namespace tunefleet::sim
