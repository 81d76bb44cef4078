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
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "coordinator/strategies/checkpoint.h"
#include "coordinator/strategies/forest.h"
#include "coordinator/strategy.h"

namespace tunefleet::coordinator {

class GuidedStrategy : public Strategy {
 public:
  GuidedStrategy(const SearchSpace& space, uint64_t seed) : space_(space), rng_(seed) {}

  Batch Ask(size_t max_configs, const Taken& taken) final;
  void Tell(ConfigIndex index, std::optional<double> latency_us) final;
  // The shared state, then the strategy's own (SaveOwn/LoadOwn), under Tag().
  std::string Checkpoint() const final;
  Status Restore(std::string_view bytes) final;
  // A worker slot's job holds this many configs: with S slots, 4*S are in flight.
  size_t PreferredJobSize() const final { return 4; }

 protected:
  virtual std::string_view Tag() const = 0;
  virtual void SaveOwn(CheckpointWriter& w) const = 0;
  virtual void LoadOwn(CheckpointReader& r) = 0;

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
  size_t proposed_count() const { return proposed_.size(); }
  // Each parameter's position in its value list, and back.
  std::vector<size_t> Positions(ConfigIndex index) const;
  ConfigIndex EncodePositions(const std::vector<size_t>& positions) const;

  const SearchSpace& space_;
  std::mt19937_64 rng_;
  std::unordered_map<ConfigIndex, double> results_;
  std::vector<std::pair<ConfigIndex, double>> history_;  // every result, in the order told
  std::optional<ConfigIndex> best_;

 private:
  std::unordered_set<ConfigIndex> proposed_;
};

std::unique_ptr<Strategy> MakeSimulatedAnnealing(const SearchSpace& space, uint64_t seed);
std::unique_ptr<Strategy> MakeGenetic(const SearchSpace& space, uint64_t seed);
std::unique_ptr<Strategy> MakeIteratedLocalSearch(const SearchSpace& space, uint64_t seed);
// The model-based search's knobs; the defaults are what bench/strategies (Kernel Tuner
// caches) and bench/npu_strategies (the simulated NPU) measured best.
struct ModelOptions {
  // Random draws before the first model: `initial`, or with a known budget in a space of
  // at most large_space configs, initial_share of the budget up to initial_max. Measured
  // (bench/README.md, 160 seeds): a quarter of the budget up to 24 instead of 6 lifts
  // dedispersion by 0.03-0.07 from 50 evaluations up and leaves conv and pnpoly within
  // noise; half the budget cost conv 0.04 at 50. In the NPU's huge spaces random draws
  // are poor (LCB exploits from the start), so they keep 6.
  size_t initial = 6;
  size_t initial_max = 24;
  double initial_share = 0.25;
  size_t refit_divisor = 16;        // refit after history/refit_divisor new results (>= 1)
  // Rows each forest is fitted on (>= 2): past it, the cost model keeps the fastest half
  // and an even spread of the rest, the runs model an even spread of everything. A fit
  // costs about its rows times their features, and a refit is due every `ranked`
  // proposals, so unbounded it grew with the task until one Ask took 1.3 s at 8000
  // results, stalling the coordinator's loop. No effect at bench/strategies' budgets.
  size_t max_train = 1024;
  size_t elite = 8;                 // configs whose neighbourhoods are candidates
  size_t elite_distance = 2;        // parameters each elite differs in from the faster ones
  bool sweep = true;                // neighbours: every value of one parameter (else +-2 steps)
  size_t mutations_per_elite = 24;  // and as many crossovers
  size_t mutation_params = 2;       // parameters a mutation redraws
  size_t random_candidates = 512;
  size_t ranked = 64;               // proposals kept from one ranking
  double min_p_runs = 0.02;         // floor of P(runs) in the acquisition
  double lcb_kappa = -1;            // >= 0: always rank by mean - kappa*spread (else by size)
  uint64_t large_space = uint64_t{1} << 20;  // products above this rank by the bound...
  double large_space_kappa = 0;              // ...with this kappa; smaller ones by EI
  ForestOptions forest;             // both surrogates
  // Measured on the Kernel Tuner caches (bench/README.md, 40 seeds): the best elite's
  // two-parameter neighbourhood lifts conv A100 at 50-200 evaluations.
  size_t pair_sweep = 1;            // elites whose two-parameter neighbourhood joins the pool
  size_t pair_sweep_max = 1024;     // ...over parameter pairs with at most this many combinations
  // Which ranking each proposal comes from, in turn over the task: E expected
  // improvement x P(runs), X the best predicted mean, T Thompson sampling (one random
  // tree's best config). In large spaces E ranks by the bound and T counts as E.
  // Measured (bench/README.md, 160 seeds, with pair products): EI alternating with
  // Thompson sampling lifts conv A100 at 100 from 0.88 to 0.92 (pure Thompson sampling
  // settles early on dedispersion: 0.79 at 200 against 0.91); the former "EEEX" is
  // within noise at 50 and misses conv's anchor at 100.
  std::string pattern = "ET";
  double exploit_until = 0.75;      // X counts as E once this share of `budget` was proposed
  // From local_from proposals on (0: never), proposals take turns by late_pattern, where
  // L is local refinement: the unmeasured configs one parameter one position away from
  // the local_elites fastest configs, the fastest's first, each one's by predicted mean.
  // Measured (bench/README.md, 160 seeds): "EL" from 100 lifts dedispersion at 200 / 400
  // from 0.911 / 0.967 to 0.965 / 1.000, past annealing's 0.952 / 0.990 (a flat space is
  // won by walking its last steps, and Thompson sampling settles early there); conv A100
  // gives back 0.006 / 0.004, still above its anchor. On the simulated NPU it is neutral:
  // evaluations to 99% of the optimum over BERT-base and ResNet-50 ops, 21 seeds,
  // geometric mean 181 against 186 without it.
  size_t local_from = 100;
  std::string late_pattern = "EL";
  size_t local_elites = 8;
  // Features: also every two parameters' product, in spaces of at most large_space.
  // Measured: conv A100 at 100 0.881 -> 0.899 with the old pattern; costs dedispersion
  // 8-in-flight about 0.02.
  bool pair_products = true;
  uint64_t budget = 0;              // evaluations the task may spend (0: unknown; interleave throughout)
};
std::unique_ptr<Strategy> MakeModelBased(const SearchSpace& space, uint64_t seed, ModelOptions options = {});

}  // namespace tunefleet::coordinator
