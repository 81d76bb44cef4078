// Bottleneck analysis: loading op_summary.csv / run_summary.json / profiler_data.csv and
// the rules of docs/profiling.md "Analysis rules".
#include "worker/profile/analysis.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/core.h>

#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/vector_space.h"

namespace tunefleet::profile {
namespace {

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// RFC 4180 CSV: quoted fields may hold commas, doubled quotes and newlines.
Result<std::vector<std::vector<std::string>>> ParseCsv(const std::string& text, const std::string& source) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
      ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) return InvalidArgument(fmt::format("{}: line {}: unterminated quoted field", source, line));
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

struct Table {
  std::map<std::string, size_t> column;
  std::vector<std::vector<std::string>> rows;
};

Result<Table> ParseTable(const std::string& text, const std::string& source, const std::vector<std::string>& required) {
  TF_ASSIGN_OR_RETURN(auto rows, ParseCsv(text, source));
  if (rows.empty()) return InvalidArgument(source + ": empty file; expected a header line");
  Table t;
  for (size_t i = 0; i < rows[0].size(); ++i) t.column[rows[0][i]] = i;
  for (const auto& r : required) {
    if (!t.column.count(r)) return InvalidArgument(source + ": missing column '" + r + "' in the header line");
  }
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != rows[0].size()) {
      return InvalidArgument(fmt::format("{}: row {} has {} fields, the header has {}", source, i + 1,
                                         rows[i].size(), rows[0].size()));
    }
  }
  t.rows.assign(rows.begin() + 1, rows.end());
  return t;
}

Result<double> Number(const Table& t, size_t row, const std::string& col, const std::string& source) {
  auto it = t.column.find(col);
  if (it == t.column.end()) return 0.0;
  const std::string& s = t.rows[row][it->second];
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return InvalidArgument(fmt::format("{}: row {}: column '{}' is '{}', not a number", source, row + 2, col, s));
  }
  return v;
}

std::string Text(const Table& t, size_t row, const std::string& col) {
  auto it = t.column.find(col);
  return it == t.column.end() ? std::string() : t.rows[row][it->second];
}

bool IsCube(const std::string& op_type) {
  static const std::set<std::string> kCube = {"MatMul", "BatchMatMul", "Gemm", "Conv2D"};
  return kCube.count(op_type) > 0;
}

// The element-wise ops CANN's UB fusion takes as an epilogue or into a chain
// (NPU_MODEL.md "Graph-level decisions"): the chain ops `fuse` applies (fused_space.h),
// and Cast.
bool IsElementwise(const std::string& op_type) {
  const std::vector<std::string>& chain = FusedChainOpNames();
  return op_type == "Cast" || std::find(chain.begin(), chain.end(), op_type) != chain.end();
}

std::string Pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

// Fields of run_summary.json, tolerant of a hand-edited file: a missing or mistyped
// field reads as empty / `fallback` instead of throwing.
std::string JsonText(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
double JsonNumber(const nlohmann::json& j, const char* key, double fallback = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

}  // namespace

double ProfileRow::MemoryBound() const {
  double compute = std::max(mac_ratio, vec_ratio);
  return compute > 0 ? mte2_ratio / compute : 0;
}

Result<LoadedProfile> ParseProfilerDataCsv(const std::string& text, const std::string& source) {
  TF_ASSIGN_OR_RETURN(Table t, ParseTable(text, source, {"op_name", "duration", "unit"}));
  LoadedProfile p;
  p.source = source;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    ProfileRow r;
    r.name = Text(t, i, "op_name");
    r.unit = Text(t, i, "unit");
    TF_ASSIGN_OR_RETURN(r.duration_us, Number(t, i, "duration", source));
    if (r.duration_us < 0) return InvalidArgument(fmt::format("{}: row {}: negative duration", source, i + 2));
    p.rows.push_back(std::move(r));
  }
  if (p.rows.empty()) return InvalidArgument(source + ": no rows, only a header: nothing to analyse");
  return p;
}

