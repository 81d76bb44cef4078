// Store against a real RocksDB folder.
#include "coordinator/store.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include "tests/support/raw_store.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tunefleet-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Store> Open() {
    auto s = Store::Open(dir_.string());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  std::filesystem::path dir_;
};

OpKey Key(int64_t m) {
  OpKey k;
  k.soc = "Ascend910B2";
  k.op_type = "MatMul";
  k.inputs = {{{m, 64}, "float16", "ND"}, {{64, 64}, "float16", "ND"}};
  return k;
}

KbEntry Entry(int64_t m, double best) {
  KbEntry e;
  e.key = Key(m);
  e.best_index = 42;
  e.best_config = {{"baseM", 64}, {"baseN", 32}};
  e.best_latency_us = best;
  e.baseline_latency_us = 10;
  e.improvement = 10 / best;
  e.strategy = "exhaustive";
  e.evaluations = 100;
  return e;
}

TaskRecord Task(uint64_t id, int64_t m) {
  TaskRecord t;
  t.task_id = id;
  t.submission_id = 1;
  t.key = Key(m);
  t.strategy = "random";
  t.budget = 50;
  t.seed = 7;
  t.state = TaskState::kRunning;
  return t;
}

OpKey GeluKey(std::vector<int64_t> shape) {
  OpKey k;
  k.soc = "Ascend910B2";
  k.op_type = "Gelu";
  k.inputs = {{std::move(shape), "float16", "ND"}};
  return k;
}

using testing::StoreFamilies;
using testing::WriteRawStore;

// How many knowledge-base records the database in dir holds, read past Store.
size_t StoredKbEntries(const std::filesystem::path& dir) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  EXPECT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), dir.string(), StoreFamilies(), &handles, &raw).ok());
  if (raw == nullptr) return 0;
  std::unique_ptr<rocksdb::DB> db(raw);
  size_t n = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), handles[1]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  }
  for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
  return n;
}

// A database an older build wrote: its entries under the keys canonical then, and no
// key version. Forgets the version this build's Open recorded.
void ForgetKbKeyVersion(const std::filesystem::path& dir) {
  WriteRawStore(dir, [](rocksdb::DB& db, rocksdb::ColumnFamilyHandle*, rocksdb::ColumnFamilyHandle* meta) {
    EXPECT_TRUE(db.Delete(rocksdb::WriteOptions(), meta, "kb-key-version").ok());
  });
}

std::vector<uint64_t> OpenTaskIds(const Store& store) {
  std::vector<uint64_t> ids;
  EXPECT_TRUE(store.ForEachOpenTask([&](TaskRecord t) { ids.push_back(t.task_id); }).ok());
  return ids;
}

std::vector<uint64_t> OpenSubmissionIds(const Store& store) {
  std::vector<uint64_t> ids;
  Result<std::vector<SubmissionRecord>> subs = store.LoadOpenSubmissions();
  EXPECT_TRUE(subs.ok()) << subs.status().ToString();
  if (subs.ok()) {
    for (const SubmissionRecord& s : *subs) ids.push_back(s.submission_id);
  }
  return ids;
}

SubmissionRecord Submission(uint64_t id, std::vector<uint64_t> task_ids) {
  SubmissionRecord sub;
  sub.submission_id = id;
  sub.task_ids = std::move(task_ids);
  return sub;
}

