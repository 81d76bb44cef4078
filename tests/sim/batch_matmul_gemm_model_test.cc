// BatchMatMul and Gemm on the MatMul model: a batch-1 BatchMatMul and a bias-free Gemm
// cost exactly their MatMul, a shared weight is an exact stacked MatMul, more batches
// never cost less, a bias row costs its bytes and never beats the roofline.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/matmul_model.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey Key(const char* op, std::vector<std::vector<int64_t>> shapes) {
  return test_support::TestKey(op, test_support::Inputs(std::move(shapes)));
}

class BatchMatmulGemmModelTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
  TuningProblem Problem(const OpKey& key) { return test_support::ProblemOrFail(key, soc()); }
  // Every sampled valid config of `a` costs exactly the same in `b` (same space).
  void ExpectSameCost(const OpKey& a_key, const OpKey& b_key) {
    TuningProblem a = Problem(a_key);
    TuningProblem b = Problem(b_key);
    ASSERT_EQ(a.space.size(), b.space.size());
    int64_t compared = 0;
    for (ConfigIndex i = 0; i < a.space.size() && !HasFailure(); i += 37) {
      const Config c = a.space.Decode(i);
      if (!a.space.Validate(c).ok()) continue;
      auto x = Simulate(a, c, soc());
      auto y = Simulate(b, c, soc());
      ASSERT_TRUE(x.ok() && y.ok()) << a.space.Describe(c);
      EXPECT_DOUBLE_EQ(x->latency_us, y->latency_us) << a.space.Describe(c);
      EXPECT_DOUBLE_EQ(x->hbm_bytes, y->hbm_bytes) << a.space.Describe(c);
      EXPECT_DOUBLE_EQ(x->compulsory_bytes, y->compulsory_bytes);
      ++compared;
    }
    EXPECT_GT(compared, 500);
  }
};

using BatchMatmulGemmModel = BatchMatmulGemmModelTest;

TEST_F(BatchMatmulGemmModel, ABatchOfOneCostsExactlyTheMatMul) {
  ExpectSameCost(Key("BatchMatMul", {{1, 512, 256}, {1, 256, 384}}),
                 Key("MatMul", {{512, 256}, {256, 384}}));
}

TEST_F(BatchMatmulGemmModel, ASharedWeightCostsExactlyTheStackedMatMul) {
  ExpectSameCost(Key("BatchMatMul", {{8, 128, 256}, {256, 384}}),
                 Key("MatMul", {{1024, 256}, {256, 384}}));
}

TEST_F(BatchMatmulGemmModel, AGemmWithoutBiasCostsExactlyTheMatMul) {
  OpKey gemm = Key("Gemm", {{256, 512}, {384, 256}});
  gemm.attrs = {{"transA", "1"}, {"transB", "1"}};
  OpKey mm = Key("MatMul", {{256, 512}, {384, 256}});
  mm.attrs = {{"transpose_a", "1"}, {"transpose_b", "1"}};
  ExpectSameCost(gemm, mm);
}

TEST_F(BatchMatmulGemmModel, MoreBatchesNeverCostLessWithTheSameTiling) {
  TuningProblem one = Problem(Key("BatchMatMul", {{1, 256, 128}, {1, 128, 256}}));
  for (ConfigIndex i : {one.default_index}) {
    const Config c = one.space.Decode(i);
    double prev = 0;
    for (int64_t b = 1; b <= 96; ++b) {
      TuningProblem p = Problem(Key("BatchMatMul", {{b, 256, 128}, {b, 128, 256}}));
      auto e = Simulate(p, c, soc());
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      EXPECT_GE(e->latency_us, prev * (1 - 1e-12)) << b;
      EXPECT_DOUBLE_EQ(e->flops, 2.0 * 256 * 256 * 128 * static_cast<double>(b));
      prev = e->latency_us;
    }
  }
}

TEST_F(BatchMatmulGemmModel, ABiasRowCostsItsBytesAndNeverBeatsTheRoofline) {
  OpKey with = Key("Gemm", {{1024, 768}, {768, 3072}, {3072}});
  TuningProblem biased = Problem(with);
  TuningProblem plain = Problem(Key("Gemm", {{1024, 768}, {768, 3072}}));
  auto b = Simulate(biased, biased.default_config, soc());
  auto p = Simulate(plain, plain.default_config, soc());
  ASSERT_TRUE(b.ok() && p.ok());
  EXPECT_DOUBLE_EQ(b->compulsory_bytes - p->compulsory_bytes, 3072 * 2);
  EXPECT_DOUBLE_EQ(b->hbm_bytes - p->hbm_bytes, 3072 * 2);
  EXPECT_GE(b->BusyUs(Pipe::kMte2), p->BusyUs(Pipe::kMte2));
  EXPECT_GE(b->latency_us, p->latency_us);
  EXPECT_LT(b->latency_us, 1.01 * p->latency_us);  // a row per block is cheap
  int64_t checked = 0;
  for (ConfigIndex i = 0; i < biased.space.size() && !HasFailure(); i += 53) {
    const Config c = biased.space.Decode(i);
    if (!biased.space.Validate(c).ok()) continue;
    auto e = Simulate(biased, c, soc());
    EXPECT_TRUE(e.ok());
    if (e.ok()) {
      EXPECT_GE(e->latency_us, RooflineUs(*e, soc())) << biased.space.Describe(c);
      EXPECT_GE(e->hbm_bytes, e->compulsory_bytes * (1 - 1e-12)) << biased.space.Describe(c);
    }
    ++checked;
  }
  EXPECT_GT(checked, 1000);
}

TEST_F(BatchMatmulGemmModel, NoBatchMatMulConfigBeatsTheRoofline) {
  TuningProblem p = Problem(Key("BatchMatMul", {{32, 12, 128, 64}, {32, 12, 64, 128}}));
  int64_t checked = 0;
  for (ConfigIndex i = 0; i < p.space.size() && !HasFailure(); i += 29) {
    const Config c = p.space.Decode(i);
    if (!p.space.Validate(c).ok()) continue;
    auto e = Simulate(p, c, soc());
    EXPECT_TRUE(e.ok());
    if (e.ok()) {
      EXPECT_GE(e->latency_us, RooflineUs(*e, soc())) << p.space.Describe(c);
    }
    ++checked;
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace tunefleet::sim
