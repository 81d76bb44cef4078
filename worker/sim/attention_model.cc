#include "worker/sim/attention_model.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "worker/sim/pipe_costs.h"

namespace tunefleet::sim {
namespace {

using pipe_costs::TransferEq;
using pipe_costs::VectorCycles;

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
constexpr double kScoreBytes = 4;  // fp32 scores, output accumulator and P x v
// The online softmax per score: running vmax, vsub of the max, vexp, running vadd of the
// sum, vconv of P to the inputs' dtype.
constexpr int kSoftmaxInstructions = 5;
// Per row and step: the new max, the old max's difference, its exp, the sum's rescale.
constexpr int kRowInstructions = 4;
// Per output element and step: the accumulator's rescale (vmul) and P x v's vadd; at the
// end of a unit: the vmul by 1/sum and the vconv to the output dtype.
constexpr int kRescaleInstructions = 2;

using StepCost = AttentionStep;

StepCost Step(const AttentionShape& s, const AttentionTiling& t, int64_t w, int64_t rows, int chain_instructions,
              const SocSpec& soc) {
  const double in = DTypeBytes(s.dtype);
  const double s1 = static_cast<double>(t.s1), wd = static_cast<double>(w);
  const double d16 = static_cast<double>(RoundUp(s.d, 16)), dv16 = static_cast<double>(RoundUp(s.dv, 16));
  const double w16 = static_cast<double>(RoundUp(w, 16));
  const double lat = soc.gm_latency_cycles;
  StepCost c;
  // Two GEMMs of whole fractals: [s1, D] x [D, w] and [s1, w] x [w, Dv]; a fractal's K is
  // k0 = 16 fp16 or 32 int8 elements (as matmul_model.cc packs it).
  const int64_t k0 = soc.cube_k_size * 2 / DTypeBytes(s.dtype);
  const double fractal = static_cast<double>(soc.cube_m_size * soc.cube_n_size * k0);
  c.cube = (s1 * w16 * static_cast<double>(RoundUp(s.d, k0)) + s1 * dv16 * static_cast<double>(RoundUp(w, k0))) / fractal;
  c.mte1 = (s1 * d16 + s1 * w16) * in / soc.mte1_l0a_bytes_per_cycle + (w16 * d16 + w16 * dv16) * in / soc.mte1_l0b_bytes_per_cycle;
  // k's block is one run of rows when k is [Skv, D], D strided runs of w when [D, Skv].
  const double k_bursts = s.k_rows ? 1 : static_cast<double>(s.d);
  c.mte2 = 3 * lat + (TransferEq(wd * static_cast<double>(s.d) * in, k_bursts, soc) +
                      TransferEq(wd * static_cast<double>(s.dv) * in, 1, soc) + TransferEq(s1 * wd * in, 1, soc)) /
                         soc.mte2_bytes_per_cycle;
  c.fixpipe = (TransferEq(s1 * wd * kScoreBytes, s1, soc) + TransferEq(s1 * dv16 * kScoreBytes, s1, soc)) /
              soc.fixpipe_bytes_per_cycle;
  c.scalar = soc.scalar_cycles_per_iteration * 4;  // the step's two MMADs' and two syncs' issue
  // The vector core's rows of the block.
  const double r = static_cast<double>(rows);
  double read = TransferEq(r * wd * kScoreBytes, 1, soc) + TransferEq(r * dv16 * kScoreBytes, 1, soc);
  int dmas = 2;
  for (const FusedOperand& o : s.scores.operands) {
    const double b = DTypeBytes(o.dtype);
    // A full operand (a mask per head) is streamed a row at a time; a broadcast one's
    // slice is re-read (from L2).
    read += o.full ? TransferEq(r * wd * b, r, soc)
                   : TransferEq(std::min(r * wd, static_cast<double>(o.elements)) * b, 1, soc);
    ++dmas;
  }
  c.v_mte2 = dmas * lat + read / soc.mte2_bytes_per_cycle;
  const auto [score_cycles, score_instrs] =
      VectorCycles(rows * w, static_cast<int64_t>(kScoreBytes), chain_instructions + kSoftmaxInstructions, soc);
  const auto [row_cycles, row_instrs] = VectorCycles(rows, static_cast<int64_t>(kScoreBytes), kRowInstructions, soc);
  const auto [acc_cycles, acc_instrs] =
      VectorCycles(rows * RoundUp(s.dv, 16), static_cast<int64_t>(kScoreBytes), kRescaleInstructions, soc);
  c.vec = score_cycles + row_cycles + acc_cycles;
  c.v_mte3 = lat + TransferEq(r * wd * in, 1, soc) / soc.mte3_bytes_per_cycle;
  c.v_scalar = soc.scalar_cycles_per_iteration * static_cast<double>(score_instrs + row_instrs + acc_instrs + dmas + 1);
  return c;
}

}  // namespace

double AttentionStep::CubeSide() const { return std::max({cube, mte1, mte2, fixpipe}) + scalar; }

double AttentionStep::VectorSide(bool ping_pong) const {
  return ping_pong ? std::max({v_mte2, vec, v_mte3, v_scalar}) : v_mte2 + vec + v_mte3 + v_scalar;
}

KernelEstimate EstimateAttention(const AttentionShape& s, const AttentionTiling& t, const SocSpec& soc, AttentionPlan* out) {
  AttentionPlan local;
  AttentionPlan& plan = out ? *out : local;
  const AttentionBlocking blk = ComputeAttentionBlocking(s, t, soc);
  const bool ping_pong = t.buffers > 1;
  const int chain = pipe_costs::ChainInstructions(s.scores);
  const int64_t rows = blk.rows_per_vector;
  const int64_t q_blocks_n = CeilDiv(s.sq, t.s1);
  plan.units = s.batch * q_blocks_n;
  plan.cores = std::min<int64_t>(soc.ai_core_cnt, plan.units);
  plan.units_per_core = CeilDiv(plan.units, plan.cores);
  plan.kv_steps = CeilDiv(s.skv, t.s2);
  const int64_t last_w = s.skv - (plan.kv_steps - 1) * t.s2;
  const StepCost full = Step(s, t, t.s2, rows, chain, soc);
  const StepCost last = Step(s, t, last_w, rows, chain, soc);
  plan.cube_step = full.CubeSide();
  plan.vector_step = full.VectorSide(ping_pong);
  auto step_cycles = [&](const StepCost& c) {
    return ping_pong ? std::max(c.CubeSide(), c.VectorSide(true)) : c.CubeSide() + c.VectorSide(false);
  };
  // Pipeline fill: with ping-pong the first block's scores (or the last block's softmax)
  // run alone.
  const double fill = ping_pong ? std::min(full.CubeSide(), full.VectorSide(true)) : 0;
  const double in = DTypeBytes(s.dtype);
  const double lat = soc.gm_latency_cycles;
  const double q_load = lat + TransferEq(static_cast<double>(t.s1 * s.d) * in, 1, soc) / soc.mte2_bytes_per_cycle;
  const auto [norm_cycles, norm_instrs] =
      VectorCycles(rows * RoundUp(s.dv, 16), static_cast<int64_t>(kScoreBytes), kRescaleInstructions, soc);
  const double out_bytes = DTypeBytes(s.out_dtype);
  const double o_write =
      lat + TransferEq(static_cast<double>(rows * s.dv) * out_bytes, static_cast<double>(rows), soc) / soc.mte3_bytes_per_cycle;
  auto unit_cycles = [&](int64_t steps, const StepCost& last_step, double unit_fill) {
    const double walk = static_cast<double>(steps - 1) * step_cycles(full) + step_cycles(last_step);
    return soc.scalar_cycles_per_tile + q_load + walk + unit_fill + norm_cycles + o_write;
  };
  plan.unit = unit_cycles(plan.kv_steps, last, fill);
  plan.ping_pong = ping_pong;
  plan.full = full;
  plan.last = last;
  plan.unit_setup = soc.scalar_cycles_per_tile;
  plan.q_load = q_load;
  plan.normalise = norm_cycles;
  plan.o_write = o_write;
  plan.kinds.clear();
  if (!s.causal) {
    plan.kinds.push_back({s.skv, plan.kv_steps, plan.units, last, plan.unit});
  } else {
    std::vector<std::pair<int64_t, StepCost>> lasts;  // by width: few distinct ones
    for (int64_t b = 0; b < q_blocks_n; ++b) {
      AttentionUnitKind k;
      k.keys = AttentionUnitKeys(s, t, b);
      k.steps = CeilDiv(k.keys, t.s2);
      k.count = s.batch;
      const int64_t w = k.keys - (k.steps - 1) * t.s2;
      auto it = std::find_if(lasts.begin(), lasts.end(), [&](const auto& l) { return l.first == w; });
      if (it == lasts.end()) it = lasts.insert(lasts.end(), {w, Step(s, t, w, rows, chain, soc)});
      k.last = it->second;
      // A unit of one (narrower) step fills the pipeline with that step.
      const double unit_fill = !ping_pong ? 0 : k.steps > 1 ? fill : std::min(k.last.CubeSide(), k.last.VectorSide(true));
      k.cycles = unit_cycles(k.steps, k.last, unit_fill);
      plan.kinds.push_back(k);
    }
  }
  // The busiest core's units of each kind.
  std::vector<int64_t> critical(plan.kinds.size(), 0);
  if (!s.causal) {
    critical[0] = plan.units_per_core;
  } else {
    double most = -1;
    for (const std::vector<int>& units : AssignAttentionUnits(plan)) {
      double load = 0;
      for (int k : units) load += plan.kinds[static_cast<size_t>(k)].cycles;
      if (load <= most) continue;
      most = load;
      std::fill(critical.begin(), critical.end(), 0);
      for (int k : units) ++critical[static_cast<size_t>(k)];
    }
  }

  // Bytes. Compulsory: q, k, v, the output and the operands once (under a causal mask, the
  // operands' share the blocks computed read).
  const double batch = static_cast<double>(s.batch), sq = static_cast<double>(s.sq), skv = static_cast<double>(s.skv);
  const double d = static_cast<double>(s.d), dv = static_cast<double>(s.dv);
  double computed_scores = sq * skv, unit_keys = static_cast<double>(q_blocks_n) * skv, kv_steps = static_cast<double>(plan.kv_steps);
  if (s.causal) {
    computed_scores = unit_keys = kv_steps = 0;
    for (int64_t b = 0; b < q_blocks_n; ++b) {
      const AttentionUnitKind& k = plan.kinds[static_cast<size_t>(b)];
      computed_scores += static_cast<double>(std::min(t.s1, s.sq - b * t.s1) * k.keys);
      unit_keys += static_cast<double>(k.keys);
      kv_steps += static_cast<double>(k.steps);
    }
    kv_steps /= static_cast<double>(q_blocks_n);  // per unit, on average
  }
  double operands = 0;
  for (const FusedOperand& o : s.scores.operands) operands += static_cast<double>(o.elements) * DTypeBytes(o.dtype);
  operands *= computed_scores / (sq * skv);
  const double kv_head = skv * (d + dv) * in;
  const double kv_heads = batch / static_cast<double>(s.kv_group);
  const double compulsory = batch * sq * (d * in + dv * DTypeBytes(s.out_dtype)) + kv_heads * kv_head + operands;
  // The next units of a head, and the other heads of its group, re-read its k and v (the
  // keys each walks): L2 hits while a wave's heads fit.
  const double q_blocks = static_cast<double>(q_blocks_n);
  const double rereads = s.causal ? batch * unit_keys * (d + dv) * in - kv_heads * kv_head
                                  : (batch * q_blocks - kv_heads) * kv_head;
  const bool resident = static_cast<double>(plan.cores) * kv_head <= static_cast<double>(soc.l2_size);
  // The workspace: scores written and read (fp32), P written and read, P x v (fp32)
  // written and read, each step of each unit.
  const double padded_rows = batch * q_blocks * static_cast<double>(t.s1);
  const double keys = unit_keys / q_blocks;  // per unit, on average
  const double workspace = padded_rows * (2 * keys * kScoreBytes + 2 * keys * in) + padded_rows * kv_steps * 2 * dv * kScoreBytes;
  KernelEstimate est;
  est.block_dim = plan.cores;
  est.compulsory_bytes = compulsory;
  est.hbm_bytes = compulsory + (resident ? 0 : rereads);
  est.l2_bytes = (resident ? rereads : 0) + workspace;
  est.flops = 2 * batch * computed_scores * (d + dv);
  est.compute_roof_flops = soc.CubePeakFlops();
  const double cycles_per_us = soc.CyclesPerUs();
  double units_on_critical = 0, critical_cycles = 0;
  for (size_t k = 0; k < plan.kinds.size(); ++k) {
    units_on_critical += static_cast<double>(critical[k]);
    critical_cycles += static_cast<double>(critical[k]) * plan.kinds[k].cycles;
  }
  auto busy = [&](double StepCost::*stage) {
    double cycles = 0;
    for (size_t k = 0; k < plan.kinds.size(); ++k) {
      const AttentionUnitKind& kind = plan.kinds[k];
      cycles += static_cast<double>(critical[k]) * (static_cast<double>(kind.steps - 1) * full.*stage + kind.last.*stage);
    }
    return cycles / cycles_per_us;
  };
  est.BusyUs(Pipe::kCube) = busy(&StepCost::cube);
  est.BusyUs(Pipe::kMte1) = busy(&StepCost::mte1);
  est.BusyUs(Pipe::kMte2) = busy(&StepCost::mte2) + units_on_critical * q_load / cycles_per_us;
  est.BusyUs(Pipe::kFixpipe) = busy(&StepCost::fixpipe);
  est.BusyUs(Pipe::kScalar) = busy(&StepCost::scalar) + units_on_critical * soc.scalar_cycles_per_tile / cycles_per_us;
  est.BusyUs(Pipe::kVector) = busy(&StepCost::vec) + units_on_critical * norm_cycles / cycles_per_us;
  est.BusyUs(Pipe::kMte3) = busy(&StepCost::v_mte3) + units_on_critical * o_write / cycles_per_us;
  plan.hbm_floor_us = est.hbm_bytes / (soc.hbm_bandwidth_gbps * 1e3);
  // Every byte crosses L2: HBM's on their way in and out, the hits and the workspace.
  plan.l2_floor_us = (est.hbm_bytes + est.l2_bytes) / (soc.l2_bandwidth_gbps * 1e3);
  est.duration_us = std::max({critical_cycles / cycles_per_us, plan.hbm_floor_us, plan.l2_floor_us});
  est.launch_us = soc.kernel_launch_us;
  est.latency_us = est.launch_us + est.duration_us;
  return est;
}

std::vector<std::vector<int>> AssignAttentionUnits(const AttentionPlan& plan) {
  std::vector<std::vector<int>> cores(static_cast<size_t>(std::max<int64_t>(plan.cores, 1)));
  if (plan.kinds.size() == 1) {
    for (int64_t u = 0; u < plan.kinds[0].count; ++u) cores[static_cast<size_t>(u) % cores.size()].push_back(0);
    return cores;
  }
  std::vector<int> order(plan.kinds.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.kinds[static_cast<size_t>(a)].cycles > plan.kinds[static_cast<size_t>(b)].cycles; });
  // (load, core): the least loaded first, the lower core on a tie.
  using Load = std::pair<double, size_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
  for (size_t c = 0; c < cores.size(); ++c) loads.push({0.0, c});
  for (int k : order) {
    const AttentionUnitKind& kind = plan.kinds[static_cast<size_t>(k)];
    for (int64_t u = 0; u < kind.count; ++u) {
      auto [load, c] = loads.top();
      loads.pop();
      cores[c].push_back(k);
      loads.push({load + kind.cycles, c});
    }
  }
  return cores;
}

