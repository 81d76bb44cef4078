// The event simulation of one op launch (NPU_MODEL.md "Pipes and timing"): each core's
// tiles walked one by one through their pipe stages with the ping-pong recurrence
// (a stage waits for its predecessor in the tile, for the same pipe's previous tile and
// for its buffer), fill and drain, scalar issue, DMA contention and launch; it returns
// the same KernelEstimate as the closed-form fast path plus the per-core per-pipe
// Timeline. Slower than the fast path (O(tiles of the critical cores)); used for
// profiles and to check the fast path. Pure functions, any thread.
#pragma once

#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/kernel_estimate.h"
#include "worker/sim/simulator.h"
#include "worker/sim/timeline.h"

namespace tunefleet::sim {

struct EventSimOptions {
  bool record_timeline = true;  // false: only the estimate (no interval is stored)
};

struct EventSimResult {
  // latency/duration/busy from the simulated pipes of the critical core; bytes, flops
  // and block dim as the fast path computes them (same decomposition).
  KernelEstimate estimate;
  Timeline timeline;
};

// The event simulation of `config` for a prepared problem. Errors as sim::Simulate:
// kInvalidArgument with the space's reason for an invalid config.
Result<EventSimResult> SimulateEvents(const PreparedProblem& prepared, const Config& config,
                                      const SocSpec& soc, const EventSimOptions& options = {});

}  // namespace tunefleet::sim
