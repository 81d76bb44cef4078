#include "tunefleet/common/soc_spec.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

TEST(SocCatalog, BuiltinHasAscend910B2WithPublicValues) {
  SocCatalog c = SocCatalog::Builtin();
  auto s = c.Find("Ascend910B2");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->ai_core_cnt, 24);
  EXPECT_EQ((*s)->vector_core_cnt, 48);
  EXPECT_EQ((*s)->l0_a_size, 65536);
  EXPECT_EQ((*s)->l0_c_size, 131072);
  EXPECT_EQ((*s)->l1_size, 524288);
  EXPECT_EQ((*s)->ub_size, 196608);
  EXPECT_EQ((*s)->l2_size, 201326592);
  EXPECT_DOUBLE_EQ((*s)->cube_freq_mhz, 1800);
  // 24 cores x 4096 MAC x 2 x 1.8 GHz (NPU_MODEL.md "Calibration").
  EXPECT_NEAR((*s)->CubePeakFlops(), 353.9e12, 0.1e12);
}

TEST(SocCatalog, EveryBuiltinSocParsesWithItsPublicCoreCounts) {
  SocCatalog c = SocCatalog::Builtin();
  EXPECT_EQ(c.Names(), (std::vector<std::string>{"Ascend910", "Ascend910B2", "Ascend910B4"}));
  auto b4 = c.Find("Ascend910B4");
  ASSERT_TRUE(b4.ok());
  EXPECT_EQ((*b4)->ai_core_cnt, 20);
  EXPECT_EQ((*b4)->vector_core_cnt, 40);
  EXPECT_DOUBLE_EQ((*b4)->cube_freq_mhz, 1500);
  EXPECT_EQ((*b4)->l2_size, 100663296);
  auto a1 = c.Find("Ascend910");
  ASSERT_TRUE(a1.ok());
  EXPECT_EQ((*a1)->ai_core_cnt, 32);
  EXPECT_EQ((*a1)->vector_core_cnt, 32) << "A1: the vector unit is inside each AI Core";
  EXPECT_EQ((*a1)->l0_c_size, 262144);
  EXPECT_EQ((*a1)->l1_size, 1048576);
  EXPECT_EQ((*a1)->ub_size, 262144);
  // A slower chip with fewer cores has a lower cube peak.
  EXPECT_LT((*b4)->CubePeakFlops(), (*c.Find("Ascend910B2"))->CubePeakFlops());
  // bfloat16 came with the 910B parts (CANN's Intrinsic_mmad lists bf162f32 there only).
  EXPECT_FALSE((*a1)->supports_bf16);
  EXPECT_TRUE((*b4)->supports_bf16);
  EXPECT_TRUE((*c.Find("Ascend910B2"))->supports_bf16);
}

// An op in bfloat16 on the 910 is refused with what to use instead; fp16 is tuned.
TEST(SocCatalog, TheFirstGenerationRefusesBfloat16Ops) {
  SocCatalog c = SocCatalog::Builtin();
  for (const std::string op : {"MatMul", "Gelu"}) {
    OpKey key;
    key.soc = "Ascend910";
    key.op_type = op;
    key.inputs = {{{1024, 1024}, "bfloat16", "ND"}};
    if (op == "MatMul") key.inputs.push_back({{1024, 1024}, "bfloat16", "ND"});
    auto refused = MakeTuningProblem(key, **c.Find("Ascend910"));
    ASSERT_FALSE(refused.ok()) << op;
    EXPECT_NE(refused.status().message().find("Ascend910 has no bfloat16"), std::string::npos) << refused.status().message();
    OpKey b2 = key;
    b2.soc = "Ascend910B2";
    EXPECT_TRUE(MakeTuningProblem(b2, **c.Find("Ascend910B2")).ok()) << op << " in bf16 on the 910B2";
    for (auto& in : key.inputs) in.dtype = "float16";
    EXPECT_TRUE(MakeTuningProblem(key, **c.Find("Ascend910")).ok()) << op << " in fp16 on the 910";
  }
  OpKey cast;
  cast.soc = "Ascend910";
  cast.op_type = "Cast";
  cast.inputs = {{{1024, 1024}, "float32", "ND"}};
  cast.attrs = {{"dst_type", "bfloat16"}};
  EXPECT_FALSE(MakeTuningProblem(cast, **c.Find("Ascend910")).ok());
  // Nor may an fp16 GEMM write bfloat16 there.
  OpKey mm;
  mm.soc = "Ascend910";
  mm.op_type = "MatMul";
  mm.inputs = {{{64, 64}, "float16", "ND"}, {{64, 64}, "float16", "ND"}};
  mm.attrs = {{"out_dtype", "bfloat16"}};
  auto bf16_out = MakeTuningProblem(mm, **c.Find("Ascend910"));
  ASSERT_FALSE(bf16_out.ok());
  EXPECT_NE(bf16_out.status().message().find("Ascend910 has no bfloat16"), std::string::npos) << bf16_out.status().message();
}

