// Coordinator: the tunefleet-coordinator engine. One thread (the one in Run()) owns
// all scheduling state: tasks, the job queue with its leases, the worker table, and
// the sockets (client ROUTER, worker ROUTER). Other threads only call Stop(). Create()
// binds the sockets and resumes every unfinished task recorded in the Store.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/registry.h>
#include <zmq.hpp>

#include "coordinator/store.h"
#include "tunefleet/common/clock.h"
#include "tunefleet/common/curve.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/protocol.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::coordinator {

struct CoordinatorOptions {
  std::string client_endpoint = "tcp://127.0.0.1:5555";  // "tcp://127.0.0.1:*" picks a port
  std::string worker_endpoint = "tcp://127.0.0.1:5556";
  std::chrono::milliseconds heartbeat_interval = protocol::kHeartbeatInterval;
  int liveness = protocol::kHeartbeatLiveness;
  uint32_t default_job_size = protocol::kDefaultJobSize;
  bool verbose = false;
  // Kernel Tuner caches whose spaces tasks may target (op keys with SoC kReplaySoc and a
  // cache's kernel name as op type; kt_cache.h): tuning over real measured data.
  std::vector<std::shared_ptr<const KtCache>> replay_caches;
  // CURVE on both sockets with a ZAP allow-list (curve.h); nullopt: plaintext, any peer.
  std::optional<curve::ServerKeys> curve;
  // Progress events kept for `watch` (progress_log.h), about 64 bytes each.
  size_t progress_window = 65536;
  // How long a finished task stays in memory (about 4.5 KB each) once no running task
  // scheduler holds it and none of its jobs is out; `status` and `watch` read it from the
  // store after that.
  std::chrono::seconds keep_finished{600};
};

class Coordinator {
 public:
  // Borrows store, catalog, clock, registry and context; all must outlive it.
  static Result<std::unique_ptr<Coordinator>> Create(CoordinatorOptions options, Store& store,
                                                     const SocCatalog& catalog, Clock& clock,
                                                     prometheus::Registry& registry,
                                                     zmq::context_t& ctx);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The endpoints actually bound (ports resolved).
  const std::string& client_endpoint() const;
  const std::string& worker_endpoint() const;

  // Serves until Stop(); returns OK on a clean stop.
  Status Run();
  // When the loop in Run() last turned (Create's end before it runs); any thread.
  Clock::TimePoint LastTurn() const;
  void Stop() { stop_.store(true); }

 private:
  class Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace tunefleet::coordinator
