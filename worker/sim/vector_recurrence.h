// The vector pipeline's per-core recurrence (NPU_MODEL.md "Pipes and timing"), written
// once: a vector core's tiles walked through SCALAR -> MTE2 -> VECTOR -> MTE3 with the
// UB ping-pong buffers and the core's HBM share as a fluid budget. The event simulation
// (event_sim.cc) walks it with a recorder that keeps every interval; the fast path
// (vector_model.cc) walks it with NoVectorRecorder when the launch ends in a partial
// wave, where its closed form does not hold. Private to worker/sim/; pure functions,
// any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "worker/sim/kernel_estimate.h"
#include "worker/sim/vector_model_impl.h"

namespace tunefleet::sim {

struct NoVectorRecorder {
  void Add(Pipe, double, double, int64_t, std::string_view) {}
};

// One vector core's tiles: SCALAR issues, MTE2 loads into input buffer (t mod
// bufferNum), VECTOR computes into output buffer (t mod bufferNum), MTE3 writes back.
// With bufferNum 1 a tile starts after the previous one left (the serial sum). Each
// transfer is stretched by the core's HBM share (in the stage costs); when MTE2 and
// MTE3 stream at once they split that share, so a tile's write-back also waits until
// the share has delivered the bytes of every tile so far. A core that runs per_core
// items runs its last `p.last_tiles` tiles (the tail of the last kind) alone with the
// other such cores, at the larger share of `p.last`.
template <typename Recorder>
double WalkVectorCore(const VectorPlan& p, int64_t items, Recorder& rec) {
  const bool busiest = items == p.per_core;
  const double t0 = p.prologue;
  rec.Add(Pipe::kMte2, 0, p.prologue, -1, "MTE2 gamma/beta");
  double scalar_free = t0, mte2_free = t0, vec_free = t0, mte3_free = t0;
  double hbm_done = t0;  // when the core's HBM share has delivered every tile so far
  double vec_end[2] = {t0, t0}, mte3_end[2] = {t0, t0};  // of tiles t-2 (index t%2) and t-1
  double prev_end = t0;
  int64_t tile = 0;
  auto run_tile = [&](const VectorTilePlan& k) {
    const int slot = static_cast<int>(tile % 2);
    double s = scalar_free;
    if (!p.ping_pong) s = std::max(s, prev_end);
    const double s_end = s + k.scalar;
    rec.Add(Pipe::kScalar, s, s_end, tile, "issue");
    scalar_free = s_end;

    double end = s_end;
    if (k.mte2 > 0) {
      const double start = std::max({s_end, mte2_free, p.ping_pong ? vec_end[slot] : 0.0});
      // The core's HBM share is a fluid budget: it starts serving the tile's bytes
      // (both directions) once the load's first byte is due, after the previous tile's.
      hbm_done = std::max(hbm_done, start + k.mte2_latency) + k.read_hbm_cycles + k.write_hbm_cycles;
      end = start + k.mte2;
      rec.Add(Pipe::kMte2, start, end, tile, "MTE2 GM->UB");
      mte2_free = end;
    }
    if (k.vec > 0) {
      const double start = std::max({end, vec_free, p.ping_pong ? mte3_end[slot] : 0.0});
      end = start + k.vec;
      rec.Add(Pipe::kVector, start, end, tile, "vec");
      vec_free = end;
    }
    vec_end[slot] = end;
    if (k.mte3 > 0) {
      const double start = std::max(end, mte3_free);
      end = std::max(start + k.mte3, hbm_done);
      rec.Add(Pipe::kMte3, start, end, tile, "MTE3 UB->GM");
      mte3_free = end;
    }
    mte3_end[slot] = end;
    prev_end = end;
    ++tile;
  };
  if (p.split_rows) {
    // Each pass runs over all the core's rows (their statistics are a few scalars that
    // stay in UB), the statistics pass first.
    const int64_t n = items * p.chunks_per_row;
    for (int k = 0; k < p.n_kinds; ++k) {
      const bool last_kind = k == p.n_kinds - 1;
      for (int64_t c = 0; c < n; ++c) run_tile(busiest && last_kind && c >= n - p.last_tiles ? p.last[k] : p.kinds[k]);
    }
  } else {
    for (int64_t i = 0; i < items; ++i) run_tile(busiest && i >= items - p.last_tiles ? p.last[0] : p.kinds[0]);
  }
  return std::max({scalar_free, mte2_free, vec_free, mte3_free, prev_end});
}

}  // namespace tunefleet::sim
