#include "worker/evaluator.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/noise.h"
#include "worker/sim/simulator.h"

namespace tunefleet::worker {
namespace {

OpKey Matmul() {
  OpKey k;
  k.soc = "Ascend910B2";
  k.op_type = "MatMul";
  k.inputs = {{{256, 128}, "float16", "ND"}, {{128, 256}, "float16", "ND"}};
  return k;
}

class EvaluatorTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
};

TEST_F(EvaluatorTest, NoiseIsOffByDefaultAndTheSimEvaluatorEqualsTheSimulator) {
  auto eval = MakeSimEvaluator(catalog_);
  auto job = eval->Prepare(Matmul(), 7).value();
  TuningProblem p = MakeTuningProblem(Matmul(), soc()).value();
  Evaluation e = job->Evaluate(p.default_index);
  ASSERT_TRUE(e.ok) << e.error;
  EXPECT_DOUBLE_EQ(e.latency_us, sim::Simulate(p, p.default_config, soc())->latency_us);
}

TEST_F(EvaluatorTest, NoiseIsAPureFunctionOfKeyConfigSeedAndRepetition) {
  OpKeyHash h = HashOpKey(Matmul());
  EXPECT_EQ(sim::MeasurementNoiseFactor(h, 5, 1, 0, 0.05), sim::MeasurementNoiseFactor(h, 5, 1, 0, 0.05));
  EXPECT_NE(sim::MeasurementNoiseFactor(h, 5, 1, 0, 0.05), sim::MeasurementNoiseFactor(h, 5, 2, 0, 0.05));
  EXPECT_NE(sim::MeasurementNoiseFactor(h, 5, 1, 0, 0.05), sim::MeasurementNoiseFactor(h, 5, 1, 1, 0.05));
  EXPECT_NE(sim::MeasurementNoiseFactor(h, 5, 1, 0, 0.05), sim::MeasurementNoiseFactor(h, 6, 1, 0, 0.05));
  EXPECT_EQ(sim::MeasurementNoiseFactor(h, 5, 1, 0, 0), 1.0);

  // Over many configs, ln(factor) has mean ~0 and standard deviation ~sigma.
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double l = std::log(sim::MeasurementNoiseFactor(h, static_cast<ConfigIndex>(i), 3, 0, 0.05));
    sum += l;
    sq += l * l;
  }
  double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0, 0.002);
  EXPECT_NEAR(sd, 0.05, 0.002);
}

TEST_F(EvaluatorTest, NoisyEvaluationsRepeatExactlyOnAnotherWorker) {
  auto a = MakeSimEvaluator(catalog_, 0.05)->Prepare(Matmul(), 11).value();
  auto b = MakeSimEvaluator(catalog_, 0.05)->Prepare(Matmul(), 11).value();
  TuningProblem p = MakeTuningProblem(Matmul(), soc()).value();
  Evaluation x = a->Evaluate(p.default_index), y = b->Evaluate(p.default_index);
  ASSERT_TRUE(x.ok && y.ok);
  EXPECT_EQ(x.latency_us, y.latency_us);
  EXPECT_NE(x.latency_us, sim::Simulate(p, p.default_config, soc())->latency_us);
}

// Even large noise never records a config below launch + roofline.
TEST_F(EvaluatorTest, NoisyMeasurementsStayAtOrAboveTheRoofline) {
  auto job = MakeSimEvaluator(catalog_, 0.5)->Prepare(Matmul(), 3).value();
  TuningProblem p = MakeTuningProblem(Matmul(), soc()).value();
  int clamped = 0, checked = 0;
  for (ConfigIndex i = 0; i < p.space.size() && checked < 2000; i += 7) {
    if (!p.space.ValidateIndex(i).ok()) continue;
    ++checked;
    Evaluation e = job->Evaluate(i);
    ASSERT_TRUE(e.ok) << e.error;
    sim::KernelEstimate est = sim::Simulate(p, p.space.Decode(i), soc()).value();
    const double floor = est.launch_us + sim::RooflineUs(est, soc());
    EXPECT_GE(e.latency_us, floor) << "config " << i;
    clamped += e.latency_us == floor;
  }
  EXPECT_GT(clamped, 0) << "sigma 0.5 must draw some factors that would cross the floor";
}

TEST_F(EvaluatorTest, AnInvalidConfigIsRejectedWithItsReasonNotMeasured) {
  auto job = MakeSimEvaluator(catalog_)->Prepare(Matmul(), 0).value();
  TuningProblem p = MakeTuningProblem(Matmul(), soc()).value();
  ConfigIndex invalid = 0;
  for (ConfigIndex i = 0; i < p.space.size(); ++i) {
    if (!p.space.ValidateIndex(i).ok()) {
      invalid = i;
      break;
    }
  }
  Evaluation e = job->Evaluate(invalid);
  EXPECT_FALSE(e.ok);
  EXPECT_TRUE(e.rejected);
  EXPECT_FALSE(e.error.empty());
  Evaluation outside = job->Evaluate(p.space.size());
  EXPECT_TRUE(outside.rejected);
}

TEST_F(EvaluatorTest, UnknownSocIsAnErrorThatListsTheKnownOnes) {
  OpKey k = Matmul();
  k.soc = "Ascend999";
  auto r = MakeSimEvaluator(catalog_)->Prepare(k, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Ascend910B2"), std::string::npos);
}

TEST_F(EvaluatorTest, FixedEvaluatorReportsItsLatencyForValidConfigs) {
  auto job = MakeFixedEvaluator(catalog_, 42)->Prepare(Matmul(), 0).value();
  TuningProblem p = MakeTuningProblem(Matmul(), soc()).value();
  Evaluation e = job->Evaluate(p.default_index);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.latency_us, 42);
}

TEST_F(EvaluatorTest, TheSimEvaluatorTimesVectorOpsAndRejectsTheirUbOverflows) {
  OpKey gelu;
  gelu.soc = "Ascend910B2";
  gelu.op_type = "Gelu";
  gelu.inputs = {{{4096, 3072}, "float16", "ND"}};
  auto job = MakeSimEvaluator(catalog_)->Prepare(gelu, 3).value();
  TuningProblem p = MakeTuningProblem(gelu, soc()).value();
  Evaluation e = job->Evaluate(p.default_index);
  ASSERT_TRUE(e.ok) << e.error;
  EXPECT_DOUBLE_EQ(e.latency_us, sim::Simulate(p, p.default_config, soc())->latency_us);
  // 65536 fp16 elements x 6 bytes x 2 buffers overflow the 192 KiB UB.
  Evaluation big = job->Evaluate(p.space.Encode({65536, 2, 48}).value());
  EXPECT_FALSE(big.ok);
  EXPECT_TRUE(big.rejected);
  EXPECT_NE(big.error.find("ub_size"), std::string::npos) << big.error;
}

}  // namespace
}  // namespace tunefleet::worker
