// Tile timelines for the Chrome trace: re-runs chosen kernels of a profiled graph through
// the event simulation (worker/sim/event_sim.h) with the config the run used and turns
// its per-core per-pipe Timeline into OpTileTimeline rows (one process per core, one
// thread per pipe in the trace). Pure function; cost grows with the ops' tile counts.
#pragma once

#include <string>
#include <vector>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/profile_export.h"

namespace tunefleet::profile {

// At most this many cores of one op get rows: a 48-core op would otherwise add 48
// processes per op; the cores left out repeat the ones shown (the event simulation
// groups identical cores).
inline constexpr int kMaxTraceCoresPerOp = 8;

// kInvalidArgument listing the graph's forward kernels when a name is not one of them.
Result<std::vector<OpTileTimeline>> TileTimelines(const Graph& graph, const SocSpec& soc,
                                                  const std::vector<std::string>& op_names,
                                                  const RunOptions& options = {});

}  // namespace tunefleet::profile
