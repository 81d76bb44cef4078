// The vector ops' tuning spaces (common/vector_space.h): op-key errors name the field
// to fix, UB capacity and 32-byte alignment violations name the quantity, defaults are
// valid, and every vector op is tunable through MakeTuningProblem.
#include "tunefleet/common/vector_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey Key(const std::string& op, std::vector<std::vector<int64_t>> shapes,
          const std::string& dtype = "float16", std::map<std::string, std::string> attrs = {}) {
  return test_support::TestKey(op, test_support::Inputs(std::move(shapes), dtype), std::move(attrs));
}

class VectorSpaceTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  std::string KeyError(const OpKey& key) {
    auto p = MakeTuningProblem(key, soc());
    EXPECT_FALSE(p.ok()) << key.Display();
    if (p.ok()) return "";
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << p.status().ToString();
    return p.status().message();
  }
};

using VectorSpace = VectorSpaceTest;

TEST_F(VectorSpace, EveryVectorOpIsTunable) {
  std::vector<std::string> tunable = TunableOpTypes();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Relu", "Gelu", "Sigmoid", "Silu", "Tanh", "Exp", "Cast",
                         "FusedMulAdd", "Rope", "Where", "HardSigmoid", "HardSwish", "Sin", "Cos", "Concat", "MaxPool", "AveragePool", "Clip", "DepthwiseConv2D", "Gather", "Resize", "Pad", "Softmax", "LayerNorm", "RmsNorm", "InstanceNorm", "ReduceSum", "ReduceMean", "ReduceL2", "CumSum", "Equal", "Not",
                         "Transpose"}) {
    EXPECT_NE(std::find(tunable.begin(), tunable.end(), op), tunable.end()) << op;
    EXPECT_TRUE(IsVectorOpType(op)) << op;
  }
  EXPECT_FALSE(IsVectorOpType("MatMul"));
}

TEST_F(VectorSpace, OpKeyErrorsNameTheFieldToFix) {
  EXPECT_NE(KeyError(Key("Add", {{4, 8}})).find("exactly 2 inputs"), std::string::npos);
  EXPECT_NE(KeyError(Key("Add", {{4, 8}, {3, 8}})).find("input 1 shape [3,8]"), std::string::npos);
  EXPECT_NE(KeyError(Key("Cast", {{4, 8}})).find("attrs.dst_type"), std::string::npos);
  EXPECT_NE(KeyError(Key("Cast", {{4, 8}}, "float16", {{"dst_type", "float64"}})).find("attrs.dst_type"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Cast", {{4, 8}}, "int8", {{"dst_type", "float32"}})).find("attrs.dst_type"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Div", {{4, 8}, {4, 8}}, "int8")).find("dtype int8"), std::string::npos);
  EXPECT_NE(KeyError(Key("Softmax", {{4, 8}}, "float16", {{"axis", "0"}})).find("attrs.axis"), std::string::npos);
  EXPECT_NE(KeyError(Key("ReduceSum", {{4, 8}}, "float16", {{"axes", "0"}})).find("attrs.axes"), std::string::npos);
  EXPECT_NE(KeyError(Key("LayerNorm", {{4, 8}, {4}, {8}})).find("input 1 (gamma)"), std::string::npos);
  EXPECT_NE(KeyError(Key("RmsNorm", {{4, 8}, {4}})).find("RmsNorm input 1 (gamma) shape [4] must be [8]"), std::string::npos);
  EXPECT_NE(KeyError(Key("RmsNorm", {{4, 8}, {8}, {8}})).find("exactly 2 inputs"), std::string::npos);
  EXPECT_NE(KeyError(Key("Transpose", {{4, 8, 2}}, "float16", {{"perm", "2,1,0"}})).find("attrs.perm"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Transpose", {{8}})).find("at least 2 axes"), std::string::npos);
  OpKey mixed = Key("Mul", {{4, 8}, {4, 8}});
  mixed.inputs[1].dtype = "float32";
  EXPECT_NE(KeyError(mixed).find("input 1 dtype"), std::string::npos);
  OpKey nz = Key("Relu", {{4, 8}});
  nz.inputs[0].format = "FRACTAL_NZ";
  EXPECT_NE(KeyError(nz).find("format"), std::string::npos);
}

// NumPy's broadcasting, as ONNX exports it: HF's additive attention mask [b, 1, s, s]
// over the scores [b, h, s, s], RoPE's cos [b, 1, s, d] over [b, h, s, d] (both were
// refused: only a trailing suffix broadcast), and both ways at once (an outer product: a
// diffusion model's timesteps [b, 1] by its frequencies [1, d]), each input that is not the
// output's shape read as a broadcast one. An axis that is neither equal nor 1 is not.
TEST_F(VectorSpace, AcceptsNumpyBroadcastingOverMiddleAxesAndNamesTheRuleOtherwise) {
  auto mask = VectorShapeFromOpKey(Key("Add", {{2, 16, 256, 256}, {2, 1, 256, 256}}));
  ASSERT_TRUE(mask.ok()) << mask.status().ToString();
  EXPECT_EQ(mask->elements, 2 * 16 * 256 * 256);
  EXPECT_EQ(mask->full_inputs, 1);
  EXPECT_EQ(mask->broadcast_inputs, 1);
  EXPECT_EQ(mask->broadcast_elements, 2 * 256 * 256);
  EXPECT_TRUE(VectorShapeFromOpKey(Key("Mul", {{2, 1, 256, 128}, {2, 16, 256, 128}})).ok());
  EXPECT_TRUE(VectorShapeFromOpKey(Key("Add", {{2, 16, 256, 256}, {1, 1, 256, 1}})).ok());
  auto outer = VectorShapeFromOpKey(Key("Mul", {{8, 1}, {1, 320}}));
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  EXPECT_EQ(outer->elements, 8 * 320);
  EXPECT_EQ(outer->full_inputs, 0);
  EXPECT_EQ(outer->broadcast_inputs, 2);
  EXPECT_EQ(outer->broadcast_elements, 8 + 320);
  EXPECT_EQ(OutputElements(Key("Add", {{4, 16, 1}, {4, 1, 64}})), 4 * 16 * 64);
  EXPECT_NE(KeyError(Key("Add", {{2, 16, 256, 256}, {2, 4, 256, 256}}))
                .find("input 1 shape [2,4,256,256] does not broadcast with the inputs before it ([2,16,256,256]): "
                      "aligned from the right, each axis must be the same size or 1"),
            std::string::npos);
}

// RoPE: x [b, h, s, d] rotated by cos and sin of [s, d] (or [b, 1, s, d], or x's shape).
// A tile holds whole rotary rows, since each half of a row is read with the other.
TEST_F(VectorSpace, RopeTilesHoldWholeRotaryRowsAndItsErrorsNameTheInput) {
  for (int64_t d : {64, 80, 128}) {
    auto p = MakeTuningProblem(Key("Rope", {{2, 32, 512, d}, {512, d}, {1, 1, 512, d}}), soc());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    int valid = 0;
    p->space.ForEachValid([&](ConfigIndex i) {
      EXPECT_EQ(p->space.Decode(i)[0] % d, 0) << "d=" << d << " " << p->space.Describe(p->space.Decode(i));
      ++valid;
      return true;
    });
    EXPECT_GT(valid, 10) << "d=" << d;
    EXPECT_TRUE(p->space.Validate(p->default_config).ok()) << "d=" << d;
    EXPECT_EQ(p->default_config[0] % d, 0);
  }
  auto shape = VectorShapeFromOpKey(Key("Rope", {{2, 32, 512, 128}, {512, 128}, {512, 128}}));
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->cols, 128);
  EXPECT_EQ(shape->full_inputs, 1);
  EXPECT_EQ(shape->broadcast_inputs, 2);
  EXPECT_NE(KeyError(Key("Rope", {{2, 8, 63}, {8, 63}, {8, 63}})).find("rotary dimension, is 63; it must be even"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Rope", {{2, 8, 64}, {8, 64}, {8, 1}})).find("Rope input 2 (sin) shape [8,1]: its last axis"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Rope", {{8, 64}, {2, 8, 64}, {8, 64}})).find("larger than input 0 (x)"), std::string::npos);
  EXPECT_NE(KeyError(Key("Rope", {{8, 64}, {8, 64}})).find("exactly 3 inputs"), std::string::npos);
}

