// Plain values the coordinator persists: knowledge-base entries (KbEntry, shared with
// the CLI in tunefleet/common/kb_entry.h), task specs and
// outcomes, submissions and per-config results. Store (store.h) encodes them as the
// Cap'n Proto records of schemas/kb.capnp; nothing else knows the encoding.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"

namespace tunefleet::coordinator {

enum class TaskState : uint8_t { kQueued = 0, kRunning = 1, kDone = 2, kFailed = 3, kCancelled = 4 };
const char* TaskStateName(TaskState s);
inline bool IsFinished(TaskState s) { return s == TaskState::kDone || s == TaskState::kFailed || s == TaskState::kCancelled; }

using tunefleet::KbEntry;  // tunefleet/common/kb_entry.h

struct TaskRecord {
  uint64_t task_id = 0;
  uint64_t submission_id = 0;
  OpKey key;
  std::string strategy;
  uint64_t budget = 0;  // 0 = the whole valid space
  uint64_t seed = 0;
  uint32_t job_size = 0;
  bool force = false;
  int32_t priority = 0;
  int64_t created_ms = 0;
  double budget_seconds = 0;  // 0: no time limit
  uint64_t patience = 0;      // 0: no limit on evaluations without improvement
  int64_t started_ms = 0;     // first dispatch; 0 = not yet
  TaskState state = TaskState::kQueued;
  // Outcome (final once the task has finished).
  uint64_t evaluated = 0;
  uint64_t failed_configs = 0;
  // Why configs failed: the first kMaxFailureReasons distinct messages in the order met
  // (on one line, cut at kMaxFailureReasonChars), each with its count; later ones are
  // counted under kOtherFailureReasons, the last entry.
  std::vector<std::pair<std::string, uint64_t>> failure_reasons;
  bool has_best = false;
  ConfigIndex best_index = 0;
  double best_latency_us = 0;
  double baseline_latency_us = 0;
  bool from_cache = false;
  // The best config by name, written when the task finishes (its search space is not
  // kept): what `status` shows of a task no longer in memory without rebuilding the
  // space. Empty in records written before it was kept.
  std::vector<std::pair<std::string, int64_t>> best_config;
};

inline constexpr size_t kMaxFailureReasons = 8;       // distinct ones, beside kOtherFailureReasons
inline constexpr size_t kMaxFailureReasonChars = 300;  // longer ones are cut, ending "..."
inline constexpr const char* kOtherFailureReasons = "(other reasons)";
// Counts one failed config under its reason (TaskRecord::failure_reasons).
void CountFailureReason(TaskRecord& t, const std::string& reason);

struct SubmissionRecord {
  uint64_t submission_id = 0;
  std::vector<uint64_t> task_ids;
  int64_t created_ms = 0;
  // A shared budget split across the tasks this submission created (0: none).
  uint64_t total_budget = 0;
  std::string scheduler;  // "gradient" or "round-robin"
  std::vector<uint64_t> scheduled_task_ids;
  std::vector<double> scheduled_weights;
  std::vector<std::string> names;  // per submitted op, as named by the submitter; empty = none
  bool cancelled = false;          // by `tunefleet cancel`: waits on none of its tasks any more
  int32_t priority = 0;            // dispatch: higher first; its tasks (shared ones too) served in its turns
};

struct StoredResult {
  ConfigIndex index = 0;
  bool ok = false;
  double latency_us = 0;
  std::string error;
  uint64_t job_id = 0;
  uint64_t seq = 0;  // order of recording within the task
};

// A running task's strategy state (Strategy::Checkpoint) and what it has not seen:
// results with seq >= told, and the configs that were out when it was taken.
struct StrategyCheckpointRecord {
  std::string state;
  uint64_t told = 0;
  std::vector<ConfigIndex> outstanding;
};

// One thing a running task planned since its last checkpoint: a Strategy::Ask and its
// answer, or configs the coordinator planned itself (the baseline, warm-start seeds).
// Replayed in order at a restart, between the results recorded before each, so the
// restored strategy sees the same calls as the uninterrupted one.
struct PlanRecord {
  uint64_t number = 0;       // order within the task
  bool asked = false;
  uint64_t told_before = 0;  // results recorded (seq) when it was planned
  uint64_t max_configs = 0;  // the Ask's limit
  std::vector<ConfigIndex> configs;
};

}  // namespace tunefleet::coordinator
