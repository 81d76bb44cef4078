// The coordinator's loop on fake time: in-process, over inproc:// sockets, with
// scripted workers that answer (or do not) exactly as the test says. Real RocksDB.
#include "coordinator/coordinator.h"
#include "coordinator/nearest.h"
#include "tunefleet/common/tuning_problem.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/report.h"
#include "tests/support/raw_store.h"
#include "tunefleet/common/transport.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::coordinator {
namespace {

using namespace std::chrono_literals;

OpKey SmallMatmul(int64_t m = 32) {
  OpKey k;
  k.soc = "Ascend910B2";
  k.op_type = "MatMul";
  k.inputs = {{{m, 32}, "float16", "ND"}, {{32, 64}, "float16", "ND"}};
  return k;
}

// FakeClock, and optionally time that passes by `tick` at every reading: a loop where
// everything (planning above all) is slow.
class TickingClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_ns_.fetch_add(tick_ns_.load()))); }
  int64_t UnixMillis() const override { return 1'700'000'000'000 + now_ns_.load() / 1'000'000; }
  void Advance(Duration d) { now_ns_ += d.count(); }
  void Tick(Duration d) { tick_ns_ = d.count(); }

 private:
  mutable std::atomic<int64_t> now_ns_{0};
  std::atomic<int64_t> tick_ns_{0};
};

struct ReceivedJob {
  uint64_t task_id = 0, job_id = 0;
  uint32_t attempt = 0;
  std::vector<ConfigIndex> configs;
};

// A worker the test drives by hand. Its ZeroMQ routing id is its worker id unless given:
// a real worker's is ZeroMQ's own, new for every connection.
class ScriptedWorker {
 public:
  ScriptedWorker(zmq::context_t& ctx, const std::string& endpoint, const std::string& id, uint32_t slots = 1,
                 const std::string& routing_id = "")
      : socket_(transport::MakeSocket(ctx, zmq::socket_type::dealer)) {
    socket_.set(zmq::sockopt::routing_id, routing_id.empty() ? id : routing_id);
    EXPECT_TRUE(transport::Connect(socket_, endpoint).ok());
    wire::Outgoing msg;
    auto ready = msg.Body().initWorkerReady();
    ready.setWorkerId(id);
    ready.setSlots(slots);
    ready.initSocs(1).set(0, "Ascend910B2");
    EXPECT_TRUE(transport::Send(socket_, msg).ok());
  }

  // Registers again on the same routing id, as a worker that lost the coordinator does.
  void Reregister(uint32_t slots = 1) {
    wire::Outgoing msg;
    auto ready = msg.Body().initWorkerReady();
    ready.setWorkerId("again");
    ready.setSlots(slots);
    ready.initSocs(1).set(0, "Ascend910B2");
    EXPECT_TRUE(transport::Send(socket_, msg).ok());
  }

  // Closes the connection, as a killed worker's kernel does.
  void Close() { socket_.close(); }

  void Heartbeat() {
    wire::Outgoing msg;
    msg.Body().initHeartbeat();
    EXPECT_TRUE(transport::Send(socket_, msg).ok());
  }

  // The next job assignment, skipping heartbeats; nullopt after `wait` of real time.
  std::optional<ReceivedJob> NextJob(std::chrono::milliseconds wait = 5s) {
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 50ms);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      auto frames = transport::Receive(socket_, true).value();
      if (!frames) continue;
      auto in = wire::Decode(frames->back().data(), frames->back().size()).value();
      if (in->Which() == schema::Envelope::Body::HEARTBEAT) ++heartbeats_;
      if (in->Which() == schema::Envelope::Body::STOP_TASK) {
        stopped_.push_back(in->Envelope().getBody().getStopTask().getTaskId());
      }
      if (in->Which() != schema::Envelope::Body::JOB_ASSIGNMENT) continue;
      auto a = in->Envelope().getBody().getJobAssignment();
      ReceivedJob job{a.getTaskId(), a.getJobId(), a.getAttempt(), {}};
      if (a.getConfigs().isIndices()) {
        for (auto i : a.getConfigs().getIndices()) job.configs.push_back(i);
      }
      return job;
    }
    return std::nullopt;
  }

  // Tasks the coordinator told this worker to stop, as NextJob saw them.
  const std::vector<uint64_t>& stopped() const { return stopped_; }

  // Every config of the job at the same latency: nothing ever improves on the first.
  void AnswerFlat(const ReceivedJob& job, double latency_us) { Answer(job, latency_us, false); }

  // Answers every job until none comes for a second (or max_jobs were answered); the
  // largest job seen. flat: every config at the same latency, so nothing improves.
  size_t AnswerAll(int max_jobs, bool flat) {
    size_t largest = 0;
    for (int jobs = 0; jobs < max_jobs; ++jobs) {
      auto job = NextJob(1s);
      if (!job) break;
      largest = std::max(largest, job->configs.size());
      Answer(*job, 10, !flat);
    }
    return largest;
  }

  // Takes and answers `jobs` jobs one at a time (latency_us each, less `step` each job
  // after the first); their task ids in the order they came. Fails the test when one
  // does not come.
  std::vector<uint64_t> ServeInOrder(int jobs, double latency_us = 40, double step = 0) {
    std::vector<uint64_t> order;
    for (int i = 0; i < jobs; ++i) {
      auto job = NextJob();
      EXPECT_TRUE(job) << "job " << i << " of " << jobs << " did not come";
      if (!job) break;
      order.push_back(job->task_id);
      Answer(*job, latency_us - step * i);
    }
    return order;
  }

  // Waits (up to 2 s) for the coordinator's next heartbeat, after the test's clock moved
  // to its time, and answers it to stay registered.
  void AwaitHeartbeat() {
    const int seen = heartbeats_;
    for (int i = 0; i < 100 && heartbeats_ == seen; ++i) (void)NextJob(20ms);
    Heartbeat();
  }

  // Heartbeats from the coordinator that NextJob() skipped so far.
  int heartbeats() const { return heartbeats_; }

  // Every config of the job failed, for `why`.
  void AnswerFailed(const ReceivedJob& job, const std::string& why) {
    Respond(job, [&](ConfigIndex, schema::EvalResult::Builder b) {
      b.setOk(false);
      b.setError(why);
    });
  }

  void Answer(const ReceivedJob& job, double latency_us, bool vary = true) {
    Respond(job, [&](ConfigIndex config, schema::EvalResult::Builder b) {
      b.setOk(true);
      b.setLatencyUs(latency_us + (vary ? static_cast<double>(config % 97) : 0.0));
    });
  }

  // The job could not run at all (a final chunk with a job error and no results).
  void AnswerJobError(const ReceivedJob& job, const std::string& why) {
    SendFinal(job, [&](schema::JobResult::Builder r) { r.setJobError(why); });
  }

  // The job's final result chunk, each config's result filled by `fill`.
  void Respond(const ReceivedJob& job, const std::function<void(ConfigIndex, schema::EvalResult::Builder)>& fill) {
    SendFinal(job, [&](schema::JobResult::Builder r) {
      auto list = r.initResults(static_cast<unsigned>(job.configs.size()));
      for (unsigned i = 0; i < job.configs.size(); ++i) {
        list[i].setConfigIndex(job.configs[i]);
        fill(job.configs[i], list[i]);
      }
    });
  }

  // The job's final chunk: its ids, and what `fill` adds.
  void SendFinal(const ReceivedJob& job, const std::function<void(schema::JobResult::Builder)>& fill) {
    wire::Outgoing msg;
    auto r = msg.Body().initJobResult();
    r.setTaskId(job.task_id);
    r.setJobId(job.job_id);
    r.setAttempt(job.attempt);
    r.setFinal(true);
    fill(r);
    EXPECT_TRUE(transport::Send(socket_, msg).ok());
  }

 private:
  zmq::socket_t socket_;
  int heartbeats_ = 0;
  std::vector<uint64_t> stopped_;
};

// -1 when there is no such gauge.
double GaugeValue(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].gauge.value;
  }
  return -1;
}

// Polls the gauge (set at the coordinator's heartbeat tick) until it reads `want`, for up to 1 s.
double AwaitGauge(prometheus::Registry& registry, const std::string& name, double want) {
  double v = GaugeValue(registry, name);
  for (int i = 0; i < 50 && v != want; ++i) {
    std::this_thread::sleep_for(20ms);
    v = GaugeValue(registry, name);
  }
  return v;
}

double CounterValue(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].counter.value;
  }
  return -1;
}

// The sample of family `name` with label=value, if there is one.
std::optional<prometheus::ClientMetric> Labeled(prometheus::Registry& registry, const std::string& name,
                                                const std::string& label, const std::string& value) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == label && l.value == value) return m;
      }
    }
  }
  return std::nullopt;
}

// -1 when there is no such sample.
double LabeledCounterValue(prometheus::Registry& registry, const std::string& name, const std::string& label,
                           const std::string& value) {
  auto m = Labeled(registry, name, label, value);
  return m ? m->counter.value : -1;
}
double LabeledGaugeValue(prometheus::Registry& registry, const std::string& name, const std::string& label,
                         const std::string& value) {
  auto m = Labeled(registry, name, label, value);
  return m ? m->gauge.value : -1;
}
double LabeledHistogramCount(prometheus::Registry& registry, const std::string& name, const std::string& label,
                             const std::string& value) {
  auto m = Labeled(registry, name, label, value);
  return m ? static_cast<double>(m->histogram.sample_count) : -1;
}

// The submission's status once it is done, polled for up to 5 s (its last results may
// still be on their way); else the last one read, nullopt when none could be.
std::optional<client::StatusView> AwaitDoneStatus(client::Client& client, uint64_t submission_id) {
  std::optional<client::StatusView> last;
  for (int i = 0; i < 250 && !(last && last->done); ++i) {
    if (i > 0) std::this_thread::sleep_for(20ms);
    auto st = client.GetStatus(submission_id);
    if (st.ok()) last = *st;
  }
  return last;
}

// Whether the submission is done within 5 s.
bool AwaitDone(client::Client& client, uint64_t submission_id) {
  std::optional<client::StatusView> st = AwaitDoneStatus(client, submission_id);
  return st && st->done;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  // One small MatMul, random search: the submission most tests script workers against.
  static client::SubmitSpec RandomSearch(uint64_t budget, uint32_t job_size = 0) {
    client::SubmitSpec spec;
    spec.ops = {SmallMatmul()};
    spec.strategy = "random";
    spec.budget = budget;
    spec.job_size = job_size;
    return spec;
  }

  // Two submissions that share a task: `mine` tunes the 32- and 48-row MatMuls, `theirs`
  // the 48-row one, which is one task for both. Empty outcomes when a submit failed.
  static std::pair<std::optional<client::SubmitOutcome>, std::optional<client::SubmitOutcome>> SubmitTwoSharingATask(
      client::Client& client) {
    client::SubmitSpec mine = RandomSearch(12, 1);
    mine.ops = {SmallMatmul(32), SmallMatmul(48)};
    auto a = client.Submit(mine);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    client::SubmitSpec theirs = RandomSearch(12, 1);
    theirs.ops = {SmallMatmul(48)};
    auto b = client.Submit(theirs);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!a.ok() || !b.ok()) return {};
    EXPECT_EQ(b->task_ids[0], a->task_ids[1]) << "the 48-row MatMul is one task for both";
    return {*a, *b};
  }

  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = std::filesystem::temp_directory_path() / ("tunefleet-coord-" + std::to_string(getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    store_ = std::move(Store::Open(dir_.string()).value());
    options_.client_endpoint = "inproc://clients-" + name;
    options_.worker_endpoint = "inproc://workers-" + name;
    auto c = Coordinator::Create(options_, *store_, catalog_, clock_, registry_, ctx_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    coordinator_ = std::move(c).value();
    thread_ = std::thread([this] { EXPECT_TRUE(coordinator_->Run().ok()); });
  }
  void TearDown() override {
    StopCoordinator();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void StopCoordinator() {
    if (!coordinator_) return;
    coordinator_->Stop();
    thread_.join();
    coordinator_.reset();
  }
  // A new coordinator on the same RocksDB folder: what a restarted process sees.
  void Restart() {
    StopCoordinator();
    // New inproc names: ZeroMQ releases the old ones asynchronously after close.
    options_.client_endpoint += "-restarted";
    options_.worker_endpoint += "-restarted";
    auto c = Coordinator::Create(options_, *store_, catalog_, clock_, registry2_, ctx_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    coordinator_ = std::move(c).value();
    thread_ = std::thread([this] { EXPECT_TRUE(coordinator_->Run().ok()); });
  }

  std::filesystem::path dir_;
  SocCatalog catalog_ = SocCatalog::Builtin();
  TickingClock clock_;
  prometheus::Registry registry_;
  prometheus::Registry registry2_;  // the restarted coordinator's
  zmq::context_t ctx_{1};
  CoordinatorOptions options_;  // heartbeats every 1 s, a worker dead after 3 missed
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::thread thread_;
};

TEST_F(CoordinatorTest, RequeuesAJobWhoseWorkerMissedThreeHeartbeats) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(4, 1);
  ASSERT_TRUE(client.Submit(spec).ok());

  ScriptedWorker silent(ctx_, options_.worker_endpoint, "silent");
  auto lost = silent.NextJob();
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->attempt, 1u);
  ScriptedWorker alive(ctx_, options_.worker_endpoint, "alive");
  auto second = alive.NextJob();
  ASSERT_TRUE(second);

  // 2 s of silence from both, then `alive` speaks; 1.5 s more: only `silent` is past 3 s.
  clock_.Advance(2000ms);
  alive.Heartbeat();
  std::this_thread::sleep_for(200ms);
  clock_.Advance(1500ms);
  alive.Heartbeat();
  std::this_thread::sleep_for(200ms);
  alive.Answer(*second, 100);

  auto requeued = alive.NextJob();
  ASSERT_TRUE(requeued);
  EXPECT_EQ(requeued->attempt, 2u) << "the lost job comes back with attempt+1";
  EXPECT_EQ(requeued->configs, lost->configs) << "and with the same configs";
  EXPECT_EQ(CounterValue(registry_, "tunefleet_jobs_requeued_total"), 1.0);
}

// Found by an audit: a request that held the loop past the heartbeat expiry (a 100,000-op
// submission, a big cancel) made every worker look dead, though their heartbeats sat
// unread in the socket, and each lost an attempt of its jobs. A heartbeat that arrived
// while the loop was busy keeps its worker.
TEST_F(CoordinatorTest, AWorkerWhoseHeartbeatWaitsUnreadBehindALongRequestIsNotDropped) {
  client::Client client(ctx_, options_.client_endpoint);
  ASSERT_TRUE(client.Submit(RandomSearch(4, 1)).ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  // A lookup of 50,000 keys, encoded before and sent on a socket of its own, holds the
  // loop for a while (no worker message is read meanwhile): 4 s pass on the
  // coordinator's clock, and the worker's heartbeat arrives.
  wire::Outgoing lookup;
  lookup.Envelope().setRequestId(1);
  auto keys = lookup.Body().initLookup().initKeys(50'000);
  for (unsigned i = 0; i < keys.size(); ++i) wire::FillOpKey(keys[i], SmallMatmul(i + 1));
  zmq::socket_t raw = transport::MakeSocket(ctx_, zmq::socket_type::dealer);
  ASSERT_TRUE(transport::Connect(raw, options_.client_endpoint).ok());
  ASSERT_TRUE(transport::Send(raw, lookup).ok());
  std::this_thread::sleep_for(100ms);
  clock_.Advance(4000ms);
  w.Heartbeat();
  const auto sent = std::chrono::steady_clock::now();
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(60000)), 1) << "the lookup's reply";
  const auto held = std::chrono::steady_clock::now() - sent;
  ASSERT_GT(held, 20ms) << "the loop was not held after the heartbeat was sent: the test proves nothing";
  w.Answer(*job, 10);
  std::this_thread::sleep_for(300ms);
  auto workers = client.ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status().ToString();
  EXPECT_EQ(workers->size(), 1u);
  EXPECT_EQ(CounterValue(registry_, "tunefleet_jobs_requeued_total"), 0.0)
      << "the worker was dropped for a heartbeat it had sent";
  auto next = w.NextJob();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->attempt, 1u);
}

