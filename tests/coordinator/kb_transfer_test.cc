// Knowledge-base export and import: the JSON-lines form, the wire record, paging and
// merging in a real RocksDB folder, and the checks every imported entry passes.
#include "coordinator/kb_transfer.h"

#include <filesystem>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "coordinator/store.h"
#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/wire.h"
#include "tests/support/scratch_dir.h"

namespace tunefleet::coordinator {
namespace {

OpKey Matmul(int64_t m) {
  OpKey k;
  k.soc = "Ascend910B2";
  k.op_type = "MatMul";
  k.inputs = {{{m, 256}, "float16", "ND"}, {{256, 256}, "float16", "ND"}};
  return k;
}

class KbTransferTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = std::move(Store::Open(dir_.Path("kb")).value()); }
  void TearDown() override { store_.reset(); }

  // An entry of Matmul(m) at its default tiling, as a finished task would write it.
  KbEntry Entry(int64_t m, double best_us) const {
    const SocSpec* soc = catalog_.Find("Ascend910B2").value();
    TuningProblem p = MakeTuningProblem(Matmul(m), *soc).value();
    KbEntry e;
    e.key = p.key;
    e.best_index = p.default_index;
    for (size_t i = 0; i < p.space.dims(); ++i) e.best_config.emplace_back(p.space.params()[i].name, p.default_config[i]);
    e.best_latency_us = best_us;
    e.baseline_latency_us = 2 * best_us;
    e.improvement = 2;
    e.strategy = "model";
    e.evaluations = 77;
    e.job_id = 5;
    e.timestamp_ms = 1'700'000'000'000;
    return e;
  }

  ProblemLookup Checks() const {
    return [this](const OpKey& key) -> Result<std::optional<ImportCheck>> {
      TF_ASSIGN_OR_RETURN(const SocSpec* soc, catalog_.Find(key.soc));
      TF_ASSIGN_OR_RETURN(ImportCheck check, SimulatedImportCheck(key, *soc));
      return std::optional<ImportCheck>(std::move(check));
    };
  }

  SocCatalog catalog_ = SocCatalog::Builtin();
  testing::ScratchDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(KbTransferTest, AnEntrySurvivesItsJsonLineAndItsWireRecordUnchanged) {
  const KbEntry e = Entry(64, 12.5);
  auto back = KbEntryFromJson(nlohmann::json::parse(KbEntryToJson(e).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, e);

  capnp::MallocMessageBuilder b;
  wire::FillKbRecord(b.initRoot<schema::KbRecord>(), e);
  auto read = wire::ReadKbRecord(b.getRoot<schema::KbRecord>().asReader());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, e);
}

TEST_F(KbTransferTest, AMalformedLineNamesTheFieldToFix) {
  nlohmann::json j = KbEntryToJson(Entry(64, 12.5));
  auto with = [&](const char* field, nlohmann::json value) {
    nlohmann::json k = j;
    k[field] = std::move(value);
    return KbEntryFromJson(k).status().message();
  };
  EXPECT_NE(with("best_laterncy_us", 1).find("unknown field 'best_laterncy_us'"), std::string::npos);
  EXPECT_NE(with("best_latency_us", "fast").find("'best_latency_us' is \"fast\""), std::string::npos);
  EXPECT_NE(with("best_config_index", -1).find("best_config_index"), std::string::npos);
  nlohmann::json config = j["best_config"];
  config["baseM"] = 1.5;
  EXPECT_NE(with("best_config", config).find("best_config 'baseM' is 1.5, not a 64-bit integer"), std::string::npos);
  nlohmann::json no_key = j;
  no_key.erase("op_key");
  EXPECT_NE(KbEntryFromJson(no_key).status().message().find("missing 'op_key'"), std::string::npos);
  // Another model version is read, to be refused by the importer with its reason.
  nlohmann::json old = j;
  old["op_key"]["model_version"] = kSimModelVersion - 1;
  auto read = KbEntryFromJson(old);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->key.model_version, kSimModelVersion - 1);
}

TEST_F(KbTransferTest, PagesCoverEveryEntryOnceInKeyOrder) {
  std::vector<KbEntry> entries;
  for (int64_t m = 16; m <= 16 * 25; m += 16) entries.push_back(Entry(m, 10));
  // One entry whose key reads back as another (a NUL cuts the stored text short): its
  // hash recomputed after reading is not where it is stored. Paging by that hash went
  // round in circles for ever; paging goes by the stored key.
  KbEntry cut = Entry(16, 10);
  cut.key.attrs["note"] = std::string("a\0b", 3);
  entries.push_back(cut);
  ASSERT_TRUE(store_->MergeKb(entries).ok());
  std::vector<std::string> seen;
  std::string after;
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 30) << "paging does not end";
    auto page = store_->KbPage(after, 4);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const KbEntry& e : page->entries) seen.push_back(HashOpKey(e.key).Bytes());
    if (page->entries.size() < 4) break;
    ASSERT_FALSE(page->last_key.empty());
    after = page->last_key;
  }
  ASSERT_EQ(seen.size(), entries.size());
}

