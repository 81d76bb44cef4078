// Graph execution on the simulator: dependencies, streams, PCIe copies, memory planning,
// backward pass and the ring all-reduce.
#include "worker/profile/graph_run.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::profile {
namespace {

using testing::Node;
using testing::Tensor;

RunProfile MustRun(const Graph& g, const RunOptions& options = {}) {
  auto run = RunGraph(g, testing::Soc910B2(), options);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? *run : RunProfile{};
}

const OpRecord* Find(const RunProfile& run, const std::string& name) {
  for (const auto& op : run.ops) if (op.name == name) return &op;
  return nullptr;
}

// Two independent small element-wise branches joined by an Add.
Graph SmallBranches() {
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"inputs", {Tensor("a", {16, 512}), Tensor("b", {16, 512})}},
                      {"outputs", {"c"}},
                      {"nodes", {Node("left", "Relu", {"a"}, Tensor("a1", {16, 512})),
                                 Node("right", "Sigmoid", {"b"}, Tensor("b1", {16, 512})),
                                 Node("join", "Add", {"a1", "b1"}, Tensor("c", {16, 512}))}}};
  auto g = GraphFromJson(j);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

// A two-layer MLP, trained data-parallel on `devices` devices.
Graph TrainingMlp(int devices) {
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"training", true},
                      {"devices", devices},
                      {"inputs", {Tensor("x", {2048, 1024})}},
                      {"weights", {Tensor("w1", {1024, 4096}), Tensor("w2", {4096, 1024})}},
                      {"outputs", {"y"}},
                      {"nodes", {Node("fc1", "MatMul", {"x", "w1"}, Tensor("h", {2048, 4096})),
                                 Node("act", "Relu", {"h"}, Tensor("ha", {2048, 4096})),
                                 Node("fc2", "MatMul", {"ha", "w2"}, Tensor("y", {2048, 1024}))}}};
  auto g = GraphFromJson(j);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

// A tall x [65536,64] x w [64,64]: its backward's dX runs on every core, its dW
// (64x65536x64) on one. The one gradient row counts their core-time, not the wider one's.
TEST(GraphRun, ABackwardRowsBlockDimCountsTheCoreTimeOfBothItsKernels) {
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"training", true},
                      {"inputs", {Tensor("x", {65536, 64})}},
                      {"weights", {Tensor("w", {64, 64})}},
                      {"outputs", {"y"}},
                      {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("y", {65536, 64}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  RunProfile run = MustRun(*g);
  const OpRecord* grad = Find(run, "mm_grad");
  ASSERT_NE(grad, nullptr);
  const SocSpec& soc = testing::Soc910B2();
  auto kernel = [&](int64_t m, int64_t k, int64_t n) {
    OpKey key;
    key.soc = soc.name;
    key.op_type = "MatMul";
    key.inputs = {{{m, k}, "float16", "ND"}, {{k, n}, "float16", "ND"}};
    TuningProblem p = MakeTuningProblem(key, soc).value();
    return sim::Simulate(p, p.default_config, soc).value();
  };
  const sim::KernelEstimate dx = kernel(65536, 64, 64), dw = kernel(64, 65536, 64);
  ASSERT_GT(dx.block_dim, dw.block_dim);
  const double core_time = dx.duration_us * static_cast<double>(dx.block_dim) + dw.duration_us * static_cast<double>(dw.block_dim);
  EXPECT_NEAR(grad->duration_us * static_cast<double>(grad->estimate.block_dim), core_time, 0.5 * grad->duration_us)
      << "block dim " << grad->estimate.block_dim;
  EXPECT_LT(grad->estimate.block_dim, dx.block_dim);
}

// Regression: a graph whose last node is a view (a Reshape as its output) failed with
// "schedule made no progress (a bug)": the views finished at once after the last kernel.
TEST(GraphRun, AGraphEndingInAViewRuns) {
  auto g = GraphFromJson({{"soc", "Ascend910B2"},
                          {"inputs", {Tensor("x", {256, 128})}},
                          {"weights", {Tensor("w", {128, 256})}},
                          {"outputs", {"flat"}},
                          {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("h", {256, 256})),
                                     Node("flatten", "Reshape", {"h"}, Tensor("flat", {65536}))}}});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  RunProfile run = MustRun(*g);
  ASSERT_EQ(run.ops.size(), 1u);
  EXPECT_GT(run.step_us, run.ops[0].EndUs());
}

