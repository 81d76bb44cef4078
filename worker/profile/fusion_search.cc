#include "worker/profile/fusion_search.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>

#include "tunefleet/common/attention_space.h"
#include "tunefleet/common/graph_fusion.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/verify.h"

namespace tunefleet::profile {
namespace {

struct Timed {
  double step_us = 0, kernel_us = 0;
  size_t kernels = 0;
};

// What carries from one candidate to the next: they differ in one chain, so all but its
// fused op are already simulated (kernels) and validated (checks).
struct Known {
  KernelCache kernels;
  OpChecks checks;
};

Result<Timed> Time(const Graph& graph, const SocSpec& soc, Known& known) {
  RunOptions options;
  options.kernels = &known.kernels;
  options.checks = &known.checks;
  options.step_time_only = true;
  TF_ASSIGN_OR_RETURN(RunProfile run, RunGraph(graph, soc, options));
  Timed t;
  t.step_us = run.step_us;
  t.kernels = run.ops.size();
  for (const auto& op : run.ops) t.kernel_us += op.duration_us;
  return t;
}

// The step with one candidate applied (`g`), into `o`; or why the candidate was refused.
void TimeOption(const Result<Graph>& g, const SocSpec& soc, Known& known, FusionOption& o) {
  auto t = g.ok() ? Time(*g, soc, known) : Result<Timed>(g.status());
  if (t.ok()) {
    o.step_us = t->step_us;
    o.kernel_us = t->kernel_us;
  } else {
    o.refused = t.status().message();
  }
}

// Runs job(i, known) for each i in [0, n) on up to known.size() threads, each with its own
// Known (known[0] on the caller's thread), kept from one stage to the next. Each job writes
// only its own result and a Known only memoises, so the outcome does not depend on the
// threads or their order.
void ForEach(size_t n, std::vector<Known>& known, const std::function<void(size_t, Known&)>& job) {
  const size_t count = std::min(known.size(), n);
  std::atomic<size_t> next{0};
  auto work = [&](Known& mine) {
    for (size_t i = next++; i < n; i = next++) job(i, mine);
  };
  std::vector<std::jthread> pool;
  for (size_t t = 1; t < count; ++t) pool.emplace_back([&work, &k = known[t]] { work(k); });
  if (count > 0) work(known[0]);
  pool.clear();  // joins
}

// a is better than b: a shorter step, or the same step with less kernel time (fewer HBM
// round trips and launches free the chip for what runs beside it).
bool Better(double a_step, double a_kernel, double b_step, double b_kernel) {
  constexpr double kSame = 1e-9;
  if (a_step < b_step * (1 - kSame)) return true;
  if (a_step > b_step * (1 + kSame)) return false;
  return a_kernel < b_kernel * (1 - kSame);
}

}  // namespace

double FusionReport::ImprovementPercent() const {
  return baseline_us > 0 ? 100.0 * (baseline_us - result_us) / baseline_us : 0;
}

size_t FusionReport::Applied() const {
  return std::count_if(decisions.begin(), decisions.end(), [](const FusionDecision& d) { return d.chosen > 0; });
}

size_t FusionReport::FoldsApplied() const {
  return std::count_if(folds.begin(), folds.end(), [](const FoldDecision& f) { return f.applied; });
}

nlohmann::json FusionReport::ToJson() const {
  nlohmann::json fused_ops = nlohmann::json::array();
  nlohmann::json unfused = nlohmann::json::array();
  nlohmann::json folded = nlohmann::json::array();
  for (const auto& f : folds) {
    if (f.applied) {
      folded.push_back({{"transpose", f.transpose},
                        {"into", f.consumer},
                        {"flag", f.flag},
                        {"step_saved_us", f.unfused_step_us - f.step_us},
                        {"kernel_saved_us", f.unfused_kernel_us - f.kernel_us}});
    } else {
      unfused.push_back({{"nodes", {f.transpose, f.consumer}},
                         {"reason", f.refused.empty()
                                        ? fmt::format("folding the transpose into {} ({}) is not faster: step {:.2f} us "
                                                      "against {:.2f} us",
                                                      f.consumer, f.flag, f.step_us, f.unfused_step_us)
                                        : f.refused}});
    }
  }
  for (const auto& d : decisions) {
    if (const FusionOption* o = d.Chosen()) {
      fused_ops.push_back({{"name", o->name},
                           {"op_type", o->op_type},
                           {"epilogue", o->epilogue},
                           {"nodes", std::vector<std::string>(d.nodes.begin(), d.nodes.begin() + 1 + o->length)},
                           {"step_saved_us", d.unfused_step_us - o->step_us},
                           {"kernel_saved_us", d.unfused_kernel_us - o->kernel_us}});
      if (o->attention) fused_ops.back()["attention"] = true;  // its "epilogue" is the score chain
      if (o->causal) fused_ops.back()["causal"] = true;
      if (o->value_out) fused_ops.back()["value_out"] = true;
    }
    // What was left out of each chain, and why: refused by the op, or not faster.
    const size_t from = d.chosen;  // options after the chosen length
    if (from < d.options.size()) {
      const FusionOption& next = d.options[from];
      unfused.push_back({{"nodes", std::vector<std::string>(d.nodes.begin() + (d.chosen ? 1 + d.chosen : 0), d.nodes.end())},
                         {"reason", next.refused.empty()
                                        ? fmt::format("fusing them as {}{} is not faster: step {:.2f} us against {:.2f} us",
                                                      next.op_type, next.epilogue.empty() ? "" : " (" + next.epilogue + ")",
                                                      next.step_us,
                                                      d.Chosen() ? d.Chosen()->step_us : d.unfused_step_us)
                                        : next.refused}});
    }
  }
  return {{"model", model},
          {"soc", soc},
          {"training", training},
          {"job_type", 1},
          {"model_baseline_performance(ms)", baseline_us / 1000},
          {"model_result_performance(ms)", result_us / 1000},
          {"model_performance_improvement", Percent(ImprovementPercent())},
          {"kernels_before", kernels_before},
          {"kernels_after", kernels_after},
          {"fused_operators", fused_ops},
          {"folded_transposes", folded},
          {"not_fused", unfused}};
}

Result<FusionReport> ChooseFusions(const Graph& graph, const SocSpec& soc, int threads) {
  std::vector<Known> pool(std::max(threads, 1));
  Known& known = pool[0];  // the caller's thread's
  TF_ASSIGN_OR_RETURN(Timed base, Time(graph, soc, known));
  FusionReport report;
  report.model = graph.name;
  report.soc = soc.name;
  report.training = graph.training;
  report.baseline_us = base.step_us;
  report.kernels_before = base.kernels;
  // Transposes folded into the MatMul reading them, each timed alone; then the chains on
  // the graph with the kept ones (a folded op's chain fusion carries its flag).
  const std::vector<TransposeFold> folds = FindTransposeFolds(graph);
  report.folds.resize(folds.size());
  ForEach(folds.size(), pool, [&](size_t i, Known& mine) {
    const TransposeFold& fold = folds[i];
    FoldDecision& d = report.folds[i];
    d.transpose = graph.nodes[fold.transpose].name;
    d.consumer = graph.nodes[fold.consumer].name;
    d.flag = TransposeFlag(graph.nodes[fold.consumer], fold.input);
    d.unfused_step_us = base.step_us;
    d.unfused_kernel_us = base.kernel_us;
    auto g = ApplyTransposeFolds(graph, {fold}, soc, &mine.checks);
    auto t = g.ok() ? Time(*g, soc, mine) : Result<Timed>(g.status());
    if (t.ok()) {
      d.step_us = t->step_us;
      d.kernel_us = t->kernel_us;
      d.applied = Better(d.step_us, d.kernel_us, base.step_us, base.kernel_us);
    } else {
      d.refused = t.status().message();
    }
  });
  std::vector<TransposeFold> kept_folds;
  for (size_t i = 0; i < folds.size(); ++i) {
    if (report.folds[i].applied) kept_folds.push_back(folds[i]);
  }
  TF_ASSIGN_OR_RETURN(const Graph transposed, ApplyTransposeFolds(graph, kept_folds, soc, &known.checks));
  TF_ASSIGN_OR_RETURN(base, Time(transposed, soc, known));
  // Each attention as one FlashAttention, timed alone; then the chains of what is left.
  // The bar is the attention as the chain search would leave it: the scores' BatchMatMul
  // with its score chain as the epilogue, when that is faster than unfused.
  const std::vector<FusionChain> score_chains = FindFusionChains(transposed);
  const std::vector<AttentionFusion> attentions = FindAttentionFusions(transposed);
  report.decisions.resize(attentions.size());
  ForEach(attentions.size(), pool, [&](size_t i, Known& mine) {
    const AttentionFusion& a = attentions[i];
    FusionDecision& d = report.decisions[i];
    for (int m : a.Members()) d.nodes.push_back(transposed.nodes[m].name);
    Timed bar = base;
    for (const FusionChain& c : score_chains) {
      if (c.head != a.scores || a.steps.empty() || c.steps.size() < a.steps.size()) continue;
      auto g = ApplyFusions(transposed, {Fusion{c, a.steps.size()}}, soc, &mine.checks);
      auto t = g.ok() ? Time(*g, soc, mine) : Result<Timed>(g.status());
      if (t.ok() && Better(t->step_us, t->kernel_us, bar.step_us, bar.kernel_us)) bar = *t;
    }
    d.unfused_step_us = bar.step_us;
    d.unfused_kernel_us = bar.kernel_us;
    FusionOption o;
    o.length = d.nodes.size() - 1;
    o.name = AttentionNodeName(transposed, a);
    o.op_type = kFlashAttentionOp;
    o.attention = true;
    o.epilogue = AttentionScoreChain(transposed, a);
    o.causal = AttentionIsCausal(transposed, a);
    TimeOption(ApplyAttentionFusions(transposed, {a}, soc, &mine.checks), soc, mine, o);
    const bool faster = o.refused.empty() && Better(o.step_us, o.kernel_us, bar.step_us, bar.kernel_us);
    d.options.push_back(std::move(o));
    d.chosen = faster ? 1 : 0;
  });
  std::vector<AttentionFusion> kept_attention;
  for (size_t i = 0; i < attentions.size(); ++i) {
    if (report.decisions[i].chosen) kept_attention.push_back(attentions[i]);
  }
  TF_ASSIGN_OR_RETURN(const Graph folded, ApplyAttentionFusions(transposed, kept_attention, soc, &known.checks));
  TF_ASSIGN_OR_RETURN(base, Time(folded, soc, known));
  const size_t attention_decisions = report.decisions.size();
  // Every fusion of every chain, timed alone.
  const std::vector<FusionChain> chains = FindFusionChains(folded);
  std::vector<std::pair<size_t, size_t>> options;  // (chain, length): each timed alone
  for (size_t i = 0; i < chains.size(); ++i) {
    const FusionChain& chain = chains[i];
    FusionDecision d;
    d.nodes.push_back(folded.nodes[chain.head].name);
    for (int s : chain.steps) d.nodes.push_back(folded.nodes[s].name);
    d.unfused_step_us = base.step_us;
    d.unfused_kernel_us = base.kernel_us;
    d.options.resize(chain.steps.size());
    for (size_t length = 1; length <= chain.steps.size(); ++length) options.emplace_back(i, length);
    report.decisions.push_back(std::move(d));
  }
  ForEach(options.size(), pool, [&](size_t j, Known& mine) {
    const auto [i, length] = options[j];
    const Fusion f{chains[i], length};
    FusionOption& o = report.decisions[attention_decisions + i].options[length - 1];
    o.length = length;
    o.name = FusedNodeName(folded, f);
    o.op_type = FusedOpType(folded, f);
    o.epilogue = FusedEpilogue(folded, f);
    o.value_out = f.chain.value_out && length == f.chain.steps.size();
    TimeOption(ApplyFusions(folded, {f}, soc, &mine.checks), soc, mine, o);
  });
  // Chains may meet (a residual Add reading two convs' outputs): the one whose best fusion
  // saves most takes the shared node; the other keeps its best fusion short of it.
  auto best_of = [&](const FusionDecision& d, size_t max_length) {
    size_t best = 0;
    double step = d.unfused_step_us, kernel = d.unfused_kernel_us;
    for (size_t i = 0; i < max_length && i < d.options.size(); ++i) {
      const FusionOption& o = d.options[i];
      if (o.refused.empty() && Better(o.step_us, o.kernel_us, step, kernel)) {
        best = i + 1;
        step = o.step_us;
        kernel = o.kernel_us;
      }
    }
    return best;
  };
  std::vector<size_t> order(chains.size());
  std::vector<double> saving(chains.size());
  for (size_t i = 0; i < chains.size(); ++i) {
    order[i] = i;
    const FusionDecision& d = report.decisions[attention_decisions + i];
    const size_t b = best_of(d, chains[i].steps.size());
    saving[i] = b ? d.unfused_step_us - d.options[b - 1].step_us : 0;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return saving[a] > saving[b]; });
  std::map<int, std::string> claimed;  // node -> the fused node that took it
  std::vector<Fusion> chosen;
  for (size_t i : order) {
    const FusionChain& chain = chains[i];
    FusionDecision& d = report.decisions[attention_decisions + i];
    if (claimed.count(chain.head)) continue;  // heads are never steps; kept for safety
    size_t room = 0;
    while (room < chain.steps.size() && !claimed.count(chain.steps[room])) ++room;
    if (room < chain.steps.size() && room < d.options.size()) {
      d.options[room].refused = "'" + folded.nodes[chain.steps[room]].name + "' is fused into '" +
                                claimed[chain.steps[room]] + "', which saves more";
    }
    d.chosen = best_of(d, room);
    if (!d.chosen) continue;
    const Fusion f{chain, d.chosen};
    claimed[chain.head] = d.Chosen()->name;
    for (size_t s = 0; s < d.chosen; ++s) claimed[chain.steps[s]] = d.Chosen()->name;
    chosen.push_back(f);
  }
  TF_ASSIGN_OR_RETURN(report.fused, ApplyFusions(folded, chosen, soc, &known.checks));
  report.fused.name = graph.name + "_fused";
  TF_ASSIGN_OR_RETURN(Timed after, Time(report.fused, soc, known));
  report.result_us = after.step_us;
  report.kernels_after = after.kernels;
  return report;
}

}  // namespace tunefleet::profile
