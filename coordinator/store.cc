#include "coordinator/store.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "tunefleet/common/tuning_problem.h"
#include "tunefleet/common/wire.h"
#include "tunefleet/schemas/kb.capnp.h"

namespace tunefleet::coordinator {

void CountFailureReason(TaskRecord& t, const std::string& raw) {
  // One line of at most kMaxFailureReasonChars: it is shown in a column of `status`.
  std::string reason = raw.size() > kMaxFailureReasonChars ? raw.substr(0, kMaxFailureReasonChars - 3) + "..." : raw;
  std::replace_if(reason.begin(), reason.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  for (auto& [known, count] : t.failure_reasons) {
    if (known == reason) {
      ++count;
      return;
    }
  }
  if (t.failure_reasons.size() < kMaxFailureReasons) {
    t.failure_reasons.emplace_back(reason, 1);
    return;
  }
  if (t.failure_reasons.size() == kMaxFailureReasons) t.failure_reasons.emplace_back(kOtherFailureReasons, 0);
  ++t.failure_reasons.back().second;
}

const char* TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kQueued: return "queued";
    case TaskState::kRunning: return "running";
    case TaskState::kDone: return "done";
    case TaskState::kFailed: return "failed";
    case TaskState::kCancelled: return "cancelled";
  }
  return "unknown";
}

namespace {

constexpr const char* kCfKb = "kb";
constexpr const char* kCfTasks = "tasks";
constexpr const char* kCfResults = "results";
constexpr const char* kCfMeta = "meta";

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Unavailable(what + ": the data folder is in use by another process (" + s.ToString() + ")");
  }
  if (s.IsBusy() || s.IsTryAgain() || s.IsTimedOut()) return Unavailable(what + ": " + s.ToString());
  if (s.IsCorruption()) return FailedPrecondition(what + ": database corrupt: " + s.ToString());
  if (s.IsNotFound()) return NotFound(what + ": " + s.ToString());
  return FailedPrecondition(what + ": " + s.ToString());
}

void PutBe64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetBe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string TaskKey(uint64_t id) {
  std::string k = "t/";
  PutBe64(k, id);
  return k;
}
std::string SubmissionKey(uint64_t id) {
  std::string k = "s/";
  PutBe64(k, id);
  return k;
}
std::string CheckpointKey(uint64_t id) {
  std::string k = "c/";
  PutBe64(k, id);
  return k;
}
std::string ScheduleKey(uint64_t submission) {
  std::string k = "g/";
  PutBe64(k, submission);
  return k;
}
std::string PlanKey(uint64_t task, uint64_t number) {
  std::string k = "p/";
  PutBe64(k, task);
  PutBe64(k, number);
  return k;
}
// The open index (Store::ForEachOpenTask), beside the records in the tasks family: an
// empty value under the record's own key behind "o/", so "o/t/" + id for a task, "o/s/" +
// id for a submission.
constexpr const char* kOpenPrefix = "o/";
constexpr const char* kOpenTasks = "o/t/";
constexpr const char* kOpenSubmissions = "o/s/";
std::string OpenKey(const std::string& record_key) { return kOpenPrefix + record_key; }
uint64_t IdOf(const rocksdb::Slice& key) { return GetBe64(key.data() + key.size() - 8); }

std::string ResultKey(uint64_t task, ConfigIndex index) {
  std::string k;
  PutBe64(k, task);
  PutBe64(k, index);
  return k;
}

std::string ToBytes(capnp::MessageBuilder& b) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(b);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

// Stored values are our own, but are decoded with the same bounds and throw guard as
// network input: a corrupt record yields an error, never a crash.
template <typename T, typename Fn>
Status FromBytes(const std::string& bytes, Fn&& fn) {
  if (bytes.size() % sizeof(capnp::word) != 0) return FailedPrecondition("stored record is truncated");
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  return wire::Guard("stored record", [&]() -> Status {
    capnp::FlatArrayMessageReader reader(words.asPtr());
    return fn(reader.getRoot<T>());
  });
}

std::string EncodeKb(const KbEntry& e) {
  capnp::MallocMessageBuilder b;
  wire::FillKbRecord(b.initRoot<schema::KbRecord>(), e);
  return ToBytes(b);
}

