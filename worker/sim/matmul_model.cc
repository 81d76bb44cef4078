#include "worker/sim/matmul_model.h"

#include "worker/sim/cube_model_impl.h"

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
// The cube accumulates and FIXPIPE writes fp32 (NPU_MODEL.md "Calibration": fp32 out).
constexpr int64_t kOutBytes = 4;
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

// One L1 block's pipeline (NPU_MODEL.md "Pipes and timing"), walked as the event
// simulation's SimulateCubeBlock walks it (event_sim.cc, the reference semantics) but
// without recording, and with a shortcut. The walk is a max-plus recurrence whose
// costs repeat: every pair of a tile's whole L1 chunks after its first (the two L1
// buffers alternate), and every tile after the first (every pair of tiles when a tile
// has an odd number of chunks). Such a map is monotone and commutes with adding a
// constant to every time, so it never widens a difference between two states: once a
// period moved the state by a common shift lambda up to a spread e, every later period
// moves it by lambda up to e as well (the recurrence becomes periodic after a short
// transient; max-plus algebra's cyclicity theorem). The walk then jumps over the
// remaining whole periods, which costs at most R*e/2 for R periods (plus R times what
// jumps inside the period cost), and only while the sum of those bounds stays below
// kJumpTolerance of the time. SCALAR issues on its own
// clock: while it paces MTE1 it must shift with the rest; once it is ahead of MTE1 and
// MTE2 through a whole period and its own period is no longer than the others' least
// shift, it stays ahead, so it is left out and advanced exactly.
constexpr double kJumpTolerance = 1e-5;

struct CubePipe {
  int64_t kt = 0, skm = 1, cpt = 1, rem = 0;  // K steps, steps a chunk, chunks a tile, K remainder
  double cube = 0, mte1_a = 0, mte1_b = 0, iteration = 0, tile_setup = 0;
  bool db_a = false, db_b = false, db_c = false;
};

// When each pipe and buffer is free, between two chunks. The first kChunkVars move in a
// tile's K loop, the first kTileVars from tile to tile (FIXPIPE drains after the loop).
enum Var { kMte2, kRel0, kRel1, kMte1, kCe1, kCe2, kFe1, kFe2, kSf, kVarCount };
constexpr int kChunkVars = kCe2 + 1;
constexpr int kTileVars = kFe2 + 1;
// kMte2: the last chunk loaded (MTE2 free); kRel0/1: MTE1 done with the chunk L1 buffer
// 0/1 held; kCe1/2: MMAD end of the last two K steps; kFe1/2: FIXPIPE end of the last
// two tiles; kSf: SCALAR free.
using PipeState = std::array<double, kVarCount>;

// One L1 chunk of `steps` K steps loaded into buffer `parity` at `cost` MTE2 cycles;
// kTileStart: the tile's first chunk (tile setup, the wait for an L0C buffer). Returns
// how far MTE1 or MTE2 was ahead of SCALAR at the least (negative: SCALAR paced MTE1).
// kDbA/kDbB/kDbC: L0A/L0B/L0C ping-ponged (the walk is instantiated per combination).
template <bool kTileStart, bool kDbA, bool kDbB, bool kDbC>
[[gnu::always_inline]] inline double RunChunk(const CubePipe& p, PipeState& s, int64_t parity,
                                              double cost, int64_t steps) {
  const double cube = p.cube, ma = p.mte1_a, mb = p.mte1_b, iteration = p.iteration;
  constexpr bool db_a = kDbA, db_b = kDbB;
  constexpr bool b_first = kDbB && !kDbA;  // the ping-ponged operand moves first
  double mte2 = std::max(s[kMte2], s[kRel0 + parity]) + cost;
  double mte1 = s[kMte1], ce1 = s[kCe1], ce2 = s[kCe2], sf = s[kSf];
  double margin = 1e300;
  for (int64_t j = 0; j < steps; ++j) {
    const double s_end = (kTileStart && j == 0 ? sf + p.tile_setup : sf) + iteration;
    sf = s_end;
    const double loaded = std::max(mte1, mte2);
    margin = std::min(margin, loaded - s_end);
    const double ready = std::max(loaded, s_end);
    const double a_free = db_a ? ce2 : ce1;
    const double b_free = db_b ? ce2 : ce1;
    double a_end = 0, b_end = 0;
    if constexpr (b_first) {
      b_end = std::max(ready, b_free) + mb;
      a_end = std::max(b_end, a_free) + ma;
      mte1 = a_end;
    } else {
      a_end = std::max(ready, a_free) + ma;
      b_end = std::max(a_end, b_free) + mb;
      mte1 = b_end;
    }
    double start = std::max({ce1, a_end, b_end});
    if (kTileStart && j == 0) start = std::max(start, kDbC ? s[kFe2] : s[kFe1]);
    ce2 = ce1;
    ce1 = start + cube;
  }
  s[kMte2] = mte2;
  s[kRel0 + parity] = mte1;
  s[kMte1] = mte1;
  s[kCe1] = ce1;
  s[kCe2] = ce2;
  s[kSf] = sf;
  return margin;
}

