#include "tunefleet/common/op_key.h"

#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey MatmulKey(int64_t m, int64_t n, int64_t k) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "MatMul";
  key.inputs = {{{m, k}, "float16", "ND"}, {{k, n}, "float16", "ND"}};
  key.attrs = {{"transpose_b", "0"}, {"transpose_a", "0"}};
  return key;
}

TEST(OpKey, CanonicalFormIsFixed) {
  EXPECT_EQ(MatmulKey(64, 32, 16).Canonical(),
            "v1;soc=Ascend910B2;op=MatMul;in=float16:ND:64x16,float16:ND:16x32;"
            "attr=transpose_a=0,transpose_b=0;mv=7");
}

// Two different ops never display alike: dtype, format and attributes show when they
// are not the common case (the display had shapes only, so a bf16 MatMul and its fp16
// twin, or a transposed B, looked the same in status and lookup output).
TEST(OpKey, TheDisplayFormTellsDifferentOpsApart) {
  OpKey plain = MatmulKey(64, 32, 16);
  plain.attrs.clear();
  EXPECT_EQ(plain.Display(), "MatMul[64x16,16x32]@Ascend910B2");
  EXPECT_EQ(MatmulKey(64, 32, 16).Display(), "MatMul[64x16,16x32]{transpose_a=0,transpose_b=0}@Ascend910B2");
  OpKey other = plain;
  other.inputs[0].dtype = "bfloat16";
  other.inputs[1].format = "NZ";
  EXPECT_EQ(other.Display(), "MatMul[bfloat16:64x16,float16:NZ:16x32]@Ascend910B2");
}

TEST(OpKey, HashIsStableAcrossRuns) {
  // Pinned: a change here silently orphans every knowledge-base entry in the fleet.
  EXPECT_EQ(HashOpKey(MatmulKey(1024, 1024, 1024)).Hex(), "61ecdb13d302e6b32422f3fb18b05e17");
}

TEST(OpKey, HashSeparatesDifferentProblems) {
  EXPECT_NE(HashOpKey(MatmulKey(64, 64, 64)), HashOpKey(MatmulKey(64, 64, 128)));
  OpKey other_soc = MatmulKey(64, 64, 64);
  other_soc.soc = "Ascend910B4";
  EXPECT_NE(HashOpKey(MatmulKey(64, 64, 64)), HashOpKey(other_soc));
  OpKey other_version = MatmulKey(64, 64, 64);
  other_version.model_version = kSimModelVersion + 1;
  EXPECT_NE(HashOpKey(MatmulKey(64, 64, 64)), HashOpKey(other_version));
}

TEST(OpKeyHash, HexRoundTrips) {
  OpKeyHash h = HashOpKey(MatmulKey(8, 8, 8));
  auto back = OpKeyHash::FromHex(h.Hex());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, h);
  EXPECT_EQ(h.Bytes().size(), 16u);
  EXPECT_FALSE(OpKeyHash::FromHex("xyz").ok());
}

TEST(OpKey, JsonRoundTripsAndNamesBadFields) {
  auto j = nlohmann::json::parse(R"({"op":"MatMul","inputs":[{"shape":[64,16]},{"shape":[16,32]}],
                                     "attrs":{"transpose_a":false,"transpose_b":"0"}})");
  auto key = OpKeyFromJson(j, "Ascend910B2");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, MatmulKey(64, 32, 16));
  auto again = OpKeyFromJson(OpKeyToJson(*key));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *key);

  auto bad = OpKeyFromJson(nlohmann::json::parse(R"({"op":"MatMul","inputs":[{"shape":[0,4]}]})"),
                           "Ascend910B2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("positive"), std::string::npos);
  auto bad_dtype = OpKeyFromJson(
      nlohmann::json::parse(R"({"op":"MatMul","inputs":[{"shape":[4,4],"dtype":"fp7"}]})"), "X");
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_NE(bad_dtype.status().message().find("fp7"), std::string::npos);
}

TEST(OpKey, MisspeltFieldsAreRefusedWithTheKnownOnes) {
  auto tensor = OpKeyFromJson(
      nlohmann::json::parse(R"({"op":"MatMul","inputs":[{"shape":[64,64],"dtyp":"float32"},{"shape":[64,64]}]})"), "X");
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().message(), "op 'MatMul' input 0: unknown field 'dtyp' (known: shape, dtype, format)");
  auto op = OpKeyFromJson(nlohmann::json::parse(R"({"op":"MatMul","shapes":[],"inputs":[{"shape":[4,4]}]})"), "X");
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("unknown field 'shapes'"), std::string::npos) << op.status().ToString();
  EXPECT_TRUE(OpKeyFromJson(nlohmann::json::parse(R"({"op":"MatMul","comment":"ok","inputs":[{"shape":[4,4]}]})"), "X").ok());
}

