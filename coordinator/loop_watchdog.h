// LoopWatchdog: whether the coordinator's scheduling loop still turns. The loop stamps
// every turn (Coordinator::LastTurn); the watchdog's thread compares that stamp with the
// clock and, once it is older than the limit, calls on_stall once: tunefleet-coordinator
// then exits, so Kubernetes (or compose) restarts a process whose HTTP server still
// answers /healthz but whose loop serves nobody. Results are in RocksDB before they are
// acknowledged, so the restart loses nothing accepted.
//
// SecondsSinceLastTurn is also a collectable gauge for /healthz and /metrics
// (tunefleet_loop_seconds_since_turn), computed when scraped: a gauge the loop set
// itself would freeze with the loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "tunefleet/common/clock.h"

namespace tunefleet::coordinator {

class LoopWatchdog final : public prometheus::Collectable {
 public:
  using LastTurn = std::function<Clock::TimePoint()>;
  using OnStall = std::function<void(Clock::Duration since_turn)>;

  // Borrows clock; last_turn must be callable from any thread. With a limit of 0 (off)
  // only its gauge is used: Start() needs limit > 0.
  LoopWatchdog(const Clock& clock, LastTurn last_turn, Clock::Duration limit, OnStall on_stall);
  ~LoopWatchdog() override;  // stops the thread
  LoopWatchdog(const LoopWatchdog&) = delete;
  LoopWatchdog& operator=(const LoopWatchdog&) = delete;

  // Checks every limit/8 from a thread of its own until destroyed.
  void Start();
  // One check: calls on_stall (once in the watchdog's life) when the last turn is older
  // than the limit. True when it fired now. Tests call it with a FakeClock.
  bool Check();
  double SecondsSinceLastTurn() const;

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Clock& clock_;
  LastTurn last_turn_;
  Clock::Duration limit_;
  OnStall on_stall_;
  std::atomic<bool> fired_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tunefleet::coordinator
