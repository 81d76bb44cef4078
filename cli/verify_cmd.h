// `tunefleet report MODEL` (DESIGN.md step 5, verify): runs the model graph on the
// embedded simulator with its default tilings and again with the knowledge base's tuned
// configs, and prints the step times, the improvement and each kernel's time before and
// after (AOE's report keys with --json). The knowledge base is a `--data-dir` folder
// (what `tune` wrote) or a coordinator's (looked up over the client protocol). With
// --baseline ORIGINAL (the model before `fuse`) the baseline step is the original's.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client.h"
#include "cli/ops_file.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::cli {

struct VerifyCommand {
  CLI::App* cmd = nullptr;
  std::string model, soc, data_dir;
  bool json = false;
  bool training = false;  // overrides the graph's "training" when set
  int devices = 0;        // overrides the graph's "devices" when > 0
  ModelFlags model_flags;         // --dim (ONNX files), --resident (the model and its baseline)
  std::string baseline;           // --baseline: the model before fusion
};

// Adds `report` to `app`; `f` receives the parsed options and must outlive parsing.
void AddVerifyCommand(CLI::App& app, VerifyCommand& f);

// Exit 0, 1 (I/O, coordinator unavailable), 2 (bad model or config) or 3 (nothing of the
// model in the knowledge base yet). `c` is the
// coordinator's client, nullptr when f.data_dir names a local knowledge base.
int RunVerify(const VerifyCommand& f, const SocCatalog& catalog, client::Client* c);

}  // namespace tunefleet::cli
