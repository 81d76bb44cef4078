// Task scheduler benchmark (issue 4): total model latency after a fixed total number of
// evaluations, Ansor-style gradient scheduling vs round-robin, same per-task strategy,
// same seeds, side by side. Objective: the simulated NPU (sim::Simulate). Each op file
// lists ops with a "count" (how often the op runs per model step).
//   task_scheduler_bench [--seeds N] [--batch B] [--strategy S] [--beta X] OPS.json...
// Prints, per model and total budget, the mean model latency under both policies and the
// ratio round-robin / gradient (> 1: gradient wins). The gradient policy gets each op's
// FLOPs, latency floor and similarity group as the coordinator gives them (TaskScheduler::
// InfoFor); --beta sets Ansor's beta.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/strategy.h"
#include "coordinator/task_scheduler.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet {
namespace {

using coordinator::TaskScheduler;

struct Op {
  TuningProblem problem;
  sim::PreparedProblem prepared;
  double weight = 1;
};

struct Model {
  std::string name;
  std::vector<std::unique_ptr<Op>> ops;
};

Result<Model> LoadModel(const std::string& path, const SocCatalog& catalog) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  nlohmann::json j = nlohmann::json::parse(in);
  Model m;
  m.name = path.substr(path.find_last_of('/') + 1);
  std::string soc_name = j.value("soc", "Ascend910B2");
  TF_ASSIGN_OR_RETURN(const SocSpec* soc, catalog.Find(soc_name));
  for (const auto& o : j["ops"]) {
    TF_ASSIGN_OR_RETURN(OpKey key, OpKeyFromJson(o, soc_name));
    auto problem = MakeTuningProblem(key, *soc);
    if (!problem.ok()) {
      std::fprintf(stderr, "task_scheduler_bench: %s: skipping %s: %s\n", m.name.c_str(),
                   key.Display().c_str(), problem.status().ToString().c_str());
      continue;
    }
    auto op = std::make_unique<Op>(Op{std::move(problem).value(), {}, o.value("count", 1.0)});
    TF_ASSIGN_OR_RETURN(op->prepared, sim::Prepare(op->problem, *soc));
    m.ops.push_back(std::move(op));
  }
  if (m.ops.empty()) return InvalidArgument(path + ": no tunable ops");
  return m;
}

// One tuning run of a whole model under `policy`; returns the final model latency.
double Run(const Model& model, const SocSpec& soc, TaskScheduler::Policy policy, uint64_t total,
           size_t batch, const std::string& strategy_name, uint64_t seed, double beta) {
  std::vector<TaskScheduler::TaskInfo> infos;
  for (const auto& op : model.ops) infos.push_back(TaskScheduler::InfoFor(op->problem.key, &soc, op->weight));
  TaskScheduler::Options options;
  options.beta = beta;
  options.batch_evaluations = batch;
  TaskScheduler scheduler(policy, infos, options);
  struct Live {
    std::unique_ptr<coordinator::Strategy> strategy;
    std::vector<bool> taken;
    double best = 0;
    bool measured_default = false;
  };
  std::vector<Live> live;
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const Op& op = *model.ops[i];
    Live l;
    l.strategy = coordinator::MakeStrategy(strategy_name, op.problem.space, seed * 1000 + i, total).value();
    l.taken.assign(op.problem.space.size(), false);
    live.push_back(std::move(l));
  }
  uint64_t spent = 0;
  while (spent < total && !scheduler.AllExhausted()) {
    size_t i = scheduler.Next();
    const Op& op = *model.ops[i];
    Live& l = live[i];
    std::vector<ConfigIndex> configs;
    // The default tiling is measured first, as the coordinator does: it is the baseline.
    if (!l.measured_default) {
      configs.push_back(op.problem.default_index);
      l.taken[op.problem.default_index] = true;
      l.measured_default = true;
    }
    size_t want = std::min<uint64_t>(batch, total - spent);
    if (configs.size() < want) {
      auto b = l.strategy->Ask(want - configs.size(), [&](ConfigIndex c) { return l.taken[c]; });
      for (ConfigIndex c : b.configs) {
        l.taken[c] = true;
        configs.push_back(c);
      }
    }
    if (configs.empty()) {
      scheduler.MarkExhausted(i);
      continue;
    }
    for (ConfigIndex c : configs) {
      auto est = sim::Simulate(op.prepared, op.problem.space.Decode(c), soc);
      double lat = est.ok() ? est->latency_us : 0;
      if (est.ok() && (l.best == 0 || lat < l.best)) l.best = lat;
      l.strategy->Tell(c, est.ok() ? std::optional<double>(lat) : std::nullopt);
    }
    spent += configs.size();
    scheduler.Update(i, configs.size(), l.best);
  }
  // Tasks never reached keep their (unmeasured) default: count the default's latency.
  double model_us = 0;
  for (size_t i = 0; i < model.ops.size(); ++i) {
    double best = live[i].best;
    if (best == 0) {
      const Op& op = *model.ops[i];
      best = sim::Simulate(op.prepared, op.problem.default_config, soc)->latency_us;
    }
    model_us += model.ops[i]->weight * best;
  }
  return model_us;
}

}  // namespace
}  // namespace tunefleet

int main(int argc, char** argv) {
  using namespace tunefleet;
  int seeds = 20;
  size_t batch = 16;
  std::string strategy = "random";
  double beta = coordinator::TaskScheduler::Options{}.beta;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = static_cast<size_t>(std::atoi(argv[++i]));
    else if (a == "--strategy" && i + 1 < argc) strategy = argv[++i];
    else if (a == "--beta" && i + 1 < argc) beta = std::atof(argv[++i]);
    else files.push_back(a);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: task_scheduler_bench [--seeds N] [--batch B] [--strategy S] [--beta X] OPS.json...\n");
    return 2;
  }
  SocCatalog catalog = SocCatalog::Builtin();
  std::printf("%-28s %6s %8s %16s %16s %10s\n", "model", "tasks", "budget", "round-robin us", "gradient us", "rr/grad");
  for (const auto& f : files) {
    auto model = LoadModel(f, catalog);
    if (!model.ok()) {
      std::fprintf(stderr, "task_scheduler_bench: %s\n", model.status().ToString().c_str());
      return 1;
    }
    const SocSpec& soc = *catalog.Find(model->ops.front()->problem.key.soc).value();
    for (uint64_t per_task : {16, 64, 256, 1024}) {
      uint64_t total = per_task * model->ops.size();
      double rr = 0, grad = 0;
      for (int s = 0; s < seeds; ++s) {
        rr += Run(*model, soc, coordinator::TaskScheduler::Policy::kRoundRobin, total, batch, strategy, static_cast<uint64_t>(s), beta);
        grad += Run(*model, soc, coordinator::TaskScheduler::Policy::kGradient, total, batch, strategy, static_cast<uint64_t>(s), beta);
      }
      rr /= seeds;
      grad /= seeds;
      std::printf("%-28s %6zu %8llu %16.2f %16.2f %10.4f\n", model->name.c_str(), model->ops.size(),
                  static_cast<unsigned long long>(total), rr, grad, rr / grad);
    }
  }
  return 0;
}
