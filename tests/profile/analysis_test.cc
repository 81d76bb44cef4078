// Bottleneck analysis on purpose-built inputs: a memory-bound op, a compute-idle run,
// a bandwidth-bound run, profiler_data.csv alone, and fusion advice on a real profile.
#include "worker/profile/analysis.h"

#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "tunefleet/common/graph_fusion.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/profile_export.h"

namespace tunefleet::profile {
namespace {

// An op_summary.csv with the columns the analysis reads and two ops: one that waits on
// MTE2 (mte2 0.9 vs mac 0.3) and one that computes (mac 0.9 vs mte2 0.2).
const char* kTwoOps =
    "Device_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Block Dim,aic_mac_ratio,"
    "aiv_vec_ratio,aic_mte2_ratio,aiv_mte2_ratio,Unit Cores,Launch(us),HBM Bytes,Roofline(us)\n"
    "0,loader_bound,MatMul,AI_CORE,10,100,24,0.3,0,0.9,0,24,5,1e8,90\n"
    "0,compute_bound,MatMul,AI_CORE,115,100,24,0.9,0,0.2,0,24,5,1e6,95\n";

Analysis AnalyzeCsv(const std::string& csv, const nlohmann::json& summary) {
  auto loaded = ParseOpSummaryCsv(csv, "op_summary.csv");
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!summary.is_null()) loaded->summary = summary;
  return Analyze(*loaded);
}

TEST(Analysis, FlagsTheOpWhoseMte2RatioExceedsItsComputeRatio) {
  Analysis a = AnalyzeCsv(kTwoOps, nullptr);
  ASSERT_EQ(a.memory_bound_ops.size(), 1u);
  EXPECT_EQ(a.memory_bound_ops[0].first, "loader_bound");
  EXPECT_DOUBLE_EQ(a.memory_bound_ops[0].second, 0.9 / 0.3);  // mte2 / max(mac, vec)
  const GridCell* mem = a.Cell("memory", "device");
  ASSERT_NE(mem, nullptr);
  EXPECT_TRUE(mem->flagged);
}

TEST(Analysis, AnAiCoreUtilisationBelow70PercentIsComputeIdle) {
  Analysis idle = AnalyzeCsv(kTwoOps, {{"step_us", 1000.0}, {"ai_core_utilisation", 0.45}});
  ASSERT_NE(idle.Cell("compute", "device"), nullptr);
  EXPECT_TRUE(idle.Cell("compute", "device")->flagged);
  EXPECT_NE(idle.Cell("compute", "device")->verdict.find("idle"), std::string::npos);
  Analysis busy = AnalyzeCsv(kTwoOps, {{"step_us", 1000.0}, {"ai_core_utilisation", 0.85}});
  EXPECT_FALSE(busy.Cell("compute", "device")->flagged);
  // Without a run summary the step is the kernels' span, 10 us to 215 us with a 5 us gap
  // (it was the sum of their durations, which read any gaps as busy time), and
  // utilisation comes from block dims: both ops use all 24 cores for 200 of 205 us.
  Analysis derived = AnalyzeCsv(kTwoOps, nullptr);
  EXPECT_DOUBLE_EQ(derived.step_us, 205);
  ASSERT_TRUE(derived.Cell("compute", "device")->value.has_value());
  EXPECT_NEAR(*derived.Cell("compute", "device")->value, 200.0 / 205, 1e-9);
}

TEST(Analysis, AMemoryBandwidthUtilisationAbove80PercentIsBandwidthBound) {
  Analysis bound = AnalyzeCsv(kTwoOps, {{"step_us", 300.0}, {"memory_bw_utilisation", 0.86}});
  EXPECT_TRUE(bound.Cell("memory", "device")->flagged);
  EXPECT_NE(bound.Cell("memory", "device")->verdict.find("bandwidth-bound"), std::string::npos);
  Analysis fine = AnalyzeCsv(kTwoOps, {{"step_us", 300.0}, {"memory_bw_utilisation", 0.5}});
  EXPECT_EQ(fine.Cell("memory", "device")->verdict.find("bandwidth-bound"), std::string::npos);
}

TEST(Analysis, AHandEditedRunSummaryWithMistypedFieldsIsReadNotThrown) {
  nlohmann::json summary = {{"step_us", 300.0},
                            {"transfers", {1, "x", {{"name", 5}, {"duration_us", "long"}}}},
                            {"edges", {{{"from", 3}, {"to", "compute_bound"}}}},
                            {"memory", "lots"}};
  Analysis a = AnalyzeCsv(kTwoOps, summary);
  EXPECT_DOUBLE_EQ(a.step_us, 300);
  EXPECT_EQ(a.grid.size(), 9u);
}

TEST(Analysis, AnOpFarFromItsRooflineIsATuningCandidate) {
  std::string csv = std::string(kTwoOps) +
                    "0,slow_default,MatMul,AI_CORE,220,200,24,0.4,0,0.3,0,24,5,1e6,50\n";
  Analysis a = AnalyzeCsv(csv, nullptr);
  bool found = false;
  for (const auto& st : a.next_steps) {
    if (st.kind == "tune") {
      EXPECT_EQ(st.ops, std::vector<std::string>{"slow_default"});  // the others are within 1.5x
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Analysis, ProfilerDataCsvAloneGivesTopOpsAndTheHcclShare) {
  std::string csv = "op_name,duration,unit\n"
                    "matmul,300,AI Core\nmatmul,300,AI Core\nrelu,50,AI Core\n"
                    "\"allreduce, bucket 1\",250,HCCL\nH2D x,100,PCIe\n";
  auto loaded = ParseProfilerDataCsv(csv, "profiler_data.csv");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Analysis a = Analyze(*loaded);
  EXPECT_FALSE(a.detailed);
  EXPECT_DOUBLE_EQ(a.step_us, 1000);
  ASSERT_GE(a.top_ops.size(), 3u);
  EXPECT_EQ(a.top_ops[0].first, "matmul");
  EXPECT_DOUBLE_EQ(a.top_ops[0].second, 600);
  EXPECT_EQ(a.top_ops[1].first, "allreduce, bucket 1");
  const GridCell* hccl = a.Cell("communication", "device-to-device");
  ASSERT_TRUE(hccl && hccl->value);
  EXPECT_DOUBLE_EQ(*hccl->value, 0.25);
  EXPECT_TRUE(hccl->flagged);
  EXPECT_TRUE(a.Cell("compute", "device")->flagged);  // AI Core 65% of recorded time < 70%
  EXPECT_FALSE(a.Cell("memory", "device")->value.has_value());  // not in this CSV
}

TEST(Analysis, NextStepsFromTheCsvAloneEstimateWhatTheGridFlagged) {
  // Host preprocessing and exposed HCCL time come from the rows when there is no run
  // summary; their next steps used to read only the summary and promise ~0 us.
  std::string csv = "op_name,duration,unit\n"
                    "preprocess,500,Host\nmatmul,300,AI Core\n\"allreduce, bucket 1\",250,HCCL\n";
  auto loaded = ParseProfilerDataCsv(csv, "profiler_data.csv");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Analysis a = Analyze(*loaded);
  ASSERT_TRUE(a.Cell("compute", "host")->flagged);
  ASSERT_TRUE(a.Cell("communication", "device-to-device")->flagged);
  std::map<std::string, double> saving;
  for (const auto& s : a.next_steps) saving[s.kind] = s.estimated_saving_us;
  EXPECT_DOUBLE_EQ(saving["host"], 500);
  EXPECT_DOUBLE_EQ(saving["overlap"], 250);
}

TEST(Analysis, AMalformedCsvNamesTheMissingColumnOrBadValue) {
  auto missing = ParseProfilerDataCsv("name,duration,unit\nx,1,AI Core\n", "p.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'op_name'"), std::string::npos);
  auto bad = ParseProfilerDataCsv("op_name,duration,unit\nx,fast,AI Core\n", "p.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("row 2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("'duration'"), std::string::npos) << bad.status().message();
  for (auto header_only : {ParseProfilerDataCsv("op_name,duration,unit\n", "p.csv"),
                           ParseOpSummaryCsv(std::string(kTwoOps).substr(0, std::string(kTwoOps).find('\n') + 1),
                                             "op_summary.csv")}) {
    ASSERT_FALSE(header_only.ok());
    EXPECT_NE(header_only.status().message().find("no rows"), std::string::npos) << header_only.status().message();
  }
  auto nowhere = LoadProfile("/nonexistent/profile");
  ASSERT_FALSE(nowhere.ok());
  EXPECT_EQ(nowhere.status().code(), StatusCode::kNotFound);
}

TEST(Analysis, SuggestsFusingBertsMatMulsWithTheirBiasAddsFromAProfileFolder) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  auto run = RunGraph(g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  testing::ScratchDir dir;
  ASSERT_TRUE(WriteProfileDir(*run, dir.Path()).ok());
  auto loaded = LoadProfile(dir.Path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->summary.has_value());
  Analysis a = Analyze(*loaded);
  EXPECT_TRUE(a.detailed);
  EXPECT_DOUBLE_EQ(a.step_us, run->step_us);
  EXPECT_EQ(a.grid.size(), 9u);
  std::set<std::vector<std::string>> fusions;
  for (const auto& st : a.next_steps) {
    if (st.kind == "fuse") fusions.insert(st.ops);
  }
  EXPECT_TRUE(fusions.count({"ffn.intermediate.matmul", "ffn.intermediate.bias"}));
  EXPECT_TRUE(fusions.count({"ffn.intermediate.bias", "ffn.gelu"}));  // element-wise chain
  // The softmax is not element-wise: the scale and it are advised as a FlashAttention.
  EXPECT_TRUE(fusions.count({"attention.scores.scale", "attention.softmax"}));
  EXPECT_FALSE(fusions.count({"attention.softmax", "attention.context.merge"})) << "a view, not a kernel";
  EXPECT_EQ(a.top_ops.size(), 10u);
  nlohmann::json j = a.ToJson();
  EXPECT_EQ(j["grid"].size(), 9u);
  EXPECT_FALSE(a.ToText().empty());
}

// The analysis of `g`'s simulated run on the 910B2, written as a profile folder and read
// back as `analyze` reads one (empty, with a failure recorded, when any step fails).
Analysis AnalyzeSimulatedRun(const Graph& g) {
  auto run = RunGraph(g, testing::Soc910B2());
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  testing::ScratchDir dir;
  const Status written = run.ok() ? WriteProfileDir(*run, dir.Path()) : run.status();
  EXPECT_TRUE(written.ok()) << written.ToString();
  auto loaded = written.ok() ? LoadProfile(dir.Path()) : Result<LoadedProfile>(written);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? Analyze(*loaded) : Analysis{};
}

// `fuse` starts chains at MatMul, BatchMatMul and Conv2D, not Gemm: the advice to fuse a
// Gemm's epilogue says how (found by an audit: analyze advised what fuse silently skipped).
TEST(Analysis, AGemmsEpilogueAdviceSaysWhenFuseTakesIt) {
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"inputs", {{{"name", "x"}, {"shape", {1024, 768}}, {"dtype", "float16"}}}},
                          {"weights", {{{"name", "w"}, {"shape", {768, 3072}}, {"dtype", "float16"}}}},
                          {"outputs", {"z"}},
                          {"nodes",
                           {{{"name", "fc"}, {"op", "Gemm"}, {"inputs", {"x", "w"}},
                             {"outputs", {{{"name", "y"}, {"shape", {1024, 3072}}, {"dtype", "float16"}}}}},
                            {{"name", "act"}, {"op", "Relu"}, {"inputs", {"y"}},
                             {"outputs", {{{"name", "z"}, {"shape", {1024, 3072}}, {"dtype", "float16"}}}}}}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const Analysis a = AnalyzeSimulatedRun(*g);
  const NextStep* fuse = nullptr;
  for (const auto& st : a.next_steps) {
    if (st.kind == "fuse") fuse = &st;
  }
  ASSERT_NE(fuse, nullptr);
  EXPECT_NE(fuse->reason.find("FusedMatMul with 'Relu'"), std::string::npos) << fuse->reason;
  EXPECT_NE(fuse->reason.find("`tunefleet fuse` takes a Gemm's chain when the Gemm scales by neither alpha nor beta"),
            std::string::npos)
      << fuse->reason;
  EXPECT_EQ(FindFusionChains(*g).size(), 1u) << "fuse takes this Gemm's chain, as the advice says";
}

// MobileNet's depthwise conv and its ReLU6: advised as the DepthwiseConv2D's epilogue, as
// `fuse` takes it; the residual Add after them is not advised into it.
TEST(Analysis, ADepthwiseConvsUnaryEpilogueIsAdvisedAsFuseTakesIt) {
  auto tensor = [](const char* name, std::vector<int64_t> shape) {
    return nlohmann::json{{"name", name}, {"shape", shape}, {"dtype", "float16"}};
  };
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"inputs", {tensor("x", {32, 96, 56, 56})}},
                          {"weights", {tensor("w", {96, 1, 3, 3})}},
                          {"outputs", {"y"}},
                          {"nodes",
                           {{{"name", "dw"}, {"op", "DepthwiseConv2D"}, {"inputs", {"x", "w"}}, {"attrs", {{"pads", "1"}}},
                             {"outputs", {tensor("d", {32, 96, 56, 56})}}},
                            {{"name", "relu6"}, {"op", "Clip"}, {"inputs", {"d"}}, {"outputs", {tensor("r", {32, 96, 56, 56})}}},
                            {{"name", "residual"}, {"op", "Add"}, {"inputs", {"r", "x"}},
                             {"outputs", {tensor("y", {32, 96, 56, 56})}}}}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::map<std::vector<std::string>, std::string> fusions;
  for (const auto& st : AnalyzeSimulatedRun(*g).next_steps) {
    if (st.kind == "fuse") fusions[st.ops] = st.reason;
  }
  const std::vector<std::string> conv_and_relu6 = {"dw", "relu6"};
  ASSERT_TRUE(fusions.count(conv_and_relu6));
  const std::string& reason = fusions[conv_and_relu6];
  EXPECT_NE(reason.find("DepthwiseConv2D with 'Clip' ending attrs.epilogue"), std::string::npos) << reason;
  EXPECT_TRUE(fusions.count(std::vector<std::string>{"relu6", "residual"})) << "an element-wise chain";
  ASSERT_EQ(FindFusionChains(*g).size(), 1u);
  EXPECT_EQ(FindFusionChains(*g)[0].steps.size(), 1u) << "fuse takes the Clip into the conv, as advised";
}

// A GroupNorm as torch exports it: the InstanceNorm's output, viewed back, scaled per
// channel. Advised as the InstanceNorm taking the scale, as `fuse` takes it.
TEST(Analysis, AGroupNormsAffineIsAdvisedIntoItsInstanceNorm) {
  auto tensor = [](const char* name, std::vector<int64_t> shape) {
    return nlohmann::json{{"name", name}, {"shape", shape}, {"dtype", "float16"}};
  };
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"inputs", {tensor("x", {1, 32, 4096})}},
                          {"weights", {tensor("ones", {32}), tensor("zeros", {32}), tensor("gamma", {128, 1, 1})}},
                          {"outputs", {"y"}},
                          {"nodes",
                           {{{"name", "norm"}, {"op", "InstanceNorm"}, {"inputs", {"x", "ones", "zeros"}},
                             {"outputs", {tensor("n", {1, 32, 4096})}}},
                            {{"name", "back"}, {"op", "Reshape"}, {"inputs", {"n"}},
                             {"outputs", {tensor("b", {1, 128, 32, 32})}}},
                            {{"name", "scale"}, {"op", "Mul"}, {"inputs", {"b", "gamma"}},
                             {"outputs", {tensor("y", {1, 128, 32, 32})}}}}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::map<std::vector<std::string>, std::string> fusions;
  for (const auto& st : AnalyzeSimulatedRun(*g).next_steps) {
    if (st.kind == "fuse") fusions[st.ops] = st.reason;
  }
  const std::vector<std::string> norm_and_scale = {"norm", "scale"};
  ASSERT_TRUE(fusions.count(norm_and_scale));
  EXPECT_NE(fusions[norm_and_scale].find("InstanceNorm taking its operand as its scale"), std::string::npos)
      << fusions[norm_and_scale];
  ASSERT_EQ(FindFusionChains(*g).size(), 1u);
  EXPECT_EQ(FindFusionChains(*g)[0].steps.size(), 1u) << "fuse takes the Mul into the norm, as advised";
}

TEST(Analysis, AnAttentionsScoresAndProbabilitiesAreAdvisedIntoAFlashAttention) {
  auto tensor = [](const char* name, std::vector<int64_t> shape) {
    return nlohmann::json{{"name", name}, {"shape", shape}, {"dtype", "float16"}};
  };
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"inputs", {tensor("q", {2, 8, 4096, 40}), tensor("k", {2, 8, 40, 4096}), tensor("v", {2, 8, 4096, 40})}},
                          {"outputs", {"o"}},
                          {"nodes",
                           {{{"name", "scores"}, {"op", "BatchMatMul"}, {"inputs", {"q", "k"}},
                             {"outputs", {tensor("s", {2, 8, 4096, 4096})}}},
                            {{"name", "softmax"}, {"op", "Softmax"}, {"inputs", {"s"}},
                             {"outputs", {tensor("p", {2, 8, 4096, 4096})}}},
                            {{"name", "context"}, {"op", "BatchMatMul"}, {"inputs", {"p", "v"}},
                             {"outputs", {tensor("o", {2, 8, 4096, 40})}}}}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::map<std::vector<std::string>, std::string> fusions;
  for (const auto& st : AnalyzeSimulatedRun(*g).next_steps) {
    if (st.kind == "fuse") fusions[st.ops] = st.reason;
  }
  for (const std::vector<std::string>& edge : {std::vector<std::string>{"scores", "softmax"}, {"softmax", "context"}}) {
    ASSERT_TRUE(fusions.count(edge)) << edge[0];
    EXPECT_NE(fusions[edge].find("as one op: FlashAttention"), std::string::npos) << fusions[edge];
    EXPECT_NE(fusions[edge].find("(512.0 MiB)"), std::string::npos) << fusions[edge];
  }
  ASSERT_EQ(FindAttentionFusions(*g).size(), 1u) << "fuse forms it, as advised";

  // A classifier's Softmax over its logits plus a bias: no attention, no advice.
  auto head = GraphFromJson({{"soc", "Ascend910B2"},
                             {"inputs", {tensor("logits", {4096, 1000})}},
                             {"weights", {tensor("b", {1000})}},
                             {"outputs", {"probs"}},
                             {"nodes",
                              {{{"name", "bias"}, {"op", "Add"}, {"inputs", {"logits", "b"}},
                                {"outputs", {tensor("z", {4096, 1000})}}},
                               {{"name", "softmax"}, {"op", "Softmax"}, {"inputs", {"z"}},
                                {"outputs", {tensor("probs", {4096, 1000})}}}}}});
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  for (const auto& st : AnalyzeSimulatedRun(*head).next_steps) {
    EXPECT_EQ(st.reason.find("FlashAttention"), std::string::npos) << st.reason;
  }
}

}  // namespace
}  // namespace tunefleet::profile
