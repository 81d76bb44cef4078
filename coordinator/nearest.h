// Nearest tuned shape: which knowledge-base entries are the "same op at another shape"
// as a key (same SoC, op type, model version, attributes, input count, ranks, dtypes and
// formats), and how far apart their shapes are: the sum over all dimensions of
// |ln(a / b)|, so doubling one dimension costs ln 2 whatever its size. Pure functions.
#pragma once

#include <optional>
#include <vector>

#include "coordinator/records.h"
#include "coordinator/store.h"

namespace tunefleet::coordinator {

// nullopt when the two keys are not comparable.
std::optional<double> ShapeDistance(const OpKey& a, const OpKey& b);

struct NearestEntry {
  KbEntry entry;
  double distance = 0;
};

// Up to k comparable entries other than the key itself, nearest first (ties: lower
// latency, then lower hash, so the answer is deterministic).
Result<std::vector<NearestEntry>> FindNearest(const Store& store, const OpKey& key, size_t k);

}  // namespace tunefleet::coordinator