// Where (select): a bool condition, declared int8, picks x or y; GPT-2's causal mask
// [1, 1, s, s] and its fill value broadcast over the scores [b, h, s, s].
TEST_F(VectorSpace, WhereTakesAnInt8ConditionAndItsDataInTheirOwnDtype) {
  auto where = [&](std::vector<std::vector<int64_t>> shapes, const char* cond, const char* x, const char* y) {
    OpKey k = Key("Where", std::move(shapes), x);
    k.inputs[0].dtype = cond;
    k.inputs[2].dtype = y;
    return k;
  };
  const OpKey causal = where({{1, 1, 128, 128}, {32, 12, 128, 128}, {1}}, "int8", "float16", "float16");
  auto shape = VectorShapeFromOpKey(causal);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->dtype, DType::kFloat16) << "the data's dtype, not the condition's";
  EXPECT_EQ(shape->out_dtype, DType::kFloat16);
  EXPECT_EQ(shape->elements, 32 * 12 * 128 * 128);
  EXPECT_EQ(shape->full_inputs, 1);
  EXPECT_EQ(shape->broadcast_inputs, 2);
  auto p = MakeTuningProblem(causal, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(WrittenDType(causal).value(), DType::kFloat16);
  EXPECT_NE(KeyError(where({{8, 64}, {8, 64}, {1}}, "float16", "float16", "float16"))
                .find("Where input 0 (the condition) dtype float16: a condition is bool, one byte an element; declare "
                      "it int8"),
            std::string::npos);
  EXPECT_NE(KeyError(where({{8, 64}, {8, 64}, {1}}, "int8", "float16", "float32"))
                .find("Where input 2 dtype float32 differs from input 1's float16"),
            std::string::npos);
  EXPECT_NE(KeyError(where({{8, 64}, {8, 64}, {1}}, "int8", "int8", "int8")).find("Where input 1 dtype int8 is not "
                                                                                   "supported"),
            std::string::npos);
  EXPECT_NE(KeyError(where({{8, 64}, {8, 63}, {1}}, "int8", "float16", "float16")).find("does not broadcast"),
            std::string::npos);
}

