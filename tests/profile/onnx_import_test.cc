// ONNX import (common/onnx_import.h): the BERT-base layer exported as PyTorch does
// (examples/bert_base_layer.onnx, scripts/make_bert_onnx.py) runs as the JSON graph of the
// same layer does; symbolic dimensions need sizes; an op with no equivalent names the node.
#include "tunefleet/common/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "tests/profile/test_util.h"
#include "tunefleet/common/graph_fusion.h"
#include "worker/profile/fusion_search.h"
#include "worker/profile/graph_run.h"

namespace tunefleet {
namespace {

using testing::FindNode;

const std::string kBert = std::string(TUNEFLEET_SOURCE_DIR) + "/examples/bert_base_layer.onnx";

OnnxImportOptions Dims(int64_t batch, int64_t seq) {
  OnnxImportOptions o;
  o.dims = {{"batch", batch}, {"seq", seq}};
  return o;
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
  const GraphNode* gelu = FindNode(*g, "ffn.gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op_type, "Gelu");
  EXPECT_EQ(gelu->inputs, (std::vector<std::string>{"ffn1"}));
  EXPECT_EQ(FindNode(*g, "ffn.gelu.erf"), nullptr);
  EXPECT_EQ(FindNode(*g, "attention.q.heads")->op_type, kReshapeOp) << "a head-split permute is a view";
  EXPECT_EQ(FindNode(*g, "attention.k.transpose")->op_type, "Transpose");
  EXPECT_EQ(FindNode(*g, "attention.scores")->op_type, "BatchMatMul");
  EXPECT_EQ(FindNode(*g, "attention.layernorm")->op_type, "LayerNorm");
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
  EXPECT_EQ(FindNode(*small, "attention.softmax")->outputs[0].desc.shape, (std::vector<int64_t>{2, 12, 64, 64}));
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

// A run's op keys by node name.
std::map<std::string, std::string> OpKeysByName(const profile::RunProfile& run) {
  std::map<std::string, std::string> keys;
  for (const auto& op : run.ops) keys[op.name] = op.op_key;
  return keys;
}

void AddScalar(onnx::GraphProto& g, const std::string& name, float value) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
}

onnx::NodeProto* AddNode(std::vector<onnx::NodeProto>& out, const std::string& op, std::vector<std::string> in,
                         const std::string& output, const std::string& name) {
  onnx::NodeProto& n = out.emplace_back();
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : in) n.add_input(i);
  n.add_output(output);
  return &n;
}

// Sets an INT attribute of `n` (an axis, Cast's `to`); returns n.
onnx::NodeProto* WithInt(onnx::NodeProto* n, const std::string& name, int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
  return n;
}

// Sets an INTS attribute of `n` (a Transpose's perm); returns n.
onnx::NodeProto* WithInts(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return n;
}

// Sets a STRING attribute of `n` (an Einsum's equation); returns n.
onnx::NodeProto* WithString(onnx::NodeProto* n, const std::string& name, const std::string& value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
  return n;
}

// A ConstantOfShape's `value`: one element of `type` (INT64 or FLOAT).
onnx::NodeProto* WithFill(onnx::NodeProto* n, int type, double value) {
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(type);
  a->mutable_t()->add_dims(1);
  if (type == onnx::TensorProto::FLOAT) {
    a->mutable_t()->add_float_data(static_cast<float>(value));
  } else {
    a->mutable_t()->add_int64_data(static_cast<int64_t>(value));
  }
  return n;
}

// How exporters write LayerNorm before opset 17 (PyTorch's native_layer_norm): the nodes of
// LayerNorm(x, gamma, beta) over `axis` into `out`, appended to `out_nodes`. `form` picks a
// variant: 0 PyTorch's (Pow 2, axes as an attribute), 1 the centring Sub written twice and
// the square as Mul, 2 axes as a constant input (opset 18), 3 PyTorch's fp16 export (the
// difference cast to float32, the quotient back), 4 axes as a Constant node's value_ints
// (opset 18).
void WriteOutLayerNorm(onnx::GraphProto& g, std::vector<onnx::NodeProto>& out_nodes, const std::string& x,
                       const std::string& gamma, const std::string& beta, const std::string& out,
                       const std::string& p, int form, int64_t axis = -1, float eps = 1e-12f) {
  auto mean = [&](const std::string& in, const std::string& o, const std::string& name) {
    if (form == 4) {
      auto* c = AddNode(out_nodes, "Constant", {}, p + "axes_" + name, p + "axes_" + name)->add_attribute();
      c->set_name("value_ints");
      c->set_type(onnx::AttributeProto::INTS);
      c->add_ints(axis);
      AddNode(out_nodes, "ReduceMean", {in, p + "axes_" + name}, o, p + name);
      return;
    }
    if (form == 2) {
      auto* t = g.add_initializer();
      t->set_name(p + "axes_" + name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(1);
      t->add_int64_data(axis);
      AddNode(out_nodes, "ReduceMean", {in, p + "axes_" + name}, o, p + name);
      return;
    }
    auto* a = AddNode(out_nodes, "ReduceMean", {in}, o, p + name)->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(axis);
  };
  AddScalar(g, p + "two", 2);
  AddScalar(g, p + "eps", eps);
  mean(x, p + "m", "mean");
  AddNode(out_nodes, "Sub", {x, p + "m"}, form == 3 ? p + "d16" : p + "d", p + "sub");
  if (form == 3) {
    WithInt(AddNode(out_nodes, "Cast", {p + "d16"}, p + "d", p + "widen"), "to", onnx::TensorProto::FLOAT);
  }
  if (form == 1) {
    AddNode(out_nodes, "Mul", {p + "d", p + "d"}, p + "sq", p + "square");
  } else {
    AddNode(out_nodes, "Pow", {p + "d", p + "two"}, p + "sq", p + "pow");
  }
  mean(p + "sq", p + "v", "var");
  AddNode(out_nodes, "Add", {p + "v", p + "eps"}, p + "ve", p + "add_eps");
  AddNode(out_nodes, "Sqrt", {p + "ve"}, p + "s", p + "sqrt");
  std::string numerator = p + "d";
  if (form == 1) {
    AddNode(out_nodes, "Sub", {x, p + "m"}, p + "d2", p + "sub2");
    numerator = p + "d2";
  }
  AddNode(out_nodes, "Div", {numerator, p + "s"}, form == 3 ? p + "n32" : p + "n", p + "div");
  if (form == 3) {
    WithInt(AddNode(out_nodes, "Cast", {p + "n32"}, p + "n", p + "narrow"), "to", onnx::TensorProto::FLOAT16);
  }
  AddNode(out_nodes, "Mul", {p + "n", gamma}, p + "ng", p + "mul");
  AddNode(out_nodes, "Add", {beta, p + "ng"}, out, p + "add");
}

// GELU's tanh approximation as PyTorch exports approximate='tanh' before opset 20 (x^3 as
// two Muls), or, `pow` true, as GPT-2's gelu_new is traced (Pow(x, 3)).
void WriteOutTanhGelu(onnx::GraphProto& g, std::vector<onnx::NodeProto>& out_nodes, const std::string& x,
                      const std::string& out, const std::string& p, bool pow, float kappa = 0.044715f) {
  AddScalar(g, p + "beta", 0.7978845608f);
  AddScalar(g, p + "kappa", kappa);
  AddScalar(g, p + "one", 1);
  AddScalar(g, p + "half", 0.5f);
  AddScalar(g, p + "three", 3);
  if (pow) {
    AddNode(out_nodes, "Pow", {x, p + "three"}, p + "cube", p + "pow");
  } else {
    AddNode(out_nodes, "Mul", {x, x}, p + "sq", p + "square");
    AddNode(out_nodes, "Mul", {x, p + "sq"}, p + "cube", p + "cube");
  }
  AddNode(out_nodes, "Mul", {p + "kappa", p + "cube"}, p + "kc", p + "mul_kappa");
  AddNode(out_nodes, "Add", {x, p + "kc"}, p + "inner", p + "add_inner");
  AddNode(out_nodes, "Mul", {p + "beta", p + "inner"}, p + "scaled", p + "mul_beta");
  AddNode(out_nodes, "Tanh", {p + "scaled"}, p + "t", p + "tanh");
  AddNode(out_nodes, "Add", {p + "one", p + "t"}, p + "a", p + "add_one");
  if (pow) {
    AddNode(out_nodes, "Mul", {p + "half", x}, p + "h", p + "halve");
    AddNode(out_nodes, "Mul", {p + "h", p + "a"}, out, p + "out");
  } else {
    AddNode(out_nodes, "Mul", {x, p + "a"}, p + "xa", p + "mul_x");
    AddNode(out_nodes, "Mul", {p + "half", p + "xa"}, out, p + "out");
  }
}

// Older exporters write LayerNorm and GELU as primitive ops; CANN fuses each chain back
// into one kernel, and so does the import: the BERT layer with both LayerNorms and the
// GELU written out (opset 14) runs the same 22 kernels in the same device time.
TEST(OnnxImport, LayerNormAndGeluWrittenOutFoldIntoTheOneKernelEach) {
  testing::ScratchDir dir;
  onnx::ModelProto m;
  {
    std::ifstream in(kBert, std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  m.mutable_opset_import(0)->set_version(14);
  onnx::GraphProto& g = *m.mutable_graph();
  std::vector<onnx::NodeProto> nodes;
  int layer_norms = 0;
  for (const auto& n : g.node()) {
    if (n.op_type() == "LayerNormalization") {
      WriteOutLayerNorm(g, nodes, n.input(0), n.input(1), n.input(2), n.output(0), n.name() + ".", layer_norms++);
    } else if (n.op_type() == "Erf") {
      // The erf GELU's nodes are replaced by the tanh form over the same input, written as
      // the last node of the erf form wrote its output.
      const std::string x = "ffn1";
      WriteOutTanhGelu(g, nodes, x, "gelu_out", "ffn.gelu.", /*pow=*/false);
    } else if (n.name().rfind("ffn.gelu", 0) == 0) {
      continue;
    } else {
      nodes.push_back(n);
    }
  }
  ASSERT_EQ(layer_norms, 2);
  // The erf form's last node wrote what the FFN's second MatMul reads.
  std::string gelu_output;
  for (const auto& n : g.node()) {
    if (n.name() == "ffn.gelu") gelu_output = n.output(0);
  }
  ASSERT_FALSE(gelu_output.empty());
  for (auto& n : nodes) {
    for (auto& o : *n.mutable_output()) {
      if (o == "gelu_out") o = gelu_output;
    }
  }
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
  const std::string path = dir.Path("bert14.onnx");
  {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }
  auto written = GraphFromOnnxFile(path, Dims(32, 128));
  ASSERT_TRUE(written.ok()) << Message(written);
  auto native = GraphFromOnnxFile(kBert, Dims(32, 128));
  ASSERT_TRUE(native.ok());
  ASSERT_EQ(written->nodes.size(), native->nodes.size());
  const GraphNode* ln = FindNode(*written, "attention.layernorm.add");
  ASSERT_NE(ln, nullptr) << "a fold is named as its last node";
  EXPECT_EQ(ln->op_type, "LayerNorm");
  EXPECT_EQ(ln->inputs, FindNode(*native, "attention.layernorm")->inputs) << "x, gamma, beta";
  EXPECT_EQ(FindNode(*written, "ffn.gelu.out")->op_type, "Gelu");
  EXPECT_EQ(FindNode(*written, "ffn.gelu.out")->inputs, (std::vector<std::string>{"ffn1"}));
  EXPECT_EQ(written->weights.size(), native->weights.size()) << "the chains' constants are not weights";
  auto a = profile::RunGraph(*written, testing::Soc910B2());
  auto b = profile::RunGraph(*native, testing::Soc910B2());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->ops.size(), b->ops.size());
  EXPECT_NEAR(a->compute_end_us - a->compute_start_us, b->compute_end_us - b->compute_start_us, 1e-6 * b->compute_end_us);
}

using WriteNodes = std::function<void(onnx::GraphProto&, std::vector<onnx::NodeProto>&)>;

// Imports a model of x [4, 16, 64] with weights gamma and beta [64] of x's dtype and output
// y (and "ln.m", `mean_out`), its nodes written by `write`, saved as `path`.
Result<Graph> LoadChainModel(const std::string& path, int opset, const WriteNodes& write, bool mean_out = false,
                             onnx::TensorProto::DataType type = onnx::TensorProto::FLOAT16,
                             const OnnxImportOptions& options = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto& g = *m.mutable_graph();
  auto* in = g.add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (int64_t d : {4, 16, 64}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  for (const char* w : {"gamma", "beta"}) {
    auto* t = g.add_initializer();
    t->set_name(w);
    t->set_data_type(type);
    t->add_dims(64);
  }
  g.add_output()->set_name("y");
  if (mean_out) g.add_output()->set_name("ln.m");
  std::vector<onnx::NodeProto> nodes;
  write(g, nodes);
  for (auto& n : nodes) *g.add_node() = std::move(n);
  std::ofstream f(path, std::ios::binary);
  EXPECT_TRUE(m.SerializeToOstream(&f));
  f.close();
  return GraphFromOnnxFile(path, options);
}

// A chain folds only as a whole, with its constants' values and nothing else reading
// inside it; otherwise its primitive ops are refused by name.
TEST(OnnxImport, AChainThatIsNotQuiteALayerNormOrGeluIsLeftAsItIs) {
  testing::ScratchDir dir;
  auto load = [&](int opset, const WriteNodes& write, const std::string& file, bool mean_out = false) {
    return LoadChainModel(dir.Path(file), opset, write, mean_out);
  };
  auto ln = [](int form, int64_t axis, float eps) {
    return [=](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      WriteOutLayerNorm(g, n, "x", "gamma", "beta", "y", "ln.", form, axis, eps);
    };
  };
  {
    auto r = load(18, ln(2, 2, 1e-5f), "axes_input.onnx");  // axes as an input, the last axis by its index
    ASSERT_TRUE(r.ok()) << Message(r);
    ASSERT_EQ(r->nodes.size(), 1u);
    EXPECT_EQ(r->nodes[0].op_type, "LayerNorm");
    EXPECT_EQ(r->nodes[0].name, "ln.add");
    EXPECT_EQ(r->nodes[0].outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
  }
  {
    // Its means are ReduceMean kernels; its Pow has none, and the error says how it would fold.
    auto r = load(14, ln(0, -1, 0.5f), "big_eps.onnx");
    EXPECT_NE(Message(r).find("node 'ln.pow' (Pow): ONNX op 'Pow' has no tunefleet equivalent"), std::string::npos)
        << Message(r);
    EXPECT_NE(Message(r).find("a LayerNorm, RMSNorm or GELU written out folds into one op only in the forms"),
              std::string::npos)
        << Message(r);
  }
  {
    auto r = load(14, ln(0, -1, 1e-5f), "mean_out.onnx", /*mean_out=*/true);
    EXPECT_NE(Message(r).find("node 'ln.pow' (Pow)"), std::string::npos) << "the mean is read outside: " << Message(r);
  }
  {
    auto r = load(14, ln(1, 1, 1e-5f), "axis1.onnx");
    EXPECT_NE(Message(r).find("node 'ln.add' (LayerNormalization written out): LayerNormalization runs over the last "
                              "axis only"),
              std::string::npos)
        << Message(r);
  }
  {
    auto r = load(14, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      WriteOutTanhGelu(g, n, "x", "y", "gelu.", /*pow=*/true);
    }, "gelu_new.onnx");
    ASSERT_TRUE(r.ok()) << Message(r);
    ASSERT_EQ(r->nodes.size(), 1u);
    EXPECT_EQ(r->nodes[0].op_type, "Gelu");
    EXPECT_EQ(r->nodes[0].name, "gelu.out");
  }
  {
    auto r = load(14, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      WriteOutTanhGelu(g, n, "x", "y", "gelu.", /*pow=*/true, /*kappa=*/0.05f);
    }, "not_gelu.onnx");
    EXPECT_NE(Message(r).find("node 'gelu.pow' (Pow): ONNX op 'Pow' has no tunefleet equivalent"), std::string::npos)
        << Message(r);
  }
}

// RMSNorm as LLaMA's and T5's modules export it (opset 14, axes as an attribute):
// form 0 x / sqrt(mean(x^2) + eps) * gamma with Pow and Div; form 1 HF LLaMA's fp16
// export, through float32: Cast, Pow, Sqrt, Reciprocal, Mul by x, Cast back, gamma *;
// form 2 Mul(x, x), Div(1, sqrt), then Mul by x and by gamma the other way round;
// form 3 HF LLaMA's float32 export: the x.to(float32) is a no-op Cast the residual Add
// reads too, and the cast back is one as well; form 4 T5's: x cast for the variance
// only, the uncast x multiplied, no cast back. `gamma` may name a graph input to make it
// not a weight; `extra_reader` adds a node outside the chain reading its squared tensor.
void WriteOutRmsNorm(onnx::GraphProto& g, std::vector<onnx::NodeProto>& n, int form, float eps = 1e-6f,
                     const std::string& gamma = "gamma", bool extra_reader = false) {
  const std::string p = "rms.";
  auto cast = [&](const std::string& in, const std::string& out, const std::string& name, int to) {
    WithInt(AddNode(n, "Cast", {in}, out, p + name), "to", to);
  };
  AddScalar(g, p + "two", 2);
  AddScalar(g, p + "eps", eps);
  AddScalar(g, p + "one", 1);
  std::string x = "x";
  if (form == 1 || form == 3 || form == 4) {
    cast("x", p + "x32", "widen", onnx::TensorProto::FLOAT);
    x = p + "x32";
  }
  if (form == 2) {
    AddNode(n, "Mul", {x, x}, p + "sq", p + "square");
  } else {
    AddNode(n, "Pow", {x, p + "two"}, p + "sq", p + "pow");
  }
  if (extra_reader) AddNode(n, "Relu", {p + "sq"}, p + "outside", p + "outside");
  auto* axes = AddNode(n, "ReduceMean", {p + "sq"}, p + "v", p + "mean")->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(-1);
  AddNode(n, "Add", {form == 2 ? p + "eps" : p + "v", form == 2 ? p + "v" : p + "eps"}, p + "ve", p + "add_eps");
  AddNode(n, "Sqrt", {p + "ve"}, p + "s", p + "sqrt");
  if (form == 0) {
    AddNode(n, "Div", {x, p + "s"}, p + "n", p + "div");
    AddNode(n, "Mul", {p + "n", gamma}, "y", p + "scale");
  } else if (form == 1 || form == 3) {
    AddNode(n, "Reciprocal", {p + "s"}, p + "r", p + "rsqrt");
    AddNode(n, "Mul", {x, p + "r"}, p + "n32", p + "normalize");
    cast(p + "n32", p + "n", "narrow", form == 1 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT);
    AddNode(n, "Mul", {gamma, p + "n"}, form == 3 ? p + "out" : "y", p + "scale");
    if (form == 3) AddNode(n, "Add", {x, p + "out"}, "y", "residual");
  } else if (form == 4) {
    AddNode(n, "Reciprocal", {p + "s"}, p + "r", p + "rsqrt");
    AddNode(n, "Mul", {"x", p + "r"}, p + "n", p + "normalize");
    AddNode(n, "Mul", {gamma, p + "n"}, "y", p + "scale");
  } else {
    AddNode(n, "Div", {p + "one", p + "s"}, p + "r", p + "rsqrt");
    AddNode(n, "Mul", {p + "r", x}, p + "n", p + "normalize");
    AddNode(n, "Mul", {gamma, p + "n"}, "y", p + "scale");
  }
}

// LLaMA's RMSNorm written out folds into one RmsNorm kernel (x, gamma) in each form it is
// exported in, and takes the time of the RmsNorm op a JSON graph names; a chain that is
// not quite one (gamma not a weight, eps not an epsilon, a tensor of it read outside) is
// left as it is, its primitives refused by name.
TEST(OnnxImport, AnRmsNormWrittenOutFoldsIntoOneKernel) {
  testing::ScratchDir dir;
  for (int form = 0; form < 5; ++form) {
    // Forms 3 and 4 are float32 exports (run as float16).
    const auto type = form >= 3 ? onnx::TensorProto::FLOAT : onnx::TensorProto::FLOAT16;
    auto r = LoadChainModel(
        dir.Path("rms" + std::to_string(form) + ".onnx"), 14,
        [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) { WriteOutRmsNorm(g, n, form); }, false, type);
    ASSERT_TRUE(r.ok()) << "form " << form << ": " << Message(r);
    const GraphNode* rms = FindNode(*r, "rms.scale");
    ASSERT_NE(rms, nullptr) << "form " << form << ": a fold is named as its last node";
    EXPECT_EQ(rms->op_type, "RmsNorm") << "form " << form;
    // Form 3's no-op Cast stays outside (the residual reads it) as the view it is.
    EXPECT_EQ(rms->inputs, (std::vector<std::string>{form == 3 ? "rms.x32" : "x", "gamma"})) << "form " << form;
    EXPECT_EQ(rms->outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
    EXPECT_EQ(rms->outputs[0].desc.dtype, "float16");
    auto run = profile::RunGraph(*r, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_EQ(run->ops.size(), form == 3 ? 2u : 1u) << "form " << form << ": the RmsNorm (and the residual Add)";
    // As the knowledge base keys it: rows x the normalised axis (its input_shapes keep the axes).
    EXPECT_EQ(run->ops[0].op_key, "RmsNorm[64x64,64]@Ascend910B2");
    EXPECT_EQ(run->ops[0].input_shapes, "4,16,64;64");
  }
  // torch writes equal initializers once, the others as Identity of it.
  {
    auto r = LoadChainModel(dir.Path("dedup.onnx"), 14, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      AddNode(n, "Identity", {"gamma"}, "gamma_again", "dedup");
      WriteOutRmsNorm(g, n, 0, 1e-6f, "gamma_again");
    });
    ASSERT_TRUE(r.ok()) << Message(r);
    const GraphNode* rms = FindNode(*r, "rms.scale");
    ASSERT_NE(rms, nullptr);
    EXPECT_EQ(rms->op_type, "RmsNorm");
    EXPECT_EQ(rms->inputs, (std::vector<std::string>{"x", "gamma_again"}));
  }
  // Not quite an RMSNorm.
  auto refused = [&](const std::string& file, const WriteNodes& write, const std::string& want) {
    auto r = LoadChainModel(dir.Path(file), 14, write);
    EXPECT_NE(Message(r).find(want), std::string::npos) << file << ": " << Message(r);
  };
  refused("gamma_input.onnx", [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    auto* in = g.add_input();
    in->set_name("not_a_weight");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT16);
    tt->mutable_shape()->add_dim()->set_dim_value(64);
    WriteOutRmsNorm(g, n, 0, 1e-6f, "not_a_weight");
  }, "node 'rms.pow' (Pow): ONNX op 'Pow' has no tunefleet equivalent");
  refused("big_eps.onnx", [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) { WriteOutRmsNorm(g, n, 1, 0.5f); },
          "node 'rms.pow' (Pow)");
  refused("read_outside.onnx", [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    WriteOutRmsNorm(g, n, 2, 1e-6f, "gamma", /*extra_reader=*/true);
  }, "node 'rms.sqrt' (Sqrt)");
}

// A one-element int64 list constant (a Slice's starts, ends, axes or steps).
void AddInts(onnx::GraphProto& g, const std::string& name, int64_t value) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(1);
  t->add_int64_data(value);
}

// An int64 list constant of one axis, or a scalar.
void AddInts(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& values, bool scalar = false) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// A float16 weight of `dims` whose data is not there (tunefleet reads its shape only).
void AddWeight(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : dims) t->add_dims(d);
}

// BatchNormalization's scale, bias, mean and var of `channels`, named <prefix>.scale etc.
void AddBatchNormParams(onnx::GraphProto& g, const std::string& prefix, int64_t channels) {
  for (const char* p : {".scale", ".bias", ".mean", ".var"}) AddWeight(g, prefix + p, {channels});
}

void AddInput(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& shape,
              int type = onnx::TensorProto::FLOAT16) {
  auto* in = g.add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// RoPE on x [4, 16, 64] into y as HF's apply_rotary_pos_emb exports it (torch 1.13, opset
// 17): x * cos + cat(-x[..., h:], x[..., :h]) * sin. What varies:
struct RopeForm {
  bool swapped = false;        // the Muls' and the Add's operands the other way round, steps left out
  int64_t axis = 2;            // the slices' axis (PyTorch writes it positive), the Concat's is -1
  int64_t half = 32;           // where the halves split
  int64_t step = 1;
  bool neg_first = true;       // cat(-x2, x1); false: cat(x1, -x2), the inverse rotation's
  std::vector<int64_t> cos_shape = {16, 64};
  bool neg_read_outside = false;
  std::string x = "x", out = "y";  // what it rotates, and into
};
void WriteOutRope(onnx::GraphProto& g, std::vector<onnx::NodeProto>& n, const RopeForm& f) {
  AddInput(g, "cos", f.cos_shape);
  AddInput(g, "sin", f.cos_shape);
  AddInts(g, "zero", 0);
  AddInts(g, "half", f.half);
  AddInts(g, "end", std::numeric_limits<int64_t>::max());
  AddInts(g, "axis", f.axis);
  AddInts(g, "step", f.step);
  auto slice = [&](const char* from, const char* to, const char* out, const char* name) {
    std::vector<std::string> in = {f.x, from, to, "axis"};
    if (!f.swapped || f.step != 1) in.push_back("step");
    AddNode(n, "Slice", in, out, name);
  };
  AddNode(n, "Mul", f.swapped ? std::vector<std::string>{"cos", f.x} : std::vector<std::string>{f.x, "cos"}, "xc",
          "rope.cos");
  slice("zero", "half", "x1", "rope.lower");
  slice("half", "end", "x2", "rope.upper");
  AddNode(n, "Neg", {"x2"}, "nx2", "rope.neg");
  const std::vector<std::string> halves =
      f.neg_first ? std::vector<std::string>{"nx2", "x1"} : std::vector<std::string>{"x1", "nx2"};
  auto* cat = AddNode(n, "Concat", halves, "rot", "rope.cat");
  WithInt(cat, "axis", f.axis == 2 ? -1 : f.axis);
  AddNode(n, "Mul", f.swapped ? std::vector<std::string>{"sin", "rot"} : std::vector<std::string>{"rot", "sin"}, "rs",
          "rope.sin");
  AddNode(n, "Add", f.swapped ? std::vector<std::string>{"rs", "xc"} : std::vector<std::string>{"xc", "rs"}, f.out,
          "rope.add");
  if (f.neg_read_outside) g.add_output()->set_name("nx2");
}

// RoPE written out folds into one Rope kernel (x, cos, sin), in either operand order and
// with cos broadcast as [s, d] or [b, 1, s, d]; a rotation it does not model is refused
// naming what to change, and a chain that is not quite RoPE is left as its ops.
TEST(OnnxImport, RopeWrittenOutFoldsIntoOneKernel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const RopeForm& f) {
    return LoadChainModel(dir.Path("rope" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) { WriteOutRope(g, n, f); });
  };
  std::string key;
  for (const RopeForm& f : {RopeForm{}, RopeForm{.swapped = true, .cos_shape = {1, 16, 64}}}) {
    auto r = load(f);
    ASSERT_TRUE(r.ok()) << Message(r);
    ASSERT_EQ(r->nodes.size(), 1u);
    EXPECT_EQ(r->nodes[0].op_type, "Rope");
    EXPECT_EQ(r->nodes[0].name, "rope.add") << "a fold is named as its last node";
    EXPECT_EQ(r->nodes[0].inputs, (std::vector<std::string>{"x", "cos", "sin"}));
    EXPECT_EQ(r->nodes[0].outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
    EXPECT_TRUE(r->weights.empty()) << "the slices' bounds are not weights";
    auto run = profile::RunGraph(*r, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_EQ(run->ops.size(), 1u);
    if (key.empty()) key = run->ops[0].op_key;
    EXPECT_EQ(run->ops[0].op_key, key) << "cos as [s, d] or [1, s, d]: one kernel, one knowledge-base key";
  }
  EXPECT_EQ(key, "Rope[4x16x64,16x64,16x64]@Ascend910B2");
  // Folded, but not a rotation the kernel does: the error says which and what is.
  EXPECT_NE(Message(load({.half = 16})).find("node 'rope.add' (Rope written out): RoPE rotates halves of 16 of a head "
                                             "dimension of 64: only a rotation of the whole head dimension"),
            std::string::npos)
      << Message(load({.half = 16}));
  EXPECT_NE(Message(load({.axis = 1, .half = 8})).find("RoPE's rotate_half over axis 1 of a rank-3 x: only over the "
                                                       "last axis"),
            std::string::npos)
      << Message(load({.axis = 1, .half = 8}));
  // Not RoPE: left as its ops; its slices are views, and its Neg is refused by name.
  for (const RopeForm& f : {RopeForm{.step = 2}, RopeForm{.neg_first = false}, RopeForm{.neg_read_outside = true}}) {
    const std::string m = Message(load(f));
    EXPECT_NE(m.find("node 'rope.neg' (Neg): ONNX op 'Neg' has no tunefleet equivalent: a negation"), std::string::npos)
        << m;
  }
}

// Concat is a copy kernel: GPT-NeoX's partial rotary embedding (rotary_pct 0.5 here) rotates
// x[..., :32] whole (one Rope of a window) and concatenates x[..., 32:]; a KV cache joins
// the past keys and the new ones on the sequence axis.
TEST(OnnxImport, ConcatCopiesAPartialRotaryEmbeddingsPartsAndAKvCache) {
  testing::ScratchDir dir;
  auto partial = LoadChainModel(dir.Path("partial_rope.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInts(g, "r0", 0);
    AddInts(g, "r", 32);
    AddInts(g, "r_end", 64);
    AddInts(g, "last", -1);
    AddNode(n, "Slice", {"x", "r0", "r", "last"}, "x_rot", "rot.slice");
    AddNode(n, "Slice", {"x", "r", "r_end", "last"}, "x_pass", "pass.slice");
    WriteOutRope(g, n, {.half = 16, .cos_shape = {16, 32}, .x = "x_rot", .out = "x_rotated"});
    auto* cat = AddNode(n, "Concat", {"x_rotated", "x_pass"}, "y", "rope.concat");
    WithInt(cat, "axis", -1);
  });
  ASSERT_TRUE(partial.ok()) << Message(partial);
  std::vector<std::string> kernels;
  for (const auto& node : partial->nodes) {
    if (!node.IsView()) kernels.push_back(node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"Rope", "Concat"}));
  EXPECT_EQ(FindNode(*partial, "rope.concat")->attrs.at("axis"), "2") << "counted from the front";
  auto run = profile::RunGraph(*partial, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ops.size(), 2u);
  EXPECT_EQ(run->ops[0].op_key, "Rope[4x16x32,16x32,16x32]@Ascend910B2") << "the rotated window, whole";
  EXPECT_EQ(run->ops[1].op_key, "Concat[4x16x32,4x16x32]{axis=2}@Ascend910B2");

  auto cache = LoadChainModel(dir.Path("kv_cache.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "past", {4, 112, 64});
    auto* cat = AddNode(n, "Concat", {"past", "x"}, "k", "cache.concat");  // [4, 128, 64]
    WithInt(cat, "axis", 1);
    AddNode(n, "Relu", {"k"}, "y", "act");
  });
  ASSERT_TRUE(cache.ok()) << Message(cache);
  EXPECT_EQ(cache->resident, (std::vector<std::string>{"past"})) << "a past* input is a KV cache: resident";
  const GraphNode* joined = FindNode(*cache, "cache.concat");
  ASSERT_NE(joined, nullptr);
  EXPECT_EQ(joined->op_type, "Concat");
  EXPECT_EQ(joined->outputs[0].desc.shape, (std::vector<int64_t>{4, 128, 64}));
  auto cache_run = profile::RunGraph(*cache, testing::Soc910B2());
  ASSERT_TRUE(cache_run.ok()) << cache_run.status().ToString();
  EXPECT_GE(cache_run->ops[0].estimate.hbm_bytes, 2.0 * 2 * 4 * 128 * 64) << "reads and writes every element";
}

// A ResNet's stem and head as torch 1.13 exports them in eval mode (BatchNorm folded into
// the Conv): Conv, Relu, MaxPool 3x3/2, and the head's GlobalAveragePool and Flatten. The
// pooling is a MaxPool kernel; the average pool a ReduceMean over H*W between two views.
TEST(OnnxImport, AResNetsMaxPoolAndGlobalAveragePoolImport) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int64_t ceil_mode, int64_t rank) {
    return LoadChainModel(dir.Path("resnet" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "img", rank == 4 ? std::vector<int64_t>{2, 8, 16, 16} : std::vector<int64_t>{2, 8, 16});
                            AddWeight(g, "w", {16, 8, 3, 3});
                            if (rank == 4) {
                              WithInts(WithInts(AddNode(n, "Conv", {"img", "w"}, "c", "stem.conv"), "pads", {1, 0, 1, 2}),
                                       "kernel_shape", {3, 3});
                              AddNode(n, "Relu", {"c"}, "r", "stem.relu");
                            } else {
                              AddNode(n, "Relu", {"img"}, "r", "stem.relu");
                            }
                            auto* pool = AddNode(n, "MaxPool", {"r"}, "p", "stem.maxpool");
                            if (rank == 4) {
                              WithInts(WithInts(WithInts(pool, "kernel_shape", {3, 3}), "strides", {2, 2}), "pads", {1, 0, 1, 0});
                            } else {  // a 1-D pooling
                              WithInts(WithInts(WithInts(pool, "kernel_shape", {3}), "strides", {2}), "pads", {1, 1});
                            }
                            if (ceil_mode) WithInt(pool, "ceil_mode", 1);
                            AddNode(n, "GlobalAveragePool", {"p"}, "avg", "head.avgpool");
                            WithInt(AddNode(n, "Flatten", {"avg"}, "y", "head.flatten"), "axis", 1);
                          });
  };
  auto g = load(0, 4);
  ASSERT_TRUE(g.ok()) << Message(g);
  std::vector<std::string> kernels;
  for (const auto& node : g->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"stem.conv Conv2D", "stem.relu Relu", "stem.maxpool MaxPool",
                                                "head.avgpool ReduceMean"}));
  const GraphNode* pool = FindNode(*g, "stem.maxpool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 8, 7})) << "no pads on W: (16 - 3) / 2 + 1";
  EXPECT_EQ(FindNode(*g, "head.avgpool")->outputs[0].desc.shape, (std::vector<int64_t>{32, 1})) << "a row per (n, c)";
  EXPECT_EQ(FindNode(*g, "head.avgpool/view")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 1, 1}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  // ONNX's pads [top, left, bottom, right] are written [top, bottom, left, right].
  EXPECT_NE(keys["stem.conv"].find("pads=1,1,0,2"), std::string::npos) << keys["stem.conv"];
  EXPECT_EQ(keys["stem.maxpool"], "MaxPool[2x16x16x16]{kernel_shape=3,3,pads=1,1,0,0,strides=2,2}@Ascend910B2");
  EXPECT_EQ(keys["head.avgpool"], "ReduceMean[32x56]@Ascend910B2") << "2 x 16 channels, each a mean of 8 x 7";
  // Rounded up (ceil_mode 1), 9 x 8 windows: the last row and column of them read one more
  // row and column of padding at the end.
  auto ceil = load(1, 4);
  ASSERT_TRUE(ceil.ok()) << Message(ceil);
  EXPECT_EQ(FindNode(*ceil, "stem.maxpool")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 9, 8}));
  auto ceil_run = profile::RunGraph(*ceil, testing::Soc910B2());
  ASSERT_TRUE(ceil_run.ok()) << ceil_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*ceil_run)["stem.maxpool"],
            "MaxPool[2x16x16x16]{kernel_shape=3,3,pads=1,2,0,1,strides=2,2}@Ascend910B2");
  const std::string one_d = Message(load(0, 3));
  EXPECT_NE(one_d.find("only 2-D max pooling (NCHW input) is supported"), std::string::npos) << one_d;
}

