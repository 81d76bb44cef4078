// Subgraph tuning: the fusion chains found in a graph (common/graph_fusion.h), the graph
// rewritten with them, and which of them the simulator keeps (worker/profile/fusion_search.h).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "tunefleet/common/graph_fusion.h"
#include "worker/profile/fusion_search.h"
#include "worker/profile/graph_run.h"

namespace tunefleet::profile {
namespace {

using testing::Node;
using testing::FindNode;
using testing::Tensor;

std::vector<std::string> Names(const Graph& g, const FusionChain& c) {
  std::vector<std::string> out{g.nodes[c.head].name};
  for (int s : c.steps) out.push_back(g.nodes[s].name);
  return out;
}

TEST(FusionChains, EachCubeOpTakesTheElementWiseOpsThatOnlyItFeeds) {
  const Graph g = testing::LoadExample("bert_base_layer.json");
  std::vector<std::vector<std::string>> chains;
  for (const auto& c : FindFusionChains(g)) chains.push_back(Names(g, c));
  const std::vector<std::vector<std::string>> want{
      {"attention.q.matmul", "attention.q.bias"},
      {"attention.k.matmul", "attention.k.bias"},
      {"attention.v.matmul", "attention.v.bias"},
      {"attention.scores", "attention.scores.scale"},  // Softmax is not a chain op
      {"attention.output.matmul", "attention.output.bias", "attention.residual"},
      {"ffn.intermediate.matmul", "ffn.intermediate.bias", "ffn.gelu"},
      {"ffn.output.matmul", "ffn.output.bias", "ffn.residual"},
  };
  EXPECT_EQ(chains, want) << "attention.context feeds a Reshape: no chain";
  const auto all = FindFusionChains(g);
  EXPECT_EQ(FusedEpilogue(g, {all[4], 2}), "BiasAdd,Add") << "a [768] operand is a bias, the residual an Add";
  EXPECT_EQ(FusedEpilogue(g, {all[5], 2}), "BiasAdd,Gelu");
  EXPECT_EQ(FusedOpType(g, {all[3], 1}), "FusedBatchMatMul");
  EXPECT_EQ(FusedNodeName(g, {all[5], 1}), "ffn.intermediate.matmul+ffn.intermediate.bias");
}

TEST(FusionChains, AChainStopsAtASecondReaderAGraphOutputOrARightHandSubtrahend) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {1024, 1024}), Tensor("r", {1024, 1024})}},
                   {"weights", {Tensor("w", {1024, 1024})}},
                   {"outputs", {"out", "h2"}},
                   {"nodes",
                    {Node("mm1", "MatMul", {"x", "w"}, Tensor("h1", {1024, 1024})),
                     Node("sub", "Sub", {"r", "h1"}, Tensor("d", {1024, 1024})),  // h1 on the right: not x - y
                     Node("mm2", "MatMul", {"x", "w"}, Tensor("h2", {1024, 1024})),
                     Node("relu2", "Relu", {"h2"}, Tensor("r2", {1024, 1024})),  // h2 is a graph output
                     Node("mm3", "MatMul", {"d", "w"}, Tensor("h3", {1024, 1024})),
                     Node("relu3", "Relu", {"h3"}, Tensor("r3", {1024, 1024})),
                     Node("mul3", "Mul", {"r3", "r3"}, Tensor("m3", {1024, 1024})),  // r3 read twice
                     Node("add", "Add", {"m3", "r2"}, Tensor("out", {1024, 1024}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::vector<std::vector<std::string>> chains;
  for (const auto& c : FindFusionChains(*g)) chains.push_back(Names(*g, c));
  EXPECT_EQ(chains, (std::vector<std::vector<std::string>>{{"mm3", "relu3"}, {"relu2", "add"}}))
      << "relu2 reads a graph output, and its own output only add reads: an element-wise chain";
}

// An Add of [C] after a conv broadcasts over W (the trailing axis), as the unfused Add
// does: fused, it stays an Add, not a per-channel BiasAdd (an audit found the two mixed up
// where W == C). After a MatMul the same [N] operand is its bias.
TEST(FusionChains, AnAddAfterAConvStaysAnAddAndAfterAMatMulIsItsBias) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {8, 64, 16, 16}), Tensor("a", {256, 64})}},
                   {"weights", {Tensor("cw", {16, 64, 1, 1}), Tensor("b", {16}), Tensor("w", {64, 16})}},
                   {"outputs", {"r", "s"}},
                   {"nodes",
                    {Node("conv", "Conv2D", {"x", "cw"}, Tensor("c", {8, 16, 16, 16})),
                     Node("add", "Add", {"c", "b"}, Tensor("r", {8, 16, 16, 16})),
                     Node("mm", "MatMul", {"a", "w"}, Tensor("m", {256, 16})),
                     Node("bias", "Add", {"b", "m"}, Tensor("s", {256, 16}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 2u);
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 1}), "Add");
  EXPECT_EQ(FusedEpilogue(*g, {chains[1], 1}), "BiasAdd");
  auto fused = ApplyFusions(*g, {{chains[0], 1}, {chains[1], 1}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(FindNode(*fused, "mm+bias")->inputs, (std::vector<std::string>{"a", "w", "b"})) << "the bias after the GEMM's inputs";
}

// MobileNet's ReLU6 (a Clip) after a pointwise conv is its epilogue, as a Relu is: CANN's
// conv fusion passes take both.
TEST(FusionChains, AConvTakesTheClipAfterItAsItsEpilogue) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {8, 64, 28, 28})}},
                   {"weights", {Tensor("cw", {128, 64, 1, 1})}},
                   {"outputs", {"r"}},
                   {"nodes",
                    {Node("conv", "Conv2D", {"x", "cw"}, Tensor("c", {8, 128, 28, 28})),
                     Node("relu6", "Clip", {"c"}, Tensor("r", {8, 128, 28, 28}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"conv", "relu6"}));
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 1}), "Clip");
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 1) << "the Clip's write and re-read saved";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
}

// A squeeze-and-excitation block's excitation: fc2 [N, C, 1, 1] and its Sigmoid are a
// chain, but the Mul scaling x [N, C, H, W] by it is not a step of it (its output would
// be larger than the chain's value).
TEST(FusionChains, AStepWhoseOperandIsLargerThanTheChainsValueEndsTheChain) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {8, 96, 28, 28}), Tensor("squeezed", {8, 24, 1, 1})}},
                   {"weights", {Tensor("w", {96, 24, 1, 1})}},
                   {"outputs", {"y"}},
                   {"nodes",
                    {Node("fc2", "Conv2D", {"squeezed", "w"}, Tensor("e", {8, 96, 1, 1})),
                     Node("gate", "Sigmoid", {"e"}, Tensor("g", {8, 96, 1, 1})),
                     Node("scale", "Mul", {"x", "g"}, Tensor("y", {8, 96, 28, 28}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"fc2", "gate"}));
}

// Llama's SwiGLU, silu(gate_proj(x)) * up_proj(x): the SiLU and the Mul by the up
// projection are gate_proj's epilogue, and fused they save the two intermediates.
TEST(FusionChains, AMatMulTakesItsSwiGluAsItsEpilogue) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {2048, 4096})}},
                   {"weights", {Tensor("wg", {4096, 11008}), Tensor("wu", {4096, 11008})}},
                   {"outputs", {"h"}},
                   {"nodes",
                    {Node("gate_proj", "MatMul", {"x", "wg"}, Tensor("g", {2048, 11008})),
                     Node("up_proj", "MatMul", {"x", "wu"}, Tensor("u", {2048, 11008})),
                     Node("act", "Silu", {"g"}, Tensor("a", {2048, 11008})),
                     Node("gated", "Mul", {"a", "u"}, Tensor("h", {2048, 11008}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 2u) << "and up_proj's, which meets it at the Mul";
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"gate_proj", "act", "gated"}));
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 2}), "Silu,Mul");
  EXPECT_EQ(Names(*g, chains[1]), (std::vector<std::string>{"up_proj", "gated"}));
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 2) << "gate_proj with its SwiGLU, and up_proj";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
}