Result<LoadedProfile> ParseOpSummaryCsv(const std::string& text, const std::string& source) {
  TF_ASSIGN_OR_RETURN(Table t, ParseTable(text, source,
                                          {"Op Name", "OP Type", "Task Type", "Task Start Time(us)",
                                           "Task Duration(us)", "Block Dim", "aic_mac_ratio", "aiv_vec_ratio",
                                           "aic_mte2_ratio", "aiv_mte2_ratio"}));
  LoadedProfile p;
  p.source = source;
  p.detailed = true;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    ProfileRow r;
    r.name = Text(t, i, "Op Name");
    r.op_type = Text(t, i, "OP Type");
    r.task_type = Text(t, i, "Task Type");
    r.unit = "AI Core";
    TF_ASSIGN_OR_RETURN(r.start_us, Number(t, i, "Task Start Time(us)", source));
    TF_ASSIGN_OR_RETURN(r.duration_us, Number(t, i, "Task Duration(us)", source));
    TF_ASSIGN_OR_RETURN(r.block_dim, Number(t, i, "Block Dim", source));
    TF_ASSIGN_OR_RETURN(r.unit_cores, Number(t, i, "Unit Cores", source));
    TF_ASSIGN_OR_RETURN(r.launch_us, Number(t, i, "Launch(us)", source));
    TF_ASSIGN_OR_RETURN(r.mac_ratio, Number(t, i, "aic_mac_ratio", source));
    TF_ASSIGN_OR_RETURN(r.vec_ratio, Number(t, i, "aiv_vec_ratio", source));
    TF_ASSIGN_OR_RETURN(double aic_mte2, Number(t, i, "aic_mte2_ratio", source));
    TF_ASSIGN_OR_RETURN(double aiv_mte2, Number(t, i, "aiv_mte2_ratio", source));
    r.mte2_ratio = std::max(aic_mte2, aiv_mte2);
    TF_ASSIGN_OR_RETURN(r.hbm_bytes, Number(t, i, "HBM Bytes", source));
    TF_ASSIGN_OR_RETURN(r.roofline_us, Number(t, i, "Roofline(us)", source));
    if (r.duration_us < 0) return InvalidArgument(fmt::format("{}: row {}: negative Task Duration(us)", source, i + 2));
    p.rows.push_back(std::move(r));
  }
  if (p.rows.empty()) return InvalidArgument(source + ": no rows, only a header: nothing to analyse");
  return p;
}

Result<LoadedProfile> LoadProfile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::string op_summary = path + "/op_summary.csv";
    if (!std::filesystem::exists(op_summary, ec)) {
      const std::string data = path + "/profiler_data.csv";
      if (std::filesystem::exists(data, ec)) return LoadProfile(data);
      return NotFound("'" + path + "' holds neither op_summary.csv nor profiler_data.csv; run `tunefleet profile MODEL --csv " +
                      path + "` first");
    }
    TF_ASSIGN_OR_RETURN(std::string text, ReadText(op_summary));
    TF_ASSIGN_OR_RETURN(LoadedProfile p, ParseOpSummaryCsv(text, op_summary));
    const std::string summary = path + "/run_summary.json";
    if (std::filesystem::exists(summary, ec)) {
      TF_ASSIGN_OR_RETURN(std::string js, ReadText(summary));
      try {
        p.summary = nlohmann::json::parse(js);
      } catch (const nlohmann::json::parse_error& e) {
        return InvalidArgument(summary + ": not valid JSON: " + e.what());
      }
      if (!p.summary->is_object() || !p.summary->contains("step_us") || !(*p.summary)["step_us"].is_number()) {
        return InvalidArgument(summary + ": expected an object with a numeric 'step_us'");
      }
    }
    p.source = path;
    return p;
  }
  if (!std::filesystem::exists(path, ec)) {
    return NotFound("'" + path + "' does not exist; give a profile folder or a profiler_data.csv");
  }
  TF_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  // An op_summary.csv given directly is recognised by its header.
  if (text.rfind("Device_id,", 0) == 0) return ParseOpSummaryCsv(text, path);
  return ParseProfilerDataCsv(text, path);
}

const GridCell* Analysis::Cell(const std::string& horizontal, const std::string& vertical) const {
  for (const auto& c : grid) {
    if (c.horizontal == horizontal && c.vertical == vertical) return &c;
  }
  return nullptr;
}

