// The JSON model graph: validation errors name the node and field; examples load.
#include "tunefleet/common/graph.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/profile/test_util.h"

namespace tunefleet {
namespace {

using testing::Node;
using testing::Tensor;

nlohmann::json TwoOpGraph() {
  return {{"soc", "Ascend910B2"},
          {"inputs", {Tensor("x", {1024, 1024})}},
          {"weights", {Tensor("w", {1024, 1024})}},
          {"outputs", {"y"}},
          {"nodes", {Node("mm", "MatMul", {"x", "w"}, Tensor("h", {1024, 1024})),
                     Node("act", "Relu", {"h"}, Tensor("y", {1024, 1024}))}}};
}

TEST(GraphModel, AcceptsAWellFormedGraphAndMapsNodesToOpKeys) {
  auto g = GraphFromJson(TwoOpGraph());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_TRUE(ValidateGraphOps(*g, testing::Soc910B2()).ok());
  OpKey key = NodeOpKey(*g, g->nodes[0]);
  EXPECT_EQ(key.op_type, "MatMul");
  EXPECT_EQ(key.soc, "Ascend910B2");
  ASSERT_EQ(key.inputs.size(), 2u);
  EXPECT_EQ(key.inputs[1].shape, (std::vector<int64_t>{1024, 1024}));
}

// A cube node writes the dtype it declares: an fp32 output becomes out_dtype on its op
// key (the inputs' fp16 needs none), and an attr that contradicts it is refused.
TEST(GraphModel, ACubeNodeWritesTheDtypeItsOutputDeclares) {
  auto j = TwoOpGraph();
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FALSE(NodeOpKey(*g, g->nodes[0]).attrs.contains("out_dtype"));
  j["nodes"][0]["outputs"][0]["dtype"] = "float32";
  j["nodes"][1]["outputs"][0]["dtype"] = "float32";  // the Relu after it reads fp32
  g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(NodeOpKey(*g, g->nodes[0]).attrs.at("out_dtype"), "float32");
  Status valid = ValidateGraphOps(*g, testing::Soc910B2());
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  j["nodes"][0]["attrs"] = {{"out_dtype", "float16"}};
  g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = ValidateGraphOps(*g, testing::Soc910B2());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 'mm' (MatMul): output 'h' is declared float32, but the op writes float16; make "
                             "attrs.out_dtype and the declaration agree"),
            std::string::npos)
      << s.message();
}

// OpChecks carries what ValidateGraphOps learnt of each op key from one graph to the next
// (fuse validates hundreds of variants of one graph): a key is learnt once, and a refusal
// learnt under one node's name is reported under the next node's.
TEST(GraphModel, OpChecksLearnEachKeyOnceAndReportTheNodeAtHand) {
  auto j = TwoOpGraph();
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  OpChecks checks;
  ASSERT_TRUE(ValidateGraphOps(*g, testing::Soc910B2(), &checks).ok());
  const size_t learnt = checks.size();
  EXPECT_EQ(learnt, 2u) << "the MatMul and the op after it";
  ASSERT_TRUE(ValidateGraphOps(*g, testing::Soc910B2(), &checks).ok());
  EXPECT_EQ(checks.size(), learnt) << "nothing new to learn";
  // The declared dtype the key's facts contradict, under two names in turn.
  j["nodes"][0]["attrs"] = {{"out_dtype", "float16"}};
  j["nodes"][0]["outputs"][0]["dtype"] = "float32";
  for (const std::string name : {"mm", "renamed"}) {
    j["nodes"][0]["name"] = name;
    auto bad = GraphFromJson(j);
    ASSERT_TRUE(bad.ok()) << bad.status().ToString();
    Status s = ValidateGraphOps(*bad, testing::Soc910B2(), &checks);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find("node '" + name + "' (MatMul): output 'h' is declared float32, but the op writes float16"),
              std::string::npos)
        << s.message();
  }
  EXPECT_EQ(checks.size(), learnt + 1) << "the float16-out MatMul, learnt once";
}

