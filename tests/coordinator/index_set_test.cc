// IndexSet against std::set on random inserts, across the switch from hash set to bitmap.
#include "coordinator/index_set.h"

#include <random>
#include <set>

#include <gtest/gtest.h>

namespace tunefleet::coordinator {
namespace {

TEST(IndexSet, StaysSparseForAFewConfigsOfAHugeSpaceAndAgreesWithStdSetAcrossTheSwitch) {
  const uint64_t space = 2'400'000;
  IndexSet set(space);
  std::set<ConfigIndex> truth;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<ConfigIndex> pick(0, space - 1);
  for (int i = 0; i < 50; ++i) {
    ConfigIndex c = pick(rng);
    EXPECT_EQ(set.insert(c), truth.insert(c).second);
  }
  EXPECT_FALSE(set.is_bitmap()) << "a budget of 50 must not allocate 300 KB of bits";
  while (!set.is_bitmap()) {
    ConfigIndex c = pick(rng);
    ASSERT_EQ(set.insert(c), truth.insert(c).second);
    ASSERT_LT(truth.size(), space / 8) << "never switched to the bitmap";
  }
  EXPECT_LE(truth.size() * IndexSet::kHashedEntryBytes, space / 8 + IndexSet::kHashedEntryBytes)
      << "switches once the bitmap is the smaller";
  for (int i = 0; i < 20000; ++i) {
    ConfigIndex c = pick(rng);
    ASSERT_EQ(set.insert(c), truth.insert(c).second);
  }
  EXPECT_EQ(set.size(), truth.size());
  for (int i = 0; i < 20000; ++i) {
    ConfigIndex c = pick(rng);
    ASSERT_EQ(set.contains(c), truth.count(c) > 0) << c;
  }
  for (ConfigIndex c : truth) ASSERT_TRUE(set.contains(c)) << c;
  set.clear();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_FALSE(set.contains(*truth.begin()));
}

TEST(IndexSet, ATinySpaceAndAnUnsizedSetKeepEveryIndex) {
  IndexSet tiny(10);
  for (ConfigIndex c : {3u, 9u, 0u, 3u}) tiny.insert(c);
  EXPECT_EQ(tiny.size(), 3u);
  EXPECT_TRUE(tiny.contains(9));
  EXPECT_FALSE(tiny.contains(4));
  IndexSet unsized;
  EXPECT_TRUE(unsized.insert(12345));
  EXPECT_TRUE(unsized.contains(12345));
}

}  // namespace
}  // namespace tunefleet::coordinator