// ViT's classifier reads the class token, x[:, 0], which torch exports as a Gather of one
// constant index: a window view of the token's row (and a view dropping the axis), so the
// Gemm after it reads [4, 64] of x [4, 16, 64] and nothing is copied. A negative index
// counts from the end; an index of shape [1] keeps the axis; more than one index, or one
// outside the axis, is refused.
TEST(OnnxImport, AGatherOfOneConstantIndexIsAWindowView) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::vector<int64_t>& index, bool scalar) {
    return LoadChainModel(dir.Path("pick" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInts(g, "index", index, scalar);
                            WithInt(AddNode(n, "Gather", {"x", "index"}, "token", "pick"), "axis", 1);
                            AddNode(n, "Relu", {"token"}, "y", "act");
                          });
  };
  auto first = load({0}, true);
  ASSERT_TRUE(first.ok()) << Message(first);
  const GraphNode* pick = FindNode(*first, "pick");
  ASSERT_NE(pick, nullptr);
  EXPECT_TRUE(pick->IsView());
  EXPECT_EQ(pick->attrs.at(kSliceStartsAttr), "0,0,0");
  EXPECT_EQ(pick->outputs[0].desc.shape, (std::vector<int64_t>{4, 1, 64}));
  EXPECT_EQ(FindNode(*first, "act")->inputs, (std::vector<std::string>{"token"}));
  auto run = profile::RunGraph(*first, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ops.size(), 1u) << "the Gather copies nothing";
  EXPECT_EQ(run->ops[0].op_key, "Relu[4x64]@Ascend910B2");
  auto last = load({-1}, true);
  ASSERT_TRUE(last.ok()) << Message(last);
  EXPECT_EQ(FindNode(*last, "pick")->attrs.at(kSliceStartsAttr), "0,15,0");
  auto kept = load({3}, false);
  ASSERT_TRUE(kept.ok()) << Message(kept);
  EXPECT_EQ(FindNode(*kept, "pick")->outputs[0].desc.shape, (std::vector<int64_t>{4, 1, 64})) << "index [1]: no axis dropped";
  EXPECT_EQ(FindNode(*kept, "pick/view"), nullptr);
  const std::string two = Message(load({0, 1}, false));
  EXPECT_NE(two.find("node 'pick' (Gather): a Gather is a kernel only as an embedding lookup, the rows (axis 0) of "
                     "a 2-D table picked by int32 or int64 indices (torch's nn.Embedding); this one gathers axis 1 of "
                     "a 3-D input"),
            std::string::npos)
      << two;
  const std::string outside = Message(load({16}, true));
  EXPECT_NE(outside.find("index 16 is outside axis 1 of its input, of size 16"), std::string::npos) << outside;
}

// A whole model's export starts at its token ids: torch's nn.Embedding is a Gather of the
// table's rows by int64 ids, here word embeddings [1000, 64] by ids [4, 16], added to x.
// It runs as a Gather kernel, the ids are an int64 input copied to the device at 8 bytes
// each, and one key serves any layout of the ids. Integer arithmetic other than index
// arithmetic (a Div of the ids) is refused naming the node.
TEST(OnnxImport, AnEmbeddingLookupByTokenIdsIsAGatherKernel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int ids_type, bool arithmetic_on_ids) {
    return LoadChainModel(dir.Path("embed" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "ids", {4, 16}, ids_type);
                            AddWeight(g, "wte", {1000, 64});
                            std::string ids = "ids";
                            if (arithmetic_on_ids) {  // no kernel divides indices
                              AddNode(n, "Div", {"ids", "ids"}, "pos", "position.ids");
                              ids = "pos";
                            }
                            AddNode(n, "Gather", {"wte", ids}, "tok", "embed");
                            AddNode(n, "Add", {"tok", "x"}, "y", "sum");
                          });
  };
  auto g = load(onnx::TensorProto::INT64, false);
  ASSERT_TRUE(g.ok()) << Message(g);
  const GraphNode* embed = FindNode(*g, "embed");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->op_type, "Gather");
  EXPECT_EQ(embed->inputs, (std::vector<std::string>{"wte", "ids"}));
  EXPECT_EQ(embed->outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
  EXPECT_EQ(embed->outputs[0].desc.dtype, "float16");
  const NamedTensor* ids = g->FindTensor("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->desc.dtype, "int64");
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["embed"], "Gather[1000x64,int64:64]@Ascend910B2");
  double ids_bytes = -1;
  for (const auto& t : run->transfers) {
    if (t.name == "H2D ids") ids_bytes = t.bytes;
  }
  EXPECT_EQ(ids_bytes, 4 * 16 * 8) << "int64 ids, 8 bytes each";
  auto int32 = load(onnx::TensorProto::INT32, false);
  ASSERT_TRUE(int32.ok()) << Message(int32);
  EXPECT_EQ(int32->FindTensor("ids")->desc.dtype, "int32");
  const std::string arithmetic = Message(load(onnx::TensorProto::INT64, true));
  EXPECT_NE(arithmetic.find("node 'position.ids' (Div): its output 'pos' is int64: integer arithmetic tunefleet has no "
                            "kernel for"),
            std::string::npos)
      << arithmetic;
  EXPECT_NE(arithmetic.find(kIndexDTypeRule), std::string::npos) << "the vector ops' one rule: " << arithmetic;
}

