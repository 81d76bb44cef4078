#include "worker/worker.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/core.h>

#include "tunefleet/common/transport.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::worker {
namespace {

// A job as the slot sees it: decoded from the assignment, owned by value.
struct Job {
  uint64_t task_id = 0, job_id = 0;
  uint32_t attempt = 0;
  OpKey key;
  uint64_t seed = 0;
  bool is_range = true;
  ConfigIndex begin = 0, end = 0;
  std::vector<ConfigIndex> indices;
};

Result<Job> ReadJob(schema::JobAssignment::Reader r) {
  Job job;
  job.task_id = r.getTaskId();
  job.job_id = r.getJobId();
  job.attempt = r.getAttempt();
  TF_ASSIGN_OR_RETURN(job.key, wire::ReadOpKey(r.getOpKey()));
  job.seed = r.getMeasurementSeed();
  auto configs = r.getConfigs();
  if (configs.isRange()) {
    job.begin = configs.getRange().getBegin();
    job.end = configs.getRange().getEnd();
    if (job.end < job.begin) return InvalidArgument("job range ends before it begins");
  } else {
    job.is_range = false;
    for (uint64_t i : configs.getIndices()) job.indices.push_back(i);
  }
  return job;
}

// The JobResult envelope of `evals` of the job.
void FillJobResult(wire::Outgoing& msg, const Job& job, const std::vector<Evaluation>& evals, bool final,
                   const std::string& job_error) {
  auto r = msg.Body().initJobResult();
  r.setTaskId(job.task_id);
  r.setJobId(job.job_id);
  r.setAttempt(job.attempt);
  r.setFinal(final);
  r.setJobError(job_error);
  auto list = r.initResults(static_cast<unsigned>(evals.size()));
  for (unsigned i = 0; i < evals.size(); ++i) {
    list[i].setConfigIndex(evals[i].index);
    list[i].setOk(evals[i].ok);
    list[i].setLatencyUs(evals[i].latency_us);
    list[i].setError(evals[i].error);
  }
}

}  // namespace

// Slot threads pull jobs from `queue` and push encoded JobResult envelopes to the run
// thread over one inproc PUSH socket each; only the run thread touches the DEALER.
struct Worker::Impl {
  Impl(Worker& w) : worker(w) {}

  Worker& worker;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;  // GUARDED_BY(mu); bounded by the credits we granted
  bool closing = false;   // GUARDED_BY(mu)
  std::set<uint64_t> stopped_tasks;          // GUARDED_BY(mu): the coordinator sent StopTask
  std::atomic<uint64_t> stops_received{0};   // bumped with each: a slot rechecks only then

  void StopTask(uint64_t task_id) {
    {
      std::lock_guard lock(mu);
      stopped_tasks.insert(task_id);
    }
    stops_received.fetch_add(1);
  }
  bool Stopped(uint64_t task_id) {
    std::lock_guard lock(mu);
    return stopped_tasks.contains(task_id);
  }
  std::string results_endpoint;

  void SlotMain(int slot) {
    zmq::socket_t push = transport::MakeSocket(worker.ctx_, zmq::socket_type::push);
    (void)transport::Connect(push, results_endpoint);
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return closing || !queue.empty(); });
        if (closing) return;
        job = std::move(queue.front());
        queue.pop_front();
      }
      RunJob(slot, job, push);
    }
  }

  void SendChunk(zmq::socket_t& push, const Job& job, const std::vector<Evaluation>& evals,
                 bool final, const std::string& job_error) {
    wire::Outgoing msg;
    FillJobResult(msg, job, evals, final, job_error);
    (void)transport::Send(push, msg);
  }

  void RunJob(int slot, const Job& job, zmq::socket_t& push) {
    auto prepared = worker.evaluator_.Prepare(job.key, job.seed);
    if (!prepared.ok()) {
      SendChunk(push, job, {}, true, prepared.status().ToString());
      return;
    }
    if (worker.options_.verbose) {
      fmt::print(stderr, "worker {} slot {}: job {} attempt {} ({})\n", worker.options_.worker_id,
                 slot, job.job_id, job.attempt, job.key.Display());
    }
    std::vector<Evaluation> chunk;
    // A StopTask for this job's task ends it early: what was measured goes out final.
    uint64_t stops_seen = stops_received.load();
    bool task_stopped = Stopped(job.task_id);
    auto go_on = [&] {
      if (worker.stop_.load()) return false;
      if (const uint64_t now = stops_received.load(); now != stops_seen) {
        stops_seen = now;
        task_stopped = Stopped(job.task_id);
      }
      return !task_stopped;
    };
    const auto pace = worker.options_.min_eval_time;
    auto last_sent = worker.clock_.Now();
    auto next_due = std::chrono::steady_clock::now();
    auto evaluate = [&](ConfigIndex index, bool skip_rejected) {
      Evaluation e = (*prepared)->Evaluate(index);
      if (pace.count() > 0 && !e.rejected) {
        next_due += pace;
        std::this_thread::sleep_until(next_due);
      }
      // A range job covers the whole product; the coordinator expects results only for
      // the valid configs in it. A list job reports every config it named.
      if (e.rejected && skip_rejected) return;
      chunk.push_back(std::move(e));
      const auto now = worker.clock_.Now();
      if (chunk.size() >= protocol::kResultChunk || now - last_sent >= protocol::kResultFlushInterval) {
        SendChunk(push, job, chunk, false, "");
        chunk.clear();
        last_sent = now;
      }
    };
    if (job.is_range) {
      for (ConfigIndex i = job.begin; i < job.end && go_on(); ++i) evaluate(i, true);
    } else {
      for (ConfigIndex i : job.indices) {
        if (!go_on()) break;
        evaluate(i, false);
      }
    }
    if (worker.stop_.load()) return;  // the coordinator requeues what we did not finish
    SendChunk(push, job, chunk, true, "");
  }
};

