// ONNX import (common/onnx_import.h): the BERT-base layer exported as PyTorch does
// (examples/bert_base_layer.onnx, scripts/make_bert_onnx.py) runs as the JSON graph of the
// same layer does; symbolic dimensions need sizes; an op with no equivalent names the node.
#include "tunefleet/common/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "worker/profile/graph_run.h"

namespace tunefleet {
namespace {

const std::string kBert = std::string(TUNEFLEET_SOURCE_DIR) + "/examples/bert_base_layer.onnx";

OnnxImportOptions Dims(int64_t batch, int64_t seq) {
  OnnxImportOptions o;
  o.dims = {{"batch", batch}, {"seq", seq}};
  return o;
}

const GraphNode* Find(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

TEST(OnnxImport, TheExportedBertLayerRunsAsTheJsonGraphOfTheSameLayer) {
  auto g = GraphFromOnnxFile(kBert, Dims(32, 128));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->soc, "Ascend910B2") << "the default SoC";
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].desc.shape, (std::vector<int64_t>{32, 128, 768}));
  EXPECT_EQ(g->weights.size(), 17u) << "16 and the scores' scale, as the JSON graph; the Reshapes' shapes and the "
                                        "scalars of the folded GELU are not read";
  // The erf form of GELU is one Gelu, named as its last node, reading the bias add.
  const GraphNode* gelu = Find(*g, "ffn.gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op_type, "Gelu");
  EXPECT_EQ(gelu->inputs, (std::vector<std::string>{"ffn1"}));
  EXPECT_EQ(Find(*g, "ffn.gelu.erf"), nullptr);
  EXPECT_EQ(Find(*g, "attention.q.heads")->op_type, kReshapeOp) << "a head-split permute is a view";
  EXPECT_EQ(Find(*g, "attention.k.transpose")->op_type, "Transpose");
  EXPECT_EQ(Find(*g, "attention.scores")->op_type, "BatchMatMul");
  EXPECT_EQ(Find(*g, "attention.layernorm")->op_type, "LayerNorm");
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto json = profile::RunGraph(testing::LoadExample("bert_base_layer.json"), testing::Soc910B2());
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(run->ops.size(), json->ops.size()) << "22 kernels either way";
  EXPECT_NEAR(run->compute_end_us - run->compute_start_us, json->compute_end_us - json->compute_start_us,
              1e-6 * json->compute_end_us)
      << "the same kernels at the same shapes (its MatMuls read x as [batch, seq, 768])";
  EXPECT_EQ(run->memory.with_reuse_bytes, json->memory.with_reuse_bytes);
  // Other sizes give other shapes; the file is the same.
  auto small = GraphFromOnnxFile(kBert, Dims(2, 64));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(Find(*small, "attention.softmax")->outputs[0].desc.shape, (std::vector<int64_t>{2, 12, 64, 64}));
}

TEST(OnnxImport, SymbolicDimensionsNeedSizesAndTheErrorsSayWhichAndHow) {
  auto none = GraphFromOnnxFile(kBert, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("symbolic dimensions without a size: batch, seq: give --dim batch=N --dim seq=N"),
            std::string::npos)
      << none.status().ToString();
  OnnxImportOptions extra = Dims(32, 128);
  extra.dims["beam"] = 4;
  auto unknown = GraphFromOnnxFile(kBert, extra);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--dim beam: the model has no such symbolic dimension"), std::string::npos);
  EXPECT_EQ(ParseDimFlag("batch=32").value(), (std::pair<std::string, int64_t>{"batch", 32}));
  for (const char* bad : {"batch", "=3", "batch=", "batch=x", "batch=0", "batch=3x", "batch=+3", "batch= 3", "batch=-1"}) {
    EXPECT_FALSE(ParseDimFlag(bad).ok()) << bad;
  }
  auto missing = GraphFromOnnxFile("/nonexistent.onnx", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// A model of x [4, 16, 64] float16 through `nodes`, output y, written to `path`;
// `constants` are float16 scalars (name, value) as initializers.
struct TinyModel {
  onnx::ModelProto m;
  TinyModel(int opset = 17) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    auto* in = m.mutable_graph()->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : {4, 16, 64}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    m.mutable_graph()->add_output()->set_name("y");
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name, const std::string& domain = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->set_domain(domain);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  void Scalar(const std::string& name, float value) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }
  Result<Graph> Load(const std::string& path) {
    std::ofstream f(path, std::ios::binary);
    EXPECT_TRUE(m.SerializeToOstream(&f));
    f.close();
    return GraphFromOnnxFile(path, {});
  }
};

std::string Message(const Result<Graph>& r) { return r.ok() ? "(ok)" : r.status().ToString(); }

// Found by an audit: Gelu (opset 20) and onnxruntime's FastGelu have no schema in libonnx
// 1.12, so their shapes were never inferred; a node with no output aborted the process; a
// custom domain's Relu was taken for the standard one; every inference failure was blamed
// on --dim; any constants made a GELU; a second output used as a graph output was not
// named.
TEST(OnnxImport, OpsLibonnxHasNoSchemaForAndMalformedNodesGetClearAnswers) {
  testing::ScratchDir dir;
  {
    TinyModel t(20);
    t.Node("Gelu", {"x"}, {"g"}, "gelu");
    t.Node("FastGelu", {"g"}, {"y"}, "fast", "com.microsoft");
    t.m.add_opset_import()->set_domain("com.microsoft");
    auto g = t.Load(dir.Path("gelu.onnx"));
    ASSERT_TRUE(g.ok()) << Message(g);
    ASSERT_EQ(g->nodes.size(), 2u);
    for (const auto& n : g->nodes) {
      EXPECT_EQ(n.op_type, "Gelu");
      EXPECT_EQ(n.outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
    }
  }
  {
    TinyModel t;
    t.Node("Relu", {"x"}, {"y"}, "relu");
    t.Node("Relu", {"y"}, {}, "dead");
    auto g = t.Load(dir.Path("dead.onnx"));
    EXPECT_NE(Message(g).find("node 'dead' (Relu): it has no output"), std::string::npos) << Message(g);
  }
  {
    TinyModel t;
    t.Node("Relu", {"x"}, {"y"}, "mine", "my.domain");
    auto g = t.Load(dir.Path("domain.onnx"));
    EXPECT_NE(Message(g).find("ONNX op 'my.domain.Relu' has no tunefleet equivalent"), std::string::npos) << Message(g);
  }
  {
    TinyModel t;
    auto* w = t.m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT16);
    w->add_dims(32);
    w->add_dims(16);
    t.Node("MatMul", {"x", "w"}, {"y"}, "mm");
    auto g = t.Load(dir.Path("k.onnx"));
    EXPECT_NE(Message(g).find("ONNX shape inference failed (fix the model)"), std::string::npos) << Message(g);
    EXPECT_EQ(Message(g).find("--dim"), std::string::npos) << "every dimension had its size: " << Message(g);
  }
  {
    TinyModel t;  // 10 * x * (2 + erf(x / 3)): not a GELU
    t.Scalar("c3", 3);
    t.Scalar("c2", 2);
    t.Scalar("c10", 10);
    t.Node("Div", {"x", "c3"}, {"d"}, "div");
    t.Node("Erf", {"d"}, {"e"}, "erf");
    t.Node("Add", {"e", "c2"}, {"a"}, "add");
    t.Node("Mul", {"x", "a"}, {"m"}, "mul");
    t.Node("Mul", {"m", "c10"}, {"y"}, "out");
    auto g = t.Load(dir.Path("notgelu.onnx"));
    EXPECT_NE(Message(g).find("node 'erf' (Erf): ONNX op 'Erf' has no tunefleet equivalent"), std::string::npos)
        << Message(g);
  }
  {
    TinyModel t;  // the GELU with 1/sqrt(2) first and 0.5 first: folded
    t.Scalar("r", 0.70710678f);
    t.Scalar("one", 1);
    t.Scalar("half", 0.5f);
    t.Node("Mul", {"r", "x"}, {"d"}, "scale");
    t.Node("Erf", {"d"}, {"e"}, "erf");
    t.Node("Add", {"one", "e"}, {"a"}, "add");
    t.Node("Mul", {"x", "half"}, {"h"}, "halve");
    t.Node("Mul", {"h", "a"}, {"y"}, "");
    auto g = t.Load(dir.Path("gelu2.onnx"));
    ASSERT_TRUE(g.ok()) << Message(g);
    ASSERT_EQ(g->nodes.size(), 1u);
    EXPECT_EQ(g->nodes[0].op_type, "Gelu");
    EXPECT_EQ(g->nodes[0].name, "Gelu_4") << "a nameless node is named by its index in the file";
    EXPECT_EQ(g->nodes[0].inputs, (std::vector<std::string>{"x"}));
  }
  {
    TinyModel t;
    auto* out = t.m.mutable_graph()->add_output();
    out->set_name("mean");
    auto* scale = t.m.mutable_graph()->add_initializer();
    scale->set_name("g");
    scale->set_data_type(onnx::TensorProto::FLOAT16);
    scale->add_dims(64);
    auto* bias = t.m.mutable_graph()->add_initializer();
    *bias = *scale;
    bias->set_name("b");
    t.Node("LayerNormalization", {"x", "g", "b"}, {"y", "mean"}, "ln");
    auto g = t.Load(dir.Path("mean.onnx"));
    EXPECT_NE(Message(g).find("node 'ln' (LayerNormalization): its output 1 ('mean') is read by another node or is a "
                              "graph output: only the first output is modelled"),
              std::string::npos)
        << Message(g);
  }
}

TEST(OnnxImport, AnOpWithNoEquivalentIsRefusedNamingTheNodeAndAFileThatIsNoModelToo) {
  testing::ScratchDir dir;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("odd");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT16);
  tt->mutable_shape()->add_dim()->set_dim_value(64);
  tt->mutable_shape()->add_dim()->set_dim_value(64);
  auto* n = g->add_node();
  n->set_op_type("Sqrt");
  n->set_name("root");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  const std::string path = dir.Path("odd.onnx");
  {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }
  auto r = GraphFromOnnxFile(path, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'root' (Sqrt): ONNX op 'Sqrt' has no tunefleet equivalent (supported: MatMul"),
            std::string::npos)
      << r.status().ToString();
  n->set_op_type("Relu");
  {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }
  auto relu = GraphFromOnnxFile(path, {});
  ASSERT_TRUE(relu.ok()) << relu.status().ToString();
  EXPECT_EQ(relu->nodes[0].outputs[0].desc.shape, (std::vector<int64_t>{64, 64}));
  {
    std::ofstream f(path);
    f << "{\"not\": \"onnx\"}";
  }
  auto text = GraphFromOnnxFile(path, {});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tunefleet