Result<KbEntry> DecodeKb(const std::string& bytes) {
  KbEntry e;
  Status s = FromBytes<schema::KbRecord>(bytes, [&](schema::KbRecord::Reader r) -> Status {
    TF_ASSIGN_OR_RETURN(e, wire::ReadKbRecord(r));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return e;
}

std::string EncodeTask(const TaskRecord& t) {
  capnp::MallocMessageBuilder b;
  auto r = b.initRoot<schema::TaskRecord>();
  r.setTaskId(t.task_id);
  r.setSubmissionId(t.submission_id);
  wire::FillOpKey(r.initOpKey(), t.key);
  r.setStrategy(t.strategy);
  r.setBudget(t.budget);
  r.setSeed(t.seed);
  r.setState(static_cast<uint8_t>(t.state));
  r.setJobSize(t.job_size);
  r.setForce(t.force);
  r.setCreatedUnixMs(t.created_ms);
  r.setEvaluated(t.evaluated);
  r.setFailedConfigs(t.failed_configs);
  r.setHasBest(t.has_best);
  r.setBestConfigIndex(t.best_index);
  r.setBestLatencyUs(t.best_latency_us);
  r.setBaselineLatencyUs(t.baseline_latency_us);
  r.setFromCache(t.from_cache);
  r.setPriority(t.priority);
  r.setBudgetSeconds(t.budget_seconds);
  r.setPatience(t.patience);
  r.setStartedUnixMs(t.started_ms);
  wire::FillFailureReasons(r.initFailureReasons(static_cast<unsigned>(t.failure_reasons.size())), t.failure_reasons);
  auto best = r.initBestConfig(static_cast<unsigned>(t.best_config.size()));
  for (unsigned i = 0; i < t.best_config.size(); ++i) {
    best[i].setName(t.best_config[i].first);
    best[i].setValue(t.best_config[i].second);
  }
  return ToBytes(b);
}

Result<TaskRecord> DecodeTask(const std::string& bytes) {
  TaskRecord t;
  Status s = FromBytes<schema::TaskRecord>(bytes, [&](schema::TaskRecord::Reader r) -> Status {
    t.task_id = r.getTaskId();
    t.submission_id = r.getSubmissionId();
    TF_ASSIGN_OR_RETURN(t.key, wire::ReadOpKey(r.getOpKey()));
    t.strategy = r.getStrategy();
    t.budget = r.getBudget();
    t.seed = r.getSeed();
    if (r.getState() > static_cast<uint8_t>(TaskState::kCancelled)) {
      return FailedPrecondition("stored task has an unknown state");
    }
    t.state = static_cast<TaskState>(r.getState());
    t.job_size = r.getJobSize();
    t.force = r.getForce();
    t.created_ms = r.getCreatedUnixMs();
    t.evaluated = r.getEvaluated();
    t.failed_configs = r.getFailedConfigs();
    t.has_best = r.getHasBest();
    t.best_index = r.getBestConfigIndex();
    t.best_latency_us = r.getBestLatencyUs();
    t.baseline_latency_us = r.getBaselineLatencyUs();
    t.from_cache = r.getFromCache();
    t.priority = r.getPriority();
    t.budget_seconds = r.getBudgetSeconds();
    t.patience = r.getPatience();
    t.started_ms = r.getStartedUnixMs();
    t.failure_reasons = wire::ReadFailureReasons(r.getFailureReasons());
    for (auto p : r.getBestConfig()) t.best_config.emplace_back(p.getName(), p.getValue());
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return t;
}

std::string EncodeSubmission(const SubmissionRecord& sub) {
  capnp::MallocMessageBuilder b;
  auto r = b.initRoot<schema::SubmissionRecord>();
  r.setSubmissionId(sub.submission_id);
  auto ids = r.initTaskIds(static_cast<unsigned>(sub.task_ids.size()));
  for (unsigned i = 0; i < sub.task_ids.size(); ++i) ids.set(i, sub.task_ids[i]);
  r.setCreatedUnixMs(sub.created_ms);
  r.setTotalBudget(sub.total_budget);
  r.setScheduler(sub.scheduler);
  auto sched = r.initScheduledTaskIds(static_cast<unsigned>(sub.scheduled_task_ids.size()));
  for (unsigned i = 0; i < sub.scheduled_task_ids.size(); ++i) sched.set(i, sub.scheduled_task_ids[i]);
  auto weights = r.initScheduledWeights(static_cast<unsigned>(sub.scheduled_weights.size()));
  for (unsigned i = 0; i < sub.scheduled_weights.size(); ++i) weights.set(i, sub.scheduled_weights[i]);
  auto names = r.initNames(static_cast<unsigned>(sub.names.size()));
  for (unsigned i = 0; i < sub.names.size(); ++i) names.set(i, sub.names[i]);
  r.setCancelled(sub.cancelled);
  r.setPriority(sub.priority);
  return ToBytes(b);
}

std::string EncodeResult(const StoredResult& res) {
  capnp::MallocMessageBuilder b;
  auto r = b.initRoot<schema::ResultRecord>();
  r.setOk(res.ok);
  r.setLatencyUs(res.latency_us);
  r.setError(res.error);
  r.setJobId(res.job_id);
  r.setSeq(res.seq);
  return ToBytes(b);
}

}  // namespace

struct Store::Impl {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // owned; destroyed before db
  rocksdb::ColumnFamilyHandle* kb = nullptr;
  rocksdb::ColumnFamilyHandle* tasks = nullptr;
  rocksdb::ColumnFamilyHandle* results = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::WriteOptions synced;
  rocksdb::WriteOptions results_write;
  // Knowledge-base entries stored under an older canonical form (kKbKeyVersion), by the
  // hash of their key now: `to` holds each entry that wins its new key (the fastest of
  // those moving there, if faster than one stored there already), `from` the stored keys
  // they leave. A writable open writes the moves; a read-only one, which may not, reads
  // the knowledge base through them (kb_moves set), so a lookup finds what a writable
  // open would.
  struct KbMoves {
    std::map<std::string, KbEntry> to;
    std::set<std::string> from;
  };
  std::optional<KbMoves> kb_moves;

  // Takes an opened database whose handles follow ColumnFamilies()' order.
  void Adopt(rocksdb::DB* raw) {
    db.reset(raw);
    kb = handles[1];
    tasks = handles[2];
    results = handles[3];
    meta = handles[4];
  }

  ~Impl() {
    for (auto* h : handles) {
      if (db) (void)db->DestroyColumnFamilyHandle(h);
    }
  }

  // The record stored at key, decoded; nullopt when there is none.
  template <typename Record>
  Result<std::optional<Record>> Read(rocksdb::ColumnFamilyHandle* cf, const std::string& key, const std::string& what,
                                     Result<Record> (*decode)(const std::string&)) const {
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf, key, &value);
    if (s.IsNotFound()) return std::optional<Record>();
    TF_RETURN_IF_ERROR(FromRocks(s, what));
    Result<Record> r = decode(value);
    if (!r.ok()) return r.status().WithContext(what);  // which record: "read task 7: ..."
    return std::optional<Record>(std::move(r).value());
  }

  Status Write(rocksdb::WriteBatch& batch, const char* what, bool sync = true) {
    return FromRocks(db->Write(sync ? synced : results_write, &batch), what);
  }

  static constexpr const char* kKbVersionKey = "kb-key-version";
  // Present once the open index holds every unfinished task (Store::BuildOpenIndex).
  static constexpr const char* kOpenIndexKey = "open-index";

  // A task record and its place in the open index, in one batch.
  void PutTask(rocksdb::WriteBatch& batch, const TaskRecord& task) {
    const std::string key = TaskKey(task.task_id);
    batch.Put(tasks, key, EncodeTask(task));
    if (IsFinished(task.state)) {
      batch.Delete(tasks, OpenKey(key));
    } else {
      batch.Put(tasks, OpenKey(key), "");
    }
  }

  // Calls fn with the id of every key under prefix, in order.
  Status ForEachId(const char* prefix, const std::function<Status(uint64_t)>& fn) const {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), tasks));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      if (it->key().size() != std::strlen(prefix) + 8) return FailedPrecondition("stored index key has the wrong size");
      TF_RETURN_IF_ERROR(fn(IdOf(it->key())));
    }
    return FromRocks(it->status(), std::string("scan ") + prefix);
  }

  // Whether the knowledge base's keys are in this build's canonical form.
  Result<bool> KbKeysCurrent() const {
    std::string stored;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kKbVersionKey, &stored);
    if (s.IsNotFound()) return false;
    TF_RETURN_IF_ERROR(FromRocks(s, "read the knowledge base's key version"));
    return stored == std::to_string(kKbKeyVersion);
  }

  // Which entries move where: one scan of the knowledge base. An entry that does not
  // decode, or whose key no longer parses, stays where it is (`cache export` reports it).
  Result<KbMoves> PlanKbMoves() const {
    KbMoves moves;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), kb));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      Result<KbEntry> e = DecodeKb(it->value().ToString());
      if (!e.ok()) continue;
      Result<OpKey> canonical = CanonicalOpKey(e->key);
      if (!canonical.ok()) continue;
      std::string key = HashOpKey(*canonical).Bytes();
      if (it->key() == rocksdb::Slice(key)) continue;
      e->key = std::move(canonical).value();
      moves.from.insert(it->key().ToString());
      auto [at, added] = moves.to.try_emplace(std::move(key), *e);
      if (!added && e->best_latency_us < at->second.best_latency_us) at->second = std::move(e).value();
    }
    TF_RETURN_IF_ERROR(FromRocks(it->status(), "scan knowledge base"));
    for (auto at = moves.to.begin(); at != moves.to.end();) {
      TF_ASSIGN_OR_RETURN(std::optional<KbEntry> stored, Read<KbEntry>(kb, at->first, "read knowledge base", DecodeKb));
      const bool stays = stored && !moves.from.contains(at->first) &&
                         !(at->second.best_latency_us < stored->best_latency_us);
      at = stays ? moves.to.erase(at) : std::next(at);
    }
    return moves;
  }

  // The knowledge base in key order after `after` (empty: from the first), as a writable
  // open leaves it: through kb_moves when set. fn returns false to stop.
  Status ScanKb(const std::string& after, const std::function<Result<bool>(const std::string&, KbEntry)>& fn) const {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), kb));
    after.empty() ? it->SeekToFirst() : it->Seek(after);
    if (it->Valid() && !after.empty() && it->key() == rocksdb::Slice(after)) it->Next();
    static const std::map<std::string, KbEntry> kNone;
    const auto& moved = kb_moves ? kb_moves->to : kNone;
    auto next_moved = after.empty() ? moved.begin() : moved.upper_bound(after);
    while (true) {
      // Stored entries that moved away, or that a moved one replaces, are not there.
      while (it->Valid() && kb_moves &&
             (kb_moves->from.contains(it->key().ToString()) || moved.contains(it->key().ToString()))) {
        it->Next();
      }
      const bool stored_first =
          it->Valid() && (next_moved == moved.end() || it->key().compare(rocksdb::Slice(next_moved->first)) < 0);
      if (!stored_first && next_moved == moved.end()) break;
      Result<bool> go = true;
      if (stored_first) {
        TF_ASSIGN_OR_RETURN(KbEntry e, DecodeKb(it->value().ToString()));
        go = fn(it->key().ToString(), std::move(e));
        it->Next();
      } else {
        go = fn(next_moved->first, next_moved->second);
        ++next_moved;
      }
      TF_RETURN_IF_ERROR(go.status());
      if (!*go) break;
    }
    return FromRocks(it->status(), "scan knowledge base");
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

