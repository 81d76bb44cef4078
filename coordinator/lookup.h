// Knowledge-base lookups, shared by the coordinator's Lookup requests and
// `tunefleet lookup --data-dir` (which reads a folder a running `tune` or coordinator may
// hold open): canonical key, exact entry, else optionally the nearest tuned shape, and
// for a miss whether the key could ever be tuned.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "coordinator/records.h"
#include "coordinator/store.h"

namespace tunefleet::coordinator {

struct LookupAnswer {
  std::optional<KbEntry> entry;
  bool approximate = false;  // the nearest tuned shape's entry, not the key's own
  double distance = 0;       // when approximate: ShapeDistance to it
  // The key's own entry (what the hit/miss metric counts).
  bool exact() const { return entry.has_value() && !approximate; }
};

// `tunable` says why a missed (canonical) key could never be tuned -- a typo in its SoC,
// a shape that does not multiply -- so a miss is not reported as "not tuned yet"; errors
// name the op by its position and shape ("op 1 (MatMul[...]@SoC)").
using TunableCheck = std::function<Status(const OpKey& canonical)>;
Result<std::vector<LookupAnswer>> LookUp(const Store& store, const std::vector<OpKey>& keys, bool nearest,
                                         const TunableCheck& tunable);

}  // namespace tunefleet::coordinator
