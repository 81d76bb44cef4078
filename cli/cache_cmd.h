// `tunefleet cache export | import | stats`: the knowledge base as JSON lines
// (tunefleet/common/kb_entry.h), to ship tuned configs with a model, seed a new
// installation or merge two (the faster entry per key wins), and a summary of what it
// holds. Each works against a coordinator (client API) or a local folder (--data-dir,
// what `tunefleet tune` writes). Registered on the CLI's app by main.cc.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/client.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::cli {

struct CacheCommands {
  CLI::App* cache = nullptr;
  CLI::App* export_cmd = nullptr;
  CLI::App* import_cmd = nullptr;
  CLI::App* stats_cmd = nullptr;
  std::string data_dir;  // set: work on this folder instead of a coordinator
  std::string out = "-";
  std::string soc, op;   // export filters
  std::string in;
  std::string replay_cache;  // import --data-dir: check replayed kernels' entries against it
  bool dry_run = false, skip_refused = false, json = false;
};

// Adds `cache` with its three subcommands to `app`; each gets a --data-dir option, and
// the caller adds the coordinator options (excluded by --data-dir) to CoordinatorCommands().
void AddCacheCommands(CLI::App& app, CacheCommands& flags);
std::vector<CLI::App*> CoordinatorCommands(const CacheCommands& flags);

// Whether a cache command was parsed and reads a local folder (no coordinator needed).
bool CacheParsed(const CacheCommands& flags);
bool CacheIsLocal(const CacheCommands& flags);

// Runs the parsed cache command on a local folder, or through `coordinator` when it is
// given. Exit codes: 0 ok, 1 operational failure, 2 bad input (nothing imported).
int RunCacheCommand(const CacheCommands& flags, const SocCatalog& catalog, client::Client* coordinator);

}  // namespace tunefleet::cli
