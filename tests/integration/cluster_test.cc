// Multi-process tests: real tunefleet-coordinator and tunefleet-worker processes on
// 127.0.0.1 (ports picked by the kernel), real ZeroMQ, a real RocksDB folder, a real
// /metrics endpoint, and real SIGKILLs.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "tunefleet/common/protocol.h"
#include "process.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet {
namespace {

using namespace std::chrono_literals;
using testing::Binary;
using testing::Field;
using testing::Process;

OpKey Matmul(int64_t m, int64_t n, int64_t k) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "MatMul";
  key.inputs = {{{m, k}, "float16", "ND"}, {{k, n}, "float16", "ND"}};
  return key;
}

struct Optimum {
  ConfigIndex index = 0;
  double latency_us = 0;
  size_t valid = 0;
};

// The answer computed directly from the simulator: lowest latency, ties to the lowest
// index (the coordinator's rule).
Optimum DirectOptimum(const OpKey& key) {
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find(key.soc).value();
  TuningProblem p = MakeTuningProblem(key, soc).value();
  Optimum best;
  best.latency_us = 1e300;
  p.space.ForEachValid([&](ConfigIndex i) {
    ++best.valid;
    auto est = sim::Simulate(p, p.space.Decode(i), soc);
    if (est.ok() && est->latency_us < best.latency_us) {
      best.latency_us = est->latency_us;
      best.index = i;
    }
    return true;
  });
  return best;
}

// Random search of one op: `budget` evaluations in jobs of `job_size` configs (0: the
// coordinator's choice).
client::SubmitSpec RandomSearch(const OpKey& key, uint64_t budget, uint32_t job_size = 0) {
  client::SubmitSpec spec;
  spec.ops = {key};
  spec.strategy = "random";
  spec.budget = budget;
  spec.job_size = job_size;
  return spec;
}

class Cluster {
 public:
  explicit Cluster(std::string data_dir) : data_dir_(std::move(data_dir)) {}

  // Ports are picked by the kernel unless given (a restart reuses the old ones so that
  // running workers find it again).
  ::testing::AssertionResult StartCoordinator(const std::string& client = "tcp://127.0.0.1:*",
                                              const std::string& worker = "tcp://127.0.0.1:*",
                                              const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{
        Binary("coordinator/tunefleet-coordinator"), "--client-bind", client,
        "--worker-bind", worker, "--metrics-address", "127.0.0.1", "--metrics-port", "0",
        "--data-dir", data_dir_};
    WithDefaultHeartbeat(argv, extra);
    coordinator_ = std::make_unique<Process>(std::move(argv));
    auto line = coordinator_->WaitForLine("tunefleet-coordinator ready", 20s);
    if (!line) return ::testing::AssertionFailure() << "coordinator printed no ready line";
    client_ep_ = Field(*line, "client");
    worker_ep_ = Field(*line, "worker");
    metrics_port_ = std::stoi(Field(*line, "metrics").substr(Field(*line, "metrics").rfind(':') + 1));
    return ::testing::AssertionSuccess();
  }

  // The worker's --id is w<its number> unless `extra` gives one.
  void StartWorker(int slots, int min_eval_us = 0, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{
        Binary("worker/tunefleet-worker"), "--coordinator", worker_ep_, "--slots",
        std::to_string(slots), "--min-eval-us", std::to_string(min_eval_us)};
    if (std::find(extra.begin(), extra.end(), "--id") == extra.end()) {
      argv.insert(argv.end(), {"--id", "w" + std::to_string(workers_.size())});
    }
    WithDefaultHeartbeat(argv, extra);
    workers_.push_back(std::make_unique<Process>(std::move(argv)));
    ASSERT_TRUE(workers_.back()->WaitForLine("connecting", 10s));
  }

  void StopCoordinator() {
    coordinator_->Terminate();
    EXPECT_EQ(coordinator_->Wait(20s), 0) << "coordinator did not exit cleanly on SIGTERM";
    coordinator_.reset();
  }