// MobileNet's ReLU6 after a depthwise conv (a vector op) is applied in UB before the
// output is written: the chain takes unary ops only, so a residual Add after them stays
// out, and the fused node is the DepthwiseConv2D with attrs.epilogue, reading the conv's
// own inputs. Fused, the Clip's write and re-read are saved.
TEST(FusionChains, ADepthwiseConvTakesTheUnaryOpsAfterItAsItsEpilogue) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {8, 96, 56, 56})}},
                   {"weights", {Tensor("dw", {96, 1, 3, 3}), Tensor("db", {96})}},
                   {"outputs", {"y"}},
                   {"nodes",
                    {Node("depthwise", "DepthwiseConv2D", {"x", "dw", "db"}, Tensor("d", {8, 96, 56, 56})),
                     Node("relu6", "Clip", {"d"}, Tensor("r", {8, 96, 56, 56})),
                     Node("sigmoid", "Sigmoid", {"r"}, Tensor("s", {8, 96, 56, 56})),
                     Node("residual", "Add", {"s", "x"}, Tensor("y", {8, 96, 56, 56}))}}};
  j["nodes"][0]["attrs"] = {{"pads", "1,1,1,1"}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"depthwise", "relu6", "sigmoid"})) << "not the binary Add";
  EXPECT_FALSE(chains[0].cube);
  EXPECT_EQ(FusedOpType(*g, {chains[0], 2}), "DepthwiseConv2D");
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 2}), "Clip,Sigmoid");
  auto fused = ApplyFusions(*g, {{chains[0], 1}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const GraphNode* node = FindNode(*fused, "depthwise+relu6");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"x", "dw", "db"}));
  EXPECT_EQ(node->attrs.at("epilogue"), "Clip");
  EXPECT_EQ(node->attrs.at("pads"), "1,1,1,1");
  EXPECT_EQ(node->outputs[0].name, "r");
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 2) << "the depthwise conv with its Clip and Sigmoid, then the Add";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
}

// MobileNetV3's Hardswish after a pointwise or a depthwise conv, and its squeeze-and-
// excitation gate (a Hardsigmoid after the excitation's 1x1 conv), are epilogues as a ReLU
// is: fused, each activation's write and re-read are saved.
TEST(FusionChains, MobileNetV3sHardswishAndHardsigmoidAreEpilogues) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {8, 16, 56, 56}), Tensor("squeezed", {8, 24, 1, 1})}},
                   {"weights", {Tensor("pw", {64, 16, 1, 1}), Tensor("dw", {64, 1, 3, 3}), Tensor("db", {64}),
                                Tensor("ew", {64, 24, 1, 1})}},
                   {"outputs", {"h2", "g"}},
                   {"nodes",
                    {Node("expand", "Conv2D", {"x", "pw"}, Tensor("c", {8, 64, 56, 56})),
                     Node("expand.act", "HardSwish", {"c"}, Tensor("h1", {8, 64, 56, 56})),
                     Node("depthwise", "DepthwiseConv2D", {"h1", "dw", "db"}, Tensor("d", {8, 64, 56, 56})),
                     Node("depthwise.act", "HardSwish", {"d"}, Tensor("h2", {8, 64, 56, 56})),
                     Node("se.expand", "Conv2D", {"squeezed", "ew"}, Tensor("e", {8, 64, 1, 1})),
                     Node("se.gate", "HardSigmoid", {"e"}, Tensor("g", {8, 64, 1, 1}))}}};
  j["nodes"][2]["attrs"] = {{"pads", "1,1,1,1"}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 3u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"expand", "expand.act"}));
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 1}), "HardSwish");
  EXPECT_EQ(Names(*g, chains[1]), (std::vector<std::string>{"depthwise", "depthwise.act"}));
  EXPECT_EQ(FusedOpType(*g, {chains[1], 1}), "DepthwiseConv2D");
  EXPECT_EQ(FusedEpilogue(*g, {chains[1], 1}), "HardSwish");
  EXPECT_EQ(Names(*g, chains[2]), (std::vector<std::string>{"se.expand", "se.gate"}));
  EXPECT_EQ(FusedEpilogue(*g, {chains[2], 1}), "HardSigmoid");
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 3) << "each conv with its activation";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
}

// A CycleGAN residual block's InstanceNorm2d and the ReLU after it: the ReLU is applied in
// UB before the norm writes y (as CANN's GroupNormSilu applies its SiLU), the fused node the
// InstanceNorm with attrs.epilogue, reading the norm's own inputs.
TEST(FusionChains, AnInstanceNormTakesTheUnaryOpsAfterItAsItsEpilogue) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {1, 256, 64, 64})}},
                   {"weights", {Tensor("s", {256}), Tensor("b", {256})}},
                   {"outputs", {"y"}},
                   {"nodes",
                    {Node("norm", "InstanceNorm", {"x", "s", "b"}, Tensor("n", {1, 256, 64, 64})),
                     Node("relu", "Relu", {"n"}, Tensor("r", {1, 256, 64, 64})),
                     Node("residual", "Add", {"r", "x"}, Tensor("y", {1, 256, 64, 64}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"norm", "relu"})) << "not the binary Add";
  EXPECT_EQ(FusedOpType(*g, {chains[0], 1}), "InstanceNorm");
  auto fused = ApplyFusions(*g, {{chains[0], 1}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const GraphNode* node = FindNode(*fused, "norm+relu");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"x", "s", "b"}));
  EXPECT_EQ(node->attrs.at("epilogue"), "Relu");
  EXPECT_EQ(node->outputs[0].name, "r");
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 2) << "the norm with its ReLU, then the Add";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
}

// A QDQ transformer's pre-norm: the LayerNorm (or a Llama's RmsNorm) before the int8
// projections, its output quantized. Fused as CANN's LayerNormQuant and RmsNormQuant, the
// norm writes int8 itself (attrs.epilogue Quantize) and the Cast kernel is gone; the norm
// takes no other op after it, a ReLU stays a kernel of its own.
TEST(FusionChains, ANormTakesTheQuantizeOfItsOutputAndNothingElse) {
  for (const std::string norm : {"LayerNorm", "RmsNorm"}) {
    nlohmann::json q = Tensor("q", {4096, 768});
    q["dtype"] = "int8";
    nlohmann::json cast = Node("x.quant", "Cast", {"n"}, q);
    cast["attrs"] = {{"dst_type", "int8"}};
    std::vector<std::string> in{"x", "g"};
    if (norm == "LayerNorm") in.push_back("b");
    nlohmann::json j{{"soc", "Ascend910B2"},
                     {"inputs", {Tensor("x", {4096, 768})}},
                     {"weights", {Tensor("g", {768}), Tensor("b", {768})}},
                     {"outputs", {"q", "r"}},
                     {"nodes", {Node("norm", norm, in, Tensor("n", {4096, 768})), cast,
                                Node("norm2", norm, in, Tensor("n2", {4096, 768})), Node("relu", "Relu", {"n2"}, Tensor("r", {4096, 768}))}}};
    auto g = GraphFromJson(j);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const auto chains = FindFusionChains(*g);
    ASSERT_EQ(chains.size(), 1u) << norm << ": the ReLU after the second norm is no chain of it";
    EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"norm", "x.quant"}));
    EXPECT_EQ(FusedOpType(*g, {chains[0], 1}), norm);
    auto chosen = ChooseFusions(*g, testing::Soc910B2());
    ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
    EXPECT_EQ(chosen->kernels_after, 3) << norm << ": the norm with its quantize, the other norm, its ReLU";
    EXPECT_LT(chosen->result_us, chosen->baseline_us);
    auto fused = ApplyFusions(*g, {{chains[0], 1}}, testing::Soc910B2());
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    const GraphNode* node = FindNode(*fused, "norm+x.quant");
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->op_type, norm);
    EXPECT_EQ(node->attrs.at("epilogue"), "Quantize");
    EXPECT_EQ(node->outputs[0].desc.dtype, "int8");
  }
}