// Concat copies its inputs, equal on every axis but the one they are joined on, into one
// output: a KV cache's past and new keys [b, h, s, d] on the sequence axis.
TEST_F(VectorSpace, ConcatJoinsInputsEqualButOnItsAxisAndKeepsItsAxesInItsKey) {
  const OpKey kv = Key("Concat", {{1, 32, 2047, 128}, {1, 32, 1, 128}}, "float16", {{"axis", "-2"}});
  auto shape = VectorShapeFromOpKey(kv);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 32 * 2048 * 128);
  EXPECT_EQ(shape->full_inputs, 1) << "read as many elements as it writes";
  EXPECT_EQ(shape->broadcast_inputs, 0);
  EXPECT_EQ(OutputElements(kv), 32 * 2048 * 128);
  auto p = MakeTuningProblem(kv, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(kv)->Canonical(), kv.Canonical()) << "the joined axis is the op: no axes merged";
  EXPECT_TRUE(VectorShapeFromOpKey(Key("Concat", {{4, 8}, {4, 8}, {4, 8}}, "int8", {{"axis", "1"}})).ok())
      << "three inputs, int8: a copy";
  EXPECT_NE(KeyError(Key("Concat", {{4, 8}, {4, 9}}, "float16", {{"axis", "0"}}))
                .find("Concat input 1 shape [4,9] must equal input 0's [4,8] on every axis but attrs.axis 0"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Concat", {{4, 8}, {4, 8, 1}}, "float16", {{"axis", "0"}})).find("input 1 shape [4,8,1]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Concat", {{4, 8}, {4, 8}})).find("Concat needs attrs.axis, the axis its inputs are joined "
                                                          "on: an integer in [-2, 1]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Concat", {{4, 8}, {4, 8}}, "float16", {{"axis", "2"}})).find("got '2'"), std::string::npos);
  EXPECT_NE(KeyError(Key("Concat", {{4, 8}}, "float16", {{"axis", "0"}})).find("at least 2 inputs"), std::string::npos);
}