  // Polls status until done; fails the test after `limit`.
  client::StatusView WaitDone(client::Client& c, uint64_t submission, std::chrono::seconds limit,
                              const std::function<void(const client::StatusView&)>& on_poll = {}) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto st = c.GetStatus(submission);
      EXPECT_TRUE(st.ok()) << st.status().ToString();
      if (!st.ok()) return {};
      if (on_poll) on_poll(*st);
      if (st->done) return *st;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "submission " << submission << " not done within " << limit.count() << " s";
        return *st;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  bool running() { return coordinator_ && coordinator_->Wait(0ms) == -1; }
  int WaitCoordinatorExit(std::chrono::milliseconds timeout) {
    const int code = coordinator_->Wait(timeout);
    coordinator_.reset();
    return code;
  }

  void KillCoordinator() {
    coordinator_->Kill();
    EXPECT_EQ(coordinator_->Wait(20s), 128 + SIGKILL);
    coordinator_.reset();
  }

  const std::string& client_endpoint() const { return client_ep_; }
  const std::string& worker_endpoint() const { return worker_ep_; }
  int metrics_port() const { return metrics_port_; }
  Process& worker(size_t i) { return *workers_[i]; }

 private:
  // Appends `extra`, and heartbeats every 100 ms unless it sets --heartbeat-ms.
  static void WithDefaultHeartbeat(std::vector<std::string>& argv, const std::vector<std::string>& extra) {
    if (std::find(extra.begin(), extra.end(), "--heartbeat-ms") == extra.end()) {
      argv.insert(argv.end(), {"--heartbeat-ms", "100"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
  }

  std::string data_dir_;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::string client_ep_, worker_ep_;
  int metrics_port_ = 0;
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tunefleet-it-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string data_dir() const { return (dir_ / "db").string(); }
  std::filesystem::path dir_;
  zmq::context_t ctx_{1};
};

TEST_F(ClusterTest, ExhaustiveMatmulFindsTheSimulatorOptimumAndSurvivesARestart) {
  const OpKey key = Matmul(256, 256, 128);
  const Optimum expected = DirectOptimum(key);
  ASSERT_GT(expected.valid, 100u);

  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator());
  cluster.StartWorker(1);
  cluster.StartWorker(1);
  client::Client c(ctx_, cluster.client_endpoint());
  client::SubmitSpec spec;
  spec.ops = {key};
  spec.strategy = "exhaustive";
  spec.job_size = 256;
  auto sub = c.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  client::StatusView st = cluster.WaitDone(c, sub->submission_id, 120s);
  ASSERT_EQ(st.tasks.size(), 1u);
  const client::TaskView& t = st.tasks[0];
  EXPECT_EQ(t.state, "done");
  EXPECT_EQ(t.evaluated, expected.valid) << "exhaustive must measure every valid config once";
  EXPECT_EQ(t.best_index, expected.index);
  EXPECT_DOUBLE_EQ(t.best_latency_us, expected.latency_us);
  EXPECT_GT(t.baseline_latency_us, t.best_latency_us);

  std::string metrics = testing::HttpGet(cluster.metrics_port(), "/metrics");
  EXPECT_EQ(testing::MetricValue(metrics, "tunefleet_evaluations_total"), static_cast<double>(expected.valid));
  EXPECT_EQ(testing::MetricValue(metrics, "tunefleet_workers_connected"), 2.0);
  EXPECT_GT(testing::MetricValue(metrics, "tunefleet_jobs_completed_total"), 1.0);

  // Restart on the same folder: `tunefleet lookup` still answers from RocksDB.
  cluster.StopCoordinator();
  ASSERT_TRUE(cluster.StartCoordinator());
  std::filesystem::path ops = dir_ / "ops.json";
  {
    std::ofstream f(ops);
    f << nlohmann::json{{"ops", {OpKeyToJson(key)}}}.dump();
  }
  Process lookup({Binary("cli/tunefleet"), "lookup", ops.string(), "--coordinator",
                  cluster.client_endpoint(), "--json"});
  std::string out = lookup.ReadAll(30s);
  ASSERT_EQ(lookup.Wait(30s), 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0]["found"].get<bool>());
  EXPECT_EQ(j[0]["best_config_index"].get<uint64_t>(), expected.index);
  EXPECT_DOUBLE_EQ(j[0]["best_latency_us"].get<double>(), expected.latency_us);
}

TEST_F(ClusterTest, KillingOneOfTwoWorkersMidTaskLosesNothingAndFindsTheSameBest) {
  const OpKey key = Matmul(32, 64, 32);
  const Optimum expected = DirectOptimum(key);
  ASSERT_GT(expected.valid, 1000u);

  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator());
  // Paced evaluations keep both slots busy, so the victim dies holding a leased job.
  cluster.StartWorker(1, 500);
  cluster.StartWorker(1, 500);
  client::Client c(ctx_, cluster.client_endpoint());
  client::SubmitSpec spec;
  spec.ops = {key};
  spec.strategy = "exhaustive";
  spec.job_size = 64;
  auto sub = c.Submit(spec);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();

