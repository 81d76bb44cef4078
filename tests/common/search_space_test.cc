#include "tunefleet/common/search_space.h"

#include <random>
#include <set>

#include <gtest/gtest.h>

namespace tunefleet {
namespace {

SearchSpace MakeSpace() {
  std::vector<Parameter> params = {{"a", {1, 2, 4}}, {"b", {10, 20}}, {"c", {0, 1, 2, 3, 5}}};
  std::vector<SearchSpace::Constraint> constraints = {
      {"a*c bounded", [](const SearchSpace& s, const Config& c, std::string* why) -> bool {
         int64_t p = s.Get(c, "a") * s.Get(c, "c");
         return p <= 8 || Violated(why, [&] { return "a*c = " + std::to_string(p) + " exceeds 8"; });
       }}};
  return std::move(SearchSpace::Create(params, constraints)).value();
}

TEST(SearchSpace, EncodeDecodeRoundTripsEveryIndex) {
  SearchSpace s = MakeSpace();
  ASSERT_EQ(s.size(), 30u);
  std::set<Config> seen;
  for (ConfigIndex i = 0; i < s.size(); ++i) {
    Config c = s.Decode(i);
    auto back = s.Encode(c);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, i);
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), s.size()) << "decode must be a bijection";
}

TEST(SearchSpace, LastParameterVariesFastest) {
  SearchSpace s = MakeSpace();
  EXPECT_EQ(s.Decode(0), (Config{1, 10, 0}));
  EXPECT_EQ(s.Decode(1), (Config{1, 10, 1}));
  EXPECT_EQ(s.Decode(5), (Config{1, 20, 0}));
  EXPECT_EQ(s.Decode(29), (Config{4, 20, 5}));
}

TEST(SearchSpace, RandomRoundTripOnALargeSpace) {
  std::vector<Parameter> params;
  for (int p = 0; p < 12; ++p) params.push_back({"p" + std::to_string(p), {1, 2, 3, 5, 7, 11, 13}});
  auto s = SearchSpace::Create(params, {});
  ASSERT_TRUE(s.ok());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    ConfigIndex idx = rng() % s->size();
    EXPECT_EQ(*s->Encode(s->Decode(idx)), idx);
  }
}

TEST(SearchSpace, ConstraintRejectsWithReason) {
  SearchSpace s = MakeSpace();
  Status st = s.Validate({4, 10, 3});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("a*c bounded"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("12 exceeds 8"), std::string::npos) << st.message();
  EXPECT_TRUE(s.Validate({2, 10, 3}).ok());
}

TEST(SearchSpace, EncodeRejectsValueOutsideTheList) {
  SearchSpace s = MakeSpace();
  auto r = s.Encode({3, 10, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a=3"), std::string::npos);
  EXPECT_FALSE(s.Encode({1, 10}).ok());
  EXPECT_FALSE(s.ValidateIndex(30).ok());
}

TEST(SearchSpace, EnumerateValidMatchesValidate) {
  SearchSpace s = MakeSpace();
  std::vector<ConfigIndex> valid = s.EnumerateValid();
  size_t expected = 0;
  for (ConfigIndex i = 0; i < s.size(); ++i) expected += s.ValidateIndex(i).ok();
  EXPECT_EQ(valid.size(), expected);
  EXPECT_LT(valid.size(), s.size());
  for (ConfigIndex i : valid) EXPECT_TRUE(s.ValidateIndex(i).ok());
}

// Scans ask for no reason: IsValid answers as Validate does and builds none, so a
// strategy scanning a sparse space does not format a message per config it skips.
TEST(SearchSpace, IsValidAnswersAsValidateAndBuildsNoReason) {
  int reasons = 0;
  SearchSpace s = SearchSpace::Create({{"a", {1, 2, 4}}, {"b", {10, 20}}, {"c", {0, 1, 2, 3, 5}}},
                                      {{"a*c bounded", [&reasons](const SearchSpace& sp, const Config& c, std::string* why) {
                                          const int64_t p = sp.Get(c, "a") * sp.Get(c, "c");
                                          return p <= 8 || Violated(why, [&] {
                                                   ++reasons;
                                                   return "a*c = " + std::to_string(p) + " exceeds 8";
                                                 });
                                        }}})
                      .value();
  size_t valid = 0;
  for (ConfigIndex i = 0; i < s.size(); ++i) valid += s.IsValidIndex(i);
  s.ForEachValid([](ConfigIndex) { return true; });
  EXPECT_EQ(reasons, 0) << "a scan built reasons";
  size_t validated = 0;
  for (ConfigIndex i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s.IsValidIndex(i), s.ValidateIndex(i).ok()) << i;
    EXPECT_EQ(s.IsValid(s.Decode(i)), s.ValidateIndex(i).ok()) << i;
    validated += s.ValidateIndex(i).ok();
  }
  EXPECT_EQ(valid, validated);
  EXPECT_GT(valid, 0u);
  EXPECT_LT(valid, s.size());
  EXPECT_EQ(reasons, static_cast<int>(3 * (s.size() - valid))) << "each of the 3 Validate calls a config builds one reason";
  EXPECT_FALSE(s.IsValidIndex(s.size())) << "an index outside the space";
}

TEST(SearchSpace, CreateRejectsBadParameters) {
  EXPECT_FALSE(SearchSpace::Create({}, {}).ok());
  EXPECT_FALSE(SearchSpace::Create({{"a", {}}}, {}).ok());
  EXPECT_FALSE(SearchSpace::Create({{"a", {1, 1}}}, {}).ok());
  EXPECT_FALSE(SearchSpace::Create({{"a", {1}}, {"a", {2}}}, {}).ok());
}

}  // namespace
}  // namespace tunefleet
