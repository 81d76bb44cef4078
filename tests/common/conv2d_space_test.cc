// Conv2D's tuning problem: op-key parsing and its errors, the implicit-im2col view onto
// the MatMul space, the input-window geometry and its L1 constraint, and the default
// tiling on every ResNet-50 convolution.
#include "tunefleet/common/conv2d_space.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey ConvKey(int64_t n, int64_t cin, int64_t hw, int64_t cout, int64_t k, int64_t stride = 1,
              int64_t pad = 0, int64_t groups = 1) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "Conv2D";
  key.inputs = {{{n, cin, hw, hw}, "float16", "ND"}, {{cout, cin / groups, k, k}, "float16", "ND"}};
  if (stride != 1) key.attrs["strides"] = std::to_string(stride) + "," + std::to_string(stride);
  if (pad != 0) key.attrs["pads"] = std::to_string(pad);
  if (groups != 1) key.attrs["groups"] = std::to_string(groups);
  return key;
}

// ResNet-50 v1.5's 23 distinct convolutions at batch 32 (examples/resnet50_convs.json).
std::vector<OpKey> ResNet50Convs() {
  struct C {
    int64_t cin, hw, cout, k, stride, pad;
  };
  const C convs[] = {{3, 224, 64, 7, 2, 3},    {64, 56, 64, 1, 1, 0},     {64, 56, 64, 3, 1, 1},
                     {64, 56, 256, 1, 1, 0},   {256, 56, 64, 1, 1, 0},    {256, 56, 128, 1, 1, 0},
                     {128, 56, 128, 3, 2, 1},  {256, 56, 512, 1, 2, 0},   {128, 28, 512, 1, 1, 0},
                     {512, 28, 128, 1, 1, 0},  {128, 28, 128, 3, 1, 1},   {512, 28, 256, 1, 1, 0},
                     {256, 28, 256, 3, 2, 1},  {512, 28, 1024, 1, 2, 0},  {256, 14, 1024, 1, 1, 0},
                     {1024, 14, 256, 1, 1, 0}, {256, 14, 256, 3, 1, 1},   {1024, 14, 512, 1, 1, 0},
                     {512, 14, 512, 3, 2, 1},  {1024, 14, 2048, 1, 2, 0}, {512, 7, 2048, 1, 1, 0},
                     {2048, 7, 512, 1, 1, 0},  {512, 7, 512, 3, 1, 1}};
  std::vector<OpKey> keys;
  for (const C& c : convs) keys.push_back(ConvKey(32, c.cin, c.hw, c.cout, c.k, c.stride, c.pad));
  return keys;
}

class Conv2dSpaceTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
};

TEST_F(Conv2dSpaceTest, ReadsShapeAttributesAndDefaultsFromAnOpKey) {
  OpKey key = ConvKey(32, 128, 56, 128, 3, 2, 1);
  auto s = Conv2dShapeFromOpKey(key);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->out_h, 28);
  EXPECT_EQ(s->out_w, 28);
  EXPECT_EQ(s->stride_h, 2);
  EXPECT_EQ(s->pad_left, 1);
  EXPECT_EQ(s->dilation_w, 1);
  EXPECT_EQ(s->groups, 1);

  key.attrs = {{"strides", "[1, 1 ,2, 1]"}, {"pads", "3,3,0,1"}, {"dilations", "2"}};
  s = Conv2dShapeFromOpKey(key);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->stride_h, 2);
  EXPECT_EQ(s->stride_w, 1);
  EXPECT_EQ(s->pad_top, 3);
  EXPECT_EQ(s->pad_left, 0);
  EXPECT_EQ(s->pad_right, 1);
  EXPECT_EQ(s->KernelExtentH(), 5);
  EXPECT_EQ(s->out_h, (56 + 6 - 5) / 2 + 1);
  EXPECT_EQ(s->out_w, (56 + 1 - 5) / 1 + 1);
}

TEST_F(Conv2dSpaceTest, MapsOntoTheMatmulSpaceByImplicitIm2colWithGroupsAsTheBatch) {
  Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(8, 64, 28, 128, 3, 1, 1, 4)).value();
  MatmulShape g = Conv2dGemm(s);
  EXPECT_EQ(g.m, 8 * 28 * 28);
  EXPECT_EQ(g.k, 16 * 3 * 3);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.batch, 4);
  auto p = MakeTuningProblem(ConvKey(8, 64, 28, 128, 3, 1, 1, 4), soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->space.dims(), std::size(kMatmulParams));
  for (size_t i = 0; i < p->space.dims(); ++i) EXPECT_EQ(p->space.params()[i].name, kMatmulParams[i]);
}