TEST_F(CoordinatorTest, ALateDuplicateResultIsCountedAndDropped) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(3, 1);
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  std::vector<ReceivedJob> jobs;
  for (int i = 0; i < 3; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job) << "job " << i;
    w.Answer(*job, 50);
    jobs.push_back(*job);
  }
  w.Answer(jobs[0], 1);  // the same (task, config) again, now "faster": must be ignored
  std::this_thread::sleep_for(300ms);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->tasks.size(), 1u);
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 3u) << "budget accounting is exact";
  EXPECT_GE(st->tasks[0].best_latency_us, 50.0) << "a duplicate must not change the result";
  EXPECT_EQ(CounterValue(registry_, "tunefleet_duplicate_results_total"), 1.0);
}

TEST_F(CoordinatorTest, ResultsFromAWorkerThatDoesNotHoldTheJobAreRefused) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(2, 1);
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok());
  ScriptedWorker holder(ctx_, options_.worker_endpoint, "holder");
  auto job = holder.NextJob();
  ASSERT_TRUE(job);
  ScriptedWorker other(ctx_, options_.worker_endpoint, "other");
  auto own = other.NextJob();
  ASSERT_TRUE(own);
  other.AnswerFlat(*job, 1);  // claims the holder's job, absurdly fast
  ReceivedJob wrong_attempt = *job;
  wrong_attempt.attempt = 7;
  holder.AnswerFlat(wrong_attempt, 2);  // the right worker, but an attempt it was never given
  std::this_thread::sleep_for(200ms);
  holder.AnswerFlat(*job, 50);
  other.AnswerFlat(*own, 60);
  std::this_thread::sleep_for(300ms);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 2u);
  EXPECT_EQ(st->tasks[0].best_latency_us, 50.0) << "the forged 1 us must not be recorded";
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_rejected_results_total", "reason", "not_leased"), 2.0);
}

TEST_F(CoordinatorTest, ALatencyThatIsNotPositiveAndFiniteIsRecordedAsAFailedEvaluation) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(4, 1);
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  const double answers[] = {std::nan(""), -5, 0, 40};
  for (double latency : answers) {
    auto job = w.NextJob();
    ASSERT_TRUE(job) << "no job to answer with " << latency;
    w.AnswerFlat(*job, latency);
  }
  std::this_thread::sleep_for(300ms);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 4u);
  EXPECT_EQ(st->tasks[0].failed_configs, 3u);
  EXPECT_EQ(st->tasks[0].best_latency_us, 40.0);
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_rejected_results_total", "reason", "invalid_latency"), 3.0);
  auto kb = client.Lookup({SmallMatmul()});
  ASSERT_TRUE(kb.ok() && kb->size() == 1 && (*kb)[0].has_value());
  EXPECT_EQ((*kb)[0]->best_latency_us, 40.0) << "the knowledge base keeps only a real latency";
}

TEST_F(CoordinatorTest, ALateResultOfAnExpiredLeaseIsRecordedAndItsRequeuedCopyIsNotSentAgain) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(1);
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok());
  ScriptedWorker slow(ctx_, options_.worker_endpoint, "slow");
  auto job = slow.NextJob();
  ASSERT_TRUE(job);
  // Alive (heartbeating) but past the lease's 30 s floor: the job is requeued.
  for (int i = 0; i < 16; ++i) {
    clock_.Advance(2000ms);
    slow.Heartbeat();
    std::this_thread::sleep_for(30ms);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(CounterValue(registry_, "tunefleet_jobs_requeued_total"), 1.0);
  slow.AnswerFlat(*job, 50);
  EXPECT_FALSE(slow.NextJob(500ms)) << "the requeued copy holds only a config already recorded";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 1u);
  EXPECT_EQ(st->tasks[0].best_latency_us, 50.0);
}

TEST_F(CoordinatorTest, ARunningTaskIsSharedOnlyBySubmissionsThatAskForTheSameSearch) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(3);
  auto first = client.Submit(spec);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto same = client.Submit(spec);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->task_ids, first->task_ids) << "the same search is not run twice";
  client::SubmitSpec bigger = spec;
  bigger.budget = 30;
  auto more = client.Submit(bigger);
  ASSERT_TRUE(more.ok());
  EXPECT_NE(more->task_ids, first->task_ids) << "a budget of 30 must not end after the first submission's 3";
  client::SubmitSpec other = spec;
  other.strategy = "annealing";
  auto annealing = client.Submit(other);
  ASSERT_TRUE(annealing.ok());
  EXPECT_NE(annealing->task_ids, first->task_ids);
  EXPECT_NE(annealing->task_ids, more->task_ids);
}

TEST_F(CoordinatorTest, LookupOfAnUnknownKeyIsAMissAndTheAnswerNamesNoEntry) {
  client::Client client(ctx_, options_.client_endpoint);
  auto r = client.Lookup({SmallMatmul()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_FALSE((*r)[0].has_value());
}

// A framework's compile step spells an op as its own exporter does: what a submission
// tuned under one spelling is found under another that means the same op.
TEST_F(CoordinatorTest, ALookupFindsWhatADifferentlySpeltSubmissionTuned) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec = RandomSearch(1, 1);
  spec.ops[0].attrs = {{"transpose_a", "false"}, {"transpose_b", "0"}};
  spec.ops[0].inputs[0].dtype = "fp16";
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  w.Answer(*job, 10);
  std::this_thread::sleep_for(200ms);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok() && st->done);
  EXPECT_EQ(st->tasks[0].key, SmallMatmul()) << "tuned under the canonical key";
  OpKey other = SmallMatmul();
  other.attrs = {{"transpose_a", "0"}};
  auto found = client.Lookup({SmallMatmul(), other});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE((*found)[0].has_value() && (*found)[1].has_value());
  OpKey transposed = SmallMatmul();
  transposed.inputs[1].shape = {64, 32};
  transposed.attrs = {{"transpose_b", "true"}};
  auto another_op = client.Lookup({transposed});
  ASSERT_TRUE(another_op.ok()) << another_op.status().ToString();
  EXPECT_FALSE((*another_op)[0].has_value()) << "a transposed B is another op";
}

TEST_F(CoordinatorTest, TheLookupMetricCountsLookedUpKeysNotSubmissionsAnsweredFromTheKnowledgeBase) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto first = client.Submit(RandomSearch(1, 1));
  ASSERT_TRUE(first.ok());
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  w.Answer(*job, 10);
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(client.GetStatus(first->submission_id)->done);
  auto again = client.Submit(RandomSearch(1, 1));
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->from_cache.at(0)) << "answered from the knowledge base";
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "done"), 2.0)
      << "a task answered from the knowledge base is done from the start";
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "queued"), 0.0);
  auto found = client.Lookup({SmallMatmul(), SmallMatmul(48)});
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE((*found)[0].has_value());
  EXPECT_FALSE((*found)[1].has_value());
  // Hit ratio is what frameworks' compile-time lookups see: counting a submission's hits
  // (and never its misses) made it look better than it was.
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_lookups_total", "result", "hit"), 1.0);
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_lookups_total", "result", "miss"), 1.0);
  // Every request is timed by its kind (the D of RED on the dashboard).
  EXPECT_EQ(LabeledHistogramCount(registry_, "tunefleet_client_request_duration_seconds", "kind", "submit"), 2.0);
  EXPECT_EQ(LabeledHistogramCount(registry_, "tunefleet_client_request_duration_seconds", "kind", "lookup"), 1.0);
  EXPECT_EQ(LabeledHistogramCount(registry_, "tunefleet_client_request_duration_seconds", "kind", "status"), 1.0);
}

// `tunefleet cache export | import` through the client socket: pages that cover the
// knowledge base, an import that replaces only with a faster entry, refusals by position,
// all or nothing, and a submission of an imported op answered from the knowledge base.
TEST_F(CoordinatorTest, TheKnowledgeBaseIsExportedInPagesAndImportedEntriesAreCheckedAndMerged) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  for (int64_t m : {32, 48, 64}) {
    client::SubmitSpec spec = RandomSearch(1, 1);
    spec.ops = {SmallMatmul(m)};
    ASSERT_TRUE(client.Submit(spec).ok());
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Answer(*job, 40);
  }
  std::this_thread::sleep_for(200ms);
  std::vector<KbEntry> exported;
  std::string after;
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 5) << "paging does not end";
    auto page = client.ExportKb(after, /*limit=*/1);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_LE(page->entries.size(), 1u);
    exported.insert(exported.end(), page->entries.begin(), page->entries.end());
    if (page->done) break;
    after = page->next;
  }
  ASSERT_EQ(exported.size(), 3u);

  // The first entry 10 us faster, the second slower, the third's index wrong.
  std::vector<KbEntry> edited = exported;
  edited[0].best_latency_us -= 10;
  edited[1].best_latency_us += 10;
  ++edited[2].best_index;
  auto refused = client.ImportKb(edited, /*dry_run=*/false, /*skip_refused=*/false);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  ASSERT_EQ(refused->refused.size(), 1u);
  EXPECT_EQ(refused->refused[0].first, 2u);
  EXPECT_NE(refused->refused[0].second.find("names another config"), std::string::npos) << refused->refused[0].second;
  EXPECT_EQ(refused->added + refused->replaced + refused->kept, 0u);
  auto unchanged = client.Lookup({exported[0].key});
  ASSERT_TRUE(unchanged.ok());
  EXPECT_DOUBLE_EQ((*unchanged)[0]->best_latency_us, exported[0].best_latency_us) << "a refusal writes nothing";

  auto dry = client.ImportKb(edited, /*dry_run=*/true, /*skip_refused=*/true);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->replaced, 1u);
  EXPECT_EQ(dry->kept, 1u);
  auto merged = client.ImportKb(edited, /*dry_run=*/false, /*skip_refused=*/true);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->replaced, 1u);
  EXPECT_EQ(merged->kept, 1u);
  auto after_import = client.Lookup({exported[0].key, exported[1].key});
  ASSERT_TRUE(after_import.ok());
  EXPECT_DOUBLE_EQ((*after_import)[0]->best_latency_us, exported[0].best_latency_us - 10);
  EXPECT_DOUBLE_EQ((*after_import)[1]->best_latency_us, exported[1].best_latency_us);

  // An op only an import tuned is answered from the knowledge base.
  KbEntry fresh = exported[0];
  fresh.key = SmallMatmul(96);
  ASSERT_TRUE(client.ImportKb({fresh}, false, false).ok());
  client::SubmitSpec spec = RandomSearch(1, 1);
  spec.ops = {SmallMatmul(96)};
  auto cached = client.Submit(spec);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->from_cache.at(0));

  auto too_many = client.ImportKb(std::vector<KbEntry>(protocol::kKbImportMax + 1, exported[0]), false, false);
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("send them in parts"), std::string::npos);
  EXPECT_EQ(LabeledHistogramCount(registry_, "tunefleet_client_request_duration_seconds", "kind", "kb_import"), 5.0);
  // Written or kept: real imports only, the merge (1 replaced, 1 kept) and the fresh entry
  // (1 added). Refused: every request, the dry run's too (the all-or-nothing request, the
  // dry run and the merge: 1 each).
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_kb_imported_entries_total", "outcome", "added"), 1.0);
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_kb_imported_entries_total", "outcome", "replaced"), 1.0);
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_kb_imported_entries_total", "outcome", "kept"), 1.0);
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_kb_imported_entries_total", "outcome", "refused"), 3.0);
}

