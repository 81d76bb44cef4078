// `tunefleet profile` and `tunefleet analyze`: thin wrappers over worker/profile/.
#include "cli/profile_cmd.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/ops_file.h"
#include "cli/report.h"
#include "tunefleet/common/graph.h"
#include "worker/profile/analysis.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/profile_export.h"
#include "worker/profile/tile_trace.h"

namespace tunefleet::cli {
namespace {

std::vector<std::pair<std::string, double>> TopOps(const profile::RunProfile& run, size_t n) {
  std::map<std::string, double> by_name;
  for (const auto& op : run.ops) by_name[op.name] += op.duration_us;
  std::vector<std::pair<std::string, double>> ranked(by_name.begin(), by_name.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (ranked.size() > n) ranked.resize(n);
  return ranked;
}

int RunProfile(const ProfileCommands& f, const SocCatalog& catalog) {
  auto model = LoadModelToRun(f.model, f.soc, f.training, f.devices, catalog, f.model_flags);
  if (!model.ok()) return Fail(model.status());
  const Graph& graph = model->graph;
  const SocSpec& soc = *model->soc;
  auto run = profile::RunGraph(graph, soc);
  if (!run.ok()) return Fail(run.status().WithContext(f.model));
  if (!f.trace_ops.empty() && f.trace.empty()) {
    return Fail(InvalidArgument("--trace-ops needs --trace FILE to write the tile timelines into"));
  }
  if (!f.trace.empty()) {
    auto tiles = profile::TileTimelines(graph, soc, f.trace_ops);
    if (!tiles.ok()) return Fail(tiles.status());
    if (Status s = profile::WriteChromeTrace(*run, f.trace, *tiles); !s.ok()) return Fail(s);
  }
  if (!f.csv_dir.empty()) {
    if (Status s = profile::WriteProfileDir(*run, f.csv_dir); !s.ok()) return Fail(s);
  }
  auto top = TopOps(*run, 10);
  if (f.json) {
    nlohmann::json out = profile::RunSummaryJson(*run);
    out.erase("edges");
    nlohmann::json top_json = nlohmann::json::array();
    for (const auto& [name, us] : top) top_json.push_back({{"op_name", name}, {"duration_us", us}});
    out["top_ops"] = top_json;
    out["ops"] = run->ops.size();
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  const auto& r = *run;
  fmt::print("model {} on {}{}: {} kernels\n", r.model, r.soc,
             r.training ? fmt::format(" (training, {} device(s))", r.devices) : std::string(), r.ops.size());
  fmt::print("step time            {:10.1f} us\n", r.step_us);
  fmt::print("  host preprocessing {:10.1f} us\n", r.host_us);
  fmt::print("  H2D / D2H          {:10.1f} / {:.1f} us\n", r.h2d_us, r.d2h_us);
  fmt::print("  device compute     {:10.1f} us ({:.1f} us with an op running)\n", r.compute_end_us - r.compute_start_us,
             r.device_busy_us);
  if (r.training) fmt::print("  HCCL all-reduce    {:10.1f} us ({:.1f} us exposed)\n", r.comm_us, r.exposed_comm_us);
  fmt::print("AI Core utilisation  {:10.1f} %\n", 100 * r.ai_core_utilisation);
  fmt::print("HBM bandwidth util.  {:10.1f} % (while ops run)\n", 100 * r.memory_bw_utilisation);
  fmt::print("peak device memory   {:10.1f} MiB with reuse, {:.1f} MiB without (live-set bound {:.1f} MiB)\n",
             r.memory.with_reuse_bytes / 1048576.0, r.memory.no_reuse_bytes / 1048576.0,
             r.memory.max_live_bytes / 1048576.0);
  fmt::print("top ops:\n");
  for (const auto& [name, us] : top) fmt::print("  {:10.1f} us  {:5.1f}%  {}\n", us, 100 * us / r.step_us, name);
  if (!f.trace.empty()) fmt::print("trace: {}\n", f.trace);
  if (!f.csv_dir.empty()) fmt::print("csv: {}/op_summary.csv, profiler_data.csv, run_summary.json\n", f.csv_dir);
  return kExitOk;
}

int RunAnalyze(const ProfileCommands& f) {
  auto loaded = profile::LoadProfile(f.analyze_path);
  if (!loaded.ok()) return Fail(loaded.status());
  profile::Analysis a = profile::Analyze(*loaded);
  if (f.analyze_json) {
    fmt::print("{}\n", a.ToJson().dump(2));
  } else {
    fmt::print("{}", a.ToText());
  }
  return kExitOk;
}

}  // namespace

Result<ModelToRun> LoadModelToRun(const std::string& path, const std::string& soc, bool training, int devices,
                                  const SocCatalog& catalog, const ModelFlags& flags) {
  ModelToRun m;
  TF_ASSIGN_OR_RETURN(m.graph, LoadModelFile(path, soc, flags));
  if (training) m.graph.training = true;
  if (devices > 0) m.graph.devices = devices;
  auto spec = catalog.Find(m.graph.soc);
  if (!spec.ok()) return spec.status().WithContext(path + ": 'soc'");
  m.soc = *spec;
  return m;
}

void AddProfileCommands(CLI::App& app, ProfileCommands& f) {
  f.profile = app.add_subcommand(
      "profile", "run a model (a JSON graph, see examples/bert_base_layer.json, or an ONNX file) on the simulated NPU "
                 "with default tilings and print step time, utilisation and top ops");
  f.profile->add_option("MODEL", f.model, "model graph JSON (docs/profiling.md) or .onnx")->required();
  AddModelFlags(*f.profile, f.model_flags);
  f.profile->add_option("--soc", f.soc, "SoC (overrides the graph's)");
  f.profile->add_option("--trace", f.trace, "write a Chrome trace JSON here (chrome://tracing, Perfetto)");
  f.profile->add_option("--csv", f.csv_dir, "write op_summary.csv, profiler_data.csv and run_summary.json into this folder");
  f.profile->add_flag("--json", f.json, "print JSON: the run summary, the number of kernels (ops) and the 10 longest (top_ops); --csv DIR writes every op");
  f.profile->add_option("--trace-ops", f.trace_ops,
                        "comma-separated ops whose per-core per-pipe tile timeline (event simulation) goes into --trace")
      ->delimiter(',');
  f.profile->add_flag("--training", f.training, "add the backward pass (a cube op's dX and dW GEMMs, a vector op at 2x its forward) and gradient all-reduce");
  f.profile->add_option("--devices", f.devices, "data-parallel devices (overrides the graph's 'devices')")
      ->check(CLI::Range(1, 4096));

  f.analyze = app.add_subcommand(
      "analyze", "bottleneck analysis (compute/memory/communication x host/device/device-to-device) of a profile "
                 "folder written by `profile --csv`, or of its op_summary.csv or profiler_data.csv alone");
  f.analyze->add_option("PROFILE", f.analyze_path, "profile folder, op_summary.csv or profiler_data.csv")->required();
  f.analyze->add_flag("--json", f.analyze_json, "print JSON");
}

int RunProfileCommands(const ProfileCommands& f, const SocCatalog& catalog) {
  if (f.profile != nullptr && f.profile->parsed()) return RunProfile(f, catalog);
  if (f.analyze != nullptr && f.analyze->parsed()) return RunAnalyze(f);
  return -1;
}

}  // namespace tunefleet::cli
