#include "tunefleet/common/kt_cache.h"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "space_util.h"

namespace tunefleet {
namespace {

using nlohmann::json;

// How Python's str() prints a value: Kernel Tuner builds cache keys with
// ",".join(str(v) for v in config).
std::string PythonStr(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  // gzread passes plain files through unchanged, so one reader serves .json and .json.gz.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return NotFound(fmt::format("cannot open Kernel Tuner cache '{}': {}", path,
                                errno ? std::strerror(errno) : "out of memory"));
  }
  std::string text;
  char chunk[1 << 16];
  while (true) {
    int n = gzread(f, chunk, sizeof chunk);
    if (n > 0) {
      text.append(chunk, static_cast<size_t>(n));
      continue;
    }
    int code = Z_OK;
    const char* message = gzerror(f, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      std::string what = message ? message : "unknown zlib error";
      gzclose(f);
      return InvalidArgument(fmt::format(
          "Kernel Tuner cache '{}' is not a readable gzip or JSON file ({}); re-download or "
          "re-compress it", path, what));
    }
    break;
  }
  gzclose(f);
  return text;
}

}  // namespace

Result<KtCache> KtCache::Load(const std::string& path) {
  TF_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return Parse(text, path);
}

Result<KtCache> KtCache::Parse(std::string_view json_text, std::string_view source) {
  auto bad = [&](const std::string& what) {
    return InvalidArgument(fmt::format("Kernel Tuner cache '{}': {}", source, what));
  };
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    return bad(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!doc.is_object()) return bad("the top level is not a JSON object");
  if (doc.contains("objective") && doc["objective"] != "time") {
    return bad(fmt::format("objective {} is not supported (only \"time\", minimised)",
                           doc["objective"].dump()));
  }
  const std::string objective = "time";

  auto keys_it = doc.find("tune_params_keys");
  if (keys_it == doc.end() || !keys_it->is_array() || keys_it->empty()) {
    return bad("'tune_params_keys' is missing or not a non-empty list of parameter names");
  }
  auto params_it = doc.find("tune_params");
  if (params_it == doc.end() || !params_it->is_object()) {
    return bad("'tune_params' is missing or not an object of name -> list of values");
  }
  auto cache_it = doc.find("cache");
  if (cache_it == doc.end() || !cache_it->is_object()) {
    return bad("'cache' is missing or not an object of \"v1,...,vn\" -> measurement");
  }

  std::vector<std::string> names;
  std::vector<const json*> lists;
  std::vector<Parameter> params;
  std::vector<std::vector<std::string>> labels;
  std::vector<std::vector<std::string>> key_tokens;  // Python str() of each value
  std::vector<bool> by_position;
  for (const json& k : *keys_it) {
    if (!k.is_string()) return bad(fmt::format("tune_params_keys holds {}, not a name", k.dump()));
    const std::string name = k.get<std::string>();
    auto list = params_it->find(name);
    if (list == params_it->end() || !list->is_array() || list->empty()) {
      return bad(fmt::format("tune_params has no non-empty value list for '{}'", name));
    }
    bool all_int = true;
    for (const json& v : *list) all_int = all_int && v.is_number_integer();
    Parameter p{name, {}};
    std::vector<std::string> label, tokens;
    for (size_t j = 0; j < list->size(); ++j) {
      const json& v = (*list)[j];
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
        return bad(fmt::format("tune_params '{}' value {} does not fit in int64", name, v.dump()));
      }
      p.values.push_back(all_int ? v.get<int64_t>() : static_cast<int64_t>(j));
      label.push_back(v.dump());
      tokens.push_back(PythonStr(v));
    }
    names.push_back(name);
    lists.push_back(&*list);
    params.push_back(std::move(p));
    labels.push_back(std::move(label));
    key_tokens.push_back(std::move(tokens));
    by_position.push_back(!all_int);
  }
  Result<SearchSpace> space = SearchSpace::Create(params, {});
  if (!space.ok()) return bad("tune_params: " + space.status().message());

  KtCache cache(std::move(space).value());
  // Descriptive only: a non-string name is ignored rather than rejected.
  if (doc.contains("kernel_name") && doc["kernel_name"].is_string()) {
    cache.kernel_name_ = doc["kernel_name"].get<std::string>();
  }
  if (doc.contains("device_name") && doc["device_name"].is_string()) {
    cache.device_name_ = doc["device_name"].get<std::string>();
  }
  cache.value_labels_ = std::move(labels);
  cache.by_position_ = std::move(by_position);

  const size_t dims = names.size();
  std::vector<size_t> pos(dims);
  bool have_best = false;
  for (const auto& [key, entry] : cache_it->items()) {
    if (!entry.is_object()) return bad(fmt::format("cache entry '{}' is not an object", key));
    // Prefer the parameter values stored in the entry; fall back to the key's tokens.
    bool has_fields = true;
    for (const auto& n : names) has_fields = has_fields && entry.contains(n);
    std::vector<std::string> tokens;
    if (!has_fields) {
      tokens = space_util::SplitCommas(key);
      if (tokens.size() != dims) {
        return bad(fmt::format("cache key '{}' has {} values, tune_params_keys has {}", key,
                               tokens.size(), dims));
      }
    }
    for (size_t d = 0; d < dims; ++d) {
      const json& list = *lists[d];
      size_t j = 0;
      for (; j < list.size(); ++j) {
        if (has_fields ? entry[names[d]] == list[j] : tokens[d] == key_tokens[d][j]) break;
      }
      if (j == list.size()) {
        return bad(fmt::format("cache entry '{}' has {}={}, which is not in tune_params", key, names[d],
                               has_fields ? entry[names[d]].dump() : tokens[d]));
      }
      pos[d] = j;
    }
    ConfigIndex index = 0;
    for (size_t d = 0; d < dims; ++d) index = index * lists[d]->size() + pos[d];

    auto t = entry.find(objective);
    if (t == entry.end()) return bad(fmt::format("cache entry '{}' has no '{}'", key, objective));
    Measurement m;
    if (t->is_string()) {
      m.outcome = Outcome::kFailed;
      m.failure = t->get<std::string>();
      ++cache.failed_count_;
    } else if (t->is_number()) {
      m.outcome = Outcome::kMeasured;
      m.time_ms = t->get<double>();
      if (!std::isfinite(m.time_ms) || m.time_ms <= 0) {
        return bad(fmt::format("cache entry '{}' has time {}, not a positive number of ms", key, t->dump()));
      }
      ++cache.measured_count_;
      if (!have_best || m.time_ms < cache.best_time_ms_ ||
          (m.time_ms == cache.best_time_ms_ && index < cache.best_index_)) {
        have_best = true;
        cache.best_index_ = index;
        cache.best_time_ms_ = m.time_ms;
      }
    } else {
      return bad(fmt::format("cache entry '{}' has time {}, neither a number nor a failure string", key,
                             t->dump()));
    }
    if (!cache.entries_.emplace(index, std::move(m)).second) {
      return bad(fmt::format("cache entry '{}' repeats a config listed under another key", key));
    }
  }
  TF_RETURN_IF_ERROR(cache.ApplyThreadLimit(std::move(params)));
  return cache;
}