// A worker serves the highest priority first, lower ones only with what it leaves; a
// running task shared by a higher-priority submission is served in that one's turns.
TEST_F(CoordinatorTest, AHigherPrioritySubmissionIsServedFirstAlsoForATaskItShares) {
  client::Client client(ctx_, options_.client_endpoint);
  auto submit = [&](int64_t m, int32_t priority) {
    client::SubmitSpec spec = RandomSearch(4, 1);
    spec.ops = {SmallMatmul(m)};
    spec.priority = priority;
    auto sub = client.Submit(spec);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    return sub.ok() ? sub->task_ids.at(0) : 0;
  };
  const uint64_t background = submit(32, -1);
  const uint64_t normal = submit(48, 0);
  const uint64_t urgent = submit(64, 5);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  std::vector<uint64_t> order;
  // The worker has one slot: nothing more is handed out until a job is answered.
  std::optional<ReceivedJob> held;
  auto serve = [&](int jobs) {
    for (int i = 0; i < jobs; ++i) {
      if (held) w.Answer(*held, 40);
      held = w.NextJob();
      ASSERT_TRUE(held);
      order.push_back(held->task_id);
    }
  };
  serve(5);
  EXPECT_EQ(order, (std::vector<uint64_t>{urgent, urgent, urgent, urgent, normal}));
  // The background task, shared by a submission of priority 9, now goes before `normal`.
  EXPECT_EQ(submit(32, 9), background) << "the same search is shared, not repeated";
  order.clear();
  serve(7);
  EXPECT_EQ(order, (std::vector<uint64_t>{background, background, background, background, normal, normal, normal}));
}

// Submissions of one priority take turns job by job, each serving its own tasks
// round-robin: a 3-op submission does not get three turns to a 1-op one's one.
TEST_F(CoordinatorTest, SubmissionsOfOnePriorityTakeTurnsWhateverTheirSize) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec big = RandomSearch(2, 1);
  big.ops = {SmallMatmul(32), SmallMatmul(48), SmallMatmul(64)};
  auto a = client.Submit(big);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  client::SubmitSpec small = RandomSearch(4, 1);
  small.ops = {SmallMatmul(80)};
  auto b = client.Submit(small);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  const std::vector<uint64_t> order = w.ServeInOrder(10);
  const auto& t = a->task_ids;
  const uint64_t s = b->task_ids.at(0);
  EXPECT_EQ(order, (std::vector<uint64_t>{t[0], s, t[1], s, t[2], s, t[0], s, t[1], t[2]}));
  // The task gauges follow every task to its end (they are kept incrementally).
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "done"), 4.0);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "running"), 0.0);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "queued"), 0.0);
}

// A higher-priority submission with nothing for this worker (its op's SoC is served by no
// worker) leaves the lower level taking turns: its turn used to pass to one lower
// submission only, which then got every job until it was done.
TEST_F(CoordinatorTest, ALevelBelowASubmissionWithNothingForTheWorkerStillTakesTurns) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec elsewhere = RandomSearch(4, 1);
  elsewhere.ops[0].soc = "Ascend910B4";  // no worker serves it
  elsewhere.priority = 10;
  ASSERT_TRUE(client.Submit(elsewhere).ok());
  std::vector<uint64_t> ids;
  for (int64_t m : {32, 48, 64}) {
    client::SubmitSpec spec = RandomSearch(3, 1);
    spec.ops = {SmallMatmul(m)};
    auto sub = client.Submit(spec);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    ids.push_back(sub->task_ids.at(0));
  }
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  EXPECT_EQ(w.ServeInOrder(9),
            (std::vector<uint64_t>{ids[0], ids[1], ids[2], ids[0], ids[1], ids[2], ids[0], ids[1], ids[2]}));
}

// A submission whose ops are already running for others gets one turn, not one per op:
// its tasks are served in its own turns, at its own priority.
TEST_F(CoordinatorTest, ASubmissionOfSharedOpsTakesOneTurnAtItsPriority) {
  client::Client client(ctx_, options_.client_endpoint);
  std::vector<OpKey> ops;
  for (int64_t m : {32, 48, 64, 80}) {
    client::SubmitSpec spec = RandomSearch(6, 1);
    spec.ops = {SmallMatmul(m)};
    ASSERT_TRUE(client.Submit(spec).ok());
    ops.push_back(SmallMatmul(m));
  }
  client::SubmitSpec all = RandomSearch(6, 1);
  all.ops = ops;
  all.priority = 10;
  auto shared = client.Submit(all);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  client::SubmitSpec one = RandomSearch(6, 1);
  one.ops = {SmallMatmul(96)};
  one.priority = 10;
  auto single = client.Submit(one);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  const uint64_t alone = single->task_ids.at(0);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  const std::vector<uint64_t> order = w.ServeInOrder(8);
  EXPECT_EQ(std::count(order.begin(), order.end(), alone), 4) << "the 1-op submission gets every other job, as the 4-op one does";
}

// A lower-priority task whose time budget runs out ends although higher-priority work
// keeps every slot busy: the end of a time budget used to be noticed only when a slot
// reached the task's level.
TEST_F(CoordinatorTest, ALowerPriorityTaskWhoseTimeIsSpentEndsWhileHigherWorkRuns) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec low = RandomSearch(1000, 1);
  low.budget_seconds = 2;
  auto l = client.Submit(low);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto first = w.NextJob();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->task_id, l->task_ids.at(0));
  client::SubmitSpec high = RandomSearch(1000, 1);
  high.ops = {SmallMatmul(64)};
  high.priority = 5;
  auto h = client.Submit(high);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::this_thread::sleep_for(100ms);
  w.Answer(*first, 40);
  for (int i = 0; i < 6; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    EXPECT_EQ(job->task_id, h->task_ids.at(0)) << "job " << i;
    clock_.Advance(1000ms);
    w.Answer(*job, 40);
  }
  std::this_thread::sleep_for(200ms);
  auto st = client.GetStatus(l->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done) << "its 2 s were spent 4 s ago";
  EXPECT_EQ(st->tasks[0].evaluated, 1u);
}

// Submission records written before they kept their priority read 0: the tasks they
// created carry it, and a restarted coordinator serves them at it.
TEST_F(CoordinatorTest, ASubmissionFromBeforePrioritiesWereKeptIsServedAtItsTasksPriority) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec urgent = RandomSearch(3, 1);
  urgent.priority = 7;
  auto u = client.Submit(urgent);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  client::SubmitSpec plain = RandomSearch(3, 1);
  plain.ops = {SmallMatmul(48)};
  auto p = client.Submit(plain);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  StopCoordinator();
  auto subs = store_->LoadSubmissions();
  ASSERT_TRUE(subs.ok()) << subs.status().ToString();
  for (SubmissionRecord sub : *subs) {
    if (sub.submission_id != u->submission_id) continue;
    sub.priority = 0;  // as the build before wrote it
    ASSERT_TRUE(store_->PutSubmission(sub, {}).ok());
  }
  Restart();
  client::Client again(ctx_, options_.client_endpoint);
  auto st = again.GetStatus(u->submission_id);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->priority, 7);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  const uint64_t ut = u->task_ids.at(0), pt = p->task_ids.at(0);
  EXPECT_EQ(w.ServeInOrder(6), (std::vector<uint64_t>{ut, ut, ut, pt, pt, pt}));
}

// A worker that registers again gets its slots back once: the late end of a job sent to
// its earlier registration (requeued when it registered) gives back no slot, or it would
// be sent more jobs than it has slots.
TEST_F(CoordinatorTest, ALateJobOfAnEarlierRegistrationGivesBackNoSlot) {
  client::Client client(ctx_, options_.client_endpoint);
  ASSERT_TRUE(client.Submit(RandomSearch(6, 1)).ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto old_job = w.NextJob();
  ASSERT_TRUE(old_job);
  w.Reregister();
  auto requeued = w.NextJob();
  ASSERT_TRUE(requeued) << "the new registration's one slot takes the requeued job";
  w.Answer(*old_job, 40);
  EXPECT_FALSE(w.NextJob(500ms)) << "a second job while the one slot still runs the requeued copy";
  w.Answer(*requeued, 40);
  EXPECT_TRUE(w.NextJob(2s)) << "the slot is free again";
}

// A worker restarted under the same --id (a container restarted in its pod) registers
// from a new connection: its earlier registration, whose connection is closed, leaves the
// list at once and its job goes to the new one (the clock never moves here, so no missed
// heartbeat could have dropped it). A namesake still connected is a second live worker and
// stays.
TEST_F(CoordinatorTest, AWorkerRestartedUnderItsIdReplacesItsClosedRegistrationAtOnce) {
  client::Client client(ctx_, options_.client_endpoint);
  ASSERT_TRUE(client.Submit(RandomSearch(4, 1)).ok());
  auto killed = std::make_unique<ScriptedWorker>(ctx_, options_.worker_endpoint, "pod-1", 1, "connection-1");
  auto job = killed->NextJob();
  ASSERT_TRUE(job);
  killed->Close();
  ScriptedWorker restarted(ctx_, options_.worker_endpoint, "pod-1", 1, "connection-2");
  // The probe may take a turn or two while ZeroMQ closes the old connection.
  auto list = client.ListWorkers();
  for (int i = 0; i < 50 && list.ok() && list->size() != 1; ++i) {
    std::this_thread::sleep_for(20ms);
    list = client.ListWorkers();
  }
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front().id, "pod-1");
  // Its one slot may have taken a new job before the probe answered; the requeued one
  // comes then next.
  bool requeued = false;
  for (int i = 0; i < 2 && !requeued; ++i) {
    auto next = restarted.NextJob();
    ASSERT_TRUE(next) << "job " << i;
    requeued = next->attempt == 2 && next->configs == job->configs;
    restarted.Answer(*next, 40);
  }
  EXPECT_TRUE(requeued) << "the closed registration's job, requeued when its namesake registered";

  ScriptedWorker namesake(ctx_, options_.worker_endpoint, "pod-1", 1, "connection-3");
  for (int i = 0; i < 50 && list->size() < 2; ++i) {
    std::this_thread::sleep_for(20ms);
    list = client.ListWorkers();
    ASSERT_TRUE(list.ok());
  }
  EXPECT_EQ(list->size(), 2u) << "both registrations are connected";
}

// `tunefleet workers`: each registered worker with its slots, the busy ones and the jobs
// it completed.
TEST_F(CoordinatorTest, TheWorkerListShowsSlotsBusySlotsAndCompletedJobs) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker a(ctx_, options_.worker_endpoint, "wa", 2);
  ScriptedWorker b(ctx_, options_.worker_endpoint, "wb", 3);
  std::vector<client::WorkerView> list;
  for (int i = 0; i < 50 && list.size() < 2; ++i) {
    std::this_thread::sleep_for(20ms);
    auto got = client.ListWorkers();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    list = std::move(got).value();
  }
  ASSERT_EQ(list.size(), 2u);
  std::map<std::string, client::WorkerView> by_id;
  for (auto& w : list) by_id[w.id] = w;
  EXPECT_EQ(by_id["wa"].slots, 2u);
  EXPECT_EQ(by_id["wb"].slots, 3u);
  EXPECT_EQ(by_id["wb"].socs, std::vector<std::string>{"Ascend910B2"});
  EXPECT_EQ(by_id["wa"].busy_slots + by_id["wb"].busy_slots, 0u);

  ASSERT_TRUE(client.Submit(RandomSearch(1, 1)).ok());
  std::optional<ReceivedJob> job = a.NextJob(1s);
  ScriptedWorker* holder = &a;
  if (!job) {
    job = b.NextJob(1s);
    holder = &b;
  }
  ASSERT_TRUE(job);
  const std::string id = holder == &a ? "wa" : "wb";
  auto busy = client.ListWorkers();
  ASSERT_TRUE(busy.ok());
  for (const auto& w : *busy) EXPECT_EQ(w.busy_slots, w.id == id ? 1u : 0u) << w.id;
  holder->Answer(*job, 40);
  std::this_thread::sleep_for(200ms);
  auto after = client.ListWorkers();
  ASSERT_TRUE(after.ok());
  for (const auto& w : *after) {
    EXPECT_EQ(w.busy_slots, 0u) << w.id;
    EXPECT_EQ(w.jobs_completed, w.id == id ? 1u : 0u) << w.id;
  }
}

TEST_F(CoordinatorTest, StatusNamesEachOpAsTheSubmissionDidAlsoAfterARestart) {
  client::SubmitSpec spec = RandomSearch(5, 1);
  spec.ops = {SmallMatmul(32), SmallMatmul(48), SmallMatmul(32)};
  spec.names = {"attn.q", "attn.k", "attn.v"};  // q and v share one task
  {
    client::Client client(ctx_, options_.client_endpoint);
    spec.names.pop_back();
    auto wrong = client.Submit(spec);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().message().find("3 ops but 2 names"), std::string::npos) << wrong.status().ToString();
    spec.names.push_back("attn.v");
    ASSERT_TRUE(client.Submit(spec).ok());
  }
  Restart();
  client::Client client(ctx_, options_.client_endpoint);
  auto st = client.GetStatus(1);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->tasks.size(), 3u);
  EXPECT_EQ(st->tasks[0].name, "attn.q");
  EXPECT_EQ(st->tasks[1].name, "attn.k");
  EXPECT_EQ(st->tasks[2].name, "attn.v");
  EXPECT_EQ(st->tasks[0].task_id, st->tasks[2].task_id);
}

