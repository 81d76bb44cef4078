// Model-based search (as Ansor and MetaSchedule do, with the expected improvement of
// Bayesian optimisation): after an initial design of random draws (a quarter of a known
// budget, up to 24, in spaces of at most 2^20 configs; else 6), two random forests over
// the parameter positions and, in those smaller spaces, every two parameters' product --
// one on the log latency of the configs that ran, one on whether a config ran at all
// (failures are learned from, so a space whose restrictions are unknown is mapped as it
// is measured) -- rank an evolutionary candidate pool (one-parameter sweeps of the
// fastest configs, the best one's two-parameter neighbourhood, mutations and crossovers,
// plus random draws). Proposals take turns (ModelOptions::pattern) between EI x P(runs)
// (a lower confidence bound in very large spaces), Thompson sampling over the trees,
// and, until the last quarter of the budget, the best predicted mean; after
// ModelOptions::local_from proposals (late_pattern), between EI and local refinement of
// the fastest configs (their one-step neighbours by predicted mean). The ranking is
// refreshed whenever enough new results arrived, so with B configs in flight the next
// proposals already use every result told so far.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "coordinator/strategies/forest.h"
#include "coordinator/strategies/guided.h"

namespace tunefleet::coordinator {
namespace {

class ModelBased final : public GuidedStrategy {
 public:
  ModelBased(const SearchSpace& space, uint64_t seed, ModelOptions options)
      : GuidedStrategy(space, seed), o_(options), initial_(InitialDraws(options, space.size())) {}

 private:
  std::string_view Tag() const override { return "model"; }
  void SaveOwn(CheckpointWriter& w) const override {
    w.U64(ok_count_);
    w.U64(fitted_at_);
    w.Indices(ranked_);
    w.U64(cursor_);
  }
  void LoadOwn(CheckpointReader& r) override {
    ok_count_ = r.U64();
    fitted_at_ = r.U64();
    ranked_ = r.Indices();
    cursor_ = r.U64();
  }

  std::optional<ConfigIndex> Propose(const Taken& taken) override {
    // The initial design counts what is in flight: with B configs out, the model takes
    // over as soon as two results ran, not after `initial` more random draws.
    if (proposed_count() < initial_ || ok_count_ < 2) return std::nullopt;
    const size_t fresh = history_.size() - fitted_at_;
    if (cursor_ >= ranked_.size() || fresh >= std::max<size_t>(1, history_.size() / o_.refit_divisor)) {
      Rank(taken);
    }
    while (cursor_ < ranked_.size()) {
      ConfigIndex i = ranked_[cursor_++];
      if (Usable(i, taken)) return i;
    }
    return std::nullopt;
  }

  void Learn(ConfigIndex, double latency) override {
    if (std::isfinite(latency)) ++ok_count_;
  }

  // Each parameter's position in its list and, in spaces of at most large_space configs,
  // the product of every two parameters' values: a tree splits on one feature at a
  // time, and what a kernel's speed and restrictions depend on is often a product
  // (conv A100: block_size_x * block_size_y threads, at most 1024 of them).
  std::vector<float> Features(ConfigIndex index) const {
    std::vector<size_t> pos = Positions(index);
    std::vector<float> row(pos.begin(), pos.end());
    if (!o_.pair_products || space_.size() > o_.large_space) return row;
    const auto& params = space_.params();
    for (size_t a = 0; a < pos.size(); ++a) {
      if (params[a].values.size() < 2) continue;  // a constant tells the trees nothing
      for (size_t b = a + 1; b < pos.size(); ++b) {
        if (params[b].values.size() < 2) continue;
        row.push_back(static_cast<float>(static_cast<double>(params[a].values[pos[a]]) *
                                         static_cast<double>(params[b].values[pos[b]])));
      }
    }
    return row;
  }

