// `tunefleet watch SUBMISSION` (and `submit --watch`): a submission's progress as it
// happens -- each task's start, every better config measured, each task's end -- read
// from the coordinator's progress stream (client.capnp WatchRequest, long polling).
// Lines on stdout (JSON Lines with --json), a progress line on a terminal's stderr.
// Exits as `status --wait` does: 0 when every task found a config, 4 when one failed or
// was cancelled, 130 on SIGINT/SIGTERM (the submission keeps running).
#pragma once

#include <cstdint>

#include "cli/client.h"

namespace tunefleet::cli {

int RunWatch(client::Client& c, uint64_t submission, bool json);

}  // namespace tunefleet::cli