TEST_F(Conv2dSpaceTest, OpKeyErrorsNameTheFieldToFix) {
  struct Case {
    const char* field;
    std::function<void(OpKey&)> spoil;
  };
  const std::vector<Case> cases = {
      {"channel mismatch", [](OpKey& k) { k.inputs[1].shape[1] = 32; }},
      {"'groups'", [](OpKey& k) { k.attrs["groups"] = "3"; }},
      {"'groups'", [](OpKey& k) { k.attrs["groups"] = "0"; }},
      {"output size", [](OpKey& k) { k.inputs[1].shape[2] = k.inputs[1].shape[3] = 64; }},
      {"'dilations'", [](OpKey& k) { k.attrs["dilations"] = "40"; }},  // extent 81 > 56
      {"'strides'", [](OpKey& k) { k.attrs["strides"] = "0,1"; }},
      {"'strides'", [](OpKey& k) { k.attrs["strides"] = "two"; }},
      {"'strides'", [](OpKey& k) { k.attrs["strides"] = "2,1,1,1"; }},
      {"'strides'", [](OpKey& k) { k.attrs["strides"] = "2,,1"; }},
      {"'strides'", [](OpKey& k) { k.attrs["strides"] = "[]"; }},
      {"'pads'", [](OpKey& k) { k.attrs["pads"] = "1,1,1"; }},
      {"'pads'", [](OpKey& k) { k.attrs["pads"] = "-1"; }},
      {"'data_format'", [](OpKey& k) { k.attrs["data_format"] = "NHWC"; }},
      {"input 0 (x)", [](OpKey& k) { k.inputs[0].shape = {64, 56, 56}; }},
      {"input 1 (weight)", [](OpKey& k) { k.inputs[1].shape = {64, 64}; }},
      {"2 or 3 inputs", [](OpKey& k) { k.inputs.pop_back(); }},
      {"input 2 (bias)", [](OpKey& k) { k.inputs.push_back({{32}, "float16", "ND"}); }},
      {"float32", [](OpKey& k) { k.inputs[0].dtype = k.inputs[1].dtype = "float32"; }},
      {"share a dtype", [](OpKey& k) { k.inputs[1].dtype = "int8"; }},
  };
  for (const Case& c : cases) {
    OpKey key = ConvKey(2, 64, 56, 64, 3, 1, 1);
    c.spoil(key);
    auto p = MakeTuningProblem(key, soc());
    ASSERT_FALSE(p.ok()) << c.field;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(p.status().message().find(c.field), std::string::npos)
        << "want '" << c.field << "' in: " << p.status().message();
  }
}

TEST_F(Conv2dSpaceTest, DefaultTilingIsValidForEveryResNet50Conv) {
  for (const char* soc_name : {"Ascend910B2", "Ascend910"}) {
    auto found = catalog_.Find(soc_name);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    for (OpKey key : ResNet50Convs()) {
      key.soc = soc_name;
      auto p = MakeTuningProblem(key, **found);
      ASSERT_TRUE(p.ok()) << key.Display() << ": " << p.status().ToString();
      EXPECT_TRUE(p->space.Validate(p->default_config).ok()) << key.Display();
      // CANN's heuristic keeps every core busy on these large problems.
      EXPECT_EQ(p->space.Get(p->default_config, "usedCores"), (*found)->ai_core_cnt) << key.Display();
    }
  }
}

TEST_F(Conv2dSpaceTest, DefaultTilingIsValidForDepthwiseDilatedAndTinyConvs) {
  for (const OpKey& key : {ConvKey(32, 64, 56, 64, 3, 1, 1, 64), ConvKey(1, 3, 5, 1, 5),
                           ConvKey(1, 8, 9, 8, 3, 2, 0, 2), ConvKey(4, 32, 4096, 16, 1)}) {
    auto p = MakeTuningProblem(key, soc());
    ASSERT_TRUE(p.ok()) << key.Display() << ": " << p.status().ToString();
    EXPECT_TRUE(p->space.Validate(p->default_config).ok()) << key.Display();
  }
  OpKey dilated = ConvKey(2, 64, 56, 64, 3, 1, 2);
  dilated.attrs["dilations"] = "2,2";
  auto p = MakeTuningProblem(dilated, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->space.Validate(p->default_config).ok());
}

TEST_F(Conv2dSpaceTest, AnInputRowTooWideForL1IsAnInvalidArgumentNamingInW) {
  // One 1 x 140000 kernel row of fp16 (280 KB) twice (ping-pong) cannot fit 512 KiB of L1.
  OpKey wide = ConvKey(1, 1, 1, 16, 1);
  wide.inputs[0].shape = {1, 1, 1, 140000};
  wide.inputs[1].shape = {16, 1, 1, 140000};
  auto bad = MakeTuningProblem(wide, soc());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("in_w"), std::string::npos) << bad.status().message();
  wide.inputs[0].shape[3] = wide.inputs[1].shape[3] = 14000;  // 28 KB rows fit
  EXPECT_TRUE(MakeTuningProblem(wide, soc()).ok());
}