std::vector<std::string> Store::ColumnFamilyNames() {
  return {rocksdb::kDefaultColumnFamilyName, kCfKb, kCfTasks, kCfResults, kCfMeta};
}
std::string Store::TaskRecordKey(uint64_t task_id) { return TaskKey(task_id); }

namespace {
std::vector<rocksdb::ColumnFamilyDescriptor> ColumnFamilies() {
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : Store::ColumnFamilyNames()) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  return families;
}
}  // namespace

Result<std::unique_ptr<Store>> Store::OpenReadOnly(const std::string& dir) {
  if (!std::filesystem::exists(std::filesystem::path(dir) / "CURRENT")) {
    return NotFound("no knowledge base in " + dir + " (it is the folder `tunefleet tune --data-dir` wrote)");
  }
  auto impl = std::make_unique<Impl>();
  rocksdb::DB* raw = nullptr;
  TF_RETURN_IF_ERROR(FromRocks(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), dir, ColumnFamilies(),
                                                            &impl->handles, &raw),
                               "open database at '" + dir + "' read-only"));
  impl->Adopt(raw);
  TF_ASSIGN_OR_RETURN(bool current, impl->KbKeysCurrent());
  if (!current) {
    TF_ASSIGN_OR_RETURN(Impl::KbMoves moves, impl->PlanKbMoves());
    impl->kb_moves = std::move(moves);
  }
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, bool sync_writes) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  // The kb column family is written seldom, so its memtable pinned every write-ahead log
  // the results churned through (1.2 GB after three exhaustive runs), and every read-only
  // open (`lookup --data-dir` beside a running coordinator) replayed them all: 6.4 s a
  // lookup. Past this size RocksDB flushes the column families that hold the oldest log.
  db_options.max_total_wal_size = 64ull << 20;
  auto impl = std::make_unique<Impl>();
  rocksdb::DB* raw = nullptr;
  TF_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(db_options, dir, ColumnFamilies(), &impl->handles, &raw),
                               "open database at '" + dir + "'"));
  impl->Adopt(raw);
  impl->synced.sync = sync_writes;
  // Results are re-derivable by re-running their configs, so they are written without
  // fsync; the WAL still orders them before the synced task state that follows.
  impl->results_write.sync = false;
  std::unique_ptr<Store> store(new Store(std::move(impl)));
  TF_RETURN_IF_ERROR(store->RekeyKb());
  TF_RETURN_IF_ERROR(store->BuildOpenIndex());
  return store;
}