Analysis Analyze(const LoadedProfile& profile) {
  Analysis a;
  a.source = profile.source;
  a.detailed = profile.detailed;
  a.has_summary = profile.summary.has_value();
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& s = profile.summary ? *profile.summary : empty;
  auto num = [&](const char* key) -> std::optional<double> {
    if (s.contains(key) && s[key].is_number()) return s[key].get<double>();
    return std::nullopt;
  };

  // Durations per unit; for op_summary.csv alone every row is a kernel.
  std::map<std::string, double> by_unit;
  std::map<std::string, double> by_name;
  double kernel_us = 0;
  for (const auto& r : profile.rows) {
    by_unit[r.unit] += r.duration_us;
    by_name[r.name] += r.duration_us;
    if (r.unit == "AI Core") kernel_us += r.duration_us;
  }
  if (s.contains("transfers") && s["transfers"].is_array()) {
    for (const auto& t : s["transfers"]) {
      std::string name = JsonText(t, "name");
      std::string unit = JsonText(t, "unit");
      double dur = JsonNumber(t, "duration_us");
      by_unit[unit] += dur;
      by_name[name] += dur;
    }
  }
  double recorded = 0;
  for (const auto& [unit, us] : by_unit) recorded += us;
  // Without a run summary: op_summary.csv's kernels carry start times, so the step is
  // their span, first start to last end, gaps between kernels included (host time
  // before the first one is not in the file); profiler_data.csv has no times, so the
  // serial sum of everything recorded (an upper bound: overlap is not visible there).
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const auto& r : profile.rows) {
    first = std::min(first, r.start_us);
    last = std::max(last, r.start_us + r.duration_us);
  }
  a.step_us = num("step_us").value_or(profile.detailed && !profile.rows.empty() ? last - first : recorded);
  const double step = a.step_us > 0 ? a.step_us : 1;

  std::vector<std::pair<std::string, double>> ranked(by_name.begin(), by_name.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  a.top_ops.assign(ranked.begin(), ranked.begin() + std::min<size_t>(10, ranked.size()));

  // Host preprocessing and exposed HCCL time, from the run summary or else from the
  // profiler_data.csv rows: the grid and the next steps must read the same figures.
  const double host_us = num("host_us").value_or(by_unit["Host"]);
  std::optional<double> comm = num("comm_us");
  if (!comm && by_unit.count("HCCL")) comm = by_unit["HCCL"];
  const double exposed_comm_us = num("exposed_comm_us").value_or(comm.value_or(0));

  // compute x host: preprocessing share of the step.
  {
    double share = host_us / step;
    bool flag = share > kSignificantShare;
    a.grid.push_back({"compute", "host", "host preprocessing share of step", share, flag,
                      flag ? "host-bound: " + Pct(share) + " of the step is host preprocessing; move it off the "
                                                           "critical path (prefetch the next batch while the NPU runs)"
                           : "host preprocessing is " + Pct(share) + " of the step"});
  }
  // compute x device: AI Core utilisation (< 70% = compute units idle).
  {
    std::optional<double> util = num("ai_core_utilisation");
    std::string metric = "AI Core utilisation";
    if (!util && profile.detailed) {
      double core_time = 0;
      for (const auto& r : profile.rows) {
        if (r.unit_cores > 0) core_time += r.duration_us * r.block_dim / r.unit_cores;
      }
      util = core_time / step;
    } else if (!util) {
      util = kernel_us / step;
      metric = "AI Core busy share of recorded time (profiler_data.csv has no block dims: an upper bound)";
    }
    bool flag = *util < kComputeIdleBelow;
    a.grid.push_back({"compute", "device", metric, util, flag,
                      flag ? "compute units idle: " + Pct(*util) + " < 70% (seed rule); look at small block dims, "
                                                                 "gaps between ops, host and copy time"
                           : "AI Cores busy " + Pct(*util) + " of the step"});
  }
  // compute x device-to-device: replicas run identical steps in this model.
  a.grid.push_back({"compute", "device-to-device", "load imbalance between devices", std::nullopt, false,
                    "not measured: data-parallel replicas run identical steps"});
  // memory x host: PCIe copies.
  {
    std::optional<double> copies;
    if (num("h2d_us") || by_unit.count("PCIe")) copies = num("h2d_us").value_or(0) + num("d2h_us").value_or(0);
    if (!num("h2d_us") && by_unit.count("PCIe")) copies = by_unit["PCIe"];
    if (copies) {
      double share = *copies / step;
      bool flag = share > kSignificantShare;
      a.grid.push_back({"memory", "host", "H2D + D2H share of step", share, flag,
                        flag ? "PCIe-bound: copies take " + Pct(share) + " of the step; keep data on the device, "
                                                                        "overlap copies with compute or pin host memory"
                             : "H2D/D2H copies are " + Pct(share) + " of the step"});
    } else {
      a.grid.push_back({"memory", "host", "H2D + D2H share of step", std::nullopt, false, "no PCIe rows recorded"});
    }
  }
  // memory x device: HBM bandwidth utilisation (> 80% = bandwidth-bound) and per-op memory_bound.
  if (profile.detailed) {
    for (const auto& r : profile.rows) {
      if (r.MemoryBound() > kMemoryBoundAbove) a.memory_bound_ops.emplace_back(r.name, r.MemoryBound());
    }
    std::stable_sort(a.memory_bound_ops.begin(), a.memory_bound_ops.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
  }
  {
    std::optional<double> bw = num("memory_bw_utilisation");
    if (bw) {
      bool flag = *bw > kBandwidthBoundAbove;
      std::string mem;
      if (s.contains("memory") && s["memory"].is_object()) {
        mem = fmt::format("; peak device memory {:.1f} MiB with reuse ({:.1f} MiB without)",
                          JsonNumber(s["memory"], "with_reuse_bytes") / 1048576.0,
                          JsonNumber(s["memory"], "no_reuse_bytes") / 1048576.0);
      }
      a.grid.push_back({"memory", "device", "HBM bandwidth utilisation while ops run", bw, flag,
                        (flag ? "bandwidth-bound: " + Pct(*bw) + " > 80% (seed rule); fuse element-wise ops to cut "
                                                                 "HBM round trips"
                              : "HBM bandwidth " + Pct(*bw) + " used") +
                            fmt::format("; {} op(s) with memory_bound > 1", a.memory_bound_ops.size()) + mem});
    } else if (profile.detailed) {
      a.grid.push_back({"memory", "device", "ops with memory_bound > 1", static_cast<double>(a.memory_bound_ops.size()),
                        !a.memory_bound_ops.empty(),
                        fmt::format("{} op(s) wait on MTE2 more than they compute (memory_bound = mte2_ratio / "
                                    "max(mac_ratio, vec_ratio) > 1)",
                                    a.memory_bound_ops.size())});
    } else {
      a.grid.push_back({"memory", "device", "HBM bandwidth utilisation", std::nullopt, false,
                        "not in profiler_data.csv: profile with --csv DIR for op_summary.csv"});
    }
  }
  // memory x device-to-device: gradient bytes per step.
  {
    std::optional<double> grad = num("gradient_bytes");
    a.grid.push_back({"memory", "device-to-device", "gradient bytes all-reduced per step", grad, false,
                      grad ? fmt::format("{:.1f} MiB of gradients per step", *grad / 1048576.0)
                           : "not recorded (inference, or no run summary)"});
  }
  // communication x host: PCIe latency-bound copies are under memory x host; here the launch cost.
  {
    double launches = 0;
    for (const auto& r : profile.rows) launches += r.launch_us;
    if (profile.detailed) {
      double share = launches / step;
      bool flag = share > kSignificantShare;
      a.grid.push_back({"communication", "host", "kernel launch share of step", share, flag,
                        flag ? "launch-bound: " + Pct(share) + " of the step is kernel launches; fuse small ops"
                             : "kernel launches are " + Pct(share) + " of the step"});
    } else {
      a.grid.push_back({"communication", "host", "kernel launch share of step", std::nullopt, false,
                        "not in profiler_data.csv"});
    }
  }
  a.grid.push_back({"communication", "device", "cube <-> vector traffic through L2", std::nullopt, false,
                    "not separated in this model (counted in each op's HBM/L2 bytes)"});
  // communication x device-to-device: HCCL share of the step.
  {
    if (comm) {
      const double exposed = exposed_comm_us;
      double share = exposed / step;
      bool flag = share > kSignificantShare;
      a.grid.push_back({"communication", "device-to-device", "HCCL time not hidden by compute, share of step", share,
                        flag,
                        fmt::format("HCCL {:.1f} us in all, {:.1f} us ({}) exposed after backward{}", *comm, exposed,
                                    Pct(share),
                                    flag ? "; bucket gradients earlier, overlap more, or compress" : "")});
    } else {
      a.grid.push_back({"communication", "device-to-device", "HCCL share of step", 0.0, false,
                        "no HCCL activity (one device or inference)"});
    }
  }

  // Next steps: fusion candidates from the graph's edges, tuning candidates from roofline.
  std::map<std::string, const ProfileRow*> row_by_name;
  for (const auto& r : profile.rows) row_by_name[r.name] = &r;
  const double hbm_bytes_per_us = num("hbm_bandwidth_gbps").value_or(0) * 1e3;
  if (s.contains("edges") && s["edges"].is_array()) {
    // Softmaxes whose probabilities only a BatchMatMul reads: an attention's.
    std::set<std::string> attention_softmax;
    for (const auto& e : s["edges"]) {
      auto pf = row_by_name.find(JsonText(e, "from")), pt = row_by_name.find(JsonText(e, "to"));
      if (pf != row_by_name.end() && pt != row_by_name.end() && JsonNumber(e, "consumers") == 1 &&
          pf->second->op_type == "Softmax" && pt->second->op_type == "BatchMatMul") {
        attention_softmax.insert(pf->first);
      }
    }
    for (const auto& e : s["edges"]) {
      std::string from = JsonText(e, "from"), to = JsonText(e, "to");
      auto pf = row_by_name.find(from), pt = row_by_name.find(to);
      if (pf == row_by_name.end() || pt == row_by_name.end() || JsonNumber(e, "consumers") != 1) continue;
      const std::string& ft = pf->second->op_type;
      const std::string& tt = pt->second->op_type;
      // Fused ops (common/fused_space.h) take one more op into their epilogue or chain.
      const bool fused_cube = ft == "FusedMatMul" || ft == "FusedBatchMatMul" || ft == "FusedConv2D";
      std::string kind, as;
      if ((IsCube(ft) || fused_cube) && IsElementwise(tt)) {
        kind = ft + " + element-wise epilogue";
        as = fused_cube ? ft : ft == "Gemm" ? "FusedMatMul" : "Fused" + ft;
        as += " with '" + tt + "' ending attrs.epilogue";
        // `tunefleet fuse` takes a Gemm head only as a MatMul with a bias (graph_fusion.h).
        if (ft == "Gemm") as += " (`tunefleet fuse` takes a Gemm's chain when the Gemm scales by neither alpha nor beta)";
      } else if ((ft == "DepthwiseConv2D" || ft == "InstanceNorm") && IsUnaryEpilogueOp(tt)) {
        kind = ft == "InstanceNorm" ? "instance norm + unary epilogue" : "depthwise conv + unary epilogue";
        as = ft + " with '" + tt + "' ending attrs.epilogue";
      } else if (ft == "InstanceNorm" && (tt == "Mul" || tt == "Add")) {
        kind = "instance norm + per-channel scale or shift (a GroupNorm's affine)";
        as = std::string("InstanceNorm taking its operand as its ") + (tt == "Mul" ? "scale" : "bias") +
             ", when that holds a value per channel (`tunefleet fuse` takes a GroupNorm's Mul and Add so)";
      } else if (((ft == "BatchMatMul" || ft == "FusedBatchMatMul" || IsElementwise(ft)) && tt == "Softmax" &&
                  attention_softmax.count(to)) ||
                 (ft == "Softmax" && tt == "BatchMatMul")) {
        // An attention's scores and probabilities (common/attention_space.h).
        kind = ft == "Softmax" ? "softmax + P x v" : "attention scores + softmax";
        as = "FlashAttention, the attention's scores, their scale or mask, Softmax and P x v in one kernel "
             "(`tunefleet fuse` forms it where the simulator measures it faster)";
      } else if ((IsElementwise(ft) || ft == "FusedElementwise") && IsElementwise(tt)) {
        kind = "element-wise chain";
        as = "FusedElementwise with '" + tt + "' ending attrs.ops";
      } else {
        continue;
      }
      if (tt == "Cast") as.clear();  // not a chain op of the fused ops
      double bytes = JsonNumber(e, "bytes");
      double saving = pt->second->launch_us + (hbm_bytes_per_us > 0 ? 2 * bytes / hbm_bytes_per_us : 0);
      a.next_steps.push_back({"fuse", {from, to},
                              fmt::format("{} ({} {}): skips the HBM write and re-read of '{}' ({:.1f} MiB) and one "
                                          "launch{}",
                                          kind, ft, tt, JsonText(e, "tensor"), bytes / 1048576.0,
                                          as.empty() ? "" : "; as one op: " + as),
                              saving});
    }
  }
  if (profile.detailed) {
    for (const auto& r : profile.rows) {
      if (r.roofline_us <= 0 || r.duration_us / step < 0.01) continue;
      double ratio = r.duration_us / r.roofline_us;
      if (ratio < kFarFromRoofline) continue;
      a.next_steps.push_back({"tune", {r.name},
                              fmt::format("{} runs at {:.0f}% of its roofline with the default tiling ({:.1f} us vs "
                                          "{:.1f} us): submit it for operator tuning (job type 2)",
                                          r.op_type, 100 / ratio, r.duration_us, r.roofline_us),
                              r.duration_us - r.roofline_us});
    }
  }
  if (const GridCell* c = a.Cell("compute", "host"); c && c->flagged) {
    a.next_steps.push_back({"host", {}, "overlap host preprocessing with the previous step (a data-loader thread)",
                            host_us});
  }
  if (const GridCell* c = a.Cell("communication", "device-to-device"); c && c->flagged) {
    a.next_steps.push_back({"overlap", {}, "gradient all-reduce is exposed after backward: smaller or earlier buckets",
                            exposed_comm_us});
  }
  std::stable_sort(a.next_steps.begin(), a.next_steps.end(),
                   [](const NextStep& x, const NextStep& y) { return x.estimated_saving_us > y.estimated_saving_us; });
  return a;
}

nlohmann::json Analysis::ToJson() const {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : grid) {
    cells.push_back({{"horizontal", c.horizontal}, {"vertical", c.vertical}, {"metric", c.metric},
                     {"value", c.value ? nlohmann::json(*c.value) : nlohmann::json(nullptr)},
                     {"flagged", c.flagged}, {"verdict", c.verdict}});
  }
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [name, us] : top_ops) top.push_back({{"op_name", name}, {"duration_us", us}});
  nlohmann::json mb = nlohmann::json::array();
  for (const auto& [name, v] : memory_bound_ops) mb.push_back({{"op_name", name}, {"memory_bound", v}});
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : next_steps) {
    steps.push_back({{"kind", st.kind}, {"ops", st.ops}, {"reason", st.reason},
                     {"estimated_saving_us", st.estimated_saving_us}});
  }
  return {{"source", source}, {"detailed", detailed}, {"step_us", step_us}, {"grid", cells},
          {"top_ops", top}, {"memory_bound_ops", mb}, {"next_steps", steps}};
}

