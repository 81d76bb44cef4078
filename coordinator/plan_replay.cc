#include "coordinator/plan_replay.h"

#include <fmt/format.h>

#include <limits>

#include "coordinator/index_set.h"

namespace tunefleet::coordinator {

Status ReplayPlans(Strategy& strategy, ConfigIndex space_size, const std::vector<StoredResult>& results,
                   const StrategyCheckpointRecord* checkpoint, const std::vector<PlanRecord>& plans) {
  IndexSet planned(space_size);
  const uint64_t told = checkpoint ? checkpoint->told : 0;
  size_t next = 0;  // the next result to tell
  for (; next < results.size() && results[next].seq < told; ++next) planned.insert(results[next].index);
  if (checkpoint) {
    for (ConfigIndex i : checkpoint->outstanding) planned.insert(i);
  }
  auto tell_before = [&](uint64_t seq) {
    for (; next < results.size() && results[next].seq < seq; ++next) {
      const StoredResult& r = results[next];
      planned.insert(r.index);
      strategy.Tell(r.index, r.ok ? std::optional<double>(r.latency_us) : std::nullopt);
    }
  };
  for (const PlanRecord& p : plans) {
    tell_before(p.told_before);
    if (p.asked) {
      Batch again = strategy.Ask(p.max_configs, [&planned](ConfigIndex i) { return planned.contains(i); });
      if (again.configs != p.configs) {
        return FailedPrecondition(fmt::format(
            "plan {} (after {} results): the strategy now asks {} configs{} where it asked {}",
            p.number, p.told_before, again.configs.size(),
            again.configs.size() == p.configs.size() ? " (others)" : "", p.configs.size()));
      }
    }
    for (ConfigIndex i : p.configs) planned.insert(i);
  }
  tell_before(std::numeric_limits<uint64_t>::max());
  return Status::Ok();
}

}  // namespace tunefleet::coordinator
