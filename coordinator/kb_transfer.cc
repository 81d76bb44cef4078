#include "coordinator/kb_transfer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace tunefleet::coordinator {

namespace {

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

// The entry's named config as a config of problem's space, or why it is not one.
Status CheckConfig(KbEntry& e, const TuningProblem& problem) {
  const SearchSpace& space = problem.space;
  std::set<std::string> names;
  for (const auto& [name, value] : e.best_config) {
    if (!names.insert(name).second) return InvalidArgument("best_config names '" + name + "' twice");
    if (space.IndexOf(name) < 0) {
      return InvalidArgument("best_config has a parameter '" + name + "' that " + e.key.op_type + " does not tune");
    }
  }
  auto named = space.FromNamed(e.best_config);
  if (!named.ok()) return named.status().WithContext("best_config");
  const Config& config = *named;
  auto index = space.Encode(config);
  if (!index.ok()) return index.status().WithContext("best_config");
  if (*index != e.best_index) {
    return InvalidArgument(fmt::format("best_config_index {} names another config than best_config (whose index is {})",
                                       e.best_index, *index));
  }
  if (Status valid = space.Validate(config); !valid.ok()) return valid.WithContext("best_config");
  e.best_config.clear();  // in parameter order
  for (size_t p = 0; p < config.size(); ++p) e.best_config.emplace_back(space.params()[p].name, config[p]);
  return Status::Ok();
}

}  // namespace

Result<ImportCheck> SimulatedImportCheck(const OpKey& key, const SocSpec& soc) {
  TF_ASSIGN_OR_RETURN(TuningProblem problem, MakeTuningProblem(key, soc));
  const double floor = std::max(soc.kernel_launch_us, CubeLatencyFloorUs(key, soc));
  return ImportCheck{std::move(problem), floor, {}};
}

Result<ImportCheck> ReplayImportCheck(const OpKey& key, const KtCache& cache) {
  TF_ASSIGN_OR_RETURN(TuningProblem problem, MakeReplayProblem(key, cache));
  ImportCheck check{std::move(problem), 0, {}};
  check.measured_us = [&cache](ConfigIndex index) -> std::optional<double> {
    const KtCache::Measurement m = cache.Lookup(index);
    if (m.outcome != KtCache::Outcome::kMeasured) return std::nullopt;
    return m.time_ms * 1000.0;  // as the replay evaluator reports it
  };
  return check;
}

Status PrepareImportedEntry(KbEntry& e, const ProblemLookup& problem_for) {
  if (e.key.model_version != kSimModelVersion) {
    return InvalidArgument(fmt::format(
        "tuned under simulator model version {}, and this build's is {}: its latencies no longer hold (re-tune the op)",
        e.key.model_version, kSimModelVersion));
  }
  if (!PositiveFinite(e.best_latency_us)) {
    return InvalidArgument(fmt::format("best_latency_us must be a positive number of microseconds, not {}", e.best_latency_us));
  }
  if (!std::isfinite(e.baseline_latency_us) || e.baseline_latency_us < 0) {
    return InvalidArgument(
        fmt::format("baseline_latency_us must be a latency in microseconds (0 when unknown), not {}", e.baseline_latency_us));
  }
  TF_ASSIGN_OR_RETURN(e.key, CanonicalOpKey(e.key));
  TF_ASSIGN_OR_RETURN(std::optional<ImportCheck> check, problem_for(e.key));
  if (check) {
    TF_RETURN_IF_ERROR(CheckConfig(e, check->problem));
    if (check->measured_us) {
      const std::optional<double> measured = check->measured_us(e.best_index);
      if (!measured) {
        return InvalidArgument("best_config has no successful measurement in the kernel's cache (absent or failed)");
      }
      if (std::abs(e.best_latency_us - *measured) > 1e-9 * *measured) {
        return InvalidArgument(fmt::format("best_latency_us {} is not the time the kernel's cache measured for "
                                           "best_config ({} us)",
                                           e.best_latency_us, *measured));
      }
    }
    if (e.best_latency_us < check->latency_floor_us) {
      return InvalidArgument(fmt::format(
          "best_latency_us {} is below what any config of {} can reach ({:.3f} us: kernel launch and roofline)",
          e.best_latency_us, e.key.Display(), check->latency_floor_us));
    }
  }
  e.improvement = e.baseline_latency_us > 0 ? e.baseline_latency_us / e.best_latency_us : 0;
  return Status::Ok();
}

Result<ImportOutcome> ImportKb(Store& store, std::vector<KbEntry> entries, const ProblemLookup& problem_for,
                               bool dry_run, bool skip_refused) {
  ImportOutcome out;
  std::vector<KbEntry> good;
  good.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    Status s = PrepareImportedEntry(entries[i], problem_for);
    if (!s.ok()) {
      out.refused.push_back({i, s.message()});
      continue;
    }
    good.push_back(std::move(entries[i]));
  }
  if (!out.refused.empty() && !skip_refused) return out;
  TF_ASSIGN_OR_RETURN(std::vector<Store::Merge> merged, store.MergeKb(good, dry_run));
  for (size_t i = 0; i < merged.size(); ++i) {
    switch (merged[i]) {
      case Store::Merge::kAdded: ++out.added; break;
      case Store::Merge::kReplaced: ++out.replaced; break;
      case Store::Merge::kKept: ++out.kept; continue;
    }
    if (!dry_run) out.written.push_back(good[i]);
  }
  return out;
}

}  // namespace tunefleet::coordinator
