// The fused ops' tuning problems (common/fused_space.h): how an op key names a fused op,
// the spaces (the cube op's plus epiSplit; the element-wise space over the whole chain),
// their constraints' reasons and the default tilings.
#include "tunefleet/common/fused_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey Key(const std::string& op, std::vector<TensorDesc> inputs, std::map<std::string, std::string> attrs) {
  return test_support::TestKey(op, std::move(inputs), std::move(attrs));
}

class FusedSpaceTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
  std::string Error(const OpKey& key) {
    auto p = MakeTuningProblem(key, soc());
    EXPECT_FALSE(p.ok()) << key.Display();
    return p.ok() ? "" : p.status().message();
  }
};

using FusedSpace = FusedSpaceTest;

const OpKey kFfn1 = Key("FusedMatMul", {{{4096, 768}}, {{768, 3072}}, {{3072}}}, {{"epilogue", "BiasAdd,Gelu"}});

// Every kind of space's constraints answer a scan (no reason) as they answer Validate:
// the reasons are built apart from the checks, so the two must not drift.
TEST_F(FusedSpace, EveryKindOfSpaceAnswersAScanAsItsValidate) {
  const std::vector<OpKey> keys = {
      Key("MatMul", {{{32, 32}}, {{32, 64}}}, {}),
      Key("Conv2D", {{{1, 64, 56, 56}}, {{64, 64, 3, 3}}}, {{"pads", "1"}}),
      Key("FusedMatMul", {{{256, 768}}, {{768, 3072}}, {{3072}}}, {{"epilogue", "BiasAdd,Gelu"}}),
      Key("Add", {{{4096, 768}}, {{4096, 768}}}, {}),
      Key("LayerNorm", {{{4096, 768}}, {{768}}, {{768}}}, {}),
      Key("Transpose", {{{1024, 768}}}, {{"perm", "1,0"}}),
  };
  for (const OpKey& key : keys) {
    auto p = MakeTuningProblem(key, soc());
    ASSERT_TRUE(p.ok()) << key.Display() << ": " << p.status().ToString();
    const SearchSpace& s = p->space;
    const ConfigIndex stride = std::max<ConfigIndex>(1, s.size() / 20000);
    size_t valid = 0, checked = 0;
    for (ConfigIndex i = 0; i < s.size(); i += stride, ++checked) {
      const Status v = s.ValidateIndex(i);
      ASSERT_EQ(s.IsValidIndex(i), v.ok()) << key.Display() << " config " << s.Describe(s.Decode(i)) << ": " << v.ToString();
      valid += v.ok();
    }
    EXPECT_GT(valid, 0u) << key.Display();
    EXPECT_LT(valid, checked) << key.Display() << ": no constraint was exercised";
  }
}