  void Rank(const Taken& taken) {
    fitted_at_ = history_.size();
    cursor_ = 0;
    ranked_.clear();

    // Training sets, in the order results were told (deterministic).
    std::vector<std::vector<float>> ok_rows, all_rows;
    std::vector<double> log_latency, ran;
    std::vector<std::pair<double, ConfigIndex>> fastest;
    for (const auto& [index, latency] : history_) {
      std::vector<float> row = Features(index);
      const bool ok = std::isfinite(latency);
      all_rows.push_back(row);
      ran.push_back(ok ? 1.0 : 0.0);
      if (!ok) continue;
      ok_rows.push_back(std::move(row));
      log_latency.push_back(Target(latency));
      fastest.emplace_back(latency, index);
    }
    const bool any_failed = ok_rows.size() < all_rows.size();
    if (ok_rows.size() > o_.max_train) KeepFastestAndSpread(ok_rows, log_latency);
    if (all_rows.size() > o_.max_train) KeepSpread(all_rows, ran, o_.max_train);
    std::sort(fastest.begin(), fastest.end());
    const double best = Target(fastest.front().first);
    RegressionForest cost(o_.forest);
    cost.Fit(ok_rows, log_latency, rng_);
    RegressionForest runs(o_.forest);
    if (any_failed) runs.Fit(all_rows, ran, rng_);

    const bool large = space_.size() > o_.large_space;
    // Candidate pool: the neighbourhoods of the elite, their mutations and crossovers,
    // and random draws for exploration.
    std::set<ConfigIndex> pool;
    auto add = [&](ConfigIndex i) {
      if (Usable(i, taken)) pool.insert(i);
    };
    // The elite: the fastest configs, each differing from every faster one chosen in at
    // least elite_distance parameters, so several basins stay in play.
    std::vector<std::vector<size_t>> elites;
    for (const auto& [latency, index] : fastest) {
      if (elites.size() >= o_.elite) break;
      std::vector<size_t> pos = Positions(index);
      bool distinct = true;
      for (const auto& e : elites) {
        size_t differ = 0;
        for (size_t d = 0; d < pos.size(); ++d) differ += pos[d] != e[d];
        distinct = distinct && differ >= o_.elite_distance;
      }
      if (distinct) elites.push_back(std::move(pos));
    }
    const size_t elite = elites.size();
    for (size_t e = 0; e < elite; ++e) {
      const std::vector<size_t>& pos = elites[e];
      for (size_t d = 0; d < pos.size(); ++d) {
        const size_t radix = space_.params()[d].values.size();
        for (size_t p = 0; p < radix; ++p) {
          int64_t dist = static_cast<int64_t>(p) - static_cast<int64_t>(pos[d]);
          if (!o_.sweep && (dist < -2 || dist > 2)) continue;
          std::vector<size_t> n = pos;
          n[d] = p;
          add(EncodePositions(n));
        }
      }
      if (e < o_.pair_sweep && !large) {
        // Every config that differs from this elite in exactly two parameters: reaches
        // a basin that needs two parameters changed together (conv A100: shared memory
        // pays only with read-only loads, and each alone is slower). Not in very large
        // spaces, where the pool would grow with the square of their many values.
        for (size_t d1 = 0; d1 < pos.size(); ++d1) {
          const size_t r1 = space_.params()[d1].values.size();
          for (size_t d2 = d1 + 1; d2 < pos.size(); ++d2) {
            const size_t r2 = space_.params()[d2].values.size();
            if (r1 * r2 > o_.pair_sweep_max) continue;
            for (size_t p1 = 0; p1 < r1; ++p1) {
              if (p1 == pos[d1]) continue;
              for (size_t p2 = 0; p2 < r2; ++p2) {
                if (p2 == pos[d2]) continue;
                std::vector<size_t> n = pos;
                n[d1] = p1;
                n[d2] = p2;
                add(EncodePositions(n));
              }
            }
          }
        }
      }
      for (size_t m = 0; m < o_.mutations_per_elite; ++m) {
        std::vector<size_t> n = pos;
        for (size_t k = 0; k < o_.mutation_params; ++k) {
          const size_t d = std::uniform_int_distribution<size_t>(0, n.size() - 1)(rng_);
          n[d] = std::uniform_int_distribution<size_t>(0, space_.params()[d].values.size() - 1)(rng_);
        }
        add(EncodePositions(n));
        const size_t other = std::uniform_int_distribution<size_t>(0, elite - 1)(rng_);
        const std::vector<size_t>& mate = elites[other];
        for (size_t d = 0; d < n.size(); ++d) n[d] = (rng_() & 1) ? pos[d] : mate[d];
        add(EncodePositions(n));
      }
    }
    std::uniform_int_distribution<ConfigIndex> any(0, space_.size() - 1);
    for (size_t r = 0; r < o_.random_candidates; ++r) add(any(rng_));

    // Three rankings of the pool, lower is better. E: in small spaces the expected
    // improvement (of log latency) times the chance the config runs; in large ones the
    // lower confidence bound, which exploits -- measured on the simulated NPU, where
    // EI's exploration of a 10^6-config space never pays back within a few hundred
    // evaluations (bench/README.md, npu_strategies). X: the predicted mean. T (small
    // spaces): Thompson sampling, each proposal the best config of one random tree.
    const double kappa = o_.lcb_kappa >= 0 ? o_.lcb_kappa : large ? o_.large_space_kappa : -1;
    const bool late = o_.local_from != 0 && proposed_count() >= o_.local_from;
    std::string pattern = late ? o_.late_pattern : o_.pattern;
    if (o_.budget != 0 &&
        static_cast<double>(proposed_count()) >= o_.exploit_until * static_cast<double>(o_.budget)) {
      std::replace(pattern.begin(), pattern.end(), 'X', 'E');
    }
    if (large) std::replace(pattern.begin(), pattern.end(), 'T', 'E');
    const bool thompson = pattern.find('T') != std::string::npos;
    std::vector<std::pair<double, ConfigIndex>> scored, exploit;
    std::vector<ConfigIndex> candidates;
    std::vector<std::vector<double>> draws;  // per candidate: each tree's answer - log P(runs)
    scored.reserve(pool.size());
    auto chance_to_run = [&](const std::vector<float>& row) {
      return std::max(any_failed ? runs.Predict(row).mean : 1.0, o_.min_p_runs);
    };
    for (ConfigIndex i : pool) {
      std::vector<float> row = Features(i);
      std::vector<double> answers = cost.PerTree(row);
      const RegressionForest::Prediction p = RegressionForest::Summarize(answers);
      const double sigma = std::max(p.stddev, 1e-3 * std::abs(best) + 1e-12);
      const double p_runs = chance_to_run(row);
      exploit.emplace_back(p.mean - std::log(p_runs), i);
      if (thompson) {
        candidates.push_back(i);
        for (double& d : answers) d -= std::log(p_runs);
        draws.push_back(std::move(answers));
      }
      if (kappa >= 0) {
        scored.emplace_back(p.mean - kappa * sigma - std::log(p_runs), i);
        continue;
      }
      const double z = (best - p.mean) / sigma;
      const double ei = (best - p.mean) * NormalCdf(z) + sigma * NormalPdf(z);
      scored.emplace_back(-ei * p_runs, i);
    }
    const size_t keep = std::min(o_.ranked, scored.size());
    std::vector<ConfigIndex> lists[4];  // E, X, T, L
    auto best_first = [keep](std::vector<std::pair<double, ConfigIndex>>& v, std::vector<ConfigIndex>& out) {
      std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(keep), v.end());
      for (size_t k = 0; k < keep; ++k) out.push_back(v[k].second);
    };
    best_first(scored, lists[0]);
    if (pattern.find('X') != std::string::npos) best_first(exploit, lists[1]);
    if (thompson) lists[2] = ThompsonPicks(candidates, draws, keep);
    if (pattern.find('L') != std::string::npos) {
      lists[3] = LocalPicks(fastest, keep, taken, [&](ConfigIndex i) {
        const std::vector<float> row = Features(i);
        return cost.Predict(row).mean - std::log(chance_to_run(row));
      });
    }
    // The pattern is counted over the task, so a restored checkpoint continues it; a
    // config two rankings share is proposed once.
    std::set<ConfigIndex> seen;
    size_t at[4] = {0, 0, 0, 0};
    auto left = [&](size_t l) { return at[l] < lists[l].size(); };
    while (ranked_.size() < keep && (left(0) || left(1) || left(2) || left(3))) {
      const char c = pattern[(proposed_count() + ranked_.size()) % pattern.size()];
      size_t l = c == 'X' ? 1 : c == 'T' ? 2 : c == 'L' ? 3 : 0;
      if (!left(l)) l = left(0) ? 0 : left(2) ? 2 : left(3) ? 3 : 1;  // one of them is left
      const ConfigIndex next = lists[l][at[l]++];
      if (seen.insert(next).second) ranked_.push_back(next);
    }
  }

