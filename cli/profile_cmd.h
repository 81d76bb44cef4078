// `tunefleet profile` (run a model graph on the embedded simulator and export what the
// profiler saw) and `tunefleet analyze` (bottleneck analysis of a profile folder or a
// profiler_data.csv). Registered on the CLI's app by main.cc; single-threaded.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/ops_file.h"
#include "tunefleet/common/graph.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::cli {

struct ProfileCommands {
  CLI::App* profile = nullptr;
  CLI::App* analyze = nullptr;
  std::string model, soc, trace, csv_dir;
  bool json = false;
  bool training = false;  // overrides the graph's "training" when set
  int devices = 0;        // overrides the graph's "devices" when > 0
  std::vector<std::string> trace_ops;  // ops whose tile timelines go into the trace
  ModelFlags model_flags;              // --dim, --resident
  std::string analyze_path;
  bool analyze_json = false;
};

// A model graph to run: the file (with --soc, --training and --devices applied) and its
// SoC's spec from `catalog`. Errors name the file and what to fix.
struct ModelToRun {
  Graph graph;
  const SocSpec* soc = nullptr;
};
Result<ModelToRun> LoadModelToRun(const std::string& path, const std::string& soc, bool training, int devices,
                                  const SocCatalog& catalog, const ModelFlags& flags = {});

// Adds both subcommands to `app`; `flags` receives the parsed options and must outlive parsing.
void AddProfileCommands(CLI::App& app, ProfileCommands& flags);

// The exit code of whichever of the two commands was parsed (0 ok, 1 I/O failure, 2 bad
// input), or -1 when neither was.
int RunProfileCommands(const ProfileCommands& flags, const SocCatalog& catalog);

}  // namespace tunefleet::cli
