// Verify: the tuned run differs from the baseline exactly where configs were given, by
// what the simulator says those configs take; the report carries AOE's keys.
#include "worker/profile/verify.h"

#include <limits>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/profile/test_util.h"
#include "tunefleet/common/graph.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::profile {
namespace {

using testing::Node;
using testing::Tensor;

Graph TwoOpGraph() {
  auto g = GraphFromJson({{"name", "two"},
                          {"soc", "Ascend910B2"},
                          {"inputs", {Tensor("x", {1024, 1024})}},
                          {"weights", {Tensor("w", {1024, 1024})}},
                          {"outputs", {"y"}},
                          {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("h", {1024, 1024})),
                                     Node("act", "Relu", {"h"}, Tensor("y", {1024, 1024}))}}});
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

TEST(Verify, WithoutConfigsTheTunedRunIsTheBaseline) {
  const SocSpec soc = testing::Soc910B2();
  auto r = Verify(TwoOpGraph(), soc, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->baseline_us, r->result_us);
  EXPECT_EQ(r->TunedKernels(), 0u);
  ASSERT_EQ(r->ops.size(), 2u);
  for (const auto& op : r->ops) EXPECT_DOUBLE_EQ(op.before_us, op.after_us) << op.name;
  EXPECT_EQ(r->ToJson()["model_performance_improvement"], "0.00%");
}

// The fastest of 5000 configs spread over the op's space and its default, and its latency
// (launch + duration: what `tune` measures and the knowledge base keeps).
std::pair<Config, double> FastConfig(const OpKey& key, const SocSpec& soc) {
  auto problem = MakeTuningProblem(key, soc);
  EXPECT_TRUE(problem.ok()) << problem.status().ToString();
  if (!problem.ok()) return {};
  Config best = problem->default_config;
  auto base = sim::Simulate(*problem, best, soc);
  double best_us = base.ok() ? base->latency_us : std::numeric_limits<double>::infinity();
  double best_latency_us = base.ok() ? base->latency_us : 0;
  const ConfigIndex stride = std::max<ConfigIndex>(1, problem->space.size() / 5000);
  for (ConfigIndex i = 0; i < problem->space.size(); i += stride) {
    Config c = problem->space.Decode(i);
    if (!problem->space.Validate(c).ok()) continue;
    auto est = sim::Simulate(*problem, c, soc);
    if (est.ok() && est->latency_us < best_us) {
      best_us = est->latency_us;
      best_latency_us = est->latency_us;
      best = c;
    }
  }
  return {best, best_latency_us};
}

