// How the CLI shows tuning outcomes and failures: the text block a person reads and the JSON a
// script reads, for a task's status or a knowledge-base entry. The default tiling is
// recomputed here from common/ (the coordinator reports only its latency).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::cli {

// The CLI's exit codes, beside status.h's kExitFailure (1) and kExitBadInput (2).
inline constexpr int kExitOk = 0, kExitMiss = 3, kExitTaskFailed = 4;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

// Prints "tunefleet: <status>" on stderr; returns ExitCodeFor(s).
int Fail(const Status& s);

// What a TerminationWatcher calls on Ctrl-C or SIGTERM for the commands that only compute
// and print (profile, analyze, fuse, report, and tune's or submit's --fuse step): they
// have nothing to save, so the process ends at once with kExitInterrupted. main() blocks
// both signals for the commands that keep state, which left these ignoring Ctrl-C until
// they were done (a fuse of a 2,000-node graph runs 40 s).
[[noreturn]] void ExitInterrupted();

std::string DescribeConfig(const client::NamedConfig& config);
// The default tiling of key by name, or "" when it cannot be built.
std::string DefaultConfigText(const OpKey& key, const SocCatalog& catalog);

std::string TaskText(const std::string& name, const client::TaskView& t, bool from_cache,
                     const SocCatalog& catalog);
nlohmann::json TaskJson(const std::string& name, const client::TaskView& t, bool from_cache);

std::string KbText(const std::string& name, const client::KbView& e);
nlohmann::json KbJson(const std::string& name, const client::KbView& e);
// One answer of `tunefleet lookup --json` for the op `requested`: its entry, a nearest
// shape's (flagged approximate, with requested_op_key: op_key is the neighbour's), or
// found=false.
nlohmann::json LookupJson(const std::string& name, const OpKey& requested, const std::optional<client::KbView>& e);

}  // namespace tunefleet::cli
