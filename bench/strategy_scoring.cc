#include "bench/strategy_scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>

namespace tunefleet::bench {

ReplayObjective ReplayObjective::FromCache(const KtCache& cache) {
  ReplayObjective o;
  o.time.assign(cache.space().size(), kPenaltyTime);
  o.allowed.assign(cache.space().size(), false);
  for (ConfigIndex i = 0; i < o.time.size(); ++i) {
    KtCache::Measurement m = cache.Lookup(i);
    if (m.outcome == KtCache::Outcome::kMeasured) o.time[i] = m.time_ms;
    o.allowed[i] = cache.space().IsValidIndex(i);
  }
  o.optimum = cache.measured_count() ? cache.best_time_ms() : kPenaltyTime;
  return o;
}

Trace RunStrategy(coordinator::Strategy& strategy, const ReplayObjective& objective, size_t budget,
                  size_t in_flight, double failure_cost) {
  Trace trace;
  std::vector<bool> taken(objective.time.size(), false);
  const coordinator::Strategy::Taken is_taken = [&](ConfigIndex i) { return i < taken.size() && taken[i]; };
  // (finish time, dispatch sequence, config): a min-heap on the virtual clock.
  using Event = std::tuple<double, uint64_t, ConfigIndex>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> running;
  double now = 0;
  uint64_t dispatched = 0;
  bool exhausted = false;
  in_flight = std::max<size_t>(in_flight, 1);
  while (trace.times.size() < budget) {
    size_t want = std::min(in_flight - running.size(), budget - trace.times.size() - running.size());
    if (want > 0 && !exhausted) {
      coordinator::Batch batch = strategy.Ask(want, is_taken);
      if (batch.configs.empty()) exhausted = true;
      for (ConfigIndex c : batch.configs) {
        if (c >= taken.size() || taken[c]) continue;  // a strategy bug; never score it twice
        taken[c] = true;
        double cost = objective.Failed(c) ? failure_cost : objective.time[c];
        running.emplace(now + cost, dispatched++, c);
      }
    }
    if (running.empty()) break;  // nothing left to propose and nothing outstanding
    auto [finish, seq, c] = running.top();
    running.pop();
    now = finish;
    double t = objective.time[c];
    trace.configs.push_back(c);
    trace.times.push_back(t);
    // Tell in us, as a worker reports (Kernel Tuner's times are ms).
    strategy.Tell(c, objective.Failed(c) ? std::nullopt : std::optional<double>(t * 1000.0));
  }
  return trace;
}

double FractionOfOptimum(double optimum, const std::vector<double>& times, size_t n) {
  n = std::min(n, times.size());
  if (n == 0) return 0;
  double best = *std::min_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(n));
  return optimum / best;
}

double ExpectedRandomFraction(const ReplayObjective& objective, size_t n, bool within_known_constraints) {
  std::vector<double> sorted;
  size_t drawable = 0;
  for (size_t i = 0; i < objective.time.size(); ++i) {
    if (within_known_constraints && !objective.allowed[i]) continue;
    ++drawable;
    if (objective.time[i] < kPenaltyTime) sorted.push_back(objective.time[i]);
  }
  std::sort(sorted.begin(), sorted.end());
  const double total = static_cast<double>(drawable);
  n = std::min<size_t>(n, drawable);
  auto log_choose = [](double a, double b) { return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1); };
  // P(none of the i fastest configs is drawn) = C(N - i, n) / C(N, n).
  auto none_of_fastest = [&](size_t i) {
    double rest = total - static_cast<double>(i);
    return rest < static_cast<double>(n) ? 0.0 : std::exp(log_choose(rest, static_cast<double>(n)) -
                                                          log_choose(total, static_cast<double>(n)));
  };
  double expected = 0, before = 1;
  for (size_t i = 0; i < sorted.size() && before > 0; ++i) {
    double after = none_of_fastest(i + 1);
    expected += (before - after) * objective.optimum / sorted[i];
    before = after;
  }
  return expected + before * objective.optimum / kPenaltyTime;  // only failed configs drawn
}

}  // namespace tunefleet::bench