// Gather picks rows of a table by int32 or int64 indices (Llama-2's token embedding:
// [32000, 4096] by [1, 2048] token ids): its output is [indices..., cols], read as a copy
// of those rows plus an index each, and its key does not care how the indices are laid
// out. Indices are refused anywhere else, and a Gather's errors name the input to fix.
TEST_F(VectorSpace, GatherPicksTableRowsByIntegerIndicesAndNoOtherOpTakesIndices) {
  auto gather = [](std::vector<int64_t> table, std::vector<int64_t> ids, const std::string& id_dtype = "int64",
                   const std::string& table_dtype = "float16", std::map<std::string, std::string> attrs = {}) {
    return test_support::TestKey("Gather", {TensorDesc{std::move(table), table_dtype}, TensorDesc{std::move(ids), id_dtype}},
                                 std::move(attrs));
  };
  const OpKey embed = gather({32000, 4096}, {1, 2048});
  auto shape = VectorShapeFromOpKey(embed);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 2048 * 4096);
  EXPECT_EQ(shape->cols, 4096) << "a table row, one burst";
  EXPECT_EQ(shape->full_inputs, 1) << "the rows it reads are as many elements as it writes";
  EXPECT_EQ(shape->broadcast_inputs, 0) << "the table is not read whole";
  EXPECT_EQ(shape->index_bytes, 8);
  EXPECT_EQ(shape->out_dtype, DType::kFloat16);
  EXPECT_EQ(OutputElements(embed), 2048 * 4096);
  EXPECT_EQ(VectorShapeFromOpKey(gather({32000, 4096}, {2048}, "int32"))->index_bytes, 4);
  auto p = MakeTuningProblem(embed, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(embed)->Canonical(), CanonicalOpKey(gather({32000, 4096}, {2048}, "int64", "float16",
                                                                       {{"axis", "0"}}))->Canonical())
      << "[1, 2048] ids and [2048] are one op";
  EXPECT_NE(CanonicalOpKey(embed)->Canonical(), CanonicalOpKey(gather({32000, 4096}, {2048}, "int32"))->Canonical())
      << "int32 indices are read in half the bytes";
  EXPECT_TRUE(MakeTuningProblem(gather({100, 64}, {4, 16}, "int64", "int8"), soc()).ok()) << "an int8 table: a copy";

  EXPECT_NE(KeyError(gather({100, 64}, {16}, "float16")).find("Gather input 1 (the indices) dtype float16: indices are "
                                                             "int32 or int64"),
            std::string::npos);
  EXPECT_NE(KeyError(gather({100, 64}, {16}, "int64", "int64")).find("Gather input 0 (the table) dtype int64"),
            std::string::npos);
  EXPECT_NE(KeyError(gather({4, 100, 64}, {16})).find("Gather input 0 (the table) shape [4,100,64]: a table is [rows, "
                                                     "cols]"),
            std::string::npos);
  EXPECT_NE(KeyError(gather({100, 64}, {16}, "int64", "float16", {{"axis", "1"}}))
                .find("Gather attrs.axis='1': only rows of the table are gathered (axis 0)"),
            std::string::npos);
  EXPECT_NE(KeyError(test_support::TestKey("Gather", {TensorDesc{{100, 64}}})).find("exactly 2 inputs"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Div", {{4, 8}, {4, 8}}, "int64"))
                .find("Div input 0 dtype int64: int32 and int64 are a Gather's indices, cast, compared by Equal and "
                      "computed on by Add, Sub, Mul and CumSum (index arithmetic: position ids) only; use float16, "
                      "bfloat16, float32"),
            std::string::npos);
  // The one list of the ops that compute on indices, which the ONNX import also asks.
  for (const char* op : {"Add", "Sub", "Mul", "Equal", "CumSum"}) EXPECT_TRUE(ComputesOnIndices(op)) << op;
  for (const char* op : {"Div", "Not", "Cast", "Softmax", "MatMul", "NoSuchOp"}) {
    EXPECT_FALSE(ComputesOnIndices(op)) << op;
  }
  // An int64 attention mask is cast to float (BERT's extended mask): int64 has no vconv to
  // float16, so that one goes through float32.
  auto mask = VectorShapeFromOpKey(Key("Cast", {{4, 16}}, "int64", {{"dst_type", "float16"}}));
  ASSERT_TRUE(mask.ok()) << mask.status().ToString();
  EXPECT_EQ(mask->out_dtype, DType::kFloat16);
  EXPECT_EQ(mask->compute_dtype, DType::kFloat32);
  EXPECT_EQ(mask->temps, 1);
  auto mask32 = VectorShapeFromOpKey(Key("Cast", {{4, 16}}, "int32", {{"dst_type", "float32"}}));
  ASSERT_TRUE(mask32.ok()) << mask32.status().ToString();
  EXPECT_EQ(mask32->temps, 0) << "one vconv";
  EXPECT_NE(KeyError(Key("Cast", {{4, 8}}, "float16", {{"dst_type", "int64"}}))
                .find("cannot cast float16 to int64: int32 and int64 are a Gather's indices"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Cast", {{4, 8}}, "int32", {{"dst_type", "int8"}})).find("int32 or int64 -> float16 or float32"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MatMul", {{64, 64}, {64, 64}}, "int32")).find("on the cube takes float16, bfloat16 or int8 "
                                                                      "inputs, got int32"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Conv2D", {{1, 16, 8, 8}, {16, 16, 3, 3}}, "int64")).find("not int64"), std::string::npos);
  EXPECT_NE(KeyError(test_support::TestKey("FusedElementwise", test_support::Inputs({{4, 8}, {4, 8}}, "int32"),
                                           {{"ops", "Add"}}))
                .find("FusedElementwise input 0 dtype int32: int32 and int64 are a Gather's indices"),
            std::string::npos);
}

// Resize over H and W of [N, C, H, W] (a feature pyramid's x2 nearest upsampling of P5, a
// U-Net's bilinear one): element-wise over its output, reading its input once when it
// grows and only what it picks when it shrinks; its key keeps its axes, its sizes in one
// spelling, its default mode left out; its errors name the attribute to fix.
TEST_F(VectorSpace, ResizeTilesItsOutputAndReadsItsInputOnce) {
  const OpKey up = Key("Resize", {{1, 256, 20, 20}}, "float16", {{"sizes", "[40, 40]"}, {"mode", "nearest"}});
  auto shape = VectorShapeFromOpKey(up);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 256 * 40 * 40);
  EXPECT_EQ(shape->source_elements, 256 * 20 * 20) << "each input element read once";
  EXPECT_EQ(shape->full_inputs, 0);
  EXPECT_EQ(shape->cols, 40) << "an output row, a burst";
  EXPECT_EQ(shape->window, 1);
  EXPECT_EQ(shape->compute_dtype, DType::kFloat16);
  EXPECT_EQ(OutputElements(up), 256 * 40 * 40);
  auto p = MakeTuningProblem(up, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(up)->Canonical(), Key("Resize", {{1, 256, 20, 20}}, "float16", {{"sizes", "40,40"}}).Canonical())
      << "one spelling: sizes \"40,40\", nearest left out";
  auto linear = VectorShapeFromOpKey(Key("Resize", {{2, 64, 32, 32}}, "bfloat16", {{"sizes", "64,64"}, {"mode", "linear"}}));
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ(linear->window, 4) << "two rows and two columns an output element";
  EXPECT_EQ(linear->compute_dtype, DType::kFloat32) << "bf16 blends in fp32";
  auto down = VectorShapeFromOpKey(Key("Resize", {{1, 4, 40, 40}}, "float16", {{"sizes", "10,10"}}));
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->source_elements, 4 * 10 * 10) << "nearest reads only what it picks";

  EXPECT_NE(KeyError(Key("Resize", {{1, 4, 8, 8}})).find("Resize needs attrs.sizes"), std::string::npos);
  EXPECT_NE(KeyError(Key("Resize", {{1, 4, 8, 8}}, "float16", {{"sizes", "16,16"}, {"mode", "cubic"}}))
                .find("Resize attrs.mode='cubic': nearest or linear"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Resize", {{4, 8, 8}}, "float16", {{"sizes", "16,16"}})).find("a 2-D resize takes x as [N, C, H, W]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Resize", {{1, 4, 8, 8}}, "float16", {{"sizes", "16,0"}})).find("sizes"), std::string::npos);
  EXPECT_NE(KeyError(Key("Resize", {{1, 4, 8, 8}}, "float16", {{"sizes", "16,16"}, {"scales", "2"}}))
                .find("Resize has no attribute 'scales'"),
            std::string::npos);
}

// Pad over H and W of [N, C, H, W] (a GAN's ReflectionPad2d(3) before its 7x7 stem): a
// copy element-wise over its output, reading its input once; its key keeps its axes, its
// pads in one spelling, its default mode left out; its errors name the attribute to fix.
TEST_F(VectorSpace, PadTilesItsOutputAndReadsItsInputOnce) {
  const OpKey reflect = Key("Pad", {{1, 3, 256, 256}}, "float16", {{"pads", "3"}, {"mode", "reflect"}});
  auto shape = VectorShapeFromOpKey(reflect);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 3 * 262 * 262);
  EXPECT_EQ(shape->source_elements, 3 * 256 * 256) << "each input element read once";
  EXPECT_EQ(shape->full_inputs, 0);
  EXPECT_EQ(shape->cols, 262) << "an output row, a burst";
  EXPECT_EQ(shape->compute_dtype, DType::kFloat16) << "copied, not computed";
  EXPECT_EQ(OutputElements(reflect), 3 * 262 * 262);
  auto p = MakeTuningProblem(reflect, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(reflect)->Canonical(),
            Key("Pad", {{1, 3, 256, 256}}, "float16", {{"pads", "3,3,3,3"}, {"mode", "reflect"}}).Canonical());
  EXPECT_EQ(CanonicalOpKey(Key("Pad", {{2, 8, 16, 16}}, "float16", {{"pads", "0,1,0,1"}, {"mode", "constant"}}))->Canonical(),
            Key("Pad", {{2, 8, 16, 16}}, "float16", {{"pads", "0,1,0,1"}}).Canonical())
      << "constant left out";
  auto asymmetric = VectorShapeFromOpKey(Key("Pad", {{2, 8, 16, 16}}, "int8", {{"pads", "0,1,2,3"}}));
  ASSERT_TRUE(asymmetric.ok()) << asymmetric.status().ToString();
  EXPECT_EQ(asymmetric->elements, 2 * 8 * 17 * 21) << "[top, bottom, left, right]";
  // A transposed convolution's input dilated by stride 2: a zero between neighbours.
  const OpKey dilate = Key("Pad", {{2, 8, 16, 16}}, "float16", {{"interior", "1"}});
  auto dilated = VectorShapeFromOpKey(dilate);
  ASSERT_TRUE(dilated.ok()) << dilated.status().ToString();
  EXPECT_EQ(dilated->elements, 2 * 8 * 31 * 31);
  EXPECT_EQ(dilated->source_elements, 2 * 8 * 16 * 16);
  EXPECT_EQ(CanonicalOpKey(dilate)->Canonical(),
            Key("Pad", {{2, 8, 16, 16}}, "float16", {{"interior", "1,1"}}).Canonical());
  EXPECT_EQ(CanonicalOpKey(Key("Pad", {{2, 8, 16, 16}}, "float16", {{"interior", "0"}, {"pads", "1"}}))->Canonical(),
            Key("Pad", {{2, 8, 16, 16}}, "float16", {{"pads", "1,1,1,1"}}).Canonical())
      << "no interior left out";
  // Its output is sized before HBM is: 2^48 rows of 4 * 65536 columns do not wrap around.
  auto huge = VectorShapeFromOpKey(Key("Pad", {{1 << 24, 1 << 24, 1, 4}}, "float16", {{"interior", "0,65535"}}));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("holds more than 2^50 elements"), std::string::npos) << huge.status().message();
  EXPECT_NE(KeyError(Key("Pad", {{1, 4, 8, 8}}, "float16", {{"interior", "1"}, {"mode", "edge"}}))
                .find("zeros between elements (a transposed convolution's dilated input) are constant only"),
            std::string::npos);

  EXPECT_NE(KeyError(Key("Pad", {{1, 4, 8, 8}}, "float16", {{"pads", "1"}, {"mode", "wrap"}}))
                .find("Pad attrs.mode='wrap': constant, reflect or edge"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Pad", {{1, 4, 8, 8}}, "float16", {{"pads", "8,0,0,0"}, {"mode", "reflect"}}))
                .find("a reflect padding must be smaller than the axis it mirrors"),
            std::string::npos);
  EXPECT_TRUE(VectorShapeFromOpKey(Key("Pad", {{1, 4, 8, 8}}, "float16", {{"pads", "8,0,0,0"}, {"mode", "edge"}})).ok())
      << "edge repeats the border: any size";
  EXPECT_NE(KeyError(Key("Pad", {{4, 8, 8}}, "float16", {{"pads", "1"}})).find("a 2-D padding takes x as [N, C, H, W]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("Pad", {{1, 4, 8, 8}}, "float16", {{"pads", "-1"}})).find("pads"), std::string::npos);
  EXPECT_NE(KeyError(Key("Pad", {{1, 4, 8, 8}}, "int64", {{"pads", "1"}})).find("Pad input 0 dtype int64"),
            std::string::npos);
}

// InstanceNorm over the spatial axes of [N, C, H, W] (a style-transfer net's
// InstanceNorm2d; GroupNorm as torch exports it, x viewed [N, G, -1]): a row per (n, c),
// its scale and bias a channel's; its key keeps N and C and merges the spatial axes.
TEST_F(VectorSpace, InstanceNormHasARowPerChannelAndKeepsItsChannels) {
  const OpKey norm = Key("InstanceNorm", {{2, 32, 64, 64}, {32}, {32}});
  auto shape = VectorShapeFromOpKey(norm);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->rows, 2 * 32);
  EXPECT_EQ(shape->cols, 64 * 64);
  EXPECT_EQ(NormParams(*shape), 0) << "no weight row: a scale and a bias per row";
  EXPECT_EQ(OutputElements(norm), 2 * 32 * 64 * 64);
  auto p = MakeTuningProblem(norm, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(norm)->Canonical(), Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}).Canonical());
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 4096}, {2}, {2}})).find("x is [N, C, spatial...]"), std::string::npos);
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 32, 4096}, {32, 2}, {32}}))
                .find("InstanceNorm input 1 (scale) shape [32,2] must be [32], one value a channel of input 0"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}, "float16", {{"epsilon", "1e-5"}}))
                .find("InstanceNorm has no attribute 'epsilon'"),
            std::string::npos);
  // Its epilogue (fuse's ReLU after a CycleGAN norm, SiLU after a GroupNorm): unary ops.
  auto fused = VectorShapeFromOpKey(Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}, "float16", {{"epilogue", "Silu"}}));
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->epilogue, (std::vector<VectorOp>{VectorOp::kSilu}));
  EXPECT_EQ(fused->temps, shape->temps + 1) << "Silu keeps sigmoid(x) beside x";
  // Fused with a GroupNorm's affine: a scale and bias per channel of the tensor before its
  // view [N, G, -1], 4 channels a row here.
  auto group = VectorShapeFromOpKey(Key("InstanceNorm", {{2, 32, 4096}, {128, 1, 1}, {128}}));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(group->rows, 2 * 32);
  EXPECT_EQ(group->row_channels, 4);
  EXPECT_EQ(shape->row_channels, 1);
  EXPECT_EQ(CanonicalOpKey(Key("InstanceNorm", {{2, 32, 64, 64}, {128, 1, 1}, {128}}))->Canonical(),
            Key("InstanceNorm", {{2, 32, 4096}, {128}, {128}}).Canonical());
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 32, 4096}, {48}, {32}})).find("k dividing a row's 4096 elements"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}, "float16", {{"epilogue", "Mul"}}))
                .find("InstanceNorm attr 'epilogue' op 'Mul' is not a unary element-wise op"),
            std::string::npos);
  // Last, a Quantize: the norm writes int8 (a QDQ model's quantize of its output).
  auto quant = VectorShapeFromOpKey(Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}, "float16", {{"epilogue", "Relu,Quantize"}}));
  ASSERT_TRUE(quant.ok()) << quant.status().ToString();
  EXPECT_EQ(quant->epilogue, (std::vector<VectorOp>{VectorOp::kRelu, VectorOp::kCast}));
  EXPECT_EQ(quant->out_dtype, DType::kInt8);
  EXPECT_NE(KeyError(Key("InstanceNorm", {{2, 32, 4096}, {32}, {32}}, "float16", {{"epilogue", "Quantize,Relu"}}))
                .find("Quantize writes the int8 output, so it is the epilogue's last op"),
            std::string::npos);
}

