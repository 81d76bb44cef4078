// EmbeddedCoordinator: a coordinator in this process over inproc:// on a local RocksDB
// folder, its loop on a thread of its own from Start() until Stop() (or destruction):
// what `tunefleet tune` talks to, with worker slots on the same context (`lookup
// --data-dir` reads the folder directly: coordinator/lookup.h). Owns the store, context, clock and registry the coordinator borrows; the
// caller's sockets on ctx() must be closed before it is destroyed.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include <prometheus/registry.h>
#include <zmq.hpp>

#include "coordinator/coordinator.h"
#include "coordinator/store.h"
#include "tunefleet/common/clock.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::cli {

class EmbeddedCoordinator {
 public:
  // Opens data_dir (creating it), resumes its unfinished tasks and starts serving;
  // `replay`, if any, is a Kernel Tuner cache tasks with SoC "replay" may target.
  static Result<std::unique_ptr<EmbeddedCoordinator>> Start(const std::string& data_dir, const SocCatalog& catalog,
                                                            std::shared_ptr<const KtCache> replay);
  ~EmbeddedCoordinator();
  EmbeddedCoordinator(const EmbeddedCoordinator&) = delete;
  EmbeddedCoordinator& operator=(const EmbeddedCoordinator&) = delete;

  // Stops serving; the loop's outcome. Idempotent.
  Status Stop();
  zmq::context_t& ctx() { return ctx_; }
  Clock& clock() { return clock_; }
  const coordinator::CoordinatorOptions& options() const { return options_; }

 private:
  EmbeddedCoordinator() = default;
  std::unique_ptr<coordinator::Store> store_;
  prometheus::Registry registry_;
  zmq::context_t ctx_{1};
  SteadyClock clock_;
  coordinator::CoordinatorOptions options_;
  std::unique_ptr<coordinator::Coordinator> coord_;
  std::thread thread_;
  Status run_status_;
};

}  // namespace tunefleet::cli