TEST(GraphRun, NoOpStartsBeforeEveryProducerOfItsInputsHasFinished) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  RunProfile run = MustRun(g);
  ASSERT_EQ(run.ops.size(), 22u);  // 26 nodes, 4 of them views
  for (const auto& e : run.edges) {
    const OpRecord* from = Find(run, e.from);
    const OpRecord* to = Find(run, e.to);
    ASSERT_TRUE(from && to) << e.from << " -> " << e.to;
    EXPECT_LE(from->EndUs(), to->start_us - to->launch_us + 1e-9) << e.from << " -> " << e.to;
  }
  // Every producer -> consumer pair of the graph (through views) is among the edges.
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& e : run.edges) edges.insert({e.from, e.to});
  EXPECT_TRUE(edges.count({"attention.q.bias", "attention.scores"}));  // through the q.heads view
  EXPECT_TRUE(edges.count({"attention.softmax", "attention.context"}));
  EXPECT_TRUE(edges.count({"attention.layernorm", "ffn.residual"}));
}

TEST(GraphRun, OpsRunInATopologicalOrderOfTheGraph) {
  Graph g = testing::LoadExample("resnet50_block.json");
  RunProfile run = MustRun(g);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < run.ops.size(); ++i) position[run.ops[i].name] = i;
  for (const auto& node : g.nodes) {
    for (const auto& in : node.inputs) {
      int p = g.ProducerOf(in);
      if (p >= 0) {
        EXPECT_LT(position.at(g.nodes[p].name), position.at(node.name)) << node.name;
      }
    }
  }
}

// Backward ops wait for the whole forward (one flag per backward op now, not a dependency
// on every forward op: that list was quadratic in a training graph's size).
TEST(GraphRun, EveryBackwardOpStartsAfterTheLastForwardOpEnds) {
  for (const Graph& g : {TrainingMlp(1), TrainingMlp(4)}) {
    RunProfile run = MustRun(g);
    double forward_end = 0, backward_start = std::numeric_limits<double>::infinity();
    size_t backward = 0;
    for (const auto& op : run.ops) {
      if (op.backward) {
        backward_start = std::min(backward_start, op.start_us - op.launch_us);
        ++backward;
      } else {
        forward_end = std::max(forward_end, op.EndUs());
      }
    }
    EXPECT_EQ(backward, 3u) << g.name;
    EXPECT_GE(backward_start + 1e-9, forward_end) << g.name;
  }
}

// GraphIndex answers every lookup as the Graph's own scans do: names of inputs, weights,
// node outputs (through views) and one the graph lacks.
TEST(GraphRun, TheGraphIndexAnswersAsTheGraphsOwnLookups) {
  for (const Graph& g : {testing::LoadExample("bert_base_layer.json"), TrainingMlp(1), SmallBranches()}) {
    const GraphIndex index(g);
    std::vector<std::string> names = {"no such tensor", ""};
    for (const auto& t : g.inputs) names.push_back(t.name);
    for (const auto& t : g.weights) names.push_back(t.name);
    for (const auto& n : g.nodes) {
      for (const auto& t : n.outputs) names.push_back(t.name);
    }
    for (const std::string& name : names) {
      EXPECT_EQ(index.FindTensor(name), g.FindTensor(name)) << name;
      EXPECT_EQ(index.ProducerOf(name), g.ProducerOf(name)) << name;
      EXPECT_EQ(index.IsWeight(name), g.IsWeight(name)) << name;
    }
    for (const auto& n : g.nodes) {
      if (!n.IsView()) {
        EXPECT_EQ(NodeOpKey(index, n), NodeOpKey(g, n)) << n.name;
      }
    }
  }
}