TEST_F(FusedSpace, AFusedMatMulIsTheMatMulSpacePlusAnEpilogueSplit) {
  auto p = MakeTuningProblem(kFfn1, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto mm = MakeTuningProblem(Key("MatMul", {{{4096, 768}}, {{768, 3072}}}, {}), soc());
  ASSERT_TRUE(mm.ok());
  ASSERT_EQ(p->space.dims(), mm->space.dims() + 1);
  for (size_t i = 0; i < mm->space.dims(); ++i) EXPECT_EQ(p->space.params()[i].name, mm->space.params()[i].name);
  EXPECT_EQ(p->space.params().back().name, "epiSplit");
  EXPECT_EQ(p->space.params().back().values, (std::vector<int64_t>{1, 2, 4, 8}));
  // The default is the MatMul's, with the smallest split whose sub-tile fits UB: a
  // 64x128 half tile of fp32 + bias + output + Gelu's temp + the bias cast is 256 KiB
  // ping-ponged, so 2.
  EXPECT_TRUE(std::equal(mm->default_config.begin(), mm->default_config.end(), p->default_config.begin()));
  EXPECT_EQ(p->default_config.back(), 2);
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
  // The op key is canonical: sorted attrs, the chain as written.
  EXPECT_NE(kFfn1.Canonical().find("op=FusedMatMul"), std::string::npos);
  EXPECT_NE(kFfn1.Canonical().find("epilogue=BiasAdd,Gelu"), std::string::npos);
  const std::vector<std::string> types = TunableOpTypes();
  for (const char* t : {"FusedMatMul", "FusedBatchMatMul", "FusedConv2D", "FusedElementwise"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
  }
}

TEST_F(FusedSpace, TheEpilogueShapeFollowsTheCubeOp) {
  auto mm = FusedCubeShapeFromOpKey(kFfn1);
  ASSERT_TRUE(mm.ok());
  EXPECT_EQ(mm->out_shape, (std::vector<int64_t>{4096, 3072}));
  ASSERT_EQ(mm->epilogue.operands.size(), 1u);
  EXPECT_FALSE(mm->epilogue.operands[0].full);
  EXPECT_EQ(mm->epilogue.temps, 2);  // Gelu's intermediate, the bias cast to fp32
  auto bmm = FusedCubeShapeFromOpKey(
      Key("FusedBatchMatMul", {{{32, 12, 128, 64}}, {{32, 12, 64, 128}}, {{1}}}, {{"epilogue", "Mul"}}));
  ASSERT_TRUE(bmm.ok()) << bmm.status().ToString();
  EXPECT_EQ(bmm->out_shape, (std::vector<int64_t>{32, 12, 128, 128}));
  EXPECT_EQ(bmm->gemm.batch, 384);
  // A conv's bias is per channel, as [Cout] or [Cout,1,1]; a residual has the NCHW output shape.
  for (std::vector<int64_t> bias : {std::vector<int64_t>{256}, {256, 1, 1}, {1, 256, 1, 1}}) {
    auto conv = FusedCubeShapeFromOpKey(Key("FusedConv2D", {{{8, 64, 56, 56}}, {{256, 64, 1, 1}}, {bias}, {{8, 256, 56, 56}}},
                                            {{"epilogue", "BiasAdd,Add,Relu"}}));
    ASSERT_TRUE(conv.ok()) << conv.status().ToString();
    EXPECT_TRUE(conv->conv);
    EXPECT_EQ(conv->out_shape, (std::vector<int64_t>{8, 256, 56, 56}));
    EXPECT_TRUE(conv->epilogue.operands[1].full);
  }
  // int8 dequantises to fp16; bf16 stays bf16.
  auto i8 = FusedCubeShapeFromOpKey(Key("FusedMatMul", {{{64, 64}, "int8"}, {{64, 64}, "int8"}}, {{"epilogue", "Relu"}}));
  ASSERT_TRUE(i8.ok());
  EXPECT_TRUE(i8->dequant);
  EXPECT_EQ(i8->out_dtype, DType::kFloat16);
  auto inner = FusedCubeInnerKey(kFfn1);
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->op_type, "MatMul");
  EXPECT_EQ(inner->inputs.size(), 2u);
  EXPECT_EQ(inner->attrs, (std::map<std::string, std::string>{{"out_dtype", "float32"}}))
      << "the cube part writes the fp32 accumulator the epilogue reads";
}

TEST_F(FusedSpace, BadFusedKeysAreRejectedWithTheFieldToFix) {
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}}, {})).find("attrs.epilogue"), std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}}, {{"epilogue", "Softmax"}})).find("'Softmax' is not a chain op"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}, {{64}}}, {{"epilogue", "BiasAdd, Gelu"}})).find("without spaces"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}}, {{"epilogue", "BiasAdd"}})).find("needs 3 inputs"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}, {{32}}}, {{"epilogue", "BiasAdd"}})).find("one value per output channel"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}, {{64, 3}}}, {{"epilogue", "Add"}})).find("does not broadcast"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}, "float32"}, {{64, 64}, "float32"}}, {{"epilogue", "Relu"}}))
                .find("float16, bfloat16 or int8"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}, {{64}, "int8"}}, {{"epilogue", "BiasAdd"}})).find("input 2 dtype int8"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 32}}, {{64, 64}}}, {{"epilogue", "Relu"}})).find("inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedElementwise", {{{64, 64}}, {{64, 64}}}, {{"ops", "Add,Add"}})).find("needs 3 inputs"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedElementwise", {{{64, 64}, "int8"}, {{64, 64}, "int8"}}, {{"ops", "Add,Gelu"}})).find("int8"),
            std::string::npos);
  EXPECT_NE(Error(Key("FusedElementwise", {{{64, 64}}, {{64, 64}, "float32"}}, {{"ops", "Add"}})).find("differs from input 0"),
            std::string::npos);
}