OpKey WithAttrs(OpKey key, std::map<std::string, std::string> attrs) {
  key.attrs = std::move(attrs);
  return key;
}

OpKey ConvKey() {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "Conv2D";
  key.inputs = {{{32, 64, 56, 56}, "float16", "ND"}, {{64, 64, 3, 3}, "float16", "ND"}};
  return key;
}

std::string CanonicalOf(const OpKey& key) {
  auto c = CanonicalOpKey(key);
  return c.ok() ? c->Canonical() : "error: " + c.status().message();
}

// Found by an audit: the BERT layer exported to ONNX found none of the entries tuned for
// the same layer written as a JSON graph. ONNX's MatMul of a [b, s, 768] activation by a
// [768, N] weight is a BatchMatMul whose batches stack into M: the MatMul [b*s, 768] x
// [768, N], one key, one space. A transposed or NZ A, or a batched B, stays batched.
TEST(CanonicalOpKey, ABatchMatMulByOneWeightIsTheMatMulOfItsStackedRows) {
  OpKey bmm;
  bmm.soc = "Ascend910B2";
  bmm.op_type = "BatchMatMul";
  bmm.inputs = {{{32, 128, 768}, "float16", "ND"}, {{768, 3072}, "float16", "ND"}};
  OpKey mm = bmm;
  mm.op_type = "MatMul";
  mm.inputs[0].shape = {4096, 768};
  EXPECT_EQ(CanonicalOf(bmm), CanonicalOf(mm));
  EXPECT_EQ(CanonicalOf(WithAttrs(bmm, {{"adj_x2", "1"}})), CanonicalOf(WithAttrs(mm, {{"transpose_b", "1"}})));
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = **catalog.Find("Ascend910B2");
  EXPECT_EQ(MakeTuningProblem(bmm, soc)->space.size(), MakeTuningProblem(mm, soc)->space.size()) << "the same space";
  EXPECT_NE(CanonicalOf(WithAttrs(bmm, {{"adj_x1", "1"}})).find("BatchMatMul"), std::string::npos);
  OpKey batched_b = bmm;
  batched_b.inputs[1].shape = {32, 768, 3072};
  EXPECT_NE(CanonicalOf(batched_b).find("BatchMatMul"), std::string::npos);
}

OpKey VectorKey(const std::string& op, std::vector<std::vector<int64_t>> shapes,
              std::map<std::string, std::string> attrs = {}) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = op;
  for (auto& s : shapes) key.inputs.push_back({std::move(s), "float16", "ND"});
  key.attrs = std::move(attrs);
  return key;
}