// RoBERTa's position ids as Hugging Face computes them from the token ids (padding_idx 1):
// mask = ids.ne(1).int(); (torch.cumsum(mask, dim=1) * mask).long() + 1, then a Gather of the
// position table by them. Each step is a vector kernel of index arithmetic: Equal into a
// bool, Not, the Casts between bool, int32 and int64, a CumSum along the sequence, the int32
// Mul and the int64 Add. A CumSum along another axis, exclusive or reversed, is refused.
TEST(OnnxImport, RobertasPositionIdsAreIndexArithmeticKernels) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int64_t axis, const char* flag) {
    return LoadChainModel(dir.Path("roberta" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "ids", {4, 16}, onnx::TensorProto::INT64);
                            AddWeight(g, "wpe", {514, 64});
                            AddInts(g, "pad", {1});
                            AddInts(g, "axis", {axis});
                            AddNode(n, "Equal", {"ids", "pad"}, "is_pad", "pos.eq");
                            AddNode(n, "Not", {"is_pad"}, "not_pad", "pos.not");
                            WithInt(AddNode(n, "Cast", {"not_pad"}, "mask", "pos.mask"), "to", onnx::TensorProto::INT32);
                            auto* sum = AddNode(n, "CumSum", {"mask", "axis"}, "running", "pos.cumsum");
                            if (flag) WithInt(sum, flag, 1);
                            AddNode(n, "Mul", {"running", "mask"}, "masked", "pos.mul");
                            WithInt(AddNode(n, "Cast", {"masked"}, "long", "pos.long"), "to", onnx::TensorProto::INT64);
                            AddNode(n, "Add", {"long", "pad"}, "pos", "pos.add");
                            AddNode(n, "Gather", {"wpe", "pos"}, "emb", "pos.embed");
                            AddNode(n, "Add", {"emb", "x"}, "y", "sum");
                          });
  };
  auto g = load(1, nullptr);
  ASSERT_TRUE(g.ok()) << Message(g);
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["pos.eq"], "Equal[int64:4x16,int64:1]@Ascend910B2");
  EXPECT_EQ(keys["pos.not"], "Not[int8:4x16]@Ascend910B2");
  EXPECT_EQ(keys["pos.mask"], "Cast[int8:4x16]{dst_type=int32}@Ascend910B2");
  EXPECT_EQ(keys["pos.cumsum"], "CumSum[int32:4x16]@Ascend910B2");
  EXPECT_EQ(keys["pos.mul"], "Mul[int32:4x16,int32:4x16]@Ascend910B2");
  EXPECT_EQ(keys["pos.long"], "Cast[int32:4x16]{dst_type=int64}@Ascend910B2");
  EXPECT_EQ(keys["pos.add"], "Add[int64:4x16,int64:1]@Ascend910B2");
  EXPECT_EQ(keys["pos.embed"], "Gather[514x64,int64:64]@Ascend910B2");
  const std::string other_axis = Message(load(0, nullptr));
  EXPECT_NE(other_axis.find("node 'pos.cumsum' (CumSum): it sums along axis 0 of 2; only a running sum along the last "
                            "axis is supported"),
            std::string::npos)
      << other_axis;
  for (const char* flag : {"exclusive", "reverse"}) {
    const std::string refused = Message(load(-1, flag));
    EXPECT_NE(refused.find("node 'pos.cumsum' (CumSum): an exclusive or reverse running sum is not supported"),
              std::string::npos)
        << refused;
  }
}

// BERT's extended attention mask as a whole model's export computes it from its int64
// attention_mask [b, s]: mask[:, None, None, :], cast to the model's float, (1 - m) *
// -10000, added to the scores [b, h, s, s]. The Unsqueeze is a view of the int64 mask, the
// Cast a kernel from int64 (via float32 to float16), the rest float kernels; it runs.
TEST(OnnxImport, AnInt64AttentionMaskIsCastToFloatAndAddedToTheScores) {
  testing::ScratchDir dir;
  auto g = LoadChainModel(dir.Path("bert_mask.onnx"), 17, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInput(graph, "attention_mask", {4, 16}, onnx::TensorProto::INT64);
    AddInput(graph, "scores", {4, 2, 16, 16});
    AddInts(graph, "axes12", {1, 2});
    AddScalar(graph, "one", 1.0f);
    AddScalar(graph, "big", -10000.0f);
    AddNode(n, "Unsqueeze", {"attention_mask", "axes12"}, "m4", "mask.unsqueeze");
    WithInt(AddNode(n, "Cast", {"m4"}, "mf", "mask.cast"), "to", onnx::TensorProto::FLOAT);
    AddNode(n, "Sub", {"one", "mf"}, "inv", "mask.invert");
    AddNode(n, "Mul", {"inv", "big"}, "ext", "mask.scale");
    AddNode(n, "Add", {"scores", "ext"}, "masked", "attn.add_mask");
    WithInt(AddNode(n, "Softmax", {"masked"}, "y", "attn.softmax"), "axis", -1);
  });
  ASSERT_TRUE(g.ok()) << Message(g);
  EXPECT_TRUE(FindNode(*g, "mask.unsqueeze")->IsView());
  EXPECT_EQ(FindNode(*g, "mask.unsqueeze")->outputs[0].desc.dtype, "int64");
  EXPECT_EQ(FindNode(*g, "mask.cast")->outputs[0].desc.dtype, "float16") << "float32 runs as float16";
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["mask.cast"], "Cast[int64:4x16]{dst_type=float16}@Ascend910B2");
  EXPECT_EQ(keys.count("mask.unsqueeze"), 0u) << "a view runs no kernel";
  EXPECT_EQ(run->ops.size(), 5u) << "Cast, Sub, Mul, Add, Softmax";
}

// A feature pyramid's top-down path as torch exports nn.Upsample(scale_factor=2): a
// Resize of P5 by constant scales [1, 1, 2, 2] (its roi left empty), added to P4. It runs
// as a Resize kernel to the size inference gives; linear is kept as the mode, cubic and a
// resize of the channels are refused naming the node.
TEST(OnnxImport, AnUpsamplingResizeIsAResizeKernel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::string& mode, const std::vector<float>& scales) {
    return LoadChainModel(dir.Path("fpn" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "p5", {2, 8, 10, 10});
                            AddInput(g, "p4", {2, static_cast<int64_t>(8 * scales[1]), 20, 20});
                            auto* t = g.add_initializer();
                            t->set_name("scales");
                            t->set_data_type(onnx::TensorProto::FLOAT);
                            t->add_dims(4);
                            for (float s : scales) t->add_float_data(s);
                            auto* up = AddNode(n, "Resize", {"p5", "", "scales"}, "u", "fpn.upsample");
                            auto* a = up->add_attribute();
                            a->set_name("mode");
                            a->set_type(onnx::AttributeProto::STRING);
                            a->set_s(mode);
                            AddNode(n, "Add", {"u", "p4"}, "merged", "fpn.add");
                            AddNode(n, "Relu", {"x"}, "y", "act");
                          });
  };
  auto g = load("nearest", {1, 1, 2, 2});
  ASSERT_TRUE(g.ok()) << Message(g);
  const GraphNode* up = FindNode(*g, "fpn.upsample");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->op_type, "Resize");
  EXPECT_EQ(up->inputs, (std::vector<std::string>{"p5"})) << "the scales are read at import";
  EXPECT_EQ(up->attrs.at("sizes"), "20,20");
  EXPECT_FALSE(up->attrs.contains("mode"));
  EXPECT_EQ(up->outputs[0].desc.shape, (std::vector<int64_t>{2, 8, 20, 20}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["fpn.upsample"], "Resize[2x8x10x10]{sizes=20,20}@Ascend910B2");
  auto linear = load("linear", {1, 1, 2, 2});
  ASSERT_TRUE(linear.ok()) << Message(linear);
  EXPECT_EQ(FindNode(*linear, "fpn.upsample")->attrs.at("mode"), "linear");
  const std::string cubic = Message(load("cubic", {1, 1, 2, 2}));
  EXPECT_NE(cubic.find("node 'fpn.upsample' (Resize): mode 'cubic' is not supported (nearest, or linear"),
            std::string::npos)
      << cubic;
  const std::string channels = Message(load("nearest", {1, 2, 2, 2}));
  EXPECT_NE(channels.find("node 'fpn.upsample' (Resize): it resizes N or C too ([2,8,10,10] to [2,16,20,20])"),
            std::string::npos)
      << channels;
}

// U-Net's up-convolution, nn.ConvTranspose2d(16, 8, 2, stride=2): every output pixel takes
// one input pixel's contribution, so it runs as the GEMM x [N*H*W, Cin] by its weight
// [Cin, Cout*2*2] (a MatMul named as the node, reading x and the weight through views),
// written into [N, Cout, 2H, 2W] by a view, and its bias is an Add after it. (Overlapping
// windows: AnOverlappingTransposedConvolutionIsAConvolutionOfItsDilatedInput.)
TEST(OnnxImport, AnUpConvolutionWhoseKernelIsItsStrideIsAMatMul) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int64_t k, bool bias) {
    return LoadChainModel(dir.Path("upconv" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "d", {2, 16, 8, 8});
                            AddWeight(g, "w_up", {16, 8, k, k});
                            AddWeight(g, "b_up", {8});
                            std::vector<std::string> in = {"d", "w_up"};
                            if (bias) in.push_back("b_up");
                            auto* up = WithInts(AddNode(n, "ConvTranspose", in, "u", "up"), "strides", {2, 2});
                            if (k == 3) WithInts(WithInts(up, "pads", {1, 1, 1, 1}), "output_padding", {1, 1});
                            AddNode(n, "Relu", {"u"}, "u_act", "up.act");
                            AddNode(n, "Relu", {"x"}, "y", "act");
                            g.add_output()->set_name("u_act");
                          });
  };
  auto g = load(2, true);
  ASSERT_TRUE(g.ok()) << Message(g);
  const GraphNode* gemm = FindNode(*g, "up");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->op_type, "MatMul");
  EXPECT_EQ(gemm->outputs[0].desc.shape, (std::vector<int64_t>{2 * 8 * 8, 8 * 2 * 2}));
  EXPECT_TRUE(FindNode(*g, "up/x_rows")->IsView());
  EXPECT_TRUE(FindNode(*g, "up/out")->IsView());
  const GraphNode* add = FindNode(*g, "up/bias_add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->outputs[0].name, "u");
  EXPECT_EQ(add->outputs[0].desc.shape, (std::vector<int64_t>{2, 8, 16, 16}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["up"], "MatMul[128x16,16x32]@Ascend910B2");
  EXPECT_EQ(keys["up/bias_add"], "Add[2x8x16x16,8x1x1]@Ascend910B2");
  auto plain = load(2, false);
  ASSERT_TRUE(plain.ok()) << Message(plain);
  EXPECT_EQ(FindNode(*plain, "up/bias_add"), nullptr);
  EXPECT_EQ(FindNode(*plain, "up/out")->outputs[0].name, "u");
}

// A transposed convolution whose windows overlap (CycleGAN's 3x3 at stride 2 with pads 1
// and output_padding 1, DCGAN's 4x4/2 with pads 1 and its first 4x4/1 of a 1x1 input) is the
// convolution CANN's Conv2DBackpropInput runs: x dilated by the stride (a Pad kernel
// inserting stride - 1 zeros between neighbours), padded by k - 1 - pads (plus
// output_padding at the end), at stride 1, its weight read as [Cout, Cin/g, kh, kw]; a
// Conv2D named as the node. Pads beyond the kernel's reach (a crop) are refused.
TEST(OnnxImport, AnOverlappingTransposedConvolutionIsAConvolutionOfItsDilatedInput) {
  testing::ScratchDir dir;
  int file = 0;
  // kernel, input size, stride, pads, output_padding, groups
  auto load = [&](int64_t k, int64_t size, int64_t stride, int64_t pad, int64_t extra, int64_t groups) {
    return LoadChainModel(dir.Path("deconv" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "d", {2, 16, size, size});
                            AddWeight(g, "w_up", {16, 8 / groups, k, k});
                            AddWeight(g, "b_up", {8});
                            auto* up = AddNode(n, "ConvTranspose", {"d", "w_up", "b_up"}, "u", "up");
                            WithInts(WithInts(up, "strides", {stride, stride}), "pads", {pad, pad, pad, pad});
                            if (extra) WithInts(up, "output_padding", {extra, extra});
                            if (groups != 1) WithInt(up, "group", groups);
                            AddNode(n, "Relu", {"u"}, "u_act", "up.act");
                            AddNode(n, "Relu", {"x"}, "y", "act");
                            g.add_output()->set_name("u_act");
                          });
  };
  struct Case {
    int64_t k, size, stride, pad, extra, groups;
    std::vector<int64_t> out;
    std::string pad_key, conv_pads;
  };
  for (const Case& c : {Case{3, 8, 2, 1, 1, 1, {2, 8, 16, 16}, "Pad[2x16x8x8]{interior=1,1}@Ascend910B2", "pads=1,2,1,2"},
                        Case{4, 8, 2, 1, 0, 1, {2, 8, 16, 16}, "Pad[2x16x8x8]{interior=1,1}@Ascend910B2", "pads=2,2,2,2"},
                        Case{4, 1, 1, 0, 0, 1, {2, 8, 4, 4}, "", "pads=3,3,3,3"},
                        Case{3, 8, 2, 1, 1, 2, {2, 8, 16, 16}, "Pad[2x16x8x8]{interior=1,1}@Ascend910B2", "groups=2"}}) {
    auto g = load(c.k, c.size, c.stride, c.pad, c.extra, c.groups);
    ASSERT_TRUE(g.ok()) << Message(g);
    const GraphNode* conv = FindNode(*g, "up");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->op_type, "Conv2D");
    EXPECT_EQ(conv->outputs[0].desc.shape, c.out);
    EXPECT_EQ(conv->inputs.back(), "b_up") << "its bias the convolution's";
    EXPECT_EQ(FindNode(*g, "up/w")->outputs[0].desc.shape, (std::vector<int64_t>{8, 16 / c.groups, c.k, c.k}));
    auto run = profile::RunGraph(*g, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    std::map<std::string, std::string> keys = OpKeysByName(*run);
    EXPECT_NE(keys["up"].find(c.conv_pads), std::string::npos) << keys["up"];
    EXPECT_EQ(keys["up"].find("strides"), std::string::npos) << "stride 1: " << keys["up"];
    if (c.pad_key.empty()) {
      EXPECT_EQ(FindNode(*g, "up/dilate"), nullptr) << "stride 1 dilates nothing";
    } else {
      EXPECT_EQ(keys["up/dilate"], c.pad_key);
    }
  }
  const std::string crop = Message(load(3, 8, 2, 3, 0, 1));
  EXPECT_NE(crop.find("node 'up' (ConvTranspose): pads [3,3,3,3] exceed the kernel's reach (2): it crops its output"),
            std::string::npos)
      << crop;
}

// TensorFlow's "same" and "valid" padding as tf2onnx and keras2onnx write it when a shape is
// dynamic: auto_pad SAME_UPPER (the odd pad at the end), SAME_LOWER (at the beginning) or
// VALID of a Conv, a 1-D Conv, a pool or a ConvTranspose, and a ConvTranspose's
// output_shape (conv2d_transpose's), each the kernel the same node with those explicit pads
// is; so is a pool's ceil_mode 1 (GoogLeNet's), its last window reading padding at the end.
// An auto_pad ONNX does not define is refused naming it.
TEST(OnnxImport, AutoPadAndOutputShapeAreTheExplicitPadsTheyStandFor) {
  testing::ScratchDir dir;
  int file = 0;
  // One node `op` reading "img" (and "w" for a convolution), its output "out" read by a Relu.
  auto load = [&](const std::string& op, std::vector<int64_t> img, std::vector<int64_t> w,
                  const std::function<void(onnx::NodeProto*)>& attrs) {
    return LoadChainModel(dir.Path("autopad" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "img", img);
                            std::vector<std::string> in{"img"};
                            if (!w.empty()) {
                              AddWeight(g, "w", w);
                              in.push_back("w");
                            }
                            attrs(AddNode(n, op, in, "out", "node"));
                            AddNode(n, "Relu", {"out"}, "r", "act");
                            AddNode(n, "Relu", {"x"}, "y", "other");
                            g.add_output()->set_name("r");
                          });
  };
  auto key = [](const Result<Graph>& g, const std::string& node) -> std::string {
    if (!g.ok()) return Message(g);
    auto run = profile::RunGraph(*g, testing::Soc910B2());
    return run.ok() ? OpKeysByName(*run)[node] : run.status().ToString();
  };
  auto shape = [](const Result<Graph>& g, const std::string& node) {
    const GraphNode* n = g.ok() ? FindNode(*g, node) : nullptr;
    return n == nullptr ? std::vector<int64_t>{} : n->outputs[0].desc.shape;
  };
  struct Case {
    std::string op, mode;                // mode: auto_pad, "output_shape" or "ceil_mode"
    std::vector<int64_t> img, w, extra;  // extra: kernel_shape of a pool, output_shape of a ConvTranspose
    std::vector<int64_t> pads, out;      // the explicit pads (ONNX's order) it stands for, its output
    std::string node;                    // the kernel named as the node
  };
  const std::vector<Case> cases{
      // 3x3/2 of 16: 8 outputs need 17 rows, one pad, at the end (UPPER) or the beginning.
      {"Conv", "SAME_UPPER", {2, 8, 16, 16}, {16, 8, 3, 3}, {}, {0, 0, 1, 1}, {2, 16, 8, 8}, "node"},
      {"Conv", "SAME_LOWER", {2, 8, 16, 16}, {16, 8, 3, 3}, {}, {1, 1, 0, 0}, {2, 16, 8, 8}, "node"},
      {"Conv", "VALID", {2, 8, 16, 16}, {16, 8, 3, 3}, {}, {0, 0, 0, 0}, {2, 16, 7, 7}, "node"},
      // A 1-D convolution of kernel 5 at stride 1: two on each side (the Conv2D of height 1).
      {"Conv", "SAME_UPPER", {2, 8, 100}, {16, 8, 5}, {}, {2, 2}, {2, 16, 1, 100}, "node"},
      {"MaxPool", "SAME_UPPER", {2, 8, 15, 15}, {}, {3, 3}, {1, 1, 1, 1}, {2, 8, 8, 8}, "node"},
      {"AveragePool", "VALID", {2, 8, 16, 16}, {}, {2, 2}, {0, 0, 0, 0}, {2, 8, 8, 8}, "node"},
      // GoogLeNet's 3x3/2 of 112 rounded up: 56 windows need 113 rows (55 rounded down).
      {"MaxPool", "ceil_mode", {2, 8, 112, 112}, {}, {3, 3}, {0, 0, 1, 1}, {2, 8, 56, 56}, "node"},
      // 2x2/2 of 15 with a pad of 1 at the beginning: 8 windows of the 16 rows, rounded either way.
      {"AveragePool", "ceil_mode", {2, 8, 15, 15}, {}, {2, 2}, {1, 1, 0, 0}, {2, 8, 8, 8}, "node"},
      // DCGAN's 4x4/2 up to 16 from 8: pads 1 on each side.
      {"ConvTranspose", "output_shape", {2, 16, 8, 8}, {16, 8, 4, 4}, {16, 16}, {1, 1, 1, 1}, {2, 8, 16, 16}, "node"},
      // 3x3/2 up to 16: 2 x 7 + 3 = 17 rows, one pad, at the end (UPPER).
      {"ConvTranspose", "SAME_UPPER", {2, 16, 8, 8}, {16, 8, 3, 3}, {}, {0, 0, 1, 1}, {2, 8, 16, 16}, "node"},
  };
  for (const Case& c : cases) {
    const size_t axes = c.img.size() - 2;
    const std::vector<int64_t> strides(axes, c.op == "Conv" && axes == 1 ? 1 : 2);
    auto common = [&](onnx::NodeProto* n) {
      WithInts(n, "strides", strides);
      if (!c.extra.empty() && c.op != "ConvTranspose") WithInts(n, "kernel_shape", c.extra);
    };
    auto implicit = load(c.op, c.img, c.w, [&](onnx::NodeProto* n) {
      common(n);
      if (c.mode == "output_shape") {
        WithInts(n, "output_shape", c.extra);
        WithInts(n, "pads", {5, 5, 5, 5});  // ignored: output_shape decides
      } else if (c.mode == "ceil_mode") {
        WithInt(n, "ceil_mode", 1);
        if (c.pads[0] != 0) WithInts(n, "pads", {c.pads[0], c.pads[1], 0, 0});
      } else {
        WithString(n, "auto_pad", c.mode);
      }
    });
    auto explicit_pads = load(c.op, c.img, c.w, [&](onnx::NodeProto* n) {
      common(n);
      WithInts(n, "pads", c.pads);
    });
    const std::string what = c.op + " " + c.mode;
    ASSERT_TRUE(implicit.ok()) << what << ": " << Message(implicit);
    ASSERT_TRUE(explicit_pads.ok()) << what << ": " << Message(explicit_pads);
    EXPECT_EQ(shape(implicit, c.node), c.out) << what;
    EXPECT_EQ(key(implicit, c.node), key(explicit_pads, c.node)) << what;
    EXPECT_EQ(implicit->nodes.size(), explicit_pads->nodes.size()) << what;
  }
  // The two SAME conventions are different kernels (the odd pad's side is in the key).
  auto upper = load("Conv", {2, 8, 16, 16}, {16, 8, 3, 3}, [](onnx::NodeProto* n) {
    WithString(WithInts(n, "strides", {2, 2}), "auto_pad", "SAME_UPPER");
  });
  EXPECT_NE(key(upper, "node").find("pads=0,1,0,1"), std::string::npos) << key(upper, "node");

  // tf2onnx's strided "same" convolution: an explicit Pad, then the Conv with VALID; one Conv2D.
  auto tf = LoadChainModel(dir.Path("tf_same.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "img", {2, 8, 16, 16});
    AddWeight(g, "w", {16, 8, 3, 3});
    AddInts(g, "pads", {0, 0, 0, 0, 0, 0, 1, 1});
    AddNode(n, "Pad", {"img", "pads"}, "padded", "down.pad");
    WithString(WithInts(AddNode(n, "Conv", {"padded", "w"}, "y", "down.conv"), "strides", {2, 2}), "auto_pad", "VALID");
  });
  ASSERT_TRUE(tf.ok()) << Message(tf);
  EXPECT_EQ(tf->nodes.size(), 1u) << "the Pad is the Conv's padding";
  EXPECT_NE(key(tf, "down.conv").find("pads=0,1,0,1"), std::string::npos) << key(tf, "down.conv");

  const std::string same = Message(load("Conv", {2, 8, 16, 16}, {16, 8, 3, 3}, [](onnx::NodeProto* n) {
    WithString(n, "auto_pad", "SAME");
  }));
  EXPECT_NE(same.find("node 'node' (Conv): auto_pad 'SAME' is not one of NOTSET, SAME_UPPER, SAME_LOWER and VALID"),
            std::string::npos)
      << same;
}

