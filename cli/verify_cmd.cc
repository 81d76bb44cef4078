#include "cli/verify_cmd.h"

#include <map>
#include <optional>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/ops_file.h"
#include "cli/profile_cmd.h"
#include "cli/report.h"
#include "coordinator/lookup.h"
#include "coordinator/store.h"
#include "tunefleet/common/graph.h"
#include "tunefleet/common/onnx_import.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/verify.h"

namespace tunefleet::cli {
namespace {

// The knowledge base's entries for `keys` (nullopt where none), exact hits only: a
// nearest shape's config is a guess, not a tuned result to verify.
Result<std::vector<std::optional<KbEntry>>> LookUpExact(const std::string& data_dir, client::Client* c,
                                                        const std::vector<OpKey>& keys) {
  std::vector<std::optional<KbEntry>> out;
  if (c != nullptr) {
    TF_ASSIGN_OR_RETURN(auto found, c->Lookup(keys));
    for (auto& f : found) out.push_back(f ? std::optional<KbEntry>(static_cast<KbEntry&>(*f)) : std::nullopt);
    return out;
  }
  TF_ASSIGN_OR_RETURN(auto store, coordinator::Store::OpenReadOnly(data_dir));
  TF_ASSIGN_OR_RETURN(auto answers, coordinator::LookUp(*store, keys, false, [](const OpKey&) { return Result<std::optional<SearchSpace>>(std::nullopt); }));
  for (auto& a : answers) out.push_back(a.exact() ? a.entry : std::nullopt);
  return out;
}

// The entry's best config in the op's parameter order, checked against the space.
Result<Config> ConfigOf(const KbEntry& e, const SearchSpace& space) {
  const std::string whose = "the knowledge base's config for " + e.key.Display();
  auto config = space.FromNamed(e.best_config);
  if (!config.ok()) {
    return FailedPrecondition(whose + ": " + config.status().message() +
                              " (an entry of another simulator model version?): re-tune it with --force");
  }
  TF_RETURN_IF_ERROR(space.Validate(*config).WithContext(whose));
  return config;
}

void PrintText(const profile::VerifyReport& r, size_t kernels, size_t tuned_nodes, size_t backward_gemms,
               size_t tuned_gemms) {
  fmt::print("model {} on {}{}: {} of {} kernel nodes have a tuned config{}\n", r.model, r.soc,
             r.training ? fmt::format(" (training, {} device(s))", r.devices) : std::string(), tuned_nodes, kernels,
             r.training ? fmt::format(", and {} of their {} backward GEMMs{}", tuned_gemms, backward_gemms,
                                      tuned_gemms < backward_gemms
                                          ? " (`tune` tunes them for a graph with \"training\": true; a vector "
                                            "kernel's backward follows its forward's config)"
                                          : "")
                        : std::string());
  fmt::print("model_baseline_performance(ms)  {:.4f}\n", r.baseline_us / 1000);
  fmt::print("model_result_performance(ms)    {:.4f}\n", r.result_us / 1000);
  fmt::print("model_performance_improvement   {}\n", r.ToJson()["model_performance_improvement"].get<std::string>());
  fmt::print("repo_modified_operators:\n");
  fmt::print("  {:>12}  {:>12}  {:>8}  {}\n", "before (us)", "after (us)", "change", "op");
  for (const auto& op : r.ops) {
    if (!op.tuned) continue;
    fmt::print("  {:12.3f}  {:12.3f}  {:7.2f}%  {}  {}\n", op.before_us, op.after_us,
               op.before_us > 0 ? 100.0 * (op.before_us - op.after_us) / op.before_us : 0.0, op.name, op.op_key);
  }
  std::vector<std::string> untuned;
  for (const auto& op : r.ops) {
    if (!op.tuned) untuned.push_back(op.name);
  }
  if (!untuned.empty()) {
    std::string names;
    for (size_t i = 0; i < untuned.size() && i < 8; ++i) names += (i ? ", " : "") + untuned[i];
    fmt::print("not tuned ({} kernels, run at their default tiling): {}{}\n", untuned.size(), names,
               untuned.size() > 8 ? ", ..." : "");
  }
}

// --dim sizes an ONNX model's dimensions: the report's model, its baseline, or both. Given
// for neither, the model's loader says so. --resident applies to both (a fused graph keeps
// its model's input and output names).
ModelFlags FlagsFor(const std::string& path, const VerifyCommand& f) {
  const bool any_onnx = IsOnnxPath(f.model) || (!f.baseline.empty() && IsOnnxPath(f.baseline));
  ModelFlags flags = f.model_flags;
  if (!IsOnnxPath(path) && any_onnx) flags.dims.clear();
  return flags;
}

// The elements of each of the graph's inputs and outputs, in order: what a model and the
// same model fused (or exported otherwise) share, whatever their tensors are called.
std::pair<std::vector<int64_t>, std::vector<int64_t>> Interface(const Graph& g) {
  auto elements = [](const TensorDesc& d) {
    int64_t n = 1;
    for (int64_t v : d.shape) n *= v;
    return n;
  };
  std::vector<int64_t> in, out;
  for (const auto& t : g.inputs) in.push_back(elements(t.desc));
  for (const auto& name : g.outputs) out.push_back(g.FindTensor(name) ? elements(g.FindTensor(name)->desc) : 0);
  return {in, out};
}

// Whether `baseline` is the model before fusion of `graph`: the same SoC, training setting,
// devices and inputs and outputs; kInvalidArgument saying which differs otherwise.
Status CheckBaseline(const ModelToRun& baseline, const Graph& graph, const SocSpec& soc, const VerifyCommand& f) {
  const std::string both = "--baseline " + f.baseline + " and " + f.model;
  if (baseline.soc->name != soc.name) {
    return InvalidArgument(both + " run on " + baseline.soc->name + " and " + soc.name + ": give the same SoC");
  }
  if (baseline.graph.training != graph.training || baseline.graph.devices != graph.devices) {
    return InvalidArgument(both + " differ in 'training' or 'devices': compare the same step (set them alike, or give "
                                  "--training / --devices to both)");
  }
  if (Interface(baseline.graph) != Interface(graph)) {
    // Say which: elements of each input and output, in order (a --dim given otherwise
    // shows here as other sizes).
    auto list = [](const std::vector<int64_t>& v) { return "[" + fmt::format("{}", fmt::join(v, ", ")) + "]"; };
    const auto [bin, bout] = Interface(baseline.graph);
    const auto [gin, gout] = Interface(graph);
    return InvalidArgument(fmt::format(
        "{} take or give different tensors (elements of the inputs {} against {}, of the outputs {} against {}): the "
        "baseline must be the same model before fusion, at the same sizes (`tunefleet fuse` keeps a model's inputs and "
        "outputs; check --dim)",
        both, list(bin), list(gin), list(bout), list(gout)));
  }
  return Status::Ok();
}

}  // namespace

void AddVerifyCommand(CLI::App& app, VerifyCommand& f) {
  f.cmd = app.add_subcommand(
      "report", "verify a tuned model: run it with default tilings and with the knowledge base's tuned configs; "
                "print both step times, the improvement and each tuned kernel's time before and after");
  f.cmd->add_option("MODEL", f.model, "model graph JSON (docs/profiling.md) or .onnx")->required()->check(CLI::ExistingFile);
  AddModelFlags(*f.cmd, f.model_flags);
  f.cmd->add_option("--baseline", f.baseline, "the model before `fuse`: the baseline step is its, at default tilings, so "
                                              "the improvement covers fusion and tiling")
      ->check(CLI::ExistingFile);
  f.cmd->add_option("--soc", f.soc, "SoC (overrides the graph's)");
  f.cmd->add_option("--data-dir", f.data_dir, "read the tuned configs from this knowledge-base folder (what `tune` wrote) "
                                             "instead of asking a coordinator")
      ->check(CLI::ExistingDirectory);
  f.cmd->add_flag("--json", f.json, "print JSON under AOE's report keys");
  f.cmd->add_flag("--training", f.training, "with the backward pass and gradient all-reduce (a vector or fused kernel's backward follows its forward's config)");
  f.cmd->add_option("--devices", f.devices, "data-parallel devices (overrides the graph's 'devices')")->check(CLI::Range(1, 4096));
}

int RunVerify(const VerifyCommand& f, const SocCatalog& catalog, client::Client* c) {
  auto model = LoadModelToRun(f.model, f.soc, f.training, f.devices, catalog, FlagsFor(f.model, f));
  if (!model.ok()) return Fail(model.status());
  const Graph& graph = model->graph;
  const SocSpec& soc = *model->soc;
  // Every kernel with a tiling: the nodes, and in a training step the cube nodes'
  // backward GEMMs, which `tune` of a training graph tunes too.
  auto tunable = TunableKernels(graph);
  if (!tunable.ok()) return Fail(tunable.status().WithContext(f.model));
  std::vector<OpKey> keys;
  for (const auto& k : *tunable) keys.push_back(k.key);
  auto found = LookUpExact(f.data_dir, c, keys);
  if (!found.ok()) return Fail(found.status());
  std::map<std::string, Config> configs;
  size_t kernels = 0, tuned_nodes = 0, backward_gemms = 0, tuned_gemms = 0;
  for (size_t i = 0; i < tunable->size(); ++i) {
    const NamedKernel& k = (*tunable)[i];
    (k.backward ? backward_gemms : kernels) += 1;
    if (!(*found)[i]) continue;
    auto problem = MakeTuningProblem(k.key, soc);
    if (!problem.ok()) return Fail(problem.status().WithContext("'" + k.name + "'"));
    auto config = ConfigOf(*(*found)[i], problem->space);
    if (!config.ok()) return Fail(config.status().WithContext("'" + k.name + "'"));
    configs[k.key.Canonical()] = std::move(config).value();
    (k.backward ? tuned_gemms : tuned_nodes) += 1;
  }
  auto report = profile::Verify(graph, soc, configs);
  if (!report.ok()) return Fail(report.status().WithContext(f.model));
  // --baseline: the model before `fuse`, so the improvement is the whole chain's (subgraph
  // then operator tuning), as AOE reports it; the kernels' before/after stay this model's.
  const double own_default_us = report->baseline_us;
  if (!f.baseline.empty()) {
    auto before = LoadModelToRun(f.baseline, f.soc, f.training, f.devices, catalog, FlagsFor(f.baseline, f));
    if (!before.ok()) return Fail(before.status().WithContext("--baseline"));
    if (Status s = CheckBaseline(*before, graph, soc, f); !s.ok()) return Fail(s);
    auto run = profile::RunGraph(before->graph, soc);
    if (!run.ok()) return Fail(run.status().WithContext(f.baseline));
    report->baseline_us = run->step_us;
  }
  // What a reader might take for a tuning failure, said where it comes from.
  if (auto slower = report->SlowerKernels(); !slower.empty()) {
    fmt::print(stderr, "tunefleet report: note: {} tuned kernel(s) run slower here than at their default tiling (first: "
               "{}, {:.3f} -> {:.3f} us): a best measured with noise, or kernels running beside it that share HBM\n",
               slower.size(), slower[0]->name, slower[0]->before_us, slower[0]->after_us);
  }
  if (report->result_us > report->baseline_us * (1 + 1e-9)) {
    fmt::print(stderr, "tunefleet report: note: the tuned step is slower than the baseline: {}\n",
               report->SlowerKernels().empty()
                   ? "kernels that run at once share HBM bandwidth, so a faster one can slow the one beside it "
                     "(docs/profiling.md)"
                   : "see the slower tuned kernels above");
  }
  if (f.json) {
    nlohmann::json out = report->ToJson();
    if (!f.baseline.empty()) {
      out["baseline_model"] = f.baseline;
      out["model_default_performance(ms)"] = own_default_us / 1000;  // this model at its default tilings
    }
    out["kernel_nodes"] = kernels;
    out["tuned_kernel_nodes"] = tuned_nodes;
    if (graph.training) {
      out["backward_gemms"] = backward_gemms;
      out["tuned_backward_gemms"] = tuned_gemms;
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    if (!f.baseline.empty()) {
      fmt::print("baseline: {} at its default tilings; {} at its default tilings runs {:.4f} ms\n", f.baseline, f.model,
                 own_default_us / 1000);
    }
    PrintText(*report, kernels, tuned_nodes, backward_gemms, tuned_gemms);
  }
  if (tuned_nodes + tuned_gemms == 0) {
    fmt::print(stderr, "tunefleet report: nothing of {} is in the knowledge base yet: tune it first (`tunefleet tune "
               "{}`, or `submit`)\n", f.model, f.model);
    return kExitMiss;  // as lookup: a valid model, not tuned yet
  }
  return kExitOk;
}

}  // namespace tunefleet::cli
