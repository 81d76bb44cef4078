// Iterated local search (basin hopping): first-improvement descent over one-step
// neighbourhoods from a centre; when the centre has gone kStallFactor x dims results
// without improving, hop: perturb the global best in 3 parameters and descend from there.
#include <cmath>
#include <limits>

#include "coordinator/strategies/guided.h"

namespace tunefleet::coordinator {
namespace {

class IteratedLocalSearch final : public GuidedStrategy {
 public:
  using GuidedStrategy::GuidedStrategy;

 private:
  std::string_view Tag() const override { return "ils"; }
  void SaveOwn(CheckpointWriter& w) const override {
    w.U64(centre_.has_value());
    w.U64(centre_.value_or(0));
    w.U64(stall_);
    w.U64(hop_pending_);
  }
  void LoadOwn(CheckpointReader& r) override {
    const bool has = r.U64() != 0;
    const ConfigIndex centre = r.U64();
    centre_ = has ? std::optional<ConfigIndex>(centre) : std::nullopt;
    stall_ = r.U64();
    hop_pending_ = r.U64() != 0;
  }

  std::optional<ConfigIndex> Propose(const Taken& taken) override {
    if (!best_) return std::nullopt;
    if (!centre_) centre_ = best_;
    if (stall_ >= kStallFactor * space_.dims()) {
      stall_ = 0;
      auto hop = Mutate(*best_, 3, taken);
      hop_pending_ = hop.has_value();
      return hop;
    }
    if (auto n = Neighbour(*centre_, taken)) return n;
    stall_ = kStallFactor * space_.dims();  // neighbourhood exhausted: hop next
    return Mutate(*centre_, 2, taken);
  }

  void Learn(ConfigIndex index, double latency) override {
    if (hop_pending_) {
      // The hop's landing point becomes the new centre whatever its latency.
      hop_pending_ = false;
      if (std::isfinite(latency)) {
        centre_ = index;
        return;
      }
    }
    if (centre_ && latency < Latency(*centre_)) {
      centre_ = index;
      stall_ = 0;
    } else {
      ++stall_;
    }
  }

  static constexpr size_t kStallFactor = 2;
  std::optional<ConfigIndex> centre_;
  size_t stall_ = 0;
  bool hop_pending_ = false;
};

}  // namespace

std::unique_ptr<Strategy> MakeIteratedLocalSearch(const SearchSpace& space, uint64_t seed) {
  return std::make_unique<IteratedLocalSearch>(space, seed);
}

}  // namespace tunefleet::coordinator