// A database written before the open index: one scan of every record builds it, once.
// Its submissions are open when a task of theirs is (the restart that follows closes
// those it lets go); one whose tasks all finished is read from its record when asked for.
Status Store::BuildOpenIndex() {
  std::string marker;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), impl_->meta, Impl::kOpenIndexKey, &marker);
  if (s.ok()) return Status::Ok();
  if (!s.IsNotFound()) TF_RETURN_IF_ERROR(FromRocks(s, "read the open index's marker"));
  rocksdb::WriteBatch batch;
  std::unordered_set<uint64_t> open_tasks;
  TF_RETURN_IF_ERROR(ForEachTask([&](TaskRecord t) {
    if (IsFinished(t.state)) return;
    open_tasks.insert(t.task_id);
    batch.Put(impl_->tasks, OpenKey(TaskKey(t.task_id)), "");
  }));
  TF_ASSIGN_OR_RETURN(std::vector<SubmissionRecord> subs, LoadSubmissions());
  for (const SubmissionRecord& sub : subs) {
    if (std::any_of(sub.task_ids.begin(), sub.task_ids.end(), [&](uint64_t id) { return open_tasks.contains(id); })) {
      batch.Put(impl_->tasks, OpenKey(SubmissionKey(sub.submission_id)), "");
    }
  }
  batch.Put(impl_->meta, Impl::kOpenIndexKey, "1");
  return impl_->Write(batch, "build the index of unfinished tasks");
}