// A LayerNorm or RmsNorm takes a Quantize alone as its epilogue (CANN's LayerNormQuant and
// RmsNormQuant): it writes int8, half the bytes.
TEST_F(VectorSpace, ANormsQuantizeEpilogueWritesInt8AndIsItsOnlyOne) {
  for (const auto& key : {Key("LayerNorm", {{4096, 768}, {768}, {768}}, "float16", {{"epilogue", "Quantize"}}),
                          Key("RmsNorm", {{4096, 768}, {768}}, "float16", {{"epilogue", "Quantize"}})}) {
    auto s = VectorShapeFromOpKey(key);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->epilogue, (std::vector<VectorOp>{VectorOp::kCast})) << key.Display();
    EXPECT_EQ(s->out_dtype, DType::kInt8) << key.Display();
    auto written = WrittenDType(key);
    ASSERT_TRUE(written.ok() && written->has_value()) << key.Display();
    EXPECT_EQ(**written, DType::kInt8);
  }
  auto plain = VectorShapeFromOpKey(Key("LayerNorm", {{4096, 768}, {768}, {768}}));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->out_dtype, DType::kFloat16);
  EXPECT_NE(KeyError(Key("LayerNorm", {{4096, 768}, {768}, {768}}, "float16", {{"epilogue", "Gelu"}}))
                .find("LayerNorm takes Quantize alone"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("RmsNorm", {{4096, 768}, {768}}, "float16", {{"epilogue", "Silu,Quantize"}}))
                .find("RmsNorm takes Quantize alone"),
            std::string::npos);
}

