#include "tunefleet/common/matmul_space.h"

#include <gtest/gtest.h>

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey MatmulKey(int64_t m, int64_t n, int64_t k) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = "MatMul";
  key.inputs = {{{m, k}, "float16", "ND"}, {{k, n}, "float16", "ND"}};
  return key;
}

class MatmulSpaceTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
};

TEST_F(MatmulSpaceTest, DefaultTilingIsValidForManyShapes) {
  for (int64_t m : {1, 16, 100, 1024, 4096}) {
    for (int64_t n : {16, 768, 3072}) {
      for (int64_t k : {16, 64, 768}) {
        auto p = MakeTuningProblem(MatmulKey(m, n, k), soc());
        ASSERT_TRUE(p.ok()) << m << "x" << n << "x" << k << ": " << p.status().ToString();
        EXPECT_TRUE(p->space.Validate(p->default_config).ok());
      }
    }
  }
}

TEST_F(MatmulSpaceTest, RejectsL0AOverflowWithReason) {
  auto p = MakeTuningProblem(MatmulKey(4096, 4096, 4096), soc());
  ASSERT_TRUE(p.ok());
  MatmulTiling t = MatmulDefaultTiling(*MatmulShapeFromOpKey(MatmulKey(4096, 4096, 4096)), soc());
  t.base_m = 256;
  t.base_k = 128;
  t.db_l0a = true;  // 256*128*2*2 = 128 KiB > 64 KiB
  Status s = p->space.Validate(MatmulConfigFromTiling(t));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("L0A"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("131072"), std::string::npos) << s.message();
}

TEST_F(MatmulSpaceTest, RejectsMismatchedInnerDimension) {
  OpKey key = MatmulKey(64, 64, 64);
  key.inputs[1].shape = {32, 64};
  auto p = MakeTuningProblem(key, soc());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("inner dimensions"), std::string::npos);
}

TEST_F(MatmulSpaceTest, ATransposeFlagIsTrueFalseOneOrZeroAndAnythingElseIsRefused) {
  OpKey key = MatmulKey(64, 128, 32);
  key.inputs[0].shape = {32, 64};  // A stored as [K, M]
  for (const char* yes : {"1", "true"}) {
    key.attrs["transpose_a"] = yes;
    auto shape = MatmulShapeFromOpKey(key);
    ASSERT_TRUE(shape.ok()) << yes << ": " << shape.status().ToString();
    EXPECT_TRUE(shape->transpose_a);
    EXPECT_EQ(shape->m, 64);
  }
  key.inputs[0].shape = {64, 32};
  for (const char* no : {"0", "false"}) {
    key.attrs["transpose_a"] = no;
    auto shape = MatmulShapeFromOpKey(key);
    ASSERT_TRUE(shape.ok()) << no << ": " << shape.status().ToString();
    EXPECT_FALSE(shape->transpose_a);
  }
  for (const char* op : {"MatMul", "BatchMatMul", "Gemm"}) {
    for (const char* bad : {"True", "yes", "2"}) {
      OpKey k = MatmulKey(64, 128, 32);
      k.op_type = op;
      k.attrs["transpose_b"] = bad;
      auto p = MakeTuningProblem(k, soc());
      ASSERT_FALSE(p.ok()) << op << " took transpose_b=" << bad;
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(p.status().message().find(std::string("transpose_b='") + bad + "' is not a flag: use true/false or 1/0"),
                std::string::npos)
          << p.status().message();
    }
  }
}

TEST_F(MatmulSpaceTest, UnknownOpTypeSaysWhatIsTunable) {
  OpKey key = MatmulKey(64, 64, 64);
  key.op_type = "Frobnicate";
  auto p = MakeTuningProblem(key, soc());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("MatMul"), std::string::npos);
}

TEST_F(MatmulSpaceTest, SmallShapePrunesTheSpace) {
  auto p = MakeTuningProblem(MatmulKey(64, 64, 64), soc());
  ASSERT_TRUE(p.ok());
  size_t valid = p->space.EnumerateValid().size();
  EXPECT_GT(valid, 100u);
  EXPECT_LT(valid, p->space.size()) << "constraints must prune something";
}

}  // namespace
}  // namespace tunefleet
