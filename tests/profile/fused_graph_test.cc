// The fused BERT-base layer and ResNet-50 block (examples/*_fused.json, what subgraph
// tuning's UB fusion makes of bert_base_layer.json and resnet50_block.json) on the profiler: same inputs and output, fewer
// kernels, a shorter step, fused cube ops reported as MIX_AIC with their epilogue's vector
// time, and their tile timelines show the vector cores beside the cube cores.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "worker/profile/graph_run.h"
#include "worker/profile/tile_trace.h"

namespace tunefleet::profile {
namespace {

RunProfile MustRun(const Graph& g) {
  auto run = RunGraph(g, testing::Soc910B2(), {});
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? *run : RunProfile{};
}

TEST(FusedGraph, TheFusedBertLayerHasAShorterStepThanTheUnfusedOne) {
  const Graph unfused_graph = testing::LoadExample("bert_base_layer.json");
  const Graph fused_graph = testing::LoadExample("bert_base_layer_fused.json");
  // The same model: inputs, weights and outputs.
  ASSERT_EQ(fused_graph.inputs.size(), unfused_graph.inputs.size());
  EXPECT_EQ(fused_graph.weights.size(), unfused_graph.weights.size());
  EXPECT_EQ(fused_graph.outputs, unfused_graph.outputs);
  const RunProfile unfused = MustRun(unfused_graph);
  const RunProfile fused = MustRun(fused_graph);
  double unfused_kernels = 0, fused_kernels = 0;
  for (const auto& op : unfused.ops) unfused_kernels += op.launch_us + op.duration_us;
  for (const auto& op : fused.ops) fused_kernels += op.launch_us + op.duration_us;
  std::printf("BERT-base layer: unfused step %.1f us (%zu kernels, %.1f us of kernels), fused step %.1f us (%zu kernels, %.1f us)\n",
              unfused.step_us, unfused.ops.size(), unfused_kernels, fused.step_us, fused.ops.size(), fused_kernels);
  EXPECT_EQ(unfused.ops.size(), 22u);
  EXPECT_EQ(fused.ops.size(), 11u);
  EXPECT_LT(fused.step_us, unfused.step_us);
  EXPECT_LT(fused_kernels, 0.85 * unfused_kernels);
  EXPECT_LT(fused.hbm_bytes, unfused.hbm_bytes);
  // Fewer intermediates to hold.
  EXPECT_LT(fused.memory.no_reuse_bytes, unfused.memory.no_reuse_bytes);
}

TEST(FusedGraph, TheFusedResnetBlockHasAShorterStepThanTheUnfusedOne) {
  const RunProfile unfused = MustRun(testing::LoadExample("resnet50_block.json"));
  const RunProfile fused = MustRun(testing::LoadExample("resnet50_block_fused.json"));
  std::printf("ResNet-50 stem + block: unfused %zu kernels, compute %.1f us; fused %zu kernels, compute %.1f us\n",
              unfused.ops.size(), unfused.compute_end_us - unfused.compute_start_us, fused.ops.size(),
              fused.compute_end_us - fused.compute_start_us);
  EXPECT_EQ(fused.ops.size(), 5u);
  EXPECT_LT(fused.step_us, unfused.step_us);
  EXPECT_LT(fused.compute_end_us - fused.compute_start_us, 0.8 * (unfused.compute_end_us - unfused.compute_start_us));
  EXPECT_LT(fused.hbm_bytes, unfused.hbm_bytes);
}

TEST(FusedGraph, FusedCubeOpsAreMixTasksWithTheirEpiloguesVectorTime) {
  const RunProfile run = MustRun(testing::LoadExample("bert_base_layer_fused.json"));
  int mix = 0;
  for (const auto& op : run.ops) {
    if (op.op_type.rfind("Fused", 0) != 0) continue;
    ++mix;
    EXPECT_EQ(op.task_type, "MIX_AIC") << op.name;
    EXPECT_EQ(op.unit_cores, testing::Soc910B2().ai_core_cnt) << op.name;
    EXPECT_GT(op.estimate.BusyUs(sim::Pipe::kCube), 0.0) << op.name;
    EXPECT_GT(op.estimate.BusyUs(sim::Pipe::kVector), 0.0) << op.name;
    EXPECT_GE(op.duration_us + op.launch_us + 1e-9, op.roofline_us) << op.name;
  }
  EXPECT_EQ(mix, 7);  // Q, K, V, scores, attention output, FFN1, FFN2
}

TEST(FusedGraph, AFusedOpsTileTimelineShowsItsVectorCores) {
  const Graph g = testing::LoadExample("bert_base_layer_fused.json");
  auto tiles = TileTimelines(g, testing::Soc910B2(), {"ffn.intermediate.matmul_bias_gelu"}, {});
  ASSERT_TRUE(tiles.ok()) << tiles.status().ToString();
  ASSERT_EQ(tiles->size(), 1u);
  std::set<int> cube_cores, vector_cores;
  for (const auto& iv : tiles->front().intervals) {
    (iv.core < testing::Soc910B2().ai_core_cnt ? cube_cores : vector_cores).insert(iv.core);
    if (iv.core >= testing::Soc910B2().ai_core_cnt) {
      EXPECT_NE(iv.label.find("epilogue"), std::string::npos) << iv.label;
    }
  }
  EXPECT_FALSE(cube_cores.empty());
  EXPECT_FALSE(vector_cores.empty());
}

}  // namespace
}  // namespace tunefleet::profile
