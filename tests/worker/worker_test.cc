// The worker against a scripted coordinator: a real ROUTER socket on loopback that sends
// the worker jobs and reads what it answers.
#include "worker/worker.h"

#include <chrono>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/transport.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::worker {
namespace {

using namespace std::chrono_literals;

OpKey Matmul() { return test_support::TestKey("MatMul", test_support::Inputs({{256, 128}, {128, 256}})); }

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(transport::Bind(router_, "tcp://127.0.0.1:*").ok());
    WorkerOptions options;
    options.coordinator_endpoint = transport::LastEndpoint(router_);
    options.slots = 1;
    options.worker_id = "w1";
    options.socs = {"Ascend910B2"};
    worker_.emplace(options, *evaluator_, clock_, ctx_);
    thread_ = std::thread([this] { run_status_ = worker_->Run(); });
  }
  void TearDown() override {
    worker_->Stop();
    thread_.join();
    EXPECT_TRUE(run_status_.ok()) << run_status_.ToString();
  }

  // The next message of `kind` from the worker (heartbeats skipped); its routing id kept.
  std::unique_ptr<wire::Incoming> Next(schema::Envelope::Body::Which kind, std::chrono::milliseconds wait = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 50ms);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      auto frames = transport::Receive(router_, true).value();
      if (!frames) continue;
      identity_ = frames->front().to_string();
      auto in = wire::Decode(frames->back().data(), frames->back().size());
      if (in.ok() && (*in)->Which() == kind) return std::move(in).value();
    }
    return nullptr;
  }

  void SendJob(uint64_t task, uint64_t job, uint32_t attempt, const OpKey& key, ConfigIndex begin, ConfigIndex end) {
    wire::Outgoing msg;
    auto a = msg.Body().initJobAssignment();
    a.setTaskId(task);
    a.setJobId(job);
    a.setAttempt(attempt);
    wire::FillOpKey(a.initOpKey(), key);
    auto range = a.initConfigs().initRange();
    range.setBegin(begin);
    range.setEnd(end);
    ASSERT_TRUE(transport::SendTo(router_, identity_, msg).ok());
  }

  zmq::context_t ctx_;
  zmq::socket_t router_ = transport::MakeSocket(ctx_, zmq::socket_type::router);
  SocCatalog catalog_ = SocCatalog::Builtin();
  std::unique_ptr<Evaluator> evaluator_ = MakeSimEvaluator(catalog_);
  SteadyClock clock_;
  std::optional<Worker> worker_;
  std::thread thread_;
  Status run_status_;
  std::string identity_;
};

// A job the worker cannot read (a coordinator of another version, a corrupted key) is
// answered at once, final with why: unanswered, the coordinator held the worker's slot
// until the lease ran out and never gave it back.
TEST_F(WorkerTest, AJobItCannotReadIsAnsweredFinalWithTheReasonAndTheWorkerGoesOn) {
  ASSERT_NE(Next(schema::Envelope::Body::WORKER_READY), nullptr);
  OpKey bad = Matmul();
  bad.inputs[0].shape = {256, 0};
  SendJob(7, 11, 2, bad, 0, 4);
  auto refused = Next(schema::Envelope::Body::JOB_RESULT);
  ASSERT_NE(refused, nullptr) << "no answer to a job the worker cannot read";
  auto r = refused->Envelope().getBody().getJobResult();
  EXPECT_EQ(r.getTaskId(), 7u);
  EXPECT_EQ(r.getJobId(), 11u);
  EXPECT_EQ(r.getAttempt(), 2u);
  EXPECT_TRUE(r.getFinal());
  EXPECT_EQ(r.getResults().size(), 0u);
  const std::string error = r.getJobError();
  EXPECT_NE(error.find("worker w1 cannot read the job"), std::string::npos) << error;
  EXPECT_NE(error.find("non-positive dimension"), std::string::npos) << error;

  SendJob(8, 12, 1, Matmul(), 0, 3);
  std::set<ConfigIndex> measured;
  for (bool final = false; !final;) {
    auto chunk = Next(schema::Envelope::Body::JOB_RESULT);
    ASSERT_NE(chunk, nullptr) << "the worker stopped serving after the refused job";
    auto c = chunk->Envelope().getBody().getJobResult();
    EXPECT_EQ(c.getJobId(), 12u);
    EXPECT_EQ(std::string(c.getJobError()), "");
    for (auto e : c.getResults()) {
      EXPECT_TRUE(e.getOk()) << std::string(e.getError());
      measured.insert(e.getConfigIndex());
    }
    final = c.getFinal();
  }
  EXPECT_EQ(measured, (std::set<ConfigIndex>{0, 1, 2}));
}

}  // namespace
}  // namespace tunefleet::worker