// What a whole model computes from constants only, ATC computes at compile time: HF's
// rotary embedding (transformers >= 4.38) takes its angles by a MatMul of the inverse
// frequencies [1, 32, 1] and the positions [1, 1, 16], transposes them, joins two copies
// and takes their cos, here multiplied into x [4, 16, 64]. None of that is a kernel: the
// cos table is a weight [1, 16, 64] the Mul reads. The same Cos of a tensor the model
// computes at run time is a Cos kernel.
TEST(OnnxImport, WhatIsComputedFromConstantsOnlyIsAWeight) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](bool of_x) {
    return LoadChainModel(dir.Path("rotary" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            for (const auto& [name, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
                                     {"inv_freq", {1, 32, 1}}, {"positions", {1, 1, 16}}}) {
                              auto* t = g.add_initializer();
                              t->set_name(name);
                              t->set_data_type(onnx::TensorProto::FLOAT);
                              for (int64_t d : dims) t->add_dims(d);
                            }
                            AddNode(n, "MatMul", {"inv_freq", "positions"}, "freqs", "rotary.matmul");
                            WithInts(AddNode(n, "Transpose", {"freqs"}, "freqs_t", "rotary.transpose"), "perm", {0, 2, 1});
                            WithInt(AddNode(n, "Concat", {"freqs_t", "freqs_t"}, "emb", "rotary.cat"), "axis", -1);
                            AddNode(n, "Cos", {of_x ? "x" : "emb"}, "cos", "rotary.cos");
                            AddNode(n, "Mul", {"x", "cos"}, "y", "rotary.mul");
                          });
  };
  auto g = load(false);
  ASSERT_TRUE(g.ok()) << Message(g);
  for (const char* folded : {"rotary.matmul", "rotary.transpose", "rotary.cat", "rotary.cos"}) {
    EXPECT_EQ(FindNode(*g, folded), nullptr) << folded << " is computed at compile time";
  }
  EXPECT_TRUE(g->IsWeight("cos"));
  EXPECT_EQ(g->FindTensor("cos")->desc.shape, (std::vector<int64_t>{1, 16, 64}));
  EXPECT_EQ(g->FindTensor("cos")->desc.dtype, "float16");
  EXPECT_EQ(g->FindTensor("emb"), nullptr) << "only what a kernel reads is a weight";
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ops.size(), 1u);
  EXPECT_EQ(run->ops[0].name, "rotary.mul");
  auto of_x = load(true);
  ASSERT_TRUE(of_x.ok()) << Message(of_x);
  ASSERT_NE(FindNode(*of_x, "rotary.cos"), nullptr);
  EXPECT_EQ(FindNode(*of_x, "rotary.cos")->op_type, "Cos");
}

// A BatchNormalization torch did not fold into a convolution before it (a pre-activation
// block's, or BatchNorm1d after a Linear) runs as ATC runs it in inference: x * a + b per
// channel, a FusedMulAdd whose scale and bias are read through views that broadcast over
// the spatial axes. A training-mode one is refused.
TEST(OnnxImport, ABatchNormalizationIsAFusedMulAddPerChannel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::vector<int64_t>& x, int64_t training) {
    return LoadChainModel(dir.Path("bn" + std::to_string(file++) + ".onnx"), 15,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "feat", x);
                            AddBatchNormParams(g, "bn", x[1]);
                            // The bias read through an Identity: torch's export shares equal
                            // initializers (a fresh model's) that way.
                            AddNode(n, "Identity", {"bn.bias"}, "bn.shared_bias", "share");
                            auto* bn = AddNode(n, "BatchNormalization",
                                               {"feat", "bn.scale", "bn.shared_bias", "bn.mean", "bn.var"}, "normed", "bn");
                            if (training) {  // batch statistics: the running mean and variance as outputs too
                              WithInt(bn, "training_mode", 1);
                              bn->add_output("running_mean");
                              bn->add_output("running_var");
                            }
                            AddNode(n, "Relu", {"normed"}, "y", "act");
                          });
  };
  auto image = load({2, 8, 16, 16}, 0);
  ASSERT_TRUE(image.ok()) << Message(image);
  const GraphNode* bn = FindNode(*image, "bn");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->op_type, "FusedMulAdd");
  EXPECT_EQ(FindNode(*image, "bn/scale")->outputs[0].desc.shape, (std::vector<int64_t>{8, 1, 1}));
  std::set<std::string> weights;
  for (const auto& w : image->weights) weights.insert(w.name);
  EXPECT_TRUE(weights.count("bn.scale") && weights.count("bn.bias"));
  EXPECT_FALSE(weights.count("bn.mean")) << "folded into the scale and bias at compile time";
  auto run = profile::RunGraph(*image, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ops[0].op_key, "FusedMulAdd[2x8x16x16,8x1x1,8x1x1]@Ascend910B2");
  auto flat = load({32, 64}, 0);  // BatchNorm1d after a Linear: [C] broadcasts as it is
  ASSERT_TRUE(flat.ok()) << Message(flat);
  EXPECT_EQ(FindNode(*flat, "bn")->inputs, (std::vector<std::string>{"feat", "bn.scale", "bn.shared_bias"}));
  const std::string training = Message(load({2, 8, 16, 16}, 1));
  EXPECT_NE(training.find("a training-mode BatchNormalization (batch statistics) is not supported: export the model in "
                          "eval mode"),
            std::string::npos)
      << training;
}

// DenseNet's transition as torch exports it in eval mode: BatchNormalization before the
// convolution (not folded: it comes first), Relu, a 1x1 Conv, and an AveragePool 2x2 at
// stride 2, a pooling kernel of its own; with ceil_mode 1 the same kernel, its windows
// already covering the input.
TEST(OnnxImport, ADenseNetTransitionsAveragePoolImports) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int64_t ceil_mode) {
    return LoadChainModel(dir.Path("transition" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "feat", {2, 16, 8, 8});
                            AddBatchNormParams(g, "bn", 16);
                            AddWeight(g, "w", {8, 16, 1, 1});
                            AddNode(n, "BatchNormalization", {"feat", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, "normed",
                                    "norm");
                            AddNode(n, "Relu", {"normed"}, "r", "relu");
                            WithInts(AddNode(n, "Conv", {"r", "w"}, "c", "conv"), "kernel_shape", {1, 1});
                            AddInts(g, "no_pads", std::vector<int64_t>(8, 0));
                            AddNode(n, "Pad", {"c", "no_pads"}, "padded", "pad");  // torch writes one of zeros
                            auto* pool = AddNode(n, "AveragePool", {"padded"}, "y", "pool");
                            WithInts(WithInts(pool, "kernel_shape", {2, 2}), "strides", {2, 2});
                            if (ceil_mode) WithInt(pool, "ceil_mode", 1);
                          });
  };
  auto g = load(0);
  ASSERT_TRUE(g.ok()) << Message(g);
  std::vector<std::string> kernels;
  for (const auto& node : g->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"norm FusedMulAdd", "relu Relu", "conv Conv2D", "pool AveragePool"}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ops.back().op_key, "AveragePool[2x8x8x8]{kernel_shape=2,2,strides=2,2}@Ascend910B2");
  EXPECT_TRUE(FindNode(*g, "pad")->IsView()) << "a Pad of zeros moves nothing";
  auto ceil = load(1);
  ASSERT_TRUE(ceil.ok()) << Message(ceil);
  auto ceil_run = profile::RunGraph(*ceil, testing::Soc910B2());
  ASSERT_TRUE(ceil_run.ok()) << ceil_run.status().ToString();
  EXPECT_EQ(ceil_run->ops.back().op_key, run->ops.back().op_key);
  const std::string padding = Message(LoadChainModel(dir.Path("pad.onnx"), 17, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInts(graph, "pads", {0, 1, 0, 0, 1, 0});
    AddNode(n, "Pad", {"x", "pads"}, "y", "pad");
  }));
  EXPECT_NE(padding.find("node 'pad' (Pad): only a 2-D padding (x [N, C, H, W], over H and W) is a kernel; its input "
                         "is [4,16,64]"),
            std::string::npos)
      << padding;
}

// A Pad of zeros over H and W read only by a Conv is the Conv's own padding, as ATC folds
// it: tf2onnx writes one before each strided convolution of TF's "SAME" padding (bottom and
// right only). From opset 18 the axes padded may be an input; a Conv's own pads add up.
// A Pad that reflects, or that another node reads too, is a Pad kernel; one of N or C is
// refused.
TEST(OnnxImport, AZeroPadBeforeAConvIsTheConvsPadding) {
  testing::ScratchDir dir;
  int file = 0;
  // pads, and the axes they pad (none: all four), the Pad's mode, and whether a Relu reads it too.
  auto load = [&](int opset, std::vector<int64_t> pads, std::vector<int64_t> axes, const std::string& mode,
                  bool also_read) {
    return LoadChainModel(dir.Path("same" + std::to_string(file++) + ".onnx"), opset,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "img", {2, 8, 16, 16});
                            AddWeight(g, "w", {16, 8, 3, 3});
                            AddInts(g, "pads", pads);
                            std::vector<std::string> in{"img", "pads"};
                            if (!axes.empty()) {
                              AddInts(g, "axes", axes);
                              in.insert(in.end(), {"", "axes"});
                            }
                            auto* pad = AddNode(n, "Pad", in, "padded", "down.pad");
                            if (!mode.empty()) {
                              auto* a = pad->add_attribute();
                              a->set_name("mode");
                              a->set_type(onnx::AttributeProto::STRING);
                              a->set_s(mode);
                            }
                            auto* conv = WithInts(WithInts(AddNode(n, "Conv", {"padded", "w"}, "c", "down.conv"),
                                                           "kernel_shape", {3, 3}), "strides", {2, 2});
                            if (!axes.empty()) WithInts(conv, "pads", {1, 1, 1, 1});
                            if (also_read) {
                              AddNode(n, "Relu", {"padded"}, "r", "other");
                              AddNode(n, "Add", {"c", "c"}, "y", "out");
                            } else {
                              AddNode(n, "Relu", {"c"}, "y", "out");
                            }
                          });
  };
  auto same = load(17, {0, 0, 0, 0, 0, 0, 1, 1}, {}, "", false);
  ASSERT_TRUE(same.ok()) << Message(same);
  std::vector<std::string> kernels;
  for (const auto& node : same->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"down.conv Conv2D", "out Relu"}));
  EXPECT_EQ(FindNode(*same, "down.conv")->inputs[0], "img");
  EXPECT_EQ(FindNode(*same, "down.conv")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 8, 8}))
      << "(16 + 1 - 3) / 2 + 1";
  auto run = profile::RunGraph(*same, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  // [top, bottom, left, right]: the bottom and right row TF's SAME adds.
  EXPECT_NE(OpKeysByName(*run)["down.conv"].find("pads=0,1,0,1"), std::string::npos) << OpKeysByName(*run)["down.conv"];

  // Opset 18, H and W by axes (-2, -1): H by 1 at the top, W by 2 left and 3 right, on top
  // of the Conv's own 1 on each side.
  auto axes = load(18, {1, 2, 0, 3}, {-2, -1}, "", false);
  ASSERT_TRUE(axes.ok()) << Message(axes);
  auto axes_run = profile::RunGraph(*axes, testing::Soc910B2());
  ASSERT_TRUE(axes_run.ok()) << axes_run.status().ToString();
  EXPECT_NE(OpKeysByName(*axes_run)["down.conv"].find("pads=2,1,3,4"), std::string::npos)
      << OpKeysByName(*axes_run)["down.conv"];

  // torch's F.pad(x, (1, 2, 0, 3)): W by 1 left and 2 right, H by 3 at the bottom, its pads
  // computed from the list (last axis first) with a Slice of step -1 and a Transpose the
  // exporter leaves, folded at import.
  auto torch_pad = LoadChainModel(dir.Path("fpad.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "img", {2, 8, 16, 16});
    AddWeight(g, "w", {16, 8, 3, 3});
    AddInts(g, "pad.list", {1, 2, 0, 3});
    AddInts(g, "pad.rest", {4});
    AddInts(g, "pad.pairs", {-1, 2});
    AddInts(g, "pad.start", {-1});
    AddInts(g, "pad.end", {-9223372036854775807});
    AddInts(g, "pad.axis", {0});
    AddInts(g, "pad.step", {-1});
    AddInts(g, "pad.flat", {-1});
    WithFill(AddNode(n, "ConstantOfShape", {"pad.rest"}, "zeros", "pad.zeros"), onnx::TensorProto::INT64, 0);
    WithInt(AddNode(n, "Concat", {"pad.list", "zeros"}, "all", "pad.concat"), "axis", 0);
    AddNode(n, "Reshape", {"all", "pad.pairs"}, "pairs", "pad.reshape");
    AddNode(n, "Slice", {"pairs", "pad.start", "pad.end", "pad.axis", "pad.step"}, "reversed", "pad.slice");
    WithInts(AddNode(n, "Transpose", {"reversed"}, "by_end", "pad.transpose"), "perm", {1, 0});
    AddNode(n, "Reshape", {"by_end", "pad.flat"}, "onnx_pads", "pad.flatten");
    AddNode(n, "Pad", {"img", "onnx_pads"}, "padded", "down.pad");
    WithInts(WithInts(AddNode(n, "Conv", {"padded", "w"}, "y", "down.conv"), "kernel_shape", {3, 3}), "strides",
             {2, 2});
  });
  ASSERT_TRUE(torch_pad.ok()) << Message(torch_pad);
  EXPECT_EQ(torch_pad->nodes.size(), 1u) << "the pads' arithmetic folded, the Pad into the Conv";
  EXPECT_EQ(FindNode(*torch_pad, "down.conv")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 9, 9}));
  auto torch_run = profile::RunGraph(*torch_pad, testing::Soc910B2());
  ASSERT_TRUE(torch_run.ok()) << torch_run.status().ToString();
  EXPECT_NE(OpKeysByName(*torch_run)["down.conv"].find("pads=0,3,1,2"), std::string::npos)
      << OpKeysByName(*torch_run)["down.conv"];

  for (const bool reflect : {true, false}) {
    auto kept = load(17, {0, 0, 0, 0, 0, 0, 1, 1}, {}, reflect ? "reflect" : "", !reflect);
    ASSERT_TRUE(kept.ok()) << Message(kept);
    const GraphNode* pad = FindNode(*kept, "down.pad");
    ASSERT_NE(pad, nullptr);
    EXPECT_EQ(pad->op_type, "Pad");
    EXPECT_EQ(pad->outputs[0].desc.shape, (std::vector<int64_t>{2, 8, 17, 17}));
    EXPECT_EQ(FindNode(*kept, "down.conv")->inputs[0], "padded");
    auto kept_run = profile::RunGraph(*kept, testing::Soc910B2());
    ASSERT_TRUE(kept_run.ok()) << kept_run.status().ToString();
    EXPECT_EQ(OpKeysByName(*kept_run)["down.pad"], reflect ? "Pad[2x8x16x16]{mode=reflect,pads=0,1,0,1}@Ascend910B2"
                                                           : "Pad[2x8x16x16]{pads=0,1,0,1}@Ascend910B2");
    EXPECT_EQ(OpKeysByName(*kept_run)["down.conv"].find("pads="), std::string::npos) << "not folded";
  }
  const std::string channels = Message(load(17, {0, 1, 0, 0, 0, 0, 1, 1}, {}, "", false));
  EXPECT_NE(channels.find("node 'down.pad' (Pad): it pads axis 1 (C); only H and W are padded"), std::string::npos)
      << channels;
  const std::string wrap = Message(load(19, {0, 0, 0, 0, 0, 0, 1, 1}, {}, "wrap", false));
  EXPECT_NE(wrap.find("node 'down.pad' (Pad): mode 'wrap' is not supported (constant, reflect or edge)"),
            std::string::npos)
      << wrap;
}

// torch's InstanceNorm2d is an InstanceNormalization, its GroupNorm one of x viewed [N, G,
// -1] with scale ones and bias zeros of [G], then the affine Mul and Add per channel: each
// an InstanceNorm kernel over the spatial elements of a (n, c) or (n, group).
TEST(OnnxImport, AnInstanceNormAndAGroupNormAreInstanceNormKernels) {
  testing::ScratchDir dir;
  auto g = LoadChainModel(dir.Path("norms.onnx"), 17, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInput(graph, "img", {2, 32, 8, 8});
    for (const char* w : {"in.scale", "in.bias"}) AddWeight(graph, w, {32});
    for (const char* w : {"gn.ones", "gn.zeros"}) AddWeight(graph, w, {8});
    for (const char* w : {"gn.weight", "gn.bias"}) AddWeight(graph, w, {32, 1, 1});
    AddInts(graph, "gn.groups", {2, 8, -1});
    AddInts(graph, "gn.back", {2, 32, 8, 8});
    AddNode(n, "InstanceNormalization", {"img", "in.scale", "in.bias"}, "i", "in");
    AddNode(n, "Reshape", {"i", "gn.groups"}, "grouped", "gn.view");
    AddNode(n, "InstanceNormalization", {"grouped", "gn.ones", "gn.zeros"}, "normed", "gn.norm");
    AddNode(n, "Reshape", {"normed", "gn.back"}, "back", "gn.back_view");
    AddNode(n, "Mul", {"back", "gn.weight"}, "scaled", "gn.scale");
    AddNode(n, "Add", {"scaled", "gn.bias"}, "y", "gn.shift");
  });
  ASSERT_TRUE(g.ok()) << Message(g);
  std::vector<std::string> kernels;
  for (const auto& node : g->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"in InstanceNorm", "gn.norm InstanceNorm", "gn.scale Mul", "gn.shift Add"}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["in"], "InstanceNorm[2x32x64,32,32]@Ascend910B2");
  EXPECT_EQ(keys["gn.norm"], "InstanceNorm[2x8x256,8,8]@Ascend910B2") << "a row per (n, group)";

  const std::string flat = Message(LoadChainModel(dir.Path("flat.onnx"), 17, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInput(graph, "rows", {4, 64});
    for (const char* w : {"s", "b"}) AddWeight(graph, w, {4});
    AddNode(n, "InstanceNormalization", {"rows", "s", "b"}, "y", "norm");
  }));
  EXPECT_NE(flat.find("node 'norm' (InstanceNormalization): InstanceNormalization takes x as [N, C, spatial...]"),
            std::string::npos)
      << flat;
}