// Cancel stops the tasks only its submission waits on: no job of them goes out again, a
// result of one already out is dropped, nothing reaches the knowledge base, and a restart
// keeps them cancelled. A task another submission shares runs on to its end.
// A cancel writes its submission first, synced, and its tasks unsynced after (a cancel of
// 100,000 tasks paid an fsync each and stalled the loop past its watchdog, and a restart
// then ran tasks of a submission that read cancelled): a crash in between leaves a
// cancelled submission with running tasks, which the restarted coordinator cancels --
// except one another submission still waits on.
TEST_F(CoordinatorTest, ACancelCutShortByACrashIsFinishedOnResume) {
  client::Client client(ctx_, options_.client_endpoint);
  auto [a, b] = SubmitTwoSharingATask(client);
  ASSERT_TRUE(a && b);
  StopCoordinator();
  // What the crash left: the submission written cancelled, its tasks not yet.
  auto subs = store_->LoadSubmissions();
  ASSERT_TRUE(subs.ok());
  for (SubmissionRecord& s : *subs) {
    if (s.submission_id != a->submission_id) continue;
    s.cancelled = true;
    ASSERT_TRUE(store_->PutSubmission(s, {}).ok());
  }
  Restart();
  client::Client again(ctx_, options_.client_endpoint);
  auto st = again.GetStatus(a->submission_id);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->cancelled);
  EXPECT_EQ(st->tasks[0].state, "cancelled") << "only the cancelled submission waited on it";
  EXPECT_EQ(st->tasks[1].state, "queued") << "the other submission waits on it (no worker yet)";
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  for (int i = 0; i < 3; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    EXPECT_EQ(job->task_id, a->task_ids[1]) << "no job of the cancelled task";
    w.Answer(*job, 10);
  }
}

TEST_F(CoordinatorTest, CancelStopsTheSubmissionsOwnTasksAndLeavesSharedOnesRunning) {
  client::Client client(ctx_, options_.client_endpoint);
  auto [a, b] = SubmitTwoSharingATask(client);
  ASSERT_TRUE(a && b);
  const uint64_t own = a->task_ids[0], shared = a->task_ids[1];

  ScriptedWorker w(ctx_, options_.worker_endpoint, "w", 2);
  std::vector<ReceivedJob> out;
  for (int i = 0; i < 2; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    out.push_back(*job);
  }
  auto cancelled = client.Cancel(a->submission_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->cancelled, 1u);
  EXPECT_EQ(cancelled->shared, 1u);
  EXPECT_EQ(cancelled->finished, 0u);
  auto st = client.GetStatus(a->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->tasks[0].state, "cancelled");
  EXPECT_EQ(st->tasks[1].state, "running");
  EXPECT_TRUE(st->cancelled);
  EXPECT_TRUE(st->done) << "a cancelled submission waits on none of its tasks, the shared one running on";
  auto other = client.GetStatus(b->submission_id);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->cancelled);
  EXPECT_FALSE(other->done);
  auto watched = client.Watch(a->submission_id, 0, 0ms);
  ASSERT_TRUE(watched.ok()) << watched.status().ToString();
  EXPECT_TRUE(watched->done) << "a watch of the cancelled submission ends";
  const uint64_t own_evaluated = st->tasks[0].evaluated;

  // The jobs out report (the cancelled task's result is dropped); every job after that
  // is the shared task's, until its budget is spent.
  for (const ReceivedJob& job : out) w.Answer(job, 50);
  int later = 0;
  while (auto job = w.NextJob(1s)) {
    EXPECT_EQ(job->task_id, shared) << "a job of the cancelled task went out";
    w.Answer(*job, 40);
    ASSERT_LT(++later, 100);
  }
  st = client.GetStatus(a->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->tasks[0].state, "cancelled");
  EXPECT_EQ(st->tasks[0].evaluated, own_evaluated) << "a result after the cancel was recorded";
  double own_out = 0;
  for (const ReceivedJob& job : out) own_out += job.task_id == own ? static_cast<double>(job.configs.size()) : 0;
  ASSERT_GT(own_out, 0) << "tasks take turns: one of the two jobs out is the cancelled task's";
  EXPECT_EQ(w.stopped(), std::vector<uint64_t>{own}) << "the worker holding its job was told to stop that task";
  EXPECT_EQ(LabeledCounterValue(registry_, "tunefleet_rejected_results_total", "reason", "cancelled"), own_out);
  EXPECT_EQ(st->tasks[1].state, "done");
  EXPECT_EQ(st->tasks[1].evaluated, 12u);
  EXPECT_TRUE(st->done);
  auto found = client.Lookup({SmallMatmul(32), SmallMatmul(48)});
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE((*found)[0].has_value()) << "a cancelled search's best went into the knowledge base";
  EXPECT_TRUE((*found)[1].has_value());

  auto again = client.Cancel(a->submission_id);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cancelled, 0u);
  EXPECT_EQ(again->finished, 2u);
  auto unknown = client.Cancel(999);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);

  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "cancelled"), 1.0);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "failed"), 0.0) << "a cancel is not a failure";

  Restart();
  client::Client after(ctx_, options_.client_endpoint);
  st = after.GetStatus(a->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->tasks[0].task_id, own);
  EXPECT_EQ(st->tasks[0].state, "cancelled") << "the cancel was not persisted";

  // Two identical submissions share a task: cancelling one keeps it for the other, and
  // cancelling the other too stops it -- also across a restart in between, since a
  // cancelled submission waits on nothing.
  client::SubmitSpec twice = RandomSearch(50, 1);
  twice.ops = {SmallMatmul(64)};
  auto c = after.Submit(twice);
  auto d = after.Submit(twice);
  ASSERT_TRUE(c.ok() && d.ok());
  ASSERT_EQ(c->task_ids, d->task_ids);
  auto first_cancel = after.Cancel(c->submission_id);
  ASSERT_TRUE(first_cancel.ok());
  EXPECT_EQ(first_cancel->shared, 1u);
  Restart();
  client::Client last(ctx_, options_.client_endpoint);
  auto kept = last.GetStatus(c->submission_id);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->cancelled && kept->done) << "after a restart too, while submission d still waits on the task";
  EXPECT_NE(kept->tasks[0].state, "cancelled");
  auto second_cancel = last.Cancel(d->submission_id);
  ASSERT_TRUE(second_cancel.ok());
  EXPECT_EQ(second_cancel->cancelled, 1u) << "nothing waits on the task any more";
  EXPECT_EQ(second_cancel->shared, 0u);
  EXPECT_EQ(last.GetStatus(c->submission_id)->tasks[0].state, "cancelled");
}

// A finished task releases its search state but status still names its best config, as
// decoded from the op's space -- right after it finished and after a restart.
TEST_F(CoordinatorTest, AFinishedTasksStatusNamesItsBestConfigAlsoAfterARestart) {
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(4, 1));
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  ASSERT_EQ(w.ServeInOrder(4, 100, 10).size(), 4u);
  std::this_thread::sleep_for(300ms);
  auto problem = MakeTuningProblem(SmallMatmul(), **catalog_.Find("Ascend910B2"));
  ASSERT_TRUE(problem.ok());
  auto expect_named = [&](const client::StatusView& st) {
    ASSERT_EQ(st.tasks.size(), 1u);
    ASSERT_TRUE(st.tasks[0].has_best);
    const Config best = problem->space.Decode(st.tasks[0].best_index);
    ASSERT_EQ(st.tasks[0].best_config.size(), best.size());
    for (size_t i = 0; i < best.size(); ++i) {
      EXPECT_EQ(st.tasks[0].best_config[i].first, problem->space.params()[i].name);
      EXPECT_EQ(st.tasks[0].best_config[i].second, best[i]);
    }
  };
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->tasks[0].state, "done");
  expect_named(*st);
  Restart();
  // A restart brings only unfinished tasks into memory; a finished one's status is its
  // record's, which names its best config.
  EXPECT_EQ(GaugeValue(registry2_, "tunefleet_tasks_in_memory"), 0);
  EXPECT_EQ(GaugeValue(registry2_, "tunefleet_submissions_in_memory"), 0) << "all of its tasks finished";
  client::Client after(ctx_, options_.client_endpoint);
  st = after.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  expect_named(*st);
  // A record written before records named it: named through the op's space.
  StopCoordinator();
  auto rec = store_->GetTask(sub->task_ids[0]);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_FALSE((*rec)->best_config.empty());
  (*rec)->best_config.clear();
  ASSERT_TRUE(store_->PutTask(**rec).ok());
  Restart();
  client::Client older(ctx_, options_.client_endpoint);
  st = older.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  expect_named(*st);
}

// A restart reads the open index, not every record ever written (a long history made it
// as slow as it was long): a finished task's record, even a corrupt one, is not read
// until someone asks for it, and the unfinished task beside it resumes and ends.
TEST_F(CoordinatorTest, ARestartReadsOnlyTheOpenTasksSoAnOldCorruptRecordDoesNotStopIt) {
  client::Client client(ctx_, options_.client_endpoint);
  auto finished = client.Submit(RandomSearch(2, 1));
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  {
    ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
    ASSERT_EQ(w.ServeInOrder(2, 100, 10).size(), 2u);
  }
  std::optional<client::StatusView> st = AwaitDoneStatus(client, finished->submission_id);
  ASSERT_TRUE(st && st->done);
  client::SubmitSpec open_spec = RandomSearch(3, 1);
  open_spec.ops = {SmallMatmul(48)};
  auto open = client.Submit(open_spec);
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  StopCoordinator();
  store_.reset();
  const uint64_t corrupt_id = finished->task_ids.at(0);
  testing::WriteRawStore(dir_, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* tasks, rocksdb::ColumnFamilyHandle*) {
    EXPECT_TRUE(db.Put(rocksdb::WriteOptions(), tasks, Store::TaskRecordKey(corrupt_id), "not a record").ok());
  });
  store_ = std::move(Store::Open(dir_.string()).value());
  Restart();
  EXPECT_EQ(GaugeValue(registry2_, "tunefleet_tasks_in_memory"), 1);
  EXPECT_EQ(GaugeValue(registry2_, "tunefleet_submissions_in_memory"), 1);
  client::Client after(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w2");
  EXPECT_EQ(w.ServeInOrder(3, 100, 10).size(), 3u);
  std::optional<client::StatusView> done = AwaitDoneStatus(after, open->submission_id);
  EXPECT_TRUE(done && done->done) << "the unfinished task resumed and ended";
  auto corrupt = after.GetStatus(finished->submission_id);
  ASSERT_FALSE(corrupt.ok()) << "its record is read when asked for, and is corrupt";
  EXPECT_NE(corrupt.status().ToString().find("read task " + std::to_string(finished->task_ids.at(0)) + ": stored record"),
            std::string::npos)
      << corrupt.status().ToString();
}

// Found by an audit: the coordinator kept every task it ever ran in memory, about 4.5 KB
// each, and a restart loaded them all again: a long-lived service grew without bound. A
// finished task leaves memory keep_finished after a tick saw it finished; its status
// and a watch's totals then read the same from the store.
TEST_F(CoordinatorTest, AFinishedTaskLeavesMemoryAfterKeepFinishedAndReadsTheSameFromTheStore) {
  options_.keep_finished = 3s;
  Restart();
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(4, 1));
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  ASSERT_EQ(w.ServeInOrder(4, 100, 10).size(), 4u);
  std::optional<client::StatusView> before = AwaitDoneStatus(client, sub->submission_id);
  ASSERT_TRUE(before && before->done);
  // One heartbeat tick per second of the test's clock, each awaited at the worker (which
  // answers, to stay registered).
  auto tick = [&] {
    clock_.Advance(1s);
    w.AwaitHeartbeat();
    std::this_thread::sleep_for(50ms);
  };
  for (int i = 0; i < 3; ++i) {
    tick();  // the first sees it finished
    EXPECT_EQ(GaugeValue(registry2_, "tunefleet_tasks_in_memory"), 1) << "kept until keep_finished has passed";
  }
  tick();
  EXPECT_EQ(AwaitGauge(registry2_, "tunefleet_tasks_in_memory", 0), 0);
  EXPECT_EQ(AwaitGauge(registry2_, "tunefleet_submissions_in_memory", 0), 0) << "none of its tasks is left";
  // Let go, it is closed in the store: a restart reads neither it nor its task.
  auto open = store_->LoadOpenSubmissions();
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_TRUE(open->empty());
  std::vector<uint64_t> open_tasks;
  ASSERT_TRUE(store_->ForEachOpenTask([&](TaskRecord t) { open_tasks.push_back(t.task_id); }).ok());
  EXPECT_TRUE(open_tasks.empty());

  auto after = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->done);
  ASSERT_EQ(after->tasks.size(), 1u);
  const client::TaskView &a = after->tasks[0], &b = before->tasks[0];
  EXPECT_EQ(a.task_id, b.task_id);
  EXPECT_EQ(a.op_key_hash, b.op_key_hash);
  EXPECT_EQ(a.state, "done");
  EXPECT_EQ(a.evaluated, 4u);
  EXPECT_EQ(a.planned, b.planned);
  EXPECT_EQ(a.best_index, b.best_index);
  EXPECT_EQ(a.best_latency_us, b.best_latency_us);
  EXPECT_EQ(a.failure_reasons, b.failure_reasons);
  EXPECT_EQ(a.baseline_latency_us, b.baseline_latency_us);
  EXPECT_EQ(a.best_config, b.best_config);
  EXPECT_FALSE(a.best_config.empty());
  auto watch = client.Watch(sub->submission_id, 0, 0ms);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  EXPECT_TRUE(watch->done);
  EXPECT_EQ(watch->tasks, 1u);
  EXPECT_EQ(watch->finished_tasks, 1u);
  EXPECT_EQ(watch->evaluated, 4u);
  auto cancelled = client.Cancel(sub->submission_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->finished, 1u);
  EXPECT_EQ(cancelled->cancelled, 0u);
  EXPECT_FALSE(client.GetStatus(sub->submission_id + 1).ok()) << "an unknown submission is still unknown";
}

