// The cube pipeline's per-block recurrence (NPU_MODEL.md "Pipes and timing"), written
// once: one L1 block's base tiles walked L1 chunk by L1 chunk through MTE2 -> MTE1 ->
// CUBE -> FIXPIPE, SCALAR issuing, with the L1/L0 ping-pong buffers. The event
// simulation (event_sim.cc) walks it with a recorder that keeps every interval; the fast
// path (matmul_model.cc) walks it with NoCubeRecorder, which also lets it jump over the
// periods the walk repeats. Private to worker/sim/; pure functions, any thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// One L1 block's per-step costs (cycles) and buffering, the same for every block of a
// launch. Per K step j of base tile i: SCALAR issues it (ahead of the pipes: its queues
// are not bounded), MTE1 moves A to L0A and B to L0B (the ping-ponged operand first, so
// it can overlap the running MMAD), CUBE runs the fractals; MTE2 loads an L1 chunk of
// `skm` K steps into L1 buffer (chunk mod 2), free once MTE1 read chunk - 2; FIXPIPE
// drains L0C after a tile's last step, and a tile's first MMAD waits for its L0C buffer.
struct CubePipe {
  int64_t kt = 0, skm = 1, cpt = 1, rem = 0;  // K steps, steps a chunk, chunks a tile, K remainder
  double cube = 0, mte1_a = 0, mte1_b = 0, iteration = 0, tile_setup = 0;
  bool db_a = false, db_b = false, db_c = false;  // L0A / L0B / L0C ping-ponged
};

// A tile of kt K steps in L1 chunks of step_k_min (>= 1) steps: its K remainder, if any,
// is its first chunk.
inline CubePipe MakeCubePipe(int64_t kt, int64_t step_k_min) {
  CubePipe p;
  p.kt = kt;
  p.skm = step_k_min;
  p.cpt = (kt + step_k_min - 1) / step_k_min;
  p.rem = kt % step_k_min;
  return p;
}

// The recorder of a walk that keeps nothing: the fast path's. A recorder's Add(pipe,
// start, end, tile, label) is told every busy stretch in each pipe's order; a recorder
// with kRecords must see every tile, so the walk never jumps with one.
struct NoCubeRecorder {
  static constexpr bool kRecords = false;
  void Add(Pipe, double, double, int64_t, std::string_view) {}
};