// A QDQ transformer's query projection: the MatMul and its bias, viewed into heads
// [b, s, h, d] and permuted to [b, h, s, d], then quantized for the int8 scores. The
// quantize has no operand to align, so the chain reads through views that move the last
// axis too and the projection writes int8; a ReLU there is no step of it (a bias or an
// operand would no longer run along the axis it was written for).
TEST(FusionChains, ACubeChainReadsThroughAnyViewToAQuantize) {
  auto graph = [](const std::string& after, const std::string& dtype) {
    nlohmann::json out = Tensor("qi", {2, 12, 128, 64});
    out["dtype"] = dtype;
    nlohmann::json last = Node("q.after", after, {"qt"}, out);
    if (after == "Cast") last["attrs"] = {{"dst_type", "int8"}};
    nlohmann::json j{{"soc", "Ascend910B2"},
                     {"inputs", {Tensor("x", {256, 768})}},
                     {"weights", {Tensor("w", {768, 768}), Tensor("b", {768})}},
                     {"outputs", {"qi"}},
                     {"nodes",
                      {Node("q.proj", "MatMul", {"x", "w"}, Tensor("p", {256, 768})),
                       Node("q.bias", "Add", {"p", "b"}, Tensor("pb", {256, 768})),
                       Node("q.heads", "Reshape", {"pb"}, Tensor("qh", {2, 128, 12, 64})),
                       Node("q.permute", "Reshape", {"qh"}, Tensor("qt", {2, 12, 128, 64})), last}}};
    auto g = GraphFromJson(j);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return *g;
  };
  const Graph quantized = graph("Cast", "int8");
  const auto chains = FindFusionChains(quantized);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(quantized, chains[0]), (std::vector<std::string>{"q.proj", "q.bias", "q.after"}));
  EXPECT_EQ(FusedEpilogue(quantized, {chains[0], 2}), "BiasAdd,Quantize");
  auto fused = ApplyFusions(quantized, {{chains[0], 2}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(fused->nodes.size(), 1u) << "the views are the fused op's";
  EXPECT_EQ(fused->nodes[0].attrs.at("epilogue"), "BiasAdd,Quantize");
  EXPECT_EQ(fused->nodes[0].outputs[0].desc.dtype, "int8");
  auto chosen = ChooseFusions(quantized, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 1);
  const Graph relu = graph("Relu", "float16");
  const auto relu_chains = FindFusionChains(relu);
  ASSERT_EQ(relu_chains.size(), 1u);
  EXPECT_EQ(Names(relu, relu_chains[0]), (std::vector<std::string>{"q.proj", "q.bias"}));
}

// An int8 ResNet block's end: conv3 with its bias, the residual Add and the ReLU, whose
// output the next block both quantizes (its int8 conv1) and adds as its residual in
// float16. The conv chain takes the quantize anyway (value_out, CANN's multi-output quant
// fusion): the fused op writes int8 for the quantize's readers and the float16 value for
// the others, and stands where the value was made, before its other reader. A MatMul chain
// does not (CANN's multi-output patterns are the convolution's), nor a chain whose value
// has no quantize reader.
TEST(FusionChains, AConvChainWritesTheValueAndItsQuantizeWhenBothAreRead) {
  auto graph = [](const std::string& head) {
    const bool conv = head == "Conv2D";
    const std::vector<int64_t> shape = conv ? std::vector<int64_t>{8, 256, 14, 14} : std::vector<int64_t>{1568, 256};
    nlohmann::json x = Tensor("x", conv ? std::vector<int64_t>{8, 64, 14, 14} : std::vector<int64_t>{1568, 64}),
                   w = Tensor("w", conv ? std::vector<int64_t>{256, 64, 1, 1} : std::vector<int64_t>{64, 256}),
                   q = Tensor("q", shape), c = Tensor("c", shape);
    x["dtype"] = w["dtype"] = q["dtype"] = "int8";
    nlohmann::json cube = Node("conv3", head, conv ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, c);
    cube["attrs"] = {{"out_dtype", "float16"}};
    nlohmann::json quant = Node("next.quant", "Cast", {"r"}, q);
    quant["attrs"] = {{"dst_type", "int8"}};
    nlohmann::json j{{"soc", "Ascend910B2"},
                     {"inputs", {x, Tensor("shortcut", shape), Tensor("other", shape)}},
                     {"weights", {w, Tensor("b", {256})}},
                     {"outputs", {"q", "y"}},
                     {"nodes", {cube, Node("add", "Add", {"c", "shortcut"}, Tensor("s", shape)),
                                Node("relu", "Relu", {"s"}, Tensor("r", shape)),
                                Node("next.residual", "Add", {"r", "other"}, Tensor("y", shape)), quant}}};
    auto g = GraphFromJson(j);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return *g;
  };
  const Graph g = graph("Conv2D");
  ASSERT_TRUE(ValidateGraphOps(g, testing::Soc910B2()).ok());
  const auto chains = FindFusionChains(g);
  ASSERT_GE(chains.size(), 1u);
  EXPECT_EQ(Names(g, chains[0]), (std::vector<std::string>{"conv3", "add", "relu", "next.quant"}));
  EXPECT_TRUE(chains[0].value_out);
  auto fused = ApplyFusions(g, {{chains[0], 3}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(fused->nodes.size(), 2u);
  const GraphNode& node = fused->nodes[0];
  EXPECT_EQ(node.name, "conv3+add+relu+next.quant") << "before next.residual, which reads its value";
  EXPECT_EQ(node.attrs.at("epilogue"), "BiasAdd,Add,Relu,Quantize");
  EXPECT_EQ(node.attrs.at("value_out"), "float16");
  ASSERT_EQ(node.outputs.size(), 2u);
  EXPECT_EQ(node.outputs[0].name, "q");
  EXPECT_EQ(node.outputs[0].desc.dtype, "int8");
  EXPECT_EQ(node.outputs[1].name, "r");
  EXPECT_EQ(node.outputs[1].desc.dtype, "float16");
  EXPECT_EQ(fused->nodes[1].name, "next.residual");
  // Shorter, the chain is as before: the ReLU writes float16 and the quantize is a Cast.
  auto shorter = ApplyFusions(g, {{chains[0], 2}}, testing::Soc910B2());
  ASSERT_TRUE(shorter.ok()) << shorter.status().ToString();
  EXPECT_EQ(shorter->nodes.size(), 3u);
  EXPECT_FALSE(FindNode(*shorter, "conv3+add+relu")->attrs.contains("value_out"));
  auto chosen = ChooseFusions(g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 2) << "the conv with its epilogue and both outputs, then the next residual";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
  ASSERT_TRUE(RunGraph(chosen->fused, testing::Soc910B2()).ok());

  const Graph matmul = graph("MatMul");
  const auto matmul_chains = FindFusionChains(matmul);
  ASSERT_GE(matmul_chains.size(), 1u);
  EXPECT_EQ(Names(matmul, matmul_chains[0]), (std::vector<std::string>{"conv3", "add", "relu"}));
  EXPECT_FALSE(matmul_chains[0].value_out);

  // A second output is only a fused op's value before its Quantize.
  Graph two = *fused;
  two.nodes[0].attrs.erase("value_out");
  const Status refused = ValidateGraphOps(two, testing::Soc910B2());
  EXPECT_NE(refused.message().find("declares 2 outputs"), std::string::npos) << refused.ToString();
}

// GroupNorm and SiLU as torch exports them (a diffusion UNet's ResNet block): x viewed
// [N, G, -1], an InstanceNorm of ones and zeros, viewed back, scaled and shifted per
// channel, then the SiLU. Fused, as CANN's GroupNormSilu runs it: one InstanceNorm reading
// x's view with the per-channel scale and shift as its own (a row's 2 of 64 channels each
// its own) and the SiLU as its epilogue, writing the SiLU's output. A Mul by a value per
// position is no scale of it.
TEST(FusionChains, AGroupNormsAffineAndSiluFuseIntoItsInstanceNorm) {
  auto graph = [](std::vector<int64_t> gamma_shape) {
    nlohmann::json j{{"soc", "Ascend910B2"},
                     {"inputs", {Tensor("x", {2, 64, 16, 16})}},
                     {"weights", {Tensor("ones", {32}), Tensor("zeros", {32}), Tensor("gamma", gamma_shape),
                                  Tensor("beta", {64, 1, 1})}},
                     {"outputs", {"y"}},
                     {"nodes",
                      {Node("groups", "Reshape", {"x"}, Tensor("xg", {2, 32, 512})),
                       Node("norm", "InstanceNorm", {"xg", "ones", "zeros"}, Tensor("n", {2, 32, 512})),
                       Node("back", "Reshape", {"n"}, Tensor("nb", {2, 64, 16, 16})),
                       Node("scale", "Mul", {"nb", "gamma"}, Tensor("m", {2, 64, 16, 16})),
                       Node("shift", "Add", {"m", "beta"}, Tensor("a", {2, 64, 16, 16})),
                       Node("silu", "Silu", {"a"}, Tensor("y", {2, 64, 16, 16}))}}};
    return GraphFromJson(j);
  };
  auto g = graph({64, 1, 1});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"norm", "scale", "shift", "silu"}));
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 3}), "Silu") << "the Mul and Add are the norm's own scale and bias";
  auto fused = ApplyFusions(*g, {{chains[0], 3}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const GraphNode* node = FindNode(*fused, "norm+scale+shift+silu");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->op_type, "InstanceNorm");
  EXPECT_EQ(node->inputs, (std::vector<std::string>{"xg", "gamma", "beta"}));
  EXPECT_EQ(node->attrs.at("epilogue"), "Silu");
  EXPECT_EQ(node->outputs[0].name, "y");
  EXPECT_EQ(FindNode(*fused, "back"), nullptr) << "the view back is fused over";
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->kernels_after, 1) << "the norm with its affine and SiLU";
  EXPECT_LT(chosen->result_us, chosen->baseline_us);
  auto per_position = graph({1, 16, 16});
  ASSERT_TRUE(per_position.ok()) << per_position.status().ToString();
  const auto apart = FindFusionChains(*per_position);
  for (const FusionChain& c : apart) {
    EXPECT_NE(per_position->nodes[c.head].name, "norm") << "a Mul by [1, 16, 16] is not a channel's scale";
  }
}

