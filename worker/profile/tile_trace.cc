// Event-simulation timelines of chosen graph ops, shaped for ChromeTraceJson.
#include "worker/profile/tile_trace.h"

#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/simulator.h"

namespace tunefleet::profile {

Result<std::vector<OpTileTimeline>> TileTimelines(const Graph& graph, const SocSpec& soc,
                                                  const std::vector<std::string>& op_names,
                                                  const RunOptions& options) {
  std::vector<OpTileTimeline> out;
  for (const auto& name : op_names) {
    const GraphNode* node = nullptr;
    std::string known;
    for (const auto& n : graph.nodes) {
      if (n.IsView()) continue;
      if (n.name == name) node = &n;
      known += (known.empty() ? "" : ", ") + n.name;
    }
    if (node == nullptr) {
      return InvalidArgument("--trace-ops: '" + name + "' is not a kernel of the graph; kernels: " + known);
    }
    OpKey key = NodeOpKey(graph, *node);
    TF_ASSIGN_OR_RETURN(TuningProblem problem, MakeTuningProblem(key, soc));
    Config config = problem.default_config;
    if (auto c = options.configs.find(key.Canonical()); c != options.configs.end()) config = c->second;
    TF_ASSIGN_OR_RETURN(sim::PreparedProblem prepared, sim::Prepare(problem, soc));
    auto events = sim::SimulateEvents(prepared, config, soc);
    if (!events.ok()) return events.status().WithContext("node '" + name + "'");
    OpTileTimeline timeline{name, {}};
    int cores = 0;
    for (const auto& group : events->timeline.cores) {
      bool shown = false;  // every group gets a row (a fused op's vector cores follow its cube cores)
      for (int64_t core : group.core_ids) {
        if (cores >= kMaxTraceCoresPerOp && shown) break;
        shown = true;
        ++cores;
        for (int p = 0; p < sim::kPipeCount; ++p) {
          for (const auto& iv : group.pipes[p]) {
            timeline.intervals.push_back({static_cast<int>(core), static_cast<sim::Pipe>(p), iv.start_us,
                                          iv.end_us - iv.start_us,
                                          std::string(iv.label) + " #" + std::to_string(iv.tile)});
          }
        }
      }
    }
    out.push_back(std::move(timeline));
  }
  return out;
}

}  // namespace tunefleet::profile
