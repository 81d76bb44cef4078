#include "coordinator/progress_log.h"

#include <algorithm>

namespace tunefleet::coordinator {

const char* ProgressKindName(ProgressKind k) {
  switch (k) {
    case ProgressKind::kStarted: return "started";
    case ProgressKind::kImproved: return "improved";
    case ProgressKind::kFinished: return "finished";
  }
  return "unknown";
}

ProgressLog::ProgressLog(uint64_t first_after, size_t capacity)
    : first_after_(first_after), capacity_(std::max<size_t>(capacity, 1)), head_(first_after) {}

uint64_t ProgressLog::Append(ProgressEvent event) {
  event.seq = ++head_;
  if (window_.size() == capacity_) window_.pop_front();
  window_.push_back(event);
  return head_;
}

ProgressRead ProgressLog::Read(uint64_t after, const std::unordered_set<uint64_t>& tasks, size_t max) const {
  ProgressRead out;
  // The oldest kept event is head_ - size + 1; reading on from `oldest - 1` loses nothing.
  const uint64_t before_window = head_ - window_.size();
  if (after > head_ || after < before_window) {
    // Only a reader that may have missed events is told: one that asks from the start
    // (0) missed none unless the window dropped some; numbers above head() or below this
    // process's first are another process's, whose later events are gone.
    out.gap = after > head_ || (after != 0 && after < first_after_) || before_window > std::max(after, first_after_);
    after = before_window;
  }
  out.next = after;
  for (size_t i = static_cast<size_t>(after - before_window); i < window_.size(); ++i) {
    const ProgressEvent& e = window_[i];
    if (tasks.contains(e.task_id)) {
      if (out.events.size() == max) {
        out.more = true;
        break;
      }
      out.events.push_back(e);
    }
    out.next = e.seq;
  }
  return out;
}

}  // namespace tunefleet::coordinator