Status Store::RekeyKb() {
  TF_ASSIGN_OR_RETURN(bool current, impl_->KbKeysCurrent());
  if (current) return Status::Ok();
  TF_ASSIGN_OR_RETURN(Impl::KbMoves moves, impl_->PlanKbMoves());
  rocksdb::WriteBatch batch;
  for (const std::string& key : moves.from) batch.Delete(impl_->kb, key);
  for (const auto& [key, e] : moves.to) batch.Put(impl_->kb, key, EncodeKb(e));
  batch.Put(impl_->meta, Impl::kKbVersionKey, std::to_string(kKbKeyVersion));
  return impl_->Write(batch, "move knowledge-base entries to their canonical keys");
}

bool Store::IsEmptyOrDatabase(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec)) return true;
  return std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec);  // RocksDB's manifest pointer
}

Result<std::optional<KbEntry>> Store::GetKb(const OpKeyHash& hash) const {
  const std::string key = hash.Bytes();
  if (impl_->kb_moves) {
    if (auto moved = impl_->kb_moves->to.find(key); moved != impl_->kb_moves->to.end()) {
      return std::optional<KbEntry>(moved->second);
    }
    if (impl_->kb_moves->from.contains(key)) return std::optional<KbEntry>();
  }
  return impl_->Read<KbEntry>(impl_->kb, key, "read knowledge base", DecodeKb);
}

Status Store::ForEachKb(const std::function<void(const KbEntry&)>& fn) const {
  return impl_->ScanKb("", [&fn](const std::string&, KbEntry e) -> Result<bool> {
    fn(e);
    return true;
  });
}

Result<Store::KbEntries> Store::KbPage(const std::string& after, size_t limit) const {
  KbEntries out;
  if (limit == 0) return out;
  TF_RETURN_IF_ERROR(impl_->ScanKb(after, [&out, limit](const std::string& key, KbEntry e) -> Result<bool> {
    out.entries.push_back(std::move(e));
    out.last_key = key;
    return out.entries.size() < limit;
  }));
  return out;
}

Result<std::vector<Store::Merge>> Store::MergeKb(const std::vector<KbEntry>& entries, bool dry_run) {
  std::vector<Merge> outcome;
  outcome.reserve(entries.size());
  // The best latency per key so far: the stored one, then this batch's.
  std::map<std::string, double> best;
  rocksdb::WriteBatch batch;
  for (const KbEntry& e : entries) {
    const std::string key = HashOpKey(e.key).Bytes();
    auto it = best.find(key);
    if (it == best.end()) {
      TF_ASSIGN_OR_RETURN(std::optional<KbEntry> old, GetKb(HashOpKey(e.key)));
      it = old ? best.emplace(key, old->best_latency_us).first : best.end();
    }
    if (it != best.end() && !(e.best_latency_us < it->second)) {
      outcome.push_back(Merge::kKept);
      continue;
    }
    outcome.push_back(it == best.end() ? Merge::kAdded : Merge::kReplaced);
    best[key] = e.best_latency_us;
    batch.Put(impl_->kb, key, EncodeKb(e));
  }
  if (!dry_run && batch.Count() > 0) TF_RETURN_IF_ERROR(impl_->Write(batch, "merge knowledge base"));
  return outcome;
}

