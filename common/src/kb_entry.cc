#include "tunefleet/common/kb_entry.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "tunefleet/common/json_fields.h"

namespace tunefleet {

nlohmann::json KbEntryToJson(const KbEntry& e) {
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [name, value] : e.best_config) {
    config[name] = value;
    order.push_back(name);
  }
  return {{"op_key", OpKeyToJson(e.key)},
          {"op_key_hash", HashOpKey(e.key).Hex()},
          {"best_config", std::move(config)},
          {"best_config_order", std::move(order)},
          {"best_config_index", e.best_index},
          {"best_latency_us", e.best_latency_us},
          {"baseline_latency_us", e.baseline_latency_us},
          {"improvement", e.improvement},
          {"strategy", e.strategy},
          {"evaluations", e.evaluations},
          {"job_id", e.job_id},
          {"timestamp_ms", e.timestamp_ms}};
}

namespace {

// A JSON integer that int64 holds (nlohmann reads 2^64-1 as unsigned; get<int64_t> wraps it).
bool FitsInt64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return v.is_number_integer();
}

// The member `name` of j as T, or kInvalidArgument naming it and what it should be.
template <typename T>
Result<T> Field(const nlohmann::json& j, const char* name, const char* what) {
  if (!j.contains(name)) return InvalidArgument(std::string("missing '") + name + "' (" + what + ")");
  const nlohmann::json& v = j[name];
  bool fits = false;
  if constexpr (std::is_same_v<T, std::string>) {
    fits = v.is_string();
  } else if constexpr (std::is_floating_point_v<T>) {
    fits = v.is_number();
  } else if constexpr (std::is_unsigned_v<T>) {
    fits = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  } else {
    fits = FitsInt64(v);
  }
  if (!fits) return InvalidArgument(std::string("'") + name + "' is " + v.dump() + ", not " + what);
  return v.get<T>();
}

}  // namespace

Result<KbEntry> KbEntryFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("a knowledge-base entry must be a JSON object");
  TF_RETURN_IF_ERROR(CheckKnownFields(j,
                                      {"op_key", "op_key_hash", "best_config", "best_config_order",
                                       "best_config_index", "best_latency_us", "baseline_latency_us", "improvement",
                                       "strategy", "evaluations", "job_id", "timestamp_ms"},
                                      "entry"));
  if (!j.contains("op_key")) return InvalidArgument("missing 'op_key' (the op, as `cache export` writes it)");
  nlohmann::json key_json = j["op_key"];
  uint32_t model_version = kSimModelVersion;
  if (key_json.is_object() && key_json.contains("model_version")) {
    const nlohmann::json& mv = key_json["model_version"];
    if (!mv.is_number_unsigned() || mv.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgument("op_key 'model_version' is " + mv.dump() + ", not a version number");
    }
    model_version = mv.get<uint32_t>();
    key_json.erase("model_version");
  }
  KbEntry e;
  auto key = OpKeyFromJson(key_json);
  if (!key.ok()) return key.status().WithContext("op_key");
  e.key = std::move(key).value();
  e.key.model_version = model_version;

  if (!j.contains("best_config") || !j["best_config"].is_object()) {
    return InvalidArgument("'best_config' must be an object of parameter name to value");
  }
  const nlohmann::json& config = j["best_config"];
  // JSON objects have no order; the space's order comes with the entry.
  std::vector<std::string> order;
  if (j.contains("best_config_order")) {
    const nlohmann::json& o = j["best_config_order"];
    if (!o.is_array()) return InvalidArgument("'best_config_order' must be a list of the best_config's names");
    for (const auto& n : o) {
      if (!n.is_string() || !config.contains(n.get<std::string>())) {
        return InvalidArgument("'best_config_order' names " + n.dump() + ", which best_config does not have");
      }
      if (std::find(order.begin(), order.end(), n.get<std::string>()) != order.end()) {
        return InvalidArgument("'best_config_order' names " + n.dump() + " twice");
      }
      order.push_back(n.get<std::string>());
    }
    if (order.size() != config.size()) return InvalidArgument("'best_config_order' must name every best_config parameter once");
  } else {
    for (const auto& [name, value] : config.items()) order.push_back(name);
  }
  for (const std::string& name : order) {
    const nlohmann::json& v = config[name];
    if (!FitsInt64(v)) return InvalidArgument("best_config '" + name + "' is " + v.dump() + ", not a 64-bit integer");
    e.best_config.emplace_back(name, v.get<int64_t>());
  }
  TF_ASSIGN_OR_RETURN(e.best_index, Field<uint64_t>(j, "best_config_index", "the config's index in the op's space"));
  TF_ASSIGN_OR_RETURN(e.best_latency_us, Field<double>(j, "best_latency_us", "a latency in microseconds"));
  TF_ASSIGN_OR_RETURN(e.baseline_latency_us, Field<double>(j, "baseline_latency_us", "a latency in microseconds"));
  if (j.contains("improvement")) {
    TF_ASSIGN_OR_RETURN(e.improvement, Field<double>(j, "improvement", "baseline / best"));
  }
  if (j.contains("strategy")) {
    TF_ASSIGN_OR_RETURN(e.strategy, Field<std::string>(j, "strategy", "a strategy name"));
  }
  if (j.contains("evaluations")) {
    TF_ASSIGN_OR_RETURN(e.evaluations, Field<uint64_t>(j, "evaluations", "a count"));
  }
  if (j.contains("job_id")) {
    TF_ASSIGN_OR_RETURN(e.job_id, Field<uint64_t>(j, "job_id", "a job id"));
  }
  if (j.contains("timestamp_ms")) {
    TF_ASSIGN_OR_RETURN(e.timestamp_ms, Field<int64_t>(j, "timestamp_ms", "Unix milliseconds"));
    if (e.timestamp_ms < 0) return InvalidArgument("'timestamp_ms' is negative; give Unix milliseconds (0: unknown)");
  }
  // A NUL would be cut off in the stored record (Cap'n Proto text).
  bool nul = e.strategy.find('\0') != std::string::npos;
  for (const auto& [name, value] : e.best_config) nul = nul || name.find('\0') != std::string::npos;
  if (nul) return InvalidArgument("'strategy' or a best_config name has a NUL character");
  return e;
}

}  // namespace tunefleet
