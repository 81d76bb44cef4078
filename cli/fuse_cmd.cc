#include "cli/fuse_cmd.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/ops_file.h"
#include "cli/profile_cmd.h"
#include "cli/report.h"
#include "tunefleet/common/cpu_count.h"
#include "tunefleet/common/graph.h"
#include "tunefleet/common/graph_fusion.h"
#include "tunefleet/common/signals.h"
#include "worker/profile/fusion_search.h"

namespace tunefleet::cli {
namespace {

void PrintText(const profile::FusionReport& r, const std::string& written, const FuseCommand& f, bool model_training,
               const Graph& graph) {
  fmt::print("model {} on {}{}: {} of {} fusion chains fused, {} of {} transposes folded, {} -> {} kernels\n", r.model,
             r.soc, r.training ? " (training)" : "", r.Applied(), r.decisions.size(), r.FoldsApplied(), r.folds.size(),
             r.kernels_before, r.kernels_after);
  fmt::print("model_baseline_performance(ms)  {:.4f}\n", r.baseline_us / 1000);
  fmt::print("model_result_performance(ms)    {:.4f}\n", r.result_us / 1000);
  fmt::print("model_performance_improvement   {}\n", r.ToJson()["model_performance_improvement"].get<std::string>());
  const nlohmann::json j = r.ToJson();
  if (!j["fused_operators"].empty()) {
    fmt::print("fused ({:>9} = the step's time saved by it alone):\n", "saved us");
    for (const auto& o : j["fused_operators"]) {
      // An attention's chain is on its scores; it may have none.
      const std::string op = o["op_type"].get<std::string>(), chain = o["epilogue"].get<std::string>();
      std::string what = o.value("attention", false) ? (chain.empty() ? op : op + ", scores " + chain) : op + ", epilogue " + chain;
      if (o.value("causal", false)) what += ", causal";
      if (o.value("value_out", false)) what += ", also the value before Quantize";
      fmt::print("  {:9.3f}  {} ({})\n", o["step_saved_us"].get<double>(), o["name"].get<std::string>(), what);
    }
  }
  for (const auto& fold : j["folded_transposes"]) {
    fmt::print("  {:9.3f}  {} folded into {} ({})\n", fold["step_saved_us"].get<double>(),
               fold["transpose"].get<std::string>(), fold["into"].get<std::string>(), fold["flag"].get<std::string>());
  }
  for (const auto& n : j["not_fused"]) {
    std::string nodes;
    for (const auto& name : n["nodes"]) nodes += (nodes.empty() ? "" : ", ") + name.get<std::string>();
    fmt::print("  not fused: {}: {}\n", nodes, n["reason"].get<std::string>());
  }
  // A mask the import cannot see the values of may be causal: say how to tell.
  for (const AttentionFusion& a : FindAttentionFusions(graph)) {
    for (const std::string& mask : UndeclaredMasks(graph, a)) {
      fmt::print("  note: {} applies the mask '{}', a tensor whose values are not in the file: if it masks every key "
                 "after the query's own (a causal mask), --causal-mask {} lets its FlashAttention skip the key blocks "
                 "it masks whole\n",
                 AttentionNodeName(graph, a), mask, mask);
    }
  }
  // The next steps as they must be typed: the same SoC, and the model's --dim and
  // --resident for --baseline (the fused graph keeps its resident tensors itself).
  const std::string soc = f.soc.empty() ? "" : " --soc " + f.soc;
  std::string dims;
  for (const auto& d : f.model_flags.dims) dims += " --dim " + d;
  for (const auto& name : f.model_flags.resident) dims += " --resident " + name;
  fmt::print("wrote {}: tune its kernels next (`tunefleet tune {}{}`), then verify the whole gain (`tunefleet report {}{} "
             "--data-dir DIR --baseline {}{}{}`)\n",
             written, written, soc, written, soc, f.model, dims, f.training ? " --training" : "");
  if (f.training && !model_training) {
    fmt::print("the written graph keeps the model's \"training\": false; set it to true in {} for `tune` to tune the "
               "backward GEMMs too\n",
               written);
  }
}

// Where the fused graph of `model` goes: `out`, or by default DefaultFusedPath(model).
// Refused: the model itself, a folder, a missing folder; and a default that exists, unless
// `rerun` and it already holds exactly `*same` (what a rerun writes again), so a hand-fused
// file is never replaced. `flag` names the option in messages.
enum class ExistingDefault { kRefuse, kCheckLater, kSameIsFine };
Result<std::string> FusedOutput(const std::string& model, const std::string& out, const std::string& flag,
                                ExistingDefault existing, const std::string* same = nullptr) {
  const std::string path = out.empty() ? DefaultFusedPath(model) : out;
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::equivalent(path, model, ec)) {
    return InvalidArgument(flag + " " + path + " is the model itself: write the fused graph to another file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(flag + " " + path + " is a folder: give the fused graph's file name");
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    return InvalidArgument(flag + " " + path + ": folder " + folder.string() + " does not exist");
  }
  if (out.empty() && existing != ExistingDefault::kCheckLater && std::filesystem::exists(path, ec)) {
    if (existing == ExistingDefault::kSameIsFine && same != nullptr) {
      std::ifstream in(path);
      std::stringstream held;
      held << in.rdbuf();
      if (held.str() == *same) return path;
    }
    return InvalidArgument(path + " exists and holds another graph (written by hand, or by an earlier fuse of another "
                                  "model or of this one at other sizes or SoC): give " + flag +
                           " " + path + " to replace it, or " + flag + " another file");
  }
  return path;
}

std::string GraphText(const Graph& g) { return GraphToJson(g).dump(2) + "\n"; }

// Written beside `path` and renamed over it: an interrupted write leaves no half graph,
// which a rerun would refuse to replace as a hand-written file.
Status WriteText(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  auto failed = [&] {
    const std::string why = std::strerror(errno);
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    return Unavailable("cannot write " + path + ": " + why + " (check the folder is writable and has room)");
  };
  {
    std::ofstream file(partial);
    if (!file || !(file << text) || !file.flush()) return failed();
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    errno = ec.value();
    return failed();
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultFusedPath(const std::string& model) {
  const std::filesystem::path p(model);
  return p.stem().string() + "_fused.json";
}

void AddFuseCommand(CLI::App& app, FuseCommand& f) {
  f.cmd = app.add_subcommand(
      "fuse", "subgraph tuning (AOE job type 1): fuse each cube op with the element-wise ops after it where the "
              "simulator measures it faster, and write the fused graph to tune next");
  f.cmd->add_option("MODEL", f.model, "model graph JSON (docs/profiling.md) or .onnx (written out as a JSON graph)")
      ->required()
      ->check(CLI::ExistingFile);
  AddModelFlags(*f.cmd, f.model_flags);
  f.cmd->add_option("-o,--output", f.out, "where to write the fused graph, replacing it (default: MODEL's name with "
                                          "_fused, here: rewritten with the same model's fused graph, never "
                                          "replacing another's)");
  f.cmd->add_option("--soc", f.soc, "SoC (overrides the graph's)");
  f.cmd->add_flag("--json", f.json, "print JSON under AOE's report keys");
  f.cmd->add_flag("--training", f.training, "measure training steps (with the backward pass); the written graph keeps "
                                           "the model's own 'training'");
  // The report and the fused graph are the same for any count; only the time differs.
  f.threads = UsableCpus();
  f.cmd->add_option("--threads", f.threads, "candidate fusions timed at once (default: the CPUs this process may use, "
                                            "its affinity lowered to its cgroup's CPU quota; the result is the same "
                                            "for any count)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}


Result<Graph> FuseForTuning(const std::string& model, const std::string& soc, const ModelFlags& flags,
                            const std::string& out, const SocCatalog& catalog) {
  TF_ASSIGN_OR_RETURN(ModelToRun m, LoadModelToRun(model, soc, /*training=*/false, 0, catalog, flags));
  TF_RETURN_IF_ERROR(FusedOutput(model, out, "--fused-out", ExistingDefault::kCheckLater).status());
  auto report = [&] {
    TerminationWatcher stop(ExitInterrupted);  // nothing is submitted yet
    return profile::ChooseFusions(m.graph, *m.soc, UsableCpus());
  }();
  if (!report.ok()) return report.status().WithContext(model);
  const std::string text = GraphText(report->fused);
  TF_ASSIGN_OR_RETURN(const std::string path, FusedOutput(model, out, "--fused-out", ExistingDefault::kSameIsFine, &text));
  TF_RETURN_IF_ERROR(WriteText(path, text));
  fmt::print(stderr,
             "fused {}: {} -> {} kernels, step {:.4f} -> {:.4f} ms at default tilings ({}); wrote {}, which `report` "
             "takes (--baseline {})\n",
             model, report->kernels_before, report->kernels_after, report->baseline_us / 1000, report->result_us / 1000,
             report->ToJson()["model_performance_improvement"].get<std::string>(), path, model);
  return report->fused;
}

int RunFuse(const FuseCommand& f, const SocCatalog& catalog) {
  auto model = LoadModelToRun(f.model, f.soc, /*training=*/false, 0, catalog, f.model_flags);
  if (!model.ok()) return Fail(model.status());
  // Checked before the search, which may take a while on a large model.
  if (auto checked = FusedOutput(f.model, f.out, "-o", ExistingDefault::kCheckLater); !checked.ok()) {
    return Fail(checked.status());
  }
  // --training measures training steps; the written graph keeps the file's own setting.
  Graph graph = model->graph;
  if (f.training) graph.training = true;
  auto report = profile::ChooseFusions(graph, *model->soc, f.threads);
  if (!report.ok()) return Fail(report.status().WithContext(f.model));
  Graph fused = report->fused;
  fused.training = model->graph.training;
  const std::string text = GraphText(fused);
  // A default output that already holds this fused graph (an earlier fuse) is fine.
  auto out = FusedOutput(f.model, f.out, "-o", ExistingDefault::kSameIsFine, &text);
  if (!out.ok()) return Fail(out.status());
  if (Status s = WriteText(*out, text); !s.ok()) return Fail(s);
  if (f.json) {
    nlohmann::json j = report->ToJson();
    j["fused_graph"] = *out;
    fmt::print("{}\n", j.dump(2));
  } else {
    PrintText(*report, *out, f, model->graph.training, graph);
  }
  return kExitOk;
}

}  // namespace tunefleet::cli
