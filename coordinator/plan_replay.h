// ReplayPlans: brings a restored task's strategy to where it was when the coordinator
// stopped. A checkpoint is taken only now and then (geometrically less often); what the
// strategy was asked and told after it is in the task's plan log (records.h PlanRecord,
// written with the results). Replaying that log -- each Ask again with its limit and
// what was planned then, between the results recorded before it -- makes an adaptive
// strategy continue exactly as the uninterrupted run would, not just from its results.
#pragma once

#include <vector>

#include "coordinator/records.h"
#include "coordinator/strategy.h"
#include "tunefleet/common/status.h"

namespace tunefleet::coordinator {

// `strategy` is fresh, or restored from `checkpoint` (then results with seq < told are
// not told again), over a space of `space_size` configs. `results` are the task's recorded
// results in seq order, all of this space. Each Ask is made again with what was planned
// when it was first made (the checkpoint's results and outstanding configs, earlier
// plans, results recorded before it) as taken.
// kFailedPrecondition naming the plan when an Ask answers otherwise than it did (another
// build of the strategy, or a log that is not this task's): the strategy is then in an
// unknown state and must be recreated.
Status ReplayPlans(Strategy& strategy, ConfigIndex space_size, const std::vector<StoredResult>& results,
                   const StrategyCheckpointRecord* checkpoint, const std::vector<PlanRecord>& plans);

}  // namespace tunefleet::coordinator