// GPT-2's Conv1D exports as a Gemm with its bias as C: it heads its chain as the MatMul it
// is, so it fuses to the same op as MatMul + Add of the bias + Gelu. A Gemm that scales by
// alpha or beta does not (the fused op has no scale).
TEST(FusionChains, AGemmThatOnlyAddsABiasHeadsItsChainAsAMatMul) {
  auto gemm = [](const char* name, std::vector<std::string> in, const char* out, nlohmann::json attrs) {
    nlohmann::json n = Node(name, "Gemm", std::move(in), Tensor(out, {512, 256}));
    if (!attrs.empty()) n["attrs"] = std::move(attrs);
    return n;
  };
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {512, 128})}},
                   {"weights", {Tensor("w", {128, 256}), Tensor("wt", {256, 128}), Tensor("c", {256}), Tensor("c2", {1, 256})}},
                   {"outputs", {"g1", "g2", "g3"}},
                   {"nodes",
                    {gemm("fc", {"x", "w", "c"}, "h1", {}), Node("act", "Gelu", {"h1"}, Tensor("g1", {512, 256})),
                     gemm("proj", {"x", "wt", "c2"}, "h2", {{"transB", "1"}}),
                     Node("relu", "Relu", {"h2"}, Tensor("g2", {512, 256})),
                     gemm("scaled", {"x", "w", "c"}, "h3", {{"alpha", "0.5"}}),
                     Node("relu3", "Relu", {"h3"}, Tensor("g3", {512, 256}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  std::vector<std::vector<std::string>> names;
  for (const auto& c : chains) names.push_back(Names(*g, c));
  EXPECT_EQ(names, (std::vector<std::vector<std::string>>{{"fc", "act"}, {"proj", "relu"}}))
      << "the alpha-scaled Gemm heads no chain";
  ASSERT_EQ(chains.size(), 2u);
  EXPECT_EQ(FusedOpType(*g, {chains[0], 1}), "FusedMatMul");
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 1}), "BiasAdd,Gelu") << "C is the epilogue's first BiasAdd";
  auto fused = ApplyFusions(*g, {{chains[0], 1}, {chains[1], 1}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const GraphNode* proj = FindNode(*fused, "proj+relu");
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->inputs, (std::vector<std::string>{"x", "wt", "c2"}));
  EXPECT_EQ(proj->attrs, (std::map<std::string, std::string>{{"epilogue", "BiasAdd,Relu"}, {"transpose_b", "1"}}))
      << "transB under the name a MatMul reads";
  EXPECT_TRUE(RunGraph(*fused, testing::Soc910B2()).ok());

  // The same layer written as MatMul + Add + Gelu fuses to the very same op.
  nlohmann::json m{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {512, 128})}},
                   {"weights", {Tensor("w", {128, 256}), Tensor("c", {256})}},
                   {"outputs", {"g1"}},
                   {"nodes",
                    {Node("mm", "MatMul", {"x", "w"}, Tensor("m", {512, 256})),
                     Node("bias", "Add", {"m", "c"}, Tensor("h1", {512, 256})),
                     Node("act", "Gelu", {"h1"}, Tensor("g1", {512, 256}))}}};
  auto mg = GraphFromJson(m);
  ASSERT_TRUE(mg.ok()) << mg.status().ToString();
  const auto mchains = FindFusionChains(*mg);
  ASSERT_EQ(mchains.size(), 1u);
  auto mfused = ApplyFusions(*mg, {{mchains[0], 2}}, testing::Soc910B2());
  ASSERT_TRUE(mfused.ok()) << mfused.status().ToString();
  EXPECT_EQ(NodeOpKey(*fused, *FindNode(*fused, "fc+act")).Canonical(),
            NodeOpKey(*mfused, *FindNode(*mfused, "mm+bias+act")).Canonical());
}

TEST(ApplyFusions, TheFusedNodeTakesTheHeadsInputsThenTheOperandsAndWritesTheLastOutput) {
  const Graph g = testing::LoadExample("resnet50_block.json");
  const auto chains = FindFusionChains(g);
  std::vector<std::vector<std::string>> names;
  for (const auto& c : chains) names.push_back(Names(g, c));
  // Both the last conv and the downsample feed the residual Add: two chains meet there.
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[3], (std::vector<std::string>{"layer1.0.conv3", "layer1.0.add", "layer1.0.relu3"}));
  EXPECT_EQ(names[4], (std::vector<std::string>{"layer1.0.downsample", "layer1.0.add", "layer1.0.relu3"}));
  auto fused = ApplyFusions(g, {{chains[3], 2}, {chains[0], 1}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->nodes.size(), g.nodes.size() - 3);
  const GraphNode* n = FindNode(*fused, "layer1.0.conv3+layer1.0.add+layer1.0.relu3");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->op_type, "FusedConv2D");
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"b2r", "layer1.0.conv3.w", "ds"}));
  EXPECT_EQ(n->attrs.at("epilogue"), "Add,Relu");
  EXPECT_EQ(n->outputs[0].name, "out");
  EXPECT_EQ(FindNode(*fused, "conv1+relu1")->attrs.at("strides"), "2,2") << "the head's attributes stay";
  EXPECT_TRUE(RunGraph(*fused, testing::Soc910B2()).ok());
  // Written and read back, the graph is the same.
  auto again = GraphFromJson(GraphToJson(*fused));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(GraphToJson(*again), GraphToJson(*fused));
  auto shared = ApplyFusions(g, {{chains[3], 1}, {chains[4], 1}}, testing::Soc910B2());
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("shares node 'layer1.0.add'"), std::string::npos) << shared.status().ToString();
}