TEST_F(Conv2dSpaceTest, RejectsAnInputWindowThatOverflowsL1WithAReasonNamingIt) {
  // A 1x1 conv: a 128-pixel block spans up to 4 rows of 56, and whole input rows are
  // loaded, so 512 channels of its window overflow L1 although the im2col A chunk
  // (128 x 512) and the B chunk fit the MatMul L1 constraint.
  OpKey key = ConvKey(1, 512, 56, 64, 1);
  auto p = MakeTuningProblem(key, soc());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  MatmulTiling t;
  t.base_m = 64;
  t.step_m = 2;
  t.base_n = 64;
  t.base_k = 128;
  t.step_ka = t.step_kb = 4;
  t.used_cores = 24;
  Conv2dShape s = Conv2dShapeFromOpKey(key).value();
  EXPECT_EQ(Conv2dWindowL1Bytes(s, t), 512 * 4 * 56 * 2);
  auto mm = MatmulTilingSpace(Conv2dGemm(s), soc());
  ASSERT_TRUE(mm.ok());
  EXPECT_TRUE(mm->Validate(MatmulConfigFromTiling(t)).ok()) << "valid for the plain GEMM";
  Status st = p->space.Validate(MatmulConfigFromTiling(t));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("L1 capacity (input window)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("l1_size 524288"), std::string::npos) << st.message();
  t.step_ka = 1;  // 128 channels of the window fit
  EXPECT_TRUE(p->space.Validate(MatmulConfigFromTiling(t)).ok());
}

TEST_F(Conv2dSpaceTest, AOneByOneUnitStrideWindowIsExactlyTheBlocksPixels) {
  Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(4, 64, 56, 64, 1)).value();
  for (int64_t r : {1, 16, 55, 56, 57, 128, 1000, 3136, 3137, 4 * 3136}) {
    EXPECT_DOUBLE_EQ(Conv2dWindowPixels(s, r), static_cast<double>(r)) << r;
    EXPECT_GE(Conv2dWindowPixelsMax(s, r), r) << r;
  }
  EXPECT_EQ(Conv2dChannelLoadsPerPass(s, 16), 64);
  EXPECT_EQ(Conv2dChannelLoadsPerPass(s, 48), 64);
}

TEST_F(Conv2dSpaceTest, A3x3WindowCarriesAHaloAndGrowsWithTheBlock) {
  Conv2dShape s = Conv2dShapeFromOpKey(ConvKey(4, 64, 56, 64, 3, 1, 1)).value();
  double prev = 0;
  for (int64_t r = 1; r <= 5 * 3136; r += 7) {
    const double w = Conv2dWindowPixels(s, r);
    EXPECT_GE(w, prev) << r;
    EXPECT_LE(w, static_cast<double>(Conv2dWindowPixelsMax(s, r))) << r;
    prev = w;
  }
  // Two output rows need four input rows: the halo the next block reads again.
  EXPECT_DOUBLE_EQ(Conv2dWindowPixels(s, 2 * 56), 4.0 * 56);
  // K = 64*9 cut into 64-element chunks: chunk boundaries split channels, which load
  // twice; chunks of 144 = 16 whole channels never split one.
  EXPECT_GT(Conv2dChannelLoadsPerPass(s, 64), 64);
  EXPECT_EQ(Conv2dChannelLoadsPerPass(s, 144), 64);
  EXPECT_EQ(Conv2dChannelLoadsPerPass(s, 576), 64);
  EXPECT_EQ(Conv2dChannelsPerChunkMax(s, 144), 16);
  EXPECT_EQ(Conv2dChannelsPerChunkMax(s, 64), 8);  // 64 elements starting at a channel's last may touch 8
}

TEST(OpAttributes, AMisspelledOrForeignAttributeIsRefusedWithTheKnownOnes) {
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  ASSERT_TRUE(MakeTuningProblem(ConvKey(1, 64, 56, 64, 3, 2, 1, 2), soc).ok()) << "strides, pads, groups are Conv2D's";
  for (const char* typo : {"stride", "group", "kernel_shape"}) {
    OpKey key = ConvKey(1, 64, 56, 64, 3);
    key.attrs[typo] = "2";
    auto p = MakeTuningProblem(key, soc);
    ASSERT_FALSE(p.ok()) << typo << " was silently ignored";
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(std::string("Conv2D has no attribute '") + typo +
                                        "' (known: data_format, dilations, groups, out_dtype, pads, strides)"),
              std::string::npos)
        << p.status().message();
  }
  OpKey relu;
  relu.soc = "Ascend910B2";
  relu.op_type = "Relu";
  relu.inputs = {{{32, 128, 768}, "float16", "ND"}};
  ASSERT_TRUE(MakeTuningProblem(relu, soc).ok());
  relu.attrs["alpha"] = "0.1";
  auto p = MakeTuningProblem(relu, soc);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("Relu has no attribute 'alpha' (it takes none)"), std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace tunefleet
