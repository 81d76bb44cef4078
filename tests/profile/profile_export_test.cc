// The profiler's files: Chrome trace validity, op_summary.csv columns, profiler_data.csv
// and run_summary.json, written to a scratch folder and read back.
#include "worker/profile/profile_export.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "worker/profile/analysis.h"
#include "worker/profile/tile_trace.h"

namespace tunefleet::profile {
namespace {

using testing::Node;
using testing::Tensor;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunProfile TrainedBert(int devices) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  g.training = true;
  g.devices = devices;
  auto run = RunGraph(g, testing::Soc910B2());
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return *run;
}

// Every event has ph/ts/pid/tid, durations are >= 0, and complete events on one
// (pid, tid) never overlap.
void ExpectValidTrace(const nlohmann::json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> rows;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("ts") && e.contains("pid") && e.contains("tid")) << e.dump();
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    ASSERT_TRUE(e["ts"].is_number() && e["pid"].is_number_integer() && e["tid"].is_number_integer()) << e.dump();
    std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "M") << e.dump();
    if (ph != "X") continue;
    ASSERT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
    EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
    rows[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(e["ts"].get<double>(),
                                                                    e["ts"].get<double>() + e["dur"].get<double>());
  }
  for (auto& [row, events] : rows) {
    std::sort(events.begin(), events.end());
    for (size_t i = 1; i < events.size(); ++i) {
      EXPECT_LE(events[i - 1].second, events[i].first + 1e-6)
          << "pid " << row.first << " tid " << row.second << " overlaps at " << events[i].first;
    }
  }
}

TEST(ChromeTrace, EveryEventIsWellFormedAndNoRowOverlaps) {
  RunProfile run = TrainedBert(8);
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteChromeTrace(run, dir.Path("trace.json")).ok());
  nlohmann::json trace = nlohmann::json::parse(Slurp(dir.Path("trace.json")));
  ExpectValidTrace(trace);
  // Rows: streams, PCIe, HCCL and the host, each named by an "M" event.
  std::set<std::string> thread_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
  }
  for (const char* name : {"Stream 0", "PCIe H2D/D2H", "HCCL", "preprocess"}) {
    EXPECT_TRUE(thread_names.count(name)) << name;
  }
  size_t complete = 0;
  for (const auto& e : trace["traceEvents"]) complete += e["ph"] == "X";
  EXPECT_EQ(complete, run.ops.size() + run.transfers.size());
}

TEST(ChromeTrace, TileTimelinesGetOneProcessPerCoreAndOneThreadPerPipe) {
  RunProfile run = TrainedBert(1);
  OpTileTimeline tiles{"attention.softmax", {}};
  for (int core = 0; core < 3; ++core) {
    for (int t = 0; t < 4; ++t) {
      tiles.intervals.push_back({core, sim::Pipe::kMte2, t * 1.0, 0.5, "tile " + std::to_string(t)});
      tiles.intervals.push_back({core, sim::Pipe::kVector, t * 1.0 + 0.5, 0.5, ""});
    }
  }
  nlohmann::json trace = ChromeTraceJson(run, {tiles});
  ExpectValidTrace(trace);
  std::set<int> core_pids;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"].get<int>() >= 100) {
      core_pids.insert(e["pid"].get<int>());
      EXPECT_TRUE(e["tid"] == static_cast<int>(sim::Pipe::kMte2) || e["tid"] == static_cast<int>(sim::Pipe::kVector));
    }
  }
  EXPECT_EQ(core_pids.size(), 3u);
}

TEST(ChromeTrace, EventSimulationTimelinesOfChosenOpsFormValidCoreRows) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  auto run = RunGraph(g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto tiles = TileTimelines(g, testing::Soc910B2(), {"attention.softmax", "ffn.output.matmul"});
  ASSERT_TRUE(tiles.ok()) << tiles.status().ToString();
  ASSERT_EQ(tiles->size(), 2u);
  std::set<sim::Pipe> matmul_pipes;
  for (const auto& iv : (*tiles)[1].intervals) matmul_pipes.insert(iv.pipe);
  EXPECT_TRUE(matmul_pipes.count(sim::Pipe::kCube));
  EXPECT_TRUE(matmul_pipes.count(sim::Pipe::kMte2));
  EXPECT_FALSE((*tiles)[0].intervals.empty());
  ExpectValidTrace(ChromeTraceJson(*run, *tiles));
  auto unknown = TileTimelines(g, testing::Soc910B2(), {"attention.q.heads"});  // a view, not a kernel
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("attention.softmax"), std::string::npos);  // lists the kernels
}