Worker::Worker(WorkerOptions options, const Evaluator& evaluator, Clock& clock,
               zmq::context_t& ctx)
    : options_(std::move(options)), evaluator_(evaluator), clock_(clock), ctx_(ctx) {}

Worker::~Worker() = default;

Status Worker::Run() {
  Impl impl(*this);
  impl.results_endpoint = fmt::format("inproc://worker-results-{}", static_cast<void*>(this));
  zmq::socket_t results = transport::MakeSocket(ctx_, zmq::socket_type::pull);
  TF_RETURN_IF_ERROR(transport::Bind(results, impl.results_endpoint));

  std::vector<std::thread> slots;
  for (int s = 0; s < options_.slots; ++s) slots.emplace_back([&impl, s] { impl.SlotMain(s); });
  auto join_slots = [&] {
    {
      std::lock_guard lock(impl.mu);
      impl.closing = true;
    }
    impl.cv.notify_all();
    for (auto& t : slots) t.join();
  };

  auto send_ready = [&](zmq::socket_t& dealer) {
    wire::Outgoing msg;
    auto ready = msg.Body().initWorkerReady();
    ready.setWorkerId(options_.worker_id);
    ready.setSlots(static_cast<uint32_t>(options_.slots));
    auto socs = ready.initSocs(static_cast<unsigned>(options_.socs.size()));
    for (unsigned i = 0; i < options_.socs.size(); ++i) socs.set(i, options_.socs[i]);
    auto evals = ready.initEvaluators(1);
    evals.set(0, std::string(evaluator_.name()));
    return transport::Send(dealer, msg);
  };

  auto connect = [&]() -> Result<zmq::socket_t> {
    zmq::socket_t dealer = transport::MakeSocket(ctx_, zmq::socket_type::dealer);
    if (options_.curve) TF_RETURN_IF_ERROR(curve::MakeClient(dealer, *options_.curve));
    TF_RETURN_IF_ERROR(transport::Connect(dealer, options_.coordinator_endpoint));
    TF_RETURN_IF_ERROR(send_ready(dealer));
    return dealer;
  };

  Result<zmq::socket_t> first = connect();
  if (!first.ok()) {
    join_slots();
    return first.status();
  }
  zmq::socket_t dealer = std::move(first).value();
  const auto interval = options_.heartbeat_interval;
  auto last_heard = clock_.Now();
  auto next_heartbeat = clock_.Now() + interval;
  auto backoff = std::chrono::duration_cast<Clock::Duration>(protocol::kReconnectInitial);
  // After registering again, Disconnects until the coordinator's next heartbeat or job
  // answer messages it got from us before our WorkerReady (ZeroMQ keeps the order).
  std::optional<Clock::TimePoint> registering_since;
  Status wrong_endpoint;  // set when the endpoint turns out to be a client socket

  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{dealer.handle(), 0, ZMQ_POLLIN, 0},
                               {results.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(50));

    if (items[1].revents & ZMQ_POLLIN) {
      // Forward every queued result chunk as-is: it is already an encoded envelope. A stop
      // ends it: with the coordinator gone each send waits out its timeout, and a large
      // job's chunks kept a SIGTERM waiting 73 s.
      while (!stop_.load()) {
        zmq::message_t m;
        if (!results.recv(m, zmq::recv_flags::dontwait)) break;
        // Lost only when the coordinator is unreachable: it requeues the job at the
        // lease's end, and a live coordinator would have taken the message.
        if (Status sent = transport::SendEncoded(dealer, m); !sent.ok()) {
          fmt::print(stderr, "worker {}: a result chunk is dropped: {}\n", options_.worker_id, sent.ToString());
        }
      }
    }
    if (items[0].revents & ZMQ_POLLIN) {
      for (;;) {
        auto frames = transport::Receive(dealer, true);
        if (!frames.ok() || !frames->has_value()) break;
        last_heard = clock_.Now();
        backoff = std::chrono::duration_cast<Clock::Duration>(protocol::kReconnectInitial);
        const zmq::message_t& payload = (**frames).back();
        auto in = wire::Decode(payload.data(), payload.size());
        if (!in.ok()) {
          fmt::print(stderr, "worker {}: dropped a message: {}\n", options_.worker_id,
                     in.status().ToString());
          continue;
        }
        Status handled = wire::Guard("coordinator message", [&]() -> Status {
          auto body = (*in)->Envelope().getBody();
          switch (body.which()) {
            case schema::Envelope::Body::JOB_ASSIGNMENT: {
              registering_since.reset();
              const auto assignment = body.getJobAssignment();
              Result<Job> read = ReadJob(assignment);
              if (!read.ok()) {
                // Answered at once, final with the error: the coordinator counts the job's
                // slot free again (unanswered, the worker lost it for good) and requeues
                // it, failing its configs with this message on the last attempt.
                Job ids;
                ids.task_id = assignment.getTaskId();
                ids.job_id = assignment.getJobId();
                ids.attempt = assignment.getAttempt();
                wire::Outgoing msg;
                FillJobResult(msg, ids, {}, true,
                              fmt::format("worker {} cannot read the job: {}", options_.worker_id,
                                          read.status().message()));
                TF_RETURN_IF_ERROR(transport::Send(dealer, msg));
                return read.status().WithContext(fmt::format("job {} refused", ids.job_id));
              }
              Job job = std::move(read).value();
              {
                std::lock_guard lock(impl.mu);
                impl.queue.push_back(std::move(job));
              }
              impl.cv.notify_one();
              return Status::Ok();
            }
            case schema::Envelope::Body::HEARTBEAT:
              registering_since.reset();
              return Status::Ok();
            case schema::Envelope::Body::STOP_TASK:
              impl.StopTask(body.getStopTask().getTaskId());
              return Status::Ok();
            case schema::Envelope::Body::DISCONNECT: {
              // The coordinator does not know us (it restarted or declared us dead). Only
              // the first of a burst registers again: each registration requeues there
              // the jobs just given here. If the WorkerReady was lost, a Disconnect past
              // the silence window sends it again.
              const auto now = clock_.Now();
              if (registering_since && now - *registering_since <= interval * options_.liveness) {
                return Status::Ok();
              }
              registering_since = now;
              // Jobs not started yet belong to leases the coordinator no longer holds:
              // it requeues their configs itself, so running them would be wasted.
              size_t dropped = 0;
              {
                std::lock_guard lock(impl.mu);
                dropped = impl.queue.size();
                impl.queue.clear();
              }
              fmt::print(stderr, "worker {}: the coordinator does not know this worker ({}): registering again, "
                         "{} queued jobs dropped\n", options_.worker_id, std::string(body.getDisconnect().getReason()),
                         dropped);
              return send_ready(dealer);
            }
            case schema::Envelope::Body::ERROR:
              // Only a coordinator's client socket answers with an ErrorReply: this worker
              // was pointed at the wrong port and would retry forever.
              wrong_endpoint = InvalidArgument(fmt::format(
                  "{} is a coordinator's client endpoint, which answered \"{}\": give --coordinator its worker "
                  "endpoint (--worker-bind, default port 5556)",
                  options_.coordinator_endpoint, std::string(body.getError().getMessage())));
              return Status::Ok();
            default:
              return InvalidArgument("unexpected message kind from the coordinator");
          }
        });
        if (!handled.ok()) {
          fmt::print(stderr, "worker {}: {}\n", options_.worker_id, handled.ToString());
        }
        if (!wrong_endpoint.ok()) {
          join_slots();
          return wrong_endpoint;
        }
      }
    }

    auto now = clock_.Now();
    if (now >= next_heartbeat) {
      wire::Outgoing hb;
      hb.Body().initHeartbeat();
      (void)transport::Send(dealer, hb);
      next_heartbeat = now + interval;
    }
    if (now - last_heard > interval * options_.liveness) {
      // Paranoid Pirate: the coordinator is gone; reconnect with exponential backoff.
      fmt::print(stderr, "worker {}: nothing from the coordinator at {} for {} ms: reconnecting in {} ms{}\n",
                 options_.worker_id, options_.coordinator_endpoint,
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - last_heard).count(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count(),
                 options_.curve ? " (with CURVE on, a key the coordinator does not list looks like this: "
                                  "check that this worker's key pair is the one in its worker.public)"
                                : "");
      // In steps, so a stop request is not kept waiting by a long backoff.
      for (auto slept = Clock::Duration::zero(); slept < backoff && !stop_.load(); slept += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (stop_.load()) break;
      backoff = std::min(backoff * 2,
                         std::chrono::duration_cast<Clock::Duration>(protocol::kReconnectMax));
      Result<zmq::socket_t> again = connect();
      if (again.ok()) dealer = std::move(again).value();
      last_heard = clock_.Now();
    }
  }

  wire::Outgoing bye;
  bye.Body().initDisconnect().setReason("worker stopping");
  (void)transport::Send(dealer, bye);
  join_slots();
  return Status::Ok();
}

}  // namespace tunefleet::worker
