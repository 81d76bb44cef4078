// Store: the coordinator's RocksDB database with the column families of DESIGN.md
// "Persistence": kb (knowledge base, keyed by op-key hash), tasks (task and submission
// records, strategy checkpoints, and the open index: the ids of the unfinished tasks and of
// the submissions still in memory, so a restart reads those and not every record ever
// written), results (every evaluation of unfinished tasks), meta (id counters). The one
// place RocksDB errors become Status. Every state change that must survive a crash is
// one WriteBatch written with sync=true. Not thread-safe for writers: the coordinator's
// loop thread owns it; reads (Get*) may come from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/records.h"
#include "tunefleet/common/status.h"

namespace tunefleet::coordinator {

// What is canonical in an op key (CanonicalOpKey) as of this build: knowledge-base
// entries are stored under the hash of their canonical key, so when the canonical form
// changes, entries stored before are moved to their new key, once (Store::Open). 2: a
// vector op's axes merged (`Add [b, s, h]` is `Add [b*s, h]`).
inline constexpr int kKbKeyVersion = 2;

class Store {
 public:
  // Creates the database and its column families if missing. kUnavailable when the
  // folder is locked by another process, kFailedPrecondition when it is unusable. A
  // knowledge base written before kKbKeyVersion has its entries moved to their canonical
  // keys first (the faster entry kept where two meet), in one synced batch: a lookup
  // would otherwise miss them.
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, bool sync_writes = true);
  // A read-only view of an existing database as it is at this moment, also while another
  // process (a coordinator, a `tune`) has it open: RocksDB's read-only instance takes no
  // lock and writes nothing. For lookups only; every write fails. kNotFound when dir holds
  // no database. A knowledge base written before kKbKeyVersion is read as Open would
  // leave it (its moves are kept in memory, not written).
  static Result<std::unique_ptr<Store>> OpenReadOnly(const std::string& dir);
  // Whether dir is missing, empty or holds a database: a folder Open may write into
  // without scattering a database among other files.
  static bool IsEmptyOrDatabase(const std::string& dir);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Result<std::optional<KbEntry>> GetKb(const OpKeyHash& hash) const;
  uint64_t KbSizeEstimate() const;
  // RocksDB's own figures over every column family, for the operator's dashboard.
  struct DbStats {
    uint64_t sst_bytes = 0;                 // rocksdb.total-sst-files-size
    uint64_t memtable_bytes = 0;            // rocksdb.cur-size-all-mem-tables
    uint64_t pending_compaction_bytes = 0;  // rocksdb.estimate-pending-compaction-bytes
  };
  DbStats Stats() const;
  // Calls fn for every knowledge-base entry (a full scan: for nearest-shape queries).
  Status ForEachKb(const std::function<void(const KbEntry&)>& fn) const;
  // Up to `limit` entries in key order after the RocksDB key `after` (empty: from the
  // first), and the key of the last one: one page of `cache export`. Paging goes by the
  // stored key, never by a hash recomputed from a decoded entry, so it always advances.
  struct KbEntries {
    std::vector<KbEntry> entries;
    std::string last_key;  // `after` for the next page; empty when entries is
  };
  Result<KbEntries> KbPage(const std::string& after, size_t limit) const;
  // What MergeKb did with one entry.
  enum class Merge : uint8_t { kAdded, kReplaced, kKept };
  // Writes each entry whose key has no entry yet or a slower one (the rule FinishTask
  // follows), in one synced batch; a key twice in `entries` keeps the faster of the two.
  // One outcome per entry, in order. `dry_run` says what would happen, writing nothing.
  Result<std::vector<Merge>> MergeKb(const std::vector<KbEntry>& entries, bool dry_run = false);

  // Allocates the next id of a named counter ("submission", "job-epoch"), durably.
  Result<uint64_t> NextId(const std::string& counter);
  // The id NextId(counter) would allocate, without allocating it.
  Result<uint64_t> PeekId(const std::string& counter) const;

  // A new submission with its tasks, in one synced batch that also moves the "submission"
  // and "task" counters past their ids (so a 10,000-op submission costs one fsync, not
  // 10,000, and a submission refused before this write uses up no id).
  Status PutSubmission(const SubmissionRecord& sub, const std::vector<TaskRecord>& new_tasks);
  Status PutTask(const TaskRecord& task);
  // Appends results of a running task and what it planned before them, in one batch (so
  // a recorded result's plan is never lost); a checkpoint, when given, replaces the last
  // one and deletes the plans it covers (those stored before; `plans` come after it).
  Status PutResults(uint64_t task_id, const std::vector<StoredResult>& results,
                    const StrategyCheckpointRecord* checkpoint = nullptr,
                    const std::vector<PlanRecord>& plans = {});
  // The task's last strategy checkpoint, or nullopt when it has none.
  Result<std::optional<StrategyCheckpointRecord>> LoadCheckpoint(uint64_t task_id) const;
  // What the task planned since its last checkpoint, in order.
  Result<std::vector<PlanRecord>> LoadPlans(uint64_t task_id) const;
  // A shared-budget submission's TaskScheduler::Checkpoint(), written after each batch it
  // learns from (not synced: one lost is the one before, and the results catch it up).
  Status PutSchedule(uint64_t submission_id, const std::string& state);
  Result<std::optional<std::string>> LoadSchedule(uint64_t submission_id) const;
  Status DeleteSchedule(uint64_t submission_id);
  // Ends a task: its final record, the knowledge-base entry when it improves on the
  // stored one (kept only if better), and deletion of its results, checkpoint and plans,
  // in one synced batch.
  // Returns whether the kb entry was written. `sync` false leaves the fsync to the next
  // synced write (a cancel of 100,000 tasks paid 0.8 ms each); only where losing the
  // batch in a crash is repaired on resume (the tasks of a cancelled submission).
  Result<bool> FinishTask(const TaskRecord& task, const std::optional<KbEntry>& entry, bool sync = true);

  // One task's record (a finished one the coordinator no longer keeps in memory);
  // nullopt when there is none.
  Result<std::optional<TaskRecord>> GetTask(uint64_t task_id) const;
  Result<std::vector<TaskRecord>> LoadTasks() const;
  // Calls fn with every task record in id order, one at a time.
  Status ForEachTask(const std::function<void(TaskRecord)>& fn) const;
  Result<std::vector<SubmissionRecord>> LoadSubmissions() const;
  // The open index, what a restart resumes. A task is open from the write that stores it
  // unfinished to the one that stores it finished (PutSubmission, PutTask, FinishTask);
  // a submission from PutSubmission to CloseSubmissions. Both in id order.
  Status ForEachOpenTask(const std::function<void(TaskRecord)>& fn) const;
  Result<std::vector<SubmissionRecord>> LoadOpenSubmissions() const;
  // Takes submissions out of the open index (the coordinator let them go: every task of
  // theirs has finished). Not synced: one lost in a crash is open again, and the restart
  // that loads it finds its tasks finished and closes it again.
  Status CloseSubmissions(const std::vector<uint64_t>& submission_ids);
  // One submission's record (one the coordinator no longer keeps in memory); nullopt when
  // there is none.
  Result<std::optional<SubmissionRecord>> GetSubmission(uint64_t submission_id) const;
  Result<std::vector<StoredResult>> LoadResults(uint64_t task_id) const;

  // The layout, for tests that open the folder past Store: the column families in the
  // order Store opens them, and the key of a task's record in "tasks".
  static std::vector<std::string> ColumnFamilyNames();
  static std::string TaskRecordKey(uint64_t task_id);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  Status RekeyKb();
  Status BuildOpenIndex();
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunefleet::coordinator
