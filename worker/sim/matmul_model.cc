#include "worker/sim/matmul_model.h"

#include "worker/sim/cube_model_impl.h"
#include "worker/sim/cube_recurrence.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace tunefleet::sim {
namespace {

// Share of l2_size over which a re-read A/B panel still hits. L2 also takes the
// write-allocated fp32 output and is address-sliced with non-LRU replacement, so a
// cyclic reuse pattern starts to miss well before the nominal capacity. Calibrated
// (NPU_MODEL.md "Calibration"): it puts the pto-isa GEMM's load-bound fall between
// M=N=K=6144 (A + one B panel = 79 MB, all hits) and 7680 (122 MB, misses).
constexpr double kL2UsableFraction = 0.5;
// Width of a FRACTAL_NZ column strip (C0): 16 fp16 or 32 int8 elements.
constexpr int64_t kC0Bytes = 32;

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One kind of L1 block: interior, or in the last block row / column of the output
// (fewer base tiles and fewer real rows). At most four kinds exist.
struct BlockKind {
  int64_t count = 0;  // blocks of this kind in the launch, all batches
  int64_t tiles_m = 0, tiles_n = 0;
  int64_t tiles = 0;
  double mte2_eq = 0;         // MTE2 bytes-equivalent for the block (bursts, stride, reloads)
  double raw_reads = 0;       // input bytes the block's MTE2 reads, reloads included
  double first_chunk_eq = 0;  // bytes-equivalent of the first L1 chunk pair (the fill)
  double fix_eq = 0;          // FIXPIPE bytes-equivalent of the block's output
  double cycles = 0;          // time of one such block on its core
  std::array<double, kPipeCount> busy{};  // per-pipe busy cycles of one such block
};

// The kinds' indices ordered by `before`, ties in index order (an insertion sort:
// the kinds stay in place, they are large).
template <typename Before>
std::array<int, 4> StableOrder(const std::array<BlockKind, 4>& kinds, Before before) {
  std::array<int, 4> order = {0, 1, 2, 3};
  for (size_t i = 1; i < order.size(); ++i) {
    const int x = order[i];
    size_t j = i;
    const BlockKind& kx = kinds[static_cast<size_t>(x)];
    for (; j > 0 && before(kx, kinds[static_cast<size_t>(order[j - 1])]); --j) {
      order[j] = order[j - 1];
    }
    order[j] = x;
  }
  return order;
}

// Bytes-equivalent of one GM transfer (NPU_MODEL.md "Memory", "Data formats"): every
// contiguous burst costs burst_overhead_bytes more, a row stride that is not 32-byte
// aligned costs misaligned_stride_penalty more on everything.
double TransferEq(double raw, double bursts, bool misaligned, const SocSpec& soc) {
  double eq = raw + bursts * soc.burst_overhead_bytes;
  return misaligned ? eq * (1 + soc.misaligned_stride_penalty) : eq;
}

double HitFraction(double working_set, double capacity) {
  return working_set <= capacity ? 1.0 : capacity / working_set;
}

// One batch's operands as the block walk sees them: totals and the full (interior)
// panel each block reads. Edge panels are smaller; the working sets use full ones.
struct PanelWalk {
  double a_total = 0, b_total = 0, c_total = 0;
  double a_panel = 0, b_panel = 0, c_block = 0;
  int64_t blocks_m = 0, blocks_n = 0;
};

// HBM bytes one batch's MTE2 reads at block granularity: the compulsory A and B plus
// the re-reads of panels that L2 no longer holds. Blocks are walked in bands of
// `swizzle` panels of the slow operand; within a band the fast operand's panel is
// re-read `swizzle` times in a row (hits), and again only one band later, after the
// whole fast operand streamed by. iterateOrder 0 walks M fastest, so A is the fast
// operand and consecutive blocks share a B panel.
double MissBytesPerBatch(const PanelWalk& w, int64_t iterate_order, int64_t swizzle,
                         double capacity) {
  const bool m_fast = iterate_order == 0;
  const double fast_total = m_fast ? w.a_total : w.b_total;
  const double slow_total = m_fast ? w.b_total : w.a_total;
  const double fast_panel = m_fast ? w.a_panel : w.b_panel;
  const double slow_panel = m_fast ? w.b_panel : w.a_panel;
  const int64_t fast_panels = m_fast ? w.blocks_m : w.blocks_n;
  const int64_t slow_panels = m_fast ? w.blocks_n : w.blocks_m;
  const int64_t group = std::clamp<int64_t>(swizzle, 1, slow_panels);
  const int64_t bands = CeilDiv(slow_panels, group);
  const double g = static_cast<double>(group);

  const double ws_in_band = g * (fast_panel + slow_panel + w.c_block);
  const double ws_cross =
      fast_total + g * slow_panel + w.c_block * g * static_cast<double>(fast_panels);
  const double ws_slow = g * slow_panel + fast_panel + g * w.c_block;
  const double fast_in_band = fast_total * static_cast<double>(slow_panels - bands) *
                              (1 - HitFraction(ws_in_band, capacity));
  const double fast_cross =
      fast_total * static_cast<double>(bands - 1) * (1 - HitFraction(ws_cross, capacity));
  const double slow_re =
      slow_total * static_cast<double>(fast_panels - 1) * (1 - HitFraction(ws_slow, capacity));
  return fast_total + slow_total + fast_in_band + fast_cross + slow_re;
}

bool Misaligned(int64_t row_bytes, const SocSpec& soc) { return row_bytes % soc.ubblock_size != 0; }

}  // namespace

