#include "worker/profile/verify.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "worker/profile/graph_run.h"

namespace tunefleet::profile {

double VerifyReport::ImprovementPercent() const {
  return baseline_us > 0 ? 100.0 * (baseline_us - result_us) / baseline_us : 0;
}

std::string Percent(double x) {
  const double rounded = std::round(x * 100) / 100;
  return fmt::format("{:.2f}%", rounded == 0 ? 0.0 : rounded);
}

std::vector<const OpChange*> VerifyReport::SlowerKernels() const {
  std::vector<const OpChange*> out;
  for (const auto& op : ops) {
    if (op.tuned && op.after_us > op.before_us * (1 + 1e-9)) out.push_back(&op);
  }
  return out;
}

size_t VerifyReport::TunedKernels() const {
  size_t n = 0;
  for (const auto& op : ops) n += op.tuned;
  return n;
}

nlohmann::json VerifyReport::ToJson() const {
  nlohmann::json modified = nlohmann::json::array();
  nlohmann::json untuned = nlohmann::json::array();
  for (const auto& op : ops) {
    if (!op.tuned) {
      untuned.push_back(op.name);
      continue;
    }
    modified.push_back({{"op_name", op.name},
                        {"op_type", op.op_type},
                        {"op_key", op.op_key},
                        {"performance_before(us)", op.before_us},
                        {"performance_after(us)", op.after_us},
                        {"performance_improvement",
                         Percent(op.before_us > 0 ? 100.0 * (op.before_us - op.after_us) / op.before_us : 0)}});
  }
  return {{"model", model},
          {"soc", soc},
          {"training", training},
          {"devices", devices},
          {"model_baseline_performance(ms)", baseline_us / 1000},
          {"model_result_performance(ms)", result_us / 1000},
          {"model_performance_improvement", Percent(ImprovementPercent())},
          {"repo_modified_operators", modified},
          {"untuned_operators", untuned}};
}

Result<VerifyReport> Verify(const Graph& graph, const SocSpec& soc, const std::map<std::string, Config>& configs) {
  KernelCache kernels;  // the ops without a tuned config run the same kernel in both
  RunOptions default_options;
  default_options.kernels = &kernels;
  TF_ASSIGN_OR_RETURN(RunProfile before, RunGraph(graph, soc, default_options));
  RunOptions tuned_options;
  tuned_options.configs = configs;
  tuned_options.kernels = &kernels;
  TF_ASSIGN_OR_RETURN(RunProfile after, RunGraph(graph, soc, tuned_options));
  // By node and direction, not name: a node may be called like another's "<name>_grad".
  std::map<std::pair<int, bool>, double> after_us;
  for (const auto& op : after.ops) after_us[{op.node, op.backward}] = op.launch_us + op.duration_us;
  VerifyReport report;
  report.model = graph.name;
  report.soc = soc.name;
  report.training = graph.training;
  report.devices = graph.devices;
  report.baseline_us = before.step_us;
  report.result_us = after.step_us;
  const GraphIndex index(graph);
  for (const auto& op : before.ops) {
    OpChange c;
    c.name = op.name;
    c.op_type = op.op_type;
    c.op_key = op.op_key;
    c.backward = op.backward;
    c.before_us = op.launch_us + op.duration_us;
    c.after_us = after_us.count({op.node, op.backward}) ? after_us[{op.node, op.backward}] : 0;
    // A vector kernel's backward follows its forward's config; a cube kernel's backward
    // GEMMs have shapes of their own (BackwardGemmKeys), tuned when both are.
    const OpKey key = NodeOpKey(index, graph.nodes[op.node]);
    auto gemms = op.backward ? BackwardGemmKeys(key) : Result<std::vector<OpKey>>(std::vector<OpKey>());
    if (!gemms.ok()) return gemms.status().WithContext("node '" + op.name + "'");
    c.tuned = gemms->empty() ? configs.count(key.Canonical()) > 0
                             : std::all_of(gemms->begin(), gemms->end(),
                                           [&](const OpKey& g) { return configs.count(g.Canonical()) > 0; });
    report.ops.push_back(std::move(c));
  }
  return report;
}

}  // namespace tunefleet::profile