// HF GPT-2's Conv1D is addmm over a view: Gemm [b*s, k] x [k, n], then a view to
// [b, s, n] before the Gelu or the residual Add. A cube chain reads through such a view
// (it keeps the element count and the last axis); the residual [b, s, n] is read at the
// Gemm's [b*s, n] through a view of its own. A view that splits the last axis ends the chain.
TEST(FusionChains, ACubeChainReadsThroughAReshapeThatKeepsTheLastAxis) {
  nlohmann::json j = {
      {"soc", "Ascend910B2"},
      {"inputs", {Tensor("x", {8, 128, 768})}},
      {"weights", {Tensor("w1", {768, 3072}), Tensor("b1", {3072}), Tensor("w2", {3072, 768}), Tensor("b2", {768})}},
      {"outputs", {"y", "heads"}},
      {"nodes",
       {Node("x2d", "Reshape", {"x"}, Tensor("x_rows", {1024, 768})),
        Node("c_fc", "Gemm", {"x_rows", "w1", "b1"}, Tensor("h_rows", {1024, 3072})),
        Node("c_fc.view", "Reshape", {"h_rows"}, Tensor("h", {8, 128, 3072})),
        Node("gelu", "Gelu", {"h"}, Tensor("g", {8, 128, 3072})),
        Node("g2d", "Reshape", {"g"}, Tensor("g_rows", {1024, 3072})),
        Node("c_proj", "Gemm", {"g_rows", "w2", "b2"}, Tensor("o_rows", {1024, 768})),
        Node("c_proj.view", "Reshape", {"o_rows"}, Tensor("o", {8, 128, 768})),
        Node("residual", "Add", {"x", "o"}, Tensor("y0", {8, 128, 768})),
        Node("residual2", "Add", {"y0", "x"}, Tensor("y", {8, 128, 768})),
        Node("again", "Gemm", {"x_rows", "w1"}, Tensor("a_rows", {1024, 3072})),
        Node("split_heads", "Reshape", {"a_rows"}, Tensor("a", {1024, 48, 64})),
        Node("act", "Relu", {"a"}, Tensor("heads", {1024, 48, 64}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  std::vector<std::vector<std::string>> names;
  for (const auto& c : chains) names.push_back(Names(*g, c));
  ASSERT_EQ(names.size(), 2u) << "the head split's view changes the last axis: no chain through it";
  EXPECT_EQ(names[0], (std::vector<std::string>{"c_fc", "gelu"}));
  EXPECT_EQ(names[1], (std::vector<std::string>{"c_proj", "residual", "residual2"}));
  auto fused = ApplyFusions(*g, {{chains[0], 1}, {chains[1], 2}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(FindNode(*fused, "c_fc.view"), nullptr) << "fused over";
  const GraphNode* fc = FindNode(*fused, "c_fc+gelu");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->attrs.at("epilogue"), "BiasAdd,Gelu");
  EXPECT_EQ(fc->outputs[0].desc.shape, (std::vector<int64_t>{8, 128, 3072})) << "it writes what the Gelu wrote";
  const GraphNode* proj = FindNode(*fused, "c_proj+residual+residual2");
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->attrs.at("epilogue"), "BiasAdd,Add,Add");
  ASSERT_EQ(proj->inputs.size(), 5u);
  EXPECT_EQ(proj->inputs[4], proj->inputs[3]) << "x, read twice, through one view";
  auto written = GraphFromJson(GraphToJson(*fused));
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  const GraphNode* residual = FindNode(*fused, proj->inputs[3]);
  ASSERT_NE(residual, nullptr) << proj->inputs[3];
  EXPECT_TRUE(residual->IsView());
  EXPECT_EQ(residual->inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(residual->outputs[0].desc.shape, (std::vector<int64_t>{1024, 768})) << "the residual at the Gemm's shape";
  auto before = RunGraph(*g, testing::Soc910B2());
  auto after = RunGraph(*fused, testing::Soc910B2());
  ASSERT_TRUE(before.ok() && after.ok()) << after.status().ToString();
  EXPECT_EQ(after->ops.size(), before->ops.size() - 3);
  EXPECT_LT(after->step_us, before->step_us);
  auto chosen = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->Applied(), 2u);
  EXPECT_EQ(chosen->kernels_after, chosen->kernels_before - 3);
}

TEST(ChooseFusions, TheBertLayerFusesEveryChainAndRunsAShorterStep) {
  const Graph g = testing::LoadExample("bert_base_layer.json");
  auto r = ChooseFusions(g, testing::Soc910B2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Applied(), 7u);
  EXPECT_EQ(r->FoldsApplied(), 1u);
  EXPECT_EQ(r->kernels_before, 22u);
  EXPECT_EQ(r->kernels_after, 9u)
      << "22 kernels: the attention's 4 nodes one FlashAttention, 12 nodes fused into 6, the K transpose folded";
  EXPECT_LT(r->result_us, r->baseline_us);
  // Better than the layer fused by hand (examples/bert_base_layer_fused.json: the scores'
  // chain fused, the Softmax and P x v apart).
  auto by_hand = RunGraph(testing::LoadExample("bert_base_layer_fused.json"), testing::Soc910B2());
  ASSERT_TRUE(by_hand.ok());
  EXPECT_LE(r->result_us, by_hand->step_us * (1 + 1e-9));
  for (const auto& d : r->decisions) {
    ASSERT_NE(d.Chosen(), nullptr) << d.nodes[0];
    EXPECT_LT(d.Chosen()->step_us, d.unfused_step_us) << d.Chosen()->name;
    EXPECT_EQ(d.Chosen()->length, d.nodes.size() - 1) << "the whole chain pays: " << d.Chosen()->name;
  }
  // The written graph is what was measured.
  auto rerun = RunGraph(r->fused, testing::Soc910B2());
  ASSERT_TRUE(rerun.ok());
  EXPECT_DOUBLE_EQ(rerun->step_us, r->result_us);
  const auto j = r->ToJson();
  EXPECT_EQ(j["fused_operators"].size(), 7u);
  EXPECT_TRUE(j["not_fused"].empty());
  EXPECT_DOUBLE_EQ(j["model_baseline_performance(ms)"].get<double>(), r->baseline_us / 1000);
}

// Candidates timed on several threads give the report and the fused graph of one thread:
// each candidate is timed alone and writes only its own result.
TEST(ChooseFusions, TheReportIsTheSameOnAnyNumberOfThreads) {
  for (const char* example : {"bert_base_layer.json", "resnet50_block.json"}) {
    for (bool training : {false, true}) {
      Graph g = testing::LoadExample(example);
      g.training = training;
      auto one = ChooseFusions(g, testing::Soc910B2(), 1);
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      EXPECT_GT(one->Applied(), 0u) << example;
      for (int threads : {2, 5}) {
        auto many = ChooseFusions(g, testing::Soc910B2(), threads);
        ASSERT_TRUE(many.ok()) << many.status().ToString();
        EXPECT_EQ(many->ToJson(), one->ToJson()) << example << " training " << training << " threads " << threads;
        EXPECT_EQ(GraphToJson(many->fused), GraphToJson(one->fused)) << example << " threads " << threads;
      }
    }
  }
}

TEST(ChooseFusions, WhereTwoChainsMeetTheOneThatSavesMoreTakesTheSharedNode) {
  const Graph g = testing::LoadExample("resnet50_block.json");
  auto r = ChooseFusions(g, testing::Soc910B2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const FusionDecision& conv3 = r->decisions[3];
  const FusionDecision& ds = r->decisions[4];
  ASSERT_TRUE(conv3.Chosen() == nullptr || ds.Chosen() == nullptr || conv3.Chosen()->length + ds.Chosen()->length <= 2)
      << "the Add and the Relu after it go to one of them";
  const FusionDecision& winner = ds.Chosen() && ds.Chosen()->length == 2 ? ds : conv3;
  const FusionDecision& loser = &winner == &ds ? conv3 : ds;
  ASSERT_NE(winner.Chosen(), nullptr);
  EXPECT_EQ(winner.Chosen()->length, 2u);
  EXPECT_LE(winner.Chosen()->step_us, loser.options[1].step_us) << "it saves at least as much alone";
  EXPECT_EQ(loser.chosen, 0u);
  EXPECT_NE(loser.options[0].refused.find("is fused into '" + winner.Chosen()->name + "'"), std::string::npos)
      << loser.options[0].refused;
  EXPECT_LT(r->result_us, r->baseline_us);
  EXPECT_TRUE(RunGraph(r->fused, testing::Soc910B2()).ok());
}

TEST(TransposeFolds, ATransposeOfTheLastTwoAxesReadOnlyByAMatMulFoldsIntoItsFlag) {
  const Graph bert = testing::LoadExample("bert_base_layer.json");
  const auto folds = FindTransposeFolds(bert);
  ASSERT_EQ(folds.size(), 1u);
  EXPECT_EQ(bert.nodes[folds[0].transpose].name, "attention.k.transpose");
  EXPECT_EQ(bert.nodes[folds[0].consumer].name, "attention.scores");
  EXPECT_EQ(folds[0].input, 1);
  auto folded = ApplyTransposeFolds(bert, folds, testing::Soc910B2());
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(folded->nodes.size(), bert.nodes.size() - 1);
  EXPECT_EQ(FindNode(*folded, "attention.k.transpose"), nullptr);
  const GraphNode* scores = FindNode(*folded, "attention.scores");
  EXPECT_EQ(scores->inputs, (std::vector<std::string>{"q_heads", "k_heads"}));
  EXPECT_EQ(scores->attrs.at("transpose_b"), "1");
  // A flag already set flips back; a transpose read by anything but a GEMM does not fold.
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("a", {64, 128}), Tensor("b", {2, 64, 32})}},
                   {"weights", {Tensor("w", {256, 128}), Tensor("w2", {128, 256})}},
                   {"outputs", {"y", "y2", "z", "u"}},
                   {"nodes",
                    {Node("wt", "Transpose", {"w"}, Tensor("w_t", {128, 256})),
                     Node("mm", "MatMul", {"a", "w_t"}, Tensor("y", {64, 256})),
                     Node("w2t", "Transpose", {"w2"}, Tensor("w2_t", {256, 128})),
                     Node("mm2", "MatMul", {"a", "w2_t"}, Tensor("y2", {64, 256})),
                     Node("bt", "Transpose", {"b"}, Tensor("b_t", {2, 32, 64})),
                     Node("r", "Relu", {"b_t"}, Tensor("z", {2, 32, 64})),
                     Node("at", "Transpose", {"a"}, Tensor("a_t", {128, 64})),
                     Node("r2", "Relu", {"a_t"}, Tensor("u", {128, 64}))}}};
  j["nodes"][3]["attrs"] = {{"transpose_b", "true"}};  // reads w2_t [256,128] as [128,256]
  j["nodes"][4]["attrs"] = {{"perm", "0,2,1"}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status valid = ValidateGraphOps(*g, testing::Soc910B2());
  ASSERT_TRUE(valid.ok()) << valid.ToString();
  const auto small = FindTransposeFolds(*g);
  ASSERT_EQ(small.size(), 2u) << "the weights' transposes feed MatMuls; the others feed Relus";
  auto applied = ApplyTransposeFolds(*g, small, testing::Soc910B2());
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(FindNode(*applied, "mm")->inputs[1], "w");
  EXPECT_EQ(FindNode(*applied, "mm")->attrs.at("transpose_b"), "1");
  EXPECT_EQ(FindNode(*applied, "mm2")->inputs[1], "w2");
  EXPECT_EQ(FindNode(*applied, "mm2")->attrs.at("transpose_b"), "0") << "w2_t read transposed is w2 as it is";
  EXPECT_EQ(applied->nodes.size(), g->nodes.size() - 2);
}

// An int8 model quantizes k^T before the scores' BatchMatMul (a QDQ Llama's RoPE writes k in
// float16): the quantize and the dequantize view are element-wise, so the transpose folds
// through them, each then reading and writing k's own layout. Not when the quantized k^T
// has another reader.
TEST(TransposeFolds, ATransposeFoldsThroughTheQuantizeAndDequantizeOfItsOutput) {
  for (const bool also_output : {false, true}) {
    nlohmann::json q = Tensor("q", {8, 256, 64}), quantized = Tensor("kt_q", {8, 64, 256}),
                   dequantized = Tensor("kt_d", {8, 64, 256});
    q["dtype"] = quantized["dtype"] = dequantized["dtype"] = "int8";
    nlohmann::json j{{"soc", "Ascend910B2"},
                     {"inputs", {q, Tensor("k", {8, 256, 64})}},
                     {"outputs", also_output ? nlohmann::json{"s", "kt_q"} : nlohmann::json{"s"}},
                     {"nodes",
                      {Node("t", "Transpose", {"k"}, Tensor("kt", {8, 64, 256})), Node("quant", "Cast", {"kt"}, quantized),
                       Node("dequant", kReshapeOp, {"kt_q"}, dequantized),
                       Node("scores", "BatchMatMul", {"q", "kt_d"}, Tensor("s", {8, 256, 256}))}}};
    j["nodes"][0]["attrs"] = {{"perm", "0,2,1"}};
    j["nodes"][1]["attrs"] = {{"dst_type", "int8"}};
    j["nodes"][3]["attrs"] = {{"out_dtype", "float16"}};
    auto g = GraphFromJson(j);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const auto folds = FindTransposeFolds(*g);
    if (also_output) {
      EXPECT_TRUE(folds.empty()) << "the quantized k^T is a graph output too";
      continue;
    }
    ASSERT_EQ(folds.size(), 1u);
    EXPECT_EQ(g->nodes[folds[0].consumer].name, "scores");
    EXPECT_EQ(folds[0].between, (std::vector<int>{1, 2}));
    auto folded = ApplyTransposeFolds(*g, folds, testing::Soc910B2());
    ASSERT_TRUE(folded.ok()) << folded.status().ToString();
    EXPECT_EQ(FindNode(*folded, "t"), nullptr);
    EXPECT_EQ(FindNode(*folded, "quant")->inputs, (std::vector<std::string>{"k"}));
    EXPECT_EQ(FindNode(*folded, "quant")->outputs[0].desc.shape, (std::vector<int64_t>{8, 256, 64}));
    EXPECT_EQ(FindNode(*folded, "dequant")->outputs[0].desc.shape, (std::vector<int64_t>{8, 256, 64}));
    const GraphNode* scores = FindNode(*folded, "scores");
    EXPECT_EQ(scores->inputs, (std::vector<std::string>{"q", "kt_d"}));
    EXPECT_EQ(scores->attrs.at("transpose_b"), "1");
    auto chosen = ChooseFusions(*g, testing::Soc910B2());
    ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
    ASSERT_EQ(chosen->folds.size(), 1u);
    EXPECT_TRUE(chosen->folds[0].applied) << "one kernel fewer";
    EXPECT_LT(chosen->result_us, chosen->baseline_us);
  }
}

// A MatMul reads B transposed when either spelling is set (transpose_b, CANN's adj_x2):
// a fold flips what it computes as a whole, and writes one spelling (an audit found only
// adj_x2 flipped while transpose_b stayed set, a wrong product on square shapes). Any
// spelling of the swap's perm, or none, folds.
TEST(TransposeFolds, AFoldFlipsTheFlagWhicheverWayItIsSpeltAndWritesOneSpelling) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("a", {8, 256, 256}), Tensor("b", {8, 256, 256}), Tensor("c", {8, 256, 256})}},
                   {"outputs", {"y", "z"}},
                   {"nodes",
                    {Node("t", "Transpose", {"b"}, Tensor("bt", {8, 256, 256})),
                     Node("bmm", "BatchMatMul", {"a", "bt"}, Tensor("y", {8, 256, 256})),
                     Node("t2", "Transpose", {"c"}, Tensor("ct", {8, 256, 256})),
                     Node("bmm2", "BatchMatMul", {"ct", "a"}, Tensor("z", {8, 256, 256}))}}};
  j["nodes"][0]["attrs"] = {{"perm", "[0, 2, 1]"}};
  j["nodes"][1]["attrs"] = {{"transpose_b", "1"}, {"adj_x2", "0"}};  // b^T read transposed: a x b
  j["nodes"][3]["attrs"] = {{"adj_x1", "false"}};                     // no perm: the last two axes
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto folds = FindTransposeFolds(*g);
  ASSERT_EQ(folds.size(), 2u);
  auto folded = ApplyTransposeFolds(*g, folds, testing::Soc910B2());
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  const GraphNode* bmm = FindNode(*folded, "bmm");
  EXPECT_EQ(bmm->inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(bmm->attrs, (std::map<std::string, std::string>{{"transpose_b", "0"}})) << "a x b: B as it is";
  const GraphNode* bmm2 = FindNode(*folded, "bmm2");
  EXPECT_EQ(bmm2->inputs, (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(bmm2->attrs, (std::map<std::string, std::string>{{"transpose_a", "1"}}));
}

TEST(FusionChains, ElementWiseOpsWithoutACubeOpBecomeOneFusedElementwise) {
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {4096, 768})}},
                   {"weights", {Tensor("g", {768}), Tensor("b", {768}), Tensor("s", {4096, 768})}},
                   {"outputs", {"y"}},
                   {"nodes",
                    {Node("ln", "LayerNorm", {"x", "g", "b"}, Tensor("h", {4096, 768})),
                     Node("scale", "Mul", {"g", "h"}, Tensor("m", {4096, 768})),  // h on the right: Mul commutes
                     Node("shift", "Add", {"m", "s"}, Tensor("a", {4096, 768})),
                     Node("act", "Relu", {"a"}, Tensor("y", {4096, 768}))}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto chains = FindFusionChains(*g);
  ASSERT_EQ(chains.size(), 1u) << "one chain from its first op, not one from each";
  EXPECT_FALSE(chains[0].cube);
  EXPECT_EQ(Names(*g, chains[0]), (std::vector<std::string>{"scale", "shift", "act"}));
  EXPECT_EQ(FusedOpType(*g, {chains[0], 2}), "FusedElementwise");
  EXPECT_EQ(FusedEpilogue(*g, {chains[0], 2}), "Mul,Add,Relu");
  auto fused = ApplyFusions(*g, {{chains[0], 2}}, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const GraphNode* n = FindNode(*fused, "scale+shift+act");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"h", "g", "s"})) << "x first, then each op's operand";
  EXPECT_EQ(n->attrs.at("ops"), "Mul,Add,Relu");
  auto r = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE(r->decisions[0].Chosen(), nullptr);
  EXPECT_EQ(r->decisions[0].Chosen()->length, 2u);
  EXPECT_EQ(r->kernels_after, 2u);
  EXPECT_LT(r->result_us, r->baseline_us);
}