// Entries tuned before an element-wise op's axes were merged (`Gelu [32, 128, 3072]`)
// were stored under keys no lookup computes any more: Open moves them to their
// canonical key, keeping the faster where two spellings of one op meet, and only once.
TEST_F(StoreTest, OpenMovesEntriesStoredUnderAnOlderCanonicalFormToTheirKey) {
  KbEntry onnx = Entry(64, 5.0), json = Entry(64, 4.0), other = Entry(64, 7.0);
  onnx.key = GeluKey({32, 128, 3072});
  json.key = GeluKey({32 * 128, 3072});
  other.key = GeluKey({8, 128, 3072});
  // And a pair where the spelling that moves is the faster one.
  KbEntry fast = Entry(64, 3.0), slow = Entry(64, 6.0);
  fast.key = GeluKey({16, 128, 768});
  slow.key = GeluKey({16 * 128, 768});
  const OpKeyHash canonical = HashOpKey(*CanonicalOpKey(onnx.key));
  ASSERT_EQ(canonical, HashOpKey(json.key));
  {
    auto store = Open();
    // MergeKb stores under the key as given, as an older build's canonical form was.
    ASSERT_TRUE(store->MergeKb({onnx, json, other, fast, slow}).ok());
    ASSERT_TRUE(store->GetKb(HashOpKey(onnx.key))->has_value());
  }
  {
    auto store = Open();  // this build's database: nothing moves
    EXPECT_TRUE(store->GetKb(HashOpKey(onnx.key))->has_value());
  }
  ForgetKbKeyVersion(dir_);
  // What a lookup sees of the knowledge base, by key: through GetKb, ForEachKb and pages.
  auto seen = [&](const Store& store) {
    std::map<std::string, double> by_get;
    for (const OpKey& k : {onnx.key, json.key, other.key, *CanonicalOpKey(other.key), fast.key, slow.key}) {
      auto got = store.GetKb(HashOpKey(k));
      EXPECT_TRUE(got.ok());
      if (got.ok() && got->has_value()) by_get[k.Canonical()] = (*got)->best_latency_us;
    }
    std::map<std::string, double> by_scan, by_page;
    EXPECT_TRUE(store.ForEachKb([&](const KbEntry& e) { by_scan[e.key.Canonical()] = e.best_latency_us; }).ok());
    std::string after;
    for (int pages = 0; pages < 10; ++pages) {  // one entry a page, so paging crosses moved and stored keys
      auto page = store.KbPage(after, 1);
      EXPECT_TRUE(page.ok());
      if (!page.ok() || page->entries.empty()) break;
      by_page[page->entries[0].key.Canonical()] = page->entries[0].best_latency_us;
      after = page->last_key;
    }
    EXPECT_EQ(by_scan, by_page);
    return std::pair(by_get, by_scan);
  };
  std::pair<std::map<std::string, double>, std::map<std::string, double>> read_only;
  {
    // A `lookup` of the folder before any writable open: it may not write, yet sees the
    // entries where the writable open will put them.
    auto store = Store::OpenReadOnly(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    read_only = seen(**store);
    EXPECT_EQ(read_only.first.size(), 3u) << "the canonical keys only";
    EXPECT_EQ(read_only.first[CanonicalOpKey(onnx.key)->Canonical()], 4.0);
    EXPECT_EQ(read_only.first[slow.key.Canonical()], 3.0) << "the faster spelling, moved over the stored one";
    EXPECT_EQ(read_only.second.size(), 3u);
  }
  EXPECT_EQ(StoredKbEntries(dir_), 5u) << "the read-only open moved nothing on disk";
  {
    auto store = Open();
    EXPECT_EQ(seen(*store), read_only) << "a read-only open reads what the writable open leaves";
    EXPECT_FALSE(store->GetKb(HashOpKey(onnx.key))->has_value());
    EXPECT_FALSE(store->GetKb(HashOpKey(other.key))->has_value());
    auto kept = store->GetKb(canonical);
    ASSERT_TRUE(kept.ok() && kept->has_value());
    EXPECT_EQ((*kept)->best_latency_us, 4.0) << "the faster of the two spellings";
    auto moved = store->GetKb(HashOpKey(*CanonicalOpKey(other.key)));
    ASSERT_TRUE(moved.ok() && moved->has_value());
    EXPECT_EQ((*moved)->key.Canonical(), CanonicalOpKey(other.key)->Canonical());
    EXPECT_EQ((*moved)->best_config, other.best_config);
    int entries = 0;
    ASSERT_TRUE(store->ForEachKb([&](const KbEntry&) { ++entries; }).ok());
    EXPECT_EQ(entries, 3);
  }
  EXPECT_EQ(StoredKbEntries(dir_), 3u);
}

TEST_F(StoreTest, KnowledgeBaseKeepsOnlyTheBetterEntry) {
  auto store = Open();
  EXPECT_FALSE(store->GetKb(HashOpKey(Key(64))).value().has_value());
  EXPECT_TRUE(store->FinishTask(Task(1, 64), Entry(64, 5.0)).value());
  EXPECT_FALSE(store->FinishTask(Task(2, 64), Entry(64, 6.0)).value()) << "a worse result must not replace";
  auto got = store->GetKb(HashOpKey(Key(64))).value();
  ASSERT_TRUE(got);
  EXPECT_DOUBLE_EQ(got->best_latency_us, 5.0);
  EXPECT_TRUE(store->FinishTask(Task(3, 64), Entry(64, 4.0)).value());
  EXPECT_DOUBLE_EQ(store->GetKb(HashOpKey(Key(64))).value()->best_latency_us, 4.0);
  EXPECT_EQ(store->GetKb(HashOpKey(Key(64))).value()->best_config.size(), 2u);
}

TEST_F(StoreTest, EverythingSurvivesAReopen) {
  {
    auto store = Open();
    SubmissionRecord sub;
    sub.submission_id = 9;
    sub.task_ids = {1, 2};
    sub.created_ms = 123;
    sub.total_budget = 500;
    sub.scheduler = "gradient";
    sub.scheduled_task_ids = {1, 2};
    sub.scheduled_weights = {4, 1};
    ASSERT_TRUE(store->PutSubmission(sub, {Task(1, 64), Task(2, 128)}).ok());
    ASSERT_TRUE(store->PutResults(1, {{5, true, 1.5, "", 77}, {6, false, 0, "L0A", 77}}).ok());
    ASSERT_TRUE(store->FinishTask(Task(2, 128), Entry(128, 3.0)).ok());
    EXPECT_EQ(store->PeekId("task").value(), 3u) << "the submission's batch moves the counter past its tasks";
    EXPECT_EQ(store->PeekId("task").value(), 3u) << "peeking allocates nothing";
    EXPECT_EQ(store->NextId("task").value(), 3u);
    EXPECT_EQ(store->NextId("submission").value(), 10u) << "and past the submission's own id";
  }
  auto store = Open();
  auto tasks = store->LoadTasks().value();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].task_id, 1u);
  EXPECT_EQ(tasks[0].key, Key(64));
  EXPECT_EQ(tasks[0].budget, 50u);
  auto results = store->LoadResults(1).value();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].index, 5u);
  EXPECT_DOUBLE_EQ(results[0].latency_us, 1.5);
  EXPECT_FALSE(results[1].ok);
  EXPECT_EQ(results[1].error, "L0A");
  SubmissionRecord sub = store->LoadSubmissions().value().at(0);
  EXPECT_EQ(sub.task_ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(sub.total_budget, 500u);
  EXPECT_EQ(sub.scheduler, "gradient");
  EXPECT_EQ(sub.scheduled_weights, (std::vector<double>{4, 1}));
  EXPECT_TRUE(store->GetKb(HashOpKey(Key(128))).value().has_value());
  EXPECT_EQ(store->NextId("task").value(), 4u) << "id counters must be durable";
}

