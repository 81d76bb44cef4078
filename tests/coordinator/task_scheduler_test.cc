#include "coordinator/task_scheduler.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tunefleet::coordinator