// ONNX's GroupNormalization (opset 18: scale and bias of [G]; 21: of [C]), which libonnx
// 1.12 has no schema for, is the InstanceNorm kernel of its groups between two views, a
// channel's scale and bias applied to its part of a group's row. num_groups must divide C.
TEST(OnnxImport, AGroupNormalizationIsTheInstanceNormOfItsGroups) {
  testing::ScratchDir dir;
  auto load = [&](int opset, int64_t affine, int64_t groups) {
    return LoadChainModel(dir.Path("gn" + std::to_string(opset) + "_" + std::to_string(groups) + ".onnx"), opset,
                          [&](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
                            AddInput(graph, "img", {2, 32, 8, 8});
                            for (const char* w : {"gn.weight", "gn.bias"}) AddWeight(graph, w, {affine});
                            WithInt(AddNode(n, "GroupNormalization", {"img", "gn.weight", "gn.bias"}, "g", "gn"),
                                    "num_groups", groups);
                            AddNode(n, "Relu", {"g"}, "y", "act");
                          });
  };
  for (const auto& [opset, affine] : {std::pair<int, int64_t>{18, 8}, std::pair<int, int64_t>{21, 32}}) {
    auto g = load(opset, affine, 8);
    ASSERT_TRUE(g.ok()) << "opset " << opset << ": " << Message(g);
    EXPECT_EQ(FindNode(*g, "gn/groups")->outputs[0].desc.shape, (std::vector<int64_t>{2, 8, 256}));
    EXPECT_EQ(FindNode(*g, "gn/view")->outputs[0].desc.shape, (std::vector<int64_t>{2, 32, 8, 8}));
    auto run = profile::RunGraph(*g, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(OpKeysByName(*run)["gn"], "InstanceNorm[2x8x256," + std::to_string(affine) + "," + std::to_string(affine) + "]@Ascend910B2")
        << "a row per (n, group)";
  }
  const std::string uneven = Message(load(21, 32, 5));
  EXPECT_NE(uneven.find("node 'gn' (GroupNormalization): its num_groups (5) must be set and divide x's 32 channels"),
            std::string::npos)
      << uneven;
}

// Whisper's audio front end: two 1-D convolutions over 3,000 frames of 80 mel bins, the
// second of stride 2, each the 2-D convolution of height 1 it is (x viewed [N, C, 1, L]);
// one filter per channel is a DepthwiseConv2D. A 1-D convolution's attributes have one
// value an axis (ONNX's shape inference refuses two, naming the node).
TEST(OnnxImport, AOneDConvolutionIsAConv2DOfHeightOne) {
  testing::ScratchDir dir;
  auto load = [&](const std::string& file, const std::vector<int64_t>& second_strides) {
    return LoadChainModel(dir.Path(file), 17, [&](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
      AddInput(graph, "mel", {1, 80, 3000});
      AddWeight(graph, "w1", {384, 80, 3});
      AddWeight(graph, "b1", {384});
      AddWeight(graph, "w2", {384, 384, 3});
      AddWeight(graph, "dw", {384, 1, 5});
      WithInts(AddNode(n, "Conv", {"mel", "w1", "b1"}, "c1", "conv1"), "pads", {1, 1});
      AddNode(n, "Relu", {"c1"}, "a1", "act1");
      WithInts(WithInts(AddNode(n, "Conv", {"a1", "w2"}, "c2", "conv2"), "pads", {1, 1}), "strides", second_strides);
      WithInt(WithInts(AddNode(n, "Conv", {"c2", "dw"}, "d", "depthwise"), "pads", {2, 2}), "group", 384);
      AddNode(n, "Relu", {"d"}, "y", "act2");
    });
  };
  auto g = load("whisper.onnx", {2});
  ASSERT_TRUE(g.ok()) << Message(g);
  EXPECT_EQ(FindNode(*g, "conv1/x2d")->outputs[0].desc.shape, (std::vector<int64_t>{1, 80, 1, 3000}));
  EXPECT_EQ(FindNode(*g, "conv2/view")->outputs[0].desc.shape, (std::vector<int64_t>{1, 384, 1500}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["conv1"], "Conv2D[1x80x1x3000,384x80x1x3,384]{pads=0,0,1,1}@Ascend910B2");
  EXPECT_EQ(keys["conv2"], "Conv2D[1x384x1x3000,384x384x1x3]{pads=0,0,1,1,strides=1,2}@Ascend910B2");
  EXPECT_EQ(keys["depthwise"], "DepthwiseConv2D[1x384x1x1500,384x1x1x5]{pads=0,0,2,2}@Ascend910B2");
  const std::string two = Message(load("two.onnx", {2, 2}));
  EXPECT_NE(two.find("(op_type:Conv, node name: conv2): [ShapeInferenceError] Attribute strides has incorrect size"),
            std::string::npos)
      << "ONNX's shape inference names the node: " << two;
}

// torch.einsum as Stable Diffusion's original attention and many projections write it:
// each Einsum of two operands is one MatMul or BatchMatMul, its transposes flags of the
// product, never a Transpose kernel; what is no matrix product is refused, saying why.
TEST(OnnxImport, AnEinsumThatIsAMatrixProductIsAMatMulOrBatchMatMul) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::vector<std::pair<std::string, std::vector<std::string>>>& einsums) {
    return LoadChainModel(dir.Path("einsum" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            for (const char* t : {"q", "k", "v"}) AddInput(g, t, {2, 4, 16, 8});
                            AddWeight(g, "w", {64, 32});
                            AddInput(g, "p", {64, 32});
                            AddInput(g, "r", {24, 64});
                            for (size_t i = 0; i < einsums.size(); ++i) {
                              const auto& [equation, in] = einsums[i];
                              const std::string out = i + 1 == einsums.size() ? "y" : "e" + std::to_string(i);
                              WithString(AddNode(n, "Einsum", in, out, "einsum" + std::to_string(i)), "equation", equation);
                            }
                          });
  };
  auto attention = load({{"bhqd,bhkd->bhqk", {"q", "k"}}, {"bhqk,bhkd->bhqd", {"e0", "v"}}});
  ASSERT_TRUE(attention.ok()) << Message(attention);
  std::vector<std::string> kernels;
  for (const auto& node : attention->nodes) kernels.push_back(node.name + " " + node.op_type);
  EXPECT_EQ(kernels, (std::vector<std::string>{"einsum0 BatchMatMul", "einsum1 BatchMatMul"})) << "no view is needed";
  auto run = profile::RunGraph(*attention, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["einsum0"], "BatchMatMul[2x4x16x8,2x4x16x8]{transpose_b=1}@Ascend910B2") << "q k^T";
  EXPECT_EQ(keys["einsum1"], "BatchMatMul[2x4x16x16,2x4x16x8]@Ascend910B2");

  // A projection over the last axis: the rows of x [4, 16, 64] viewed as one M of 64.
  auto projection = load({{"bnd,dk->bnk", {"x", "w"}}});
  ASSERT_TRUE(projection.ok()) << Message(projection);
  ASSERT_NE(FindNode(*projection, "einsum0/a"), nullptr);
  EXPECT_EQ(FindNode(*projection, "einsum0/a")->outputs[0].desc.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(FindNode(*projection, "einsum0/view")->outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 32}));
  auto projected = profile::RunGraph(*projection, testing::Soc910B2());
  ASSERT_TRUE(projected.ok()) << projected.status().ToString();
  EXPECT_EQ(OpKeysByName(*projected)["einsum0"], "MatMul[64x64,64x32]@Ascend910B2");

  // Operands stored transposed, the output implicit ("dk,md" gives "km", alphabetical):
  // p^T r^T, both operands' flags, no Transpose kernel.
  auto transposed = load({{"dk,md", {"p", "r"}}});
  ASSERT_TRUE(transposed.ok()) << Message(transposed);
  auto t_run = profile::RunGraph(*transposed, testing::Soc910B2());
  ASSERT_TRUE(t_run.ok()) << t_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*t_run)["einsum0"], "MatMul[64x32,24x64]{transpose_a=1,transpose_b=1}@Ascend910B2");
  EXPECT_EQ(FindNode(*transposed, "einsum0")->outputs[0].desc.shape, (std::vector<int64_t>{32, 24}));
  // The output wanted the other way round, "mk": r p, the operands swapped.
  auto swapped = load({{"dk,md->mk", {"p", "r"}}});
  ASSERT_TRUE(swapped.ok()) << Message(swapped);
  auto s_run = profile::RunGraph(*swapped, testing::Soc910B2());
  ASSERT_TRUE(s_run.ok()) << s_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*s_run)["einsum0"], "MatMul[24x64,64x32]@Ascend910B2");
  EXPECT_EQ(FindNode(*swapped, "einsum0")->inputs, (std::vector<std::string>{"r", "p"}));
  // An ellipsis stands for the leading axes.
  auto ellipsis = load({{"...qd,...kd->...qk", {"q", "k"}}});
  ASSERT_TRUE(ellipsis.ok()) << Message(ellipsis);
  auto e_run = profile::RunGraph(*ellipsis, testing::Soc910B2());
  ASSERT_TRUE(e_run.ok()) << e_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*e_run)["einsum0"], keys["einsum0"]);

  // Scaled and soft-maxed between the two, as Stable Diffusion's original CrossAttention
  // writes it, the einsums are an attention `fuse` makes one FlashAttention of.
  auto sd = LoadChainModel(dir.Path("sd_attention.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    for (const char* t : {"q", "k", "v"}) AddInput(g, t, {16, 64, 40});
    AddScalar(g, "scale", 0.158f);
    WithString(AddNode(n, "Einsum", {"q", "k"}, "sim", "attn.sim"), "equation", "b i d, b j d -> b i j");
    AddNode(n, "Mul", {"sim", "scale"}, "scaled", "attn.scale");
    WithInt(AddNode(n, "Softmax", {"scaled"}, "attn", "attn.softmax"), "axis", -1);
    WithString(AddNode(n, "Einsum", {"attn", "v"}, "y", "attn.out"), "equation", "b i j, b j d -> b i d");
  });
  ASSERT_TRUE(sd.ok()) << Message(sd);
  EXPECT_EQ(FindAttentionFusions(*sd).size(), 1u);

  for (const auto& [equation, in, says] :
       {std::tuple<std::string, std::vector<std::string>, std::string>{"bhqd,bhkd->bhq", {"q", "k"}, "sums 'k' of one operand"},
        {"bhqd,bhkd,bhkd->bhqk", {"q", "k", "v"}, "only an Einsum of two operands"},
        {"bhqq,bhkd->bhqk", {"q", "k"}, "repeats 'q' within a term"}}) {
    const std::string refused = Message(load({{equation, in}}));
    EXPECT_NE(refused.find(says), std::string::npos) << equation << ": " << refused;
  }
}

// A squeeze-and-excitation block as timm writes it: x.mean((2, 3), keepdim=True), two 1x1
// convolutions, a sigmoid gate multiplied into x. The spatial mean is a ReduceMean over H*W
// as a GlobalAveragePool is; the gate's [N, C, 1, 1] broadcasts over H and W. From opset
// 18 the axes are an input, and without keepdims the mean is [N, C]. (Other axes:
// AMeanOverAnyRunOfAxesIsAKernel.)
TEST(OnnxImport, AnSeBlocksSpatialMeanIsAReduceMeanOverHw) {
  testing::ScratchDir dir;
  auto se = LoadChainModel(dir.Path("se.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "feat", {2, 16, 8, 8});
    AddWeight(g, "w1", {4, 16, 1, 1});
    AddWeight(g, "w2", {16, 4, 1, 1});
    WithInts(AddNode(n, "ReduceMean", {"feat"}, "s", "se.mean"), "axes", {2, 3});
    WithInts(AddNode(n, "Conv", {"s", "w1"}, "r", "se.reduce"), "kernel_shape", {1, 1});
    AddNode(n, "Relu", {"r"}, "a", "se.act");
    WithInts(AddNode(n, "Conv", {"a", "w2"}, "e", "se.expand"), "kernel_shape", {1, 1});
    AddNode(n, "Sigmoid", {"e"}, "gate", "se.gate");
    AddNode(n, "Mul", {"feat", "gate"}, "y", "se.scale");
  });
  ASSERT_TRUE(se.ok()) << Message(se);
  std::vector<std::string> kernels;
  for (const auto& node : se->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"se.mean ReduceMean", "se.reduce Conv2D", "se.act Relu",
                                                "se.expand Conv2D", "se.gate Sigmoid", "se.scale Mul"}));
  auto run = profile::RunGraph(*se, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ops[0].op_key, "ReduceMean[32x64]@Ascend910B2") << "2 x 16 channels, each a mean of 8 x 8";
  auto flat = LoadChainModel(dir.Path("mean18.onnx"), 18, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "feat", {2, 16, 8, 8});
    AddInts(g, "hw", {2, 3});
    WithInt(AddNode(n, "ReduceMean", {"feat", "hw"}, "s", "mean"), "keepdims", 0);
    AddNode(n, "Relu", {"s"}, "y", "act");
  });
  ASSERT_TRUE(flat.ok()) << Message(flat);
  EXPECT_EQ(FindNode(*flat, "mean/view")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16}));
}

// A ReduceMean, ReduceSum or ReduceL2 over any run of neighbouring axes is a kernel between
// views: over the last axes, the row-wise kernel of its name over [before, reduced] (torch's
// F.normalize's ReduceL2); over axes before the last, a mean (timm's token pooling) is an
// AveragePool of window [reduced, 1] over x viewed [before, 1, reduced, after], and a sum
// (a sentence embedding's masked sum over the sequence) the same pooling dividing by 1.
// An L2 norm there, axes apart, or axes that are not constants are refused.
TEST(OnnxImport, AMeanOverAnyRunOfAxesIsAKernel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::string& op, int opset, const std::vector<int64_t>& axes, int64_t keepdims) {
    return LoadChainModel(dir.Path("reduce" + std::to_string(file++) + ".onnx"), opset,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            const bool axes_input = opset >= (op == "ReduceSum" ? 13 : 18);  // ReduceL2: 18
                            if (axes_input) AddInts(g, "axes", axes);
                            auto* r = AddNode(n, op, axes_input ? std::vector<std::string>{"x", "axes"}
                                                                : std::vector<std::string>{"x"},
                                              "r", "pool");
                            if (!axes_input) WithInts(r, "axes", axes);
                            WithInt(r, "keepdims", keepdims);
                            AddNode(n, "Relu", {"r"}, "y", "act");
                          });
  };
  struct Case {
    std::string op;
    int opset;
    std::vector<int64_t> axes;
    int64_t keepdims;
    std::string key;
    std::vector<int64_t> out;
  };
  for (const Case& c : {Case{"ReduceMean", 17, {1}, 0, "AveragePool[4x1x16x64]{kernel_shape=16,1}@Ascend910B2", {4, 64}},
                        Case{"ReduceMean", 18, {-2}, 1, "AveragePool[4x1x16x64]{kernel_shape=16,1}@Ascend910B2", {4, 1, 64}},
                        Case{"ReduceMean", 17, {-1}, 1, "ReduceMean[64x64]@Ascend910B2", {4, 16, 1}},
                        Case{"ReduceSum", 13, {1, 2}, 0, "ReduceSum[4x1024]@Ascend910B2", {4}},
                        Case{"ReduceSum", 13, {1}, 1,
                             "AveragePool[4x1x16x64]{divisor_override=1,kernel_shape=16,1}@Ascend910B2", {4, 1, 64}},
                        Case{"ReduceSum", 11, {-2}, 0,
                             "AveragePool[4x1x16x64]{divisor_override=1,kernel_shape=16,1}@Ascend910B2", {4, 64}},
                        Case{"ReduceL2", 17, {2}, 1, "ReduceL2[64x64]@Ascend910B2", {4, 16, 1}},
                        Case{"ReduceL2", 18, {-1}, 0, "ReduceL2[64x64]@Ascend910B2", {4, 16}},
                        Case{"ReduceMean", 17, {0, 1}, 0, "AveragePool[1x1x64x64]{kernel_shape=64,1}@Ascend910B2", {64}},
                        // PointNet's max pooling over its points, torch's amax; a minimum over the last axis.
                        Case{"ReduceMax", 17, {1}, 0, "MaxPool[4x1x16x64]{kernel_shape=16,1}@Ascend910B2", {4, 64}},
                        Case{"ReduceMax", 18, {-1}, 1, "ReduceMax[64x64]@Ascend910B2", {4, 16, 1}},
                        Case{"ReduceMin", 17, {2}, 0, "ReduceMin[64x64]@Ascend910B2", {4, 16}}}) {
    auto g = load(c.op, c.opset, c.axes, c.keepdims);
    ASSERT_TRUE(g.ok()) << c.key << ": " << Message(g);
    EXPECT_EQ(FindNode(*g, "pool/view")->outputs[0].desc.shape, c.out) << c.key;
    auto run = profile::RunGraph(*g, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(OpKeysByName(*run)["pool"], c.key);
  }
  const std::string l2 = Message(load("ReduceL2", 17, {1}, 1));
  EXPECT_NE(l2.find("node 'pool' (ReduceL2): a ReduceL2 over axes [1], before the last, is not supported (an L2 "
                    "norm over the last axes is"),
            std::string::npos)
      << l2;
  const std::string min = Message(load("ReduceMin", 17, {1}, 1));
  EXPECT_NE(min.find("node 'pool' (ReduceMin): a ReduceMin over axes [1], before the last, is not supported"),
            std::string::npos)
      << min;
  const std::string apart = Message(load("ReduceMean", 17, {0, 2}, 1));
  EXPECT_NE(apart.find("node 'pool' (ReduceMean): it reduces axes [0,2], which are not next to each other"),
            std::string::npos)
      << apart;
}

// MobileNetV3's activation and squeeze-and-excitation gate (torch's Hardswish and
// Hardsigmoid, opset 14 on) and a diffusion model's timestep embedding (sin and cos of the
// timesteps times constant frequencies, joined) are vector kernels of their names.
TEST(OnnxImport, HardSwishHardSigmoidSinAndCosAreKernels) {
  testing::ScratchDir dir;
  auto g = LoadChainModel(dir.Path("v3.onnx"), 17, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInput(graph, "feat", {2, 16, 8, 8});
    AddWeight(graph, "w", {16, 16, 1, 1});
    AddInput(graph, "t", {2, 1});
    AddWeight(graph, "freqs", {1, 32});
    WithInts(AddNode(n, "Conv", {"feat", "w"}, "c", "conv"), "kernel_shape", {1, 1});
    AddNode(n, "HardSwish", {"c"}, "a", "act");
    auto* gate = AddNode(n, "HardSigmoid", {"a"}, "g", "gate");
    auto* alpha = gate->add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(1.0f / 6);
    AddNode(n, "Mul", {"a", "g"}, "y", "scale");
    AddNode(n, "Mul", {"t", "freqs"}, "angles", "emb.angles");
    AddNode(n, "Sin", {"angles"}, "sin", "emb.sin");
    AddNode(n, "Cos", {"angles"}, "cos", "emb.cos");
    WithInt(AddNode(n, "Concat", {"sin", "cos"}, "emb", "emb.concat"), "axis", -1);
    graph.add_output()->set_name("emb");
  });
  ASSERT_TRUE(g.ok()) << Message(g);
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["act"], "HardSwish[256x8]@Ascend910B2");
  EXPECT_EQ(keys["gate"], "HardSigmoid[256x8]@Ascend910B2") << "alpha leaves the cost alone";
  EXPECT_EQ(keys["emb.angles"], "Mul[2x1,1x32]@Ascend910B2") << "an outer product";
  EXPECT_EQ(keys["emb.sin"], "Sin[2x32]@Ascend910B2");
  EXPECT_EQ(keys["emb.cos"], "Cos[2x32]@Ascend910B2");
}

