#include "worker/sim/fused_model.h"

#include <algorithm>
#include <cmath>

#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/conv2d_model.h"
#include "worker/sim/pipe_costs.h"
#include "worker/sim/vector_model.h"

namespace tunefleet::sim {
namespace {

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr double kAccBytes = 4;  // the accumulator tile FIXPIPE writes (fp32 / int32)

using pipe_costs::TransferEq;
using pipe_costs::VectorCycles;

// Instructions per element of the epilogue in fp32: int8's dequantisation (vconv of the
// int32 accumulator, vmuls by the scale), each op as the unfused element-wise op costs
// it (vector_model.cc), a vconv per operand that is not fp32 and one for the output.
int EpilogueInstructions(const FusedCubeShape& s) {
  // out_dtype is float16 or bfloat16; a second output (value_out) is one vconv more.
  return (s.dequant ? 2 : 0) + pipe_costs::ChainInstructions(s.epilogue) + 1 + (s.value_out_bytes ? 1 : 0);
}

// The cube plan and, for a conv, its A side.
KernelEstimate PlanCube(const FusedCubeShape& s, const MatmulTiling& t, const SocSpec& soc, CubePlan& plan) {
  if (s.conv) {
    const CubeASide a = Conv2dASide(s.conv2d, t, soc);
    return EstimateCube(s.gemm, t, &a, soc, &plan);
  }
  return EstimateCube(s.gemm, t, nullptr, soc, &plan);
}

EpiloguePlan PlanEpilogue(const FusedCubeShape& s, const MatmulTiling& t, int64_t split, int64_t cube_cores,
                          const SocSpec& soc) {
  const EpilogueBlocking blk = ComputeEpilogueBlocking(s, t, split, soc);
  EpiloguePlan p;
  p.split = split;
  p.vector_per_cube = blk.vector_per_cube;
  const double e = static_cast<double>(blk.sub_elements);
  // A sub-tile is sub_rows rows of baseN: one burst per row, as the cube's FIXPIPE
  // writes its [M, N] output (a conv's output and full operands are taken in that
  // layout too, as the cube model does).
  const double bursts = static_cast<double>(blk.sub_rows);
  // The accumulator sub-tile is contiguous in the workspace and served by L2.
  double l2_eq = TransferEq(e * kAccBytes, 1, soc);
  double hbm_read_eq = 0;
  int mte2_instrs = 1;
  for (const FusedOperand& o : s.epilogue.operands) {
    const double b = DTypeBytes(o.dtype);
    if (o.full) {
      hbm_read_eq += TransferEq(e * b, bursts, soc);
    } else {  // a bias row or a broadcast operand: its slice, re-read from L2
      l2_eq += TransferEq(std::min(e, static_cast<double>(o.elements)) * b, 1, soc);
    }
    ++mte2_instrs;
  }
  double write_eq = TransferEq(e * DTypeBytes(s.out_dtype), bursts, soc);
  if (s.value_out_bytes) write_eq += TransferEq(e * static_cast<double>(s.value_out_bytes), bursts, soc);
  // The vector cores of every busy cube core stream together and share HBM.
  const double cycles_per_us = soc.CyclesPerUs();
  const double hbm_bytes_per_cycle = soc.hbm_bandwidth_gbps * 1e3 * soc.hbm_stream_efficiency / cycles_per_us;
  const double tau = static_cast<double>(cube_cores * blk.vector_per_cube) / hbm_bytes_per_cycle;
  const double lat = soc.gm_latency_cycles;
  p.mte2_latency = mte2_instrs * lat;
  p.mte2 = p.mte2_latency + std::max((l2_eq + hbm_read_eq) / soc.mte2_bytes_per_cycle,
                                     hbm_read_eq * tau + l2_eq / soc.mte2_bytes_per_cycle);
  const int mte3_instrs = s.value_out_bytes ? 2 : 1;  // the output, and the value before its Quantize
  p.mte3 = mte3_instrs * lat + std::max(write_eq / soc.mte3_bytes_per_cycle, write_eq * tau);
  p.hbm_cycles = (hbm_read_eq + write_eq) * tau;
  p.instructions_per_element = EpilogueInstructions(s);
  const auto [vec_cycles, vec_instrs] =
      VectorCycles(blk.sub_elements, static_cast<int64_t>(kAccBytes), p.instructions_per_element, soc);
  p.vec = vec_cycles;
  p.scalar = soc.scalar_cycles_per_tile +
             soc.scalar_cycles_per_iteration * static_cast<double>(vec_instrs + mte2_instrs + mte3_instrs);
  return p;
}

// When the first tile of a block drains, from the block's start: its whole K loop (the
// compute chain's fill, or all its chunk loads then the last chunk's steps, or the
// scalar issue), then FIXPIPE. The fast path's per-block time ends with the last drain.
double FirstDrain(const CubePlan& plan, const CubeBlockPlan& b) {
  if (b.tiles <= 1) return b.fast_cycles;
  const CubePipe& p = plan.pipe;
  const double kt = static_cast<double>(p.kt);
  const double mte1_serial = (p.db_a ? 0 : p.mte1_a) + (p.db_b ? 0 : p.mte1_b);
  const double inner = std::max(p.mte1_a + p.mte1_b, p.cube + mte1_serial);
  const double one_step = p.mte1_a + p.mte1_b + p.cube;
  const int64_t chunks = b.tiles * p.cpt;
  const double first_load = chunks == 1 ? b.mte2_cycles : std::min(b.first_chunk_cycles, b.mte2_cycles);
  const double lead = std::max(first_load, p.tile_setup + p.iteration);
  const double compute = lead + one_step + (kt - 1) * inner;
  const double steps = static_cast<double>(b.tiles) * kt;
  const double first_steps = static_cast<double>(p.rem > 0 ? p.rem : p.skm);
  const double per_step = steps > first_steps ? (b.mte2_cycles - first_load) / (steps - first_steps) : 0;
  const double loads = first_load + per_step * (kt - first_steps) + one_step +
                       static_cast<double>(std::min<int64_t>(p.skm, p.kt) - 1) * inner;
  const double scalar = p.tile_setup + kt * p.iteration + one_step;
  return std::min(std::max({compute, loads, scalar}) + b.fix_tile_cycles, b.fast_cycles);
}

}  // namespace

Status CheckFusedCubeTiling(const FusedCubeShape& shape, const MatmulTiling& tiling, int64_t epi_split) {
  TF_RETURN_IF_ERROR(CheckCubeTiling(shape.gemm, tiling));
  if (epi_split <= 0) return InvalidArgument("epiSplit must be positive");
  return Status::Ok();
}

KernelEstimate EstimateFusedCube(const FusedCubeShape& s, const MatmulTiling& t, int64_t split, const SocSpec& soc,
                                 FusedCubePlan* out) {
  FusedCubePlan local;
  FusedCubePlan& plan = out ? *out : local;
  const KernelEstimate cube = PlanCube(s, t, soc, plan.cube);
  const CubePlan& cp = plan.cube;
  plan.epilogue = PlanEpilogue(s, t, split, cp.cores, soc);
  const EpiloguePlan& ep = plan.epilogue;

  // The critical core runs `waves` blocks, slowest kinds first (as the cube's fast path
  // and the event simulation deal them). Its vector cores' epilogue is a flow shop over
  // sub-tiles released by the tiles' drains: from sub-tile j on, the rest takes its
  // serial time once and then the slowest stage each (ping-pong), and the HBM share
  // must deliver every remaining sub-tile's bytes. Drains are linear within a block
  // (first drain, then one tile per (block - first drain) / (tiles - 1)) and blocks of a
  // kind repeat, so the latest finish is reached at a corner: the first or last tile of
  // the first or last block of each run.
  int64_t total_tiles = 0;
  for (int64_t k = 0, left = cp.waves; k < 4 && left > 0; ++k) {
    const int64_t take = std::min(left, cp.kinds[k].count);
    left -= take;
    total_tiles += take * cp.kinds[k].tiles;
  }
  const double n_sub = static_cast<double>(total_tiles * split);
  const double serial = ep.scalar + ep.mte2 + ep.vec + ep.mte3;
  const double steady = std::max({ep.scalar, ep.mte2, ep.vec, ep.mte3});
  auto finish_from = [&](double release, double first_sub) {
    const double rest = n_sub - first_sub;
    return std::max(release + serial + (rest - 1) * steady,
                    release + ep.scalar + ep.mte2_latency + rest * ep.hbm_cycles);
  };
  double epilogue_end = 0, cube_end = 0;
  int64_t tiles_before = 0;
  for (int64_t k = 0, left = cp.waves; k < 4 && left > 0; ++k) {
    const CubeBlockPlan& b = cp.kinds[k];
    const int64_t take = std::min(left, b.count);
    if (take <= 0) continue;
    left -= take;
    const double first = FirstDrain(cp, b);
    const double slope = b.tiles > 1 ? (b.fast_cycles - first) / static_cast<double>(b.tiles - 1) : 0;
    for (int64_t j : {int64_t{0}, take - 1}) {
      for (int64_t i : {int64_t{0}, b.tiles - 1}) {
        const double release = cube_end + static_cast<double>(j) * b.fast_cycles + first + static_cast<double>(i) * slope;
        const double sub = static_cast<double>((tiles_before + j * b.tiles + i) * split);
        epilogue_end = std::max(epilogue_end, finish_from(release, sub));
      }
    }
    cube_end += static_cast<double>(take) * b.fast_cycles;
    tiles_before += take * b.tiles;
  }

  // Bytes: the accumulator goes to the L2-resident workspace and back instead of HBM;
  // the operands are read and the output written once.
  const double acc = static_cast<double>(s.gemm.batch * s.gemm.m * s.gemm.n) * kAccBytes;
  // A broadcast operand comes from HBM once; every sub-tile of the launch re-reads its
  // slice from L2.
  const EpilogueBlocking blk = ComputeEpilogueBlocking(s, t, split, soc);
  const double subs = static_cast<double>(CeilDiv(s.gemm.m, t.base_m) * CeilDiv(s.gemm.n, t.base_n) * s.gemm.batch *
                                          split * blk.vector_per_cube);
  double operand_bytes = 0, operand_l2 = 0;
  for (const FusedOperand& o : s.epilogue.operands) {
    const double bytes = static_cast<double>(o.elements * DTypeBytes(o.dtype));
    operand_bytes += bytes;
    if (!o.full) {
      const double per_sub = std::min(static_cast<double>(blk.sub_elements), static_cast<double>(o.elements));
      operand_l2 += std::max(0.0, subs * per_sub * DTypeBytes(o.dtype) - bytes);
    }
  }
  const double out_bytes = static_cast<double>(s.out_elements * (DTypeBytes(s.out_dtype) + s.value_out_bytes));
  KernelEstimate est = cube;
  est.hbm_bytes = cube.hbm_bytes - acc + operand_bytes + out_bytes;
  est.l2_bytes = cube.l2_bytes + 2 * acc + operand_l2;
  est.compulsory_bytes = cube.compulsory_bytes - acc + operand_bytes + out_bytes;
  const double cycles_per_us = soc.CyclesPerUs();
  est.BusyUs(Pipe::kVector) = n_sub * ep.vec / cycles_per_us;
  est.BusyUs(Pipe::kMte3) = n_sub * ep.mte3 / cycles_per_us;
  plan.hbm_floor_us = est.hbm_bytes / (soc.hbm_bandwidth_gbps * 1e3);
  est.duration_us = std::max(std::max(cube_end, epilogue_end) / cycles_per_us, plan.hbm_floor_us);
  est.launch_us = soc.kernel_launch_us;
  est.latency_us = est.launch_us + est.duration_us;
  plan.estimate = est;
  return est;
}

Result<EventSimResult> SimulateFusedCubeEvents(const OpKey& key, const FusedCubeShape& s, const Config& config,
                                               const SocSpec& soc, const EventSimOptions& options) {
  const MatmulTiling t = FusedCubeTilingFromConfig(config);
  const int64_t split = FusedEpiSplitFromConfig(config);
  TF_RETURN_IF_ERROR(CheckFusedCubeTiling(s, t, split));
  // The cube part as its own problem, with its timeline (its FIXPIPE intervals are the
  // tiles' drains).
  TF_ASSIGN_OR_RETURN(OpKey inner_key, FusedCubeInnerKey(key));
  TF_ASSIGN_OR_RETURN(TuningProblem inner, MakeTuningProblem(inner_key, soc));
  TF_ASSIGN_OR_RETURN(PreparedProblem prepared, Prepare(inner, soc));
  const Config cube_config(config.begin(), config.begin() + kFusedEpiSplitParam);
  TF_ASSIGN_OR_RETURN(EventSimResult cube, SimulateEvents(prepared, cube_config, soc, {true}));

  FusedCubePlan plan;
  const KernelEstimate fast = EstimateFusedCube(s, t, split, soc, &plan);
  const EpiloguePlan& ep = plan.epilogue;
  const double cycles_per_us = soc.CyclesPerUs();
  const double us_per_cycle = 1.0 / cycles_per_us;

  EventSimResult result;
  result.estimate = fast;
  double crit_end = -1;
  size_t crit_pair = 0;
  std::vector<CoreTimeline> groups;
  std::vector<double> ends;
  for (size_t g = 0; g < cube.timeline.cores.size(); ++g) {
    const CoreTimeline& cube_core = cube.timeline.cores[g];
    CoreTimeline aiv;
    for (int64_t c : cube_core.core_ids) {
      for (int64_t j = 0; j < ep.vector_per_cube; ++j) aiv.core_ids.push_back(soc.ai_core_cnt + c * ep.vector_per_cube + j);
    }
    // One vector core's sub-tiles (its partners run the same): SCALAR issues a sub-tile
    // once the tile drained, MTE2 loads into input buffer (t mod 2), VECTOR computes into
    // output buffer (t mod 2), MTE3 writes; the core's HBM share is a fluid budget both
    // MTE2 and MTE3 draw on (as the vector ops' event simulation).
    auto add = [&](Pipe pipe, double start, double end, int64_t tile, std::string_view label) {
      if (end > start) aiv.pipes[static_cast<size_t>(pipe)].push_back({start, end, tile, label});
    };
    double scalar_free = 0, mte2_free = 0, vec_free = 0, mte3_free = 0, hbm_done = 0, end = 0;
    double vec_end[2] = {0, 0}, mte3_end[2] = {0, 0};
    int64_t sub = 0;
    for (const TimelineInterval& drain : cube_core.Of(Pipe::kFixpipe)) {
      const double release = drain.end_us * cycles_per_us;
      for (int64_t k = 0; k < split; ++k, ++sub) {
        const int slot = static_cast<int>(sub % 2);
        const double s0 = std::max(scalar_free, release);
        scalar_free = s0 + ep.scalar;
        add(Pipe::kScalar, s0, scalar_free, drain.tile, "epilogue issue");
        const double m0 = std::max({scalar_free, mte2_free, vec_end[slot]});
        hbm_done = std::max(hbm_done, m0 + ep.mte2_latency) + ep.hbm_cycles;
        mte2_free = m0 + ep.mte2;
        add(Pipe::kMte2, m0, mte2_free, drain.tile, "epilogue MTE2 acc+operands");
        const double v0 = std::max({mte2_free, vec_free, mte3_end[slot]});
        vec_free = v0 + ep.vec;
        vec_end[slot] = vec_free;
        add(Pipe::kVector, v0, vec_free, drain.tile, "epilogue vec");
        const double w0 = std::max(vec_free, mte3_free);
        mte3_free = std::max(w0 + ep.mte3, hbm_done);
        mte3_end[slot] = mte3_free;
        add(Pipe::kMte3, w0, mte3_free, drain.tile, "epilogue MTE3 UB->GM");
        end = mte3_free;
      }
    }
    end = std::max(end, cube_core.EndUs() * cycles_per_us);
    aiv.ScaleTimes(us_per_cycle);
    if (end > crit_end) {
      crit_end = end;
      crit_pair = g;
    }
    groups.push_back(cube_core);
    groups.push_back(std::move(aiv));
  }
  KernelEstimate& est = result.estimate;
  const CoreTimeline& crit_cube = groups[2 * crit_pair];
  const CoreTimeline& crit_aiv = groups[2 * crit_pair + 1];
  for (int p = 0; p < kPipeCount; ++p) est.busy_us[static_cast<size_t>(p)] = crit_cube.BusyUs(static_cast<Pipe>(p));
  est.BusyUs(Pipe::kVector) = crit_aiv.BusyUs(Pipe::kVector);
  est.BusyUs(Pipe::kMte3) = crit_aiv.BusyUs(Pipe::kMte3);
  est.duration_us = std::max(std::max(crit_end, 0.0) * us_per_cycle, plan.hbm_floor_us);
  est.latency_us = est.launch_us + est.duration_us;
  result.timeline.launch_us = est.launch_us;
  result.timeline.duration_us = est.duration_us;
  if (options.record_timeline) {
    result.timeline.cores = std::move(groups);
    result.timeline.critical = static_cast<int64_t>(2 * crit_pair + 1);
  }
  return result;
}

}  // namespace tunefleet::sim
