// KbEntry: one knowledge-base record as a plain value (DESIGN.md "Knowledge base
// record"), and its JSON-lines form for `tunefleet cache export` / `import`. The
// coordinator stores it (coordinator/store.h), the wire carries it as schema::KbRecord
// (wire.h), the CLI prints it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

struct KbEntry {
  OpKey key;
  ConfigIndex best_index = 0;
  std::vector<std::pair<std::string, int64_t>> best_config;  // in the space's parameter order
  double best_latency_us = 0;
  double baseline_latency_us = 0;
  double improvement = 0;  // baseline / best
  std::string strategy;
  uint64_t evaluations = 0;
  uint64_t job_id = 0;
  int64_t timestamp_ms = 0;
  bool operator==(const KbEntry&) const = default;
};

// One exported line: {"op_key": OpKeyToJson, "op_key_hash": hex (informational),
// "best_config": {"name": value, ...}, "best_config_order": [names], "best_config_index",
// "best_latency_us", "baseline_latency_us", "improvement", "strategy", "evaluations",
// "job_id", "timestamp_ms"}.
nlohmann::json KbEntryToJson(const KbEntry& e);

// The inverse. kInvalidArgument naming the field for a malformed line. A key of another
// simulator model version is returned with that version in key.model_version (not
// refused here): whether to import it is the importer's decision, which can name it.
Result<KbEntry> KbEntryFromJson(const nlohmann::json& j);

}  // namespace tunefleet
