#include "coordinator/task_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

#include "tunefleet/common/soc_spec.h"

namespace tunefleet::coordinator {
namespace {

TEST(TaskScheduler, RoundRobinCyclesAndSkipsExhaustedTasks) {
  TaskScheduler s(TaskScheduler::Policy::kRoundRobin, {1, 1, 1});
  EXPECT_EQ(s.Next(), 0u);
  EXPECT_EQ(s.Next(), 1u);
  s.MarkExhausted(2);
  EXPECT_EQ(s.Next(), 0u);
  EXPECT_EQ(s.Next(), 1u);
}

TEST(TaskScheduler, GradientServesEveryTaskOnceBeforeChoosing) {
  TaskScheduler s(TaskScheduler::Policy::kGradient, {1, 5, 1});
  for (size_t i = 0; i < 3; ++i) {
    size_t next = s.Next();
    EXPECT_EQ(next, i) << "warm-up visits tasks in order";
    s.Update(next, 16, 100);
  }
}

// Serves every task once, as a caller would before any result is back.
void WarmUp(TaskScheduler& s, size_t n) {
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(s.Next(), i);
}

TEST(TaskScheduler, AskingAgainBeforeAnyResultStillSpreadsTheWarmUp) {
  TaskScheduler s(TaskScheduler::Policy::kGradient, {1, 1, 1});
  EXPECT_EQ(s.Next(), 0u);
  EXPECT_EQ(s.Next(), 1u);
  EXPECT_EQ(s.Next(), 2u);
  EXPECT_EQ(s.Next(), 0u) << "no estimates yet: round-robin";
}

TEST(TaskScheduler, GradientPrefersTheTaskWithTheLargestShareOfModelTime) {
  TaskScheduler s(TaskScheduler::Policy::kGradient, {1, 4});
  WarmUp(s, 2);
  s.Update(0, 16, 100);
  s.Update(1, 16, 100);  // same latency, but it runs 4 times per step
  EXPECT_EQ(s.Next(), 1u);
}

TEST(TaskScheduler, GradientMovesOnFromATaskThatStoppedImproving) {
  TaskScheduler s(TaskScheduler::Policy::kGradient, {1, 1});
  WarmUp(s, 2);
  s.Update(0, 16, 100);
  s.Update(1, 16, 100);
  // Task 0 gets many more evaluations without improving: its estimate shrinks.
  for (int i = 0; i < 10; ++i) s.Update(0, 16, 100);
  EXPECT_EQ(s.Next(), 1u);
  EXPECT_DOUBLE_EQ(s.ModelLatencyUs(), 200);
}

TEST(TaskScheduler, NeverChoosesAnExhaustedTask) {
  TaskScheduler s(TaskScheduler::Policy::kGradient, {10, 1});
  WarmUp(s, 2);
  s.Update(0, 16, 100);
  s.Update(1, 16, 100);
  s.MarkExhausted(0);
  EXPECT_EQ(s.Next(), 1u);
  s.MarkExhausted(1);
  EXPECT_TRUE(s.AllExhausted());
}


using Info = TaskScheduler::TaskInfo;

// Warms up every task and gives each `batches` batches of 16 at a constant latency.
void Plateau(TaskScheduler& s, const std::vector<double>& latency_us, int batches) {
  WarmUp(s, latency_us.size());
  for (int b = 0; b < batches; ++b) {
    for (size_t i = 0; i < latency_us.size(); ++i) s.Update(i, 16, latency_us[i]);
  }
}

TEST(TaskScheduler, SimilarityFavoursTheTaskFarBehindItsGroupsThroughput) {
  // Same weight, same latency, same group; task 1 does a tenth of task 0's work in that
  // time, so Ansor's similarity term says it could get much faster.
  TaskScheduler s(TaskScheduler::Policy::kGradient,
                  std::vector<Info>{{1, 1e10, "Conv2D/float16"}, {1, 1e9, "Conv2D/float16"}},
                  TaskScheduler::Options{});
  Plateau(s, {100, 100}, 4);
  EXPECT_EQ(s.Next(), 1u);
  EXPECT_TRUE(s.InSimilarityGroup(1));
}

TEST(TaskScheduler, ATaskAloneInItsGroupGetsNoSimilarityBoost) {
  TaskScheduler s(TaskScheduler::Policy::kGradient,
                  std::vector<Info>{{1, 1e10, "Conv2D/float16/3x3"}, {1, 1e9, "Conv2D/float16/1x1"}},
                  TaskScheduler::Options{});
  Plateau(s, {100, 100}, 4);
  EXPECT_EQ(s.Next(), 0u) << "a tie, as without FLOPs: the lower index";
}

TEST(TaskScheduler, UnknownFlopsBehaveAsWeightsAlone) {
  TaskScheduler by_weight(TaskScheduler::Policy::kGradient, std::vector<double>{1, 3, 2});
  TaskScheduler by_info(TaskScheduler::Policy::kGradient,
                        std::vector<Info>{{1, 1e10, "MatMul/float16"}, {3, 0, "MatMul/float16"}, {2, 0, ""}},
                        TaskScheduler::Options{});
  double best[3] = {100, 80, 120};
  for (int step = 0; step < 40; ++step) {
    size_t a = by_weight.Next();
    ASSERT_EQ(by_info.Next(), a) << "step " << step;
    best[a] *= step % 3 == 0 ? 0.97 : 1.0;
    by_weight.Update(a, 16, best[a]);
    by_info.Update(a, 16, best[a]);
  }
}

TEST(TaskScheduler, ATaskNearItsFloorGivesWayToOneFarFromIt) {
  // Same weight and latency; task 0 is 5% above its roofline, task 1 twice its own.
  TaskScheduler s(TaskScheduler::Policy::kGradient,
                  std::vector<Info>{{1, 0, "", 95}, {1, 0, "", 50}}, TaskScheduler::Options{});
  Plateau(s, {100, 100}, 4);
  EXPECT_EQ(s.Next(), 1u);
  for (int b = 0; b < 10; ++b) s.Update(1, 16, 100);
  EXPECT_EQ(s.Next(), 1u) << "5 us left vs 50 us left: still task 1 after 11x the evaluations";
}

TEST(TaskScheduler, NoSimilarityBoostWhenTheTasksOwnFloorIsAboveTheGroupsTarget) {
  // BERT's pooler: a tiny MatMul at a fraction of the group's FLOP/s, but launch-bound.
  TaskScheduler s(TaskScheduler::Policy::kGradient,
                  std::vector<Info>{{1, 1e10, "MatMul/float16", 0}, {1, 1e8, "MatMul/float16", 90}},
                  TaskScheduler::Options{});
  Plateau(s, {100, 100}, 4);
  EXPECT_EQ(s.Next(), 0u);
}

TEST(TaskScheduler, ATaskThatStaysFarBehindItsGroupLeavesIt) {
  TaskScheduler::Options options;
  options.batch_evaluations = 16;
  TaskScheduler s(TaskScheduler::Policy::kGradient,
                  std::vector<Info>{{1, 1e10, "Conv2D/float16"}, {1, 1e9, "Conv2D/float16"}}, options);
  Plateau(s, {100, 100}, 4);
  // Task 1 never improves: chosen again and again until it has had 5 batches more than
  // task 0, then it is on its own and no longer chosen over its equal.
  int chosen_1 = 0;
  while (s.InSimilarityGroup(1)) {
    size_t i = s.Next();
    ASSERT_EQ(i, 1u);
    s.Update(i, 16, 100);
    ASSERT_LT(++chosen_1, 10);
  }
  EXPECT_EQ(chosen_1, 6);
  EXPECT_TRUE(s.InSimilarityGroup(0)) << "its group is just itself now; nothing to compare";
  EXPECT_EQ(s.Next(), 0u);
}

TEST(TaskScheduler, InfoForGroupsConvsByKernelWindowAndHasFlopsAndAFloor) {
  OpKey conv1x1;
  conv1x1.soc = "Ascend910B2";
  conv1x1.op_type = "Conv2D";
  conv1x1.inputs = {{{32, 64, 56, 56}, "float16", "ND"}, {{256, 64, 1, 1}, "float16", "ND"}};
  OpKey conv3x3 = conv1x1;
  conv3x3.inputs[1].shape = {64, 64, 3, 3};
  conv3x3.attrs["pads"] = "1";
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec* soc = catalog.Find("Ascend910B2").value();
  Info a = TaskScheduler::InfoFor(conv1x1, soc, 4);
  Info b = TaskScheduler::InfoFor(conv3x3, soc, 1);
  EXPECT_EQ(a.weight, 4);
  EXPECT_EQ(a.group, "Conv2D/float16/1x1");
  EXPECT_EQ(b.group, "Conv2D/float16/3x3");
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 32 * 56 * 56 * 256 * 64);
  EXPECT_GT(a.floor_us, 0);
  EXPECT_EQ(TaskScheduler::InfoFor(conv1x1, nullptr, 1).floor_us, 0) << "no SoC spec, no floor";
}

// A restored scheduler makes the same choices as the one it was taken from, for the same
// updates after it; one served and never updated is served again (its job was lost).
TEST(TaskScheduler, ARestoredCheckpointChoosesAsTheOriginal) {
  const std::vector<Info> tasks{{3, 1e10, "MatMul/float16"}, {1, 1e9, "MatMul/float16"}, {2, 5e9, "Conv2D/float16"}};
  TaskScheduler a(TaskScheduler::Policy::kGradient, tasks, TaskScheduler::Options{});
  double latency[3] = {100, 80, 60};
  for (int round = 0; round < 7; ++round) {
    const size_t i = a.Next();
    latency[i] *= 0.9 + 0.02 * static_cast<double>(round % 3);
    a.Update(i, 16, latency[i]);
  }
  TaskScheduler b(TaskScheduler::Policy::kGradient, tasks, TaskScheduler::Options{});
  ASSERT_TRUE(b.Restore(a.Checkpoint()).ok());
  for (int round = 0; round < 20; ++round) {
    const size_t i = a.Next();
    ASSERT_EQ(b.Next(), i) << "round " << round;
    latency[i] *= 0.95;
    a.Update(i, 16, latency[i]);
    b.Update(i, 16, latency[i]);
    EXPECT_EQ(b.spent(i), a.spent(i));
  }
  EXPECT_EQ(b.Checkpoint(), a.Checkpoint());

  TaskScheduler served(TaskScheduler::Policy::kGradient, tasks, TaskScheduler::Options{});
  EXPECT_EQ(served.Next(), 0u);
  EXPECT_EQ(served.Next(), 1u);  // served, its job lost with the process
  served.Update(0, 16, 100);
  TaskScheduler after(TaskScheduler::Policy::kGradient, tasks, TaskScheduler::Options{});
  ASSERT_TRUE(after.Restore(served.Checkpoint()).ok());
  EXPECT_EQ(after.Next(), 1u) << "warmed up again first";
  EXPECT_EQ(after.Next(), 2u);

  TaskScheduler two(TaskScheduler::Policy::kGradient, std::vector<double>{1, 1});
  EXPECT_FALSE(two.Restore(a.Checkpoint()).ok()) << "another number of tasks";
  std::string cut = a.Checkpoint();
  cut.pop_back();
  EXPECT_FALSE(b.Restore(cut).ok()) << "a checkpoint that ends early";
  EXPECT_EQ(b.Checkpoint(), a.Checkpoint()) << "a refused checkpoint leaves the scheduler as it was";
}

}  // namespace
}  // namespace tunefleet::coordinator
