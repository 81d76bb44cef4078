// Writers for the profiler's files: Chrome trace, op_summary.csv, profiler_data.csv and
// run_summary.json.
#include "worker/profile/profile_export.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/core.h>

namespace tunefleet::profile {
namespace {

using sim::Pipe;

constexpr int kHostPid = 0, kNpuPid = 1, kCorePidBase = 100;
constexpr int kPcieTid = 10, kHcclTid = 11;

nlohmann::json Meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"ts", 0}, {"args", {{"name", name}}}};
}

nlohmann::json Complete(const std::string& name, const std::string& cat, double ts, double dur, int pid, int tid,
                        nlohmann::json args = nlohmann::json::object()) {
  return {{"name", name}, {"cat", cat}, {"ph", "X"}, {"ts", ts}, {"dur", dur < 0 ? 0 : dur},
          {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Unavailable("cannot write '" + path + "': check the folder exists and is writable");
  out << text;
  out.close();
  if (!out) return Unavailable("writing '" + path + "' failed (disk full?)");
  return Status::Ok();
}

std::string Num(double v) { return fmt::format("{:.6g}", v); }
std::string Fixed(double v) { return fmt::format("{:.3f}", v); }

}  // namespace

std::string_view PipeName(Pipe pipe) {
  switch (pipe) {
    case Pipe::kMte2: return "MTE2";
    case Pipe::kMte1: return "MTE1";
    case Pipe::kCube: return "CUBE";
    case Pipe::kFixpipe: return "FIXPIPE";
    case Pipe::kScalar: return "SCALAR";
    case Pipe::kVector: return "VECTOR";
    case Pipe::kMte3: return "MTE3";
  }
  return "?";
}

std::string CsvField(const std::string& value) {
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json ChromeTraceJson(const RunProfile& run, const std::vector<OpTileTimeline>& tiles) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(Meta("process_name", kHostPid, 0, "Host"));
  events.push_back(Meta("thread_name", kHostPid, 0, "preprocess"));
  events.push_back(Meta("process_name", kNpuPid, 0, "NPU 0 (" + run.soc + ")"));
  int streams = 1;
  for (const auto& op : run.ops) streams = std::max(streams, op.stream + 1);
  for (int s = 0; s < streams; ++s) events.push_back(Meta("thread_name", kNpuPid, s, fmt::format("Stream {}", s)));
  events.push_back(Meta("thread_name", kNpuPid, kPcieTid, "PCIe H2D/D2H"));
  events.push_back(Meta("thread_name", kNpuPid, kHcclTid, "HCCL"));
  for (const auto& op : run.ops) {
    const auto& e = op.estimate;
    nlohmann::json args = {{"op_type", op.op_type}, {"task_type", op.task_type}, {"block_dim", e.block_dim},
                           {"launch_us", op.launch_us}, {"hbm_bytes", e.hbm_bytes}, {"l2_bytes", e.l2_bytes},
                           {"flops", e.flops}, {"roofline_us", op.roofline_us}, {"op_key", op.op_key}};
    for (int p = 0; p < sim::kPipeCount; ++p) {
      args[std::string(sim::PipeRatioName(static_cast<Pipe>(p)))] = e.Ratio(static_cast<Pipe>(p));
    }
    events.push_back(Complete(op.name, op.backward ? "backward" : "forward", op.start_us, op.duration_us, kNpuPid,
                              op.stream, std::move(args)));
  }
  for (const auto& tr : run.transfers) {
    int pid = tr.unit == "Host" ? kHostPid : kNpuPid;
    int tid = tr.unit == "Host" ? 0 : tr.unit == "HCCL" ? kHcclTid : kPcieTid;
    events.push_back(Complete(tr.name, tr.unit, tr.start_us, tr.duration_us, pid, tid, {{"bytes", tr.bytes}}));
  }
  // One process per core of each traced op (pid 100 + 100 * k + core for the k-th op), so
  // two ops' tile rows never share a thread even when their times touch.
  for (size_t k = 0; k < tiles.size(); ++k) {
    const OpTileTimeline& timeline = tiles[k];
    const OpRecord* op = nullptr;
    for (const auto& r : run.ops) {
      if (r.name == timeline.op_name) op = &r;
    }
    if (op == nullptr) continue;
    std::map<int, bool> core_named;
    for (const auto& iv : timeline.intervals) {
      const int pid = kCorePidBase + 100 * static_cast<int>(k) + iv.core;
      if (!core_named[pid]) {
        core_named[pid] = true;
        events.push_back(Meta("process_name", pid, 0, fmt::format("{}: core {}", op->name, iv.core)));
        for (int p = 0; p < sim::kPipeCount; ++p) {
          events.push_back(Meta("thread_name", pid, p, std::string(PipeName(static_cast<Pipe>(p)))));
        }
      }
      events.push_back(Complete(iv.label.empty() ? op->name : op->name + " " + iv.label, std::string(PipeName(iv.pipe)),
                                op->start_us + iv.start_us, iv.duration_us, pid, static_cast<int>(iv.pipe)));
    }
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"},
          {"otherData", {{"model", run.model}, {"soc", run.soc}, {"step_us", run.step_us}}}};
}

const std::vector<std::string>& OpSummaryColumns() {
  static const std::vector<std::string> kColumns = {
      // msprof op_summary names (CANN profiling, A2 parts).
      "Device_id", "Model Name", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type",
      "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim",
      "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
      "Output Formats", "aicore_time(us)", "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)",
      "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
      "aic_fixpipe_time(us)", "aic_fixpipe_ratio", "aiv_time(us)", "aiv_vec_time(us)", "aiv_vec_ratio",
      "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)", "aiv_mte2_ratio",
      "aiv_mte3_time(us)", "aiv_mte3_ratio",
      // tunefleet's (no msprof column): bytes, achieved rates, roofline, msprof's derived memory_bound.
      "HBM Bytes", "L2 Bytes", "Achieved Bandwidth(GB/s)", "FLOPs", "Achieved FLOP/s", "Roofline(us)",
      "memory_bound", "Launch(us)", "Unit Cores"};
  return kColumns;
}

Status WriteOpSummaryCsv(const RunProfile& run, const std::string& path) {
  std::string text;
  const auto& cols = OpSummaryColumns();
  for (size_t i = 0; i < cols.size(); ++i) text += (i ? "," : "") + CsvField(cols[i]);
  text += "\n";
  std::map<int, double> stream_free;
  int task_id = 0;
  for (const auto& op : run.ops) {
    const auto& e = op.estimate;
    const bool vector = op.task_type == "AI_VECTOR_CORE";
    double prev_end = stream_free.count(op.stream) ? stream_free[op.stream] : run.compute_start_us;
    stream_free[op.stream] = op.EndUs();
    auto busy = [&](Pipe p) { return Fixed(e.BusyUs(p)); };
    auto ratio = [&](Pipe p) { return Num(e.Ratio(p)); };
    std::vector<std::string> row = {
        "0", run.model, std::to_string(task_id++), std::to_string(op.stream), op.name, op.op_type, op.task_type,
        Fixed(op.start_us), Fixed(op.duration_us), Fixed(std::max(0.0, op.start_us - op.launch_us - prev_end)),
        std::to_string(e.block_dim), op.input_shapes, op.input_dtypes, op.input_formats, op.output_shapes,
        op.output_dtypes, op.output_formats};
    if (!vector) {
      row.insert(row.end(), {Fixed(op.duration_us), busy(Pipe::kCube), ratio(Pipe::kCube), busy(Pipe::kScalar),
                             ratio(Pipe::kScalar), busy(Pipe::kMte1), ratio(Pipe::kMte1), busy(Pipe::kMte2),
                             ratio(Pipe::kMte2), busy(Pipe::kFixpipe), ratio(Pipe::kFixpipe)});
      if (op.task_type == "MIX_AIC") {  // the fused epilogue's vector core (fused_model.h)
        row.insert(row.end(), {Fixed(op.duration_us), busy(Pipe::kVector), ratio(Pipe::kVector), "0", "0", "0", "0",
                               busy(Pipe::kMte3), ratio(Pipe::kMte3)});
      } else {
        row.insert(row.end(), {"0", "0", "0", "0", "0", "0", "0", "0", "0"});
      }
    } else {
      row.insert(row.end(), {"0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"});
      row.insert(row.end(), {Fixed(op.duration_us), busy(Pipe::kVector), ratio(Pipe::kVector), busy(Pipe::kScalar),
                             ratio(Pipe::kScalar), busy(Pipe::kMte2), ratio(Pipe::kMte2), busy(Pipe::kMte3),
                             ratio(Pipe::kMte3)});
    }
    double bw = op.duration_us > 0 ? e.hbm_bytes / (op.duration_us * 1e3) : 0;
    double flops_per_s = op.duration_us > 0 ? e.flops / (op.duration_us * 1e-6) : 0;
    row.insert(row.end(), {Num(e.hbm_bytes), Num(e.l2_bytes), Num(bw), Num(e.flops), Num(flops_per_s),
                           Fixed(op.roofline_us), Num(e.MemoryBound()), Fixed(op.launch_us),
                           std::to_string(op.unit_cores)});
    for (size_t i = 0; i < row.size(); ++i) text += (i ? "," : "") + CsvField(row[i]);
    text += "\n";
  }
  return WriteText(path, text);
}

Status WriteProfilerDataCsv(const RunProfile& run, const std::string& path) {
  std::string text = "op_name,duration,unit\n";
  for (const auto& op : run.ops) text += CsvField(op.name) + "," + Fixed(op.duration_us) + ",AI Core\n";
  for (const auto& tr : run.transfers) text += CsvField(tr.name) + "," + Fixed(tr.duration_us) + "," + tr.unit + "\n";
  return WriteText(path, text);
}

nlohmann::json RunSummaryJson(const RunProfile& run) {
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& e : run.edges) {
    edges.push_back({{"from", e.from}, {"to", e.to}, {"tensor", e.tensor}, {"bytes", e.bytes}, {"consumers", e.consumers}});
  }
  nlohmann::json transfers = nlohmann::json::array();
  for (const auto& t : run.transfers) {
    transfers.push_back({{"name", t.name}, {"unit", t.unit}, {"start_us", t.start_us}, {"duration_us", t.duration_us},
                         {"bytes", t.bytes}});
  }
  return {{"model", run.model},
          {"soc", run.soc},
          {"devices", run.devices},
          {"training", run.training},
          {"step_us", run.step_us},
          {"host_us", run.host_us},
          {"h2d_us", run.h2d_us},
          {"d2h_us", run.d2h_us},
          {"compute_start_us", run.compute_start_us},
          {"compute_end_us", run.compute_end_us},
          {"device_busy_us", run.device_busy_us},
          {"ai_core_utilisation", run.ai_core_utilisation},
          {"memory_bw_utilisation", run.memory_bw_utilisation},
          {"hbm_bytes", run.hbm_bytes},
          {"hbm_bandwidth_gbps", run.hbm_bandwidth_gbps},
          {"comm_us", run.comm_us},
          {"exposed_comm_us", run.exposed_comm_us},
          {"gradient_bytes", run.gradient_bytes},
          {"memory",
           {{"no_reuse_bytes", run.memory.no_reuse_bytes},
            {"with_reuse_bytes", run.memory.with_reuse_bytes},
            {"max_live_bytes", run.memory.max_live_bytes},
            {"weight_bytes", run.memory.weight_bytes},
            {"buffers", run.memory.buffers}}},
          {"edges", std::move(edges)},
          {"transfers", std::move(transfers)}};
}

Status WriteChromeTrace(const RunProfile& run, const std::string& path, const std::vector<OpTileTimeline>& tiles) {
  return WriteText(path, ChromeTraceJson(run, tiles).dump() + "\n");
}

Status WriteProfileDir(const RunProfile& run, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create profile folder '" + dir + "': " + ec.message());
  TF_RETURN_IF_ERROR(WriteOpSummaryCsv(run, dir + "/op_summary.csv"));
  TF_RETURN_IF_ERROR(WriteProfilerDataCsv(run, dir + "/profiler_data.csv"));
  return WriteText(dir + "/run_summary.json", RunSummaryJson(run).dump(2) + "\n");
}

}  // namespace tunefleet::profile
