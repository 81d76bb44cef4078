#include "worker/sim/event_sim.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "worker/sim/attention_model.h"
#include "worker/sim/conv2d_model.h"
#include "worker/sim/cube_model_impl.h"
#include "worker/sim/cube_recurrence.h"
#include "worker/sim/fused_model.h"
#include "worker/sim/vector_model_impl.h"
#include "worker/sim/vector_recurrence.h"

namespace tunefleet::sim {
namespace {

// Collects one core group's intervals (in cycles until Finish converts them) and busy sums.
struct Recorder {
  static constexpr bool kRecords = true;  // the cube walk (cube_recurrence.h) never jumps
  CoreTimeline* timeline = nullptr;       // null: busy sums only
  std::array<double, kPipeCount> busy{};

  void Add(Pipe pipe, double start, double end, int64_t tile, std::string_view label) {
    if (end <= start) return;
    busy[static_cast<size_t>(pipe)] += end - start;
    if (timeline) timeline->pipes[static_cast<size_t>(pipe)].push_back({start, end, tile, label});
  }
};

// ---- Cube (MatMul, BatchMatMul, Gemm, Conv2D) ----

// A core's work: runs of blocks of one kind, slowest kinds first.
struct Run {
  int kind = 0;
  int64_t blocks = 0;
  bool operator==(const Run&) const = default;
};

// Blocks are dealt to cores as the fast path's critical core assumes: the launch's
// blocks sorted slowest kind first, `waves` consecutive ones to the first cores and
// waves - 1 to the rest, so core 0 runs exactly the blocks the fast path charges.
std::vector<std::pair<std::vector<Run>, std::vector<int64_t>>> DealCubeBlocks(const CubePlan& p) {
  std::vector<std::pair<std::vector<Run>, std::vector<int64_t>>> groups;
  int64_t total = 0;
  for (const CubeBlockPlan& k : p.kinds) total += k.count;
  const int64_t full = total - p.cores * (p.waves - 1);  // cores that run `waves` blocks
  int kind = 0;
  int64_t left_in_kind = p.kinds[0].count;
  for (int64_t core = 0; core < p.cores; ++core) {
    int64_t need = core < full ? p.waves : p.waves - 1;
    std::vector<Run> runs;
    while (need > 0 && kind < 4) {
      if (left_in_kind == 0) {
        if (++kind < 4) left_in_kind = p.kinds[kind].count;
        continue;
      }
      const int64_t take = std::min(need, left_in_kind);
      runs.push_back({kind, take});
      need -= take;
      left_in_kind -= take;
    }
    if (!groups.empty() && groups.back().first == runs) {
      groups.back().second.push_back(core);
    } else {
      groups.push_back({std::move(runs), {core}});
    }
  }
  return groups;
}

double SimulateCubeCore(const CubePlan& p, const std::vector<Run>& runs, Recorder& rec) {
  double t = 0;
  int64_t tile_base = 0;
  for (const Run& run : runs) {
    const CubeBlockPlan& b = p.kinds[run.kind];
    for (int64_t i = 0; i < run.blocks; ++i) {
      // A block starts once the previous one drained (each block pays its fill); its
      // tiles are the fast path's walk, every interval recorded.
      t = WalkCubeBlock(p.pipe, b.tiles, b.mte2_cycles, b.first_chunk_cycles, b.fix_tile_cycles, t,
                        tile_base, rec);
      tile_base += b.tiles;
    }
  }
  return t;
}

// ---- Vector ops ----

// ---- Common ----

// Times every core group, converts the recorded cycles to us and fills the estimate
// from the critical group.
template <typename SimulateGroup>
EventSimResult Finish(const KernelEstimate& fast, double hbm_floor_us, const SocSpec& soc,
                      const EventSimOptions& options,
                      std::vector<std::vector<int64_t>> group_cores, SimulateGroup simulate) {
  EventSimResult result;
  result.estimate = fast;
  const double us_per_cycle = 1.0 / soc.CyclesPerUs();
  double crit_end = -1;
  std::array<double, kPipeCount> crit_busy{};
  for (size_t g = 0; g < group_cores.size(); ++g) {
    Recorder rec;
    CoreTimeline* tl = nullptr;
    if (options.record_timeline) {
      result.timeline.cores.emplace_back();
      tl = &result.timeline.cores.back();
      tl->core_ids = std::move(group_cores[g]);
      rec.timeline = tl;
    }
    const double end = simulate(g, rec);
    if (tl) tl->ScaleTimes(us_per_cycle);
    if (end > crit_end) {
      crit_end = end;
      crit_busy = rec.busy;
      result.timeline.critical = static_cast<int64_t>(g);
    }
  }
  KernelEstimate& est = result.estimate;
  for (size_t i = 0; i < crit_busy.size(); ++i) est.busy_us[i] = crit_busy[i] * us_per_cycle;
  est.duration_us = std::max(std::max(crit_end, 0.0) * us_per_cycle, hbm_floor_us);
  est.latency_us = est.launch_us + est.duration_us;
  result.timeline.launch_us = est.launch_us;
  result.timeline.duration_us = est.duration_us;
  return result;
}

EventSimResult SimulateCube(const CubePlan& plan, const SocSpec& soc, const EventSimOptions& options) {
  auto groups = DealCubeBlocks(plan);
  std::vector<std::vector<int64_t>> ids;
  ids.reserve(groups.size());
  for (auto& g : groups) ids.push_back(std::move(g.second));
  return Finish(plan.estimate, plan.hbm_floor_us, soc, options, std::move(ids),
                [&](size_t g, Recorder& rec) { return SimulateCubeCore(plan, groups[g].first, rec); });
}

}  // namespace

Result<EventSimResult> SimulateEvents(const PreparedProblem& prepared, const Config& config,
                                      const SocSpec& soc, const EventSimOptions& options) {
  TF_RETURN_IF_ERROR(prepared.problem->space.Validate(config));
  switch (prepared.op) {
    case PreparedProblem::Op::kMatmul: {
      const MatmulTiling t = MatmulTilingFromConfig(config);
      TF_RETURN_IF_ERROR(CheckCubeTiling(prepared.matmul, t));
      CubePlan plan;
      EstimateCube(prepared.matmul, t, nullptr, soc, &plan);
      return SimulateCube(plan, soc, options);
    }
    case PreparedProblem::Op::kConv2d: {
      const MatmulTiling t = MatmulTilingFromConfig(config);
      const MatmulShape gemm = Conv2dGemm(prepared.conv2d);
      TF_RETURN_IF_ERROR(CheckCubeTiling(gemm, t));
      const CubeASide a = Conv2dASide(prepared.conv2d, t, soc);
      CubePlan plan;
      EstimateCube(gemm, t, &a, soc, &plan);
      return SimulateCube(plan, soc, options);
    }
    case PreparedProblem::Op::kVector: {
      VectorPlan plan;
      TF_RETURN_IF_ERROR(EstimateVectorPlanned(
          prepared.vector, VectorTilingFromConfig(prepared.vector, config), soc, &plan).status());
      // The first `full` cores run per_core work items, the others one fewer.
      const int64_t full = plan.tiles - plan.cores * (plan.per_core - 1);
      std::vector<std::vector<int64_t>> ids(full < plan.cores ? 2 : 1);
      for (int64_t c = 0; c < plan.cores; ++c) ids[c < full ? 0 : 1].push_back(c);
      return Finish(plan.estimate, plan.hbm_floor_us, soc, options, std::move(ids),
                    [&](size_t g, Recorder& rec) {
                      return WalkVectorCore(plan, plan.per_core - static_cast<int64_t>(g), rec);
                    });
    }
    case PreparedProblem::Op::kFusedCube:  // fused_model.cc: the cube's timeline plus the epilogue
      return SimulateFusedCubeEvents(prepared.problem->key, prepared.fused, config, soc, options);
    case PreparedProblem::Op::kAttention:  // attention_model.cc: the units' steps
      return SimulateAttentionEvents(prepared.attention, prepared.problem->space, config, soc, options);
  }
  return Internal("unhandled op in SimulateEvents");
}

}  // namespace tunefleet::sim
