// Strategies on the simulated NPU (issue 4): for each op of a model's op list, the
// evaluations each strategy needs to reach 99% of the exhaustive optimum (latency <=
// optimum / 0.99), median over seeds, with the default tiling measured first as the
// coordinator does. The optimum is computed in the same run by simulating every valid
// config. Anchor: random search on the same op and seeds (ratio random / strategy).
// The last row summarises every op: per strategy, the geometric mean of all its runs'
// counts (a run that never reached the target counts as cap + 1) and how many runs
// never did. The counts are heavy-tailed -- one seed reaches an op in 60 evaluations,
// the next in 2,500 -- so a 5-seed median swings 2-3x between seed sets; compare
// strategies on the summary row, with 20 seeds or more. Below it, per budget of the
// Kernel Tuner benchmark (25 ... 400 evaluations), the mean fraction of the optimum
// found (optimum / best latency) over every op and seed: what a task with that budget
// gets. Each strategy runs once per seed with the cap as its budget, and "auto" also
// runs what it picks for each budget (AutoChoice). In spaces over 2^20 configs (every
// op of the example lists) no strategy's path depends on its budget, so those
// fractions are the ones a run with that budget would reach.
//   npu_strategies [--seeds N] [--cap N] [--in-flight K] [--strategies a,b,...] OPS.json...
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "coordinator/strategy.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet {
namespace {

struct Problem {
  std::string name;
  TuningProblem problem;
  sim::PreparedProblem prepared;
  double optimum = 0;
  size_t valid = 0;
};

// The budgets of the Kernel Tuner benchmark (bench/strategies): the fraction of the
// optimum each strategy has found after this many evaluations.
constexpr uint64_t kBudgets[] = {25, 50, 100, 200, 400};
constexpr size_t kNumBudgets = std::size(kBudgets);

struct Run {
  uint64_t to_target = 0;              // evaluations until best <= target, or cap + 1
  double fraction[kNumBudgets] = {};   // optimum / best after kBudgets[k] evaluations
};

// One search of `strategy`: it runs until best <= target and at least the largest of
// kBudgets evaluations, or until cap. Keeps `in_flight` configs outstanding and tells
// results back in a seed-shuffled order.
Run Search(const Problem& p, const SocSpec& soc, const std::string& strategy, uint64_t seed, uint64_t cap,
           size_t in_flight) {
  // The cap is the budget a task would have: "auto" chooses its search by it.
  auto s = coordinator::MakeStrategy(strategy, p.problem.space, seed, cap).value();
  std::vector<bool> taken(p.problem.space.size(), false);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  const double target = p.optimum / 0.99;
  auto measure = [&](ConfigIndex c) {
    auto est = sim::Simulate(p.prepared, p.problem.space.Decode(c), soc);
    return est.ok() ? est->latency_us : 1e30;
  };
  Run run;
  run.to_target = cap + 1;
  uint64_t used = 1;
  double best = std::numeric_limits<double>::infinity();
  auto account = [&](double latency) {
    best = std::min(best, latency);
    if (best <= target && run.to_target > cap) run.to_target = used;
    for (size_t k = 0; k < kNumBudgets; ++k) {
      if (used <= kBudgets[k]) run.fraction[k] = p.optimum / best;  // frozen once past the budget
    }
  };
  taken[p.problem.default_index] = true;
  double def = measure(p.problem.default_index);
  s->Tell(p.problem.default_index, def);
  account(def);
  auto done = [&] { return used >= cap || (run.to_target <= cap && used >= kBudgets[kNumBudgets - 1]); };
  std::vector<ConfigIndex> pending;
  while (!done()) {
    while (pending.size() < in_flight) {
      auto b = s->Ask(in_flight - pending.size(), [&](ConfigIndex c) { return taken[c]; });
      if (b.configs.empty()) break;
      for (ConfigIndex c : b.configs) {
        taken[c] = true;
        pending.push_back(c);
      }
    }
    if (pending.empty()) break;  // the space is used up
    std::shuffle(pending.begin(), pending.end(), rng);
    ConfigIndex c = pending.back();
    pending.pop_back();
    double lat = measure(c);
    ++used;
    s->Tell(c, lat);
    account(lat);
  }
  return run;  // a search that stopped early keeps its last best at the budgets past it
}

// Search(), except that "auto", which picks its search by the budget, takes each
// budget's fraction from a run of what it picks for that budget.
Run SearchAtEachBudget(const Problem& p, const SocSpec& soc, const std::string& strategy, uint64_t seed,
                       uint64_t cap, size_t in_flight) {
  Run run = Search(p, soc, strategy, seed, cap, in_flight);
  if (strategy != "auto") return run;
  const ConfigIndex size = p.problem.space.size();
  std::map<std::string, Run> by_choice{{coordinator::AutoChoice(size, cap), run}};
  for (size_t k = 0; k < kNumBudgets; ++k) {
    const std::string choice = coordinator::AutoChoice(size, kBudgets[k]);
    auto it = by_choice.find(choice);
    if (it == by_choice.end()) it = by_choice.emplace(choice, Search(p, soc, choice, seed, cap, in_flight)).first;
    run.fraction[k] = it->second.fraction[k];
  }
  return run;
}

// The names of a comma-separated --strategies list, each one of `known`.
Result<std::vector<std::string>> ParseStrategies(const std::string& list, const std::vector<std::string>& known) {
  std::vector<std::string> names;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    names.push_back(list.substr(at, comma - at));
    at = comma + 1;
    if (std::find(known.begin(), known.end(), names.back()) == known.end()) {
      return InvalidArgument(
          fmt::format("unknown strategy '{}' in --strategies; use any of {}", names.back(), fmt::join(known, ", ")));
    }
  }
  return names;
}

}  // namespace
}  // namespace tunefleet