std::string CanonicalShapes(const OpKey& key) {
  auto c = CanonicalOpKey(key);
  if (!c.ok()) return "error: " + c.status().message();
  std::string s;
  for (const auto& t : c->inputs) {
    std::string dims;
    for (int64_t d : t.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    s += (s.empty() ? "[" : ";[") + dims + "]";
  }
  for (const auto& [name, value] : c->attrs) s += " " + name + "=" + value;
  return s;
}

// Found by an audit: an ONNX export's element-wise ops ([b, s, h]) found none of the
// entries tuned for the same layer written as a JSON graph ([b*s, h]), though the kernel
// sees only element counts. One spelling per op now, keeping the last axis and every
// axis a broadcast input starts at; and never two ops in one key.
TEST(CanonicalOpKey, AVectorOpsAxesMergeIntoOneSpellingOfWhatItsKernelSees) {
  EXPECT_EQ(CanonicalShapes(VectorKey("Gelu", {{32, 128, 3072}})), "[4096,3072]");
  EXPECT_EQ(CanonicalOf(VectorKey("Gelu", {{32, 128, 3072}})), CanonicalOf(VectorKey("Gelu", {{4096, 3072}})));
  EXPECT_EQ(CanonicalShapes(VectorKey("Add", {{32, 128, 768}, {1, 768}})), "[4096,768];[768]") << "a bias";
  EXPECT_EQ(CanonicalShapes(VectorKey("Add", {{768}, {4, 8, 768}})), "[768];[32,768]") << "the larger input is the output";
  EXPECT_EQ(CanonicalShapes(VectorKey("FusedMulAdd", {{32, 128, 768}, {128, 768}, {1, 1, 1}})),
            "[32,128,768];[128,768];[1]") << "a position table keeps its own axes";
  EXPECT_EQ(CanonicalShapes(VectorKey("Mul", {{2, 12, 128, 128}, {2, 1, 128, 128}})), "[2,12,128,128];[2,1,128,128]")
      << "a mask broadcast over an inner axis keeps its shapes";
  EXPECT_EQ(CanonicalShapes(VectorKey("Mul", {{4096, 768}, {4096, 768}})), "[4096,768];[4096,768]");
  EXPECT_EQ(CanonicalShapes(VectorKey("Relu", {{768}})), "[768]");
  EXPECT_EQ(CanonicalShapes(VectorKey("Rope", {{2, 32, 512, 128}, {1, 1, 512, 128}, {512, 128}})),
            "[64,512,128];[512,128];[512,128]")
      << "the rotary dimension stays an axis of its own";
  EXPECT_EQ(CanonicalShapes(VectorKey("Rope", {{2, 32, 512, 128}, {2, 32, 512, 128}, {2, 32, 512, 128}})),
            "[32768,128];[32768,128];[32768,128]");
  EXPECT_EQ(CanonicalShapes(VectorKey("FusedElementwise", {{32, 128, 768}, {768}}, {{"ops", "BiasAdd,Gelu"}})),
            "[4096,768];[768] ops=BiasAdd,Gelu");
  EXPECT_EQ(CanonicalShapes(VectorKey("LayerNorm", {{32, 128, 768}, {1, 768}, {768}}, {{"begin_norm_axis", "-1"}})),
            "[4096,768];[768];[768]");
  EXPECT_EQ(CanonicalOf(VectorKey("Softmax", {{2, 12, 128, 128}}, {{"axis", "3"}})),
            CanonicalOf(VectorKey("Softmax", {{3072, 128}})));
  EXPECT_EQ(CanonicalShapes(VectorKey("ReduceMean", {{768}}, {{"axes", "0"}})), "[1,768]");
  EXPECT_EQ(CanonicalShapes(VectorKey("Transpose", {{2, 12, 128, 64}}, {{"perm", "0,1,3,2"}})), "[24,128,64]");
  EXPECT_EQ(CanonicalShapes(VectorKey("Transpose", {{1, 128, 64}})), "[128,64]");
  // Not the same op: another element count, dtype, last axis of a row-wise op.
  EXPECT_NE(CanonicalOf(VectorKey("Gelu", {{32, 128, 3072}})), CanonicalOf(VectorKey("Gelu", {{4096, 3071}})));
  EXPECT_NE(CanonicalOf(VectorKey("Softmax", {{4096, 128}})), CanonicalOf(VectorKey("Softmax", {{128, 4096}})));
  // What does not parse is left for MakeTuningProblem to name.
  EXPECT_EQ(CanonicalShapes(VectorKey("Softmax", {{4096, 128}}, {{"axis", "0"}})), "[4096,128] axis=0");

  // Every rewrite is the same problem: space, default and timing.
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = **catalog.Find("Ascend910B2");
  for (const OpKey& key : {VectorKey("Add", {{32, 128, 768}, {1, 768}}),
                           VectorKey("LayerNorm", {{32, 128, 768}, {768}, {768}}),
                           VectorKey("Transpose", {{2, 12, 128, 64}}),
                           VectorKey("FusedElementwise", {{32, 128, 768}, {768}}, {{"ops", "BiasAdd,Gelu"}})}) {
    auto canonical = CanonicalOpKey(key);
    ASSERT_TRUE(canonical.ok()) << canonical.status().message();
    EXPECT_NE(canonical->Canonical(), key.Canonical()) << key.Display();
    auto a = MakeTuningProblem(key, soc);
    auto b = MakeTuningProblem(*canonical, soc);
    ASSERT_TRUE(a.ok() && b.ok()) << key.Display();
    EXPECT_EQ(a->space.size(), b->space.size()) << key.Display();
    EXPECT_EQ(a->default_config, b->default_config) << key.Display();
  }
}

TEST(CanonicalOpKey, SpellingsOfTheSameOpShareOneKeyAndOthersDoNot) {
  const OpKey mm = MatmulKey(64, 32, 16);
  const std::string plain = CanonicalOf(WithAttrs(mm, {}));
  for (const auto& a : {std::map<std::string, std::string>{{"transpose_a", "false"}},
                        std::map<std::string, std::string>{{"transpose_a", "0"}, {"transpose_b", "false"}}}) {
    EXPECT_EQ(CanonicalOf(WithAttrs(mm, a)), plain);
  }
  EXPECT_EQ(CanonicalOf(WithAttrs(mm, {{"transpose_b", "true"}})), CanonicalOf(WithAttrs(mm, {{"transpose_b", "1"}})));
  EXPECT_NE(CanonicalOf(WithAttrs(mm, {{"transpose_b", "true"}})), plain);
  OpKey half = mm;
  half.inputs[0].dtype = half.inputs[1].dtype = "fp16";
  EXPECT_EQ(CanonicalOf(half), CanonicalOf(mm));
  OpKey bmm = mm;
  bmm.op_type = "BatchMatMul";
  EXPECT_EQ(CanonicalOf(WithAttrs(bmm, {{"adj_x1", "1"}})), CanonicalOf(WithAttrs(bmm, {{"transpose_a", "true"}})));
  EXPECT_EQ(CanonicalOf(WithAttrs(mm, {{"transpose_a", "yes"}})),
            "error: MatMul attrs.transpose_a='yes' is not a flag: use true/false or 1/0");
  EXPECT_EQ(CanonicalOf(WithAttrs(mm, {{"adj_x1", "1"}})).rfind("error: MatMul has no attribute 'adj_x1'", 0), 0u);
  // The output dtype: by name, and left out when it is the inputs' (what a MatMul writes
  // unless told); fp32 out is another op.
  EXPECT_EQ(CanonicalOf(WithAttrs(mm, {{"out_dtype", "fp16"}})), plain);
  EXPECT_EQ(CanonicalOf(WithAttrs(mm, {{"out_dtype", "fp32"}})), CanonicalOf(WithAttrs(mm, {{"out_dtype", "float32"}})));
  EXPECT_NE(CanonicalOf(WithAttrs(mm, {{"out_dtype", "float32"}})), plain);
  // An int8 GEMM writes int32 by default, which no out_dtype names: int8 there is refused,
  // not taken for the default.
  OpKey i8 = mm;
  i8.inputs[0].dtype = i8.inputs[1].dtype = "int8";
  EXPECT_NE(CanonicalOf(WithAttrs(i8, {{"out_dtype", "int8"}})), CanonicalOf(i8));
  SocCatalog catalog = SocCatalog::Builtin();
  auto refused = MakeTuningProblem(WithAttrs(i8, {{"out_dtype", "int8"}}), **catalog.Find("Ascend910B2"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("use float16 or float32, or leave it out for int32"), std::string::npos)
      << refused.status().message();

  const OpKey conv = ConvKey();
  const std::string conv_plain = CanonicalOf(conv);
  EXPECT_EQ(CanonicalOf(WithAttrs(conv, {{"strides", "1"}, {"pads", "0,0,0,0"}, {"groups", "1"},
                                         {"dilations", "[1, 1]"}, {"data_format", "NCHW"}})),
            conv_plain);
  const std::string strided = CanonicalOf(WithAttrs(conv, {{"strides", "2,2"}, {"pads", "1,1,1,1"}}));
  EXPECT_NE(strided, conv_plain);
  for (const auto& a : {std::map<std::string, std::string>{{"strides", "2"}, {"pads", "1"}},
                        std::map<std::string, std::string>{{"strides", "1,1,2,2"}, {"pads", "1, 1"}},
                        std::map<std::string, std::string>{{"strides", "(2, 2)"}, {"pads", "[1,1,1,1]"}}}) {
    EXPECT_EQ(CanonicalOf(WithAttrs(conv, a)), strided);
  }
  EXPECT_NE(strided.find("pads=1,1,1,1,strides=2,2"), std::string::npos) << strided;
  EXPECT_NE(CanonicalOf(WithAttrs(conv, {{"pads", "1,0,1,0"}})), CanonicalOf(WithAttrs(conv, {{"pads", "1"}})));
  EXPECT_EQ(CanonicalOf(WithAttrs(conv, {{"strides", "0"}})).rfind("error: Conv2D attr 'strides' must be between 1 and 65535", 0), 0u);
  // Pads whose sum with H would overflow were tuned (an audit): refused, as is a tensor
  // whose element count would wrap.
  EXPECT_EQ(CanonicalOf(WithAttrs(conv, {{"pads", "9223372036854775807,9223372036854775807,1,1"}}))
                .rfind("error: Conv2D attr 'pads' must be between 0 and 65535", 0),
            0u);
  SocCatalog builtin = SocCatalog::Builtin();
  OpKey wide = conv;
  wide.inputs[0].shape = {int64_t{1} << 32, (int64_t{1} << 32) + 1, 1, 1};
  EXPECT_FALSE(MakeTuningProblem(wide, **builtin.Find("Ascend910B2")).ok());
  EXPECT_NE(CheckTensorSize({int64_t{1} << 32, (int64_t{1} << 32) + 1}, "x").message().find("x shape [4294967296,4294967297] holds more than 2^50 elements"),
            std::string::npos);
  EXPECT_TRUE(CheckTensorSize({int64_t{1} << 25, int64_t{1} << 25}, "x").ok());

  OpKey replayed;  // not an op the simulator knows: kept as given
  replayed.soc = "replay";
  replayed.op_type = "convolution_kernel";
  replayed.inputs = {{{4096, 4096}, "float32", "ND"}};
  replayed.attrs = {{"device", "NVIDIA A100-PCIE-40GB"}};
  EXPECT_EQ(CanonicalOf(replayed), replayed.Canonical());
}

}  // namespace
}  // namespace tunefleet
