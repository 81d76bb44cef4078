// Scoring search strategies on a replayed Kernel Tuner cache, with the published
// convention (Schoonhoven, van Werkhoven & Batenburg, IEEE TEVC 2022): strategies draw
// from the full product (less what the space knows in advance: the device's threads per
// block, common/kt_cache.h); an absent or failed draw costs one evaluation and counts as
// time 1e10; fraction_of_optimum(n) = optimum / best time of the first n evaluations.
// Drives a Strategy in-process through Ask/Tell; used by bench/strategy_bench.cc and
// tests/bench. Single-threaded; plain values.
#pragma once

#include <cstddef>
#include <vector>

#include "coordinator/strategy.h"
#include "tunefleet/common/kt_cache.h"

namespace tunefleet::bench {

inline constexpr double kPenaltyTime = 1e10;  // Schoonhoven et al. 2022

// What each config of the full product costs: its measured time, or kPenaltyTime.
struct ReplayObjective {
  std::vector<double> time;  // indexed by ConfigIndex
  // Within the space's known constraints (the device's threads per block): what a
  // strategy may propose. Every config of a cache without such a limit.
  std::vector<bool> allowed;
  double optimum = 0;        // the fastest measured time
  static ReplayObjective FromCache(const KtCache& cache);
  bool Failed(ConfigIndex i) const { return time[i] >= kPenaltyTime; }
};

// The evaluations of one run, in the order their results arrived (and were told).
struct Trace {
  std::vector<ConfigIndex> configs;
  std::vector<double> times;  // objective values, kPenaltyTime for absent / failed
};

// Runs `strategy` until `budget` results have arrived (or it has nothing left), keeping
// up to `in_flight` configs outstanding. On a virtual clock, a measured config takes its
// measured time, an absent or failed one `failure_cost`; results arrive in finish order
// (ties: dispatch order) and are told at once, then the freed slot is refilled by Ask.
// So the run is deterministic given the strategy's seed. in_flight = 1 is sequential.
// The Taken callback passed to Ask reports every config dispatched so far.
Trace RunStrategy(coordinator::Strategy& strategy, const ReplayObjective& objective, size_t budget,
                  size_t in_flight, double failure_cost);

// optimum / min(times of the first n evaluations); all of them when fewer than n; 0 for
// an empty trace.
double FractionOfOptimum(double optimum, const std::vector<double>& times, size_t n);

// The exact expected fraction of optimum of uniform random sampling without replacement
// after n draws, from the full product (the published convention's random search) or,
// with within_known_constraints, from the allowed configs (what `random` draws from): a
// check on the scoring and on `random`'s figures.
double ExpectedRandomFraction(const ReplayObjective& objective, size_t n, bool within_known_constraints = false);

}  // namespace tunefleet::bench