uint64_t Store::KbSizeEstimate() const {
  uint64_t n = 0;
  impl_->db->GetIntProperty(impl_->kb, "rocksdb.estimate-num-keys", &n);
  return n;
}

Store::DbStats Store::Stats() const {
  DbStats stats;
  impl_->db->GetAggregatedIntProperty("rocksdb.total-sst-files-size", &stats.sst_bytes);
  impl_->db->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &stats.memtable_bytes);
  impl_->db->GetAggregatedIntProperty("rocksdb.estimate-pending-compaction-bytes", &stats.pending_compaction_bytes);
  return stats;
}

Result<uint64_t> Store::PeekId(const std::string& counter) const {
  std::string value;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), impl_->meta, "next/" + counter, &value);
  if (s.ok() && value.size() == 8) return GetBe64(value.data());
  if (!s.IsNotFound()) TF_RETURN_IF_ERROR(FromRocks(s, "read id counter"));
  return uint64_t{1};
}

Result<uint64_t> Store::NextId(const std::string& counter) {
  TF_ASSIGN_OR_RETURN(uint64_t next, PeekId(counter));
  std::string out;
  PutBe64(out, next + 1);
  rocksdb::WriteBatch batch;
  batch.Put(impl_->meta, "next/" + counter, out);
  TF_RETURN_IF_ERROR(impl_->Write(batch, "allocate id"));
  return next;
}

Status Store::PutSubmission(const SubmissionRecord& sub, const std::vector<TaskRecord>& new_tasks) {
  rocksdb::WriteBatch batch;
  batch.Put(impl_->tasks, SubmissionKey(sub.submission_id), EncodeSubmission(sub));
  batch.Put(impl_->tasks, OpenKey(SubmissionKey(sub.submission_id)), "");
  TF_ASSIGN_OR_RETURN(uint64_t next_submission, PeekId("submission"));
  std::string id;
  PutBe64(id, std::max(next_submission, sub.submission_id + 1));
  batch.Put(impl_->meta, "next/submission", id);
  uint64_t next_task = 0;
  for (const TaskRecord& t : new_tasks) {
    impl_->PutTask(batch, t);
    next_task = std::max(next_task, t.task_id + 1);
  }
  if (next_task) {
    TF_ASSIGN_OR_RETURN(uint64_t counter, PeekId("task"));
    std::string out;
    PutBe64(out, std::max(counter, next_task));
    batch.Put(impl_->meta, "next/task", out);
  }
  return impl_->Write(batch, "write submission");
}

Status Store::PutTask(const TaskRecord& task) {
  rocksdb::WriteBatch batch;
  impl_->PutTask(batch, task);
  return impl_->Write(batch, "write task");
}

Status Store::PutResults(uint64_t task_id, const std::vector<StoredResult>& results,
                         const StrategyCheckpointRecord* checkpoint,
                         const std::vector<PlanRecord>& plans) {
  rocksdb::WriteBatch batch;
  for (const StoredResult& r : results) batch.Put(impl_->results, ResultKey(task_id, r.index), EncodeResult(r));
  if (checkpoint) {
    batch.DeleteRange(impl_->tasks, PlanKey(task_id, 0), PlanKey(task_id + 1, 0));
    capnp::MallocMessageBuilder b;
    auto c = b.initRoot<schema::StrategyCheckpoint>();
    c.setState(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(checkpoint->state.data()),
                                   checkpoint->state.size()));
    c.setTold(checkpoint->told);
    auto out = c.initOutstanding(static_cast<unsigned>(checkpoint->outstanding.size()));
    for (unsigned i = 0; i < checkpoint->outstanding.size(); ++i) out.set(i, checkpoint->outstanding[i]);
    batch.Put(impl_->tasks, CheckpointKey(task_id), ToBytes(b));
  }
  for (const PlanRecord& p : plans) {
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<schema::PlanRecord>();
    r.setAsked(p.asked);
    r.setToldBefore(p.told_before);
    r.setMaxConfigs(p.max_configs);
    auto configs = r.initConfigs(static_cast<unsigned>(p.configs.size()));
    for (unsigned i = 0; i < p.configs.size(); ++i) configs.set(i, p.configs[i]);
    batch.Put(impl_->tasks, PlanKey(task_id, p.number), ToBytes(b));
  }
  return impl_->Write(batch, "write results", /*sync=*/false);
}