// A fused cube op writes float16: a chain whose output is declared float32 cannot be one
// op, so it stays unfused and the report says why.
TEST(ChooseFusions, AFusionTheFusedOpCannotExpressIsLeftOutWithTheReason) {
  nlohmann::json out32 = Tensor("y", {1024, 1024});
  out32["dtype"] = "float32";
  nlohmann::json h32 = Tensor("h", {1024, 1024});
  h32["dtype"] = "float32";
  nlohmann::json j{{"soc", "Ascend910B2"},
                   {"inputs", {Tensor("x", {1024, 1024})}},
                   {"weights", {Tensor("w", {1024, 1024})}},
                   {"outputs", {"y"}},
                   {"nodes", {Node("mm", "MatMul", {"x", "w"}, h32), Node("act", "Relu", {"h"}, out32)}}};
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto r = ChooseFusions(*g, testing::Soc910B2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->decisions.size(), 1u);
  EXPECT_EQ(r->decisions[0].chosen, 0u);
  EXPECT_NE(r->decisions[0].options[0].refused.find("mm+act"), std::string::npos) << r->decisions[0].options[0].refused;
  EXPECT_EQ(r->fused.nodes.size(), 2u);
  EXPECT_EQ(r->result_us, r->baseline_us);
  const auto not_fused = r->ToJson()["not_fused"];
  ASSERT_EQ(not_fused.size(), 1u);
  EXPECT_EQ(not_fused[0]["reason"].get<std::string>(), r->decisions[0].options[0].refused);
}