  bool killed = false;
  uint64_t evaluated_at_kill = 0;
  client::StatusView st = cluster.WaitDone(c, sub->submission_id, 120s, [&](const client::StatusView& s) {
    if (!killed && !s.tasks.empty() && s.tasks[0].evaluated >= expected.valid / 4) {
      cluster.worker(0).Kill();
      EXPECT_EQ(cluster.worker(0).Wait(10s), 128 + SIGKILL);
      killed = true;
      evaluated_at_kill = s.tasks[0].evaluated;
    }
  });
  ASSERT_TRUE(killed) << "the task finished before a worker could be killed";
  EXPECT_LT(evaluated_at_kill, expected.valid) << "kill must land mid-task";
  ASSERT_EQ(st.tasks.size(), 1u);
  EXPECT_EQ(st.tasks[0].state, "done");
  EXPECT_EQ(st.tasks[0].evaluated, expected.valid) << "every valid config recorded exactly once";
  EXPECT_EQ(st.tasks[0].best_index, expected.index);
  EXPECT_DOUBLE_EQ(st.tasks[0].best_latency_us, expected.latency_us);

  std::string metrics = testing::HttpGet(cluster.metrics_port(), "/metrics");
  EXPECT_GE(testing::MetricValue(metrics, "tunefleet_jobs_requeued_total"), 1.0)
      << "the killed worker's leased job must have been requeued";
  EXPECT_EQ(testing::MetricValue(metrics, "tunefleet_workers_connected"), 1.0);
}

// A worker killed and started again under the same --id (a container restarted in its
// pod keeps its hostname and pid): its earlier registration leaves the worker list at once,
// not after three missed heartbeats (a minute here), and its leased job goes to the new
// process.
TEST_F(ClusterTest, AWorkerRestartedUnderItsIdIsListedOnceAndTakesOverItsJob) {
  const std::vector<std::string> slow_heartbeats{"--heartbeat-ms", "20000"};
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", slow_heartbeats));
  std::vector<std::string> as_pod{"--id", "pod-0", "--heartbeat-ms", "20000"};
  cluster.StartWorker(1, 200'000, as_pod);  // 0.2 s per evaluation: the job is held when killed
  client::Client c(ctx_, cluster.client_endpoint());
  auto sub = c.Submit(RandomSearch(Matmul(32, 64, 32), 12, 1));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto listed = [&](const std::function<bool(const std::vector<client::WorkerView>&)>& until) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    for (;;) {
      auto list = c.ListWorkers();
      if (list.ok() && until(*list)) return *list;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "worker list: " << (list.ok() ? std::to_string(list->size()) + " rows" : list.status().ToString());
        return list.ok() ? *list : std::vector<client::WorkerView>{};
      }
      std::this_thread::sleep_for(50ms);
    }
  };
  listed([](const auto& l) { return l.size() == 1 && l[0].busy_slots == 1; });
  cluster.worker(0).Kill();
  EXPECT_EQ(cluster.worker(0).Wait(10s), 128 + SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  cluster.StartWorker(1, 0, as_pod);
  // The new registration is the one connected since after the kill.
  auto list = listed([&](const auto& l) {
    const double since_kill = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
    return l.size() == 1 && l[0].seconds_connected < since_kill;
  });
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id, "pod-0");
  client::StatusView st = cluster.WaitDone(c, sub->submission_id, 60s);
  ASSERT_EQ(st.tasks.size(), 1u);
  EXPECT_EQ(st.tasks[0].state, "done") << "the killed registration's job was not held for a minute";
  EXPECT_EQ(st.tasks[0].evaluated, 12u);
  std::string metrics = testing::HttpGet(cluster.metrics_port(), "/metrics");
  EXPECT_GE(testing::MetricValue(metrics, "tunefleet_jobs_requeued_total"), 1.0);
  EXPECT_EQ(testing::MetricValue(metrics, "tunefleet_workers_connected"), 1.0);
}

