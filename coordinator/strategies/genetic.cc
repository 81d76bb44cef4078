// Genetic algorithm: an elite population of the kPopulation fastest configs seen;
// children by uniform crossover of two tournament-selected parents plus a mutation
// with probability kMutation. Until the population is full, proposals are random.
#include <algorithm>
#include <cmath>

#include "coordinator/strategies/guided.h"

namespace tunefleet::coordinator {
namespace {

class Genetic final : public GuidedStrategy {
 public:
  using GuidedStrategy::GuidedStrategy;

 private:
  std::string_view Tag() const override { return "genetic"; }
  void SaveOwn(CheckpointWriter& w) const override {
    w.U64(population_.size());
    for (const auto& [latency, index] : population_) {
      w.F64(latency);
      w.U64(index);
    }
  }
  void LoadOwn(CheckpointReader& r) override {
    population_.clear();
    const uint64_t n = r.U64();
    for (uint64_t k = 0; k < n && !r.failed(); ++k) {
      const double latency = r.F64();
      population_.emplace_back(latency, r.U64());
    }
  }

  std::optional<ConfigIndex> Propose(const Taken& taken) override {
    if (population_.size() < kPopulation) return std::nullopt;
    ConfigIndex a = Tournament(), b = Tournament();
    if (auto child = Cross(a, b, kMutation, taken)) return child;
    return Mutate(a, 1, taken);
  }

  void Learn(ConfigIndex index, double latency) override {
    if (!std::isfinite(latency)) return;
    std::pair<double, ConfigIndex> member{latency, index};
    population_.insert(std::upper_bound(population_.begin(), population_.end(), member), member);
    if (population_.size() > kPopulation) population_.pop_back();
  }

  ConfigIndex Tournament() {
    std::uniform_int_distribution<size_t> pick(0, population_.size() - 1);
    size_t best = pick(rng_);
    for (int i = 1; i < kTournament; ++i) best = std::min(best, pick(rng_));  // sorted: lower = faster
    return population_[best].second;
  }

  static constexpr size_t kPopulation = 16;
  static constexpr int kTournament = 3;
  static constexpr double kMutation = 0.3;
  std::vector<std::pair<double, ConfigIndex>> population_;  // sorted, fastest first
};

}  // namespace

std::unique_ptr<Strategy> MakeGenetic(const SearchSpace& space, uint64_t seed) {
  return std::make_unique<Genetic>(space, seed);
}

}  // namespace tunefleet::coordinator