std::vector<std::string> HeaderOf(const std::string& csv) {
  std::vector<std::string> cols;
  std::string line = csv.substr(0, csv.find('\n'));
  std::stringstream ss(line);
  std::string col;
  while (std::getline(ss, col, ',')) cols.push_back(col);
  return cols;
}

TEST(OpSummaryCsv, CarriesMsprofsColumnNamesAndOneRowPerKernel) {
  RunProfile run = TrainedBert(1);
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteProfileDir(run, dir.Path()).ok());
  std::string csv = Slurp(dir.Path("op_summary.csv"));
  std::vector<std::string> header = HeaderOf(csv);
  for (const char* msprof : {"Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)",
                             "Block Dim", "aic_mac_ratio", "aic_mte1_ratio", "aic_mte2_ratio", "aic_fixpipe_ratio",
                             "aic_scalar_ratio", "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio",
                             "aiv_scalar_ratio", "Input Shapes"}) {
    EXPECT_NE(std::find(header.begin(), header.end(), msprof), header.end()) << msprof;
  }
  auto loaded = ParseOpSummaryCsv(csv, "op_summary.csv");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->rows.size(), run.ops.size());
  std::set<std::string> task_types;
  for (size_t i = 0; i < run.ops.size(); ++i) {
    const ProfileRow& r = loaded->rows[i];
    EXPECT_EQ(r.name, run.ops[i].name);
    EXPECT_NEAR(r.duration_us, run.ops[i].duration_us, 1e-3);
    EXPECT_EQ(r.block_dim, run.ops[i].estimate.block_dim);
    for (double ratio : {r.mac_ratio, r.vec_ratio, r.mte2_ratio}) {
      EXPECT_GE(ratio, 0);
      EXPECT_LE(ratio, 1 + 1e-9);
    }
    task_types.insert(r.task_type);
    if (r.task_type == "AI_CORE") {
      EXPECT_GT(r.mac_ratio, 0) << r.name;
    }
    if (r.task_type == "AI_VECTOR_CORE") {
      EXPECT_GT(r.vec_ratio + r.mte2_ratio, 0) << r.name;
    }
  }
  EXPECT_EQ(task_types, (std::set<std::string>{"AI_CORE", "AI_VECTOR_CORE"}));
}

TEST(ProfilerDataCsv, HasTheSeedsThreeColumnsAndEveryUnit) {
  RunProfile run = TrainedBert(4);
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteProfileDir(run, dir.Path()).ok());
  std::string csv = Slurp(dir.Path("profiler_data.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "op_name,duration,unit");
  auto loaded = ParseProfilerDataCsv(csv, "profiler_data.csv");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::map<std::string, double> per_unit;
  for (const auto& r : loaded->rows) per_unit[r.unit] += r.duration_us;
  double kernels = 0;
  for (const auto& op : run.ops) kernels += op.duration_us;
  EXPECT_NEAR(per_unit["AI Core"], kernels, 1e-3 * run.ops.size());
  EXPECT_NEAR(per_unit["HCCL"], run.comm_us, 1e-2);
  EXPECT_GT(per_unit["PCIe"], 0);
  EXPECT_GT(per_unit["Host"], 0);
  nlohmann::json summary = nlohmann::json::parse(Slurp(dir.Path("run_summary.json")));
  EXPECT_DOUBLE_EQ(summary["step_us"].get<double>(), run.step_us);
  EXPECT_EQ(summary["memory"]["with_reuse_bytes"].get<int64_t>(), run.memory.with_reuse_bytes);
}

TEST(ProfilerDataCsv, NamesWithCommasAreQuoted) {
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\", twice"), "\"say \"\"hi\"\", twice\"");
  EXPECT_EQ(CsvField("plain"), "plain");
}

}  // namespace
}  // namespace tunefleet::profile
