// The nearest-shape index (coordinator/nearest.h) against a real RocksDB folder: it
// answers as a full scan of the knowledge base would, follows writes, and a lookup
// answers only with a neighbour whose config is one of the requested op's space.
#include "coordinator/nearest.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <gtest/gtest.h>

#include "coordinator/lookup.h"
#include "tests/support/scratch_dir.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {
namespace {

OpKey Gemm(int64_t m, int64_t n, const std::string& dtype = "float16", const std::string& soc = "Ascend910B2") {
  OpKey k;
  k.soc = soc;
  k.op_type = "MatMul";
  k.inputs = {{{m, 768}, dtype, "ND"}, {{768, n}, dtype, "ND"}};
  return k;
}

KbEntry Entry(const OpKey& key, double latency_us, std::vector<std::pair<std::string, int64_t>> config = {{"baseM", 64}}) {
  KbEntry e;
  e.key = key;
  e.best_config = std::move(config);
  e.best_latency_us = latency_us;
  e.baseline_latency_us = 2 * latency_us;
  e.improvement = 2;
  e.strategy = "random";
  e.evaluations = 10;
  return e;
}

std::unique_ptr<Store> OpenStore(const testing::ScratchDir& dir) {
  auto s = Store::Open(dir.Path("kb"));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

// What a scan of every entry gives: comparable entries other than the key, by distance,
// then latency, then hash.
std::vector<OpKey> ByScan(const Store& store, const OpKey& key, size_t k) {
  std::vector<std::tuple<double, double, OpKeyHash, OpKey>> all;
  EXPECT_TRUE(store
                  .ForEachKb([&](const KbEntry& e) {
                    auto d = ShapeDistance(key, e.key);
                    if (d && !(e.key == key)) all.emplace_back(*d, e.best_latency_us, HashOpKey(e.key), e.key);
                  })
                  .ok());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) < std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });
  std::vector<OpKey> out;
  for (size_t i = 0; i < all.size() && i < k; ++i) out.push_back(std::get<3>(all[i]));
  return out;
}

std::vector<OpKey> Keys(const std::vector<NearestEntry>& found) {
  std::vector<OpKey> out;
  for (const auto& f : found) out.push_back(f.entry.key);
  return out;
}

TEST(NearestIndex, AnswersAsAScanOfTheKnowledgeBaseAndFollowsItsWrites) {
  testing::ScratchDir dir;
  auto store = OpenStore(dir);
  std::vector<KbEntry> entries;
  for (int64_t m : {32, 64, 128, 256, 1024, 4096}) {
    for (int64_t n : {64, 768}) entries.push_back(Entry(Gemm(m, n), static_cast<double>(m * n) / 1000 + 1));
  }
  entries.push_back(Entry(Gemm(64, 64, "bfloat16"), 0.5));  // another dtype
  entries.push_back(Entry(Gemm(64, 64, "float16", "Ascend910B4"), 0.5));  // another SoC
  entries.push_back(Entry(Gemm(64, 3072), 9));  // at equal distance from (64, 768) as (64, 192) would be
  ASSERT_TRUE(store->MergeKb(entries).ok());
  auto index = NearestIndex::Build(*store);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->size(), entries.size());
  auto any = [](const KbEntry&) { return true; };
  for (const OpKey& q : {Gemm(48, 64), Gemm(100, 768), Gemm(64, 768), Gemm(64, 192), Gemm(5000, 100), Gemm(64, 64, "bfloat16")}) {
    auto found = index->Find(*store, q, 4, any);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(Keys(*found), ByScan(*store, q, 4)) << q.Display();
    for (const auto& f : *found) EXPECT_NEAR(f.distance, *ShapeDistance(q, f.entry.key), 1e-12);
  }
  EXPECT_TRUE(index->Find(*store, Gemm(64, 64, "int8"), 4, any)->empty()) << "no int8 entry: nothing comparable";

  // A write the index is told of: a new entry nearer than all, and a faster replacement
  // that wins a tie.
  const KbEntry near = Entry(Gemm(90, 64), 3);
  ASSERT_TRUE(store->MergeKb({near}).ok());
  index->Put(near);
  EXPECT_EQ(Keys(*index->Find(*store, Gemm(100, 64), 1, any)), std::vector<OpKey>{Gemm(90, 64)});
  // (256, 64) and (1024, 64) are both ln 2 from (512, 64): the faster one answers, (256,
  // 64) until (1024, 64) is replaced by a faster entry.
  EXPECT_EQ(Keys(*index->Find(*store, Gemm(512, 64), 1, any)), std::vector<OpKey>{Gemm(256, 64)});
  KbEntry faster = Entry(Gemm(1024, 64), 0.1);
  ASSERT_TRUE(store->MergeKb({faster}).ok());
  index->Put(faster);
  EXPECT_EQ(index->size(), entries.size() + 1) << "a replacement is not a new entry";
  auto tie = index->Find(*store, Gemm(512, 64), 1, any);
  ASSERT_TRUE(tie.ok());
  EXPECT_EQ(Keys(*tie), ByScan(*store, Gemm(512, 64), 1));
  ASSERT_EQ(tie->size(), 1u);
  EXPECT_EQ((*tie)[0].entry.key.Display(), Gemm(1024, 64).Display());
  // `fits` skips an entry: the next one answers.
  auto skipping = index->Find(*store, Gemm(512, 64), 1, [](const KbEntry& e) { return !(e.key == Gemm(1024, 64)); });
  ASSERT_TRUE(skipping.ok());
  ASSERT_EQ(skipping->size(), 1u);
  EXPECT_EQ((*skipping)[0].entry.key.Display(), Gemm(256, 64).Display());
  // When the nearest few all misfit, the search goes on through the rest, in order.
  std::vector<KbEntry> more;
  for (int64_t m = 40; m < 72; ++m) more.push_back(Entry(Gemm(m, 64), 1));
  ASSERT_TRUE(store->MergeKb(more).ok());
  for (const KbEntry& e : more) index->Put(e);
  auto far = index->Find(*store, Gemm(56, 64), 2, [](const KbEntry& e) { return e.key.inputs[0].shape[0] >= 4096; });
  ASSERT_TRUE(far.ok());
  ASSERT_EQ(far->size(), 2u);
  EXPECT_EQ((*far)[0].entry.key.Display(), Gemm(4096, 64).Display());
  EXPECT_EQ((*far)[1].entry.key.Display(), Gemm(4096, 768).Display());
}