// What a restart resumes: a task is open while its record says unfinished, a submission
// until it is closed; both survive a reopen, and the open ones are all a restart reads
// (a finished task's record is not touched, even a corrupt one).
TEST_F(StoreTest, TheOpenIndexHoldsTheUnfinishedTasksAndTheSubmissionsNotClosed) {
  {
    auto store = Open();
    TaskRecord queued = Task(3, 256);
    queued.state = TaskState::kQueued;
    ASSERT_TRUE(store->PutSubmission(Submission(1, {1, 2}), {Task(1, 64), Task(2, 128)}).ok());
    ASSERT_TRUE(store->PutSubmission(Submission(2, {2, 3}), {queued}).ok());
    EXPECT_EQ(OpenTaskIds(*store), (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_EQ(OpenSubmissionIds(*store), (std::vector<uint64_t>{1, 2}));
    TaskRecord done = Task(2, 128);
    done.state = TaskState::kDone;
    ASSERT_TRUE(store->FinishTask(done, Entry(128, 3.0)).ok());
    TaskRecord cancelled = Task(1, 64);
    cancelled.state = TaskState::kCancelled;
    ASSERT_TRUE(store->PutTask(cancelled).ok());
    EXPECT_EQ(OpenTaskIds(*store), (std::vector<uint64_t>{3}));
    ASSERT_TRUE(store->CloseSubmissions({1}).ok());
    ASSERT_TRUE(store->CloseSubmissions({}).ok());
  }
  WriteRawStore(dir_, [](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* tasks, rocksdb::ColumnFamilyHandle*) {
    EXPECT_TRUE(db.Put(rocksdb::WriteOptions(), tasks, Store::TaskRecordKey(2), "not a record").ok());
  });
  auto store = Open();
  EXPECT_FALSE(store->LoadTasks().ok()) << "task 2's record is corrupt";
  EXPECT_EQ(OpenTaskIds(*store), (std::vector<uint64_t>{3}));
  EXPECT_EQ(OpenSubmissionIds(*store), (std::vector<uint64_t>{2}));
  EXPECT_EQ(store->GetSubmission(1).value()->task_ids, (std::vector<uint64_t>{1, 2})) << "closed is not deleted";
  TaskRecord running = Task(3, 256);
  ASSERT_TRUE(store->PutTask(running).ok());
  EXPECT_EQ(OpenTaskIds(*store), (std::vector<uint64_t>{3})) << "still open, once";
}

// A database an older build wrote has no open index: the first open builds it from every
// record (a submission is open when a task of its is), and only the first.
TEST_F(StoreTest, ADatabaseWrittenBeforeTheOpenIndexGetsItAtItsFirstOpen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSubmission(Submission(1, {1}), {Task(1, 64)}).ok());
    ASSERT_TRUE(store->PutSubmission(Submission(2, {1, 2}), {Task(2, 128)}).ok());
    ASSERT_TRUE(store->PutSubmission(Submission(3, {3}), {Task(3, 256)}).ok());
    TaskRecord done = Task(1, 64);
    done.state = TaskState::kDone;
    ASSERT_TRUE(store->FinishTask(done, std::nullopt).ok());
    done = Task(3, 256);
    done.state = TaskState::kFailed;
    ASSERT_TRUE(store->FinishTask(done, std::nullopt).ok());
  }
  WriteRawStore(dir_, [](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* tasks, rocksdb::ColumnFamilyHandle* meta) {
    EXPECT_TRUE(db.DeleteRange(rocksdb::WriteOptions(), tasks, "o/", "o0").ok());
    EXPECT_TRUE(db.Delete(rocksdb::WriteOptions(), meta, "open-index").ok());
  });
  {
    auto store = Open();
    EXPECT_EQ(OpenTaskIds(*store), (std::vector<uint64_t>{2}));
    EXPECT_EQ(OpenSubmissionIds(*store), (std::vector<uint64_t>{2})) << "1 and 3 have no unfinished task";
    ASSERT_TRUE(store->CloseSubmissions({2}).ok());
  }
  EXPECT_TRUE(OpenSubmissionIds(*Open()).empty()) << "the index is built once, not at every open";
}