TEST_F(ClusterTest, CoordinatorKilledMidTaskResumesFromRocksDbAndEndsWithTheSameBest) {
  const OpKey key = Matmul(32, 64, 32);
  const Optimum expected = DirectOptimum(key);

  Cluster cluster(data_dir());
  // A heartbeat that outlasts a slow turn: one exhaustive job of this sparse space scans
  // up to 60,000 configs, which under ASan on a loaded CI machine held the loop for up to
  // 0.8 s. With the default 100 ms the workers then heard nothing for 300 ms and
  // registered again, and the count below measured the machine, not the restart.
  const std::vector<std::string> heartbeat{"--heartbeat-ms", "500"};
  ASSERT_TRUE(cluster.StartCoordinator("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", heartbeat));
  cluster.StartWorker(1, 300, heartbeat);
  cluster.StartWorker(1, 300, heartbeat);
  uint64_t submission = 0;
  {
    client::Client c(ctx_, cluster.client_endpoint());
    client::SubmitSpec spec;
    spec.ops = {key};
    spec.strategy = "exhaustive";
    spec.job_size = 64;
    auto sub = c.Submit(spec);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    submission = sub->submission_id;
    for (auto deadline = std::chrono::steady_clock::now() + 60s;;) {
      auto st = c.GetStatus(submission);
      ASSERT_TRUE(st.ok());
      if (st->tasks[0].evaluated >= expected.valid / 3) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
      std::this_thread::sleep_for(20ms);
    }
  }
  const std::string client_ep = cluster.client_endpoint(), worker_ep = cluster.worker_endpoint();
  cluster.KillCoordinator();
  ASSERT_TRUE(cluster.StartCoordinator(client_ep, worker_ep, heartbeat));

  client::Client c(ctx_, cluster.client_endpoint());
  client::StatusView st = cluster.WaitDone(c, submission, 120s);
  ASSERT_EQ(st.tasks.size(), 1u);
  EXPECT_EQ(st.tasks[0].state, "done");
  EXPECT_EQ(st.tasks[0].evaluated, expected.valid) << "no config lost or counted twice across the crash";
  const std::string metrics = testing::HttpGet(cluster.metrics_port(), "/metrics");
  // The probes the chart uses: alive, and ready once the restarted coordinator resumed.
  EXPECT_EQ(testing::MetricValue(testing::HttpGet(cluster.metrics_port(), "/healthz"), "tunefleet_up"), 1.0);
  EXPECT_EQ(testing::MetricValue(testing::HttpGet(cluster.metrics_port(), "/readyz"), "tunefleet_ready"), 1.0);
  double after_restart = testing::MetricValue(metrics, "tunefleet_evaluations_total");
  // Every message a worker sent the new coordinator before registering is answered with
  // a Disconnect; only the first of that burst may make it register again (each further
  // registration requeued the jobs it had just been given).
  EXPECT_LE(testing::MetricValue(metrics, "tunefleet_worker_registrations_total"), 2.0)
      << "each of the 2 workers registers once with the restarted coordinator";
  EXPECT_GT(testing::MetricValue(metrics, "tunefleet_rocksdb_memtable_bytes"), 0) << "RocksDB's figures are exported";
  EXPECT_GT(after_restart, 0);
  EXPECT_LE(after_restart, expected.valid * 2.0 / 3 + 64 * 2)
      << "the restarted coordinator must continue from the results in RocksDB, not start over";
  EXPECT_EQ(st.tasks[0].best_index, expected.index);
  EXPECT_DOUBLE_EQ(st.tasks[0].best_latency_us, expected.latency_us);
}