// A cancelled task whose job is still at a worker stays in memory until the job is
// back, so its results count as a cancelled task's, not as duplicates; then it leaves.
TEST_F(CoordinatorTest, ACancelledTaskWithAJobOutStaysInMemoryUntilTheJobIsBack) {
  options_.keep_finished = 1s;
  Restart();
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(4, 1));
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  ASSERT_TRUE(client.Cancel(sub->submission_id).ok());
  auto tick = [&] {
    clock_.Advance(1s);
    w.AwaitHeartbeat();
    std::this_thread::sleep_for(50ms);
  };
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_EQ(GaugeValue(registry2_, "tunefleet_tasks_in_memory"), 1) << "its job is out";
  w.Answer(*job, 50);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(LabeledCounterValue(registry2_, "tunefleet_rejected_results_total", "reason", "cancelled"), 1.0);
  EXPECT_EQ(CounterValue(registry2_, "tunefleet_duplicate_results_total"), 0.0);
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_EQ(AwaitGauge(registry2_, "tunefleet_tasks_in_memory", 0), 0);
}

// A task an older build stored under its key's older canonical form (an element-wise
// op's axes unmerged, kKbKeyVersion 1) ends under the key lookups compute now, not
// under one no lookup finds.
TEST_F(CoordinatorTest, ATaskStoredUnderAnOlderCanonicalFormEndsUnderItsKeyNow) {
  OpKey gelu;
  gelu.soc = "Ascend910B2";
  gelu.op_type = "Gelu";
  gelu.inputs = {{{32, 128, 3072}, "float16", "ND"}};
  client::SubmitSpec spec = RandomSearch(3, 1);
  spec.ops = {gelu};
  client::Client client(ctx_, options_.client_endpoint);
  ASSERT_TRUE(client.Submit(spec).ok());
  StopCoordinator();
  auto tasks = store_->LoadTasks();
  ASSERT_TRUE(tasks.ok() && tasks->size() == 1u);
  TaskRecord legacy = (*tasks)[0];
  ASSERT_NE(legacy.key.Canonical(), gelu.Canonical()) << "submitted under its merged key";
  legacy.key = gelu;
  ASSERT_TRUE(store_->PutTask(legacy).ok());
  Restart();
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  EXPECT_GT(w.AnswerAll(10, false), 0u);
  const OpKeyHash now = HashOpKey(*CanonicalOpKey(gelu));
  for (int i = 0; i < 50 && !store_->GetKb(now)->has_value(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(store_->GetKb(now)->has_value());
  EXPECT_FALSE(store_->GetKb(HashOpKey(gelu))->has_value());
}

// The progress stream: a held watch is answered by the event it waited for, with the
// submission's events only, and at its deadline with none; a position from before a
// restart is reported as a gap.
TEST_F(CoordinatorTest, AWatchIsHeldUntilItsSubmissionsTaskReportsAndSeesOnlyItsOwnEvents) {
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(3, 1));
  ASSERT_TRUE(sub.ok());
  client::SubmitSpec other_spec = RandomSearch(4, 1);  // still running when ours ends
  other_spec.ops = {SmallMatmul(48)};
  auto other = client.Submit(other_spec);
  ASSERT_TRUE(other.ok());

  // Nothing has happened: with no wait the answer is empty at once; the position it
  // gives is where the next read starts.
  auto empty = client.Watch(sub->submission_id, 0, 0ms);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->events.empty());
  EXPECT_FALSE(empty->done);
  EXPECT_EQ(empty->tasks, 1u);

  // A held watch (the test clock does not move, so only an event can answer it).
  client::Client watcher(ctx_, options_.client_endpoint);
  auto held = std::async(std::launch::async, [&] { return watcher.Watch(sub->submission_id, empty->next, 4000ms); });
  EXPECT_EQ(held.wait_for(300ms), std::future_status::timeout) << "answered with nothing to say";

  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  std::vector<client::ProgressView> events;
  uint64_t after = 0;
  bool first_turn = true;
  for (int jobs = 0; jobs < 5; ++jobs) {  // 3 of ours and 2 of the other submission's, in turns
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Answer(*job, 100 - 10 * jobs);
    if (first_turn) {
      ASSERT_EQ(held.wait_for(2s), std::future_status::ready) << "the held watch was not answered by the event";
      auto turn = held.get();
      ASSERT_TRUE(turn.ok()) << turn.status().ToString();
      ASSERT_FALSE(turn->events.empty());
      EXPECT_EQ(turn->events[0].kind, "started");
      events = turn->events;
      after = turn->next;
      first_turn = false;
    }
  }
  for (int turns = 0; turns < 50; ++turns) {
    auto turn = client.Watch(sub->submission_id, after, 500ms);
    ASSERT_TRUE(turn.ok()) << turn.status().ToString();
    EXPECT_FALSE(turn->gap);
    events.insert(events.end(), turn->events.begin(), turn->events.end());
    after = turn->next;
    if (turn->done) {
      EXPECT_EQ(turn->finished_tasks, 1u);
      EXPECT_EQ(turn->evaluated, 3u);
      break;
    }
  }
  ASSERT_FALSE(events.empty());
  for (const auto& e : events) EXPECT_EQ(e.task_id, sub->task_ids[0]) << "another submission's event";
  EXPECT_EQ(events.front().kind, "started");
  EXPECT_EQ(events.back().kind, "finished");
  EXPECT_EQ(events.back().state, "done");
  EXPECT_EQ(events.back().evaluated, 3u);
  double last = std::numeric_limits<double>::infinity();
  int improved = 0;
  for (const auto& e : events) {
    if (e.kind != "improved") continue;
    EXPECT_LT(e.best_latency_us, last);
    last = e.best_latency_us;
    ++improved;
  }
  EXPECT_GE(improved, 1);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_DOUBLE_EQ(events.back().best_latency_us, st->tasks[0].best_latency_us);

  // Read again from the start two events at a time: "done" only with the last page (a
  // full page of a finished submission said done, and its last events were never read).
  std::vector<client::ProgressView> paged;
  uint64_t at = 0;
  for (int pages = 0; pages < 50; ++pages) {
    auto page = client.Watch(sub->submission_id, at, 0ms, 2);
    ASSERT_TRUE(page.ok());
    paged.insert(paged.end(), page->events.begin(), page->events.end());
    at = page->next;
    EXPECT_EQ(page->more, !page->done) << "page " << pages;
    if (page->done) break;
  }
  ASSERT_EQ(paged.size(), events.size());
  EXPECT_EQ(paged.back().kind, "finished");

  // Done: answered at once whatever the wait.
  auto finished = client.Watch(sub->submission_id, after, 4000ms);
  ASSERT_TRUE(finished.ok());
  EXPECT_TRUE(finished->done);
  EXPECT_TRUE(finished->events.empty());

  // A watch on the other submission, still running, with nothing new: held until its
  // wait is over on the coordinator's clock.
  auto other_now = client.Watch(other->submission_id, 0, 0ms);
  ASSERT_TRUE(other_now.ok());
  auto waiting = std::async(std::launch::async,
                            [&] { return watcher.Watch(other->submission_id, other_now->next, 2000ms); });
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);
  clock_.Advance(2100ms);
  ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready) << "the held watch outlived its wait";
  auto expired = waiting.get();
  ASSERT_TRUE(expired.ok());
  EXPECT_TRUE(expired->events.empty());
  EXPECT_FALSE(expired->done);
  EXPECT_FALSE(expired->gap);

  // A wait longer than the coordinator holds is refused, saying the limit.
  client::Client patient(ctx_, options_.client_endpoint, 60s);
  auto too_long = patient.Watch(sub->submission_id, 0, 20s);
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("at most 10000 ms"), std::string::npos) << too_long.status().ToString();
  auto unknown = client.Watch(999, 0, 0ms);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);

  // A stopping coordinator answers the watches it holds, so watchers move to the next
  // process at once instead of at their reply timeout.
  auto held_at_stop = std::async(std::launch::async,
                                 [&] { return watcher.Watch(other->submission_id, other_now->next, 4000ms); });
  EXPECT_EQ(held_at_stop.wait_for(300ms), std::future_status::timeout);
  // After a restart the old position is another process's: a gap, and the reader goes on.
  Restart();
  ASSERT_EQ(held_at_stop.wait_for(1s), std::future_status::ready) << "a held watch outlived its coordinator";
  EXPECT_TRUE(held_at_stop.get().ok());
  client::Client again(ctx_, options_.client_endpoint);
  auto after_restart = again.Watch(sub->submission_id, after, 0ms);
  ASSERT_TRUE(after_restart.ok()) << after_restart.status().ToString();
  EXPECT_TRUE(after_restart->gap);
  EXPECT_TRUE(after_restart->done);
  EXPECT_GT(LabeledCounterValue(registry_, "tunefleet_client_requests_total", "kind", "watch"), 0)
      << "watch requests are counted under their own kind";
}

// Once the window has dropped events, a watch of a newer submission from the start is
// not told of a gap (nothing of it was dropped); and an improvement within float noise
// is not an event.
TEST_F(CoordinatorTest, AWatchFromTheStartHasNoGapForEventsOlderThanItsSubmission) {
  StopCoordinator();
  options_.progress_window = 4;
  options_.client_endpoint += "-small-window";
  options_.worker_endpoint += "-small-window";
  auto c = Coordinator::Create(options_, *store_, catalog_, clock_, registry2_, ctx_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  coordinator_ = std::move(c).value();
  thread_ = std::thread([this] { EXPECT_TRUE(coordinator_->Run().ok()); });

  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto old = client.Submit(RandomSearch(4, 1));  // started, improvements, finished: > 4 events
  ASSERT_TRUE(old.ok());
  for (int i = 0; i < 4; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Answer(*job, 100 - 10 * i, false);
  }
  std::this_thread::sleep_for(200ms);
  auto old_watch = client.Watch(old->submission_id, 0, 0ms);
  ASSERT_TRUE(old_watch.ok());
  EXPECT_TRUE(old_watch->gap) << "the old submission's first events were dropped";

  client::SubmitSpec spec = RandomSearch(3, 1);
  spec.ops = {SmallMatmul(48)};
  auto fresh = client.Submit(spec);
  ASSERT_TRUE(fresh.ok());
  const double best = 50;
  for (double latency : {best, best * (1 - 1e-12), best * (1 - 1e-13)}) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Respond(*job, [&](ConfigIndex, schema::EvalResult::Builder b) {
      b.setOk(true);
      b.setLatencyUs(latency);
    });
  }
  std::this_thread::sleep_for(200ms);
  auto fresh_watch = client.Watch(fresh->submission_id, 0, 0ms);
  ASSERT_TRUE(fresh_watch.ok());
  EXPECT_FALSE(fresh_watch->gap) << "a gap reported for events older than the submission";
  std::vector<std::string> kinds;
  for (const auto& e : fresh_watch->events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"started", "improved", "finished"}))
      << "improvements of 1e-12 relative are float noise, not news";
}

// A job that cannot run is retried up to kMaxJobAttempts times, then its configs are
// recorded failed with the reason (the task goes on or ends; it is not stuck).
TEST_F(CoordinatorTest, AJobFailingOnEveryAttemptMarksItsConfigsFailedWithTheReason) {
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(1, 1));
  ASSERT_TRUE(sub.ok());
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  std::vector<ConfigIndex> configs;
  for (uint32_t attempt = 1; attempt <= protocol::kMaxJobAttempts; ++attempt) {
    auto job = w.NextJob();
    ASSERT_TRUE(job) << "attempt " << attempt << " never came";
    EXPECT_EQ(job->attempt, attempt);
    if (attempt == 1) configs = job->configs;
    EXPECT_EQ(job->configs, configs) << "the same configs each attempt";
    w.AnswerJobError(*job, "cannot prepare the op");
  }
  EXPECT_FALSE(w.NextJob(500ms)) << "a fourth attempt";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->tasks[0].state, "failed");
  EXPECT_EQ(st->tasks[0].failed_configs, 1u);
  EXPECT_EQ(st->tasks[0].failure_reasons,
            (std::vector<std::pair<std::string, uint64_t>>{{"job failed on every attempt: cannot prepare the op", 1}}));
  EXPECT_EQ(CounterValue(registry_, "tunefleet_jobs_requeued_total"), protocol::kMaxJobAttempts - 1.0);
  EXPECT_EQ(CounterValue(registry_, "tunefleet_jobs_abandoned_total"), 1.0);
}