std::string Analysis::ToText() const {
  std::string out = fmt::format("profile: {}\nstep time: {:.1f} us{}\n\nthree horizontals x three verticals:\n",
                                source, step_us,
                                !detailed      ? " (profiler_data.csv only: limited analysis)"
                                : !has_summary ? " (the kernels' span in op_summary.csv: no run_summary.json beside it, "
                                                 "so host time and copies outside it are not counted)"
                                               : "");
  for (const auto& c : grid) {
    out += fmt::format("  {:<14} {:<17} {} {}\n", c.horizontal, c.vertical, c.flagged ? "[!]" : "[ ]", c.verdict);
  }
  out += "\ntop ops by total time:\n";
  for (const auto& [name, us] : top_ops) {
    out += fmt::format("  {:>10.1f} us  {:5.1f}%  {}\n", us, 100 * us / (step_us > 0 ? step_us : 1), name);
  }
  if (!memory_bound_ops.empty()) {
    out += "\nmemory-bound ops (memory_bound = mte2_ratio / max(mac_ratio, vec_ratio) > 1):\n";
    for (size_t i = 0; i < memory_bound_ops.size() && i < 10; ++i) {
      out += fmt::format("  {:>6.2f}  {}\n", memory_bound_ops[i].second, memory_bound_ops[i].first);
    }
  }
  out += "\nnext steps:\n";
  if (next_steps.empty()) out += "  nothing stands out\n";
  for (size_t i = 0; i < next_steps.size() && i < 15; ++i) {
    const auto& st = next_steps[i];
    std::string ops;
    for (size_t k = 0; k < st.ops.size(); ++k) ops += (k ? " + " : "") + st.ops[k];
    out += fmt::format("  {:<7} {}{}{}  (~{:.1f} us)\n", st.kind, ops, ops.empty() ? "" : ": ", st.reason,
                       st.estimated_saving_us);
  }
  return out;
}

}  // namespace tunefleet::profile
