// GuidedStrategy: what the result-driven strategies (annealing, genetic, iterated local
// search) share: the seeded RNG, the set of proposed configs, every result told so far,
// and moves in the space -- a config's neighbours change one parameter to an adjacent
// value in its list, mutations change k parameters at random. Proposals are always
// valid (known constraints are never spent on) and never repeat within a task. A failed
// config (Tell with nullopt) counts as infinitely slow. Loop-thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "coordinator/strategy.h"

namespace tunefleet::coordinator {

class GuidedStrategy : public Strategy {
 public:
  GuidedStrategy(const SearchSpace& space, uint64_t seed) : space_(space), rng_(seed) {}

  Batch Ask(size_t max_configs, const Taken& taken) final;
  void Tell(ConfigIndex index, std::optional<double> latency_us) final;

 protected:
  // The next config the strategy wants, or nullopt to fall back to a random one.
  // Must not return proposed or taken configs (use Usable()).
  virtual std::optional<ConfigIndex> Propose(const Taken& taken) = 0;
  virtual void Learn(ConfigIndex index, double latency_us) = 0;

  bool Usable(ConfigIndex i, const Taken& taken);
  std::optional<ConfigIndex> RandomUsable(const Taken& taken);
  // A usable neighbour of `from` (one parameter one step away), tried in random order.
  std::optional<ConfigIndex> Neighbour(ConfigIndex from, const Taken& taken);
  // `from` with k random parameters set to random values (usable, or nullopt).
  std::optional<ConfigIndex> Mutate(ConfigIndex from, int k, const Taken& taken);
  // Uniform crossover of two configs, then one mutation with probability p_mutate.
  std::optional<ConfigIndex> Cross(ConfigIndex a, ConfigIndex b, double p_mutate, const Taken& taken);

  double Latency(ConfigIndex i) const;  // told latency, +inf when failed or unknown
  const SearchSpace& space_;
  std::mt19937_64 rng_;
  std::unordered_map<ConfigIndex, double> results_;
  std::optional<ConfigIndex> best_;

 private:
  std::optional<ConfigIndex> EncodePositions(const std::vector<size_t>& positions);
  std::vector<size_t> Positions(ConfigIndex index) const;
  std::unordered_set<ConfigIndex> proposed_;
};

std::unique_ptr<Strategy> MakeSimulatedAnnealing(const SearchSpace& space, uint64_t seed);
std::unique_ptr<Strategy> MakeGenetic(const SearchSpace& space, uint64_t seed);
std::unique_ptr<Strategy> MakeIteratedLocalSearch(const SearchSpace& space, uint64_t seed);

}  // namespace tunefleet::coordinator
