#include "tunefleet/common/op_key.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
            "attr=transpose_a=0,transpose_b=0;mv=4");
}

TEST(OpKey, HashIsStableAcrossRuns) {
  // Pinned: a change here silently orphans every knowledge-base entry in the fleet.
  EXPECT_EQ(HashOpKey(MatmulKey(1024, 1024, 1024)).Hex(), "3f77cf834fdde926d4eae258200bbc65");
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

}  // namespace
}  // namespace tunefleet