TEST(SocCatalog, UnknownSocListsKnownOnes) {
  auto s = SocCatalog::Builtin().Find("Ascend999");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("Ascend910B2"), std::string::npos);
}

// Found by an audit: a --soc-dir spec named Ascend910B2 with twice the HBM bandwidth
// replaced the built-in one, and its results (faster than any real part) were filed under
// Ascend910B2 and exported into a stock knowledge base. A file naming a known SoC must
// match it; a new name is added.
TEST(SocCatalog, ADirectorySpecNamingAKnownSocWithOtherValuesIsRefused) {
  testing::ScratchDir dir;
  std::ifstream builtin(std::string(TUNEFLEET_SOURCE_DIR) + "/common/soc/Ascend910B2.ini");
  std::stringstream text;
  text << builtin.rdbuf();
  auto write = [&](const std::string& file, const std::string& body) { std::ofstream(dir.Path(file)) << body; };
  write("same.ini", text.str());
  SocCatalog catalog = SocCatalog::Builtin();
  EXPECT_TRUE(catalog.LoadDirectory(dir.Path()).ok()) << "the same values: nothing changes";
  std::string lab = text.str();
  const size_t at = lab.find("SoC_version=Ascend910B2");
  ASSERT_NE(at, std::string::npos);
  lab.replace(at, std::string("SoC_version=Ascend910B2").size(), "SoC_version=Ascend910B2-lab");
  const size_t hbm = lab.find("hbm_bandwidth_gbps=");
  ASSERT_NE(hbm, std::string::npos);
  lab.insert(hbm + std::string("hbm_bandwidth_gbps=").size(), "1");  // 1xxxx GB/s: another part
  write("lab.ini", lab);
  EXPECT_TRUE(catalog.LoadDirectory(dir.Path()).ok());
  ASSERT_TRUE(catalog.Find("Ascend910B2-lab").ok());
  EXPECT_NE((*catalog.Find("Ascend910B2-lab"))->hbm_bandwidth_gbps, (*catalog.Find("Ascend910B2"))->hbm_bandwidth_gbps);
  std::string modified = lab;
  modified.replace(modified.find("SoC_version=Ascend910B2-lab"), std::string("SoC_version=Ascend910B2-lab").size(),
                   "SoC_version=Ascend910B2");
  write("modified.ini", modified);
  Status s = catalog.LoadDirectory(dir.Path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("modified.ini: SoC_version 'Ascend910B2' names a SoC already known, with other values"),
            std::string::npos)
      << s.message();
}

TEST(ParseSocSpec, MissingKeyIsNamedWithItsSection) {
  auto s = ParseSocSpec("[version]\nSoC_version=X\n[SoCInfo]\nai_core_cnt=4\n", "x.ini");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("'vector_core_cnt'"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("[SoCInfo]"), std::string::npos);
}

TEST(ParseSocSpec, MalformedLineAndBadValueAreNamed) {
  auto s = ParseSocSpec("[version]\nSoC_version\n", "y.ini");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("y.ini:2"), std::string::npos) << s.status().message();
  auto v = ParseSocSpec("[version]\nSoC_version=X\n[SoCInfo]\nai_core_cnt=many\n", "z.ini");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("'ai_core_cnt'"), std::string::npos) << v.status().message();
}

}  // namespace
}  // namespace tunefleet