  // Bounds the cost model's training set to max_train rows: the fastest half (where the
  // search goes) and an even spread of the others (so the model still knows what is slow).
  void KeepFastestAndSpread(std::vector<std::vector<float>>& rows, std::vector<double>& y) const {
    std::vector<size_t> order(rows.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    const size_t fast = o_.max_train / 2;
    std::stable_sort(order.begin(), order.end(), [&y](size_t a, size_t b) { return y[a] < y[b]; });
    std::vector<std::vector<float>> kept_rows(o_.max_train);
    std::vector<double> kept_y(o_.max_train);
    std::vector<size_t> rest(order.begin() + static_cast<std::ptrdiff_t>(fast), order.end());
    std::sort(rest.begin(), rest.end());  // back in the order told
    for (size_t k = 0; k < o_.max_train; ++k) {
      const size_t from = k < fast ? order[k] : rest[(k - fast) * rest.size() / (o_.max_train - fast)];
      kept_rows[k] = std::move(rows[from]);
      kept_y[k] = y[from];
    }
    rows = std::move(kept_rows);
    y = std::move(kept_y);
  }

  // Keeps `count` rows evenly spread over the order they were told in.
  static void KeepSpread(std::vector<std::vector<float>>& rows, std::vector<double>& y, size_t count) {
    const size_t n = rows.size();
    for (size_t k = 0; k < count; ++k) {
      const size_t from = k * n / count;  // increasing and >= k: moves never overwrite a later source
      if (from != k) {
        rows[k] = std::move(rows[from]);
        y[k] = y[from];
      }
    }
    rows.resize(count);
    y.resize(count);
  }

  // Local refinement: up to `count` usable configs one parameter one position away from
  // the local_elites fastest (`fastest` is sorted), the fastest's neighbours first, each
  // one's by `score` (lower first); a config next to two of them is listed once.
  template <typename Score>
  std::vector<ConfigIndex> LocalPicks(const std::vector<std::pair<double, ConfigIndex>>& fastest, size_t count,
                                      const Taken& taken, Score score) {
    std::vector<ConfigIndex> picks;
    std::set<ConfigIndex> listed;
    for (size_t f = 0; f < std::min(o_.local_elites, fastest.size()) && picks.size() < count; ++f) {
      const std::vector<size_t> pos = Positions(fastest[f].second);
      std::vector<std::pair<double, ConfigIndex>> near;
      for (size_t d = 0; d < pos.size(); ++d) {
        for (const size_t p : {pos[d] - 1, pos[d] + 1}) {  // pos[d] - 1 wraps to SIZE_MAX at 0
          if (p >= space_.params()[d].values.size()) continue;
          std::vector<size_t> n = pos;
          n[d] = p;
          const ConfigIndex i = EncodePositions(n);
          if (!listed.count(i) && Usable(i, taken)) near.emplace_back(score(i), i);
        }
      }
      std::sort(near.begin(), near.end());
      for (const auto& [s, i] : near) {
        if (picks.size() < count && listed.insert(i).second) picks.push_back(i);
      }
    }
    return picks;
  }

  // Thompson sampling without repeats: `count` times, a random tree's best candidate
  // not picked yet.
  std::vector<ConfigIndex> ThompsonPicks(const std::vector<ConfigIndex>& candidates,
                                         const std::vector<std::vector<double>>& draws, size_t count) {
    std::vector<ConfigIndex> picks;
    if (candidates.empty() || draws.front().empty()) return picks;
    std::vector<bool> picked(candidates.size(), false);
    std::uniform_int_distribution<size_t> any_tree(0, draws.front().size() - 1);
    while (picks.size() < std::min(count, candidates.size())) {
      const size_t tree = any_tree(rng_);
      size_t best = candidates.size();
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (!picked[c] && (best == candidates.size() || draws[c][tree] < draws[best][tree])) best = c;
      }
      picked[best] = true;
      picks.push_back(candidates[best]);
    }
    return picks;
  }

  static size_t InitialDraws(const ModelOptions& o, uint64_t space_size) {
    if (o.budget == 0 || space_size > o.large_space) return o.initial;
    const auto share = static_cast<size_t>(o.initial_share * static_cast<double>(o.budget));
    return std::clamp(share, o.initial, std::max(o.initial, o.initial_max));
  }

  // What the cost model learns (lower is better): latencies span orders of magnitude.
  static double Target(double latency) { return std::log(latency); }
  static double NormalPdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
  static double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

  const ModelOptions o_;
  const size_t initial_;  // random draws before the first model
  size_t ok_count_ = 0;
  size_t fitted_at_ = 0;
  std::vector<ConfigIndex> ranked_;
  size_t cursor_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> MakeModelBased(const SearchSpace& space, uint64_t seed, ModelOptions options) {
  return std::make_unique<ModelBased>(space, seed, options);
}

}  // namespace tunefleet::coordinator