// The queue depth an operator scales workers on: running tasks with work and nothing at a worker.
TEST_F(CoordinatorTest, TheQueueDepthCountsTasksWithWorkAndNoJobOut) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec = RandomSearch(4, 1);
  spec.ops = {SmallMatmul(32), SmallMatmul(48), SmallMatmul(64)};
  ASSERT_TRUE(client.Submit(spec).ok());
  clock_.Advance(1100ms);
  EXPECT_EQ(AwaitGauge(registry_, "tunefleet_queue_depth", 3), 3) << "three tasks, no worker";
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  clock_.Advance(1100ms);
  EXPECT_EQ(AwaitGauge(registry_, "tunefleet_queue_depth", 2), 2) << "one task has its job at the worker";
  for (int jobs = 0; jobs < 20 && job; ++jobs) {
    w.Answer(*job, 10);
    job = w.NextJob(500ms);
  }
  clock_.Advance(1100ms);
  EXPECT_EQ(AwaitGauge(registry_, "tunefleet_queue_depth", 0), 0) << "every task ended";
}

TEST_F(CoordinatorTest, StatusSaysWhyConfigsFailedCountedOnceAcrossARestart) {
  auto sub = client::Client(ctx_, options_.client_endpoint).Submit(RandomSearch(3, 1));
  ASSERT_TRUE(sub.ok());
  auto reasons_now = [&] {
    client::Client c(ctx_, options_.client_endpoint);
    auto st = c.GetStatus(sub->submission_id);
    EXPECT_TRUE(st.ok());
    return st.ok() ? st->tasks[0].failure_reasons : std::vector<std::pair<std::string, uint64_t>>{};
  };
  using Reasons = std::vector<std::pair<std::string, uint64_t>>;
  {
    ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
    auto baseline = w.NextJob();
    ASSERT_TRUE(baseline);
    w.Answer(*baseline, 50);
    auto second = w.NextJob();
    ASSERT_TRUE(second);
    w.AnswerFailed(*second, "UB overflow: needs 300 KB");
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(reasons_now(), (Reasons{{"UB overflow: needs 300 KB", 1}}));
  }
  Restart();  // running: counted again from the recovered results, not added to the old count
  EXPECT_EQ(reasons_now(), (Reasons{{"UB overflow: needs 300 KB", 1}}));
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w2");
  auto third = w.NextJob();
  ASSERT_TRUE(third);
  w.AnswerFailed(*third, "UB overflow: needs 300 KB");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(reasons_now(), (Reasons{{"UB overflow: needs 300 KB", 2}}));
  Restart();  // finished: its results are gone, its record keeps the reasons
  EXPECT_EQ(reasons_now(), (Reasons{{"UB overflow: needs 300 KB", 2}}));
}

TEST_F(CoordinatorTest, ATaskIsQueuedUntilAWorkerTakesItsFirstJob) {
  client::Client client(ctx_, options_.client_endpoint);
  auto sub = client.Submit(RandomSearch(3, 1));
  ASSERT_TRUE(sub.ok());
  // No worker yet: the backlog an operator sizes the pool by (it read 0 queued before).
  EXPECT_EQ(client.GetStatus(sub->submission_id)->tasks[0].state, "queued");
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "queued"), 1.0);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "running"), 0.0);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  ASSERT_TRUE(w.NextJob());
  EXPECT_EQ(client.GetStatus(sub->submission_id)->tasks[0].state, "running");
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "queued"), 0.0);
  EXPECT_EQ(LabeledGaugeValue(registry_, "tunefleet_tasks", "state", "running"), 1.0);
}

TEST_F(CoordinatorTest, LookupOfAKeyThatCouldNeverBeTunedSaysWhyInsteadOfMissing) {
  client::Client client(ctx_, options_.client_endpoint);
  OpKey bad_shape = SmallMatmul();
  bad_shape.inputs[1].shape = {16, 64};  // K of B differs from K of A
  OpKey bad_soc = SmallMatmul();
  bad_soc.soc = "Ascend910X";
  for (const auto& [key, says] : {std::pair{bad_shape, std::string("inner dimensions")}, std::pair{bad_soc, std::string("Ascend910X")}}) {
    auto r = client.Lookup({SmallMatmul(), key});
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_EQ(r.status().code(), key.soc == "Ascend910X" ? StatusCode::kNotFound : StatusCode::kInvalidArgument)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find("op 1 (MatMul["), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().ToString();
  }
  // A replayed kernel this coordinator has no cache of: refused as its submission is
  // (it used to be a plain miss, exit 3, while submit said exit 2).
  OpKey replayed;
  replayed.soc = std::string(kReplaySoc);
  replayed.op_type = "convolution_kernel";
  replayed.inputs = {{{4096, 4096}, "float32", "ND"}};
  auto no_cache = client.Lookup({replayed});
  ASSERT_FALSE(no_cache.ok());
  EXPECT_NE(no_cache.status().message().find("no replay cache of kernel 'convolution_kernel'"), std::string::npos)
      << no_cache.status().ToString();
  auto still = client.Lookup({SmallMatmul()});
  ASSERT_TRUE(still.ok()) << "the coordinator keeps serving: " << still.status().ToString();
  EXPECT_FALSE((*still)[0].has_value());
}

TEST_F(CoordinatorTest, ATotalBudgetIsSplitAcrossTasksExactlyAndFavoursTheHeavierOp) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32), SmallMatmul(64)};
  spec.weights = {8, 1};
  spec.strategy = "random";
  spec.total_budget = 24;
  spec.scheduler = "gradient";
  spec.job_size = 2;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  clock_.Advance(1100ms);  // a heartbeat tick: the gauge counts the live schedule
  EXPECT_EQ(AwaitGauge(registry_, "tunefleet_scheduled_submissions", 1), 1);
  for (int jobs = 0; jobs < 100; ++jobs) {
    auto job = w.NextJob(1s);
    if (!job) break;
    w.Answer(*job, 10);
  }
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->done);
  ASSERT_EQ(st->tasks.size(), 2u);
  EXPECT_EQ(st->tasks[0].evaluated + st->tasks[1].evaluated, 24u) << "the shared budget is spent exactly";
  EXPECT_GT(st->tasks[0].evaluated, st->tasks[1].evaluated) << "the op that runs 8x per step gets more";
  EXPECT_GE(st->tasks[1].evaluated, 1u) << "every op gets at least its baseline";
  // Ended: its schedule is dropped at the next heartbeat tick (it stayed until restart).
  clock_.Advance(1100ms);
  EXPECT_EQ(AwaitGauge(registry_, "tunefleet_scheduled_submissions", 0), 0)
      << "the ended submission's schedule is still held";
}

// Regression: one task's first job used to take the whole shared budget, leaving the
// other tasks' baselines queued forever and the submission never done.
TEST_F(CoordinatorTest, ASharedBudgetSmallerThanOneJobStillEndsEveryTask) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32), SmallMatmul(48), SmallMatmul(64)};
  spec.strategy = "random";
  spec.total_budget = 7;  // default job size is 512
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  for (int jobs = 0; jobs < 100; ++jobs) {
    auto job = w.NextJob(1s);
    if (!job) break;
    w.Answer(*job, 10);
  }
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  uint64_t total = 0;
  for (const auto& t : st->tasks) {
    EXPECT_GE(t.evaluated, 1u) << "every task measures its baseline";
    EXPECT_GT(t.baseline_latency_us, 0);
    total += t.evaluated;
  }
  EXPECT_EQ(total, 7u);
}

// Warm-start seeds are evaluations of the shared budget too: 2 baselines plus up to 2
// seeds each used to spend 6 of a total of 3.
TEST_F(CoordinatorTest, WarmStartSeedsStayWithinATotalBudget) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec first;
  first.ops = {SmallMatmul(32), SmallMatmul(48)};
  first.strategy = "random";
  first.budget = 4;
  auto tuned = client.Submit(first);
  ASSERT_TRUE(tuned.ok()) << tuned.status().ToString();
  w.AnswerAll(100, /*flat=*/false);
  ASSERT_TRUE(client.GetStatus(tuned->submission_id)->done);
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(64), SmallMatmul(96)};
  spec.strategy = "random";
  spec.total_budget = 3;
  spec.warm_start = true;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  w.AnswerAll(100, /*flat=*/false);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  ASSERT_EQ(st->tasks.size(), 2u);
  EXPECT_EQ(st->tasks[0].evaluated + st->tasks[1].evaluated, 3u) << "the shared budget is spent exactly";

  // The same op twice, answered from the knowledge base: both names say so.
  client::SubmitSpec again;
  again.ops = {SmallMatmul(32), SmallMatmul(32)};
  auto cached = client.Submit(again);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(cached->from_cache, (std::vector<bool>{true, true}));
}

TEST_F(CoordinatorTest, ATotalBudgetBelowTheOpsBaselinesIsRefusedWithTheMinimum) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32), SmallMatmul(48), SmallMatmul(64), SmallMatmul(32)};  // 3 distinct
  spec.strategy = "random";
  spec.total_budget = 2;
  auto sub = client.Submit(spec);
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sub.status().message().find("give a total budget of at least 3"), std::string::npos)
      << sub.status().ToString();
  spec.total_budget = 3;
  auto enough = client.Submit(spec);
  ASSERT_TRUE(enough.ok()) << enough.status().ToString();
  EXPECT_EQ(enough->submission_id, 1u) << "the refused submission stored nothing, not even its id";
  EXPECT_EQ(enough->task_ids.front(), 1u);
}

// Found by an audit: a key of another simulator model version (0: the field left unset
// on the wire) was tuned and filed under that version, where no lookup saw it and
// `cache import` of the export refused it.
TEST_F(CoordinatorTest, AKeyOfAnotherSimulatorVersionIsRefused) {
  client::Client client(ctx_, options_.client_endpoint);
  for (uint32_t version : {0u, kSimModelVersion + 1}) {
    client::SubmitSpec spec = RandomSearch(4, 1);
    spec.ops[0].model_version = version;
    auto r = client.Submit(spec);
    ASSERT_FALSE(r.ok()) << version;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("op key of simulator model version " + std::to_string(version) +
                                        ": this coordinator simulates version " + std::to_string(kSimModelVersion)),
              std::string::npos)
        << r.status().ToString();
  }
  EXPECT_TRUE(client.Submit(RandomSearch(4, 1)).ok()) << "and keeps serving";
  // A refusal that quotes a 100,000-character dtype is cut to its start and end.
  client::SubmitSpec huge = RandomSearch(4, 1);
  huge.ops[0].inputs[0].dtype = std::string(100'000, 'f');
  auto r = client.Submit(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 2'200u);
  EXPECT_NE(r.status().message().find("characters ...]"), std::string::npos) << r.status().message().substr(0, 300);
}

// Another client than the CLI is held to the CLI's ranges (a job of 2^32 configs would be
// planned in one turn of the loop).
TEST_F(CoordinatorTest, AJobSizeOrPriorityBeyondTheCliRangesIsRefused) {
  client::Client client(ctx_, options_.client_endpoint);
  auto refusal = [&](uint32_t job_size, int32_t priority) {
    client::SubmitSpec spec = RandomSearch(4, 1);
    spec.job_size = job_size;
    spec.priority = priority;
    auto r = client.Submit(spec);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refusal(protocol::kMaxJobSize + 1, 0).find("job size 1048577 exceeds 1048576 configs per job"),
            std::string::npos);
  EXPECT_NE(refusal(std::numeric_limits<uint32_t>::max(), 0).find("exceeds"), std::string::npos);
  EXPECT_NE(refusal(0, 1001).find("priority 1001 is outside -1000..1000"), std::string::npos);
  EXPECT_NE(refusal(0, std::numeric_limits<int32_t>::min()).find("is outside"), std::string::npos);
  EXPECT_EQ(refusal(protocol::kMaxJobSize, -protocol::kMaxPriority), "") << "the bounds themselves are accepted";
}

TEST_F(CoordinatorTest, UnknownSchedulerOrWrongWeightCountIsRejected) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32)};
  spec.total_budget = 10;
  spec.scheduler = "lottery";
  auto r = client.Submit(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gradient, round-robin"), std::string::npos);
  spec.scheduler = "gradient";
  spec.weights = {1, 2};
  r = client.Submit(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("weights"), std::string::npos);
}

TEST(ShapeDistance, ComparesOnlyTheSameOpAtAnotherShape) {
  EXPECT_DOUBLE_EQ(*ShapeDistance(SmallMatmul(32), SmallMatmul(32)), 0);
  EXPECT_NEAR(*ShapeDistance(SmallMatmul(32), SmallMatmul(64)), std::log(2.0), 1e-12);
  OpKey other_soc = SmallMatmul(64);
  other_soc.soc = "Ascend910B4";
  EXPECT_FALSE(ShapeDistance(SmallMatmul(32), other_soc));
  OpKey other_dtype = SmallMatmul(64);
  other_dtype.inputs[0].dtype = other_dtype.inputs[1].dtype = "bfloat16";
  EXPECT_FALSE(ShapeDistance(SmallMatmul(32), other_dtype));
}

