#include "tunefleet/common/signals.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace tunefleet {

namespace {
sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // our own wake-up on destruction
  return set;
}
}  // namespace

void SleepUnless(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  constexpr std::chrono::milliseconds kStep(50);
  for (auto slept = std::chrono::milliseconds(0); slept < d && !stop.load(); slept += kStep) {
    std::this_thread::sleep_for(std::min(kStep, d - slept));
  }
}

void BlockTerminationSignals() {
  sigset_t set = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

TerminationWatcher::TerminationWatcher(std::function<void()> on_signal) {
  BlockTerminationSignals();
  sigset_t set = TerminationSet();
  thread_ = std::thread([set, on_signal = std::move(on_signal)] {
    int sig = 0;
    if (sigwait(&set, &sig) == 0 && sig != SIGUSR1) on_signal();
  });
}

TerminationWatcher::~TerminationWatcher() {
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

}  // namespace tunefleet