// MaxPool over [N, C, H, W] (ResNet's stem: 3x3, stride 2, pad 1): its output's elements
// are the op's, its input is read as 4 inputs of that size, its key keeps its axes, and
// its errors name the attribute or axis to fix.
TEST_F(VectorSpace, MaxPoolTilesItsOutputAndItsErrorsNameTheAttribute) {
  const std::map<std::string, std::string> stem = {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}};
  const OpKey key = Key("MaxPool", {{32, 64, 112, 112}}, "float16", stem);
  auto shape = VectorShapeFromOpKey(key);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 32 * 64 * 56 * 56);
  EXPECT_EQ(shape->full_inputs, 4) << "112x112 read for 56x56";
  EXPECT_EQ(shape->window, 9);
  EXPECT_EQ(OutputElements(key), 32 * 64 * 56 * 56);
  auto p = MakeTuningProblem(key, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  EXPECT_EQ(CanonicalOpKey(key)->Canonical(), key.Canonical()) << "the pooled axes are the op: none merged";
  auto defaults = VectorShapeFromOpKey(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "7"}}));
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->elements, 8) << "stride 1 and no pads by default: 7x7 -> 1x1";
  EXPECT_NE(KeyError(Key("MaxPool", {{64, 112, 112}}, "float16", stem)).find("takes x as [N, C, H, W]"), std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}})).find("MaxPool needs attrs.kernel_shape (\"3,3\")"), std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3"}, {"pads", "3"}}))
                .find("each pad must be smaller than the kernel's 3"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 2, 7}}, "float16", {{"kernel_shape", "3,3"}})).find("larger than x's H 2"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3"}, {"strides", "0"}}))
                .find("MaxPool attr 'strides' must be between 1 and 65535"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3,3"}}))
                .find("MaxPool attr 'kernel_shape' takes 1, 2 or 4 values"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3"}, {"pads", "1,1,1"}}))
                .find("MaxPool attr 'pads' takes 1, 2 or 4 values"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel", "3,3"}})).find("known: kernel_shape, pads, strides"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "int8", {{"kernel_shape", "3,3"}})).find("dtype int8"), std::string::npos);
  // AveragePool (DenseNet's transitions: 2x2 at stride 2) has the same windows.
  const OpKey avg = Key("AveragePool", {{32, 128, 56, 56}}, "float16", {{"kernel_shape", "2,2"}, {"strides", "2,2"}});
  auto avg_shape = VectorShapeFromOpKey(avg);
  ASSERT_TRUE(avg_shape.ok()) << avg_shape.status().ToString();
  EXPECT_EQ(avg_shape->elements, 32 * 128 * 28 * 28);
  EXPECT_EQ(avg_shape->full_inputs, 4);
  EXPECT_EQ(avg_shape->window, 4);
  EXPECT_EQ(CanonicalOpKey(avg)->Canonical(), avg.Canonical());
  // ONNX's explicit zero pads and one value for both axes are the same op as the defaults.
  const OpKey spelt = Key("AveragePool", {{32, 128, 56, 56}}, "float16", {{"kernel_shape", "2"}, {"strides", "[2, 2]"}, {"pads", "0,0,0,0"}});
  EXPECT_EQ(CanonicalOpKey(spelt)->Canonical(), avg.Canonical());
  EXPECT_EQ(CanonicalOpKey(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3"}, {"strides", "1"}, {"pads", "1"}}))->Canonical(),
            Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3"}, {"pads", "1,1,1,1"}}).Canonical());
  EXPECT_NE(KeyError(Key("AveragePool", {{1, 8, 7, 7}})).find("AveragePool needs attrs.kernel_shape"), std::string::npos);
  // The window attributes read as Conv2D's do (window_attrs.h): pads [h, w], an NCHW kernel.
  EXPECT_EQ(CanonicalOpKey(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "1,1,3,3"}, {"pads", "1,0"}}))->Canonical(),
            Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "3,3"}, {"pads", "1,1,0,0"}}).Canonical());
  EXPECT_NE(KeyError(Key("MaxPool", {{1, 8, 7, 7}}, "float16", {{"kernel_shape", "2,1,3,3"}})).find("NCHW order"),
            std::string::npos);
}