namespace cube_recurrence {

// The walk is a max-plus recurrence whose costs repeat: every pair of a tile's whole L1
// chunks after its first (the two L1 buffers alternate), and every tile after the first
// (every pair of tiles when a tile has an odd number of chunks). Such a map is monotone
// and commutes with adding a constant to every time, so it never widens a difference
// between two states: once a period moved the state by a common shift lambda up to a
// spread e, every later period moves it by lambda up to e as well (the recurrence
// becomes periodic after a short transient; max-plus algebra's cyclicity theorem). The
// fast path then jumps over the remaining whole periods, which costs at most R*e/2 for
// R periods (plus R times what jumps inside the period cost), and only while the sum of
// those bounds stays below kJumpTolerance of the time. SCALAR issues on its own clock:
// while it paces MTE1 it must shift with the rest; once it is ahead of MTE1 and MTE2
// through a whole period and its own period is no longer than the others' least shift,
// it stays ahead, so it is left out and advanced exactly.
inline constexpr double kJumpTolerance = 1e-5;

// When each pipe and buffer is free, between two chunks. The first kChunkVars move in a
// tile's K loop, the first kTileVars from tile to tile (FIXPIPE drains after the loop).
enum Var { kMte2, kRel0, kRel1, kMte1, kCe1, kCe2, kFe1, kFe2, kSf, kVarCount };
inline constexpr int kChunkVars = kCe2 + 1;
inline constexpr int kTileVars = kFe2 + 1;
// kMte2: the last chunk loaded (MTE2 free); kRel0/1: MTE1 done with the chunk L1 buffer
// 0/1 held; kCe1/2: MMAD end of the last two K steps; kFe1/2: FIXPIPE end of the last
// two tiles; kSf: SCALAR free.
using PipeState = std::array<double, kVarCount>;

// One L1 chunk of `steps` K steps of base tile `tile` loaded into buffer `parity` at
// `cost` MTE2 cycles; kTileStart: the tile's first chunk (tile setup, the wait for an
// L0C buffer). Returns how far MTE1 or MTE2 was ahead of SCALAR at the least (negative:
// SCALAR paced MTE1). kDbA/kDbB/kDbC: L0A/L0B/L0C ping-ponged (instantiated per
// combination: the fast path's inner loop is branch-free).
template <bool kTileStart, bool kDbA, bool kDbB, bool kDbC, typename Recorder>
[[gnu::always_inline]] inline double RunChunk(const CubePipe& p, PipeState& s, int64_t parity,
                                              double cost, int64_t steps, int64_t tile,
                                              Recorder& rec) {
  const double cube = p.cube, ma = p.mte1_a, mb = p.mte1_b, iteration = p.iteration;
  constexpr bool b_first = kDbB && !kDbA;  // the ping-ponged operand moves first
  const double mte2_start = std::max(s[kMte2], s[kRel0 + parity]);
  const double mte2 = mte2_start + cost;
  rec.Add(Pipe::kMte2, mte2_start, mte2, tile, "MTE2 A+B chunk");
  double mte1 = s[kMte1], ce1 = s[kCe1], ce2 = s[kCe2], sf = s[kSf];
  double margin = 1e300;
  for (int64_t j = 0; j < steps; ++j) {
    double issue = sf;
    if (kTileStart && j == 0) {
      rec.Add(Pipe::kScalar, issue, issue + p.tile_setup, tile, "tile setup");
      issue += p.tile_setup;
    }
    const double s_end = issue + iteration;
    rec.Add(Pipe::kScalar, issue, s_end, tile, "iteration");
    sf = s_end;
    const double loaded = std::max(mte1, mte2);
    margin = std::min(margin, loaded - s_end);
    const double ready = std::max(loaded, s_end);
    const double a_free = kDbA ? ce2 : ce1;
    const double b_free = kDbB ? ce2 : ce1;
    // MTE1 moves both operands in turn, each once its L0 buffer is free.
    auto load = [&](double after, double free, double move, const char* label) {
      const double start = std::max(after, free);
      rec.Add(Pipe::kMte1, start, start + move, tile, label);
      return start + move;
    };
    double a_end = 0, b_end = 0;
    if constexpr (b_first) {
      b_end = load(ready, b_free, mb, "L1->L0B");
      a_end = load(b_end, a_free, ma, "L1->L0A");
      mte1 = a_end;
    } else {
      a_end = load(ready, a_free, ma, "L1->L0A");
      b_end = load(a_end, b_free, mb, "L1->L0B");
      mte1 = b_end;
    }
    double start = std::max({ce1, a_end, b_end});
    if (kTileStart && j == 0) start = std::max(start, kDbC ? s[kFe2] : s[kFe1]);
    ce2 = ce1;
    ce1 = start + cube;
    rec.Add(Pipe::kCube, start, ce1, tile, "MMAD");
  }
  s[kMte2] = mte2;
  s[kRel0 + parity] = mte1;
  s[kMte1] = mte1;
  s[kCe1] = ce1;
  s[kCe2] = ce2;
  s[kSf] = sf;
  return margin;
}

// FIXPIPE drains base tile `tile`'s L0C after its last MMAD.
template <typename Recorder>
[[gnu::always_inline]] inline void DrainTile(PipeState& s, double fix_tile, int64_t tile,
                                             Recorder& rec) {
  const double start = std::max(s[kFe1], s[kCe1]);
  const double end = start + fix_tile;
  rec.Add(Pipe::kFixpipe, start, end, tile, "L0C->GM");
  s[kFe2] = s[kFe1];
  s[kFe1] = end;
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

// One block of `tiles` base tiles (numbered from tile_base) started at t0 on an idle
// core: when its last pipe is done. `mte2_total`: the block's whole MTE2 time, of which
// the first chunk pair carries the fill `first_chunk` and the other chunks the rest by
// their K steps; `fix_tile`: one tile's FIXPIPE time. Without a recording Recorder the
// walk jumps over repeating periods (error below kJumpTolerance of the time).
template <bool kDbA, bool kDbB, bool kDbC, typename Recorder>
double WalkBlock(const CubePipe& p, int64_t tiles, double mte2_total, double first_chunk,
                 double fix_tile, double t0, int64_t tile_base, Recorder& rec) {
  constexpr bool kJumps = !Recorder::kRecords;
  const int64_t n_chunks = tiles * p.cpt;
  const int64_t first_steps = p.rem > 0 ? p.rem : p.skm;
  const double steps = static_cast<double>(tiles * p.kt);
  const double first_cost = n_chunks == 1 ? mte2_total : std::min(first_chunk, mte2_total);
  const double rest_per_step =
      n_chunks == 1 ? 0 : (mte2_total - first_cost) / (steps - static_cast<double>(first_steps));
  const double chunk_cost = rest_per_step * static_cast<double>(p.skm);
  const double tile_first_cost = rest_per_step * static_cast<double>(first_steps);
  const int64_t tile_period = p.cpt % 2 == 0 ? 1 : 2;
  const bool chunk_jumps = kJumps && p.cpt >= 5;  // else no whole pair is left to jump over

  PipeState s;
  s.fill(t0);
  double error = 0;
  [[maybe_unused]] PipeState tile_hist[3];  // after the last three tiles, by count done % 3
  [[maybe_unused]] double tile_margin[3] = {0, 0, 0};
  [[maybe_unused]] double tile_error[3] = {0, 0, 0};  // `error` after them
  for (int64_t k = 0; k < tiles; ++k) {
    const int64_t tile = tile_base + k;
    const int64_t c0 = k * p.cpt;  // the tile's first chunk in the block
    double margin = RunChunk<true, kDbA, kDbB, kDbC>(
        p, s, c0 & 1, c0 == 0 ? first_cost : tile_first_cost, first_steps, tile, rec);
    // The tile's whole chunks, in pairs once they repeat: each even chunk's state is
    // compared with the one two chunks before (same L1 buffer parity).
    PipeState pair_start = s;
    double pair_margin = 1e300;
    for (int64_t ch = 1; ch < p.cpt; ++ch) {
      const double m =
          RunChunk<false, kDbA, kDbB, kDbC>(p, s, (c0 + ch) & 1, chunk_cost, p.skm, tile, rec);
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
    DrainTile(s, fix_tile, tile, rec);
    if constexpr (kJumps) {
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
  }
  return std::max({s[kFe1], s[kCe1], s[kMte2], s[kSf], s[kMte1]});
}

}  // namespace cube_recurrence

// cube_recurrence::WalkBlock for p's buffering (one instance per combination).
template <typename Recorder>
double WalkCubeBlock(const CubePipe& p, int64_t tiles, double mte2_total, double first_chunk,
                     double fix_tile, double t0, int64_t tile_base, Recorder& rec) {
  using cube_recurrence::WalkBlock;
  using Walk = double (*)(const CubePipe&, int64_t, double, double, double, double, int64_t,
                          Recorder&);
  static constexpr Walk kWalks[8] = {
      WalkBlock<false, false, false, Recorder>, WalkBlock<false, false, true, Recorder>,
      WalkBlock<false, true, false, Recorder>,  WalkBlock<false, true, true, Recorder>,
      WalkBlock<true, false, false, Recorder>,  WalkBlock<true, false, true, Recorder>,
      WalkBlock<true, true, false, Recorder>,   WalkBlock<true, true, true, Recorder>};
  return kWalks[(p.db_a ? 4 : 0) + (p.db_b ? 2 : 0) + (p.db_c ? 1 : 0)](
      p, tiles, mte2_total, first_chunk, fix_tile, t0, tile_base, rec);
}

}  // namespace tunefleet::sim
