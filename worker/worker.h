// Worker: one tunefleet-worker process's engine. Owns a DEALER socket to the
// coordinator and N slot threads. The thread that calls Run() owns the socket: it
// registers (Ready with SoCs and slot count), heartbeats both ways, reconnects with
// backoff when the coordinator goes silent, hands jobs to slots and forwards their
// streamed results. Stop() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "tunefleet/common/clock.h"
#include "tunefleet/common/curve.h"
#include "tunefleet/common/protocol.h"
#include "tunefleet/common/status.h"
#include "worker/evaluator.h"

namespace tunefleet::worker {

struct WorkerOptions {
  std::string coordinator_endpoint;  // e.g. tcp://127.0.0.1:5556 or inproc://workers
  int slots = 2;
  std::string worker_id;             // for logs and the coordinator's worker table
  std::vector<std::string> socs;     // SoCs this worker can evaluate
  std::chrono::milliseconds heartbeat_interval = protocol::kHeartbeatInterval;
  int liveness = protocol::kHeartbeatLiveness;
  // Each evaluation takes at least this long in wall time, as a measurement on real
  // hardware would; fault and load tests use it to keep slots busy. Zero in production.
  std::chrono::microseconds min_eval_time{0};
  bool verbose = false;
  // CURVE towards a coordinator that runs it (curve.h): its public key and the workers'
  // pair. nullopt: plaintext.
  std::optional<curve::PeerKeys> curve;
};

class Worker {
 public:
  // Borrows evaluator, clock and context; all must outlive the Worker.
  Worker(WorkerOptions options, const Evaluator& evaluator, Clock& clock, zmq::context_t& ctx);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until Stop(). kInvalidArgument when the endpoint is malformed.
  Status Run();
  void Stop() { stop_.store(true); }

 private:
  struct Impl;
  WorkerOptions options_;
  const Evaluator& evaluator_;
  Clock& clock_;
  zmq::context_t& ctx_;
  std::atomic<bool> stop_{false};
};

}  // namespace tunefleet::worker
