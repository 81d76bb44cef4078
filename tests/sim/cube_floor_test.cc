// The coordinator's view of a cube op's work (tuning_problem.h: CubeUsefulFlops,
// CubeLatencyFloorUs, computed from the op key without the simulator) must agree with what
// the simulator reports for the same op: KernelEstimate::flops and launch + RooflineUs.
// The task scheduler's forward estimate relies on the floor being one no config beats.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

using test_support::TestKey;

void ExpectAgreesWithSimulator(const OpKey& key) {
  SCOPED_TRACE(key.Display());
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find(key.soc).value();
  TuningProblem problem = MakeTuningProblem(key, soc).value();
  KernelEstimate est = Simulate(problem, problem.default_config, soc).value();
  EXPECT_DOUBLE_EQ(CubeUsefulFlops(key), est.flops);
  const double floor_us = CubeLatencyFloorUs(key, soc);
  EXPECT_NEAR(floor_us, est.launch_us + RooflineUs(est, soc), 1e-9 * floor_us);
  EXPECT_LE(floor_us, est.latency_us) << "the default tiling beats the floor";
}

TEST(CubeFloor, MatMulAgreesWithTheSimulator) {
  ExpectAgreesWithSimulator(TestKey("MatMul", {{{4096, 768}, "float16", "ND"}, {{768, 3072}, "float16", "ND"}}));
  ExpectAgreesWithSimulator(TestKey("MatMul", {{{32, 768}, "float16", "ND"}, {{768, 768}, "float16", "ND"}}));
  ExpectAgreesWithSimulator(TestKey("MatMul", {{{1024, 1024}, "int8", "ND"}, {{1024, 1024}, "int8", "ND"}}));
}

TEST(CubeFloor, BatchMatMulAndGemmWithBiasAgreeWithTheSimulator) {
  ExpectAgreesWithSimulator(TestKey("BatchMatMul", {{{8, 128, 256}, "float16", "ND"}, {{8, 256, 384}, "float16", "ND"}}));
  ExpectAgreesWithSimulator(TestKey("Gemm", {{{512, 256}, "float16", "ND"}, {{256, 384}, "float16", "ND"},
                                         {{384}, "float32", "ND"}}));
}

TEST(CubeFloor, Conv2DAgreesWithTheSimulator) {
  // ResNet-50's memory-bound 1x1 (near its floor at the default tiling) and a 3x3.
  ExpectAgreesWithSimulator(TestKey("Conv2D", {{{32, 64, 56, 56}, "float16", "ND"}, {{256, 64, 1, 1}, "float16", "ND"}}));
  ExpectAgreesWithSimulator(TestKey("Conv2D", {{{32, 128, 56, 56}, "float16", "ND"}, {{128, 128, 3, 3}, "float16", "ND"}},
                                {{"strides", "2,2"}, {"pads", "1"}}));
  ExpectAgreesWithSimulator(TestKey("Conv2D", {{{8, 64, 28, 28}, "float16", "ND"}, {{64, 16, 3, 3}, "float16", "ND"},
                                           {{64}, "float16", "ND"}},
                                {{"pads", "1"}, {"groups", "4"}}));
}

TEST(CubeFloor, UnknownForVectorOpsAndInvalidKeys) {
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  OpKey add = TestKey("Add", {{{1024, 1024}, "float16", "ND"}, {{1024, 1024}, "float16", "ND"}});
  EXPECT_EQ(CubeUsefulFlops(add), 0);
  EXPECT_EQ(CubeLatencyFloorUs(add, soc), 0);
  OpKey bad = TestKey("MatMul", {{{64, 32}, "float16", "ND"}, {{64, 64}, "float16", "ND"}});  // K mismatch
  EXPECT_EQ(CubeUsefulFlops(bad), 0);
  EXPECT_EQ(CubeLatencyFloorUs(bad, soc), 0);
}

}  // namespace
}  // namespace tunefleet::sim