Status Store::PutSchedule(uint64_t submission_id, const std::string& state) {
  rocksdb::WriteBatch batch;
  batch.Put(impl_->tasks, ScheduleKey(submission_id), state);
  return impl_->Write(batch, "write task scheduler", /*sync=*/false);
}

Result<std::optional<std::string>> Store::LoadSchedule(uint64_t submission_id) const {
  std::string bytes;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), impl_->tasks, ScheduleKey(submission_id), &bytes);
  if (s.IsNotFound()) return std::optional<std::string>();
  TF_RETURN_IF_ERROR(FromRocks(s, "load task scheduler"));
  return std::optional<std::string>(std::move(bytes));
}

Status Store::DeleteSchedule(uint64_t submission_id) {
  rocksdb::WriteBatch batch;
  batch.Delete(impl_->tasks, ScheduleKey(submission_id));
  return impl_->Write(batch, "delete task scheduler", /*sync=*/false);
}

Result<std::vector<PlanRecord>> Store::LoadPlans(uint64_t task_id) const {
  std::vector<PlanRecord> out;
  const std::string end = PlanKey(task_id + 1, 0);
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->tasks));
  for (it->Seek(PlanKey(task_id, 0)); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    PlanRecord p;
    p.number = GetBe64(it->key().data() + it->key().size() - 8);
    TF_RETURN_IF_ERROR(FromBytes<schema::PlanRecord>(it->value().ToString(), [&](schema::PlanRecord::Reader r) -> Status {
      p.asked = r.getAsked();
      p.told_before = r.getToldBefore();
      p.max_configs = r.getMaxConfigs();
      for (uint64_t c : r.getConfigs()) p.configs.push_back(c);
      return Status::Ok();
    }));
    out.push_back(std::move(p));
  }
  TF_RETURN_IF_ERROR(FromRocks(it->status(), "load strategy plans"));
  return out;
}

Result<std::optional<StrategyCheckpointRecord>> Store::LoadCheckpoint(uint64_t task_id) const {
  std::string bytes;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), impl_->tasks, CheckpointKey(task_id), &bytes);
  if (s.IsNotFound()) return std::optional<StrategyCheckpointRecord>();
  TF_RETURN_IF_ERROR(FromRocks(s, "load strategy checkpoint"));
  StrategyCheckpointRecord c;
  TF_RETURN_IF_ERROR(FromBytes<schema::StrategyCheckpoint>(
      bytes, [&](schema::StrategyCheckpoint::Reader r) -> Status {
        auto state = r.getState();
        c.state.assign(reinterpret_cast<const char*>(state.begin()), state.size());
        c.told = r.getTold();
        for (uint64_t i : r.getOutstanding()) c.outstanding.push_back(i);
        return Status::Ok();
      }));
  return std::optional<StrategyCheckpointRecord>(std::move(c));
}

Result<bool> Store::FinishTask(const TaskRecord& task, const std::optional<KbEntry>& entry, bool sync) {
  rocksdb::WriteBatch batch;
  impl_->PutTask(batch, task);
  bool wrote_kb = false;
  if (entry) {
    OpKeyHash hash = HashOpKey(entry->key);
    TF_ASSIGN_OR_RETURN(std::optional<KbEntry> old, GetKb(hash));
    if (!old || entry->best_latency_us < old->best_latency_us) {
      batch.Put(impl_->kb, hash.Bytes(), EncodeKb(*entry));
      wrote_kb = true;
    }
  }
  batch.DeleteRange(impl_->results, ResultKey(task.task_id, 0), ResultKey(task.task_id + 1, 0));
  batch.Delete(impl_->tasks, CheckpointKey(task.task_id));
  batch.DeleteRange(impl_->tasks, PlanKey(task.task_id, 0), PlanKey(task.task_id + 1, 0));
  TF_RETURN_IF_ERROR(impl_->Write(batch, "finish task", sync));
  return wrote_kb;
}

Result<std::optional<TaskRecord>> Store::GetTask(uint64_t task_id) const {
  return impl_->Read<TaskRecord>(impl_->tasks, TaskKey(task_id), "read task " + std::to_string(task_id), DecodeTask);
}

Status Store::ForEachTask(const std::function<void(TaskRecord)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->tasks));
  for (it->Seek("t/"); it->Valid() && it->key().starts_with("t/"); it->Next()) {
    TF_ASSIGN_OR_RETURN(TaskRecord t, DecodeTask(it->value().ToString()));
    fn(std::move(t));
  }
  return FromRocks(it->status(), "load tasks");
}