TEST(Verify, ATunedOpTakesWhatItsConfigTakesAndTheStepGainsIt) {
  const SocSpec soc = testing::Soc910B2();
  const Graph graph = TwoOpGraph();
  const OpKey key = NodeOpKey(graph, graph.nodes[0]);
  // Faster than the default tiling here.
  const auto [best, best_latency_us] = FastConfig(key, soc);
  ASSERT_FALSE(best.empty());
  auto r = Verify(graph, soc, {{key.Canonical(), best}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->ops.size(), 2u);
  const OpChange& mm = r->ops[0].name == "mm" ? r->ops[0] : r->ops[1];
  const OpChange& act = r->ops[0].name == "mm" ? r->ops[1] : r->ops[0];
  EXPECT_TRUE(mm.tuned);
  EXPECT_FALSE(act.tuned);
  EXPECT_NEAR(mm.after_us, best_latency_us, 1e-9 * best_latency_us)
      << "the tuned op takes what `tune` measured for its config, launch included";
  auto problem = MakeTuningProblem(key, soc);
  ASSERT_TRUE(problem.ok());
  auto at_default = sim::Simulate(*problem, problem->default_config, soc);
  ASSERT_TRUE(at_default.ok());
  EXPECT_NEAR(mm.before_us, at_default->latency_us, 1e-9 * at_default->latency_us)
      << "and before it what `tune` reports as the default tiling's latency";
  ASSERT_LT(mm.after_us, mm.before_us) << "pick a test config faster than the default";
  EXPECT_DOUBLE_EQ(act.after_us, act.before_us);
  // Two ops in a chain: the step gains what the MatMul gained.
  EXPECT_NEAR(r->baseline_us - r->result_us, mm.before_us - mm.after_us, 1e-6);
  nlohmann::json j = r->ToJson();
  EXPECT_NEAR(j["model_baseline_performance(ms)"].get<double>(), r->baseline_us / 1000, 1e-12);
  EXPECT_NEAR(j["model_result_performance(ms)"].get<double>(), r->result_us / 1000, 1e-12);
  ASSERT_EQ(j["repo_modified_operators"].size(), 1u);
  EXPECT_EQ(j["repo_modified_operators"][0]["op_name"], "mm");
  EXPECT_EQ(j["untuned_operators"], nlohmann::json::array({"act"}));
}

// Regression: after-times were matched by name, so a node called like another's backward
// kernel ("a_grad") was given that kernel's time.
TEST(Verify, KernelsAreMatchedByNodeNotByNameInTraining) {
  auto g = GraphFromJson({{"name", "clash"},
                          {"soc", "Ascend910B2"},
                          {"training", true},
                          {"inputs", {Tensor("x", {1024, 1024})}},
                          {"weights", {Tensor("w", {1024, 1024})}},
                          {"outputs", {"y"}},
                          {"nodes", {Node("a", "MatMul", {"x", "w"}, Tensor("h", {1024, 1024})),
                                     Node("a_grad", "Relu", {"h"}, Tensor("y", {1024, 1024}))}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto r = Verify(*g, testing::Soc910B2(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->ops.size(), 4u) << "two forward kernels and their backward ones";
  for (const auto& op : r->ops) EXPECT_DOUBLE_EQ(op.after_us, op.before_us) << op.name << (op.backward ? " (backward)" : "");
  EXPECT_TRUE(r->ToJson()["training"].get<bool>());
}

// With every combination of forward transpose flags, each backward GEMM reads X, W and dY
// as they are stored and computes its gradient in its input's stored shape.
TEST(Verify, BackwardGemmsReadTheirOperandsAsStoredAndWriteTheGradientsStoredShape) {
  const int64_t m = 256, k = 512, n = 128;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      OpKey fwd;
      fwd.soc = "Ascend910B2";
      fwd.op_type = "MatMul";
      fwd.inputs = {TensorDesc{ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, "float16", "ND"},
                    TensorDesc{tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, "float16", "ND"}};
      if (ta) fwd.attrs["transpose_a"] = "1";
      if (tb) fwd.attrs["transpose_b"] = "1";
      auto keys = BackwardGemmKeys(fwd);
      ASSERT_TRUE(keys.ok()) << keys.status().ToString();
      ASSERT_EQ(keys->size(), 2u);
      const std::string flags = fmt::format("transpose_a={} transpose_b={}", ta, tb);
      for (size_t g = 0; g < 2; ++g) {
        const OpKey& key = (*keys)[g];
        auto shape = CubeGemmShapeFromOpKey(key);
        ASSERT_TRUE(shape.ok()) << flags << ": " << key.Canonical() << ": " << shape.status().ToString();
        // The gradient has its input's stored shape; the GEMM's K is what the forward summed
        // the other way: N for dX, M for dW.
        const std::vector<int64_t>& stored = fwd.inputs[g].shape;
        EXPECT_EQ((std::vector<int64_t>{shape->m, shape->n}), stored) << flags << ": " << key.Canonical();
        EXPECT_EQ(shape->k, g == 0 ? n : m) << flags << ": " << key.Canonical();
        // Every operand is a tensor of the forward step, as stored: X, W or dY [M, N].
        for (const TensorDesc& in : key.inputs) {
          EXPECT_TRUE(in.shape == fwd.inputs[0].shape || in.shape == fwd.inputs[1].shape ||
                      in.shape == (std::vector<int64_t>{m, n}))
              << flags << ": " << key.Canonical();
        }
      }
    }
  }
}

// A conv's dY is NCHW, channel-major ([Cout, pixels]): its GEMMs read it so, and a batched
// GEMM keeps its forward's leading dimensions (found by an audit: dY was read as transposed
// pixel-major, and [32, 12] became [384], so one GEMM had two keys).
TEST(Verify, AConvsBackwardReadsDyChannelMajorAndABatchKeepsItsDimensions) {
  OpKey conv;
  conv.soc = "Ascend910B2";
  conv.op_type = "Conv2D";
  conv.inputs = {TensorDesc{{4, 16, 32, 32}, "float16", "ND"}, TensorDesc{{32, 16, 3, 3}, "float16", "ND"}};
  conv.attrs["pads"] = "1,1,1,1";
  auto keys = BackwardGemmKeys(conv);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ((*keys)[0].Display(), "MatMul[32x144,32x4096]{transpose_a=1}@Ascend910B2") << "dX: W [Cout, K] read as [K, Cout], dY";
  EXPECT_EQ((*keys)[1].Display(), "MatMul[32x4096,144x4096]{transpose_b=1}@Ascend910B2") << "dW: dY, im2col [K, M] read as [M, K]";
  OpKey bmm;
  bmm.soc = "Ascend910B2";
  bmm.op_type = "BatchMatMul";
  bmm.inputs = {TensorDesc{{32, 12, 128, 64}, "float16", "ND"}, TensorDesc{{32, 12, 64, 128}, "float16", "ND"}};
  keys = BackwardGemmKeys(bmm);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ((*keys)[0].Display(), "BatchMatMul[32x12x128x128,32x12x64x128]{transpose_b=1}@Ascend910B2");
  EXPECT_EQ((*keys)[1].Display(), "BatchMatMul[32x12x128x64,32x12x128x128]{transpose_a=1}@Ascend910B2");
}

// In a training step a cube kernel's backward runs its two GEMMs (dX, dW), each an op of
// its own shape: tuned, the backward row takes what their configs take.
TEST(Verify, ACubeKernelsBackwardTakesItsTunedGemmsConfigs) {
  const SocSpec soc = testing::Soc910B2();
  auto g = GraphFromJson({{"name", "train"},
                          {"soc", "Ascend910B2"},
                          {"training", true},
                          {"inputs", {Tensor("x", {2048, 1024})}},
                          {"weights", {Tensor("w", {1024, 4096})}},
                          {"outputs", {"y"}},
                          {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("h", {2048, 4096})),
                                     Node("act", "Relu", {"h"}, Tensor("y", {2048, 4096}))}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto kernels = TunableKernels(*g);
  ASSERT_TRUE(kernels.ok()) << kernels.status().ToString();
  std::vector<std::string> names;
  for (const auto& k : *kernels) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mm", "mm_grad.dX", "mm_grad.dW", "act"}));
  const OpKey& dx = (*kernels)[1].key;
  const OpKey& dw = (*kernels)[2].key;
  EXPECT_EQ(dx.inputs[0].shape, (std::vector<int64_t>{2048, 4096})) << "dY [M, N]";
  EXPECT_EQ(dx.inputs[1].shape, (std::vector<int64_t>{1024, 4096})) << "W [K, N] read as W^T";
  EXPECT_EQ(dx.attrs, (std::map<std::string, std::string>{{"transpose_b", "1"}}));
  EXPECT_EQ(dw.inputs[0].shape, (std::vector<int64_t>{2048, 1024})) << "X [M, K] read as X^T";
  EXPECT_EQ(dw.inputs[1].shape, (std::vector<int64_t>{2048, 4096})) << "dY [M, N]";
  EXPECT_EQ(dw.attrs, (std::map<std::string, std::string>{{"transpose_a", "1"}}));
  const auto [dx_config, dx_us] = FastConfig(dx, soc);
  const auto [dw_config, dw_us] = FastConfig(dw, soc);
  auto r = Verify(*g, soc, {{dx.Canonical(), dx_config}, {dw.Canonical(), dw_config}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const OpChange* grad = nullptr;
  for (const auto& op : r->ops) {
    if (op.name == "mm_grad") grad = &op;
    if (op.name != "mm_grad") {
      EXPECT_FALSE(op.tuned) << op.name;
    }
  }
  ASSERT_NE(grad, nullptr);
  EXPECT_TRUE(grad->tuned);
  EXPECT_NEAR(grad->after_us, dx_us + dw_us, 1e-9 * (dx_us + dw_us)) << "both GEMMs at their configs";
  EXPECT_LT(grad->after_us, grad->before_us);
  EXPECT_LT(r->result_us, r->baseline_us);
  auto half = Verify(*g, soc, {{dx.Canonical(), dx_config}});
  ASSERT_TRUE(half.ok());
  for (const auto& op : half->ops) EXPECT_FALSE(op.tuned) << op.name << ": its dW runs the default tiling";
  // A node named like a backward GEMM would make two kernels of one name.
  auto clash = GraphFromJson({{"soc", "Ascend910B2"},
                              {"training", true},
                              {"inputs", {Tensor("x", {2048, 1024})}},
                              {"weights", {Tensor("w", {1024, 4096})}},
                              {"outputs", {"y"}},
                              {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("h", {2048, 4096})),
                                         Node("mm_grad.dW", "Relu", {"h"}, Tensor("y", {2048, 4096}))}}});
  ASSERT_TRUE(clash.ok());
  auto refused = TunableKernels(*clash);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node 'mm_grad.dW' is named like node 'mm''s backward GEMM"),
            std::string::npos)
      << refused.status().ToString();
}

// A fused cube op's backward is its GEMMs plus 2x its epilogue, the epilogue measured at
// default tilings: tuning the forward moves the forward only (an audit found the backward
// shrinking with the forward's config).
TEST(Verify, TuningAFusedKernelsForwardLeavesItsBackwardAsItWas) {
  const SocSpec soc = testing::Soc910B2();
  nlohmann::json fused = Node("mm", "FusedMatMul", {"x", "w", "b"}, Tensor("y", {4096, 768}));
  fused["attrs"] = {{"epilogue", "BiasAdd"}};  // BERT-base's Q projection with its bias
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"training", true},
                          {"inputs", {Tensor("x", {4096, 768})}},
                          {"weights", {Tensor("w", {768, 768}), Tensor("b", {768})}},
                          {"outputs", {"y"}},
                          {"nodes", {fused}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const OpKey key = NodeOpKey(*g, g->nodes[0]);
  const auto [config, duration] = FastConfig(key, soc);
  auto r = Verify(*g, soc, {{key.Canonical(), config}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->ops.size(), 2u);
  for (const auto& op : r->ops) {
    if (op.backward) {
      EXPECT_DOUBLE_EQ(op.after_us, op.before_us) << "its GEMMs and epilogue run their default tilings";
      EXPECT_FALSE(op.tuned);
    } else {
      EXPECT_LT(op.after_us, op.before_us) << "pick a shape whose default tiling can be beaten";
    }
  }
}

TEST(Verify, AConfigThatDoesNotFitItsOpNamesTheNode) {
  const SocSpec soc = testing::Soc910B2();
  const Graph graph = TwoOpGraph();
  auto r = Verify(graph, soc, {{NodeOpKey(graph, graph.nodes[0]).Canonical(), Config{1, 2}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'mm'"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace tunefleet::profile