namespace {

// One core's units (indices into p.kinds): its cube core's pipes into `aic`, one of its
// vector cores' into `aiv` (cycles); returns when the last unit's output is written.
double WalkAttentionCore(const AttentionPlan& p, const std::vector<int>& units, CoreTimeline& aic, CoreTimeline& aiv) {
  auto add = [](CoreTimeline& core, Pipe pipe, double start, double length, int64_t tile, std::string_view label) {
    if (length > 0) core.pipes[static_cast<size_t>(pipe)].push_back({start, start + length, tile, label});
  };
  double t = 0;
  int64_t tile = 0;
  for (int k : units) {
    const AttentionUnitKind& kind = p.kinds[static_cast<size_t>(k)];
    add(aic, Pipe::kScalar, t, p.unit_setup, tile, "unit setup");
    t += p.unit_setup;
    add(aic, Pipe::kMte2, t, p.q_load, tile, "MTE2 q block");
    t += p.q_load;
    double cube_free = t, vector_done = t, vector_done_before = t;
    for (int64_t s = 0; s < kind.steps; ++s, ++tile) {
      const AttentionStep& st = s + 1 == kind.steps ? kind.last : p.full;
      // The scores wait for the cube and for their workspace buffer.
      const double c0 = std::max(cube_free, p.ping_pong ? vector_done_before : vector_done);
      add(aic, Pipe::kMte2, c0, st.mte2, tile, "MTE2 k, v, P blocks");
      add(aic, Pipe::kMte1, c0, st.mte1, tile, "MTE1 L1->L0");
      add(aic, Pipe::kCube, c0, st.cube, tile, "MMAD q k, P v");
      add(aic, Pipe::kFixpipe, c0, st.fixpipe, tile, "FIXPIPE scores, P v");
      add(aic, Pipe::kScalar, c0 + st.CubeSide() - st.scalar, st.scalar, tile, "step issue");
      cube_free = c0 + st.CubeSide();
      // The softmax waits for its scores and for the previous softmax.
      const double v0 = std::max(cube_free, vector_done);
      if (p.ping_pong) {
        add(aiv, Pipe::kMte2, v0, st.v_mte2, tile, "MTE2 scores, operands");
        add(aiv, Pipe::kVector, v0, st.vec, tile, "vec chain, online softmax");
        add(aiv, Pipe::kMte3, v0, st.v_mte3, tile, "MTE3 P");
        add(aiv, Pipe::kScalar, v0, st.v_scalar, tile, "softmax issue");
      } else {
        double at = v0;
        add(aiv, Pipe::kMte2, at, st.v_mte2, tile, "MTE2 scores, operands");
        at += st.v_mte2;
        add(aiv, Pipe::kVector, at, st.vec, tile, "vec chain, online softmax");
        at += st.vec;
        add(aiv, Pipe::kMte3, at, st.v_mte3, tile, "MTE3 P");
        at += st.v_mte3;
        add(aiv, Pipe::kScalar, at, st.v_scalar, tile, "softmax issue");
      }
      vector_done_before = vector_done;
      vector_done = v0 + st.VectorSide(p.ping_pong);
    }
    t = vector_done;
    add(aiv, Pipe::kVector, t, p.normalise, tile - 1, "vec 1/sum");
    t += p.normalise;
    add(aiv, Pipe::kMte3, t, p.o_write, tile - 1, "MTE3 output");
    t += p.o_write;
  }
  return t;
}

}  // namespace

