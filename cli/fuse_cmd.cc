#include "cli/fuse_cmd.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/ops_file.h"
#include "cli/profile_cmd.h"
#include "cli/report.h"
#include "tunefleet/common/graph.h"
#include "worker/profile/fusion_search.h"

namespace tunefleet::cli {
namespace {

void PrintText(const profile::FusionReport& r, const std::string& written, const std::string& model) {
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
      fmt::print("  {:9.3f}  {} ({}, epilogue {})\n", o["step_saved_us"].get<double>(), o["name"].get<std::string>(),
                 o["op_type"].get<std::string>(), o["epilogue"].get<std::string>());
    }
  }
  for (const auto& f : j["folded_transposes"]) {
    fmt::print("  {:9.3f}  {} folded into {} ({})\n", f["step_saved_us"].get<double>(), f["transpose"].get<std::string>(),
               f["into"].get<std::string>(), f["flag"].get<std::string>());
  }
  for (const auto& n : j["not_fused"]) {
    std::string nodes;
    for (const auto& name : n["nodes"]) nodes += (nodes.empty() ? "" : ", ") + name.get<std::string>();
    fmt::print("  not fused: {}: {}\n", nodes, n["reason"].get<std::string>());
  }
  fmt::print("wrote {}: tune its kernels next (`tunefleet tune {}`), then verify the whole gain (`tunefleet report {} "
             "--data-dir DIR --baseline {}`)\n",
             written, written, written, model);
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
  AddDimOption(*f.cmd, f.dims);
  f.cmd->add_option("-o,--output", f.out, "where to write the fused graph, replacing it (default: MODEL's name with "
                                          "_fused, here, never replaced)");
  f.cmd->add_option("--soc", f.soc, "SoC (overrides the graph's)");
  f.cmd->add_flag("--json", f.json, "print JSON under AOE's report keys");
  f.cmd->add_flag("--training", f.training, "measure training steps (with the backward pass); the written graph keeps "
                                           "the model's own 'training'");
}

int RunFuse(const FuseCommand& f, const SocCatalog& catalog) {
  auto model = LoadModelToRun(f.model, f.soc, /*training=*/false, 0, catalog, f.dims);
  if (!model.ok()) return Fail(model.status());
  // Checked before the search, which may take a while on a large model.
  const std::string out = f.out.empty() ? DefaultFusedPath(f.model) : f.out;
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(out, f.model, ec)) {
    return Fail(InvalidArgument("-o " + out + " is the model itself: write the fused graph to another file"));
  }
  if (std::filesystem::is_directory(out, ec)) {
    return Fail(InvalidArgument("-o " + out + " is a folder: give the fused graph's file name"));
  }
  const std::filesystem::path folder = std::filesystem::path(out).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    return Fail(InvalidArgument("-o " + out + ": folder " + folder.string() + " does not exist"));
  }
  if (f.out.empty() && std::filesystem::exists(out, ec)) {
    return Fail(InvalidArgument(out + " exists (written by hand, or by an earlier fuse): give -o " + out +
                                " to replace it, or -o another file"));
  }
  // --training measures training steps; the written graph keeps the file's own setting.
  Graph graph = model->graph;
  if (f.training) graph.training = true;
  auto report = profile::ChooseFusions(graph, *model->soc);
  if (!report.ok()) return Fail(report.status().WithContext(f.model));
  Graph fused = report->fused;
  fused.training = model->graph.training;
  {
    std::ofstream file(out);
    if (!file || !(file << GraphToJson(fused).dump(2) << "\n")) {
      return Fail(Unavailable("cannot write " + out + ": " + std::strerror(errno) +
                              " (check the folder is writable and has room)"));
    }
  }
  if (f.json) {
    nlohmann::json j = report->ToJson();
    j["fused_graph"] = out;
    fmt::print("{}\n", j.dump(2));
  } else {
    PrintText(*report, out, f.model);
  }
  return kExitOk;
}

}  // namespace tunefleet::cli
