// ProgressLog: what `tunefleet watch` streams. A bounded window of the latest task events
// (a task's first job sent, a better config measured, the task finished), numbered by one
// sequence over all tasks. A watcher reads the events of its submission's tasks after the
// number it last saw; one that fell out of the window, or asks from before a restart, is
// told so (`gap`) and continues from the oldest event kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>
#include <vector>

#include "coordinator/records.h"

namespace tunefleet::coordinator {

enum class ProgressKind : uint8_t { kStarted = 0, kImproved = 1, kFinished = 2 };
const char* ProgressKindName(ProgressKind k);

struct ProgressEvent {
  uint64_t seq = 0;  // set by ProgressLog::Append
  uint64_t task_id = 0;
  ProgressKind kind = ProgressKind::kStarted;
  int64_t unix_ms = 0;
  uint64_t evaluated = 0;  // the task's evaluations recorded when it happened
  double best_latency_us = 0;      // 0 until the task measured a config that ran
  double baseline_latency_us = 0;  // the default tiling's, 0 until measured
  TaskState state = TaskState::kRunning;  // the finished state for kFinished
};

struct ProgressRead {
  std::vector<ProgressEvent> events;  // of the asked tasks, oldest first
  uint64_t next = 0;  // pass as `after` to read on: the last sequence number looked at
  bool gap = false;   // events after `after` left the window (or came before a restart) unread
  bool more = false;  // stopped at `max`: events of the asked tasks follow `next`
};

class ProgressLog {
 public:
  // Sequence numbers start after `first_after` (a coordinator passes its epoch << 32,
  // so numbers of an earlier process are never taken for this one's); at most
  // `capacity` events are kept, oldest out first.
  ProgressLog(uint64_t first_after, size_t capacity);

  uint64_t Append(ProgressEvent event);
  // The last sequence number given out (first_after while empty).
  uint64_t head() const { return head_; }
  uint64_t first_after() const { return first_after_; }

  // Events of `tasks` after `after`, at most `max`. An `after` older than the window,
  // or newer than head() (another process's numbers), reads from the window's start
  // with gap set.
  ProgressRead Read(uint64_t after, const std::unordered_set<uint64_t>& tasks, size_t max) const;

 private:
  uint64_t first_after_;
  size_t capacity_;
  uint64_t head_;
  std::deque<ProgressEvent> window_;  // seq head_-size()+1 .. head_
};

}  // namespace tunefleet::coordinator