Result<EventSimResult> SimulateAttentionEvents(const AttentionShape& s, const SearchSpace& space, const Config& config,
                                               const SocSpec& soc, const EventSimOptions& options) {
  TF_RETURN_IF_ERROR(space.Validate(config));
  AttentionPlan plan;
  EventSimResult result;
  result.estimate = EstimateAttention(s, AttentionTilingFromConfig(config), soc, &plan);
  const int64_t vpc = ComputeAttentionBlocking(s, AttentionTilingFromConfig(config), soc).vector_per_cube;
  const double us_per_cycle = 1.0 / soc.CyclesPerUs();
  // Cores that run the same units are simulated once: without a causal mask, the first
  // cores run units_per_core units and the rest one fewer.
  std::vector<std::pair<std::vector<int>, std::vector<int64_t>>> groups;  // units, cores
  const std::vector<std::vector<int>> assigned = AssignAttentionUnits(plan);
  for (size_t c = 0; c < assigned.size(); ++c) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == assigned[c]; });
    if (g == groups.end()) g = groups.insert(groups.end(), {assigned[c], {}});
    g->second.push_back(static_cast<int64_t>(c));
  }
  double crit_end = -1;
  for (const auto& [units, cores] : groups) {
    CoreTimeline aic, aiv;
    for (int64_t c : cores) {
      aic.core_ids.push_back(c);
      for (int64_t j = 0; j < vpc; ++j) aiv.core_ids.push_back(soc.ai_core_cnt + c * vpc + j);
    }
    const double end = WalkAttentionCore(plan, units, aic, aiv);
    aic.ScaleTimes(us_per_cycle);
    aiv.ScaleTimes(us_per_cycle);
    if (end > crit_end) {
      crit_end = end;
      KernelEstimate& est = result.estimate;
      for (Pipe pipe : {Pipe::kMte2, Pipe::kMte1, Pipe::kCube, Pipe::kFixpipe, Pipe::kScalar}) est.BusyUs(pipe) = aic.BusyUs(pipe);
      for (Pipe pipe : {Pipe::kVector, Pipe::kMte3}) est.BusyUs(pipe) = aiv.BusyUs(pipe);
      result.timeline.critical = static_cast<int64_t>(result.timeline.cores.size()) + 1;  // its vector cores end it
    }
    if (options.record_timeline) {
      result.timeline.cores.push_back(std::move(aic));
      result.timeline.cores.push_back(std::move(aiv));
    }
  }
  KernelEstimate& est = result.estimate;
  est.duration_us = std::max({crit_end * us_per_cycle, plan.hbm_floor_us, plan.l2_floor_us});
  est.latency_us = est.launch_us + est.duration_us;
  if (!options.record_timeline) result.timeline.critical = 0;
  result.timeline.launch_us = est.launch_us;
  result.timeline.duration_us = est.duration_us;
  return result;
}

}  // namespace tunefleet::sim