// A Conv2D whose groups are its channels, one filter each (a framework IR's spelling of
// MobileNet's depthwise 3x3), runs as the DepthwiseConv2D kernel CANN runs, as an ONNX
// import writes it; any other grouping, int8, or an fp32 output declared stays the cube's
// grouped convolution.
TEST(GraphModel, AConvWhoseGroupsAreItsChannelsIsADepthwiseConv) {
  auto graph = [](int64_t groups, const std::string& dtype, const std::string& out_dtype) {
    nlohmann::json x = Tensor("x", {8, 32, 56, 56}), w = Tensor("w", {32, 32 / groups, 3, 3}),
                   y = Tensor("y", {8, 32, 56, 56});
    x["dtype"] = w["dtype"] = dtype;
    y["dtype"] = out_dtype;
    nlohmann::json conv = Node("dw", "Conv2D", {"x", "w"}, y);
    conv["attrs"] = {{"groups", std::to_string(groups)}, {"pads", "1,1,1,1"}, {"data_format", "NCHW"}};
    return nlohmann::json{{"soc", "Ascend910B2"}, {"inputs", {x}}, {"weights", {w}}, {"outputs", {"y"}},
                          {"nodes", {conv}}};
  };
  auto g = GraphFromJson(graph(32, "float16", "float16"));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->nodes[0].op_type, "DepthwiseConv2D");
  EXPECT_FALSE(g->nodes[0].attrs.contains("groups"));
  EXPECT_EQ(g->nodes[0].attrs.at("pads"), "1,1,1,1");
  Status valid = ValidateGraphOps(*g, testing::Soc910B2());
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  for (const auto& [groups, dtype, out] : std::vector<std::tuple<int64_t, std::string, std::string>>{
           {2, "float16", "float16"}, {32, "int8", "float16"}, {32, "float16", "float32"}}) {
    auto kept = GraphFromJson(graph(groups, dtype, out));
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(kept->nodes[0].op_type, "Conv2D") << groups << " " << dtype << " -> " << out;
  }
}

// A declared output dtype sizes the D2H copy, the consumers' reads and peak memory, so
// one the op does not write is refused, naming the tensor: what the cube cannot write,
// an int8 GEMM's int32, a fused op's epilogue output, a vector op's own.
TEST(GraphModel, ADeclaredOutputDtypeTheOpDoesNotWriteIsRefused) {
  auto message = [](nlohmann::json j) {
    auto g = GraphFromJson(j);
    if (!g.ok()) return "parse: " + g.status().message();
    Status s = ValidateGraphOps(*g, testing::Soc910B2());
    return s.ok() ? std::string("accepted") : s.message();
  };
  auto j = TwoOpGraph();
  j["nodes"][0]["outputs"][0]["dtype"] = "int8";
  j["nodes"][1]["outputs"][0]["dtype"] = "int8";
  EXPECT_EQ(message(j), "node 'mm' (MatMul): output 'h' is declared int8, which the cube does not write: declare "
                        "float16, bfloat16 or float32");
  j = TwoOpGraph();
  j["inputs"][0]["dtype"] = "int8";
  j["weights"][0]["dtype"] = "int8";
  j["nodes"][0]["outputs"][0]["dtype"] = "int8";
  j["nodes"][1]["outputs"][0]["dtype"] = "int8";
  EXPECT_NE(message(j).find("an int8 MatMul writes int32, which a graph cannot declare"), std::string::npos) << message(j);
  j["nodes"][0]["outputs"][0]["dtype"] = "float16";
  j["nodes"][1]["outputs"][0]["dtype"] = "float16";
  EXPECT_EQ(message(j), "accepted") << "int8 dequantised to float16";
  j = TwoOpGraph();
  j["nodes"][1]["outputs"][0]["dtype"] = "float32";
  EXPECT_EQ(message(j), "node 'act' (Relu): output 'y' is declared float32, but the op writes float16; fix the declaration");
  j = TwoOpGraph();
  j["weights"].push_back(Tensor("b", {1024}));
  j["nodes"][0]["op"] = "FusedMatMul";
  j["nodes"][0]["inputs"] = {"x", "w", "b"};
  j["nodes"][0]["attrs"] = {{"epilogue", "BiasAdd"}};
  EXPECT_EQ(message(j), "accepted");
  j["nodes"][0]["outputs"][0]["dtype"] = "float32";
  j["nodes"][1]["outputs"][0]["dtype"] = "float32";
  EXPECT_EQ(message(j), "node 'mm' (FusedMatMul): output 'h' is declared float32, but the op writes float16; fix the declaration");
}