// A model-based search on one single-slot worker proposes the same configs whatever the
// timing, so a run whose coordinator is SIGKILLed halfway must end on the same best
// config, after the same number of evaluations, as the run left alone: the restarted
// coordinator replays what the strategy planned since its last checkpoint.
TEST_F(ClusterTest, AnAdaptiveSearchWhoseCoordinatorIsKilledEndsOnTheBestOfTheRunLeftAlone) {
  const OpKey key = Matmul(512, 384, 256);
  client::SubmitSpec spec;
  spec.ops = {key};
  spec.strategy = "model";
  spec.budget = 200;
  spec.job_size = 8;
  auto run = [&](const std::string& dir, bool kill) -> client::TaskView {
    Cluster cluster(dir);
    EXPECT_TRUE(cluster.StartCoordinator());
    cluster.StartWorker(1, 2000);  // 2 ms per evaluation: a job takes 16 ms
    uint64_t submission = 0;
    {
      client::Client c(ctx_, cluster.client_endpoint());
      auto sub = c.Submit(spec);
      EXPECT_TRUE(sub.ok()) << sub.status().ToString();
      if (!sub.ok()) return {};
      submission = sub->submission_id;
      if (kill) {
        for (auto deadline = std::chrono::steady_clock::now() + 60s;;) {
          auto st = c.GetStatus(submission);
          EXPECT_TRUE(st.ok());
          if (!st.ok() || st->tasks[0].evaluated >= 100) break;  // past the first checkpoint, at 64
          if (std::chrono::steady_clock::now() > deadline) {
            ADD_FAILURE() << "100 evaluations did not come within 60 s";
            return {};
          }
          std::this_thread::sleep_for(10ms);
        }
        const std::string client_ep = cluster.client_endpoint(), worker_ep = cluster.worker_endpoint();
        cluster.KillCoordinator();
        EXPECT_TRUE(cluster.StartCoordinator(client_ep, worker_ep));
      }
    }
    client::Client c(ctx_, cluster.client_endpoint());
    client::StatusView st = cluster.WaitDone(c, submission, 120s);
    EXPECT_EQ(st.tasks.size(), 1u);
    return st.tasks.empty() ? client::TaskView{} : st.tasks[0];
  };
  const client::TaskView whole = run((dir_ / "whole").string(), false);
  const client::TaskView killed = run((dir_ / "killed").string(), true);
  EXPECT_EQ(whole.state, "done");
  EXPECT_EQ(killed.state, "done");
  EXPECT_EQ(killed.evaluated, 200u);
  EXPECT_EQ(killed.best_index, whole.best_index);
  EXPECT_DOUBLE_EQ(killed.best_latency_us, whole.best_latency_us);
}

