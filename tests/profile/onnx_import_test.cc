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
  for (const char* bad : {"batch", "=3", "batch=", "batch=x", "batch=0", "batch=3x"}) {
    EXPECT_FALSE(ParseDimFlag(bad).ok()) << bad;
  }
  auto missing = GraphFromOnnxFile("/nonexistent.onnx", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
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
