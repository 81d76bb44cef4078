// Simulated annealing over one-step neighbourhoods. Acceptance uses the relative
// slowdown (latencies span orders of magnitude across ops): a neighbour slower by a
// fraction f is accepted with probability exp(-f / T); T cools geometrically per result
// and is reheated when the walk stalls in a neighbourhood with nothing left to try.
#include <cmath>
#include <limits>

#include "coordinator/strategies/guided.h"

namespace tunefleet::coordinator {
namespace {

class SimulatedAnnealing final : public GuidedStrategy {
 public:
  using GuidedStrategy::GuidedStrategy;

 private:
  std::string_view Tag() const override { return "annealing"; }
  void SaveOwn(CheckpointWriter& w) const override {
    w.U64(current_.has_value());
    w.U64(current_.value_or(0));
    w.F64(current_latency_);
    w.F64(temperature_);
  }
  void LoadOwn(CheckpointReader& r) override {
    const bool has = r.U64() != 0;
    const ConfigIndex current = r.U64();
    current_ = has ? std::optional<ConfigIndex>(current) : std::nullopt;
    current_latency_ = r.F64();
    temperature_ = r.F64();
  }

  std::optional<ConfigIndex> Propose(const Taken& taken) override {
    if (!current_) return std::nullopt;
    if (auto n = Neighbour(*current_, taken)) return n;
    temperature_ = kStartTemperature;  // a dead end: reheat and jump
    return Mutate(*current_, 2, taken);
  }

  void Learn(ConfigIndex index, double latency) override {
    if (!std::isfinite(latency)) return;
    bool accept = !current_ || latency < current_latency_;
    if (!accept) {
      double slowdown = (latency - current_latency_) / current_latency_;
      accept = std::uniform_real_distribution<double>(0, 1)(rng_) < std::exp(-slowdown / temperature_);
    }
    if (accept) {
      current_ = index;
      current_latency_ = latency;
    }
    temperature_ = std::max(kMinTemperature, temperature_ * kCooling);
  }

  static constexpr double kStartTemperature = 0.2;
  static constexpr double kCooling = 0.97;
  static constexpr double kMinTemperature = 0.002;
  std::optional<ConfigIndex> current_;
  double current_latency_ = std::numeric_limits<double>::infinity();
  double temperature_ = kStartTemperature;
};

}  // namespace

std::unique_ptr<Strategy> MakeSimulatedAnnealing(const SearchSpace& space, uint64_t seed) {
  return std::make_unique<SimulatedAnnealing>(space, seed);
}

}  // namespace tunefleet::coordinator
