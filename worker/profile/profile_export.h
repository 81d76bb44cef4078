// The profiler's exports of one RunProfile (docs/profiling.md "Files"): Chrome trace JSON
// (chrome://tracing, Perfetto), msprof-style op_summary.csv, the seed's profiler_data.csv
// (op_name,duration,unit) and run_summary.json, which `tunefleet analyze` reads beside
// op_summary.csv. Per-core per-pipe tile intervals of chosen ops (from the event
// simulation) can be added to the trace. Pure functions; writers report I/O errors.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tunefleet/common/status.h"
#include "worker/profile/graph_run.h"
#include "worker/sim/kernel_estimate.h"

namespace tunefleet::profile {

// One pipe's busy interval on one core, relative to its op's task start.
struct TileInterval {
  int core = 0;
  sim::Pipe pipe = sim::Pipe::kMte2;
  double start_us = 0;
  double duration_us = 0;
  std::string label;  // e.g. "tile 3 ping"
};

// The tile timeline of one op of the run (by OpRecord::name).
struct OpTileTimeline {
  std::string op_name;
  std::vector<TileInterval> intervals;
};

// "MTE2", "CUBE", ...: the thread name of a pipe in the trace.
std::string_view PipeName(sim::Pipe pipe);

// Chrome trace: pid 0 "Host" (preprocessing), pid 1 the NPU with one thread per stream, a
// PCIe H2D/D2H thread and an HCCL thread; the k-th tile timeline adds one process per
// core (pid 100 + 100k + core) with one thread per pipe. All "X" events in us; "M" names.
nlohmann::json ChromeTraceJson(const RunProfile& run, const std::vector<OpTileTimeline>& tiles = {});

// Column names of op_summary.csv: msprof's where msprof has the column, then tunefleet's.
const std::vector<std::string>& OpSummaryColumns();

Status WriteChromeTrace(const RunProfile& run, const std::string& path,
                        const std::vector<OpTileTimeline>& tiles = {});
Status WriteOpSummaryCsv(const RunProfile& run, const std::string& path);
// op_name,duration,unit: one row per kernel ("AI Core"), host step ("Host"), copy ("PCIe")
// and all-reduce ("HCCL"); durations in us.
Status WriteProfilerDataCsv(const RunProfile& run, const std::string& path);
nlohmann::json RunSummaryJson(const RunProfile& run);
// op_summary.csv, profiler_data.csv and run_summary.json into `dir` (created if missing).
Status WriteProfileDir(const RunProfile& run, const std::string& dir);

// A CSV field, quoted when it holds a comma, quote or newline.
std::string CsvField(const std::string& value);

}  // namespace tunefleet::profile