TEST(GraphRun, H2DCopiesPrecedeTheFirstOpAndD2HFollowsTheLast) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  RunProfile run = MustRun(g);
  double first_op = run.ops.front().start_us - run.ops.front().launch_us, last_op = 0;
  for (const auto& op : run.ops) last_op = std::max(last_op, op.EndUs());
  int h2d = 0, d2h = 0;
  const SocSpec& soc = testing::Soc910B2();
  for (const auto& tr : run.transfers) {
    if (tr.name.rfind("H2D", 0) == 0) {
      ++h2d;
      EXPECT_GE(tr.start_us, g.host_preprocess_us);
      EXPECT_LE(tr.EndUs(), first_op + 1e-9);
      // bytes / PCIe bandwidth + latency (SoC ini: pcie_bandwidth_gbps, pcie_latency_us).
      EXPECT_NEAR(tr.duration_us, soc.pcie_latency_us + tr.bytes / (soc.pcie_bandwidth_gbps * 1e3), 1e-9);
    }
    if (tr.name.rfind("D2H", 0) == 0) {
      ++d2h;
      EXPECT_GE(tr.start_us, last_op - 1e-9);
    }
  }
  EXPECT_EQ(h2d, 1);
  EXPECT_EQ(d2h, 1);
  EXPECT_EQ(run.transfers.front().unit, "Host");
  EXPECT_NEAR(run.step_us, run.transfers.back().EndUs(), 1e-9);
  EXPECT_GT(run.h2d_us, 0);
  EXPECT_GT(run.d2h_us, 0);
}

// A decoding step's KV cache stays on the device: a resident input is not copied in and
// its buffer lives the whole step, a resident output is not copied out; the kernels run
// as before, and the step is shorter by the copies.
TEST(GraphRun, AResidentKvCacheIsNotCopiedOverPcie) {
  auto graph = [](bool resident) {
    nlohmann::json j = {{"soc", "Ascend910B2"},
                        {"inputs", {Tensor("past_k", {32, 2047, 128}), Tensor("k", {32, 1, 128})}},
                        {"outputs", {"present_k", "y"}},
                        {"nodes", {Node("cache", "Concat", {"past_k", "k"}, Tensor("present_k", {32, 2048, 128})),
                                   Node("act", "Relu", {"k"}, Tensor("y", {32, 1, 128}))}}};
    j["nodes"][0]["attrs"] = {{"axis", "1"}};
    if (resident) j["resident"] = {"past_k", "present_k"};
    auto g = GraphFromJson(j);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return *g;
  };
  const RunProfile copied = MustRun(graph(false)), kept = MustRun(graph(true));
  std::set<std::string> names;
  for (const auto& tr : kept.transfers) names.insert(tr.name);
  EXPECT_EQ(names, (std::set<std::string>{"H2D k", "D2H y"}));
  EXPECT_EQ(copied.transfers.size(), 4u);
  ASSERT_EQ(kept.ops.size(), copied.ops.size());
  for (size_t i = 0; i < kept.ops.size(); ++i) EXPECT_EQ(kept.ops[i].duration_us, copied.ops[i].duration_us);
  const double cache_bytes = 2.0 * 32 * 2047 * 128;
  EXPECT_LT(kept.step_us, copied.step_us - cache_bytes / (testing::Soc910B2().pcie_bandwidth_gbps * 1e3));
  EXPECT_EQ(kept.memory.no_reuse_bytes, copied.memory.no_reuse_bytes) << "the same buffers";
  EXPECT_GE(kept.memory.with_reuse_bytes, static_cast<int64_t>(cache_bytes) + 2 * 32 * 2048 * 128)
      << "the cache and the present one live together";
  // Named resident, a tensor must be a graph input or output.
  nlohmann::json bad = GraphToJson(graph(false));
  bad["resident"] = {"k_missing"};
  EXPECT_NE(GraphFromJson(bad).status().message().find("graph: resident: 'k_missing' is not a graph input or output"),
            std::string::npos);
  auto again = GraphFromJson(GraphToJson(graph(true)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->resident, (std::vector<std::string>{"past_k", "present_k"})) << "written and read back";
  bad["resident"] = {7};
  EXPECT_NE(GraphFromJson(bad).status().message().find("graph: resident: 7 is not a tensor name"), std::string::npos);
  // Marked afterwards (what `--resident NAME` does), once however often asked.
  Graph marked = graph(false);
  ASSERT_TRUE(MarkResident(marked, "past_k").ok());
  ASSERT_TRUE(MarkResident(marked, "present_k").ok());
  ASSERT_TRUE(MarkResident(marked, "past_k").ok());
  EXPECT_EQ(marked.resident, (std::vector<std::string>{"past_k", "present_k"}));
  EXPECT_EQ(MustRun(marked).step_us, kept.step_us);
  const Status wrong = MarkResident(marked, "k_missing");
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("the graph's are: past_k, k, present_k, y"), std::string::npos) << wrong.ToString();
  EXPECT_EQ(marked.resident.size(), 2u);
}

