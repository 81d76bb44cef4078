// Clock: the injected source of time. Production code takes a Clock& from main();
// tests use FakeClock to drive heartbeats, leases and budgets deterministically.
// SteadyClock is thread-safe; FakeClock must be advanced by the thread that reads it
// (or externally synchronised).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tunefleet {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;
  virtual ~Clock() = default;
  // Monotonic time for deadlines and intervals.
  virtual TimePoint Now() const = 0;
  // Wall-clock milliseconds since the Unix epoch, for stored timestamps only.
  virtual int64_t UnixMillis() const = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  int64_t UnixMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

class FakeClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  int64_t UnixMillis() const override { return 1'700'000'000'000 + now_ns_.load() / 1'000'000; }
  void Advance(Duration d) { now_ns_ += d.count(); }

 private:
  std::atomic<int64_t> now_ns_{0};
};

}  // namespace tunefleet