// The liveness probe only reaches the HTTP server; the watchdog watches the loop. Idle,
// the loop turns every 20 ms and the watchdog stays quiet; held up by a submission of
// 40,000 shapes (about a second of validation) it ends the process with exit 5, and a
// restart on the same folder serves again.
TEST_F(ClusterTest, AStalledSchedulingLoopEndsTheCoordinatorWithExit5AndARestartServes) {
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", {"--loop-stall-limit-ms", "300"}));
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(cluster.running()) << "an idle coordinator was taken for stalled";
  const std::string health = testing::HttpGet(cluster.metrics_port(), "/healthz");
  EXPECT_EQ(testing::MetricValue(health, "tunefleet_up"), 1.0);
  const double since_turn = testing::MetricValue(health, "tunefleet_loop_seconds_since_turn");
  EXPECT_GE(since_turn, 0.0) << health;
  EXPECT_LT(since_turn, 0.3);

  client::SubmitSpec spec;
  for (int i = 0; i < 40000; ++i) spec.ops.push_back(Matmul(16 * (1 + i % 400), 16 * (1 + i / 400), 128));
  client::Client c(ctx_, cluster.client_endpoint(), 3s);
  auto r = c.Submit(spec);
  EXPECT_FALSE(r.ok()) << "the coordinator answered a submission it should have been stopped in";
  EXPECT_EQ(cluster.WaitCoordinatorExit(60s), kExitLoopStalled);

  // Off (0), the watchdog still serves its gauge, so the dashboard panel has data.
  ASSERT_TRUE(cluster.StartCoordinator("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", {"--loop-stall-limit-ms", "0"}));
  EXPECT_GE(testing::MetricValue(testing::HttpGet(cluster.metrics_port(), "/healthz"), "tunefleet_loop_seconds_since_turn"), 0.0);
  client::Client again(ctx_, cluster.client_endpoint());
  spec.ops = {Matmul(64, 64, 64)};
  spec.budget = 4;
  auto ok = again.Submit(spec);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// A cancel reaches the worker: its job of the cancelled task stops at once and sends
// what it measured as the final chunk, so the slot serves the next submission rather
// than measuring the rest of a job nobody wants (200 configs at 20 ms each here).
TEST_F(ClusterTest, CancellingStopsTheJobARealWorkerIsRunning) {
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator());
  cluster.StartWorker(1, 20000);
  client::Client c(ctx_, cluster.client_endpoint());
  auto a = c.Submit(RandomSearch(Matmul(256, 256, 128), 400, 200));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // Its baseline job (one config) first, then a 200-config job.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (c.GetStatus(a->submission_id)->tasks[0].planned < 201 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GE(c.GetStatus(a->submission_id)->tasks[0].planned, 201u) << "the 200-config job never went out";
  std::this_thread::sleep_for(300ms);
  auto cancelled = c.Cancel(a->submission_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  ASSERT_EQ(cancelled->cancelled, 1u);

  // The next submission is served by the same slot once the stopped job reported.
  auto b = c.Submit(RandomSearch(Matmul(64, 64, 64), 2));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(cluster.WaitDone(c, b->submission_id, 60s).tasks[0].state, "done");
  const std::string metrics = testing::HttpGet(cluster.metrics_port(), "/metrics");
  const double dropped = testing::MetricValue(metrics, "tunefleet_rejected_results_total{reason=\"cancelled\"}");
  const uint64_t before = c.GetStatus(a->submission_id)->tasks[0].evaluated;
  EXPECT_LT(static_cast<double>(before) + std::max(dropped, 0.0), 201.0)
      << "the worker measured the whole job of a cancelled task (" << before << " recorded, " << dropped
      << " dropped)";
}

// Results of slow evaluations arrive at least once a second, not only per 128: each chunk
// renews the job's lease, and a job of 128 configs at 300 ms each (38 s) used to be
// requeued at its 30 s deadline while its healthy worker was measuring it.
TEST_F(ClusterTest, ASlowJobsResultsArriveEverySecondSoItsLeaseIsRenewed) {
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator());
  cluster.StartWorker(1, 20000);  // 20 ms per evaluation: 128 take 2.6 s
  client::Client c(ctx_, cluster.client_endpoint());
  auto a = c.Submit(RandomSearch(Matmul(256, 256, 128), 301, 300));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // After the baseline (one config), the first figure above 1 is what one chunk carried.
  uint64_t first = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (first <= 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    first = c.GetStatus(a->submission_id)->tasks[0].evaluated;
  }
  EXPECT_GT(first, 1u);
  EXPECT_LT(first, 1u + protocol::kResultChunk) << "the job's first results waited for a full chunk";
  cluster.WaitDone(c, a->submission_id, 60s);
}

TEST_F(ClusterTest, BadSubmissionGetsAnErrorThatSaysWhatToFixAndTheCoordinatorKeepsServing) {
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator());
  client::Client c(ctx_, cluster.client_endpoint());
  client::SubmitSpec spec;
  OpKey bad = Matmul(64, 64, 64);
  bad.inputs[1].shape = {32, 64};  // K mismatch
  spec.ops = {bad};
  auto r = c.Submit(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("inner dimensions"), std::string::npos) << r.status().message();

  spec.ops = {Matmul(64, 64, 64)};
  spec.strategy = "simulated-annealing-2000";
  r = c.Submit(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("known: exhaustive, random"), std::string::npos) << r.status().message();

  // Raw garbage on the client socket: an error reply, and the next request still works.
  zmq::socket_t raw(ctx_, zmq::socket_type::dealer);
  raw.connect(cluster.client_endpoint());
  raw.send(zmq::str_buffer("not a capnp message"), zmq::send_flags::none);
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(5000)), 1);
  zmq::message_t reply;
  ASSERT_TRUE(raw.recv(reply));
  auto in = wire::Decode(reply.data(), reply.size());
  ASSERT_TRUE(in.ok());
  EXPECT_EQ((*in)->Which(), schema::Envelope::Body::ERROR);

  spec.strategy = "random";
  spec.budget = 5;
  auto ok = c.Submit(spec);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// A Kernel Tuner cache of 8 x 8 x 2 = 128 configs the test writes itself: time =