TEST_F(CoordinatorTest, NearestLookupAndWarmStartUseTheClosestTunedShape) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32)};
  spec.strategy = "random";
  spec.budget = 2;
  spec.job_size = 1;
  auto first = client.Submit(spec);
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 2; ++i) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Answer(*job, 10);
  }
  std::this_thread::sleep_for(200ms);
  auto st = client.GetStatus(first->submission_id);
  ASSERT_TRUE(st.ok() && st->done);
  const ConfigIndex tuned_best = st->tasks[0].best_index;

  // An exact miss; with nearest, the 32-row entry answers for the 64-row key, flagged.
  auto exact = client.Lookup({SmallMatmul(64)});
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE((*exact)[0].has_value());
  auto near = client.Lookup({SmallMatmul(64)}, /*nearest=*/true);
  ASSERT_TRUE(near.ok());
  ASSERT_TRUE((*near)[0].has_value());
  EXPECT_TRUE((*near)[0]->approximate);
  EXPECT_EQ((*near)[0]->key, SmallMatmul(32));
  EXPECT_NEAR((*near)[0]->distance, std::log(2.0), 1e-9);
  // `tunefleet lookup --nearest --json` names both: the entry's key and the one asked for.
  const nlohmann::json answer = cli::LookupJson("q", SmallMatmul(64), (*near)[0]);
  EXPECT_EQ(answer["op_key"], OpKeyToJson(SmallMatmul(32)));
  EXPECT_EQ(answer["requested_op_key"], OpKeyToJson(SmallMatmul(64)));
  EXPECT_FALSE(cli::LookupJson("q", SmallMatmul(64), (*exact)[0]).contains("requested_op_key"));
  // Without what the lookup adds, an answer is the entry's `cache export` line, so one
  // parser reads both (it wrote timestamp_unix_ms where export writes timestamp_ms).
  nlohmann::json as_export = answer;
  for (const char* added : {"name", "found", "approximate", "distance", "requested_op_key"}) as_export.erase(added);
  EXPECT_EQ(as_export, KbEntryToJson(*(*near)[0]));
  ASSERT_TRUE(KbEntryFromJson(as_export).ok()) << KbEntryFromJson(as_export).status().ToString();
  EXPECT_GT(answer["timestamp_ms"].get<int64_t>(), 0);

  // Warm start: right after the baseline, the neighbour's best config (as it reads in the
  // new key's space) is measured.
  const SocSpec& soc = *catalog_.Find("Ascend910B2").value();
  TuningProblem small = MakeTuningProblem(SmallMatmul(32), soc).value();
  TuningProblem large = MakeTuningProblem(SmallMatmul(64), soc).value();
  auto expected = large.space.Encode(small.space.Decode(tuned_best));
  ASSERT_TRUE(expected.ok());
  spec.ops = {SmallMatmul(64)};
  spec.warm_start = true;
  spec.budget = 3;
  ASSERT_TRUE(client.Submit(spec).ok());
  auto baseline = w.NextJob();
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->configs, std::vector<ConfigIndex>{large.default_index});
  w.Answer(*baseline, 10);
  auto warm = w.NextJob();
  ASSERT_TRUE(warm);
  EXPECT_EQ(warm->configs, std::vector<ConfigIndex>{*expected});
}

// The coordinator's nearest-shape index is built at the first nearest lookup and follows
// every knowledge-base write after it: a task's end and an import.
TEST_F(CoordinatorTest, NearestLookupsSeeEntriesWrittenAfterTheFirstOne) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  auto none = client.Lookup({SmallMatmul(64)}, /*nearest=*/true);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE((*none)[0].has_value()) << "an empty knowledge base";
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(16)};
  spec.strategy = "random";
  spec.budget = 1;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok());
  auto job = w.NextJob();
  ASSERT_TRUE(job);
  w.Answer(*job, 10);
  bool done = false;
  for (int i = 0; i < 500 && !done; ++i) {  // at most 10 s
    std::this_thread::sleep_for(20ms);
    auto st = client.GetStatus(sub->submission_id);
    done = st.ok() && st->done;
  }
  ASSERT_TRUE(done);
  auto first = client.Lookup({SmallMatmul(64)}, true);
  ASSERT_TRUE(first.ok());
  std::optional<client::KbView> found = (*first)[0];
  ASSERT_TRUE(found) << "the finished task's entry";
  EXPECT_EQ(found->key, SmallMatmul(16));
  // An imported entry nearer than it.
  KbEntry imported = *found;
  imported.key = SmallMatmul(48);
  const SocSpec& soc = *catalog_.Find("Ascend910B2").value();
  TuningProblem p = MakeTuningProblem(imported.key, soc).value();
  imported.best_index = p.default_index;
  imported.best_config.clear();
  const Config c = p.space.Decode(p.default_index);
  for (size_t i = 0; i < c.size(); ++i) imported.best_config.emplace_back(p.space.params()[i].name, c[i]);
  imported.best_latency_us = 8;
  auto import = client.ImportKb({imported}, /*dry_run=*/false, /*skip_refused=*/false);
  ASSERT_TRUE(import.ok()) << import.status().ToString();
  ASSERT_EQ(import->added, 1u) << "refused: " << (import->refused.empty() ? "" : import->refused[0].second);
  auto near = client.Lookup({SmallMatmul(64)}, true);
  ASSERT_TRUE(near.ok() && (*near)[0]);
  EXPECT_EQ((*near)[0]->key, SmallMatmul(48));
}

OpKey MediumMatmul() {
  OpKey k = SmallMatmul();
  k.inputs = {{{1024, 256}, "float16", "ND"}, {{256, 512}, "float16", "ND"}};
  return k;
}

// With patience and no evaluation budget, auto searches: an in-order walk cut short
// would have seen only its first configs. The entry says what it ran.
TEST_F(CoordinatorTest, PatienceEndsATaskThatStoppedImproving) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul()};
  spec.strategy = "auto";
  spec.patience = 5;
  spec.job_size = 1;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  w.AnswerAll(50, /*flat=*/true);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 6u) << "the first result, then 5 without improvement";
  auto kb = client.Lookup({SmallMatmul()});
  ASSERT_TRUE(kb.ok() && kb->size() == 1 && (*kb)[0].has_value());
  EXPECT_EQ((*kb)[0]->strategy, "auto (model)");
}

TEST_F(CoordinatorTest, PatienceBoundsTheJobSizeSoATaskDoesNotRunFarPastIt) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec = RandomSearch(1000);  // the coordinator's default job size, 512
  spec.patience = 5;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_LE(w.AnswerAll(50, /*flat=*/true), 5u);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 6u) << "the baseline, then one job of 5 without improvement";
}

// A worker with 4 slots takes 4 jobs side by side: patience counts what is out, so the
// task still stops at patience evaluations past its best (it ran 61-81 for patience 20).
TEST_F(CoordinatorTest, PatienceCountsTheJobsOutOnOtherSlots) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w", /*slots=*/4);
  client::SubmitSpec spec = RandomSearch(1000);
  spec.patience = 20;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto baseline = w.NextJob();
  ASSERT_TRUE(baseline);
  w.AnswerFlat(*baseline, 10);
  std::vector<ReceivedJob> out;  // every job handed out before any is answered
  while (auto job = w.NextJob(500ms)) out.push_back(*job);
  size_t configs = 0;
  for (const auto& job : out) configs += job.configs.size();
  EXPECT_EQ(configs, 20u) << out.size() << " jobs out at once";
  for (const auto& job : out) w.AnswerFlat(job, 10);
  EXPECT_FALSE(w.NextJob(500ms)) << "nothing after patience ran out";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 21u) << "the baseline, then 20 without improvement";
}

// Under a shared budget, a task whose patience is held by its jobs out waits for them;
// it is not taken out of the split, so tasks that keep improving share the whole total.
TEST_F(CoordinatorTest, UnderATotalBudgetATaskWaitingOnItsJobsOutStaysInTheSplit) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w", /*slots=*/4);
  client::SubmitSpec spec;
  spec.ops = {SmallMatmul(32), SmallMatmul(64)};
  spec.strategy = "random";
  spec.total_budget = 40;
  spec.scheduler = "round-robin";
  spec.patience = 3;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  double latency = 1000;  // every job beats the last: no task ever runs out of patience
  for (int jobs = 0; jobs < 200; ++jobs) {
    auto job = w.NextJob(1s);
    if (!job) break;
    latency -= 1;
    w.AnswerFlat(*job, latency);
  }
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  ASSERT_EQ(st->tasks.size(), 2u);
  EXPECT_EQ(st->tasks[0].evaluated + st->tasks[1].evaluated, 40u);
  for (const auto& t : st->tasks) EXPECT_GE(t.evaluated, 15u) << "round-robin splits 40 between two improving tasks";
}

TEST_F(CoordinatorTest, ATimeBudgetStopsHandingOutConfigsOnceItIsSpent) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec = RandomSearch(1000);
  spec.budget_seconds = 5;
  spec.job_size = 1;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  for (int jobs = 0; jobs < 3; ++jobs) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    w.Answer(*job, 10);
  }
  auto last = w.NextJob();  // out when the time runs out: still measured
  ASSERT_TRUE(last);
  for (int s = 0; s < 6; ++s) {  // 6 s of fake time, heartbeating so the worker stays
    clock_.Advance(1000ms);
    w.Heartbeat();
    std::this_thread::sleep_for(30ms);
  }
  w.Answer(*last, 10);
  EXPECT_FALSE(w.NextJob(500ms)) << "no config is handed out after the time budget";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 4u);
}

// A job out when the time runs out is stopped (found by an audit: a 2 s budget ran 10 s,
// two whole 512-config jobs): its worker is told to stop the task, what it measured
// counts, and the configs it did not reach do not go round again.
TEST_F(CoordinatorTest, ATimeBudgetStopsTheJobsOutAndDoesNotRequeueTheirRest) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec = RandomSearch(1000);
  spec.budget_seconds = 5;
  spec.job_size = 20;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto baseline = w.NextJob();
  ASSERT_TRUE(baseline);
  w.Answer(*baseline, 10);
  auto big = w.NextJob();
  ASSERT_TRUE(big);
  ASSERT_EQ(big->configs.size(), 20u);
  for (int s = 0; s < 6 && w.stopped().empty(); ++s) {
    clock_.Advance(1000ms);
    w.Heartbeat();
    EXPECT_FALSE(w.NextJob(100ms)) << "a job was handed out beside the one out";
  }
  ASSERT_EQ(w.stopped(), std::vector<uint64_t>{big->task_id}) << "the worker was not told to stop the task";
  ReceivedJob reached = *big;
  reached.configs.resize(5);  // it stopped after 5 configs
  w.Answer(reached, 10);
  EXPECT_FALSE(w.NextJob(500ms)) << "the stopped job's other 15 configs went out again";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].state, "done");
  EXPECT_EQ(st->tasks[0].evaluated, 6u) << "the baseline and the 5 the stopped job measured";
}

// Patience counts from the last improvement `watch` reports: float noise (a relative gain
// below 1e-9) neither makes an `improved` event nor restarts the count (found by an
// audit: patience 20 ran to 31 on a 5e-16 gain).
TEST_F(CoordinatorTest, PatienceIsNotRestartedByFloatNoise) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec = RandomSearch(100, 1);
  spec.patience = 3;
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  double latency = 100;
  int answered = 0;
  while (auto job = w.NextJob(500ms)) {
    w.AnswerFlat(*job, latency);
    latency *= 1 - 1e-13;  // each one "better" by float noise
    ASSERT_LT(++answered, 20) << "patience 3 never ran out";
  }
  EXPECT_EQ(answered, 4) << "the baseline, then 3 without an improvement worth the name";
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
}

// A --force submission's task is a search of its own: an identical submission without
// --force does not join it (found by an audit: it waited on a forced re-tune).
TEST_F(CoordinatorTest, AForcedTaskIsNeverShared) {
  client::Client client(ctx_, options_.client_endpoint);
  client::SubmitSpec forced = RandomSearch(50, 1);
  forced.force = true;
  auto a = client.Submit(forced);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = client.Submit(RandomSearch(50, 1));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->task_ids, b->task_ids);
  auto c = client.Submit(RandomSearch(50, 1));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(b->task_ids, c->task_ids) << "identical unforced submissions still share";
}

// A model-based search of MediumMatmul in jobs of 8.
client::SubmitSpec ModelSearch(uint64_t budget) {
  client::SubmitSpec spec;
  spec.ops = {MediumMatmul()};
  spec.strategy = "model";
  spec.budget = budget;
  spec.job_size = 8;
  return spec;
}

// Answers jobs one at a time until `stop_at` configs were measured; a config handed out a
// second time fails the test. `measured` gets them.
void ServeUntil(ScriptedWorker& w, size_t stop_at, std::set<ConfigIndex>* measured) {
  while (measured->size() < stop_at) {
    auto job = w.NextJob();
    ASSERT_TRUE(job);
    for (ConfigIndex i : job->configs) EXPECT_TRUE(measured->insert(i).second) << "config " << i << " twice";
    w.Answer(*job, 10);
  }
}

// Answers every job until none comes for a second; the configs among them that were
// measured before (`measured` gets them all).
std::set<ConfigIndex> ServeToTheEnd(ScriptedWorker& w, std::set<ConfigIndex>* measured) {
  std::set<ConfigIndex> again;
  while (auto job = w.NextJob(1s)) {
    for (ConfigIndex i : job->configs) {
      if (!measured->insert(i).second) again.insert(i);
    }
    w.Answer(*job, 10);
  }
  return again;
}

