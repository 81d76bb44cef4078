// BatchMatMul and Gemm as MatMul-space ops: how their op keys map onto one GEMM
// (batch, transposes, a shared 2-D weight, a bias row), the errors that name what to
// fix, and valid default tilings.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet {
namespace {

OpKey Key(const char* op, std::vector<std::vector<int64_t>> shapes, std::map<std::string, std::string> attrs = {}) {
  return test_support::TestKey(op, test_support::Inputs(std::move(shapes)), std::move(attrs));
}

class BatchMatmulGemmTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }
};

TEST_F(BatchMatmulGemmTest, BatchMatMulMultipliesTheLeadingDimensionsIntoTheBatch) {
  auto s = CubeGemmShapeFromOpKey(Key("BatchMatMul", {{4, 12, 128, 64}, {4, 12, 64, 128}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->batch, 48);
  EXPECT_EQ(s->m, 128);
  EXPECT_EQ(s->k, 64);
  EXPECT_EQ(s->n, 128);
  OpKey adj = Key("BatchMatMul", {{48, 64, 128}, {48, 128, 64}});
  adj.attrs = {{"adj_x1", "true"}, {"adj_x2", "1"}};  // CANN's attribute names
  s = CubeGemmShapeFromOpKey(adj);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->transpose_a);
  EXPECT_TRUE(s->transpose_b);
  EXPECT_EQ(s->m, 128);
  EXPECT_EQ(s->k, 64);
  EXPECT_EQ(s->n, 128);
}

TEST_F(BatchMatmulGemmTest, BatchMatMulWithASharedWeightStacksTheBatchIntoM) {
  auto s = CubeGemmShapeFromOpKey(Key("BatchMatMul", {{32, 128, 768}, {768, 3072}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->batch, 1);
  EXPECT_EQ(s->m, 32 * 128);
  EXPECT_EQ(s->n, 3072);
}

TEST_F(BatchMatmulGemmTest, GemmReadsTransposesAndABiasRow) {
  OpKey key = Key("Gemm", {{768, 4096}, {3072, 768}, {3072}});
  key.attrs = {{"transA", "1"}, {"transB", "1"}, {"alpha", "1"}, {"beta", "1"}};
  key.inputs[2].dtype = "float32";
  auto s = CubeGemmShapeFromOpKey(key);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->m, 4096);
  EXPECT_EQ(s->k, 768);
  EXPECT_EQ(s->n, 3072);
  EXPECT_EQ(s->bias_bytes, 4);
  auto plain = CubeGemmShapeFromOpKey(Key("Gemm", {{64, 32}, {32, 16}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->bias_bytes, 0);
}

TEST_F(BatchMatmulGemmTest, ErrorsNameWhatToFix) {
  struct Case {
    OpKey key;
    const char* says;
  };
  OpKey transposed_shared = Key("BatchMatMul", {{8, 64, 128}, {64, 32}});
  transposed_shared.attrs["transpose_a"] = "1";
  OpKey mixed = Key("Gemm", {{64, 32}, {32, 16}});
  mixed.inputs[1].dtype = "bfloat16";
  const Case cases[] = {
      {Key("BatchMatMul", {{4, 64, 32}, {2, 32, 16}}), "batch dimensions differ"},
      {Key("BatchMatMul", {{4, 64, 32}, {4, 16, 16}}), "inner dimensions differ"},
      {Key("BatchMatMul", {{64}, {64, 16}}), "at least 2 dimensions"},
      {Key("BatchMatMul", {{64, 32}, {4, 32, 16}}), "batch dimensions differ"},
      {transposed_shared, "2-D B"},
      {Key("Gemm", {{64, 32}, {32, 16}, {64, 16}}), "input 2 (C)"},
      {Key("Gemm", {{64, 32}, {16, 32}}), "transA/transB"},
      {Key("Gemm", {{4, 64, 32}, {32, 16}}), "2-D matrices"},
      {Key("Gemm", {{64, 32}}), "2 or 3 inputs"},
      {mixed, "share a dtype"},
  };
  for (const Case& c : cases) {
    auto p = MakeTuningProblem(c.key, soc());
    ASSERT_FALSE(p.ok()) << c.says;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(c.says), std::string::npos)
        << "want '" << c.says << "' in: " << p.status().message();
  }
}

// HBM capacity (memory_size, 64 GiB on Ascend910B2): an op whose tensors cannot all be
// in device memory is refused with the sizes, whatever its type; one that fits is tuned.
// Element counts that overflow int64 are refused, not wrapped.
TEST_F(BatchMatmulGemmTest, OpsWhoseTensorsExceedHbmAreRefusedWithTheirSize) {
  struct Case {
    OpKey key;
    const char* says;
  };
  const Case too_big[] = {
      // Inputs of 2 x 2^33 fp16 elements: 32 GiB each, plus a 128 GiB fp16 output.
      {Key("MatMul", {{int64_t{1} << 33, 1}, {1, int64_t{1} << 33}}), "more than Ascend910B2's 64 GiB of HBM"},
      // Small inputs, a 74.5 GiB fp16 output: K = 1; 149 GiB written as fp32.
      {Key("MatMul", {{200000, 1}, {1, 200000}}), "need 74.5 GiB"},
      {Key("MatMul", {{200000, 1}, {1, 200000}}, {{"out_dtype", "float32"}}), "need 149 GiB"},
      {Key("BatchMatMul", {{int64_t{1} << 40, 128, 64}, {64, 128}}), "split the op or check its shape"},
      {Key("MatMul", {{int64_t{1} << 62, int64_t{1} << 62}, {int64_t{1} << 62, 16}}), "HBM (memory_size)"},
      {Key("Add", {{int64_t{1} << 36}, {int64_t{1} << 36}}), "more than Ascend910B2's 64 GiB"},
  };
  for (const Case& c : too_big) {
    auto p = MakeTuningProblem(c.key, soc());
    ASSERT_FALSE(p.ok()) << c.key.Display();
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.key.Display();
    EXPECT_NE(p.status().message().find(c.says), std::string::npos)
        << "want '" << c.says << "' in: " << p.status().message();
  }
  // 24 GiB of inputs and a 16 GiB output fit in 64 GiB.
  auto fits = MakeTuningProblem(Key("MatMul", {{int64_t{1} << 17, int64_t{1} << 16}, {int64_t{1} << 16, int64_t{1} << 16}}), soc());
  EXPECT_TRUE(fits.ok()) << fits.status().ToString();
}

TEST_F(BatchMatmulGemmTest, DefaultTilingsAreValidAndTheOpsAreListedAsTunable) {
  const OpKey keys[] = {Key("BatchMatMul", {{32, 12, 128, 64}, {32, 12, 64, 128}}),
                        Key("BatchMatMul", {{32, 128, 768}, {768, 768}}),
                        Key("BatchMatMul", {{3, 1, 16}, {3, 16, 1}}),
                        Key("Gemm", {{4096, 768}, {768, 3072}, {3072}}),
                        Key("Gemm", {{1, 1}, {1, 1}})};
  for (const OpKey& key : keys) {
    auto p = MakeTuningProblem(key, soc());
    ASSERT_TRUE(p.ok()) << key.Display() << ": " << p.status().ToString();
    EXPECT_TRUE(p->space.Validate(p->default_config).ok()) << key.Display();
  }
  auto types = TunableOpTypes();
  for (const char* t : {"MatMul", "BatchMatMul", "Gemm", "Conv2D"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
  }
}

}  // namespace
}  // namespace tunefleet