Result<KernelEstimate> EstimateMatmul(const MatmulShape& shape, const MatmulTiling& t,
                                      const SocSpec& soc) {
  TF_RETURN_IF_ERROR(CheckCubeTiling(shape, t));
  return EstimateCube(shape, t, nullptr, soc);
}

Status CheckCubeTiling(const MatmulShape& shape, const MatmulTiling& t) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
    return InvalidArgument("MatMul dimensions must be positive");
  }
  if (t.base_m <= 0 || t.base_n <= 0 || t.base_k <= 0 || t.base_m % 16 || t.base_n % 16 ||
      t.base_k % 16) {
    return InvalidArgument("MatMul base block must be positive multiples of 16");
  }
  if (t.step_m <= 0 || t.step_n <= 0 || t.step_ka <= 0 || t.step_kb <= 0 || t.used_cores <= 0) {
    return InvalidArgument("MatMul steps and usedCores must be positive");
  }
  return Status::Ok();
}

KernelEstimate EstimateCube(const MatmulShape& shape, const MatmulTiling& t, const CubeASide* a_side,
                            const SocSpec& soc, CubePlan* plan) {
  const int64_t in_bytes = DTypeBytes(shape.in_dtype);
  // FIXPIPE converts the accumulator to the op's output dtype on the way out.
  const int64_t out_bytes = shape.out_bytes;
  const double in = static_cast<double>(in_bytes);
  const double m = static_cast<double>(shape.m);
  const double n = static_cast<double>(shape.n);
  const double k = static_cast<double>(shape.k);
  const double batch = static_cast<double>(shape.batch);

  // Work decomposition (matmul_space.h): base tiles grouped into L1 blocks of
  // stepM x stepN tiles, handed out round-robin, wave by wave; K is never split.
  const int64_t kt = CeilDiv(shape.k, t.base_k);  // base-K steps per output tile
  const int64_t tiles_m = CeilDiv(shape.m, t.base_m);
  const int64_t tiles_n = CeilDiv(shape.n, t.base_n);
  const int64_t blocks_m = CeilDiv(tiles_m, t.step_m);
  const int64_t blocks_n = CeilDiv(tiles_n, t.step_n);
  const int64_t total_blocks = blocks_m * blocks_n * shape.batch;
  const int64_t cores =
      std::min({t.used_cores, total_blocks, static_cast<int64_t>(soc.ai_core_cnt)});
  const int64_t waves = CeilDiv(total_blocks, cores);  // blocks of the busiest core

  // Per base-K step of one base tile. CUBE: one 16x16xk0 fractal per cycle, always on
  // whole base tiles (edge tiles are padded: wasted work); int8 packs k0 = 32.
  const int64_t cube_k0 = soc.cube_k_size * 2 / in_bytes;
  const double cube_step =
      static_cast<double>(CeilDiv(t.base_m, soc.cube_m_size) * CeilDiv(t.base_n, soc.cube_n_size) *
                          CeilDiv(t.base_k, cube_k0));
  // MTE1: L1 -> L0A / L0B, one pipe, whole base tiles (CANN's 256 / 128 B per cycle).
  const double mte1_a =
      static_cast<double>(t.base_m * t.base_k) * in / soc.mte1_l0a_bytes_per_cycle;
  const double mte1_b =
      static_cast<double>(t.base_k * t.base_n) * in / soc.mte1_l0b_bytes_per_cycle;
  // An L1 chunk holds all of K when it fits one buffer: the panel then stays for every
  // tile of the block; otherwise it streams again for each tile that needs it.
  const bool a_resident = kt <= t.step_ka;
  const bool b_resident = kt <= t.step_kb;
  const double a_first_share =
      static_cast<double>(std::min(t.step_ka, kt)) / static_cast<double>(kt);
  const double b_first_share =
      static_cast<double>(std::min(t.step_kb, kt)) / static_cast<double>(kt);
  const bool a_misaligned =
      a_side ? a_side->misaligned
             : !shape.a_nz && Misaligned((shape.transpose_a ? shape.m : shape.k) * in_bytes, soc);
  const bool b_misaligned =
      !shape.b_nz && Misaligned((shape.transpose_b ? shape.k : shape.n) * in_bytes, soc);
  const bool c_misaligned = Misaligned(shape.n * out_bytes, soc);

  // The four block kinds: interior / last row of blocks x interior / last column.
  const int64_t block_rows = t.step_m * t.base_m;
  const int64_t block_cols = t.step_n * t.base_n;
  const int64_t rows_of[2] = {block_rows, shape.m - (blocks_m - 1) * block_rows};
  const int64_t tm_of[2] = {t.step_m, tiles_m - (blocks_m - 1) * t.step_m};
  const int64_t cols_of[2] = {block_cols, shape.n - (blocks_n - 1) * block_cols};
  const int64_t tn_of[2] = {t.step_n, tiles_n - (blocks_n - 1) * t.step_n};
  const int64_t count_m[2] = {blocks_m - 1, 1};
  const int64_t count_n[2] = {blocks_n - 1, 1};
  std::array<BlockKind, 4> kinds;
  double total_raw_reads = 0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      BlockKind& b = kinds[static_cast<size_t>(i * 2 + j)];
      b.count = count_m[i] * count_n[j] * shape.batch;
      b.tiles_m = tm_of[i];
      b.tiles_n = tn_of[j];
      b.tiles = b.tiles_m * b.tiles_n;
      const double rows = static_cast<double>(rows_of[i]);
      const double cols = static_cast<double>(cols_of[j]);
      // Bursts (NPU_MODEL.md "Data formats"): ND converts to L1's fractal layout with
      // one burst per stored row per base tile (a row is baseK*in_bytes for A when not
      // transposed); FRACTAL_NZ moves whole C0 column strips.
      double a_bursts = 0;
      double b_bursts = 0;
      if (a_side) {
        a_bursts = a_side->pass_bursts[i];
      } else if (shape.a_nz) {
        a_bursts = shape.transpose_a
                       ? static_cast<double>(CeilDiv(rows_of[i] * in_bytes, kC0Bytes) *
                                             CeilDiv(kt, t.step_ka))
                       : static_cast<double>(CeilDiv(shape.k * in_bytes, kC0Bytes));
      } else {
        a_bursts =
            shape.transpose_a ? k * static_cast<double>(b.tiles_m) : rows * static_cast<double>(kt);
      }
      if (shape.b_nz) {
        b_bursts = shape.transpose_b
                       ? static_cast<double>(CeilDiv(shape.k * in_bytes, kC0Bytes))
                       : static_cast<double>(CeilDiv(cols_of[j] * in_bytes, kC0Bytes) *
                                             CeilDiv(kt, t.step_kb));
      } else {
        b_bursts =
            shape.transpose_b ? cols * static_cast<double>(kt) : k * static_cast<double>(b.tiles_n);
      }
      const double a_raw = a_side ? a_side->pass_bytes[i] : rows * k * in;
      const double b_raw = k * cols * in;
      const double a_eq = TransferEq(a_raw, a_bursts, a_misaligned, soc);
      const double b_eq = TransferEq(b_raw, b_bursts, b_misaligned, soc);
      const double a_passes = a_resident ? 1.0 : static_cast<double>(b.tiles_n);
      const double b_passes = b_resident ? 1.0 : static_cast<double>(b.tiles_m);
      b.mte2_eq = a_eq * a_passes + b_eq * b_passes;
      b.raw_reads = a_raw * a_passes + b_raw * b_passes;
      if (shape.bias_bytes > 0) {  // Gemm's bias row: one burst per block, for FIXPIPE
        const double bias = cols * static_cast<double>(shape.bias_bytes);
        b.mte2_eq += TransferEq(bias, 1, false, soc);
        b.raw_reads += bias;
      }
      b.first_chunk_eq = a_eq * a_first_share + b_eq * b_first_share;
      b.fix_eq = TransferEq(rows * cols * out_bytes, rows * static_cast<double>(b.tiles_n),
                            c_misaligned, soc);
      total_raw_reads += static_cast<double>(b.count) * b.raw_reads;
    }
  }

  // The busiest core runs `waves` blocks. Its share of the fabric is sized from the
  // largest blocks (round-robin hands the first core the most and a similar mix).
  const std::array<int, 4> by_size = StableOrder(kinds, [](const BlockKind& x, const BlockKind& y) {
    return x.tiles != y.tiles ? x.tiles > y.tiles : x.mte2_eq > y.mte2_eq;
  });
  double crit_mte2_eq = 0;
  for (int64_t i = 0, left = waves; i < 4; ++i) {
    const BlockKind& b = kinds[static_cast<size_t>(by_size[static_cast<size_t>(i)])];
    const int64_t take = std::min(left, b.count);
    left -= take;
    crit_mte2_eq += static_cast<double>(take) * b.mte2_eq;
  }

  // L2 / HBM (NPU_MODEL.md "Memory"): compulsory and missed re-reads come from HBM,
  // the rest (including a block's own reloads) hits L2.
  PanelWalk walk;
  walk.a_total = a_side ? a_side->total : m * k * in;
  walk.b_total = k * n * in;
  walk.c_total = m * n * out_bytes;
  walk.a_panel =
      a_side ? a_side->panel : static_cast<double>(std::min(shape.m, block_rows)) * k * in;
  walk.b_panel = k * static_cast<double>(std::min(shape.n, block_cols)) * in;
  walk.c_block =
      static_cast<double>(std::min(shape.m, block_rows) * std::min(shape.n, block_cols)) *
      out_bytes;
  walk.blocks_m = blocks_m;
  walk.blocks_n = blocks_n;
  const double miss_reads =
      batch * MissBytesPerBatch(walk, t.iterate_order, t.swizzle,
                                static_cast<double>(soc.l2_size) * kL2UsableFraction);
  // Gemm's bias row comes from HBM once; its re-reads by other block rows hit L2.
  const double bias_total = batch * n * static_cast<double>(shape.bias_bytes);
  const double hbm_bytes = miss_reads + bias_total + batch * walk.c_total;

  // MTE2 cycles per bytes-equivalent on the busiest core: its own DMA rate, unless the
  // active cores together ask for more than the shared fabric gives. Every byte crosses
  // L2 (its bandwidth split over the active cores); HBM must in addition deliver all
  // misses of the launch while this core runs, which stretches its transfers.
  const double cycles_per_us = soc.CyclesPerUs();
  const double l2_bytes_per_cycle = soc.l2_bandwidth_gbps * 1e3 / cycles_per_us;
  const double hbm_bytes_per_cycle = soc.hbm_bandwidth_gbps * 1e3 / cycles_per_us;
  const double p = static_cast<double>(cores);
  const double mte2_tau =
      std::max(1.0 / soc.mte2_bytes_per_cycle,
               p / l2_bytes_per_cycle +
                   (miss_reads + bias_total) / (hbm_bytes_per_cycle * crit_mte2_eq));
  const double fix_tau = std::max(1.0 / soc.fixpipe_bytes_per_cycle, p / l2_bytes_per_cycle);

  // Each kind's time on its core: the block's pipeline recurrence (cube_recurrence.h)
  // over L1 chunks of step_k_min K steps in two buffers, with its periods jumped.
  const int64_t step_k_min = std::min({t.step_ka, t.step_kb, kt});
  CubePipe walk_costs = MakeCubePipe(kt, step_k_min);
  walk_costs.cube = cube_step;
  walk_costs.mte1_a = mte1_a;
  walk_costs.mte1_b = mte1_b;
  walk_costs.iteration = soc.scalar_cycles_per_iteration;
  walk_costs.tile_setup = soc.scalar_cycles_per_tile;
  walk_costs.db_a = t.db_l0a;
  walk_costs.db_b = t.db_l0b;
  walk_costs.db_c = t.db_l0c;
  NoCubeRecorder no_record;
  const double kt_d = static_cast<double>(kt);
  for (size_t i = 0; i < kinds.size(); ++i) {
    BlockKind& b = kinds[i];
    const double tiles = static_cast<double>(b.tiles);
    const double steps = tiles * kt_d;
    const double fix_tile = b.fix_eq * fix_tau / tiles;
    b.cycles = 0;
    if (b.count > 0) {
      // The last block row and column are kinds of their own even when whole, so
      // kinds often repeat an earlier one's costs.
      for (size_t j = 0; j < i; ++j) {
        const BlockKind& o = kinds[j];
        if (o.count > 0 && o.tiles == b.tiles && o.mte2_eq == b.mte2_eq &&
            o.first_chunk_eq == b.first_chunk_eq && o.fix_eq == b.fix_eq) {
          b.cycles = o.cycles;
          break;
        }
      }
      if (b.cycles == 0) {
        b.cycles = WalkCubeBlock(walk_costs, b.tiles, b.mte2_eq * mte2_tau,
                                 b.first_chunk_eq * mte2_tau, fix_tile, 0.0, 0, no_record);
      }
    }
    b.busy[static_cast<size_t>(Pipe::kMte2)] = b.mte2_eq * mte2_tau;
    b.busy[static_cast<size_t>(Pipe::kMte1)] = steps * (mte1_a + mte1_b);
    b.busy[static_cast<size_t>(Pipe::kCube)] = steps * cube_step;
    b.busy[static_cast<size_t>(Pipe::kFixpipe)] = tiles * fix_tile;
    b.busy[static_cast<size_t>(Pipe::kScalar)] =
        steps * soc.scalar_cycles_per_iteration + tiles * soc.scalar_cycles_per_tile;
  }

  // The busiest core's time: its `waves` blocks, the slowest ones first.
  const std::array<int, 4> by_time = StableOrder(
      kinds, [](const BlockKind& x, const BlockKind& y) { return x.cycles > y.cycles; });
  KernelEstimate est;
  double cycles = 0;
  for (int64_t i = 0, left = waves; i < 4 && left > 0; ++i) {
    const BlockKind& b = kinds[static_cast<size_t>(by_time[static_cast<size_t>(i)])];
    const int64_t take = std::min(left, b.count);
    left -= take;
    cycles += static_cast<double>(take) * b.cycles;
    for (size_t pipe = 0; pipe < b.busy.size(); ++pipe) {
      est.busy_us[pipe] += static_cast<double>(take) * b.busy[pipe];
    }
  }
  for (double& busy : est.busy_us) busy /= cycles_per_us;

  // Whatever the pipes say, HBM has to move every byte it serves.
  const double hbm_floor_us = hbm_bytes / (soc.hbm_bandwidth_gbps * 1e3);
  est.duration_us = std::max(cycles / cycles_per_us, hbm_floor_us);
  est.launch_us = soc.kernel_launch_us;
  est.latency_us = est.launch_us + est.duration_us;
  est.block_dim = cores;
  est.hbm_bytes = hbm_bytes;
  est.l2_bytes = std::max(0.0, total_raw_reads - miss_reads - bias_total);
  est.compulsory_bytes = batch * (walk.a_total + walk.b_total + walk.c_total) + bias_total;
  est.flops = 2.0 * m * n * k * batch;
  est.compute_roof_flops = soc.CubePeakFlops() * static_cast<double>(cube_k0) / soc.cube_k_size;
  if (plan) {
    plan->cores = cores;
    plan->waves = waves;
    plan->pipe = walk_costs;
    for (size_t i = 0; i < kinds.size(); ++i) {
      const BlockKind& b = kinds[static_cast<size_t>(by_time[i])];
      CubeBlockPlan& out = plan->kinds[i];
      out.count = b.count;
      out.tiles = b.tiles;
      out.mte2_cycles = b.mte2_eq * mte2_tau;
      out.first_chunk_cycles = b.first_chunk_eq * mte2_tau;
      out.fix_tile_cycles = b.tiles > 0 ? b.fix_eq * fix_tau / static_cast<double>(b.tiles) : 0;
      out.fast_cycles = b.cycles;
    }
    plan->hbm_floor_us = hbm_floor_us;
    plan->estimate = est;
  }
  return est;
}

}  // namespace tunefleet::sim