// The activations of GAN discriminators and detectors (LeakyRelu, PRelu, Elu, Mish as
// Softplus, Tanh and Mul) and Abs, Log, Max and Min of two are element-wise kernels; a
// LeakyRelu after a convolution is its epilogue for `fuse`, as CANN fuses Conv2D+LeakyRelu.
TEST(OnnxImport, GanAndDetectorActivationsAreKernels) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const std::vector<std::string>& max_inputs) {
    return LoadChainModel(dir.Path("act" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
                            AddInput(graph, "feat", {2, 16, 8, 8});
                            AddWeight(graph, "w", {16, 16, 1, 1});
                            AddWeight(graph, "slope", {16, 1, 1});
                            WithInts(AddNode(n, "Conv", {"feat", "w"}, "c", "conv"), "kernel_shape", {1, 1});
                            auto* leaky = AddNode(n, "LeakyRelu", {"c"}, "l", "leaky");
                            auto* alpha = leaky->add_attribute();
                            alpha->set_name("alpha");
                            alpha->set_type(onnx::AttributeProto::FLOAT);
                            alpha->set_f(0.2f);
                            AddNode(n, "PRelu", {"l", "slope"}, "p", "prelu");
                            AddNode(n, "Elu", {"p"}, "e", "elu");
                            AddNode(n, "Softplus", {"e"}, "sp", "mish.softplus");
                            AddNode(n, "Tanh", {"sp"}, "th", "mish.tanh");
                            AddNode(n, "Mul", {"e", "th"}, "m", "mish");
                            AddNode(n, "Abs", {"m"}, "ab", "abs");
                            AddNode(n, "Log", {"ab"}, "lg", "log");
                            AddNode(n, "Max", max_inputs, "mx", "max");
                            AddNode(n, "Min", {"mx", "l"}, "y", "min");
                          });
  };
  auto g = load({"lg", "m"});
  ASSERT_TRUE(g.ok()) << Message(g);
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["leaky"], "LeakyRelu[256x8]@Ascend910B2") << "alpha leaves the cost alone";
  for (const char* op : {"Elu", "Softplus", "Abs", "Log"}) {
    EXPECT_EQ(std::count_if(keys.begin(), keys.end(), [&](const auto& k) { return k.second.rfind(std::string(op) + "[", 0) == 0; }), 1)
        << op;
  }
  EXPECT_EQ(keys["prelu"].rfind("PRelu[", 0), 0u) << keys["prelu"];
  EXPECT_EQ(keys["max"].rfind("Max[", 0), 0u) << keys["max"];
  EXPECT_EQ(keys["min"].rfind("Min[", 0), 0u) << keys["min"];
  std::vector<std::string> conv_chain;
  for (const FusionChain& chain : FindFusionChains(*g)) {
    if (g->nodes[static_cast<size_t>(chain.head)].name != "conv") continue;
    for (int s : chain.steps) conv_chain.push_back(g->nodes[static_cast<size_t>(s)].op_type);
  }
  EXPECT_EQ(conv_chain, (std::vector<std::string>{"LeakyRelu"})) << "the epilogue `fuse` may take";
  const std::string three = Message(load({"lg", "m", "l"}));
  EXPECT_NE(three.find("Max of 3 inputs: only an element-wise maximum of two is supported"), std::string::npos) << three;
}

// YOLOv8's distribution focal loss head: x.view(b, 4, 16, a).transpose(2, 1).softmax(1),
// then a 1x1 convolution over the 16 bins. From opset 13 a Softmax over an axis that is not
// the last is one Softmax kernel over that axis moved last, between two views; before 13 a
// Softmax flattens x at its axis, and one not over the last axis is refused, saying why.
TEST(OnnxImport, ASoftmaxOverAnAxisNotTheLastIsASoftmaxBetweenViews) {
  testing::ScratchDir dir;
  auto load = [&](int opset) {
    return LoadChainModel(dir.Path("dfl" + std::to_string(opset) + ".onnx"), opset,
                          [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "box", {2, 64, 8400});
                            AddInts(g, "bins", std::vector<int64_t>{2, 4, 16, 8400});
                            AddWeight(g, "proj", {1, 16, 1, 1});
                            AddNode(n, "Reshape", {"box", "bins"}, "b4", "dfl.view");
                            WithInts(AddNode(n, "Transpose", {"b4"}, "bt", "dfl.transpose"), "perm", {0, 2, 1, 3});
                            WithInt(AddNode(n, "Softmax", {"bt"}, "p", "dfl.softmax"), "axis", 1);
                            AddNode(n, "Conv", {"p", "proj"}, "y", "dfl.conv");
                          });
  };
  auto g = load(17);
  ASSERT_TRUE(g.ok()) << Message(g);
  const GraphNode* softmax = FindNode(*g, "dfl.softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->op_type, "Softmax");
  EXPECT_EQ(softmax->outputs[0].desc.shape, (std::vector<int64_t>{2, 4, 8400, 16})) << "the bins last";
  EXPECT_EQ(FindNode(*g, "dfl.softmax/view")->outputs[0].desc.shape, (std::vector<int64_t>{2, 16, 4, 8400}));
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(OpKeysByName(*run)["dfl.softmax"], "Softmax[67200x16]@Ascend910B2");
  const std::string old = Message(load(11));
  EXPECT_NE(old.find("dfl.softmax") , std::string::npos) << old;
  EXPECT_NE(old.find("export with opset 13 or later"), std::string::npos) << old;
}

// An int8 model in onnxruntime's QDQ format: x quantized, then dequantized into a MatMul
// whose weight is int8 data dequantized too. The MatMul reads both as int8 and writes
// float16 (its dequant in the fixpipe), as ATC runs it: the QuantizeLinear a Cast to int8,
// each dequantize a view of its int8 input. A dequantize read by anything but such a cube
// op (here the residual Add) is a Cast back to float.
TEST(OnnxImport, AQdqMatMulIsAnInt8MatMulWritingFloat16) {
  testing::ScratchDir dir;
  auto g = LoadChainModel(
      dir.Path("qdq.onnx"), 17,
      [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
        AddScalar(graph, "s", 0.05f);
        auto* zp = graph.add_initializer();
        zp->set_name("zp");
        zp->set_data_type(onnx::TensorProto::INT8);
        zp->add_int32_data(0);
        auto* w = graph.add_initializer();
        w->set_name("w");
        w->set_data_type(onnx::TensorProto::INT8);
        w->add_dims(64);
        w->add_dims(64);
        AddNode(n, "QuantizeLinear", {"x", "s", "zp"}, "xq", "x.quant");
        AddNode(n, "DequantizeLinear", {"xq", "s", "zp"}, "xd", "x.dequant");
        AddNode(n, "DequantizeLinear", {"w", "s", "zp"}, "wd", "w.dequant");
        AddNode(n, "MatMul", {"xd", "wd"}, "m", "proj");
        AddNode(n, "QuantizeLinear", {"m", "s", "zp"}, "mq", "m.quant");
        AddNode(n, "DequantizeLinear", {"mq", "s", "zp"}, "md", "m.dequant");
        AddNode(n, "Add", {"md", "x"}, "y", "residual");
      },
      false, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(g.ok()) << Message(g);
  std::vector<std::string> kernels;
  for (const auto& node : g->nodes) {
    if (!node.IsView()) kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"x.quant Cast", "proj BatchMatMul", "m.quant Cast", "m.dequant Cast",
                                                "residual Add"}));
  EXPECT_EQ(FindNode(*g, "x.dequant")->outputs[0].desc.dtype, "int8");
  EXPECT_EQ(FindNode(*g, "proj")->outputs[0].desc.dtype, "float16");
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["proj"], "MatMul[int8:64x64,int8:64x64]{out_dtype=float16}@Ascend910B2") << "x [4, 16, 64] as rows";
  EXPECT_EQ(keys["x.quant"].rfind("Cast[", 0), 0u) << keys["x.quant"];
  EXPECT_NE(keys["x.quant"].find("dst_type=int8"), std::string::npos) << keys["x.quant"];
  // fuse takes the quantize of the MatMul's output as its epilogue's last step.
  std::vector<std::string> epilogues;
  for (const FusionChain& chain : FindFusionChains(*g)) epilogues.push_back(FusedEpilogue(*g, Fusion{chain, chain.steps.size()}));
  EXPECT_EQ(epilogues, (std::vector<std::string>{"Quantize"}));

  // A convolution with its int32 bias dequantized, as quantize_static writes it: the bias
  // is computed at compile time, a float16 input of the int8 Conv2D.
  auto qdq_conv = [&](const std::string& file, std::vector<int64_t> filter, int64_t group) {
    return LoadChainModel(
      dir.Path(file), 17,
      [filter, group](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
        AddInput(graph, "img", {2, 8, 16, 16}, onnx::TensorProto::FLOAT);
        AddScalar(graph, "s", 0.05f);
        auto* zp = graph.add_initializer();
        zp->set_name("zp");
        zp->set_data_type(onnx::TensorProto::UINT8);  // quantize_static's default activation type
        zp->add_int32_data(128);
        for (const auto& [name, type, dims] :
             {std::tuple<std::string, int, std::vector<int64_t>>{"w", onnx::TensorProto::INT8, filter},
              {"b", onnx::TensorProto::INT32, {filter[0]}}}) {
          auto* t = graph.add_initializer();
          t->set_name(name);
          t->set_data_type(type);
          for (int64_t d : dims) t->add_dims(d);
        }
        AddNode(n, "QuantizeLinear", {"img", "s", "zp"}, "iq", "img.quant");
        AddNode(n, "DequantizeLinear", {"iq", "s", "zp"}, "id", "img.dequant");
        AddNode(n, "DequantizeLinear", {"w", "s"}, "wd", "w.dequant");
        AddNode(n, "DequantizeLinear", {"b", "s"}, "bd", "b.dequant");
        auto* conv = WithInts(WithInts(AddNode(n, "Conv", {"id", "wd", "bd"}, "c", "conv"), "kernel_shape", {3, 3}),
                              "pads", {1, 1, 1, 1});
        if (group > 1) WithInt(conv, "group", group);
        AddNode(n, "Relu", {"c"}, "y", "act");
      },
      false, onnx::TensorProto::FLOAT);
  };
  auto conv = qdq_conv("qdq_conv.onnx", {16, 8, 3, 3}, 1);
  ASSERT_TRUE(conv.ok()) << Message(conv);
  auto conv_run = profile::RunGraph(*conv, testing::Soc910B2());
  ASSERT_TRUE(conv_run.ok()) << conv_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*conv_run)["conv"],
            "Conv2D[int8:2x8x16x16,int8:16x8x3x3,16]{out_dtype=float16,pads=1,1,1,1}@Ascend910B2");

  // A depthwise one (MobileNet's) is the int8 DepthwiseConv2D on the vector unit: it reads
  // the int8 data, not a Cast kernel's float16 of it, and writes float16.
  auto depthwise = qdq_conv("qdq_depthwise.onnx", {8, 1, 3, 3}, 8);
  ASSERT_TRUE(depthwise.ok()) << Message(depthwise);
  std::vector<std::string> dw_kernels;
  for (const auto& node : depthwise->nodes) {
    if (!node.IsView()) dw_kernels.push_back(node.name + " " + node.op_type);
  }
  EXPECT_EQ(dw_kernels, (std::vector<std::string>{"img.quant Cast", "conv DepthwiseConv2D", "act Relu"}));
  EXPECT_EQ(FindNode(*depthwise, "conv")->outputs[0].desc.dtype, "float16");
  auto dw_run = profile::RunGraph(*depthwise, testing::Soc910B2());
  ASSERT_TRUE(dw_run.ok()) << dw_run.status().ToString();
  EXPECT_EQ(OpKeysByName(*dw_run)["conv"], "DepthwiseConv2D[int8:2x8x16x16,int8:8x1x3x3,8]{pads=1,1,1,1}@Ascend910B2");
}

// A QDQ model's attention, as quantize_static writes BERT's: q, k and v quantized for
// the int8 BatchMatMuls, the softmax output quantized for P x v. `fuse` makes it one int8
// FlashAttention (CANN's quantized one, P quantized on the vector cores) writing float16,
// which reads half the bytes of the float16 one and packs int8 fractals on the cube.
TEST(OnnxImport, AQdqAttentionIsOneInt8FlashAttention) {
  testing::ScratchDir dir;
  // With `dense`, the heads gathered back ([b, s, h, d] viewed [b, s, h*d]) and quantized
  // for the int8 output projection.
  auto load = [&](const std::string& file, bool qdq, bool dense = false) {
    return LoadChainModel(
        dir.Path(file), 17,
        [qdq, dense](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
          for (const auto& [name, shape] : {std::pair<const char*, std::vector<int64_t>>{"q", {8, 12, 512, 64}},
                                            {"kt", {8, 12, 64, 512}}, {"v", {8, 12, 512, 64}}}) {
            AddInput(g, name, shape, onnx::TensorProto::FLOAT);
          }
          AddScalar(g, "s", 0.05f);
          AddScalar(g, "scale", 8.0f);
          auto* zp = g.add_initializer();
          zp->set_name("zp");
          zp->set_data_type(onnx::TensorProto::UINT8);
          zp->add_int32_data(128);
          auto dq = [&](const std::string& t) {
            if (!qdq) return t;
            AddNode(n, "QuantizeLinear", {t, "s", "zp"}, t + "q", t + ".quant");
            AddNode(n, "DequantizeLinear", {t + "q", "s", "zp"}, t + "d", t + ".dequant");
            return t + "d";
          };
          const std::string q = dq("q"), kt = dq("kt"), v = dq("v");
          AddNode(n, "MatMul", {q, kt}, "sc", "attn.scores");
          AddNode(n, "Div", {"sc", "scale"}, "scaled", "attn.scale");
          WithInt(AddNode(n, "Softmax", {"scaled"}, "p", "attn.softmax"), "axis", -1);
          AddNode(n, "MatMul", {dq("p"), v}, dense ? "ctx" : "y", "attn.context");
          if (!dense) return;
          WithInts(AddNode(n, "Transpose", {"ctx"}, "ct", "attn.heads"), "perm", {0, 2, 1, 3});
          AddInts(g, "merged", {8, 512, 768});
          AddNode(n, "Reshape", {"ct", "merged"}, "cr", "attn.merge");
          auto* w = g.add_initializer();
          w->set_name("w");
          w->set_data_type(onnx::TensorProto::INT8);
          for (int64_t d : {768, 768}) w->add_dims(d);
          auto* zw = g.add_initializer();
          zw->set_name("zw");
          zw->set_data_type(onnx::TensorProto::INT8);
          zw->add_int32_data(0);
          AddNode(n, "DequantizeLinear", {"w", "s", "zw"}, "wd", "w.dequant");
          AddNode(n, "MatMul", {dq("cr"), "wd"}, "y", "attn.dense");
        },
        false, onnx::TensorProto::FLOAT);
  };
  auto int8 = load("qdq_attention.onnx", true);
  auto fp16 = load("attention.onnx", false);
  ASSERT_TRUE(int8.ok()) << Message(int8);
  ASSERT_TRUE(fp16.ok()) << Message(fp16);
  const auto found = FindAttentionFusions(*int8);
  ASSERT_EQ(found.size(), 1u) << "the quantize between the softmax and P x v is the FlashAttention's own";
  ASSERT_GE(found[0].quantize, 0);
  EXPECT_EQ(int8->nodes[static_cast<size_t>(found[0].quantize)].name, "p.quant");
  EXPECT_EQ(AttentionNodeName(*int8, found[0]), "attn.scores+attn.scale+attn.softmax+p.quant+attn.context");
  auto fused = ApplyAttentionFusions(*int8, found, testing::Soc910B2());
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  auto fused16 = ApplyAttentionFusions(*fp16, FindAttentionFusions(*fp16), testing::Soc910B2());
  ASSERT_TRUE(fused16.ok()) << fused16.status().ToString();
  auto run = profile::RunGraph(*fused, testing::Soc910B2());
  auto run16 = profile::RunGraph(*fused16, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(run16.ok()) << run16.status().ToString();
  auto attention = [](const profile::RunProfile& r) {
    for (const auto& op : r.ops) {
      if (op.op_type == "FlashAttention") return op;
    }
    return profile::OpRecord{};
  };
  const profile::OpRecord fa = attention(*run), fa16 = attention(*run16);
  EXPECT_EQ(fa.op_key.rfind("FlashAttention[int8:8x12x512x64,int8:8x12x64x512,int8:8x12x512x64,", 0), 0u) << fa.op_key;
  EXPECT_EQ(fa.output_dtypes, "DT_FLOAT16");
  EXPECT_EQ(fa16.op_key.rfind("FlashAttention[8x12x512x64,", 0), 0u) << fa16.op_key;
  // Half the bytes of q, k and v, and half the cube cycles; the softmax is the same.
  EXPECT_LT(fa.estimate.compulsory_bytes, 0.7 * fa16.estimate.compulsory_bytes);
  EXPECT_LT(fa.duration_us, fa16.duration_us);

  // Its output quantized for the output projection, through the views that gather the
  // heads: `fuse` gives the FlashAttention that quantize too, and it writes int8.
  auto dense = load("qdq_attention_dense.onnx", true, true);
  ASSERT_TRUE(dense.ok()) << Message(dense);
  auto chosen = profile::ChooseFusions(*dense, testing::Soc910B2());
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  std::vector<std::string> kernels;
  for (const auto& node : chosen->fused.nodes) {
    if (!node.IsView()) kernels.push_back(node.op_type + (node.attrs.count("epilogue") ? " " + node.attrs.at("epilogue") : ""));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"Cast", "Cast", "Cast", "FlashAttention Quantize", "BatchMatMul"}))
      << "q, k and v quantized, the attention writing int8, the projection";
  const GraphNode* quantized = FindNode(chosen->fused, "attn.scores+attn.scale+attn.softmax+p.quant+attn.context+cr.quant");
  ASSERT_NE(quantized, nullptr);
  EXPECT_EQ(quantized->outputs[0].desc.dtype, "int8");
}

// MobileNet's ReLU6 as torch exports it: Clip(x, 0, 6) with constant bounds (inputs from
// opset 11, attributes before) is a Clip kernel reading x alone; bounds computed from a
// tensor are refused.
TEST(OnnxImport, AClipWithConstantBoundsIsAClipKernel) {
  testing::ScratchDir dir;
  auto relu6 = LoadChainModel(dir.Path("relu6.onnx"), 17, [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddScalar(g, "zero", 0.0f);
    AddScalar(g, "six", 6.0f);
    AddNode(n, "Clip", {"x", "zero", "six"}, "y", "relu6");
  }, false, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(relu6.ok()) << Message(relu6);
  const GraphNode* clip = FindNode(*relu6, "relu6");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->op_type, "Clip");
  EXPECT_EQ(clip->inputs, (std::vector<std::string>{"x"})) << "the bounds are the op's data";
  EXPECT_TRUE(relu6->weights.empty());
  auto run = profile::RunGraph(*relu6, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->ops[0].op_key, "Clip[64x64]@Ascend910B2");
  auto old = LoadChainModel(dir.Path("relu6_opset6.onnx"), 6, [](onnx::GraphProto&, std::vector<onnx::NodeProto>& n) {
    auto* c = AddNode(n, "Clip", {"x"}, "y", "relu6");
    for (auto [name, value] : {std::pair{"min", 0.0f}, std::pair{"max", 6.0f}}) {
      auto* a = c->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(value);
    }
  });
  ASSERT_TRUE(old.ok()) << Message(old);
  EXPECT_EQ(FindNode(*old, "relu6")->op_type, "Clip");
  const std::string computed = Message(LoadChainModel(dir.Path("clip_tensor.onnx"), 17,
                                                      [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "bound", {1});
    AddNode(n, "Relu", {"bound"}, "low", "low");
    AddNode(n, "Clip", {"x", "low"}, "y", "clip");
  }));
  EXPECT_NE(computed.find("node 'clip' (Clip): Clip's min is computed from a tensor: export it as a constant"),
            std::string::npos)
      << computed;
}

// F.silu as PyTorch exports it (Llama's MLP, EfficientNet): Sigmoid(x) and x times it,
// either way round, fold into one Silu kernel named as the Mul; a sigmoid something else
// also reads, or a Mul by another tensor, is left as it is.
TEST(OnnxImport, ASiluWrittenOutFoldsIntoOneKernel) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](bool x_first, bool sigmoid_read_twice, bool times_x) {
    return LoadChainModel(dir.Path("silu" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "other", {4, 16, 64});
                            AddNode(n, "Sigmoid", {"x"}, "s", "act.sigmoid");
                            const std::string by = times_x ? "x" : "other";
                            AddNode(n, "Mul", x_first ? std::vector<std::string>{by, "s"} : std::vector<std::string>{"s", by},
                                    sigmoid_read_twice ? "m" : "y", "act.mul");
                            if (sigmoid_read_twice) AddNode(n, "Add", {"m", "s"}, "y", "also_reads_s");
                          });
  };
  for (bool x_first : {true, false}) {
    auto g = load(x_first, false, true);
    ASSERT_TRUE(g.ok()) << Message(g);
    const GraphNode* silu = FindNode(*g, "act.mul");
    ASSERT_NE(silu, nullptr);
    EXPECT_EQ(silu->op_type, "Silu");
    EXPECT_EQ(silu->inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(FindNode(*g, "act.sigmoid"), nullptr);
    auto run = profile::RunGraph(*g, testing::Soc910B2());
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_EQ(run->ops.size(), 1u);
    EXPECT_EQ(run->ops[0].op_key, "Silu[64x64]@Ascend910B2");
  }
  auto shared = load(true, true, true);
  ASSERT_TRUE(shared.ok()) << Message(shared);
  EXPECT_EQ(FindNode(*shared, "act.sigmoid")->op_type, "Sigmoid") << "its output is read outside the pair";
  EXPECT_EQ(FindNode(*shared, "act.mul")->op_type, "Mul");
  auto gated = load(true, false, false);
  ASSERT_TRUE(gated.ok()) << Message(gated);
  EXPECT_EQ(FindNode(*gated, "act.sigmoid")->op_type, "Sigmoid") << "a gate by another tensor is no SiLU";
}