// One attention of heads [b, h, s, d] as a graph: q x k (k given [D, Skv]), `chain` on the
// scores (a Mul by the scale, an Add of a [b, 1, 1, s] mask), a Softmax, P x v.
nlohmann::json AttentionGraph(int64_t b, int64_t h, int64_t s, int64_t d, bool mask) {
  nlohmann::json nodes = {Node("scores", "BatchMatMul", {"q", "k"}, Tensor("sc", {b, h, s, s})),
                          Node("scale", "Mul", {"sc", "c"}, Tensor("scaled", {b, h, s, s}))};
  std::string x = "scaled";
  if (mask) {
    nodes.push_back(Node("mask", "Add", {"m", "scaled"}, Tensor("masked", {b, h, s, s})));  // the mask on the left
    x = "masked";
  }
  nodes.push_back(Node("softmax", "Softmax", {x}, Tensor("p", {b, h, s, s})));
  nodes.push_back(Node("context", "BatchMatMul", {"p", "v"}, Tensor("o", {b, h, s, d})));
  return {{"soc", "Ascend910B2"},
          {"inputs", {Tensor("q", {b, h, s, d}), Tensor("k", {b, h, d, s}), Tensor("v", {b, h, s, d}), Tensor("m", {b, 1, 1, s})}},
          {"weights", {Tensor("c", {1})}},
          {"outputs", {"o"}},
          {"nodes", nodes}};
}

