#include "coordinator/strategy.h"

#include <set>

#include <gtest/gtest.h>

namespace tunefleet::coordinator {
namespace {

SearchSpace Space() {
  return SearchSpace::Create(
             {{"a", {1, 2, 3, 4, 5, 6, 7, 8}}, {"b", {1, 2, 3, 4, 5, 6, 7, 8}}, {"c", {0, 1, 2}}},
             {{"a+b<=12", [](const SearchSpace& s, const Config& c) -> std::string {
                return s.Get(c, "a") + s.Get(c, "b") > 12 ? "too big" : "";
              }}})
      .value();
}

std::vector<ConfigIndex> Drain(Strategy& s, size_t batch, const Strategy::Taken& taken = {}) {
  std::vector<ConfigIndex> all;
  for (;;) {
    Batch b = s.Ask(batch, taken);
    if (b.configs.empty()) return all;
    all.insert(all.end(), b.configs.begin(), b.configs.end());
  }
}

TEST(Strategies, NeverProposeTwiceOrAnInvalidConfigAndCoverTheValidSpace) {
  SearchSpace space = Space();
  std::vector<ConfigIndex> valid = space.EnumerateValid();
  for (const std::string name : {"exhaustive", "random"}) {
    auto s = MakeStrategy(name, space, 3).value();
    std::vector<ConfigIndex> got = Drain(*s, 7);
    std::set<ConfigIndex> unique(got.begin(), got.end());
    EXPECT_EQ(unique.size(), got.size()) << name << " proposed a config twice";
    EXPECT_EQ(got.size(), valid.size()) << name;
    for (ConfigIndex i : got) EXPECT_TRUE(space.ValidateIndex(i).ok()) << name << " proposed invalid " << i;
  }
}

TEST(Strategies, RandomIsDeterministicPerSeed) {
  SearchSpace space = Space();
  auto a = Drain(*MakeStrategy("random", space, 11).value(), 5);
  auto b = Drain(*MakeStrategy("random", space, 11).value(), 5);
  auto c = Drain(*MakeStrategy("random", space, 12).value(), 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Strategies, SkipWhatIsAlreadyTaken) {
  SearchSpace space = Space();
  std::vector<ConfigIndex> valid = space.EnumerateValid();
  std::set<ConfigIndex> taken(valid.begin(), valid.begin() + 10);
  auto is_taken = [&](ConfigIndex i) { return taken.count(i) > 0; };
  for (const std::string name : {"exhaustive", "random"}) {
    auto got = Drain(*MakeStrategy(name, space, 1).value(), 4, is_taken);
    EXPECT_EQ(got.size(), valid.size() - taken.size()) << name;
    for (ConfigIndex i : got) EXPECT_FALSE(taken.count(i)) << name;
  }
}

TEST(Strategies, ExhaustiveSendsCompactRangesHoldingExactlyTheValidConfigs) {
  SearchSpace space = Space();
  auto s = MakeStrategy("exhaustive", space, 0).value();
  Batch b = s->Ask(20, {});
  ASSERT_TRUE(b.is_range);
  std::vector<ConfigIndex> in_range;
  for (ConfigIndex i = b.begin; i < b.end; ++i) {
    if (space.ValidateIndex(i).ok()) in_range.push_back(i);
  }
  EXPECT_EQ(in_range, b.configs);
}

TEST(Strategies, UnknownNameListsTheKnownOnes) {
  SearchSpace space = Space();
  auto s = MakeStrategy("bayesian", space, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exhaustive"), std::string::npos);
}

}  // namespace
}  // namespace tunefleet::coordinator
