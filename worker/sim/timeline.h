// Timeline: what the event simulation (event_sim.h) recorded of one kernel launch, the
// per-core per-pipe tile intervals `msprof op simulator` shows. Shaped for a Chrome
// trace exporter: one process per core (CoreTimeline::core_ids), one thread per pipe
// (Pipe). Plain copyable value with no dependencies beyond the Pipe enum, so any
// exporter can include it cheaply; labels point at static strings.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "worker/sim/kernel_estimate.h"

namespace tunefleet::sim {

// One busy stretch of one pipe. Times are us from the start of the kernel on the device
// (after the launch overhead), start <= end.
struct TimelineInterval {
  double start_us = 0;
  double end_us = 0;
  int64_t tile = 0;         // tile id on its core: the cube's base tile, the vector tile
  std::string_view label;   // what the pipe does ("MTE2 A+B chunk", "MMAD", "vec"): static
};

// The pipes of one or more identical cores. Cores that run the same sequence of work
// are simulated once: `core_ids` lists every core the intervals stand for.
struct CoreTimeline {
  std::vector<int64_t> core_ids;
  std::array<std::vector<TimelineInterval>, kPipeCount> pipes;  // indexed by Pipe

  const std::vector<TimelineInterval>& Of(Pipe pipe) const {
    return pipes[static_cast<size_t>(pipe)];
  }
  double BusyUs(Pipe pipe) const {
    double busy = 0;
    for (const TimelineInterval& i : Of(pipe)) busy += i.end_us - i.start_us;
    return busy;
  }
  // The walks record cycles: each interval's times scaled to us.
  void ScaleTimes(double us_per_cycle) {
    for (auto& pipe : pipes) {
      for (TimelineInterval& i : pipe) {
        i.start_us *= us_per_cycle;
        i.end_us *= us_per_cycle;
      }
    }
  }
  double EndUs() const {
    double end = 0;
    for (const auto& pipe : pipes) {
      if (!pipe.empty() && pipe.back().end_us > end) end = pipe.back().end_us;
    }
    return end;
  }
};

struct Timeline {
  double launch_us = 0;      // kernel launch overhead before device time 0
  double duration_us = 0;    // device time: the critical core's end (or the HBM floor)
  int64_t critical = 0;      // index into `cores` of the core group that ends last
  std::vector<CoreTimeline> cores;
};

}  // namespace tunefleet::sim
