// Knowledge-base lookups, shared by the coordinator's Lookup requests and
// `tunefleet lookup --data-dir` (which reads a folder a running `tune` or coordinator may
// hold open): canonical key, exact entry, else optionally the nearest tuned shape, and
// for a miss whether the key could ever be tuned.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "coordinator/nearest.h"
#include "coordinator/records.h"
#include "coordinator/store.h"
#include "tunefleet/common/search_space.h"

namespace tunefleet::coordinator {

struct LookupAnswer {
  std::optional<KbEntry> entry;
  bool approximate = false;  // the nearest tuned shape's entry, not the key's own
  double distance = 0;       // when approximate: ShapeDistance to it
  // The key's own entry (what the hit/miss metric counts).
  bool exact() const { return entry.has_value() && !approximate; }
};

// The search space a missed (canonical) key is tuned in, or why it could never be tuned --
// a typo in its SoC, a shape that does not multiply -- so a miss is not reported as "not
// tuned yet"; nullopt when its space is not known here (a replayed kernel's, outside the
// coordinator that holds its cache). A nearest answer is a neighbour whose config is one
// of that space (a neighbour's baseN=256 is no config of a 64-wide MatMul). Errors name
// the op by its position and shape ("op 1 (MatMul[...]@SoC)").
using SpaceOf = std::function<Result<std::optional<SearchSpace>>(const OpKey& canonical)>;
// `index` describes `store` (the coordinator keeps one); without it a nearest lookup
// builds its own with one scan.
Result<std::vector<LookupAnswer>> LookUp(const Store& store, const std::vector<OpKey>& keys, bool nearest,
                                         const SpaceOf& space_of, const NearestIndex* index = nullptr);

}  // namespace tunefleet::coordinator