Status KtCache::ApplyThreadLimit(std::vector<Parameter> params) {
  std::vector<int> dims;
  for (const char* name : {"block_size_x", "block_size_y", "block_size_z"}) {
    const int d = space_.IndexOf(name);
    if (d >= 0 && !by_position_[static_cast<size_t>(d)]) dims.push_back(d);
  }
  if (dims.empty()) return Status::Ok();
  auto threads = [dims](const Config& c) {  // in double: a huge value list must not overflow
    double n = 1;
    for (int d : dims) n *= static_cast<double>(c[static_cast<size_t>(d)]);
    return n;
  };
  constexpr auto kLimit = static_cast<double>(kMaxThreadsPerBlock);
  Config config;
  for (const auto& [index, m] : entries_) {
    space_.DecodeInto(index, config);
    if (threads(config) > kLimit) return Status::Ok();  // the device runs more
  }
  auto check = [threads](const SearchSpace&, const Config& c, std::string* why) {
    const double n = threads(c);
    if (n <= kLimit) return true;
    if (why) *why = fmt::format("{:.0f} exceed the device's {}", n, kMaxThreadsPerBlock);
    return false;
  };
  TF_ASSIGN_OR_RETURN(space_, SearchSpace::Create(std::move(params), {{"threads per block", check}}));
  thread_limit_ = kMaxThreadsPerBlock;
  return Status::Ok();
}

KtCache::Measurement KtCache::Lookup(ConfigIndex index) const {
  auto it = entries_.find(index);
  return it == entries_.end() ? Measurement{} : it->second;
}

Result<TuningProblem> MakeReplayProblem(const OpKey& key, const KtCache& cache) {
  if (key.soc != kReplaySoc) {
    return InvalidArgument("op '" + key.op_type + "' is tuned over a Kernel Tuner cache only with soc '" +
                           std::string(kReplaySoc) + "', not '" + key.soc + "'");
  }
  if (!cache.kernel_name().empty() && key.op_type != cache.kernel_name()) {
    return InvalidArgument("op type '" + key.op_type + "' is not the replay cache's kernel '" +
                           cache.kernel_name() + "'");
  }
  if (auto d = key.attrs.find("device"); d != key.attrs.end() && d->second != cache.device_name()) {
    return InvalidArgument("attr 'device' is '" + d->second + "' but the replay cache of '" + key.op_type +
                           "' was measured on '" + cache.device_name() + "'");
  }
  return TuningProblem{key, cache.space(), cache.space().Decode(0), 0};
}

}  // namespace tunefleet