TEST(GraphModel, AnInputNoTensorProducesNamesTheNodeAndTheTensor) {
  auto j = TwoOpGraph();
  j["nodes"][1]["inputs"] = {"hidden"};
  auto g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("node 'act'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("'hidden'"), std::string::npos) << g.status().message();
}

TEST(GraphModel, ABadShapeNamesTheNodeAndTheField) {
  auto j = TwoOpGraph();
  j["nodes"][0]["outputs"][0]["shape"] = {1024, 0};
  auto g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node 'mm'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("'shape'"), std::string::npos) << g.status().message();
}

TEST(GraphModel, AMisspeltFieldIsRefusedWithTheKnownOnes) {
  auto j = TwoOpGraph();
  j["nodes"][0]["attr"] = {{"transpose_b", "1"}};  // "attrs": ignored, it would profile another op
  auto node = GraphFromJson(j);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().message(), "node 'mm': unknown field 'attr' (known: name, op, inputs, outputs, attrs)");
  j = TwoOpGraph();
  j["inputs"][0]["dtyp"] = "float32";
  auto tensor = GraphFromJson(j);
  ASSERT_FALSE(tensor.ok());
  EXPECT_NE(tensor.status().message().find("unknown field 'dtyp'"), std::string::npos) << tensor.status().message();
  j = TwoOpGraph();
  j["host_preprocess"] = 5;
  EXPECT_FALSE(GraphFromJson(j).ok());
  j = TwoOpGraph();
  j["comment"] = "notes are welcome";
  EXPECT_TRUE(GraphFromJson(j).ok());
}

TEST(GraphModel, ADuplicateTensorNameIsRejected) {
  auto j = TwoOpGraph();
  j["nodes"][1]["outputs"][0]["name"] = "h";
  auto g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'h' is already used"), std::string::npos) << g.status().message();
}

TEST(GraphModel, ACycleIsRejectedNamingANodeOnIt) {
  auto j = TwoOpGraph();
  j["nodes"][0]["inputs"] = {"y", "w"};
  auto g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("cycle"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("node 'mm'"), std::string::npos) << g.status().message();
}

TEST(GraphModel, AnOpItsTuningProblemRejectsNamesTheNode) {
  auto j = TwoOpGraph();
  j["weights"][0]["shape"] = {512, 1024};  // K of x is 1024, of w 512
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = ValidateGraphOps(*g, testing::Soc910B2());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 'mm' (MatMul)"), std::string::npos) << s.message();
}

// A view keeps the element count (a reshape) or broadcasts its input (an expand: GQA's
// grouped key/value heads read at the query heads' count); anything else is refused.
TEST(GraphModel, AViewKeepsTheElementCountOrBroadcasts) {
  auto j = TwoOpGraph();
  j["nodes"][1] = Node("view", "Reshape", {"h"}, Tensor("y", {1024, 512}));
  auto g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = ValidateGraphOps(*g, testing::Soc910B2());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 'view': Reshape output 'y' must keep the input's dtype, and its element count or "
                             "broadcast it"),
            std::string::npos)
      << s.message();
  j["nodes"][1] = Node("view", "Reshape", {"h"}, Tensor("y", {4, 1024, 1024}));
  g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(ValidateGraphOps(*g, testing::Soc910B2()).ok()) << "a broadcast of [1024, 1024] to [4, 1024, 1024]";
  j["nodes"][1] = Node("view", "Reshape", {"h"}, Tensor("y", {1024, 4, 1024}));
  g = GraphFromJson(j);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FALSE(ValidateGraphOps(*g, testing::Soc910B2()).ok()) << "4x the elements, but no broadcast of [1024, 1024]";
}

