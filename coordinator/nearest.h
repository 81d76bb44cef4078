// Nearest tuned shape: which knowledge-base entries are the "same op at another shape"
// as a key (same SoC, op type, model version, attributes, input count, ranks, dtypes and
// formats), and how far apart their shapes are: the sum over all dimensions of
// |ln(a / b)|, so doubling one dimension costs ln 2 whatever its size. NearestIndex keeps
// the knowledge base's keys by that class in memory, so a lookup compares a key only with
// its class and reads only the entries it answers with (a scan per miss stalled the
// coordinator's loop for seconds on a knowledge base of 23,000 entries).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
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

class NearestIndex {
 public:
  // One scan of the knowledge base.
  static Result<NearestIndex> Build(const Store& store);
  // After a knowledge-base write: the entry added, or replacing its key's.
  void Put(const KbEntry& e);
  size_t size() const { return size_; }

  // Up to k comparable entries other than the key itself that `fits` accepts (a config
  // valid in the key's own space), nearest first (ties: lower latency, then lower hash,
  // so the answer is deterministic); read from `store`, which the index must describe.
  using Fits = std::function<bool(const KbEntry&)>;
  Result<std::vector<NearestEntry>> Find(const Store& store, const OpKey& key, size_t k, const Fits& fits) const;

 private:
  // One comparability class's entries, flat so a lookup scans contiguous memory (a map of
  // nodes cost 65 ns an entry in cache misses: 1.3 ms a miss over 20,000 entries).
  struct Class {
    size_t dims = 0;                      // dimensions of every input, in order
    std::vector<double> logs;             // ln of each, dims per entry
    std::vector<double> latency_us;
    std::vector<OpKeyHash> hashes;
    std::map<OpKeyHash, size_t> position;  // entry -> its index in the vectors
  };
  std::map<std::string, Class> classes_;  // comparability class -> entries
  size_t size_ = 0;
};

}  // namespace tunefleet::coordinator
