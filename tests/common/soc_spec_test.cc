#include "tunefleet/common/soc_spec.h"

#include <gtest/gtest.h>

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
}

TEST(SocCatalog, UnknownSocListsKnownOnes) {
  auto s = SocCatalog::Builtin().Find("Ascend999");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("Ascend910B2"), std::string::npos);
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