int main(int argc, char** argv) {
  using namespace tunefleet;
  int seeds = 20;
  uint64_t cap = 5000;
  size_t in_flight = 1;
  std::vector<std::string> files;
  std::vector<std::string> strategies;
  for (const auto& n : coordinator::StrategyNames()) {
    if (n != "exhaustive") strategies.push_back(n);
  }
  const char* usage = "usage: npu_strategies [--seeds N] [--cap N] [--in-flight K] [--strategies a,b,...] OPS.json...\n";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (a == "--cap" && i + 1 < argc) cap = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--in-flight" && i + 1 < argc) in_flight = static_cast<size_t>(std::atoi(argv[++i]));
    else if (a == "--strategies" && i + 1 < argc) {
      auto chosen = ParseStrategies(argv[++i], strategies);
      if (!chosen.ok()) {
        std::fprintf(stderr, "npu_strategies: %s\n", chosen.status().message().c_str());
        return 2;
      }
      strategies = std::move(chosen).value();
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "npu_strategies: unknown or incomplete option %s\n%s", a.c_str(), usage);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty() || seeds < 1) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  SocCatalog catalog = SocCatalog::Builtin();
  const bool has_random = std::find(strategies.begin(), strategies.end(), "random") != strategies.end();
  std::vector<double> log_sum(strategies.size(), 0);  // over every op and seed, for the summary
  std::vector<size_t> missed(strategies.size(), 0);
  std::vector<std::vector<double>> fraction_sum(strategies.size(), std::vector<double>(kNumBudgets, 0));
  size_t ops = 0;
  std::printf("evaluations to reach 99%% of the exhaustive optimum: median over %d seeds (cap %llu; >cap = not reached), %zu in flight\n",
              seeds, static_cast<unsigned long long>(cap), in_flight);
  std::printf("%-34s %9s", "op", "valid");
  for (const auto& n : strategies) std::printf(" %12s", n.c_str());
  if (has_random) {
    for (const auto& n : strategies) std::printf(" %10s", ("rnd/" + n.substr(0, 5)).c_str());
  }
  std::printf("\n");
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) {
      std::fprintf(stderr, "npu_strategies: cannot read %s\n", f.c_str());
      return 1;
    }
    nlohmann::json j = nlohmann::json::parse(in);
    std::string soc_name = j.value("soc", "Ascend910B2");
    const SocSpec& soc = *catalog.Find(soc_name).value();
    for (const auto& o : j["ops"]) {
      auto key = OpKeyFromJson(o, soc_name);
      if (!key.ok()) continue;
      auto tp = MakeTuningProblem(*key, soc);
      if (!tp.ok()) {
        std::fprintf(stderr, "npu_strategies: skipping %s: %s\n", key->Display().c_str(), tp.status().ToString().c_str());
        continue;
      }
      Problem p{o.value("name", key->Display()), std::move(tp).value(), {}, 1e300, 0};
      p.prepared = sim::Prepare(p.problem, soc).value();
      p.problem.space.ForEachValid([&](ConfigIndex c) {
        ++p.valid;
        auto est = sim::Simulate(p.prepared, p.problem.space.Decode(c), soc);
        if (est.ok()) p.optimum = std::min(p.optimum, est->latency_us);
        return true;
      });
      std::vector<double> medians;
      ++ops;
      for (size_t k = 0; k < strategies.size(); ++k) {
        std::vector<uint64_t> runs;
        for (int s = 0; s < seeds; ++s) {
          const Run run = SearchAtEachBudget(p, soc, strategies[k], static_cast<uint64_t>(s), cap, in_flight);
          runs.push_back(run.to_target);
          for (size_t b = 0; b < kNumBudgets; ++b) fraction_sum[k][b] += run.fraction[b];
          log_sum[k] += std::log(static_cast<double>(runs.back()));
          missed[k] += runs.back() > cap;
        }
        std::nth_element(runs.begin(), runs.begin() + runs.size() / 2, runs.end());
        medians.push_back(static_cast<double>(runs[runs.size() / 2]));
      }
      std::printf("%-34s %9zu", p.name.c_str(), p.valid);
      for (double m : medians) std::printf(" %12.0f", m);
      double rnd = 0;
      for (size_t i = 0; i < strategies.size(); ++i) if (strategies[i] == "random") rnd = medians[i];
      if (has_random) {
        for (double m : medians) std::printf(" %10.2f", rnd / m);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (ops == 0) return 0;
  const double runs = static_cast<double>(ops) * seeds;
  std::printf("%-34s %9s", "all ops: geometric mean", "");
  for (double l : log_sum) std::printf(" %12.0f", std::exp(l / runs));
  std::printf("\n%-34s %9s", "all ops: runs not reached", "");
  for (size_t m : missed) std::printf(" %12s", (std::to_string(m) + "/" + std::to_string(ops * static_cast<size_t>(seeds))).c_str());
  std::printf("\n");
  for (size_t b = 0; b < kNumBudgets; ++b) {
    std::printf("%-34s %9s", ("all ops: fraction of optimum @" + std::to_string(kBudgets[b])).c_str(), "");
    for (const auto& f : fraction_sum) std::printf(" %12.3f", f[b] / runs);
    std::printf("\n");
  }
  return 0;
}