// |bx - 64| / 16 + |tile - 4| + 0.5 * unroll + 1 ms, except every config with bx = 8
// absent (a restriction) and tile = 16 with unroll = 1 failing to compile. Unique
// optimum: bx = 64, tile = 4, unroll = 0 at 1 ms.
std::string WriteToyCache(const std::filesystem::path& path) {
  const std::vector<int> bxs{8, 16, 32, 48, 64, 96, 128, 256};
  const std::vector<int> tiles{1, 2, 3, 4, 6, 8, 12, 16};
  nlohmann::json j;
  j["device_name"] = "Toy GPU";
  j["kernel_name"] = "toy_kernel";
  j["objective"] = "time";
  j["tune_params_keys"] = {"bx", "tile", "unroll"};
  j["tune_params"] = {{"bx", bxs}, {"tile", tiles}, {"unroll", {0, 1}}};
  j["cache"] = nlohmann::json::object();
  for (int bx : bxs) {
    for (int tile : tiles) {
      for (int unroll : {0, 1}) {
        if (bx == 8) continue;
        nlohmann::json e = {{"bx", bx}, {"tile", tile}, {"unroll", unroll}};
        if (tile == 16 && unroll == 1) {
          e["time"] = "CompilationFailedConfig";
        } else {
          e["time"] = std::abs(bx - 64) / 16.0 + std::abs(tile - 4) + 0.5 * unroll + 1.0;
        }
        j["cache"][std::to_string(bx) + "," + std::to_string(tile) + "," + std::to_string(unroll)] = e;
      }
    }
  }
  std::ofstream(path) << j.dump();
  return path.string();
}

OpKey ToyReplayOp() {
  OpKey key;
  key.soc = std::string(kReplaySoc);
  key.op_type = "toy_kernel";
  key.attrs = {{"device", "Toy GPU"}};
  key.inputs = {{{4096}, "float32", "ND"}};
  return key;
}

TEST_F(ClusterTest, ATaskOverAReplayCacheIsTunedOnItsMeasuredTimesByRealWorkers) {
  const std::string cache = WriteToyCache(dir_ / "toy.json");
  Cluster cluster(data_dir());
  ASSERT_TRUE(cluster.StartCoordinator("tcp://127.0.0.1:*", "tcp://127.0.0.1:*", {"--replay-cache", cache}));
  cluster.StartWorker(2, 0, {"--replay-cache", cache});  // implies --evaluator replay, as the README says
  client::Client c(ctx_, cluster.client_endpoint());

  // The whole product: absent and failed configs cost an evaluation each and the best is
  // the cache's measured optimum (ms -> us).
  client::SubmitSpec all;
  all.ops = {ToyReplayOp()};
  auto sub = c.Submit(all);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  client::StatusView st = cluster.WaitDone(c, sub->submission_id, 60s);
  ASSERT_EQ(st.tasks.size(), 1u);
  const client::TaskView& t = st.tasks[0];
  ASSERT_TRUE(t.has_best) << t.state;
  EXPECT_EQ(t.evaluated, 128u);
  EXPECT_EQ(t.failed_configs, 16u + 7u);  // bx = 8, and tile = 16 with unroll = 1
  EXPECT_DOUBLE_EQ(t.best_latency_us, 1000.0);
  std::map<std::string, int64_t> best(t.best_config.begin(), t.best_config.end());
  EXPECT_EQ(best["bx"], 64);
  EXPECT_EQ(best["tile"], 4);
  EXPECT_EQ(best["unroll"], 0);

  // A budget: auto searches with the model and spends exactly the budget.
  client::SubmitSpec budgeted;
  OpKey other = ToyReplayOp();
  other.inputs[0].shape = {8192};  // another problem of the same kernel: its own task
  budgeted.ops = {other};
  budgeted.budget = 40;
  budgeted.seed = 3;
  sub = c.Submit(budgeted);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  st = cluster.WaitDone(c, sub->submission_id, 60s);
  ASSERT_EQ(st.tasks.size(), 1u);
  EXPECT_EQ(st.tasks[0].evaluated, 40u);
  ASSERT_TRUE(st.tasks[0].has_best);
  EXPECT_LE(st.tasks[0].best_latency_us, 2000.0);  // within 2x of the optimum in 40 of 128

  // A kernel no cache holds: an error that says what to load.
  client::SubmitSpec unknown;
  OpKey missing = ToyReplayOp();
  missing.op_type = "other_kernel";
  unknown.ops = {missing};
  auto r = c.Submit(unknown);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--replay-cache"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tunefleet