// GPT-2's causal mask as an epilogue step: where(condition, x, y), the condition int8 (a
// bool mask), y the fill; only a Where's condition may be int8.
TEST_F(FusedSpace, AWheresConditionIsItsFirstOperandAndMayBeInt8) {
  auto s = FusedCubeShapeFromOpKey(Key("FusedBatchMatMul", {{{8, 12, 1024, 64}}, {{8, 12, 64, 1024}}, {{1}}, {{1, 1, 1024, 1024}, "int8"}, {{1}}},
                                       {{"epilogue", "Div,Where"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->epilogue.steps.size(), 2u);
  EXPECT_EQ(s->epilogue.steps[1].op, VectorOp::kWhere);
  EXPECT_EQ(s->epilogue.steps[1].first_operand, 1);
  EXPECT_EQ(s->epilogue.steps[1].operands, 2);
  EXPECT_EQ(s->epilogue.operands[1].dtype, DType::kInt8);
  EXPECT_FALSE(s->epilogue.operands[1].full) << "[1, 1, s, s] broadcasts over the batch and heads";
  EXPECT_NE(Error(Key("FusedBatchMatMul", {{{8, 12, 1024, 64}}, {{8, 12, 64, 1024}}, {{1, 1, 1024, 1024}}, {{1}, "int8"}},
                      {{"epilogue", "Where"}}))
                .find("input 3 dtype int8"),
            std::string::npos)
      << "the fill is not a condition";
}

TEST_F(FusedSpace, EveryFusedCubeConstraintNamesItsBuffer) {
  auto p = MakeTuningProblem(kFfn1, soc());
  ASSERT_TRUE(p.ok());
  auto with = [&](std::map<std::string, int64_t> values) {
    Config c = p->default_config;
    for (const auto& [name, v] : values) c[static_cast<size_t>(p->space.IndexOf(name))] = v;
    return p->space.Validate(c);
  };
  const Status ub = with({{"baseN", 256}, {"dbL0C", 0}, {"epiSplit", 1}});
  EXPECT_NE(ub.message().find("epilogue UB capacity: UB footprint"), std::string::npos) << ub.message();
  EXPECT_NE(ub.message().find("exceeds ub_size"), std::string::npos) << ub.message();
  const Status l0c = with({{"baseM", 256}, {"baseN", 256}, {"epiSplit", 8}});
  EXPECT_NE(l0c.message().find("L0C capacity"), std::string::npos) << l0c.message();
}

TEST_F(FusedSpace, TheSmallestTileStillTakesTheLargestSplit) {
  // baseM=16 leaves 8 rows per vector core on the 910B: epiSplit 8 is one row each.
  auto p = MakeTuningProblem(kFfn1, soc());
  ASSERT_TRUE(p.ok());
  Config c = p->default_config;
  c[static_cast<size_t>(p->space.IndexOf("baseM"))] = 16;
  c[static_cast<size_t>(p->space.IndexOf("epiSplit"))] = 8;
  EXPECT_TRUE(p->space.Validate(c).ok()) << p->space.Validate(c).message();
}

// A QDQ model's QuantizeLinear fused into the op before it (CANN's AscendQuant): the
// chain's last step, and the fused op writes int8.
TEST_F(FusedSpace, AQuantizeEndsAChainAndTheOpWritesInt8) {
  auto conv = FusedCubeShapeFromOpKey(Key("FusedConv2D", {{{8, 64, 56, 56}, "int8"}, {{256, 64, 1, 1}, "int8"}, {{256}}},
                                          {{"epilogue", "BiasAdd,Relu,Quantize"}}));
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  EXPECT_EQ(conv->out_dtype, DType::kInt8);
  auto plain = FusedCubeShapeFromOpKey(Key("FusedConv2D", {{{8, 64, 56, 56}, "int8"}, {{256, 64, 1, 1}, "int8"}, {{256}}},
                                           {{"epilogue", "BiasAdd,Relu"}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->out_dtype, DType::kFloat16);
  auto chain = FusedElementwiseShapeFromOpKey(Key("FusedElementwise", {{{64, 64}}, {{64, 64}}}, {{"ops", "Add,Relu,Quantize"}}));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(chain->out_dtype, DType::kInt8);
  EXPECT_NE(Error(Key("FusedMatMul", {{{64, 64}}, {{64, 64}}}, {{"epilogue", "Quantize,Relu"}}))
                .find("Quantize writes the int8 output, so it is the chain's last op"),
            std::string::npos);
}

TEST_F(FusedSpace, AChainIsTheElementwiseSpaceOverEveryInputOutputAndTemp) {
  const OpKey key = Key("FusedElementwise", {{{4096, 768}}, {{4096, 768}}, {{768}}}, {{"ops", "Mul,BiasAdd,Gelu"}});
  auto s = FusedElementwiseShapeFromOpKey(key);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->family, VectorFamily::kElementwise);
  EXPECT_EQ(s->full_inputs, 2);
  EXPECT_EQ(s->broadcast_inputs, 1);
  EXPECT_EQ(s->temps, 1);
  EXPECT_EQ(s->chain, (std::vector<VectorOp>{VectorOp::kMul, VectorOp::kAdd, VectorOp::kGelu}));
  auto p = MakeTuningProblem(key, soc());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->space.params()[0].name, "tileLength");
  // (3 inputs + 1 output + 1 temp) * 2 B * 2 buffers = 20 B per element: 8192 fits, 16384 does not.
  Config c = p->default_config;
  c[0] = 8192;
  c[1] = 2;
  EXPECT_TRUE(p->space.Validate(c).ok()) << p->space.Validate(c).message();
  c[0] = 16384;
  const Status ub = p->space.Validate(c);
  EXPECT_NE(ub.message().find("UB capacity"), std::string::npos) << ub.message();
  EXPECT_NE(ub.message().find("16384*10*2"), std::string::npos) << ub.message();
  // bf16 computes in fp32 with a cast temp per input.
  auto bf = FusedElementwiseShapeFromOpKey(
      Key("FusedElementwise", {{{64, 64}, "bfloat16"}, {{64, 64}, "bfloat16"}}, {{"ops", "Add,Relu"}}));
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->compute_dtype, DType::kFloat32);
  EXPECT_EQ(bf->temps, 2);
}

}  // namespace
}  // namespace tunefleet