// MobileNetV2's depthwise 3x3 (one filter per channel, stride 2, pad 1): a window op like
// a pooling, its kernel from the filter [C, 1, kh, kw], the filter and bias read as
// broadcast inputs; dilations widen the window; a filter with a channel multiplier or a
// bias of another length is refused saying what it must be.
TEST_F(VectorSpace, ADepthwiseConvIsAWindowOpWithItsFilterBroadcast) {
  const std::map<std::string, std::string> attrs = {{"strides", "2,2"}, {"pads", "1,1,1,1"}};
  const OpKey key = Key("DepthwiseConv2D", {{32, 96, 112, 112}, {96, 1, 3, 3}, {96}}, "float16", attrs);
  auto shape = VectorShapeFromOpKey(key);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->elements, 32 * 96 * 56 * 56);
  EXPECT_EQ(shape->full_inputs, 4) << "112x112 read for 56x56";
  EXPECT_EQ(shape->window, 9);
  EXPECT_EQ(shape->broadcast_inputs, 2);
  EXPECT_EQ(shape->broadcast_elements, 96 * 9 + 96);
  auto p = MakeTuningProblem(key, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  auto dilated = VectorShapeFromOpKey(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "float16", {{"dilations", "2"}}));
  ASSERT_TRUE(dilated.ok()) << dilated.status().ToString();
  EXPECT_EQ(dilated->elements, 8 * 5 * 5) << "a 5x5 extent over 9x9 without pads";
  // Explicit defaults are the same op as none.
  EXPECT_EQ(CanonicalOpKey(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "float16",
                               {{"strides", "1"}, {"dilations", "1,1"}, {"pads", "0,0,0,0"}}))->Canonical(),
            Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}).Canonical());
  EXPECT_NE(KeyError(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {16, 1, 3, 3}}))
                .find("filter) shape [16,1,3,3] must be [C, 1, kh, kw] = [8, 1, kh, kw]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}, {16}})).find("bias) shape [16] must be [C] = [8]"),
            std::string::npos);
  EXPECT_NE(KeyError(Key("DepthwiseConv2D", {{1, 8, 9, 9}})).find("needs 2 or 3 inputs"), std::string::npos);
  // int8 (a QDQ model's): its bias float, computed in float16, written float16 unless a
  // Quantize ends its epilogue.
  auto int8 = VectorShapeFromOpKey(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "int8"));
  ASSERT_TRUE(int8.ok()) << int8.status().ToString();
  EXPECT_EQ(int8->compute_dtype, DType::kFloat16);
  EXPECT_EQ(int8->out_dtype, DType::kFloat16);
  std::vector<TensorDesc> biased = test_support::Inputs({{1, 8, 9, 9}, {8, 1, 3, 3}}, "int8");
  biased.push_back(test_support::Inputs({{8}})[0]);
  auto quantized = VectorShapeFromOpKey(test_support::TestKey("DepthwiseConv2D", biased, {{"epilogue", "Clip,Quantize"}}));
  ASSERT_TRUE(quantized.ok()) << quantized.status().ToString();
  EXPECT_EQ(quantized->out_dtype, DType::kInt8);
  biased[1].dtype = "float16";
  EXPECT_NE(KeyError(test_support::TestKey("DepthwiseConv2D", biased)).find("input 1 dtype float16 differs from input 0's int8"),
            std::string::npos);
  // Its epilogue (fuse's ReLU6): unary element-wise ops, Gelu's temp added.
  auto fused = VectorShapeFromOpKey(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "float16", {{"epilogue", "Clip,Gelu"}}));
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->epilogue, (std::vector<VectorOp>{VectorOp::kClip, VectorOp::kGelu}));
  EXPECT_EQ(fused->temps, 1);
  EXPECT_NE(KeyError(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "float16", {{"epilogue", "Clip,Add"}}))
                .find("epilogue' op 'Add' is not a unary element-wise op"),
            std::string::npos);
  const std::string small = KeyError(Key("DepthwiseConv2D", {{1, 8, 2, 2}, {8, 1, 3, 3}}));
  EXPECT_NE(small.find("filter extent 3 is larger than x's H 2"), std::string::npos) << small;
  EXPECT_NE(KeyError(Key("DepthwiseConv2D", {{1, 8, 9, 9}, {8, 1, 3, 3}}, "float16", {{"kernel_shape", "3,3"}}))
                .find("known: dilations, epilogue, pads, strides"),
            std::string::npos);
}

