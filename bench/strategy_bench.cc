// bench/strategies (issue 4): tunefleet's search strategies on real GPU measurements.
// For each Kernel Tuner cache in the datasets folder and each strategy of
// coordinator::StrategyNames() except "exhaustive", the mean fraction of optimum over
// seeds 1..N at each budget (bench/strategy_scoring.h: published convention), run
// sequentially and with K configs in flight; next to Optuna's samplers (JSON from
// bench/strategies_optuna.py) and the published best (Schoonhoven et al. 2022).
//   strategy_bench [--datasets conv,pnpoly] [--strategies a,b] [--seeds N] [--optuna F] [--out F]
//                  [--trace F]   (every run's configs in order, JSON Lines: bench/trace_regions.py)
// Run everything with `bash bench/strategies.sh`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "bench/strategy_scoring.h"

namespace tunefleet::bench {
namespace {

using nlohmann::json;

// Mean over GPUs of the best strategy per budget 25/50/100/200/400 (Schoonhoven,
// van Werkhoven & Batenburg, IEEE TEVC 2022), as quoted in issue 4.
const std::map<std::string, std::map<size_t, double>> kPublishedBest = {
    {"convolution", {{25, 0.752}, {50, 0.850}, {100, 0.905}, {200, 0.946}, {400, 0.974}}},
    {"pnpoly", {{25, 0.953}, {50, 0.965}, {100, 0.990}, {200, 0.997}, {400, 0.999}}},
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string KernelClass(const std::string& dataset) { return dataset.substr(0, dataset.find('_')); }

struct StrategyResult {
  std::vector<double> seq, inflight;  // mean fraction per budget
  std::vector<std::vector<double>> seq_per_seed, inflight_per_seed;
  double seconds = 0;
};

// One JSON line per run: which configs (parameter values) were evaluated, in the order
// their results arrived, and each one's fraction of optimum (0 for absent or failed).
void WriteTrace(std::ostream& out, const std::string& dataset, const std::string& strategy, int seed,
                size_t budget, size_t in_flight, const KtCache& cache, const ReplayObjective& objective,
                const Trace& t) {
  json configs = json::array(), fractions = json::array();
  for (size_t j = 0; j < t.configs.size(); ++j) {
    configs.push_back(cache.space().Decode(t.configs[j]));
    fractions.push_back(objective.Failed(t.configs[j]) ? 0.0 : objective.optimum / t.times[j]);
  }
  json params = json::array();
  for (const auto& p : cache.space().params()) params.push_back(p.name);
  out << json{{"dataset", dataset}, {"strategy", strategy}, {"seed", seed}, {"budget", budget},
              {"in_flight", in_flight}, {"params", params}, {"configs", configs}, {"fractions", fractions}}
             .dump()
      << '\n';
}

StrategyResult Score(const std::string& name, const std::string& dataset, const KtCache& cache,
                     const ReplayObjective& objective, const std::vector<size_t>& budgets, int seeds,
                     size_t in_flight, std::ostream* trace) {
  const auto start = std::chrono::steady_clock::now();
  // A failed or absent config fails fast: it costs the fastest measured time.
  const double failure_cost = objective.optimum;
  StrategyResult r;
  r.seq.assign(budgets.size(), 0);
  r.inflight.assign(budgets.size(), 0);
  for (int seed = 1; seed <= seeds; ++seed) {
    // Each budget is its own run, in both modes: a strategy is told its budget (auto
    // plans its search by it), and in flight a budget-B run stops dispatching at B and
    // waits for every result.
    std::vector<double> seq_f, inflight_f;
    for (size_t b = 0; b < budgets.size(); ++b) {
      for (size_t k : {size_t{1}, in_flight}) {
        auto s = coordinator::MakeStrategy(name, cache.space(), static_cast<uint64_t>(seed), budgets[b]).value();
        Trace t = RunStrategy(*s, objective, budgets[b], k, failure_cost);
        (k == 1 ? seq_f : inflight_f).push_back(FractionOfOptimum(objective.optimum, t.times, budgets[b]));
        if (trace) WriteTrace(*trace, dataset, name, seed, budgets[b], k, cache, objective, t);
      }
    }
    for (size_t b = 0; b < budgets.size(); ++b) {
      r.seq[b] += seq_f[b] / seeds;
      r.inflight[b] += inflight_f[b] / seeds;
    }
    r.seq_per_seed.push_back(std::move(seq_f));
    r.inflight_per_seed.push_back(std::move(inflight_f));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string Row(const std::string& label, const std::string& mode, const std::vector<double>& v,
                const char* format = "{:7.3f}") {
  std::string line = fmt::format("  {:<26s} {:<5s}", label, mode);
  for (double x : v) line += fmt::format(fmt::runtime(format), x);
  return line;
}

int Main(int argc, char** argv) {
  CLI::App app{"strategy_bench: tunefleet's strategies on measured Kernel Tuner caches (issue 4)"};
  std::string datasets_dir = TUNEFLEET_SHARED_DATASETS;
  std::string dataset_filter, strategy_filter, optuna_path, out_path, trace_path;
  std::string budget_list = "25,50,100,200,400";
  int seeds = 20;
  size_t in_flight = 8;
  app.add_option("--datasets-dir", datasets_dir, "folder of Kernel Tuner caches (.json, .json.gz)")->capture_default_str();
  app.add_option("--datasets", dataset_filter, "comma-separated substrings of cache file names (default: all)");
  app.add_option("--strategies", strategy_filter, "comma-separated strategy names (default: all but exhaustive)");
  app.add_option("--seeds", seeds, "seeds 1..N per strategy")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--budgets", budget_list, "evaluation budgets")->capture_default_str();
  app.add_option("--in-flight", in_flight, "configs outstanding in the parallel mode")->capture_default_str()->check(CLI::Range(size_t{2}, size_t{1024}));
  app.add_option("--optuna", optuna_path, "JSON from bench/strategies_optuna.py, shown side by side");
  app.add_option("--out", out_path, "write every figure (and per-seed fractions) as JSON here");
  app.add_option("--trace", trace_path, "write every run's configs and fractions here (JSON Lines)");
  CLI11_PARSE(app, argc, argv);

  std::vector<size_t> budgets;
  for (const auto& b : SplitCommas(budget_list)) budgets.push_back(std::stoul(b));
  if (budgets.empty()) {
    fmt::print(stderr, "strategy_bench: --budgets needs at least one number, e.g. 25,50,100\n");
    return 2;
  }
  std::vector<std::string> strategies;
  const std::vector<std::string> wanted = SplitCommas(strategy_filter);
  for (const auto& n : coordinator::StrategyNames()) {
    if (n == "exhaustive") continue;
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end()) strategies.push_back(n);
  }
  for (const auto& w : wanted) {
    if (Status s = coordinator::CheckStrategyName(w); !s.ok()) {
      fmt::print(stderr, "strategy_bench: --strategies: {}\n", s.message());
      return 2;
    }
  }
  const std::vector<std::string> filters = SplitCommas(dataset_filter);
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(datasets_dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (!f.ends_with(".json") && !f.ends_with(".json.gz")) continue;
    bool match = filters.empty();
    for (const auto& x : filters) match = match || f.find(x) != std::string::npos;
    if (match) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (ec || files.empty()) {
    fmt::print(stderr, "strategy_bench: no Kernel Tuner caches matching '{}' in {}{} (--datasets-dir)\n",
               dataset_filter, datasets_dir, ec ? ": " + ec.message() : "");
    return 2;
  }
  json optuna;
  if (!optuna_path.empty()) {
    std::ifstream in(optuna_path);
    optuna = json::parse(in, nullptr, false);
    if (!in || optuna.is_discarded() || !optuna.contains("datasets")) {
      fmt::print(stderr, "strategy_bench: --optuna {} is not the JSON bench/strategies_optuna.py writes\n", optuna_path);
      return 2;
    }
    if (optuna.value("budgets", json::array()) != json(budgets)) {
      fmt::print(stderr, "strategy_bench: --optuna {} was made for other budgets; re-run strategies_optuna.py\n", optuna_path);
      return 2;
    }
  }

  std::ofstream trace_file;
  if (!trace_path.empty()) {
    trace_file.open(trace_path);
    if (!trace_file) {
      fmt::print(stderr, "strategy_bench: --trace {}: cannot write there\n", trace_path);
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  json out = {{"budgets", budgets}, {"seeds", seeds}, {"in_flight", in_flight}, {"datasets", json::object()}};
  std::string budget_header;
  for (size_t b : budgets) budget_header += fmt::format("{:>7s}", "@" + std::to_string(b));

  for (const auto& path : files) {
    Result<KtCache> cache = KtCache::Load(path.string());
    if (!cache.ok()) {
      fmt::print(stderr, "strategy_bench: {}\n", cache.status().ToString());
      return 2;
    }
    const std::string name = path.filename().string().substr(0, path.filename().string().find(".json"));
    const ReplayObjective objective = ReplayObjective::FromCache(*cache);
    const auto beyond = std::count(objective.allowed.begin(), objective.allowed.end(), false);
    const std::string over_limit =
        beyond == 0 ? ""
                    : fmt::format(" ({} of them over the device's {} threads per block: never proposed)", beyond,
                                  cache->thread_limit());
    fmt::print("\n{}: product {}, {} measured, {} failed, {} absent{}; optimum {:.4f} ms\n", name,
               cache->space().size(), cache->measured_count(), cache->failed_count(),
               cache->space().size() - cache->measured_count() - cache->failed_count(), over_limit,
               objective.optimum);
    fmt::print("  {:<26s} {:<5s}{}\n", "strategy", "mode", budget_header);
    std::fflush(stdout);
    json& jd = out["datasets"][name];
    jd = {{"product", cache->space().size()}, {"measured", cache->measured_count()},
          {"failed", cache->failed_count()}, {"optimum_ms", objective.optimum}, {"strategies", json::object()}};

    std::map<std::string, StrategyResult> results;
    for (const auto& s : strategies) {
      StrategyResult r = Score(s, name, *cache, objective, budgets, seeds, in_flight,
                               trace_file.is_open() ? &trace_file : nullptr);
      fmt::print("{}\n{}   ({:.1f} s)\n", Row(s, "seq", r.seq), Row("", fmt::format("x{}", in_flight), r.inflight), r.seconds);
      std::fflush(stdout);
      jd["strategies"][s] = {{"seq", r.seq}, {"inflight", r.inflight}, {"seconds", r.seconds},
                             {"seq_per_seed", r.seq_per_seed}, {"inflight_per_seed", r.inflight_per_seed}};
      results.emplace(s, std::move(r));
    }
    // A check on the scoring: what uniform random sampling scores in expectation.
    std::vector<double> expected, expected_within;
    for (size_t b : budgets) {
      expected.push_back(ExpectedRandomFraction(objective, b));
      expected_within.push_back(ExpectedRandomFraction(objective, b, true));
    }
    fmt::print("{}\n", Row("random, expected", "", expected));
    if (beyond > 0) fmt::print("{}\n", Row("  within thread limit", "", expected_within));
    jd["random_expected"] = expected;
    jd["random_expected_within_thread_limit"] = expected_within;
    std::optional<std::vector<double>> optuna_best;
    if (!optuna.is_null() && optuna["datasets"].contains(name)) {
      for (const auto& [sampler, v] : optuna["datasets"][name].items()) {
        std::vector<double> mean = v.at("mean").get<std::vector<double>>();
        fmt::print("{}   ({:.0f} s)\n", Row("optuna-" + sampler, "seq", mean), v.value("seconds", 0.0));
        if (!optuna_best) optuna_best = mean;
        for (size_t b = 0; b < budgets.size(); ++b) (*optuna_best)[b] = std::max((*optuna_best)[b], mean[b]);
      }
      jd["optuna"] = optuna["datasets"][name];
    }
    std::optional<std::vector<double>> published;
    if (auto it = kPublishedBest.find(KernelClass(name)); it != kPublishedBest.end()) {
      std::vector<double> p;
      for (size_t b : budgets) {
        if (!it->second.count(b)) break;
        p.push_back(it->second.at(b));
      }
      if (p.size() == budgets.size()) published = p;
    }
    if (published) fmt::print("{}\n", Row("published best", "", *published));
    if (results.empty()) continue;

    // The reference: `auto` when it exists, else the best of ours per budget (named).
    std::vector<double> ref(budgets.size(), 0);
    std::vector<std::string> ref_name(budgets.size());
    for (size_t b = 0; b < budgets.size(); ++b) {
      for (const auto& [s, r] : results) {
        if (results.count("auto") ? s == "auto" : r.seq[b] > ref[b]) {
          ref[b] = r.seq[b];
          ref_name[b] = s;
        }
      }
    }
    const bool have_auto = results.count("auto") > 0;
    const std::string ref_label = have_auto ? "auto" : "best of ours";
    if (!have_auto) {
      std::string names;
      for (const auto& n : ref_name) names += fmt::format("{:>7s}", n.substr(0, 6));
      fmt::print("  {:<26s} {:<5s}{}\n", "best of ours is", "", names);
    }
    if (optuna_best) {
      std::vector<double> ratio;
      for (size_t b = 0; b < budgets.size(); ++b) ratio.push_back(ref[b] / (*optuna_best)[b]);
      fmt::print("{}\n", Row(ref_label + " / best Optuna", "seq", ratio));
      jd["ratio_to_optuna"] = ratio;
    }
    if (published) {
      std::vector<double> ratio;
      for (size_t b = 0; b < budgets.size(); ++b) ratio.push_back(ref[b] / (*published)[b]);
      fmt::print("{}\n", Row(ref_label + " / published", "seq", ratio));
      jd["ratio_to_published"] = ratio;
    }
    jd["reference"] = {{"label", ref_label}, {"per_budget", ref_name}, {"seq", ref}};
    fmt::print("  x{} minus seq (target for auto: >= -0.02); se = largest standard error of the\n"
               "  seed-paired difference over the budgets\n", in_flight);
    for (const auto& [s, r] : results) {
      std::vector<double> diff, se;
      for (size_t b = 0; b < budgets.size(); ++b) {
        diff.push_back(r.inflight[b] - r.seq[b]);
        double sq = 0;
        for (int i = 0; i < seeds; ++i) {
          double d = r.inflight_per_seed[i][b] - r.seq_per_seed[i][b] - diff.back();
          sq += d * d;
        }
        se.push_back(seeds > 1 ? std::sqrt(sq / (seeds - 1) / seeds) : 0.0);
      }
      fmt::print("{}   se {:.3f}\n", Row(s, "", diff, "{:+7.3f}"), *std::max_element(se.begin(), se.end()));
      jd["strategies"][s]["inflight_minus_seq"] = diff;
      jd["strategies"][s]["inflight_minus_seq_se"] = se;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out["seconds"] = seconds;
  fmt::print("\nstrategy_bench: {} strategies x {} seeds x {} budgets, seq and x{}, in {:.0f} s\n",
             strategies.size(), seeds, budgets.size(), in_flight, seconds);
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    f << out.dump(1) << "\n";
    if (!f) {
      fmt::print(stderr, "strategy_bench: cannot write --out {}\n", out_path);
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) { return tunefleet::bench::Main(argc, argv); }