// Found by an audit: the kb family is written seldom, so its memtable pinned every
// write-ahead log the results churned through (1.2 GB after three exhaustive runs), and
// every read-only open (`lookup --data-dir` beside a running coordinator) replayed them
// all. Past 64 MB of logs RocksDB now flushes the family holding the oldest one: 160 MB of
// results behind one knowledge-base entry leave well under that plus a memtable's worth.
TEST_F(StoreTest, TheWriteAheadLogStaysBoundedWhileTheKnowledgeBaseIsIdle) {
  auto store = Open();
  ASSERT_TRUE(store->MergeKb({Entry(64, 5.0)}).ok());  // held in the kb memtable, unflushed
  const std::string reason(1000, 'x');                  // 1 KB a result: fewer writes, same bytes
  ConfigIndex next = 0;
  for (int batch = 0; batch < 160; ++batch) {
    std::vector<StoredResult> results(1000);
    for (StoredResult& r : results) {
      r.index = next++;
      r.error = reason;
    }
    ASSERT_TRUE(store->PutResults(1, results).ok());
  }
  // A log is deleted once the flushes it waits for end, in the background: a slow
  // machine gets a few seconds (without the limit it stays at 165 MB).
  auto log_bytes = [&] {
    uintmax_t bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir_)) {
      if (f.path().extension() == ".log") bytes += f.file_size();
    }
    return bytes;
  };
  const uintmax_t bound = uintmax_t{130} << 20;
  uintmax_t logs = log_bytes();
  for (int i = 0; i < 100 && logs >= bound; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    logs = log_bytes();
  }
  EXPECT_LT(logs, bound) << "write-ahead logs: " << (logs >> 20) << " MB";
  EXPECT_TRUE(store->GetKb(HashOpKey(Key(64))).value().has_value()) << "flushed, not lost";
}