TEST_F(VectorSpace, AcceptsBroadcastOfATrailingSuffixOrOneElement) {
  auto bias = VectorShapeFromOpKey(Key("Add", {{4096, 3072}, {3072}}));
  ASSERT_TRUE(bias.ok()) << bias.status().ToString();
  EXPECT_EQ(bias->elements, 4096 * 3072);
  EXPECT_EQ(bias->full_inputs, 1);
  EXPECT_EQ(bias->broadcast_inputs, 1);
  auto scalar = VectorShapeFromOpKey(Key("Mul", {{1}, {8, 16}}));
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  EXPECT_EQ(scalar->elements, 128);
}

TEST_F(VectorSpace, UbCapacityViolationNamesTheFootprintAndUbSize) {
  auto p = MakeTuningProblem(Key("Add", {{4096, 3072}, {4096, 3072}}), soc());
  ASSERT_TRUE(p.ok());
  // 32768 fp16 elements x (2 inputs + 1 output) x 2 bytes x 2 buffers = 384 KiB > 192 KiB.
  Status s = p->space.Validate({32768, 2, 48});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("UB capacity"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("393216 B exceeds ub_size 196608 B"), std::string::npos) << s.message();
  // Single-buffered it fits.
  EXPECT_TRUE(p->space.Validate({32768, 1, 48}).ok());
}

TEST_F(VectorSpace, AlignmentViolationNamesTileLengthTimesBytes) {
  auto p = MakeTuningProblem(Key("Relu", {{4096, 3072}}), soc());
  ASSERT_TRUE(p.ok());
  Status s = p->space.Validate({8, 2, 48});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tileLength*bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ubblock_size 32 B"), std::string::npos) << s.message();
  // fp32 makes the same tileLength aligned.
  auto f = MakeTuningProblem(Key("Relu", {{4096, 3072}}, "float32"), soc());
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->space.Validate({8, 2, 48}).ok()) << f->space.Validate({8, 2, 48}).message();
  // Transpose: a 16-byte fp16 row of 8 elements.
  auto t = MakeTuningProblem(Key("Transpose", {{1024, 1024}}), soc());
  ASSERT_TRUE(t.ok());
  Status ts = t->space.Validate({64, 8, 48});
  ASSERT_FALSE(ts.ok());
  EXPECT_NE(ts.message().find("tileCols*bytes"), std::string::npos) << ts.message();
}

TEST_F(VectorSpace, RowwiseRejectsSeveralRowsThatOverflowUbButStreamsASingleOne) {
  auto p = MakeTuningProblem(Key("Softmax", {{64, 65536}}, "float32"), soc());
  ASSERT_TRUE(p.ok());
  Status two = p->space.Validate({2, 2, 32});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.message().find("exceeds ub_size"), std::string::npos) << two.message();
  EXPECT_TRUE(p->space.Validate({1, 2, 32}).ok());
  EXPECT_TRUE(p->space.Validate({1, 1, 32}).ok());
}

TEST_F(VectorSpace, UsedCoresAboveTheTileCountIsRejected) {
  auto p = MakeTuningProblem(Key("Relu", {{1024}}), soc());
  ASSERT_TRUE(p.ok());
  Status s = p->space.Validate({1024, 2, 2});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("usedCores=2 exceeds the 1 tiles"), std::string::npos) << s.message();
}

TEST_F(VectorSpace, DefaultTilingUsesAllVectorCoresDoubleBufferingAndLargeTiles) {
  auto p = MakeTuningProblem(Key("Gelu", {{4096, 3072}}), soc());
  ASSERT_TRUE(p.ok());
  VectorShape shape = *VectorShapeFromOpKey(p->key);
  VectorTiling t = VectorTilingFromConfig(shape, p->default_config);
  EXPECT_EQ(t.used_cores, 48);
  EXPECT_EQ(t.buffer_num, 2);
  // Gelu fp16: in + out + one temp = 6 bytes per element, ping-ponged: at most 16384.
  EXPECT_EQ(t.tile_length, 16384);
  // Tiny shapes get a valid default too.
  for (const OpKey& k : {Key("Add", {{1}, {1}}), Key("Softmax", {{1, 3}}), Key("Transpose", {{3, 5}}, "int8"),
                         Key("Cast", {{7}}, "int8", {{"dst_type", "float16"}})}) {
    auto q = MakeTuningProblem(k, soc());
    EXPECT_TRUE(q.ok()) << k.Display() << ": " << q.status().ToString();
  }
}

}  // namespace
}  // namespace tunefleet
