// `tunefleet fuse MODEL` (DESIGN.md step 4, subgraph tuning, AOE job type 1): finds where
// a cube op and the element-wise ops after it can run as one fused op, keeps the fusions
// the embedded simulator measures faster, and writes the fused graph, to be tuned next
// (`tune`, job type 2: its shapes are the fused ops') and verified (`report`). Local only.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/ops_file.h"
#include "tunefleet/common/graph.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::cli {

struct FuseCommand {
  CLI::App* cmd = nullptr;
  std::string model, soc, out;
  bool json = false;
  bool training = false;  // overrides the graph's "training" when set
  ModelFlags model_flags;  // --dim, --resident
  int threads = 1;         // --threads: candidates timed at once (AddFuseCommand sets UsableCpus())
};

// Adds `fuse` to `app`; `f` receives the parsed options and must outlive parsing.
void AddFuseCommand(CLI::App& app, FuseCommand& f);

// Exit 0 (written, even when nothing was worth fusing), 1 (the write failed) or 2 (bad
// model, or an -o that cannot be written: checked before the search). The default -o is
// never overwritten; an -o given is.
int RunFuse(const FuseCommand& f, const SocCatalog& catalog);

// `tune --fuse` / `submit --fuse`: the model fused as `fuse` fuses it, the fused graph
// written to `out` (default DefaultFusedPath(model); checked before the search: a default
// that exists is replaced only when it already holds this fused graph), a line on stderr
// with the kernels and the step before and after; the fused graph, whose kernels are then
// tuned (subgraph first, then operators: their shapes depend on it). Errors say what to fix.
// Candidates are timed on UsableCpus() threads.
Result<Graph> FuseForTuning(const std::string& model, const std::string& soc, const ModelFlags& flags,
                            const std::string& out, const SocCatalog& catalog);

// Where `fuse` writes by default: MODEL's file name with "_fused" before ".json", in the
// current folder ("examples/bert.json" -> "bert_fused.json").
std::string DefaultFusedPath(const std::string& model);

}  // namespace tunefleet::cli