TEST_F(CoordinatorTest, ARestartedCoordinatorRestoresTheStrategyCheckpointAndSpendsTheBudgetExactly) {
  std::set<ConfigIndex> measured;
  uint64_t task_id = 0;
  {
    client::Client client(ctx_, options_.client_endpoint);
    auto sub = client.Submit(ModelSearch(160));
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    task_id = sub->task_ids[0];
    ScriptedWorker w(ctx_, options_.worker_endpoint, "before");
    ServeUntil(w, 100, &measured);
    auto lost = w.NextJob();  // out when the coordinator dies
    ASSERT_TRUE(lost);
    std::this_thread::sleep_for(100ms);
    StopCoordinator();
    auto checkpoint = store_->LoadCheckpoint(task_id);
    ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
    EXPECT_GE((*checkpoint)->told, 64u);
    EXPECT_FALSE((*checkpoint)->state.empty());
  }
  Restart();
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "after");
  const std::set<ConfigIndex> remeasured = ServeToTheEnd(w, &measured);
  EXPECT_TRUE(remeasured.empty()) << remeasured.size() << " recorded configs were handed out again";
  auto st = client.GetStatus(1);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 160u) << "budget accounting is exact across the restart";
  EXPECT_EQ(LabeledCounterValue(registry2_, "tunefleet_tasks_resumed_total", "how", "exactly"), 1);
  EXPECT_EQ(LabeledCounterValue(registry2_, "tunefleet_tasks_resumed_total", "how", "relearning"), 0);
  auto gone = store_->LoadCheckpoint(task_id);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value()) << "a finished task's checkpoint is deleted with its results";
}

// Keeps two jobs out and answers the older one (latency depending on the config), until
// `stop_after` configs were answered or all `total` were handed out and answered; the
// configs in the order they went out. What is out at the end is left in `out`.
std::vector<ConfigIndex> ServeTwoAtATime(ScriptedWorker& w, size_t stop_after, size_t total,
                                         std::deque<ReceivedJob>* out) {
  std::vector<ConfigIndex> order;
  size_t answered = 0;
  while (true) {
    while (out->size() < 2 && order.size() < total) {
      auto job = w.NextJob();
      if (!job) {
        ADD_FAILURE() << "no job after " << order.size() << " of " << total << " configs";
        break;
      }
      order.insert(order.end(), job->configs.begin(), job->configs.end());
      out->push_back(*job);
    }
    if (out->empty() || answered >= stop_after) break;
    w.Answer(out->front(), 10);
    answered += out->front().configs.size();
    out->pop_front();
  }
  return order;
}

// A restart in the middle of an adaptive search -- after its checkpoint, with a job whose
// plan was written and one whose plan was not still out -- hands out the same configs, in
// the same order, as the run that was not interrupted: the plans since the checkpoint
// are replayed, so the strategy is where it was, not merely told the same results.
TEST_F(CoordinatorTest, ARestartedAdaptiveSearchHandsOutWhatTheUninterruptedRunWould) {
  for (const std::string strategy : {"model", "annealing"}) {
    SCOPED_TRACE(strategy);
    client::SubmitSpec spec;
    spec.ops = {MediumMatmul()};
    spec.strategy = strategy;
    spec.budget = 160;
    spec.job_size = 8;
    spec.force = true;  // the run before left its best in the knowledge base
    std::vector<ConfigIndex> whole;
    {
      client::Client client(ctx_, options_.client_endpoint);
      ScriptedWorker w(ctx_, options_.worker_endpoint, "whole-" + strategy, /*slots=*/2);
      auto sub = client.Submit(spec);
      ASSERT_TRUE(sub.ok()) << sub.status().ToString();
      std::deque<ReceivedJob> out;
      whole = ServeTwoAtATime(w, 1000, 160, &out);
      ASSERT_EQ(whole.size(), 160u);
      ASSERT_TRUE(AwaitDone(client, sub->submission_id));
    }
    std::vector<ConfigIndex> interrupted;
    uint64_t task_id = 0, submission_id = 0;
    {
      Restart();  // a fresh coordinator for the interrupted run, as for the whole one
      client::Client client(ctx_, options_.client_endpoint);
      ScriptedWorker w(ctx_, options_.worker_endpoint, "before-" + strategy, /*slots=*/2);
      auto sub = client.Submit(spec);
      ASSERT_TRUE(sub.ok()) << sub.status().ToString();
      task_id = sub->task_ids[0];
      submission_id = sub->submission_id;
      std::deque<ReceivedJob> out;
      interrupted = ServeTwoAtATime(w, 100, 160, &out);
      ASSERT_EQ(out.size(), 2u);
      for (const auto& job : out) interrupted.resize(interrupted.size() - job.configs.size());  // sent again
      std::this_thread::sleep_for(100ms);
      StopCoordinator();
      auto checkpoint = store_->LoadCheckpoint(task_id);
      ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
      auto plans = store_->LoadPlans(task_id);
      ASSERT_TRUE(plans.ok());
      EXPECT_FALSE(plans->empty()) << "asks since the checkpoint at " << (*checkpoint)->told << " are logged";
    }
    Restart();
    client::Client client(ctx_, options_.client_endpoint);
    ScriptedWorker w(ctx_, options_.worker_endpoint, "after-" + strategy, /*slots=*/2);
    std::deque<ReceivedJob> out;
    std::vector<ConfigIndex> rest = ServeTwoAtATime(w, 1000, 160 - interrupted.size(), &out);
    interrupted.insert(interrupted.end(), rest.begin(), rest.end());
    EXPECT_EQ(interrupted, whole);
    ASSERT_TRUE(AwaitDone(client, submission_id));
    auto st = client.GetStatus(submission_id);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->tasks[0].evaluated, 160u);
    auto plans = store_->LoadPlans(task_id);
    ASSERT_TRUE(plans.ok());
    EXPECT_TRUE(plans->empty()) << "a finished task's plans are deleted with its results";
    Restart();  // the next strategy's runs start on a coordinator of their own
  }
}

// A shared budget's split (the gradient scheduler's history of each task's improvement)
// survives a restart too: the interrupted submission hands out the same jobs to the same
// tasks as the one left alone, and ends with the same split and bests.
TEST_F(CoordinatorTest, ARestartedSharedBudgetIsSplitAsTheUninterruptedRunSplitIt) {
  auto mm = [](int64_t m, int64_t k, int64_t n) {
    OpKey key = SmallMatmul();
    key.inputs = {{{m, k}, "float16", "ND"}, {{k, n}, "float16", "ND"}};
    return key;
  };
  client::SubmitSpec spec;
  spec.ops = {mm(1024, 256, 512), mm(512, 512, 768), mm(2048, 128, 256)};
  spec.strategy = "model";
  spec.total_budget = 240;
  spec.force = true;
  // Serves one job at a time until `stop_after` configs were answered (the job then out
  // is left unanswered) or none comes; each job as (op index, configs).
  using Jobs = std::vector<std::pair<size_t, std::vector<ConfigIndex>>>;
  auto serve = [](ScriptedWorker& w, const std::vector<uint64_t>& task_ids, size_t stop_after, Jobs* out) {
    size_t answered = 0;
    while (auto job = w.NextJob(1s)) {
      const size_t op = std::find(task_ids.begin(), task_ids.end(), job->task_id) - task_ids.begin();
      out->emplace_back(op, job->configs);
      if (answered >= stop_after) return;
      w.Answer(*job, 10);
      answered += job->configs.size();
    }
  };
  Jobs whole, interrupted;
  std::vector<client::TaskView> whole_tasks;
  {
    client::Client client(ctx_, options_.client_endpoint);
    ScriptedWorker w(ctx_, options_.worker_endpoint, "whole");
    auto sub = client.Submit(spec);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    serve(w, sub->task_ids, 100000, &whole);
    ASSERT_TRUE(AwaitDone(client, sub->submission_id));
    whole_tasks = client.GetStatus(sub->submission_id)->tasks;
  }
  uint64_t submission_id = 0;
  std::vector<uint64_t> task_ids;
  size_t restarted_at = 0;
  {
    Restart();
    client::Client client(ctx_, options_.client_endpoint);
    ScriptedWorker w(ctx_, options_.worker_endpoint, "before");
    auto sub = client.Submit(spec);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    submission_id = sub->submission_id;
    task_ids = sub->task_ids;
    serve(w, task_ids, 150, &interrupted);
    interrupted.pop_back();  // out when the coordinator stops: handed out again
    restarted_at = interrupted.size();
    std::this_thread::sleep_for(100ms);
  }
  Restart();
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "after");
  serve(w, task_ids, 100000, &interrupted);
  ASSERT_TRUE(AwaitDone(client, submission_id));
  size_t same = 0;
  while (same < whole.size() && same < interrupted.size() && whole[same] == interrupted[same]) ++same;
  EXPECT_EQ(same, whole.size()) << "the same job to the same op, in the same order: job " << same << " of "
                                << whole.size() << " differs (" << interrupted.size() << " handed out; "
                                << "the restart came after job " << restarted_at << ")";
  EXPECT_EQ(interrupted.size(), whole.size());
  auto st = client.GetStatus(submission_id);
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->tasks.size(), whole_tasks.size());
  uint64_t total = 0;
  for (size_t i = 0; i < whole_tasks.size(); ++i) {
    EXPECT_EQ(st->tasks[i].evaluated, whole_tasks[i].evaluated) << "op " << i;
    EXPECT_EQ(st->tasks[i].best_index, whole_tasks[i].best_index) << "op " << i;
    total += st->tasks[i].evaluated;
  }
  EXPECT_EQ(total, 240u);
  auto saved = store_->LoadSchedule(submission_id);
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->has_value()) << "kept until the heartbeat tick drops the ended schedule";
  clock_.Advance(1100ms);
  for (int i = 0; i < 50 && saved.ok() && saved->has_value(); ++i) {
    std::this_thread::sleep_for(20ms);
    saved = store_->LoadSchedule(submission_id);
  }
  ASSERT_TRUE(saved.ok());
  EXPECT_FALSE(saved->has_value()) << "an ended split's scheduler state is deleted";
}

// A plan log the strategy does not answer the same way (a log of another build) is not
// trusted: the task continues from its checkpoint and results, measures nothing twice
// and spends its budget exactly.
TEST_F(CoordinatorTest, APlanLogTheStrategyDoesNotReproduceFallsBackToItsResults) {
  std::set<ConfigIndex> measured;
  uint64_t task_id = 0;
  {
    client::Client client(ctx_, options_.client_endpoint);
    auto sub = client.Submit(ModelSearch(160));
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    task_id = sub->task_ids[0];
    ScriptedWorker w(ctx_, options_.worker_endpoint, "before");
    ServeUntil(w, 100, &measured);
    std::this_thread::sleep_for(100ms);
    StopCoordinator();
    PlanRecord bogus;
    bogus.number = 1'000'000;
    bogus.asked = true;
    bogus.told_before = 100;
    bogus.max_configs = 1;
    bogus.configs = {0};
    ASSERT_TRUE(store_->PutResults(task_id, {}, nullptr, {bogus}).ok());
  }
  Restart();
  auto plans = store_->LoadPlans(task_id);
  ASSERT_TRUE(plans.ok());
  EXPECT_TRUE(plans->empty()) << "a checkpoint of where the strategy is now replaced the log";
  EXPECT_EQ(LabeledCounterValue(registry2_, "tunefleet_tasks_resumed_total", "how", "relearning"), 1)
      << "operators see a search that could not be restored exactly";
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "after");
  const std::set<ConfigIndex> remeasured = ServeToTheEnd(w, &measured);
  EXPECT_TRUE(remeasured.empty()) << remeasured.size() << " recorded configs were handed out again";
  auto st = client.GetStatus(1);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 160u);
}

// Regression: with the default job size of 512, a budget of 300 went out as one job
// before any result, so "auto" (then model-based; a learning strategy whatever it picks)
// degenerated into random search.
TEST_F(CoordinatorTest, ALearningStrategyGetsSmallJobsSoItSeesResultsBeforeSpendingTheBudget) {
  client::Client client(ctx_, options_.client_endpoint);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w");
  client::SubmitSpec spec;
  spec.ops = {MediumMatmul()};
  spec.budget = 300;  // strategy: the default, auto
  auto sub = client.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_LE(w.AnswerAll(200, /*flat=*/false), 4u);
  auto st = client.GetStatus(sub->submission_id);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->done);
  EXPECT_EQ(st->tasks[0].evaluated, 300u);
}

// A coordinator that never declares a worker dead, for tests where fake time races.
class PatientCoordinatorTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    options_.liveness = 1'000'000;
    CoordinatorTest::SetUp();
  }
};

TEST_F(PatientCoordinatorTest, SlowPlanningIsSpreadOverLoopTurnsSoHeartbeatsStillGoOut) {
  client::Client client(ctx_, options_.client_endpoint);
  ASSERT_TRUE(client.Submit(RandomSearch(64, 1)).ok());
  // From here on every reading of the clock takes 100 ms: each job planned costs more
  // than that, so 16 of them in one turn would leave the worker 2 s without a heartbeat.
  clock_.Tick(100ms);
  ScriptedWorker w(ctx_, options_.worker_endpoint, "w", 16);
  int heartbeats_between = -1;
  for (int jobs = 0; jobs < 16; ++jobs) {
    auto job = w.NextJob();
    ASSERT_TRUE(job) << "job " << jobs;
    if (jobs == 0) heartbeats_between = -w.heartbeats();
  }
  heartbeats_between += w.heartbeats();
  clock_.Tick(0ms);
  EXPECT_GE(heartbeats_between, 1) << "the 16 jobs went out in one turn, with no heartbeat between them";
  for (const auto& family : registry_.Collect()) {
    if (family.name != "tunefleet_planning_seconds") continue;
    ASSERT_EQ(family.metric.size(), 1u);
    EXPECT_GE(family.metric[0].histogram.sample_count, 15u) << "one observation per job planned";
    EXPECT_GE(family.metric[0].histogram.sample_sum, 1.5) << "each Ask read the clock twice: >= 100 ms";
  }
}

}  // namespace
}  // namespace tunefleet::coordinator