// A finished task's results are deleted: why its configs failed lives on in its record,
// the first distinct reasons each with a count and the rest together.
TEST_F(StoreTest, AFinishedTaskKeepsWhyItsConfigsFailed) {
  TaskRecord t = Task(1, 64);
  for (int i = 0; i < 3; ++i) CountFailureReason(t, "L0A overflow");
  for (int i = 0; i < 12; ++i) CountFailureReason(t, "reason " + std::to_string(i));
  CountFailureReason(t, "L0A overflow");
  ASSERT_EQ(t.failure_reasons.size(), kMaxFailureReasons + 1) << "8 distinct reasons and the rest";
  EXPECT_EQ(t.failure_reasons[0], (std::pair<std::string, uint64_t>{"L0A overflow", 4}));
  EXPECT_EQ(t.failure_reasons[1].first, "reason 0");
  EXPECT_EQ(t.failure_reasons[7].first, "reason 6");
  EXPECT_EQ(t.failure_reasons.back(), (std::pair<std::string, uint64_t>{kOtherFailureReasons, 5}))
      << "reasons 7..11 have no line of their own";
  TaskRecord odd = Task(2, 64);
  CountFailureReason(odd, "two\nlines\tand a tab");
  CountFailureReason(odd, std::string(1000, 'x'));
  EXPECT_EQ(odd.failure_reasons[0].first, "two lines and a tab");
  EXPECT_EQ(odd.failure_reasons[1].first.size(), kMaxFailureReasonChars);
  EXPECT_TRUE(odd.failure_reasons[1].first.ends_with("..."));
  uint64_t counted = 0;
  for (const auto& [reason, n] : t.failure_reasons) counted += n;
  EXPECT_EQ(counted, 16u) << "every failure is counted once";
  {
    auto store = Open();
    ASSERT_TRUE(store->FinishTask(t, std::nullopt).ok());
  }
  auto tasks = Open()->LoadTasks().value();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].failure_reasons, t.failure_reasons);
}

