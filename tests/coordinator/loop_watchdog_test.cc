// LoopWatchdog: fires once when the loop's last turn is older than the limit, never
// before; its gauge is computed when scraped; its thread checks by itself.
#include "coordinator/loop_watchdog.h"

#include <atomic>
#include <chrono>
#include <future>

#include <gtest/gtest.h>

namespace tunefleet::coordinator {
namespace {

using namespace std::chrono_literals;

TEST(LoopWatchdog, FiresOnceWhenTheLastTurnIsOlderThanTheLimitAndNeverBefore) {
  FakeClock clock;
  Clock::TimePoint last_turn = clock.Now();
  int fired = 0;
  Clock::Duration reported{};
  LoopWatchdog watchdog(clock, [&] { return last_turn; }, 500ms, [&](Clock::Duration since) {
    ++fired;
    reported = since;
  });
  clock.Advance(500ms);
  EXPECT_FALSE(watchdog.Check()) << "exactly the limit is not a stall";
  last_turn = clock.Now();  // the loop turned
  clock.Advance(400ms);
  EXPECT_FALSE(watchdog.Check());
  EXPECT_DOUBLE_EQ(watchdog.SecondsSinceLastTurn(), 0.4);
  clock.Advance(101ms);
  EXPECT_TRUE(watchdog.Check());
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(reported, 501ms);
  clock.Advance(10s);
  EXPECT_FALSE(watchdog.Check()) << "on_stall runs once";
  EXPECT_EQ(fired, 1);
}

TEST(LoopWatchdog, ItsGaugeIsTheAgeOfTheLastTurnWhenScraped) {
  FakeClock clock;
  const Clock::TimePoint last_turn = clock.Now();
  LoopWatchdog watchdog(clock, [&] { return last_turn; }, 1s, [](Clock::Duration) {});
  clock.Advance(250ms);
  auto families = watchdog.Collect();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "tunefleet_loop_seconds_since_turn");
  ASSERT_EQ(families[0].metric.size(), 1u);
  EXPECT_DOUBLE_EQ(families[0].metric[0].gauge.value, 0.25);
  clock.Advance(250ms);
  EXPECT_DOUBLE_EQ(watchdog.Collect()[0].metric[0].gauge.value, 0.5) << "computed at scrape time";
}

TEST(LoopWatchdog, ItsThreadFiresForALoopThatStoppedAndNotForOneThatTurns) {
  SteadyClock clock;
  std::atomic<Clock::Duration::rep> turned{clock.Now().time_since_epoch().count()};
  std::promise<Clock::Duration> stalled;
  std::atomic<int> fired{0};
  {
    LoopWatchdog watchdog(clock, [&] { return Clock::TimePoint(Clock::Duration(turned.load())); }, 500ms,
                          [&](Clock::Duration since) {
                            if (fired++ == 0) stalled.set_value(since);
                          });
    watchdog.Start();
    // A loop that turns every 10 ms for 1 s: twice the limit, no stall.
    const auto until = std::chrono::steady_clock::now() + 1s;
    while (std::chrono::steady_clock::now() < until) {
      turned.store(clock.Now().time_since_epoch().count());
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(fired.load(), 0) << "a turning loop was reported stalled";
    // Then it stops turning.
    auto future = stalled.get_future();
    ASSERT_EQ(future.wait_for(10s), std::future_status::ready) << "the watchdog's thread never fired";
    EXPECT_GT(future.get(), 500ms);
  }  // the destructor stops and joins the thread
  EXPECT_EQ(fired.load(), 1);
}

}  // namespace
}  // namespace tunefleet::coordinator
