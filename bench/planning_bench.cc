// Planning time of the model-based search on a long task, with its training set bounded
// (ModelOptions::max_train, the default) and unbounded (what it was), side by side in one
// run on the same simulated op, seeds and budget. Planning runs on the coordinator's loop
// thread, so the anchor is the heartbeat interval: one Ask near it makes live workers
// look dead. Also prints the best latency each reached, so a faster plan that searches
// worse would show.
//   planning_bench [--budget N] [--seeds N] [--job-size N]
// Default: MatMul [256x128]x[128x256] fp16 on Ascend910B2 (examples/matmul_small.json),
// budget 8000, 3 seeds, jobs of the size the strategy asks the coordinator for (4).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "coordinator/strategies/guided.h"
#include "tunefleet/common/protocol.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet {
namespace {

struct Run {
  double max_ask_s = 0;
  double total_ask_s = 0;
  double best_us = std::numeric_limits<double>::infinity();
};

// Jobs of `job_size` configs planned and measured in turn, as one worker slot would.
Run Plan(const TuningProblem& problem, const sim::PreparedProblem& prepared, const SocSpec& soc,
         uint64_t seed, uint64_t budget, size_t job_size, size_t max_train) {
  coordinator::ModelOptions options;
  options.budget = budget;
  options.max_train = max_train;
  auto strategy = coordinator::MakeModelBased(problem.space, seed, options);
  if (job_size == 0) job_size = strategy->PreferredJobSize();
  std::vector<bool> taken(problem.space.size(), false);
  std::vector<double> asks;
  Run run;
  for (uint64_t used = 0; used < budget;) {
    const auto start = std::chrono::steady_clock::now();
    coordinator::Batch batch = strategy->Ask(std::min<uint64_t>(job_size, budget - used),
                                             [&](ConfigIndex c) { return taken[c]; });
    asks.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (batch.configs.empty()) break;
    for (ConfigIndex c : batch.configs) {
      taken[c] = true;
      ++used;
      auto est = sim::Simulate(prepared, problem.space.Decode(c), soc);
      if (est.ok()) run.best_us = std::min(run.best_us, est->latency_us);
      strategy->Tell(c, est.ok() ? std::optional<double>(est->latency_us) : std::nullopt);
    }
  }
  run.max_ask_s = *std::max_element(asks.begin(), asks.end());
  for (double a : asks) run.total_ask_s += a;
  return run;
}

}  // namespace
}  // namespace tunefleet

int main(int argc, char** argv) {
  using namespace tunefleet;
  uint64_t budget = 8000;
  int seeds = 3;
  size_t job_size = 0;  // the strategy's preferred size
  CLI::App app{"model-based planning time, training set bounded vs unbounded"};
  app.add_option("--budget", budget, "evaluations per run")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  app.add_option("--seeds", seeds, "seeds (each runs both)")->check(CLI::Range(1, 1000));
  app.add_option("--job-size", job_size, "configs per Ask (0: the strategy's preferred size)");
  CLI11_PARSE(app, argc, argv);
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "MatMul";
  key.inputs = {{{256, 128}, "float16", "ND"}, {{128, 256}, "float16", "ND"}};
  TuningProblem problem = MakeTuningProblem(key, soc).value();
  sim::PreparedProblem prepared = sim::Prepare(problem, soc).value();
  const double heartbeat_s = std::chrono::duration<double>(protocol::kHeartbeatInterval).count();
  const coordinator::ModelOptions defaults;

  std::printf("model-based planning, %s, budget %llu, jobs of %s, %d seeds; anchor: heartbeat %.1f s\n",
              key.Display().c_str(), static_cast<unsigned long long>(budget),
              job_size ? std::to_string(job_size).c_str() : "the strategy's preferred size", seeds, heartbeat_s);
  std::printf("%-6s %-22s %10s %12s %12s %10s\n", "seed", "training set", "best us", "max Ask s", "total s",
              "max/beat");
  std::vector<double> max_ratio, total_ratio;
  for (int s = 0; s < seeds; ++s) {
    Run runs[2];
    const size_t limits[2] = {defaults.max_train, std::numeric_limits<size_t>::max()};
    for (int k = 0; k < 2; ++k) {
      runs[k] = Plan(problem, prepared, soc, static_cast<uint64_t>(s), budget, job_size, limits[k]);
      std::printf("%-6d %-22s %10.3f %12.3f %12.2f %10.2f\n", s,
                  k == 0 ? ("bounded (" + std::to_string(limits[0]) + ")").c_str() : "unbounded",
                  runs[k].best_us, runs[k].max_ask_s, runs[k].total_ask_s, runs[k].max_ask_s / heartbeat_s);
    }
    max_ratio.push_back(runs[0].max_ask_s / runs[1].max_ask_s);
    total_ratio.push_back(runs[0].total_ask_s / runs[1].total_ask_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("median over seeds, bounded / unbounded: longest Ask %.2f, planning time %.2f\n",
              median(max_ratio), median(total_ratio));
  return 0;
}
