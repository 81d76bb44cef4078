// Moving knowledge-base entries between installations (`tunefleet cache import`, over a
// coordinator's client socket or into a local folder): every imported entry is checked
// against what this build can tune -- its simulator model version, its key, its best
// config in the op's search space -- before it is merged by the knowledge base's one
// rule, the faster entry per key wins (Store::MergeKb).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/records.h"
#include "coordinator/store.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {

// What an imported entry is checked against: the op's search space, and the fastest
// latency any config of it can have.
struct ImportCheck {
  TuningProblem problem;
  double latency_floor_us = 0;  // the SoC's kernel launch, and the roofline for cube ops
  // For measured data (a replayed kernel): the time measured for a config, nullopt when
  // it has none (absent or failed). An imported latency must be that time.
  std::function<std::optional<double>(ConfigIndex)> measured_us;
};
// The op's check, nullopt when this process cannot rebuild the op and the config is to
// be taken as given (a replayed kernel's key read without its cache file), or an error
// that says why the key can never be served here (an unknown SoC, a bad shape).
using ProblemLookup = std::function<Result<std::optional<ImportCheck>>(const OpKey& canonical)>;
// The check of a simulated op on `soc` (MakeTuningProblem, CubeLatencyFloorUs).
Result<ImportCheck> SimulatedImportCheck(const OpKey& key, const SocSpec& soc);
// The check of a replayed kernel's op over its cache (MakeReplayProblem, the cache's
// measured times); `cache` must outlive the check.
Result<ImportCheck> ReplayImportCheck(const OpKey& key, const KtCache& cache);

// Makes e what the knowledge base would have stored for it: its key canonical
// (CanonicalOpKey), its best config in the space's parameter order, its improvement
// recomputed from the two latencies. kInvalidArgument that says what is wrong for an
// entry of another simulator model version, a latency that is not a positive number or
// is below the op's floor (no config is that fast: a made-up entry would otherwise stay
// forever, as only a faster one replaces it), a key problem_for refuses, or a config
// that is not the op's (unknown or missing parameters, a value outside a parameter's
// list, an index that names another config, a config the op's constraints rule out).
// A replayed kernel's latency must be the time its cache measured for the config;
// a simulated op's latencies above the floor are taken as measured.
Status PrepareImportedEntry(KbEntry& e, const ProblemLookup& problem_for);

struct ImportRefusal {
  size_t index = 0;  // position in the imported list
  std::string reason;
};

struct ImportOutcome {
  uint32_t added = 0;     // keys the knowledge base had no entry for
  uint32_t replaced = 0;  // keys whose stored entry was slower
  uint32_t kept = 0;      // keys whose stored entry is as fast or faster: left as it was
  std::vector<ImportRefusal> refused;
  std::vector<KbEntry> written;  // the added and replacing entries, in order (none in a dry run)
};

// Prepares every entry and merges those that pass. With refusals and !skip_refused
// nothing is written (the outcome lists the refusals only), so a file is imported
// whole or not at all; dry_run writes nothing and counts what a real import would do.
Result<ImportOutcome> ImportKb(Store& store, std::vector<KbEntry> entries, const ProblemLookup& problem_for,
                               bool dry_run, bool skip_refused);

}  // namespace tunefleet::coordinator