// Whether one period took the state from `before` to `s` by a common shift closely
// enough to jump `periods` more periods (of the first kVars times; a time the block
// never reads again — kCe2 with single L0A/L0B, kFe2 with a single L0C — does not
// count); if so, jumps `s` and adds the bound to `error`. `margin`: SCALAR's least lead
// over the period (RunChunk); `period_error`: the bound booked by jumps inside the
// period, which every jumped period may repeat.
template <int kVars, bool kDbA, bool kDbB, bool kDbC>
bool TryJump(PipeState& s, const PipeState& before, double margin, int64_t periods,
             double period_error, double& error) {
  const double r = static_cast<double>(periods);
  // The spread allowed.
  const double budget = (kJumpTolerance * s[kCe1] - error) * 2 / r - 2 * period_error;
  double lo = s[kMte2] - before[kMte2], hi = lo;
  for (int v = kRel0; v < kVars; ++v) {
    if ((v == kCe2 && !kDbA && !kDbB) || (v == kFe2 && !kDbC)) continue;
    const double d = s[v] - before[v];
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    if (hi - lo > budget) return false;
  }
  const double d_sf = s[kSf] - before[kSf];
  if (margin < 0 || d_sf > lo) {  // SCALAR paces, or may catch up: it must shift too
    lo = std::min(lo, d_sf);
    hi = std::max(hi, d_sf);
    if (hi - lo > budget) return false;
  }
  error += r * ((hi - lo) / 2 + period_error);
  const double jump = r * (lo + hi) / 2;
  for (int v = 0; v < kVars; ++v) s[v] += jump;
  s[kSf] += r * d_sf;
  return true;
}

// The block's time on its core, from 0 until its last pipe is done: what
// SimulateCubeBlock returns for the same costs (BlockCycles picks the instance).
template <bool kDbA, bool kDbB, bool kDbC>
double WalkBlock(const CubePipe& p, int64_t tiles, double mte2_total, double first_chunk,
                 double fix_tile) {
  const int64_t n_chunks = tiles * p.cpt;
  const int64_t first_steps = p.rem > 0 ? p.rem : p.skm;
  const double steps = static_cast<double>(tiles * p.kt);
  // The first chunk pair carries the fill; the rest of the block's MTE2 time is spread
  // over the other chunks by their K steps (as event_sim.cc charges it).
  const double first_cost = n_chunks == 1 ? mte2_total : std::min(first_chunk, mte2_total);
  const double rest_per_step =
      n_chunks == 1 ? 0 : (mte2_total - first_cost) / (steps - static_cast<double>(first_steps));
  const double chunk_cost = rest_per_step * static_cast<double>(p.skm);
  const double tile_first_cost = rest_per_step * static_cast<double>(first_steps);
  const int64_t tile_period = p.cpt % 2 == 0 ? 1 : 2;
  const bool chunk_jumps = p.cpt >= 5;  // else no whole pair is left to jump over

  PipeState s{};
  double error = 0;
  PipeState tile_hist[3];  // after the last three tiles, by count done % 3
  double tile_margin[3] = {0, 0, 0};
  double tile_error[3] = {0, 0, 0};  // `error` after them
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t c0 = k * p.cpt;  // the tile's first chunk in the block
    double margin = RunChunk<true, kDbA, kDbB, kDbC>(
        p, s, c0 & 1, c0 == 0 ? first_cost : tile_first_cost, first_steps);
    // The tile's whole chunks, in pairs once they repeat: each even chunk's state is
    // compared with the one two chunks before (same L1 buffer parity).
    PipeState pair_start = s;
    double pair_margin = 1e300;
    for (int64_t ch = 1; ch < p.cpt; ++ch) {
      const double m = RunChunk<false, kDbA, kDbB, kDbC>(p, s, (c0 + ch) & 1, chunk_cost, p.skm);
      margin = std::min(margin, m);
      if (!chunk_jumps) continue;
      pair_margin = std::min(pair_margin, m);
      if (ch % 2 != 0) continue;
      const int64_t pairs = (p.cpt - 1 - ch) / 2;
      if (pairs > 0 &&
          TryJump<kChunkVars, kDbA, kDbB, kDbC>(s, pair_start, pair_margin, pairs, 0, error)) {
        ch += 2 * pairs;
      }
      pair_start = s;
      pair_margin = 1e300;
    }
    // FIXPIPE drains the tile's L0C.
    s[kFe2] = s[kFe1];
    s[kFe1] = std::max(s[kFe1], s[kCe1]) + fix_tile;
    const int64_t done = k + 1;
    tile_hist[done % 3] = s;
    tile_margin[done % 3] = margin;
    tile_error[done % 3] = error;
    const int64_t periods = (tiles - done) / tile_period;
    if (done - tile_period >= 1 && periods > 0) {
      const int64_t before = (done - tile_period) % 3;
      const double period_margin =
          tile_period == 1 ? margin : std::min(margin, tile_margin[(done - 1) % 3]);
      if (TryJump<kTileVars, kDbA, kDbB, kDbC>(s, tile_hist[before], period_margin, periods,
                                               error - tile_error[before], error)) {
        k += periods * tile_period;
      }
    }
  }
  return std::max({s[kFe1], s[kCe1], s[kMte2], s[kSf], s[kMte1]});
}