// The default tiling of an op with usedCores set to the largest value that leaves half
// of its unit's cores to another op.
void UseHalfTheCores(const Graph& g, const std::string& node, RunOptions& options) {
  const SocSpec& soc = testing::Soc910B2();
  for (const auto& n : g.nodes) {
    if (n.name != node) continue;
    OpKey key = NodeOpKey(g, n);
    auto problem = MakeTuningProblem(key, soc);
    ASSERT_TRUE(problem.ok()) << problem.status().ToString();
    int used = problem->space.IndexOf("usedCores");
    ASSERT_GE(used, 0);
    Config config = problem->default_config;
    int64_t best = -1;
    for (int64_t v : problem->space.params()[used].values) {
      if (v * 2 <= soc.vector_core_cnt && v > best) best = v;
    }
    ASSERT_GT(best, 0);
    config[used] = best;
    ASSERT_TRUE(problem->space.Validate(config).ok()) << problem->space.Validate(config).ToString();
    options.configs[key.Canonical()] = config;
  }
}

// The default tiling of an op with usedCores set to its smallest allowed value: default
// tilings use every core, so branches only share the chip with tuned configs like this.
void UseFewCores(const Graph& g, const std::string& node, RunOptions& options) {
  for (const auto& n : g.nodes) {
    if (n.name != node) continue;
    OpKey key = NodeOpKey(g, n);
    auto problem = MakeTuningProblem(key, testing::Soc910B2());
    ASSERT_TRUE(problem.ok()) << problem.status().ToString();
    int used = problem->space.IndexOf("usedCores");
    ASSERT_GE(used, 0);
    Config config = problem->default_config;
    const auto& values = problem->space.params()[used].values;
    config[used] = *std::min_element(values.begin(), values.end());
    ASSERT_TRUE(problem->space.Validate(config).ok());
    options.configs[key.Canonical()] = config;
  }
}

TEST(GraphRun, SmallIndependentBranchesShareTheChipOnTwoStreams) {
  Graph g = SmallBranches();
  RunOptions few;
  UseFewCores(g, "left", few);
  UseFewCores(g, "right", few);
  RunProfile run = MustRun(g, few);
  const OpRecord* left = Find(run, "left");
  const OpRecord* right = Find(run, "right");
  ASSERT_TRUE(left && right);
  ASSERT_LE(left->estimate.block_dim * 2, left->unit_cores) << "the test needs small ops";
  ASSERT_LE(right->estimate.block_dim * 2, right->unit_cores) << "the test needs small ops";
  EXPECT_NE(left->stream, right->stream);
  EXPECT_LT(right->start_us, left->EndUs());  // they overlap
  // With streams off the same graph runs serially and takes longer.
  RunOptions serial = few;
  serial.concurrent_streams = false;
  RunProfile one = MustRun(g, serial);
  EXPECT_GE(Find(one, "right")->start_us, Find(one, "left")->EndUs());
  EXPECT_GT(one.compute_end_us, run.compute_end_us);
  // With every core (the default tilings) the branches run one after the other.
  RunProfile full = MustRun(g);
  EXPECT_GE(Find(full, "right")->start_us, Find(full, "left")->EndUs());
}

