// Bottleneck analysis of a profile, "three horizontals, three verticals" (DESIGN.md step
// 3): compute / memory / communication x host / device / device-to-device, with the seed's
// rules (AI Core utilisation < 70%: compute idle; memory bandwidth utilisation > 80%:
// bandwidth-bound; HCCL share of step time; msprof's per-op memory_bound), the top-10 ops
// and concrete next steps (fuse, tune). Reads a profile folder or a profiler_data.csv
// alone; pure functions over the loaded values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tunefleet/common/status.h"

namespace tunefleet::profile {

// Thresholds of the rules; the first two are the seed's (DESIGN.md step 3).
inline constexpr double kComputeIdleBelow = 0.70;      // AI Core utilisation
inline constexpr double kBandwidthBoundAbove = 0.80;   // memory bandwidth utilisation
// msprof's reading of memory_bound: above 1 the op waits on MTE2 more than it computes.
inline constexpr double kMemoryBoundAbove = 1.0;
// tunefleet's own: a share of the step worth acting on, and "far from roofline".
inline constexpr double kSignificantShare = 0.10;
inline constexpr double kFarFromRoofline = 1.5;        // duration / roofline

// One row of a profile: from op_summary.csv (detailed) or profiler_data.csv (name,
// duration and unit only).
struct ProfileRow {
  std::string name, op_type, task_type, unit;
  double start_us = 0, duration_us = 0, launch_us = 0;
  double block_dim = 0, unit_cores = 0;
  double mac_ratio = 0, vec_ratio = 0, mte2_ratio = 0;
  double hbm_bytes = 0, roofline_us = 0;
  double MemoryBound() const;
};

struct LoadedProfile {
  std::string source;
  bool detailed = false;                // op_summary.csv (+ run_summary.json)
  std::vector<ProfileRow> rows;         // kernels, and for profiler_data.csv every unit
  std::optional<nlohmann::json> summary;  // run_summary.json when present
};

// `path` is a folder with op_summary.csv (and run_summary.json beside it) or a
// profiler_data.csv. kNotFound when neither is there; kInvalidArgument naming the file,
// line and column when a file is malformed.
Result<LoadedProfile> LoadProfile(const std::string& path);
Result<LoadedProfile> ParseProfilerDataCsv(const std::string& text, const std::string& source);
Result<LoadedProfile> ParseOpSummaryCsv(const std::string& text, const std::string& source);

struct GridCell {
  std::string horizontal;  // compute | memory | communication
  std::string vertical;    // host | device | device-to-device
  std::string metric;
  std::optional<double> value;  // absent when the input cannot tell
  bool flagged = false;
  std::string verdict;
};

struct NextStep {
  std::string kind;  // "fuse" | "tune" | "overlap" | "host"
  std::vector<std::string> ops;
  std::string reason;
  double estimated_saving_us = 0;
};

struct Analysis {
  std::string source;
  bool detailed = false;
  bool has_summary = false;  // step and utilisations from run_summary.json
  double step_us = 0;
  std::vector<GridCell> grid;  // 9 cells, horizontals x verticals
  std::vector<std::pair<std::string, double>> top_ops;  // by total duration, at most 10
  std::vector<std::pair<std::string, double>> memory_bound_ops;  // memory_bound > 1
  std::vector<NextStep> next_steps;
  nlohmann::json ToJson() const;
  std::string ToText() const;
  const GridCell* Cell(const std::string& horizontal, const std::string& vertical) const;
};

Analysis Analyze(const LoadedProfile& profile);

}  // namespace tunefleet::profile