Result<std::vector<TaskRecord>> Store::LoadTasks() const {
  std::vector<TaskRecord> out;
  TF_RETURN_IF_ERROR(ForEachTask([&](TaskRecord t) { out.push_back(std::move(t)); }));
  return out;
}

namespace {
Result<SubmissionRecord> DecodeSubmission(const std::string& bytes) {
  SubmissionRecord sub;
  TF_RETURN_IF_ERROR(FromBytes<schema::SubmissionRecord>(
      bytes, [&](schema::SubmissionRecord::Reader r) -> Status {
        sub.submission_id = r.getSubmissionId();
        for (uint64_t id : r.getTaskIds()) sub.task_ids.push_back(id);
        sub.created_ms = r.getCreatedUnixMs();
        sub.total_budget = r.getTotalBudget();
        sub.scheduler = r.getScheduler();
        for (uint64_t id : r.getScheduledTaskIds()) sub.scheduled_task_ids.push_back(id);
        for (double w : r.getScheduledWeights()) sub.scheduled_weights.push_back(w);
        for (auto n : r.getNames()) sub.names.emplace_back(n.cStr());
        sub.cancelled = r.getCancelled();
        sub.priority = r.getPriority();
        if (sub.scheduled_weights.size() != sub.scheduled_task_ids.size()) {
          return FailedPrecondition("stored submission has mismatched scheduled tasks and weights");
        }
        return Status::Ok();
      }));
  return sub;
}
}  // namespace

Result<std::optional<SubmissionRecord>> Store::GetSubmission(uint64_t submission_id) const {
  return impl_->Read<SubmissionRecord>(impl_->tasks, SubmissionKey(submission_id),
                                       "read submission " + std::to_string(submission_id), DecodeSubmission);
}

Result<std::vector<SubmissionRecord>> Store::LoadSubmissions() const {
  std::vector<SubmissionRecord> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->tasks));
  for (it->Seek("s/"); it->Valid() && it->key().starts_with("s/"); it->Next()) {
    TF_ASSIGN_OR_RETURN(SubmissionRecord sub, DecodeSubmission(it->value().ToString()));
    out.push_back(std::move(sub));
  }
  TF_RETURN_IF_ERROR(FromRocks(it->status(), "load submissions"));
  return out;
}

Status Store::ForEachOpenTask(const std::function<void(TaskRecord)>& fn) const {
  return impl_->ForEachId(kOpenTasks, [&](uint64_t id) -> Status {
    TF_ASSIGN_OR_RETURN(std::optional<TaskRecord> t, GetTask(id));
    if (!t) return FailedPrecondition("the open index names task " + std::to_string(id) + ", which has no record");
    fn(std::move(t).value());
    return Status::Ok();
  });
}

Result<std::vector<SubmissionRecord>> Store::LoadOpenSubmissions() const {
  std::vector<SubmissionRecord> out;
  TF_RETURN_IF_ERROR(impl_->ForEachId(kOpenSubmissions, [&](uint64_t id) -> Status {
    TF_ASSIGN_OR_RETURN(std::optional<SubmissionRecord> sub, GetSubmission(id));
    if (!sub) return FailedPrecondition("the open index names submission " + std::to_string(id) + ", which has no record");
    out.push_back(std::move(sub).value());
    return Status::Ok();
  }));
  return out;
}

Status Store::CloseSubmissions(const std::vector<uint64_t>& submission_ids) {
  if (submission_ids.empty()) return Status::Ok();
  rocksdb::WriteBatch batch;
  for (uint64_t id : submission_ids) batch.Delete(impl_->tasks, OpenKey(SubmissionKey(id)));
  return impl_->Write(batch, "close submissions", /*sync=*/false);
}

Result<std::vector<StoredResult>> Store::LoadResults(uint64_t task_id) const {
  std::vector<StoredResult> out;
  std::string prefix;
  PutBe64(prefix, task_id);
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->results));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != 16) return FailedPrecondition("stored result key has the wrong size");
    StoredResult res;
    res.index = GetBe64(it->key().data() + 8);
    TF_RETURN_IF_ERROR(FromBytes<schema::ResultRecord>(
        it->value().ToString(), [&](schema::ResultRecord::Reader r) -> Status {
          res.ok = r.getOk();
          res.latency_us = r.getLatencyUs();
          res.error = r.getError();
          res.job_id = r.getJobId();
          res.seq = r.getSeq();
          return Status::Ok();
        }));
    out.push_back(std::move(res));
  }
  TF_RETURN_IF_ERROR(FromRocks(it->status(), "load results"));
  return out;
}

}  // namespace tunefleet::coordinator