double BlockCycles(const CubePipe& p, int64_t tiles, double mte2_total, double first_chunk,
                   double fix_tile) {
  using Walk = double (*)(const CubePipe&, int64_t, double, double, double);
  static constexpr Walk kWalks[8] = {
      WalkBlock<false, false, false>, WalkBlock<false, false, true>, WalkBlock<false, true, false>,
      WalkBlock<false, true, true>,   WalkBlock<true, false, false>, WalkBlock<true, false, true>,
      WalkBlock<true, true, false>,   WalkBlock<true, true, true>};
  return kWalks[(p.db_a ? 4 : 0) + (p.db_b ? 2 : 0) + (p.db_c ? 1 : 0)](p, tiles, mte2_total,
                                                                         first_chunk, fix_tile);
}

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
  const bool c_misaligned = Misaligned(shape.n * kOutBytes, soc);

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
      b.fix_eq = TransferEq(rows * cols * kOutBytes, rows * static_cast<double>(b.tiles_n),
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
  walk.c_total = m * n * kOutBytes;
  walk.a_panel =
      a_side ? a_side->panel : static_cast<double>(std::min(shape.m, block_rows)) * k * in;
  walk.b_panel = k * static_cast<double>(std::min(shape.n, block_cols)) * in;
  walk.c_block =
      static_cast<double>(std::min(shape.m, block_rows) * std::min(shape.n, block_cols)) *
      kOutBytes;
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

  // Each kind's time on its core: the block's pipeline recurrence (BlockCycles) over
  // L1 chunks of step_k_min K steps in two buffers.
  const int64_t step_k_min = std::min({t.step_ka, t.step_kb, kt});
  CubePipe walk_costs;
  walk_costs.kt = kt;
  walk_costs.skm = step_k_min;
  walk_costs.cpt = CeilDiv(kt, step_k_min);
  walk_costs.rem = kt % step_k_min;  // a tile's K remainder is its first chunk
  walk_costs.cube = cube_step;
  walk_costs.mte1_a = mte1_a;
  walk_costs.mte1_b = mte1_b;
  walk_costs.iteration = soc.scalar_cycles_per_iteration;
  walk_costs.tile_setup = soc.scalar_cycles_per_tile;
  walk_costs.db_a = t.db_l0a;
  walk_costs.db_b = t.db_l0b;
  walk_costs.db_c = t.db_l0c;
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
        b.cycles = BlockCycles(walk_costs, b.tiles, b.mte2_eq * mte2_tau,
                               b.first_chunk_eq * mte2_tau, fix_tile);
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
    plan->kt = kt;
    plan->step_k_min = static_cast<int64_t>(step_k_min);
    plan->cube_step = cube_step;
    plan->mte1_a = mte1_a;
    plan->mte1_b = mte1_b;
    plan->scalar_iteration = soc.scalar_cycles_per_iteration;
    plan->scalar_tile = soc.scalar_cycles_per_tile;
    plan->db_l0a = t.db_l0a;
    plan->db_l0b = t.db_l0b;
    plan->db_l0c = t.db_l0c;
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
