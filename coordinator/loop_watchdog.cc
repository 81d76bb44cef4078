#include "coordinator/loop_watchdog.h"

#include <chrono>
#include <utility>

namespace tunefleet::coordinator {

LoopWatchdog::LoopWatchdog(const Clock& clock, LastTurn last_turn, Clock::Duration limit, OnStall on_stall)
    : clock_(clock), last_turn_(std::move(last_turn)), limit_(limit), on_stall_(std::move(on_stall)) {}

LoopWatchdog::~LoopWatchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LoopWatchdog::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, limit_ / 8, [this] { return stop_; })) {
      lock.unlock();
      Check();
      lock.lock();
    }
  });
}

bool LoopWatchdog::Check() {
  const Clock::Duration since = clock_.Now() - last_turn_();
  if (since <= limit_ || fired_.exchange(true)) return false;
  on_stall_(since);
  return true;
}

double LoopWatchdog::SecondsSinceLastTurn() const {
  return std::chrono::duration<double>(clock_.Now() - last_turn_()).count();
}

std::vector<prometheus::MetricFamily> LoopWatchdog::Collect() const {
  prometheus::MetricFamily family;
  family.name = "tunefleet_loop_seconds_since_turn";
  family.help = "seconds since the coordinator's scheduling loop last turned (it turns at least every 20 ms when well)";
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = SecondsSinceLastTurn();
  family.metric.push_back(metric);
  return {family};
}

}  // namespace tunefleet::coordinator
