// TerminationWatcher: turns SIGINT/SIGTERM into a callback on a dedicated thread
// (sigwait), so no signal handler touches program state and no global is needed.
// Call BlockTerminationSignals() first thing in main(), before any library starts a
// thread (ZeroMQ, RocksDB, civetweb): threads inherit the mask, so none of them takes
// the default action and kills the process before a clean shutdown.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace tunefleet {

void BlockTerminationSignals();

// Sleeps `d`, in 50 ms steps, returning early once `stop` is set (by a
// TerminationWatcher's callback): a wait between polls that Ctrl-C ends at once.
void SleepUnless(const std::atomic<bool>& stop, std::chrono::milliseconds d);

class TerminationWatcher {
 public:
  explicit TerminationWatcher(std::function<void()> on_signal);
  ~TerminationWatcher();  // stops watching (wakes and joins the thread)
  TerminationWatcher(const TerminationWatcher&) = delete;
  TerminationWatcher& operator=(const TerminationWatcher&) = delete;

 private:
  std::thread thread_;
};

}  // namespace tunefleet