TEST(AttentionFusions, TheScoresTheirChainTheSoftmaxAndPxVAreOneFlashAttention) {
  auto g = GraphFromJson(AttentionGraph(2, 8, 4096, 40, true));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto found = FindAttentionFusions(*g);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].Members(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(AttentionScoreChain(*g, found[0]), "Mul,Add");
  EXPECT_EQ(AttentionNodeName(*g, found[0]), "scores+scale+mask+softmax+context");
  auto fused = ApplyAttentionFusions(*g, found, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(fused->nodes.size(), 1u);
  const GraphNode& fa = fused->nodes[0];
  EXPECT_EQ(fa.op_type, "FlashAttention");
  EXPECT_EQ(fa.inputs, (std::vector<std::string>{"q", "k", "v", "c", "m"}));
  EXPECT_EQ(fa.attrs.at("scores"), "Mul,Add");
  EXPECT_FALSE(fa.attrs.count("transpose_b"));
  EXPECT_EQ(fa.outputs[0].name, "o");

  // LLaMA's probabilities cast back from float32: a view of their shape, taken along.
  nlohmann::json cast = AttentionGraph(2, 8, 256, 40, false);
  cast["nodes"][3] = Node("context", "BatchMatMul", {"p16", "v"}, Tensor("o", {2, 8, 256, 40}));
  cast["nodes"].insert(cast["nodes"].begin() + 3, Node("cast", "Reshape", {"p"}, Tensor("p16", {2, 8, 256, 256})));
  auto with_view = GraphFromJson(cast);
  ASSERT_TRUE(with_view.ok()) << with_view.status().ToString();
  const auto through = FindAttentionFusions(*with_view);
  ASSERT_EQ(through.size(), 1u);
  EXPECT_EQ(through[0].views, (std::vector<int>{3}));
  EXPECT_EQ(AttentionNodeName(*with_view, through[0]), "scores+scale+softmax+context");
  auto applied = ApplyAttentionFusions(*with_view, through, testing::Soc910B2());
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->nodes.size(), 1u) << "the view went with the attention";

  // GPT-2's: the scores cast (a view of their shape), then a Where of an int8 causal mask.
  nlohmann::json causal = AttentionGraph(2, 8, 256, 40, false);
  nlohmann::json cond = Tensor("causal", {1, 1, 256, 256});
  cond["dtype"] = "int8";
  causal["inputs"].push_back(cond);
  causal["weights"].push_back(Tensor("fill", {1}));
  causal["nodes"][2] = Node("softmax", "Softmax", {"masked"}, Tensor("p", {2, 8, 256, 256}));
  causal["nodes"].insert(causal["nodes"].begin() + 2, Node("cast", "Reshape", {"scaled"}, Tensor("scaled16", {2, 8, 256, 256})));
  causal["nodes"].insert(causal["nodes"].begin() + 3,
                         Node("mask", "Where", {"causal", "scaled16", "fill"}, Tensor("masked", {2, 8, 256, 256})));
  auto gpt2 = GraphFromJson(causal);
  ASSERT_TRUE(gpt2.ok()) << gpt2.status().ToString();
  const auto masked = FindAttentionFusions(*gpt2);
  ASSERT_EQ(masked.size(), 1u);
  EXPECT_EQ(masked[0].step_x, (std::vector<std::string>{"sc", "scaled16"}));
  EXPECT_EQ(AttentionScoreChain(*gpt2, masked[0]), "Mul,Where");
  auto gpt2_fused = ApplyAttentionFusions(*gpt2, masked, testing::Soc910B2());
  ASSERT_TRUE(gpt2_fused.ok()) << gpt2_fused.status().ToString();
  ASSERT_EQ(gpt2_fused->nodes.size(), 1u);
  EXPECT_EQ(gpt2_fused->nodes[0].inputs, (std::vector<std::string>{"q", "k", "v", "c", "causal", "fill"}));
  EXPECT_FALSE(AttentionIsCausal(*gpt2, masked[0])) << "nothing says the mask is causal";
  EXPECT_EQ(UndeclaredMasks(*gpt2, masked[0]), (std::vector<std::string>{"causal"})) << "an input: fuse says to tell";
  EXPECT_FALSE(gpt2_fused->nodes[0].attrs.count("causal"));
  // Said to be (Graph::causal_masks, as the ONNX import finds GPT-2's), the FlashAttention
  // skips the key blocks it masks whole; through the graph's JSON too.
  causal["causal_masks"] = {"causal"};
  auto declared = GraphFromJson(causal);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(GraphFromJson(GraphToJson(*declared))->causal_masks, (std::vector<std::string>{"causal"}));
  EXPECT_TRUE(AttentionIsCausal(*declared, masked[0]));
  EXPECT_TRUE(UndeclaredMasks(*declared, masked[0]).empty());
  auto causal_fused = ApplyAttentionFusions(*declared, masked, testing::Soc910B2());
  ASSERT_TRUE(causal_fused.ok()) << causal_fused.status().ToString();
  EXPECT_EQ(causal_fused->nodes[0].attrs.at("causal"), "1");
  auto time = [](const Graph& graph) {
    auto run = profile::RunGraph(graph, testing::Soc910B2());
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? run->compute_end_us - run->compute_start_us : 0.0;
  };
  EXPECT_LT(time(*causal_fused), 0.8 * time(*gpt2_fused));
  // GPT-2's mask as an export that does not fold it writes it: a window of the [512, 512]
  // tril buffer, bias[:, :, k - q : k, :k]. Rows 0.. keep each row's own key and those
  // before; rows 256.. of the first 256 columns keep every key, and are no causal mask.
  for (const auto& [starts, is_causal] : std::vector<std::pair<std::string, bool>>{{"0,0,0,0", true}, {"0,0,256,0", false}}) {
    nlohmann::json window = causal;
    window["causal_masks"] = {"bias"};
    nlohmann::json buffer = Tensor("bias", {1, 1, 512, 512});
    buffer["dtype"] = "int8";
    window["weights"].push_back(buffer);
    window["inputs"].erase(window["inputs"].size() - 1);  // "causal" is now the window
    nlohmann::json view = Node("mask.slice", "Reshape", {"bias"}, Tensor("causal", {1, 1, 256, 256}));
    view["outputs"][0]["dtype"] = "int8";
    view["attrs"] = {{"slice_starts", starts}};
    window["nodes"].insert(window["nodes"].begin(), view);
    auto windowed = GraphFromJson(window);
    ASSERT_TRUE(windowed.ok()) << windowed.status().ToString();
    const auto attention = FindAttentionFusions(*windowed);
    ASSERT_EQ(attention.size(), 1u) << starts;
    EXPECT_EQ(AttentionIsCausal(*windowed, attention[0]), is_causal) << starts;
    EXPECT_TRUE(UndeclaredMasks(*windowed, attention[0]).empty()) << "a window of a weight, whose values the import saw";
  }
  // Any tensor of rank 2 or more may be one (the mask an export computes from its padding
  // mask, say); a name the graph has no tensor of, or a scalar, may not.
  causal["causal_masks"] = {"masked"};
  EXPECT_TRUE(GraphFromJson(causal).ok());
  for (const char* bad : {"fill", "nope"}) {
    causal["causal_masks"] = {bad};
    auto refused = GraphFromJson(causal);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find(std::string("causal_masks: '") + bad + "'"), std::string::npos)
        << refused.status().message();
  }

  // Grouped-query attention: k and v repeated from 2 heads to 8 by repeat_kv's three views
  // (unsqueeze, expand, view); the FlashAttention reads the 2 heads.
  nlohmann::json gqa = AttentionGraph(2, 8, 256, 40, false);
  gqa["inputs"] = {Tensor("q", {2, 8, 256, 40}), Tensor("k2", {2, 2, 256, 40}), Tensor("v2", {2, 2, 256, 40})};
  for (const char* x : {"k", "v"}) {
    const std::string s(x);
    nlohmann::json views = {Node(s + ".unsqueeze", "Reshape", {s + "2"}, Tensor(s + "u", {2, 2, 1, 256, 40})),
                            Node(s + ".expand", "Reshape", {s + "u"}, Tensor(s + "e", {2, 2, 4, 256, 40})),
                            Node(s + ".repeat", "Reshape", {s + "e"}, Tensor(s + "r", {2, 8, 256, 40}))};
    for (auto& n : views) gqa["nodes"].insert(gqa["nodes"].begin(), n);
  }
  gqa["nodes"][6] = Node("scores", "BatchMatMul", {"q", "kr"}, Tensor("sc", {2, 8, 256, 256}));
  gqa["nodes"][6]["attrs"] = {{"transpose_b", "1"}};
  gqa["nodes"][9] = Node("context", "BatchMatMul", {"p", "vr"}, Tensor("o", {2, 8, 256, 40}));
  auto grouped = GraphFromJson(gqa);
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  const auto gqa_found = FindAttentionFusions(*grouped);
  ASSERT_EQ(gqa_found.size(), 1u);
  EXPECT_EQ(gqa_found[0].k, "k2");
  EXPECT_EQ(gqa_found[0].v, "v2");
  auto gqa_fused = ApplyAttentionFusions(*grouped, gqa_found, testing::Soc910B2());
  ASSERT_TRUE(gqa_fused.ok()) << gqa_fused.status().ToString();
  ASSERT_EQ(gqa_fused->nodes.size(), 1u) << "repeat_kv's views went with it";
  EXPECT_EQ(gqa_fused->nodes[0].inputs, (std::vector<std::string>{"q", "k2", "v2", "c"}));

  // In a training graph too (its backward is twice its forward).
  nlohmann::json training = AttentionGraph(2, 8, 256, 40, false);
  training["training"] = true;
  auto trained = GraphFromJson(training);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  ASSERT_EQ(FindAttentionFusions(*trained).size(), 1u);
  auto trained_fused = ApplyAttentionFusions(*trained, FindAttentionFusions(*trained), testing::Soc910B2());
  ASSERT_TRUE(trained_fused.ok()) << trained_fused.status().ToString();
  auto trained_run = RunGraph(*trained_fused, testing::Soc910B2());
  ASSERT_TRUE(trained_run.ok()) << trained_run.status().ToString();
  ASSERT_EQ(trained_run->ops.size(), 2u) << "the FlashAttention and its backward";
  EXPECT_DOUBLE_EQ(trained_run->ops[1].duration_us, 2 * trained_run->ops[0].duration_us);

  // Not an attention: the probabilities also a graph output; P read as B; a view that
  // changes the probabilities' shape.
  nlohmann::json shared = AttentionGraph(2, 8, 256, 40, false);
  shared["outputs"].push_back("p");
  nlohmann::json as_b = AttentionGraph(2, 8, 256, 40, false);
  as_b["nodes"][3] = Node("context", "BatchMatMul", {"v2", "p"}, Tensor("o", {2, 8, 40, 256}));
  as_b["inputs"].push_back(Tensor("v2", {2, 8, 40, 256}));
  nlohmann::json reshaped = cast;
  reshaped["nodes"][3] = Node("cast", "Reshape", {"p"}, Tensor("p16", {2, 8, 256, 256}));
  reshaped["nodes"][3]["outputs"][0]["shape"] = {16, 256, 256};
  reshaped["nodes"][4] = Node("context", "BatchMatMul", {"p16", "v3"}, Tensor("o", {16, 256, 40}));
  reshaped["inputs"].push_back(Tensor("v3", {16, 256, 40}));
  for (const nlohmann::json& j : {shared, as_b, reshaped}) {
    auto other = GraphFromJson(j);
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    EXPECT_TRUE(FindAttentionFusions(*other).empty()) << j.dump().substr(0, 200);
  }
}

TEST(ChooseFusions, AnAttentionIsOneFlashAttentionWhereThatBeatsItsScoresChainFused) {
  // Stable Diffusion's 4096 tokens: the scores are 512 MB in fp16 and never reach HBM.
  auto sd = GraphFromJson(AttentionGraph(2, 8, 4096, 40, true));
  ASSERT_TRUE(sd.ok()) << sd.status().ToString();
  auto r = ChooseFusions(*sd, testing::Soc910B2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->decisions.empty());
  const FusionDecision& attention = r->decisions[0];
  ASSERT_NE(attention.Chosen(), nullptr);
  EXPECT_EQ(attention.Chosen()->op_type, "FlashAttention");
  EXPECT_EQ(r->kernels_after, 1u);
  EXPECT_LT(r->result_us, 0.6 * r->baseline_us);
  // The bar was the scores' BatchMatMul with its chain fused, not the unfused graph.
  EXPECT_LT(attention.unfused_step_us, r->baseline_us);
  auto rerun = RunGraph(r->fused, testing::Soc910B2());
  ASSERT_TRUE(rerun.ok()) << rerun.status().ToString();
  EXPECT_DOUBLE_EQ(rerun->step_us, r->result_us);
  EXPECT_EQ(rerun->ops[0].task_type, "MIX_AIC");

  // ViT-B/32's 50 tokens: FlashAttention's per-block steps cost more than the small
  // scores' round trip, so the chain fusion is kept and the attention left with the reason.
  auto vit = GraphFromJson(AttentionGraph(32, 12, 50, 64, false));
  ASSERT_TRUE(vit.ok()) << vit.status().ToString();
  auto v = ChooseFusions(*vit, testing::Soc910B2());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->decisions.size(), 2u) << "the attention, then the scores' chain";
  EXPECT_EQ(v->decisions[0].chosen, 0u);
  ASSERT_NE(v->decisions[1].Chosen(), nullptr);
  EXPECT_EQ(v->decisions[1].Chosen()->op_type, "FusedBatchMatMul");
  const std::string reason = v->ToJson()["not_fused"][0]["reason"].get<std::string>();
  EXPECT_NE(reason.find("as FlashAttention (Mul) is not faster"), std::string::npos) << reason;
}

}  // namespace
}  // namespace tunefleet::profile