// Two big element-wise branches, each on half the vector cores: together they ask HBM
// for more than it gives, so running them at once stretches both.
TEST(GraphRun, ConcurrentBranchesShareHbmBandwidth) {
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"inputs", {Tensor("a", {8192, 8192}), Tensor("b", {8192, 8192})}},
                      {"outputs", {"c"}},
                      {"nodes", {Node("left", "Relu", {"a"}, Tensor("a1", {8192, 8192})),
                                 Node("right", "Sigmoid", {"b"}, Tensor("b1", {8192, 8192})),
                                 Node("join", "Add", {"a1", "b1"}, Tensor("c", {8192, 8192}))}}};
  auto parsed = GraphFromJson(j);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Graph& g = *parsed;
  const SocSpec& soc = testing::Soc910B2();
  RunOptions half;
  UseHalfTheCores(g, "left", half);
  UseHalfTheCores(g, "right", half);
  RunOptions serial = half;
  serial.concurrent_streams = false;
  RunProfile one = MustRun(g, serial);
  RunProfile both = MustRun(g, half);
  const double roof = soc.hbm_bandwidth_gbps * 1e3;  // bytes per us
  double demand = 0;
  for (const char* name : {"left", "right"}) {
    const OpRecord* op = Find(one, name);
    demand += op->estimate.hbm_bytes / (op->launch_us + op->duration_us);
  }
  ASSERT_GT(demand, 1.1 * roof) << "the test needs branches that together exceed HBM";
  const OpRecord* left = Find(both, "left");
  const OpRecord* right = Find(both, "right");
  ASSERT_LT(right->start_us, left->EndUs()) << "the branches should overlap";
  for (const char* name : {"left", "right"}) {
    EXPECT_GT(Find(both, name)->duration_us, 1.05 * Find(one, name)->duration_us) << name;
  }
  // Together they never move bytes faster than HBM allows.
  const double span = std::max(left->EndUs(), right->EndUs()) -
                      std::min(left->start_us - left->launch_us, right->start_us - right->launch_us);
  EXPECT_GE(span * roof * (1 + 1e-9), left->estimate.hbm_bytes + right->estimate.hbm_bytes);
}

TEST(GraphRun, OpsThatFillTheChipNeverRunConcurrently) {
  Graph g = testing::LoadExample("bert_base_layer.json");
  RunProfile run = MustRun(g);
  for (size_t i = 0; i < run.ops.size(); ++i) {
    for (size_t k = i + 1; k < run.ops.size(); ++k) {
      const auto& a = run.ops[i];
      const auto& b = run.ops[k];
      bool overlap = a.start_us < b.EndUs() && b.start_us < a.EndUs();
      if (overlap) {
        EXPECT_LE(a.estimate.block_dim * 2, a.unit_cores) << a.name << " / " << b.name;
        EXPECT_LE(b.estimate.block_dim * 2, b.unit_cores) << a.name << " / " << b.name;
        EXPECT_NE(a.stream, b.stream);
      }
    }
  }
}

TEST(GraphRun, AGivenConfigReplacesTheDefaultTilingOfItsOpKey) {
  Graph g = SmallBranches();
  OpKey key = NodeOpKey(g, g.nodes[0]);
  auto problem = MakeTuningProblem(key, testing::Soc910B2());
  ASSERT_TRUE(problem.ok());
  // Any other valid config of the space.
  Config other;
  for (ConfigIndex i = 0; i < problem->space.size(); ++i) {
    if (i != problem->default_index && problem->space.ValidateIndex(i).ok()) {
      Config c = problem->space.Decode(i);
      auto est = sim::Simulate(*problem, c, testing::Soc910B2());
      auto def = sim::Simulate(*problem, problem->default_config, testing::Soc910B2());
      if (est.ok() && def.ok() && est->duration_us != def->duration_us) {
        other = c;
        break;
      }
    }
  }
  ASSERT_FALSE(other.empty());
  RunOptions options;
  options.configs[key.Canonical()] = other;
  RunProfile run = MustRun(g, options);
  auto expected = sim::Simulate(*problem, other, testing::Soc910B2());
  EXPECT_DOUBLE_EQ(Find(run, "left")->duration_us, expected->duration_us);
}