TEST_F(StoreTest, FinishingATaskDeletesOnlyItsResults) {
  auto store = Open();
  ASSERT_TRUE(store->PutResults(1, {{5, true, 1.5, "", 1}}).ok());
  ASSERT_TRUE(store->PutResults(2, {{5, true, 2.5, "", 1}}).ok());
  ASSERT_TRUE(store->FinishTask(Task(1, 64), std::nullopt).ok());
  EXPECT_TRUE(store->LoadResults(1).value().empty());
  EXPECT_EQ(store->LoadResults(2).value().size(), 1u);
}

// A task's plans are kept in order beside its results until a checkpoint covers them
// or the task ends; another task's are untouched.
TEST_F(StoreTest, PlansLastUntilACheckpointOrTheTasksEnd) {
  PlanRecord ask;
  ask.number = 300;  // after 255: numbers order as big-endian bytes, not as text
  ask.asked = true;
  ask.told_before = 7;
  ask.max_configs = 8;
  ask.configs = {9, 3, 5};
  PlanRecord seed;
  seed.number = 2;
  seed.configs = {4};
  PlanRecord later;
  later.number = 301;
  later.asked = true;
  later.configs = {10, 12};
  {
    auto store = Open();
    ASSERT_TRUE(store->PutResults(1, {{5, true, 1.5, "", 1}}, nullptr, {ask, seed}).ok());
    ASSERT_TRUE(store->PutResults(1, {}, nullptr, {later}).ok());
    ASSERT_TRUE(store->PutResults(2, {}, nullptr, {seed}).ok());
  }
  auto store = Open();
  auto plans = store->LoadPlans(1).value();
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans[0].number, 2u);
  EXPECT_FALSE(plans[0].asked);
  EXPECT_EQ(plans[0].configs, (std::vector<ConfigIndex>{4}));
  EXPECT_EQ(plans[1].number, 300u);
  EXPECT_TRUE(plans[1].asked);
  EXPECT_EQ(plans[1].told_before, 7u);
  EXPECT_EQ(plans[1].max_configs, 8u);
  EXPECT_EQ(plans[1].configs, (std::vector<ConfigIndex>{9, 3, 5}));
  EXPECT_TRUE(plans[2].asked);
  EXPECT_EQ(plans[2].number, 301u);
  EXPECT_EQ(plans[2].configs, (std::vector<ConfigIndex>{10, 12}));
  StrategyCheckpointRecord checkpoint;
  checkpoint.state = "state";
  checkpoint.told = 1;
  PlanRecord after = seed;
  after.number = 302;
  ASSERT_TRUE(store->PutResults(1, {}, &checkpoint, {after}).ok());
  plans = store->LoadPlans(1).value();
  ASSERT_EQ(plans.size(), 1u) << "the checkpoint covers the plans before it";
  EXPECT_EQ(plans[0].number, 302u);
  EXPECT_EQ(store->LoadPlans(2).value().size(), 1u);
  ASSERT_TRUE(store->FinishTask(Task(1, 64), std::nullopt).ok());
  EXPECT_TRUE(store->LoadPlans(1).value().empty());
  EXPECT_EQ(store->LoadPlans(2).value().size(), 1u);
}

TEST_F(StoreTest, SecondOpenOfALockedFolderIsUnavailable) {
  auto first = Open();
  auto second = Store::Open(dir_.string());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
}

// What `lookup --data-dir` does while a coordinator or a `tune` holds the folder.
TEST_F(StoreTest, AReadOnlyViewOpensBesideTheWriterAndSeesWhatItWrote) {
  auto writer = Open();
  ASSERT_TRUE(writer->FinishTask(Task(1, 64), Entry(64, 5.0)).ok());
  auto reader = Store::OpenReadOnly(dir_.string());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto got = (*reader)->GetKb(HashOpKey(Key(64)));
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_DOUBLE_EQ((*got)->best_latency_us, 5.0);
  EXPECT_FALSE((*reader)->FinishTask(Task(2, 48), Entry(48, 1.0)).ok()) << "a read-only view writes nothing";
  auto none = Store::OpenReadOnly((dir_ / "absent").string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tunefleet::coordinator