// MobileNetV2's inverted residual as torch exports it (BatchNorms folded): a 1x1 expand,
// ReLU6, a depthwise 3x3 (group = channels, filter [C, 1, 3, 3], with the folded bias),
// ReLU6, a 1x1 projection. The depthwise Conv imports as a DepthwiseConv2D, a vector op;
// a Conv with fewer groups than channels stays a grouped Conv2D.
TEST(OnnxImport, ADepthwiseConvImportsAsADepthwiseConv2d) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int64_t group) {
    return LoadChainModel(dir.Path("mbv2_" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            AddInput(g, "img", {2, 8, 16, 16});
                            AddScalar(g, "zero", 0.0f);
                            AddScalar(g, "six", 6.0f);
                            AddWeight(g, "w_expand", {48, 8, 1, 1});
                            AddWeight(g, "w_dw", {48, 48 / group, 3, 3});
                            AddWeight(g, "b_dw", {48});
                            AddWeight(g, "w_project", {8, 48, 1, 1});
                            WithInts(AddNode(n, "Conv", {"img", "w_expand"}, "e", "block.expand"), "kernel_shape", {1, 1});
                            AddNode(n, "Clip", {"e", "zero", "six"}, "e6", "block.expand_relu6");
                            auto* dw = AddNode(n, "Conv", {"e6", "w_dw", "b_dw"}, "d", "block.depthwise");
                            WithInt(WithInts(WithInts(WithInts(dw, "kernel_shape", {3, 3}), "strides", {2, 2}), "pads",
                                             {1, 1, 1, 1}),
                                    "group", group);
                            AddNode(n, "Clip", {"d", "zero", "six"}, "d6", "block.depthwise_relu6");
                            WithInts(AddNode(n, "Conv", {"d6", "w_project"}, "y", "block.project"), "kernel_shape", {1, 1});
                          });
  };
  auto g = load(48);
  ASSERT_TRUE(g.ok()) << Message(g);
  const GraphNode* dw = FindNode(*g, "block.depthwise");
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->op_type, "DepthwiseConv2D");
  EXPECT_EQ(dw->inputs, (std::vector<std::string>{"e6", "w_dw", "b_dw"}));
  EXPECT_FALSE(dw->attrs.contains("groups"));
  EXPECT_EQ(dw->outputs[0].desc.shape, (std::vector<int64_t>{2, 48, 8, 8}));
  EXPECT_EQ(FindNode(*g, "block.expand")->op_type, "Conv2D");
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::map<std::string, std::string> keys = OpKeysByName(*run);
  EXPECT_EQ(keys["block.depthwise"],
            "DepthwiseConv2D[2x48x16x16,48x1x3x3,48]{pads=1,1,1,1,strides=2,2}@Ascend910B2");
  // Two groups of 24 channels: a grouped convolution, still the cube's.
  auto grouped = load(2);
  ASSERT_TRUE(grouped.ok()) << Message(grouped);
  EXPECT_EQ(FindNode(*grouped, "block.depthwise")->op_type, "Conv2D");
  EXPECT_EQ(FindNode(*grouped, "block.depthwise")->attrs.at("groups"), "2");
}

// GQA's repeat_kv as torch 1.13 exports it at fixed shapes: Unsqueeze, an Expand whose
// shape is arithmetic on constants (ConstantOfShape, Mul, Equal, Where), Reshape. The
// arithmetic folds, the Expand is a broadcast view, and the attention's BatchMatMul reads
// the key at the query heads' count. Here x [4, 16, 64] is the key of 4 heads, repeated
// twice, and the Reshape's shape is written with the folder's other ops.
TEST(OnnxImport, GroupedKeyValueHeadsExpandAsAViewAfterTheirShapeArithmeticFolds) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const WriteNodes& write) {
    return LoadChainModel(dir.Path("gqa" + std::to_string(file++) + ".onnx"), 17, write);
  };
  auto repeat_kv = [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "q", {8, 16, 64});
    AddInts(g, "at1", {1});
    AddNode(n, "Unsqueeze", {"x", "at1"}, "k1", "kv.unsqueeze");  // [4, 1, 16, 64]
    AddInts(g, "want", {4, 2, 16, 64});
    AddInts(g, "rank", {4});
    auto* ones = AddNode(n, "ConstantOfShape", {"rank"}, "ones", "kv.ones");
    WithFill(ones, onnx::TensorProto::INT64, 1);
    AddInts(g, "minus1", {-1}, true);
    AddNode(n, "Mul", {"ones", "minus1"}, "neg", "kv.neg");
    AddNode(n, "Equal", {"want", "neg"}, "is_neg", "kv.equal");
    AddNode(n, "Where", {"is_neg", "ones", "want"}, "shape", "kv.where");
    AddNode(n, "Expand", {"k1", "shape"}, "k2", "kv.expand");  // [4, 2, 16, 64]
    // [8, 16, 64], written as a Shape's output turned into the reshape's target is:
    AddInts(g, "kv_shape", {4, 16, 64});
    AddInts(g, "zero", {0}, true);
    AddInts(g, "two", {2}, true);
    AddInts(g, "one", {1}, true);
    AddInts(g, "tail", {1, 2});
    AddNode(n, "Gather", {"kv_shape", "zero"}, "kv", "s.kv");                  // 4
    AddNode(n, "Mul", {"kv", "two"}, "heads", "s.heads");                      // 8
    AddNode(n, "Unsqueeze", {"heads", "zero_axis"}, "heads1", "s.heads1");     // [8]
    AddInts(g, "zero_axis", {0});
    AddNode(n, "Gather", {"kv_shape", "tail"}, "rest", "s.rest");              // [16, 64]
    auto* cat = AddNode(n, "Concat", {"heads1", "rest"}, "s0", "s.concat");     // [8, 16, 64]
    WithInt(cat, "axis", 0);
    AddNode(n, "Add", {"s0", "one"}, "s1", "s.add");
    AddNode(n, "Sub", {"s1", "one"}, "s2", "s.sub");
    AddNode(n, "Div", {"s2", "one"}, "s3", "s.div");
    auto* narrow = AddNode(n, "Cast", {"s3"}, "s4", "s.cast");
    WithInt(narrow, "to", onnx::TensorProto::INT64);
    AddNode(n, "Unsqueeze", {"s4", "zero_axis"}, "s5", "s.unsqueeze");        // [1, 3]
    AddNode(n, "Squeeze", {"s5", "zero_axis"}, "s6", "s.squeeze");            // [3]
    AddNode(n, "Reshape", {"k2", "s6"}, "k", "kv.reshape");                   // [8, 16, 64]
    auto* t = AddNode(n, "Transpose", {"k"}, "kt", "k.transpose");
    WithInts(t, "perm", {0, 2, 1});
    AddNode(n, "MatMul", {"q", "kt"}, "y", "scores");
  };
  auto r = load(repeat_kv);
  ASSERT_TRUE(r.ok()) << Message(r);
  std::vector<std::string> kernels;
  for (const auto& node : r->nodes) {
    if (!node.IsView()) kernels.push_back(node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"Transpose", "BatchMatMul"})) << "the shape arithmetic is folded";
  ASSERT_NE(FindNode(*r, "kv.expand"), nullptr);
  EXPECT_EQ(FindNode(*r, "kv.expand")->outputs[0].desc.shape, (std::vector<int64_t>{4, 2, 16, 64}));
  EXPECT_EQ(FindNode(*r, "kv.reshape")->outputs[0].desc.shape, (std::vector<int64_t>{8, 16, 64}));
  EXPECT_TRUE(r->weights.empty()) << "shape constants are not weights";
  auto run = profile::RunGraph(*r, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ops.size(), 2u);
  EXPECT_EQ(run->ops[1].op_key, "BatchMatMul[8x16x64,8x64x16]@Ascend910B2");
  // Buffers: the key's 4 heads x, q, the transposed key and the scores, in fp16. The
  // expand and the reshape copy nothing.
  EXPECT_EQ(run->memory.no_reuse_bytes, (4 * 16 * 64 + 8 * 16 * 64 + 8 * 64 * 16 + 8 * 16 * 16) * 2);

  // An Expand whose shape is a tensor the graph computes is refused saying what to export.
  auto computed = load([](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "runtime_shape", {3}, onnx::TensorProto::INT64);
    AddNode(n, "Expand", {"x", "runtime_shape"}, "y", "kv.expand");
  });
  EXPECT_NE(Message(computed).find("node 'kv.expand' (Expand): Expand's shape is computed from a tensor: export with "
                                   "fixed shapes"),
            std::string::npos)
      << Message(computed);
  // Arithmetic that overflows is not folded (INT64_MIN / -1 trapped the process): the node
  // stays, refused by name (Div), or an index arithmetic kernel whose output the Reshape,
  // then, cannot take as its shape.
  for (const char* op : {"Div", "Mul", "Add", "Sub"}) {
    auto overflow = load([&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      const bool sub = std::string(op) == "Sub";
      AddInts(g, "big", {std::string(op) == "Div" || sub ? std::numeric_limits<int64_t>::min()
                                                         : std::numeric_limits<int64_t>::max()});
      AddInts(g, "by", {std::string(op) == "Div" ? -1 : sub ? 1 : 2});
      AddNode(n, op, {"big", "by"}, "shape", "big.arith");
      AddNode(n, "Reshape", {"x", "shape"}, "y", "view");
    });
    EXPECT_NE(Message(overflow).find(std::string(op) == "Div" ? "node 'big.arith'" : "node 'view' (Reshape)"),
              std::string::npos)
        << op << ": " << Message(overflow);
  }
}

// A constant whose values are a causal mask (GPT-2's tril buffer applied by Where, a float
// mask of 0 and -inf added to the scores; one that masks more below, as a padding mask
// folded in does) is listed in Graph::causal_masks; one that keeps a later key is not. An example exporter that drops the values names its masks in the
// file's metadata instead; a name there that is no weight or input is an error.
TEST(OnnxImport, ACausalMaskIsFoundFromItsValuesOrNamedInTheFilesMetadata) {
  testing::ScratchDir dir;
  int file = 0;
  // [1, 16, 16] with kept(i, j) = j <= i + shift, and key 3 masked for all with `padding`.
  auto mask = [](onnx::GraphProto& g, int type, int shift, float masked, bool padding) {
    auto* t = g.add_initializer();
    t->set_name("mask");
    t->set_data_type(type);
    for (int64_t d : {1, 16, 16}) t->add_dims(d);
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        const bool kept = j <= i + shift && !(padding && j == 3);
        if (type == onnx::TensorProto::BOOL) {
          t->mutable_raw_data()->push_back(kept ? '\1' : '\0');
        } else {
          t->add_float_data(kept ? 0.0f : masked);
        }
      }
    }
    return t;
  };
  auto load = [&](int type, int shift, float masked, bool padding = false) {
    return LoadChainModel(dir.Path("causal_" + std::to_string(file++) + ".onnx"), 17,
                          [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
                            auto* t = g.add_initializer();
                            t->set_name("wt");
                            t->set_data_type(onnx::TensorProto::FLOAT16);
                            for (int64_t d : {4, 64, 16}) t->add_dims(d);
                            AddNode(n, "MatMul", {"x", "wt"}, "scores", "scores");  // [4, 16, 16]
                            mask(g, type, shift, masked, padding);
                            if (type == onnx::TensorProto::BOOL) {
                              auto* fill = g.add_initializer();
                              fill->set_name("fill");
                              fill->set_data_type(onnx::TensorProto::FLOAT16);
                              fill->add_int32_data(0xfbff);
                              AddNode(n, "Where", {"mask", "scores", "fill"}, "y", "mask.where");
                            } else {
                              AddNode(n, "Add", {"scores", "mask"}, "y", "mask.add");
                            }
                          },
                          false, onnx::TensorProto::FLOAT16, {});
  };
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(load(onnx::TensorProto::BOOL, 0, 0).value().causal_masks, (std::vector<std::string>{"mask"}));
  EXPECT_EQ(load(onnx::TensorProto::FLOAT, 0, -inf).value().causal_masks, (std::vector<std::string>{"mask"}));
  EXPECT_EQ(load(onnx::TensorProto::FLOAT, 0, -3.4e38f).value().causal_masks, (std::vector<std::string>{"mask"}));
  EXPECT_EQ(load(onnx::TensorProto::BOOL, -1, 0).value().causal_masks, (std::vector<std::string>{"mask"}))
      << "its own key masked too";
  EXPECT_EQ(load(onnx::TensorProto::FLOAT, 0, -inf, true).value().causal_masks, (std::vector<std::string>{"mask"}))
      << "a padded key masked too";
  EXPECT_TRUE(load(onnx::TensorProto::BOOL, 1, 0).value().causal_masks.empty()) << "one key too many";
  EXPECT_TRUE(load(onnx::TensorProto::FLOAT, 0, -1).value().causal_masks.empty()) << "-1 only lowers the score";

  // The bool mask's file with its values dropped, as the example exporters save it, and
  // the metadata they write.
  auto with_metadata = [&](const std::string& names) {
    const std::string path = dir.Path("causal_0.onnx");  // the first: the bool mask
    onnx::ModelProto m;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(m.ParseFromIstream(&in));
    in.close();
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.name() == "mask") t.clear_raw_data();
    }
    if (!names.empty()) {
      auto* entry = m.add_metadata_props();
      entry->set_key(kCausalMasksMetadataKey);
      entry->set_value(names);
    }
    const std::string out = dir.Path("dropped.onnx");
    std::ofstream f(out, std::ios::binary);
    EXPECT_TRUE(m.SerializeToOstream(&f));
    f.close();
    return GraphFromOnnxFile(out, {});
  };
  EXPECT_TRUE(with_metadata("").value().causal_masks.empty()) << "no values, no metadata";
  EXPECT_EQ(with_metadata("mask").value().causal_masks, (std::vector<std::string>{"mask"}));
  const std::string bad = Message(with_metadata("mask,nope"));
  EXPECT_NE(bad.find("metadata_props 'tunefleet.causal_masks': causal_masks: 'nope' is no tensor of the graph"),
            std::string::npos)
      << bad;
}

// GPT-2's attention as torch 1.13 exports it at fixed shapes: one c_attn MatMul, a Split
// into q, k and v, the causal mask a Slice of a bool buffer, applied by Where with a
// fill value. Split and Slice are window views of their input (nothing is copied: PyTorch's
// split and slicing are views too), Where is a select kernel whose condition is carried
// as int8.
TEST(OnnxImport, SplitAndSliceAreWindowViewsAndWhereSelects) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const WriteNodes& write) {
    return LoadChainModel(dir.Path("gpt2_" + std::to_string(file++) + ".onnx"), 17, write);
  };
  auto initializer = [](onnx::GraphProto& g, const std::string& name, int type, std::vector<int64_t> dims) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  };
  auto attention = [&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    initializer(g, "w_qkv", onnx::TensorProto::FLOAT16, {64, 192});
    AddNode(n, "MatMul", {"x", "w_qkv"}, "qkv", "c_attn");  // [4, 16, 192]
    AddInts(g, "split", {64, 64, 64});
    auto* split = AddNode(n, "Split", {"qkv", "split"}, "q", "qkv.split");
    split->add_output("k");
    split->add_output("v");
    WithInt(split, "axis", -1);
    auto* t = AddNode(n, "Transpose", {"k"}, "kt", "k.transpose");
    WithInts(t, "perm", {0, 2, 1});
    AddNode(n, "MatMul", {"q", "kt"}, "scores", "scores");  // [4, 16, 16]
    initializer(g, "bias", onnx::TensorProto::BOOL, {1, 32, 32})->set_raw_data(std::string(32 * 32, '\1'));
    AddInts(g, "starts", {16, 0});
    AddInts(g, "ends", {32, -16});
    AddInts(g, "axes", {1, -1});
    AddNode(n, "Slice", {"bias", "starts", "ends", "axes"}, "causal", "mask.slice");  // [1, 16, 16]
    auto* fill = initializer(g, "fill", onnx::TensorProto::FLOAT16, {});
    fill->add_int32_data(0xfbff);  // -65504
    AddNode(n, "Where", {"causal", "scores", "fill"}, "masked", "mask.where");
    auto* softmax = AddNode(n, "Softmax", {"masked"}, "p", "softmax");
    WithInt(softmax, "axis", -1);
    AddNode(n, "MatMul", {"p", "v"}, "y", "context");  // [4, 16, 64]
  };
  auto r = load(attention);
  ASSERT_TRUE(r.ok()) << Message(r);
  std::vector<std::string> kernels;
  for (const auto& node : r->nodes) {
    if (!node.IsView()) kernels.push_back(node.op_type);
  }
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"BatchMatMul", "Transpose", "BatchMatMul", "Where", "Softmax", "BatchMatMul"}));
  // One view per Split output, each starting where the one before ended.
  for (const auto& [name, starts, out] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"qkv.split", "0,0,0", "q"}, {"qkv.split.1", "0,0,64", "k"}, {"qkv.split.2", "0,0,128", "v"}}) {
    const GraphNode* view = FindNode(*r, name);
    ASSERT_NE(view, nullptr) << name;
    EXPECT_TRUE(view->IsView()) << name;
    EXPECT_EQ(view->inputs, (std::vector<std::string>{"qkv"})) << name;
    EXPECT_EQ(view->attrs.at(kSliceStartsAttr), starts) << name;
    EXPECT_EQ(view->outputs[0].name, out);
    EXPECT_EQ(view->outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64})) << name;
  }
  const GraphNode* mask = FindNode(*r, "mask.slice");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->attrs.at(kSliceStartsAttr), "0,16,0") << "negative axes and ends counted from the end";
  EXPECT_EQ(mask->outputs[0].desc.shape, (std::vector<int64_t>{1, 16, 16}));
  EXPECT_EQ(mask->outputs[0].desc.dtype, "int8") << "a bool is one byte";
  EXPECT_EQ(FindNode(*r, "mask.where")->inputs, (std::vector<std::string>{"causal", "scores", "fill"}));
  auto run = profile::RunGraph(*r, testing::Soc910B2());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ops.size(), 6u);
  EXPECT_EQ(run->ops[1].op_key, "Transpose[4x16x64]@Ascend910B2") << "k read at its window's shape";
  EXPECT_EQ(run->ops[3].op_key.rfind("Where[", 0), 0u) << run->ops[3].op_key;
  EXPECT_NE(run->ops[3].op_key.find("int8"), std::string::npos) << run->ops[3].op_key;
  // Buffers: the weights (w_qkv, the bool buffer, the fill value), x, qkv, the transposed
  // key, the scores, masked, p and y. The split and the slice copy nothing.
  EXPECT_EQ(run->memory.no_reuse_bytes,
            64 * 192 * 2 + 32 * 32 + 2 + (4 * 16 * 64 + 4 * 16 * 192 + 4 * 64 * 16 + 3 * 4 * 16 * 16 + 4 * 16 * 64) * 2);

  EXPECT_TRUE(r->causal_masks.empty()) << "a buffer of ones is not causal";

  // What is not a window is refused saying what to export instead.
  auto strided = load([](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInts(g, "s0", {0});
    AddInts(g, "s1", {64});
    AddInts(g, "axis", {2});
    AddInts(g, "step", {2});
    AddNode(n, "Slice", {"x", "s0", "s1", "axis", "step"}, "y", "even");
  });
  EXPECT_NE(Message(strided).find("node 'even' (Slice): a Slice with step 2 reads every so many elements; only step 1"),
            std::string::npos)
      << Message(strided);
  auto computed = load([](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddInput(g, "len", {1}, onnx::TensorProto::INT64);
    AddInts(g, "s0", {0});
    AddNode(n, "Slice", {"x", "s0", "len"}, "y", "cut");
  });
  EXPECT_NE(Message(computed).find("node 'cut' (Slice): its ends are computed from a tensor: export with fixed shapes"),
            std::string::npos)
      << Message(computed);
}