TEST_F(KbTransferTest, MergingKeepsTheFasterEntryPerKeyAndADryRunWritesNothing) {
  ASSERT_TRUE(store_->MergeKb({Entry(64, 10)}).ok());
  using M = Store::Merge;
  auto dry = store_->MergeKb({Entry(64, 9), Entry(128, 10)}, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(*dry, (std::vector<M>{M::kReplaced, M::kAdded}));
  EXPECT_DOUBLE_EQ(store_->GetKb(HashOpKey(Entry(64, 0).key)).value()->best_latency_us, 10);
  EXPECT_FALSE(store_->GetKb(HashOpKey(Entry(128, 0).key)).value().has_value());

  // Slower and equal entries are kept out; a key twice in one merge keeps its faster one.
  auto merged = store_->MergeKb({Entry(64, 11), Entry(64, 10), Entry(128, 8), Entry(128, 7), Entry(128, 9)});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, (std::vector<M>{M::kKept, M::kKept, M::kAdded, M::kReplaced, M::kKept}));
  EXPECT_DOUBLE_EQ(store_->GetKb(HashOpKey(Entry(64, 0).key)).value()->best_latency_us, 10);
  EXPECT_DOUBLE_EQ(store_->GetKb(HashOpKey(Entry(128, 0).key)).value()->best_latency_us, 7);
}

TEST_F(KbTransferTest, AnImportedEntryIsMadeWhatTheKnowledgeBaseWouldHaveStored) {
  KbEntry e = Entry(64, 20);
  std::reverse(e.best_config.begin(), e.best_config.end());  // a hand-edited file's order
  e.improvement = 99;                                        // recomputed from the latencies
  e.key.attrs = {{"transpose_a", "false"}};                  // canonical: left out
  ASSERT_TRUE(PrepareImportedEntry(e, Checks()).ok());
  EXPECT_EQ(e.best_config, Entry(64, 20).best_config);
  EXPECT_DOUBLE_EQ(e.improvement, 2);
  EXPECT_EQ(e.key, Entry(64, 20).key);
}

TEST_F(KbTransferTest, AnEntryThisBuildCannotVouchForIsRefusedWithTheReason) {
  auto refusal = [&](const std::function<void(KbEntry&)>& edit) {
    KbEntry e = Entry(64, 20);
    edit(e);
    return PrepareImportedEntry(e, Checks()).message();
  };
  auto has = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.key.model_version = kSimModelVersion - 1; }), "model version"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.best_latency_us = 0; }), "best_latency_us must be a positive"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.best_latency_us = 0.5; }), "below what any config"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.baseline_latency_us = -1; }), "baseline_latency_us"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.key.soc = "Ascend999"; }), "Ascend999"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { ++e.best_index; }), "names another config"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.best_config.pop_back(); }), "lacks the parameter"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.best_config.emplace_back("warp", 4); }), "does not tune"));
  EXPECT_TRUE(has(refusal([](KbEntry& e) { e.best_config[0].second = 3; }), "not one of the parameter's values"));
}

TEST_F(KbTransferTest, AConfigTheOpsConstraintsRuleOutIsRefused) {
  const SocSpec* soc = catalog_.Find("Ascend910B2").value();
  TuningProblem p = MakeTuningProblem(Matmul(64), *soc).value();
  std::optional<ConfigIndex> invalid;
  for (ConfigIndex i = 0; i < p.space.size() && !invalid; ++i) {
    if (!p.space.ValidateIndex(i).ok()) invalid = i;
  }
  ASSERT_TRUE(invalid) << "the space has no invalid config to try";
  KbEntry e = Entry(64, 20);
  e.best_index = *invalid;
  const Config c = p.space.Decode(*invalid);
  for (size_t i = 0; i < c.size(); ++i) e.best_config[i].second = c[i];
  Status s = PrepareImportedEntry(e, Checks());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("best_config", 0), 0u) << s.message();
}

