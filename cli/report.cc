#include "cli/report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::cli {

void ExitInterrupted() {
  static constexpr char kMessage[] = "tunefleet: interrupted\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  std::_Exit(kExitInterrupted);
}

int Fail(const Status& s) {
  fmt::print(stderr, "tunefleet: {}\n", Clipped(s.ToString()));
  return ExitCodeFor(s);
}

std::string DescribeConfig(const client::NamedConfig& config) {
  std::string s;
  for (const auto& [name, value] : config) s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return s;
}

std::string DefaultConfigText(const OpKey& key, const SocCatalog& catalog) {
  auto soc = catalog.Find(key.soc);
  if (!soc.ok()) return "";
  auto problem = MakeTuningProblem(key, **soc);
  if (!problem.ok()) return "";
  return problem->space.Describe(problem->default_config);
}

namespace {
std::string Improvement(double baseline, double best) {
  if (baseline <= 0 || best <= 0) return "n/a (baseline not measured)";
  return fmt::format("{:.2f}x ({:.1f}% lower latency)", baseline / best, 100.0 * (1 - best / baseline));
}
}  // namespace

namespace {
// "  failed because     12 x <reason>" per reason, the most frequent first.
// The task's failure reasons, the most met first; the rest ("(other reasons)") last.
std::vector<std::pair<std::string, uint64_t>> ByCount(const client::TaskView& t) {
  auto reasons = t.failure_reasons;
  auto rank = [](const auto& r) { return r.first == "(other reasons)" ? 0 : r.second; };
  std::stable_sort(reasons.begin(), reasons.end(), [&](const auto& a, const auto& b) { return rank(a) > rank(b); });
  return reasons;
}

std::string FailureLines(const client::TaskView& t) {
  const auto reasons = ByCount(t);
  std::string s;
  for (const auto& [reason, count] : reasons) {
    s += fmt::format("  {:19}{} x {}\n", s.empty() ? "failed because" : "", count, reason);
  }
  return s;
}
}  // namespace

std::string TaskText(const std::string& name, const client::TaskView& t, bool from_cache,
                     const SocCatalog& catalog) {
  std::string s = fmt::format("{}  {}  [{}{}]\n", name, t.key.Display(), t.state,
                              from_cache ? ", from the knowledge base" : "");
  if (!t.has_best && (t.state == "running" || t.state == "queued")) {
    if (t.evaluated == 0) {
      return s + fmt::format("  nothing measured yet (it waits for a worker that serves {})\n", t.key.soc);
    }
    return s + fmt::format("  no config succeeded yet ({} evaluated, {} failed)\n", t.evaluated, t.failed_configs) +
           FailureLines(t);
  }
  const bool cancelled = t.state == "cancelled";
  if (!t.has_best) {
    if (cancelled) {
      return s + fmt::format("  cancelled before a config succeeded ({} evaluated, {} failed)\n", t.evaluated,
                             t.failed_configs) + FailureLines(t);
    }
    return s + fmt::format("  no config succeeded ({} evaluated, {} failed)\n", t.evaluated, t.failed_configs) +
           FailureLines(t);
  }
  // A cancelled search's best is what it had found, not the op's: it is not in the
  // knowledge base.
  if (cancelled) s += "  cancelled: the best so far, not in the knowledge base\n";
  s += fmt::format("  best config        {}\n", DescribeConfig(t.best_config));
  s += fmt::format("  best latency       {:.3f} us\n", t.best_latency_us);
  std::string def = DefaultConfigText(t.key, catalog);
  s += fmt::format("  default latency    {:.3f} us{}\n", t.baseline_latency_us,
                   def.empty() ? "" : "  (" + def + ")");
  s += fmt::format("  improvement        {}\n", Improvement(t.baseline_latency_us, t.best_latency_us));
  if (!from_cache) s += fmt::format("  evaluations        {} ({} failed)\n", t.evaluated, t.failed_configs);
  return s + FailureLines(t);
}

nlohmann::json TaskJson(const std::string& name, const client::TaskView& t, bool from_cache) {
  nlohmann::json j;
  j["name"] = name;
  j["task_id"] = t.task_id;
  j["op_key"] = OpKeyToJson(t.key);
  j["op_key_hash"] = t.op_key_hash;
  j["state"] = t.state;
  j["from_cache"] = from_cache;
  j["evaluated"] = t.evaluated;
  j["failed_configs"] = t.failed_configs;
  j["failure_reasons"] = nlohmann::json::array();
  for (const auto& [reason, count] : ByCount(t)) j["failure_reasons"].push_back({{"reason", reason}, {"count", count}});
  if (t.has_best) {
    j["best_config_index"] = t.best_index;
    j["best_config"] = nlohmann::json::object();
    for (const auto& [k, v] : t.best_config) j["best_config"][k] = v;
    j["best_latency_us"] = t.best_latency_us;
    j["baseline_latency_us"] = t.baseline_latency_us;
    j["improvement"] = t.best_latency_us > 0 ? t.baseline_latency_us / t.best_latency_us : 0;
  }
  return j;
}

std::string KbText(const std::string& name, const client::KbView& e) {
  std::string s = e.approximate
      ? fmt::format("{}  APPROXIMATE: nearest tuned shape {} (distance {:.3f}); not this exact op\n", name, e.key.Display(), e.distance)
      : fmt::format("{}  {}  [found]\n", name, e.key.Display());
  s += fmt::format("  best config        {}\n", DescribeConfig(e.best_config));
  s += fmt::format("  best latency       {:.3f} us\n", e.best_latency_us);
  s += fmt::format("  default latency    {:.3f} us\n", e.baseline_latency_us);
  s += fmt::format("  improvement        {}\n", Improvement(e.baseline_latency_us, e.best_latency_us));
  s += fmt::format("  tuned with         {} ({} evaluations, job {})\n", e.strategy, e.evaluations, e.job_id);
  return s;
}

// The entry as `cache export` writes it (one parser reads both; lookup wrote
// timestamp_unix_ms where export writes timestamp_ms), with what the lookup adds.
nlohmann::json KbJson(const std::string& name, const client::KbView& e) {
  nlohmann::json j = KbEntryToJson(e);
  j["name"] = name;
  j["found"] = true;
  j["approximate"] = e.approximate;
  j["distance"] = e.distance;
  return j;
}

nlohmann::json LookupJson(const std::string& name, const OpKey& requested, const std::optional<client::KbView>& e) {
  if (!e) return nlohmann::json{{"name", name}, {"found", false}, {"op_key", OpKeyToJson(requested)}};
  nlohmann::json j = KbJson(name, *e);
  if (e->approximate) j["requested_op_key"] = OpKeyToJson(requested);
  return j;
}

}  // namespace tunefleet::cli