// PyTorch computes some float constants at export as arithmetic on float scalars: GPT-2's
// attention scale full([], 64 ** 0.5) is Pow(64, 0.5), a ConstantOfShape of the empty shape
// and an Add. They fold to their value, which the folds then read: a GELU whose sqrt(2/pi)
// is written as Sqrt(Div(2, pi)) is one Gelu, and one whose value is wrong is not.
TEST(OnnxImport, ArithmeticOnFloatScalarsFoldsToItsValue) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](const WriteNodes& write) {
    return LoadChainModel(dir.Path("scalars" + std::to_string(file++) + ".onnx"), 17, write);
  };
  auto scale = load([](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    AddScalar(g, "d", 64);
    AddScalar(g, "half", 0.5f);
    AddNode(n, "Pow", {"d", "half"}, "root", "scale.pow");
    AddInts(g, "no_axes", std::vector<int64_t>{});
    auto* zeros = AddNode(n, "ConstantOfShape", {"no_axes"}, "zero", "scale.zeros");
    WithFill(zeros, onnx::TensorProto::FLOAT, 0);
    AddNode(n, "Add", {"zero", "root"}, "scale", "scale.add");
    AddNode(n, "Div", {"x", "scale"}, "y", "scores.scale");
  });
  ASSERT_TRUE(scale.ok()) << Message(scale);
  ASSERT_EQ(scale->nodes.size(), 1u);
  EXPECT_EQ(scale->nodes[0].op_type, "Div");
  ASSERT_EQ(scale->weights.size(), 1u) << "the folded scale is the Div's one constant";
  EXPECT_EQ(scale->weights[0].name, "scale");
  EXPECT_EQ(scale->weights[0].desc.shape, (std::vector<int64_t>{1}));
  for (const float two : {2.0f, 3.0f}) {
    auto r = load([&](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      WriteOutTanhGelu(g, n, "x", "y", "gelu.", /*pow=*/true);
      auto& inits = *g.mutable_initializer();
      inits.erase(std::find_if(inits.begin(), inits.end(), [](const auto& t) { return t.name() == "gelu.beta"; }));
      AddScalar(g, "two", two);
      AddScalar(g, "pi", 3.14159265f);
      std::vector<onnx::NodeProto> computed;
      AddNode(computed, "Div", {"two", "pi"}, "ratio", "beta.div");
      AddNode(computed, "Sqrt", {"ratio"}, "gelu.beta", "beta.sqrt");
      n.insert(n.begin(), computed.begin(), computed.end());
    });
    if (two == 2.0f) {
      ASSERT_TRUE(r.ok()) << Message(r);
      ASSERT_EQ(r->nodes.size(), 1u) << "sqrt(2 / pi) folded to 0.7979, then the GELU";
      EXPECT_EQ(r->nodes[0].op_type, "Gelu");
    } else {
      EXPECT_NE(Message(r).find("node 'gelu.pow' (Pow)"), std::string::npos) << "sqrt(3 / pi) is no GELU's constant: "
                                                                            << Message(r);
    }
  }
  // A float beside integers or bools is not folded to a value (Where's branches read as
  // integers overran them): the select of constants is computed at compile time, a weight
  // of its shape that the Add reads, as ATC folds it.
  auto select = load([](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    auto* cond = g.add_initializer();
    cond->set_name("cond");
    cond->set_data_type(onnx::TensorProto::BOOL);
    for (int64_t d : {4, 16, 64}) cond->add_dims(d);
    cond->set_raw_data(std::string(4 * 16 * 64, '\1'));
    AddScalar(g, "a", 1);
    AddScalar(g, "b", 2);
    AddNode(n, "Where", {"cond", "a", "b"}, "picked", "select");
    AddNode(n, "Add", {"x", "picked"}, "y", "add");
  });
  ASSERT_TRUE(select.ok()) << Message(select);
  EXPECT_EQ(FindNode(*select, "select"), nullptr);
  const NamedTensor* picked = select->FindTensor("picked");
  ASSERT_NE(picked, nullptr);
  EXPECT_TRUE(select->IsWeight("picked"));
  EXPECT_EQ(picked->desc.shape, (std::vector<int64_t>{4, 16, 64}));
}

// A fixed-shape export may still view a tensor as another's Shape (torch's GroupNorm views
// its normalised x back as Shape(x); a traced x.view(n, c, h * w)): each such Reshape is
// sized in the same inference pass as the Shape it reads (ONNX's data propagation), so a
// model of 24 of them in a row (a VAE's GroupNorms) imports; one inference round for each
// stopped at 16.
TEST(OnnxImport, ReshapesToAnotherTensorsShapeAreSizedInOnePass) {
  testing::ScratchDir dir;
  auto g = LoadChainModel(dir.Path("views.onnx"), 17, [](onnx::GraphProto&, std::vector<onnx::NodeProto>& n) {
    std::string prev = "x";
    for (int i = 0; i < 24; ++i) {
      const std::string id = std::to_string(i);
      AddNode(n, "Relu", {prev}, "r" + id, "block" + id + ".act");
      AddNode(n, "Shape", {prev}, "s" + id, "block" + id + ".shape");
      prev = i == 23 ? "y" : "v" + id;
      AddNode(n, "Reshape", {"r" + id, "s" + id}, prev, "block" + id + ".view");
    }
  });
  ASSERT_TRUE(g.ok()) << Message(g);
  int kernels = 0;
  for (const auto& node : g->nodes) kernels += node.IsView() ? 0 : 1;
  EXPECT_EQ(kernels, 24);
  EXPECT_EQ(FindNode(*g, "block23.view")->outputs[0].desc.shape, (std::vector<int64_t>{4, 16, 64}));
}

// A dynamic-axes export computes its views' shapes from its tensors': x [batch, seq, 64]
// split into 4 heads of 16 by Reshape(x, Concat(Shape(x)[0], Shape(x)[1], 4, 16)), and
// viewed back by Reshape(.., Concat(Shape(x, end=-1), [64])) (opset 15's Shape end) or a
// Slice of the Shape. Once --dim sizes batch and seq, the Shapes are constants and the
// arithmetic folds: only the kernels remain, at the given sizes.
TEST(OnnxImport, ADynamicAxesExportsShapeArithmeticFoldsOnceItsDimensionsAreGiven) {
  testing::ScratchDir dir;
  auto dynamic = [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    auto* dims = g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->mutable_dim(0)->set_dim_param("batch");
    dims->mutable_dim(1)->set_dim_param("seq");
    AddNode(n, "Shape", {"x"}, "s", "shape");
    AddInts(g, "i0", {0}, true);
    AddInts(g, "i1", {1}, true);
    AddInts(g, "axis0", {0});
    AddInts(g, "heads", {4, 16});
    AddNode(n, "Gather", {"s", "i0"}, "b", "shape.b");
    AddNode(n, "Gather", {"s", "i1"}, "t", "shape.t");
    AddNode(n, "Unsqueeze", {"b", "axis0"}, "b1", "shape.b1");
    AddNode(n, "Unsqueeze", {"t", "axis0"}, "t1", "shape.t1");
    auto* cat = AddNode(n, "Concat", {"b1", "t1", "heads"}, "split_list", "shape.concat");
    WithInt(cat, "axis", 0);
    AddInts(g, "flat", {-1});  // a whole model's repeat_kv reshapes its shape list to [-1]
    AddNode(n, "Reshape", {"split_list", "flat"}, "split_shape", "shape.flat");
    AddNode(n, "Reshape", {"x", "split_shape"}, "x4", "heads.split");  // [batch, seq, 4, 16]
    AddNode(n, "Relu", {"x4"}, "r4", "act");
    auto* front = AddNode(n, "Shape", {"r4"}, "s2", "shape2");  // [batch, seq, 4]
    WithInt(front, "end", -1);
    AddInts(g, "s0", {0});
    AddInts(g, "s2_end", {2});
    AddNode(n, "Slice", {"s2", "s0", "s2_end"}, "bt", "shape.slice");  // [batch, seq]
    AddInts(g, "width", {64});
    auto* cat2 = AddNode(n, "Concat", {"bt", "width"}, "merge_shape", "shape.concat2");
    WithInt(cat2, "axis", 0);
    AddNode(n, "Reshape", {"r4", "merge_shape"}, "r", "heads.merge");  // [batch, seq, 64]
    AddNode(n, "Add", {"r", "x"}, "y", "residual");
  };
  OnnxImportOptions sized;
  sized.dims = {{"batch", 2}, {"seq", 128}};
  auto r = LoadChainModel(dir.Path("dynamic.onnx"), 15, dynamic, false, onnx::TensorProto::FLOAT16, sized);
  ASSERT_TRUE(r.ok()) << Message(r);
  std::vector<std::string> kernels;
  for (const auto& node : r->nodes) {
    if (!node.IsView()) kernels.push_back(node.op_type);
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"Relu", "Add"})) << "the shape arithmetic is gone";
  EXPECT_EQ(FindNode(*r, "heads.split")->outputs[0].desc.shape, (std::vector<int64_t>{2, 128, 4, 16}));
  EXPECT_EQ(FindNode(*r, "heads.merge")->outputs[0].desc.shape, (std::vector<int64_t>{2, 128, 64}));
  EXPECT_TRUE(r->weights.empty()) << "shapes are not weights";
  ASSERT_TRUE(profile::RunGraph(*r, testing::Soc910B2()).ok());
  auto unsized = LoadChainModel(dir.Path("unsized.onnx"), 15, dynamic);
  EXPECT_NE(Message(unsized).find("symbolic dimensions without a size: batch, seq"), std::string::npos)
      << Message(unsized);
}

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
  for (const auto& [inputs, outputs] : std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{}, {"y"}}, {{"x", "s0", "s1"}, {"y", "y2"}}}) {
    TinyModel t;  // a Slice reading nothing, or writing two: named, not a crash
    auto* g0 = t.m.mutable_graph();
    AddInts(*g0, "s0", {0});
    AddInts(*g0, "s1", {8});
    t.Node("Slice", inputs, outputs, "cut");
    auto g = t.Load(dir.Path("slice" + std::to_string(inputs.size()) + ".onnx"));
    EXPECT_FALSE(g.ok());
    EXPECT_NE(Message(g).find(inputs.empty() ? "Slice" : "cut"), std::string::npos) << Message(g);
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
  {
    // A view of a weight is computed from constants only but stays in the graph (a kernel
    // reads it): its second output is checked as any node's.
    TinyModel t;
    t.m.mutable_graph()->add_output()->set_name("mask");
    auto* w = t.m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : {64, 64}) w->add_dims(d);
    t.Node("Dropout", {"w"}, {"wd", "mask"}, "drop");
    t.Node("MatMul", {"x", "wd"}, {"y"}, "mm");
    auto g = t.Load(dir.Path("view_mask.onnx"));
    EXPECT_NE(Message(g).find("node 'drop' (Dropout): its output 1 ('mask') is read by another node or is a "
                              "graph output: only the first output is modelled"),
              std::string::npos)
        << Message(g);
  }
}

// Found by an audit of the folds: a ReduceMean with no input or a Div with no output
// aborted the process; a chain whose gamma was one of its own tensors, or whose beta was a
// residual, folded into a LayerNorm it is not; a duplicate output name was hidden by a
// fold; nodes out of order failed in shape inference; PyTorch's fp16 LayerNorm, Constant
// axes and two GELU orders did not fold; a [1,1,1,1] eps (which broadcasts x up a rank) or
// an opset-18 ReduceMean with an axes attribute (over every axis there) did.
TEST(OnnxImport, FoldsTakeOnlyWhatIsTheOpAndMalformedGraphsAreNamed) {
  testing::ScratchDir dir;
  int file = 0;
  auto load = [&](int opset, const WriteNodes& write) {
    return LoadChainModel(dir.Path("m" + std::to_string(file++) + ".onnx"), opset, write);
  };
  auto ln = [](int form, auto edit) {
    return [=](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
      WriteOutLayerNorm(g, n, "x", "gamma", "beta", "y", "ln.", form);
      edit(g, n);
    };
  };
  auto node = [](std::vector<onnx::NodeProto>& n, const std::string& name) -> onnx::NodeProto& {
    return *std::find_if(n.begin(), n.end(), [&](const auto& k) { return k.name() == name; });
  };
  auto as_is = [](onnx::GraphProto&, std::vector<onnx::NodeProto>&) {};
  auto one = [](const Result<Graph>& r, const std::string& op) {
    return r.ok() && r->nodes.size() == 1 && r->nodes[0].op_type == op;
  };
  EXPECT_TRUE(one(load(14, ln(3, as_is)), "LayerNorm")) << "PyTorch's fp16 export, with its two Casts";
  EXPECT_TRUE(one(load(18, ln(4, as_is)), "LayerNorm")) << "axes from a Constant's value_ints";
  {
    auto r = load(14, ln(0, [&](auto&, auto& n) { node(n, "ln.mean").clear_input(); }));
    EXPECT_NE(Message(r).find("node 'ln.mean' (ReduceMean): ONNX op 'ReduceMean' has no tunefleet equivalent"),
              std::string::npos)
        << "a ReduceMean without input: " << Message(r);
  }
  {
    auto r = load(14, ln(0, [&](auto&, auto& n) { node(n, "ln.div").clear_output(); }));
    EXPECT_NE(Message(r).find("node 'ln.mul' reads 'ln.n', which no node, graph input or initializer provides"),
              std::string::npos)
        << Message(r);
  }
  for (const char* inside : {"ln.d", "ln.m", "ln.v"}) {
    auto r = load(14, ln(0, [&](auto&, auto& n) { node(n, "ln.mul").set_input(1, inside); }));
    EXPECT_NE(Message(r).find("(Pow): ONNX op 'Pow' has no tunefleet equivalent"), std::string::npos)
        << "gamma is the chain's own " << inside << ": " << Message(r);
  }
  {
    auto r = load(14, ln(0, [&](auto&, auto& n) { node(n, "ln.add").set_input(0, "x"); }));
    EXPECT_NE(Message(r).find("a LayerNorm, RMSNorm or GELU written out folds into one op only in the forms"), std::string::npos)
        << "beta is a residual: " << Message(r);
  }
  {
    auto r = load(14, ln(0, [&](auto& g, auto&) {
      for (auto& t : *g.mutable_initializer()) {
        if (t.name() == "ln.eps") {
          t.clear_dims();
          for (int k = 0; k < 4; ++k) t.add_dims(1);
        }
      }
    }));
    EXPECT_FALSE(one(r, "LayerNorm")) << "an eps of four axes makes y four-axis";
  }
  EXPECT_FALSE(one(load(18, ln(0, as_is)), "LayerNorm")) << "at opset 18 an axes attribute is not ReduceMean's";
  {
    auto r = load(14, [&](auto& g, auto& n) {
      AddScalar(g, "two", 2);
      AddNode(n, "Relu", {"x"}, "e", "first");
      AddNode(n, "Relu", {"x"}, "e", "second");
      AddNode(n, "Add", {"e", "two"}, "y", "out");
    });
    EXPECT_NE(Message(r).find("node 'second' writes 'e', which node 'first' already provides"), std::string::npos)
        << Message(r);
  }
  {
    auto r = load(14, [&](auto&, auto& n) {
      AddNode(n, "Relu", {"h"}, "y", "late");
      AddNode(n, "Relu", {"x"}, "h", "early");
    });
    EXPECT_NE(Message(r).find("node 'late' reads 'h' before node 'early' writes it: nodes must be in topological order"),
              std::string::npos)
        << Message(r);
  }
  // GELU as x * (0.5 * (1 + erf)) and as x * (1 + erf) / 2.
  for (bool halve_first : {true, false}) {
    auto r = load(14, [&](auto& g, auto& n) {
      AddScalar(g, "r2", 1.41421356f);
      AddScalar(g, "one", 1);
      AddScalar(g, "half", 0.5f);
      AddScalar(g, "two", 2);
      AddNode(n, "Div", {"x", "r2"}, "d", "scale");
      AddNode(n, "Erf", {"d"}, "e", "erf");
      AddNode(n, "Add", {"e", "one"}, "a", "add");
      if (halve_first) {
        AddNode(n, "Mul", {"half", "a"}, "h", "halve");
        AddNode(n, "Mul", {"x", "h"}, "y", "out");
      } else {
        AddNode(n, "Mul", {"x", "a"}, "xa", "by_x");
        AddNode(n, "Div", {"xa", "two"}, "y", "out");
      }
    });
    EXPECT_TRUE(one(r, "Gelu")) << (halve_first ? "x * (0.5 * (1 + erf)): " : "x * (1 + erf) / 2: ") << Message(r);
  }
}

// PyTorch exports float32 by default: it runs as float16, as ATC's default precision
// mode does (the cube takes no float32), unless kept; a Cast to the dtype its input
// already has is a view. Found by an ML-engineer audit: both were refused, as were an
// int64 mask and shape arithmetic, with messages that did not say what to do.
TEST(OnnxImport, Float32RunsAsFloat16AndANoOpCastIsAView) {
  testing::ScratchDir dir;
  const std::string path = dir.Path("fp32.onnx");
  auto write = [](onnx::GraphProto& g, std::vector<onnx::NodeProto>& n) {
    auto* w = g.add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(64);
    w->add_dims(32);
    AddNode(n, "MatMul", {"x", "w"}, "h", "fc");
    WithInt(AddNode(n, "Cast", {"h"}, "h16", "to_half"), "to", onnx::TensorProto::FLOAT16);
    AddNode(n, "Relu", {"h16"}, "y", "act");
  };
  auto g = LoadChainModel(path, 14, write, false, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(g.ok()) << Message(g);
  EXPECT_EQ(g->inputs[0].desc.dtype, "float16");
  EXPECT_EQ(FindNode(*g, "fc")->outputs[0].desc.dtype, "float16");
  EXPECT_EQ(FindNode(*g, "to_half")->op_type, kReshapeOp) << "float32 -> float16 once float32 is float16: nothing to cast";
  auto run = profile::RunGraph(*g, testing::Soc910B2());
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  OnnxImportOptions keep;
  keep.keep_fp32 = true;
  auto kept = GraphFromOnnxFile(path, keep);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(FindNode(*kept, "fc")->outputs[0].desc.dtype, "float32");
  EXPECT_EQ(FindNode(*kept, "to_half")->op_type, "Cast");

  auto mask = LoadChainModel(dir.Path("mask.onnx"), 14, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    auto* m = graph.add_input();
    m->set_name("mask");
    auto* tt = m->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::INT64);
    for (int64_t d : {4, 16}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    WithInt(AddNode(n, "Cast", {"mask"}, "m16", "cast_mask"), "to", onnx::TensorProto::FLOAT16);
    AddNode(n, "Relu", {"x"}, "y", "act");
    AddNode(n, "Relu", {"m16"}, "m_out", "use_mask");
  });
  ASSERT_TRUE(mask.ok()) << Message(mask);
  EXPECT_EQ(FindNode(*mask, "cast_mask")->op_type, "Cast") << "int64 to float16 converts: a kernel, not a view";
  EXPECT_TRUE(ValidateGraphOps(*mask, testing::Soc910B2()).ok());
  // A Shape of a tensor inference cannot size (a reshape to a runtime shape) is refused.
  auto shape = LoadChainModel(dir.Path("shape.onnx"), 14, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    AddInput(graph, "runtime_shape", {3}, onnx::TensorProto::INT64);
    AddNode(n, "Reshape", {"x", "runtime_shape"}, "r", "reshape");
    AddNode(n, "Shape", {"r"}, "s", "shape");
    AddNode(n, "Relu", {"x"}, "y", "act");
  });
  EXPECT_NE(Message(shape).find("node 'shape' (Shape): ONNX op 'Shape' has no tunefleet equivalent: shape arithmetic "
                                "on a tensor ONNX's shape inference could not size"),
            std::string::npos)
      << Message(shape);
  // A fixed-shape export's Neg (RoPE's rotate_half written otherwise) is not told to export
  // with fixed shapes (an audit found every such op given the dynamic-axes advice).
  auto neg = LoadChainModel(dir.Path("neg.onnx"), 14, [](onnx::GraphProto&, std::vector<onnx::NodeProto>& n) {
    AddNode(n, "Neg", {"x"}, "nx", "negate");
    AddNode(n, "Relu", {"x"}, "y", "act");
  });
  EXPECT_NE(Message(neg).find("node 'negate' (Neg): ONNX op 'Neg' has no tunefleet equivalent: a negation"),
            std::string::npos)
      << Message(neg);
  EXPECT_EQ(Message(neg).find("dynamic_axes"), std::string::npos) << Message(neg);
  // HF's additive mask, one per sequence broadcast over the heads: [b, 1, s] over [b, h, s].
  auto masked = LoadChainModel(dir.Path("mask.onnx"), 14, [](onnx::GraphProto& graph, std::vector<onnx::NodeProto>& n) {
    auto* in = graph.add_input();
    in->set_name("mask");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : {4, 1, 64}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    AddNode(n, "Add", {"x", "mask"}, "y", "masked");
  });
  ASSERT_TRUE(masked.ok()) << Message(masked);
  auto masked_run = profile::RunGraph(*masked, testing::Soc910B2());
  ASSERT_TRUE(masked_run.ok()) << masked_run.status().ToString();
  EXPECT_EQ(masked_run->ops[0].op_key, "Add[4x16x64,4x1x64]@Ascend910B2");
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