// A window view (attrs.slice_starts: ONNX's Split and Slice) reads a part of its input at
// a start per axis; the window must lie inside the input, and a wrong count or bound is
// named.
TEST(GraphModel, AWindowViewLiesInsideItsInput) {
  auto with = [](std::vector<int64_t> shape, const char* starts) {
    auto j = TwoOpGraph();
    j["nodes"][1] = Node("q", "Reshape", {"h"}, Tensor("q_out", shape));
    j["nodes"][1]["attrs"] = {{"slice_starts", starts}};
    j["nodes"].push_back(Node("act", "Relu", {"q_out"}, Tensor("y", shape)));
    auto g = GraphFromJson(j);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? ValidateGraphOps(*g, testing::Soc910B2()) : g.status();
  };
  EXPECT_TRUE(with({1024, 256}, "0,768").ok()) << "the last quarter of the columns";
  EXPECT_TRUE(with({1, 1024}, "[1023, 0]").ok()) << "the last row";
  EXPECT_TRUE(with({1024, 1024}, "0,0").ok()) << "the whole input";
  const Status past = with({1024, 256}, "0,769");
  EXPECT_NE(past.message().find("node 'q': Reshape attrs.slice_starts='0,769': on axis 1 the window [769, 1025) is "
                                "outside the input's 1024"),
            std::string::npos)
      << past.message();
  EXPECT_NE(with({1024, 256}, "0,-1").message().find("the window [-1, 255)"), std::string::npos);
  const Status rank = with({1024, 256}, "0");
  EXPECT_NE(rank.message().find("a window view gives one start per axis of its input [1024,1024]"), std::string::npos)
      << rank.message();
  EXPECT_NE(with({1024, 256, 1}, "0,0,0").message().find("keeps its rank"), std::string::npos);
  EXPECT_NE(with({1024, 256}, "0,x").message().find("attrs.slice_starts must be integers"), std::string::npos);
  // Without the attribute, fewer elements are no view.
  auto j = TwoOpGraph();
  j["nodes"][1] = Node("q", "Reshape", {"h"}, Tensor("y", {1024, 256}));
  EXPECT_FALSE(ValidateGraphOps(*GraphFromJson(j), testing::Soc910B2()).ok());
}

TEST(GraphModel, AKernelsDeclaredOutputMustBeWhatTheOpWrites) {
  // It sizes the D2H copy, the consumers' reads and peak memory: a MatMul declared to
  // write 7 elements was profiled with a 10 us copy instead of 681 us.
  for (const auto& [node, shape] : std::vector<std::pair<int, std::vector<int64_t>>>{
           {0, {7}}, {0, {1024, 1000}}, {1, {1024, 2048}}}) {
    auto j = TwoOpGraph();
    j["nodes"][node]["outputs"][0]["shape"] = shape;
    auto g = GraphFromJson(j);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    Status s = ValidateGraphOps(*g, testing::Soc910B2());
    ASSERT_FALSE(s.ok()) << "node " << node << " declared " << shape.size() << "-d output";
    EXPECT_NE(s.message().find("elements, but the op writes 1048576"), std::string::npos) << s.message();
  }
  ASSERT_TRUE(ValidateGraphOps(*GraphFromJson(TwoOpGraph()), testing::Soc910B2()).ok());
}

TEST(GraphModel, TopLevelFieldsAreChecked) {
  auto j = TwoOpGraph();
  j["devices"] = 0;
  auto g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'devices'"), std::string::npos);
  j = TwoOpGraph();
  j["name"] = 7;
  g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'name'"), std::string::npos);
  j = TwoOpGraph();
  j["outputs"] = {"nope"};
  g = GraphFromJson(j);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'nope'"), std::string::npos);
}

TEST(GraphModel, TheExampleGraphsLoadAndEveryOpIsValid) {
  for (const char* name : {"bert_base_layer.json", "resnet50_block.json"}) {
    Graph g = testing::LoadExample(name);
    ASSERT_FALSE(g.nodes.empty()) << name;
    Status s = ValidateGraphOps(g, testing::Soc910B2());
    EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
}

}  // namespace
}  // namespace tunefleet