TEST(GraphRun, AKernelCacheSimulatesEachOpKeyAndConfigOnceAndChangesNoRun) {
  // Four identical Relus and two identical MatMuls, a training step: 2 forward keys, and
  // the MatMuls' two backward GEMMs.
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"training", true},
                      {"inputs", {Tensor("x", {256, 256})}},
                      {"weights", {Tensor("w", {256, 256})}},
                      {"outputs", {"t5"}},
                      {"nodes", {Node("m0", "MatMul", {"x", "w"}, Tensor("t0", {256, 256})),
                                 Node("r1", "Relu", {"t0"}, Tensor("t1", {256, 256})),
                                 Node("r2", "Relu", {"t1"}, Tensor("t2", {256, 256})),
                                 Node("m3", "MatMul", {"t2", "w"}, Tensor("t3", {256, 256})),
                                 Node("r4", "Relu", {"t3"}, Tensor("t4", {256, 256})),
                                 Node("r5", "Relu", {"t4"}, Tensor("t5", {256, 256}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const RunProfile alone = MustRun(*g);
  KernelCache kernels;
  RunOptions shared;
  shared.kernels = &kernels;
  const RunProfile first = MustRun(*g, shared);
  const size_t after_one_run = kernels.size();
  EXPECT_LE(after_one_run, 4u) << "Relu, MatMul and its two backward GEMMs (dX and dW may share a key)";
  const RunProfile second = MustRun(*g, shared);
  EXPECT_EQ(kernels.size(), after_one_run) << "a second run simulates nothing new";
  for (const RunProfile* run : {&first, &second}) {
    ASSERT_EQ(run->ops.size(), alone.ops.size());
    for (size_t i = 0; i < alone.ops.size(); ++i) {
      EXPECT_EQ(run->ops[i].name, alone.ops[i].name);
      EXPECT_EQ(run->ops[i].duration_us, alone.ops[i].duration_us) << alone.ops[i].name;
      EXPECT_EQ(run->ops[i].start_us, alone.ops[i].start_us) << alone.ops[i].name;
    }
    EXPECT_EQ(run->step_us, alone.step_us);
  }
  // A given config is its own entry: the Relus run it, not the cached default.
  const OpKey relu = NodeOpKey(*g, g->nodes[1]);
  auto problem = MakeTuningProblem(relu, testing::Soc910B2());
  ASSERT_TRUE(problem.ok());
  Config other;
  for (ConfigIndex i = 0; i < problem->space.size() && other.empty(); ++i) {
    if (i == problem->default_index || !problem->space.ValidateIndex(i).ok()) continue;
    auto est = sim::Simulate(*problem, problem->space.Decode(i), testing::Soc910B2());
    if (est.ok() && est->duration_us != Find(alone, "r1")->duration_us) other = problem->space.Decode(i);
  }
  ASSERT_FALSE(other.empty());
  shared.configs[relu.Canonical()] = other;
  const RunProfile tuned = MustRun(*g, shared);
  EXPECT_EQ(Find(tuned, "r1")->duration_us, sim::Simulate(*problem, other, testing::Soc910B2())->duration_us);
  EXPECT_EQ(kernels.size(), after_one_run + 1);
}

TEST(GraphRun, AStepTimeOnlyRunTimesEveryOpAsAFullRunAndDescribesNone) {
  for (bool training : {false, true}) {
    Graph g = SmallBranches();
    g.training = training;
    const RunProfile full = MustRun(g);
    RunOptions options;
    options.step_time_only = true;
    const RunProfile quick = MustRun(g, options);
    EXPECT_EQ(quick.step_us, full.step_us);
    EXPECT_EQ(quick.ai_core_utilisation, full.ai_core_utilisation);
    ASSERT_EQ(quick.ops.size(), full.ops.size());
    for (size_t i = 0; i < full.ops.size(); ++i) {
      EXPECT_EQ(quick.ops[i].name, full.ops[i].name);
      EXPECT_EQ(quick.ops[i].start_us, full.ops[i].start_us);
      EXPECT_EQ(quick.ops[i].duration_us, full.ops[i].duration_us);
      EXPECT_FALSE(full.ops[i].op_key.empty());
      EXPECT_TRUE(quick.ops[i].op_key.empty()) << "the texts are what a step-time-only run skips";
    }
    EXPECT_GT(full.memory.buffers, 0);
    EXPECT_EQ(quick.memory.buffers, 0);
    EXPECT_FALSE(full.edges.empty());
    EXPECT_TRUE(quick.edges.empty());
  }
}

TEST(GraphRun, AConfigTheSimulatorRefusesNamesTheNodeAndItsConfig) {
  Graph g = SmallBranches();
  const OpKey key = NodeOpKey(g, g.nodes[0]);
  RunOptions options;
  options.configs[key.Canonical()] = Config{1};  // not a config of the Relu's space
  for (int run = 0; run < 2; ++run) {  // the second from a cache that holds the refusal
    KernelCache kernels;
    if (run == 1) {
      options.kernels = &kernels;
      ASSERT_FALSE(RunGraph(g, testing::Soc910B2(), options).ok());
    }
    auto refused = RunGraph(g, testing::Soc910B2(), options);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message().rfind("node 'left' config: ", 0), 0u) << refused.status().message();
  }
}

TEST(GraphRun, MemoryReusePeakIsAtMostNoReuseAndBothCoverTheLargestOpsLiveSet) {
  for (const Graph& g : {testing::LoadExample("bert_base_layer.json"), testing::LoadExample("resnet50_block.json"),
                         TrainingMlp(8)}) {
    RunProfile run = MustRun(g);
    const MemoryPlan& m = run.memory;
    EXPECT_LE(m.with_reuse_bytes, m.no_reuse_bytes) << g.name;
    EXPECT_GE(m.with_reuse_bytes, m.max_live_bytes) << g.name;
    EXPECT_LT(m.with_reuse_bytes, m.no_reuse_bytes) << g.name << ": reuse found nothing to share";
    // What one op needs at once: its inputs, its outputs and every weight.
    int64_t weights = 0;
    for (const auto& w : g.weights) weights += w.Bytes();
    for (const auto& node : g.nodes) {
      int64_t live = weights;
      for (const auto& in : node.inputs) if (!g.IsWeight(in)) live += g.FindTensor(in)->Bytes();
      for (const auto& out : node.outputs) live += node.IsView() ? 0 : out.Bytes();
      EXPECT_GE(m.max_live_bytes, live) << g.name << " " << node.name;
      EXPECT_GE(m.no_reuse_bytes, live) << g.name << " " << node.name;
    }
  }
}

TEST(GraphRun, TrainingAddsABackwardOpPerKernelTwoSimulatedGemmsForACubeOp) {
  RunProfile run = MustRun(TrainingMlp(1));
  ASSERT_EQ(run.ops.size(), 6u);
  const SocSpec& soc = testing::Soc910B2();
  for (const char* name : {"fc1", "act", "fc2"}) {
    const OpRecord* f = Find(run, name);
    const OpRecord* b = Find(run, std::string(name) + "_grad");
    ASSERT_TRUE(f && b) << name;
    EXPECT_TRUE(b->backward);
    EXPECT_EQ(b->op_type, f->op_type + "Grad");
  }
  // A vector op's backward is twice its forward (reads input and gradient).
  EXPECT_DOUBLE_EQ(Find(run, "act_grad")->duration_us, 2 * Find(run, "act")->duration_us);
  // A MatMul's backward is dX and dW, two GEMMs of the forward's work, launched twice:
  // simulated, so its time is its own (fc2's dW reduces over M = 2048, not K = 4096),
  // never under the roofline of twice the work.
  for (const char* name : {"fc1", "fc2"}) {
    const OpRecord* f = Find(run, name);
    const OpRecord* b = Find(run, std::string(name) + "_grad");
    EXPECT_DOUBLE_EQ(b->estimate.flops, 2 * f->estimate.flops) << name;
    EXPECT_DOUBLE_EQ(b->launch_us, 2 * f->launch_us) << name;
    EXPECT_GE(b->duration_us, b->roofline_us - b->launch_us) << name;
    EXPECT_GE(b->roofline_us, 2 * soc.kernel_launch_us + 2 * f->estimate.flops / soc.CubePeakFlops()) << name;
    EXPECT_GT(b->duration_us, 1.2 * f->duration_us) << name;
    EXPECT_LT(b->duration_us, 3.5 * f->duration_us) << name;
    EXPECT_NE(b->duration_us, 2 * f->duration_us) << name << ": still the flat factor";
  }
  // Backward runs in reverse order, after the forward.
  EXPECT_GE(Find(run, "fc2_grad")->start_us, Find(run, "fc2")->EndUs());
  EXPECT_GE(Find(run, "act_grad")->start_us, Find(run, "fc2_grad")->EndUs());
  EXPECT_GE(Find(run, "fc1_grad")->start_us, Find(run, "act_grad")->EndUs());
  EXPECT_EQ(run.comm_us, 0);  // one device: nothing to all-reduce
}

// One training layer, x [2048,1024] x w [1024,4096], as a MatMul or as a FusedMatMul
// with a Gelu epilogue.
Graph OneLayer(bool fused) {
  nlohmann::json node = Node("fc", fused ? "FusedMatMul" : "MatMul", {"x", "w"}, Tensor("h", {2048, 4096}));
  if (fused) node["attrs"] = {{"epilogue", "Gelu"}};
  nlohmann::json j = {{"soc", "Ascend910B2"},
                      {"training", true},
                      {"inputs", {Tensor("x", {2048, 1024})}},
                      {"weights", {Tensor("w", {1024, 4096})}},
                      {"outputs", {"h"}},
                      {"nodes", {node}}};
  auto g = GraphFromJson(j);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

TEST(GraphRun, AFusedCubeOpsBackwardIsItsGemmsPlusTwiceItsEpilogue) {
  RunProfile plain = MustRun(OneLayer(false));
  RunProfile fused = MustRun(OneLayer(true));
  const OpRecord* pf = Find(plain, "fc");
  const OpRecord* pb = Find(plain, "fc_grad");
  const OpRecord* ff = Find(fused, "fc");
  const OpRecord* fb = Find(fused, "fc_grad");
  ASSERT_TRUE(pf && pb && ff && fb);
  EXPECT_GT(ff->duration_us, pf->duration_us);  // the epilogue costs something
  EXPECT_DOUBLE_EQ(fb->estimate.flops, pb->estimate.flops);
  EXPECT_NEAR(fb->duration_us - pb->duration_us, 2 * (ff->duration_us - pf->duration_us), 1e-9);
  EXPECT_GT(fb->estimate.BusyUs(sim::Pipe::kVector), 0);
}

TEST(GraphRun, AllReduceTimeIsTheRingFormulaPerGradientBucket) {
  const SocSpec& soc = testing::Soc910B2();
  RunProfile run = MustRun(TrainingMlp(8));
  int buckets = 0;
  double total = 0;
  for (const auto& tr : run.transfers) {
    if (tr.unit != "HCCL") continue;
    ++buckets;
    EXPECT_DOUBLE_EQ(tr.bytes, 1024.0 * 4096 * 2);  // each layer's fp16 weight gradient
    // NPU_MODEL.md: 2(N-1)/N of the bytes over the link bandwidth, plus latency.
    double expected = soc.hccs_latency_us + 2.0 * 7 / 8 * tr.bytes / (soc.hccs_bandwidth_gbps * 1e3);
    EXPECT_NEAR(tr.duration_us, expected, 1e-9);
    total += tr.duration_us;
  }
  EXPECT_EQ(buckets, 2);
  EXPECT_NEAR(run.comm_us, total, 1e-9);
  EXPECT_DOUBLE_EQ(run.gradient_bytes, 2 * 1024.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(RingAllReduceUs(1e6, 1, soc), 0);
}

TEST(GraphRun, EachBucketsAllReduceStartsWhenItsBackwardOpEndsAndOverlapsTheRest) {
  RunProfile run = MustRun(TrainingMlp(8));
  const OpRecord* fc2_grad = Find(run, "fc2_grad");
  const OpRecord* fc1_grad = Find(run, "fc1_grad");
  const TransferRecord* fc2_ar = nullptr;
  const TransferRecord* fc1_ar = nullptr;
  for (const auto& tr : run.transfers) {
    if (tr.name == "allreduce fc2") fc2_ar = &tr;
    if (tr.name == "allreduce fc1") fc1_ar = &tr;
  }
  ASSERT_TRUE(fc2_grad && fc1_grad && fc2_ar && fc1_ar);
  EXPECT_DOUBLE_EQ(fc2_ar->start_us, fc2_grad->EndUs());
  EXPECT_LT(fc2_ar->start_us, fc1_grad->EndUs());  // overlapped with the remaining backward
  EXPECT_GE(fc1_ar->start_us, std::max(fc1_grad->EndUs(), fc2_ar->EndUs()) - 1e-9);
  EXPECT_LT(run.exposed_comm_us, run.comm_us);
  EXPECT_GE(run.step_us, fc1_ar->EndUs());
}

TEST(GraphRun, UtilisationAndBytesAreConsistent) {
  RunProfile run = MustRun(testing::LoadExample("bert_base_layer.json"));
  EXPECT_GT(run.ai_core_utilisation, 0);
  EXPECT_LE(run.ai_core_utilisation, 1);
  EXPECT_GT(run.memory_bw_utilisation, 0);
  EXPECT_LE(run.memory_bw_utilisation, 1);
  EXPECT_LE(run.device_busy_us, run.compute_end_us - run.compute_start_us + 1e-9);
}

TEST(GraphRun, AGraphForAnotherSocIsRejected) {
  Graph g = SmallBranches();
  g.soc = "Ascend910";
  auto run = RunGraph(g, testing::Soc910B2());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("Ascend910"), std::string::npos);
}

}  // namespace
}  // namespace tunefleet::profile