// Found by an audit: a 768-wide neighbour's baseN=256 was handed out for a 64-wide MatMul,
// a config its space does not have. The lookup answers with the nearest neighbour whose
// config is one of the requested key's space.
TEST(NearestLookup, AnswersOnlyWithANeighboursConfigThatIsOneOfTheKeysSpace) {
  const SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  const OpKey asked = Gemm(4096, 64);
  TuningProblem own = MakeTuningProblem(asked, soc).value();
  auto named = [](const SearchSpace& space, ConfigIndex i) {
    std::vector<std::pair<std::string, int64_t>> out;
    const Config c = space.Decode(i);
    for (size_t p = 0; p < c.size(); ++p) out.emplace_back(space.params()[p].name, c[p]);
    return out;
  };
  auto fits_own = [&](const std::vector<std::pair<std::string, int64_t>>& config) {
    auto c = own.space.FromNamed(config);
    return c.ok() && own.space.Validate(*c).ok();
  };
  // The nearer neighbour (N 128, ln 2 away) with a config that is none of the 64-wide
  // space's; a farther one (N 16, ln 4 away) with one that is.
  TuningProblem wide = MakeTuningProblem(Gemm(4096, 128), soc).value();
  TuningProblem narrow = MakeTuningProblem(Gemm(4096, 16), soc).value();
  std::optional<std::vector<std::pair<std::string, int64_t>>> misfit, fit;
  wide.space.ForEachValid([&](ConfigIndex i) {
    auto c = named(wide.space, i);
    if (!fits_own(c)) misfit = c;
    return !misfit;
  });
  narrow.space.ForEachValid([&](ConfigIndex i) {
    auto c = named(narrow.space, i);
    if (fits_own(c)) fit = c;
    return !fit;
  });
  ASSERT_TRUE(misfit && fit);
  testing::ScratchDir dir;
  auto store = OpenStore(dir);
  ASSERT_TRUE(store->MergeKb({Entry(wide.key, 5, *misfit), Entry(narrow.key, 5, *fit)}).ok());
  auto space_of = [&](const OpKey& key) -> Result<std::optional<SearchSpace>> {
    return std::optional<SearchSpace>(MakeTuningProblem(key, soc).value().space);
  };
  auto answers = LookUp(*store, {asked}, /*nearest=*/true, space_of);
  ASSERT_TRUE(answers.ok()) << answers.status().ToString();
  ASSERT_TRUE((*answers)[0].entry);
  EXPECT_TRUE((*answers)[0].approximate);
  EXPECT_EQ((*answers)[0].entry->key, narrow.key) << "the nearer neighbour's config is none of this space's";
  EXPECT_NEAR((*answers)[0].distance, std::log(4.0), 1e-12);
  // Where the key's space is not known (a replayed kernel's outside its coordinator), the
  // nearest answers.
  auto unknown = LookUp(*store, {asked}, true, [](const OpKey&) { return Result<std::optional<SearchSpace>>(std::nullopt); });
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ((*unknown)[0].entry->key, wide.key);
}

}  // namespace
}  // namespace tunefleet::coordinator