// A replayed kernel's entry must carry the time its cache measured for the config: a
// made-up faster one would otherwise be served for good (only a faster entry replaces).
TEST_F(KbTransferTest, AReplayedKernelsLatencyMustBeTheMeasuredOne) {
  KtCache cache = KtCache::Parse(R"({
    "device_name": "Toy GPU", "kernel_name": "toy", "objective": "time",
    "tune_params_keys": ["bx", "tile"], "tune_params": {"bx": [1, 2], "tile": [1, 2, 4]},
    "cache": {"1,1": {"time": 3.0}, "1,2": {"time": 1.5}, "1,4": {"time": "CompilationFailedConfig"}}})",
                                 "toy").value();
  OpKey key;
  key.soc = std::string(kReplaySoc);
  key.op_type = "toy";
  key.inputs = {{{1}, "float16", "ND"}};
  auto check = [&](const OpKey&) -> Result<std::optional<ImportCheck>> {
    TF_ASSIGN_OR_RETURN(ImportCheck c, ReplayImportCheck(key, cache));
    return std::optional<ImportCheck>(std::move(c));
  };
  auto entry = [&](int64_t tile, double us) {
    KbEntry e;
    e.key = key;
    e.best_config = {{"bx", 1}, {"tile", tile}};
    e.best_index = cache.space().Encode({1, tile}).value();
    e.best_latency_us = us;
    e.baseline_latency_us = 3000;
    return e;
  };
  KbEntry measured = entry(2, 1500);
  EXPECT_TRUE(PrepareImportedEntry(measured, check).ok());
  KbEntry faster = entry(2, 1);
  EXPECT_NE(PrepareImportedEntry(faster, check).message().find("not the time the kernel's cache measured"),
            std::string::npos);
  KbEntry failed = entry(4, 1500);
  EXPECT_NE(PrepareImportedEntry(failed, check).message().find("no successful measurement"), std::string::npos);
}

TEST_F(KbTransferTest, NumbersThatWouldWrapAndNulCharactersAreRefused) {
  nlohmann::json j = KbEntryToJson(Entry(64, 12.5));
  auto refusal = [](nlohmann::json k) { return KbEntryFromJson(k).status().message(); };
  nlohmann::json wrap = j;
  wrap["op_key"]["model_version"] = (uint64_t{1} << 32) + kSimModelVersion;  // read as this version before
  EXPECT_NE(refusal(wrap).find("not a version number"), std::string::npos);
  nlohmann::json huge = j;
  huge["timestamp_ms"] = std::numeric_limits<uint64_t>::max();  // read as -1 before
  EXPECT_NE(refusal(huge).find("timestamp_ms"), std::string::npos);
  nlohmann::json negative = j;
  negative["timestamp_ms"] = -5;
  EXPECT_NE(refusal(negative).find("negative"), std::string::npos);
  nlohmann::json value = j;
  value["best_config"]["baseM"] = std::numeric_limits<uint64_t>::max();
  EXPECT_NE(refusal(value).find("not a 64-bit integer"), std::string::npos);
  nlohmann::json nul = j;
  nul["op_key"]["op"] = std::string("MatMul\0x", 8);
  EXPECT_NE(refusal(nul).find("NUL"), std::string::npos);
  nlohmann::json twice = j;
  twice["best_config_order"].push_back(twice["best_config_order"][0]);
  EXPECT_NE(refusal(twice).find("twice"), std::string::npos);
}

TEST_F(KbTransferTest, AFileWithARefusalIsImportedWholeOrWithSkipRefusedWithoutIt) {
  KbEntry bad = Entry(128, 20);
  ++bad.best_index;
  auto all_or_nothing = ImportKb(*store_, {Entry(64, 20), bad}, Checks(), false, false);
  ASSERT_TRUE(all_or_nothing.ok());
  ASSERT_EQ(all_or_nothing->refused.size(), 1u);
  EXPECT_EQ(all_or_nothing->refused[0].index, 1u);
  EXPECT_EQ(all_or_nothing->added, 0u);
  EXPECT_FALSE(store_->GetKb(HashOpKey(Entry(64, 0).key)).value().has_value()) << "nothing may be written";

  auto skipping = ImportKb(*store_, {Entry(64, 20), bad, Entry(64, 25)}, Checks(), false, true);
  ASSERT_TRUE(skipping.ok());
  EXPECT_EQ(skipping->added, 1u);
  EXPECT_EQ(skipping->kept, 1u);
  EXPECT_EQ(skipping->refused.size(), 1u);
  EXPECT_DOUBLE_EQ(store_->GetKb(HashOpKey(Entry(64, 0).key)).value()->best_latency_us, 20);
}

}  // namespace
}  // namespace tunefleet::coordinator
