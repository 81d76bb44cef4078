// KtCache: parsing Kernel Tuner cache files into a full-product search space and a
// per-config outcome, including non-integer parameters, malformed files and the three
// shared datasets (../shared/datasets, skipped where that folder is absent).
#include "tunefleet/common/kt_cache.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace tunefleet {
namespace {

// 2 x 3 product; "2,1" absent, "1,4" failed.
constexpr const char* kSmall = R"({
  "device_name": "Toy GPU", "kernel_name": "toy", "objective": "time",
  "tune_params_keys": ["bx", "tile"],
  "tune_params": {"bx": [1, 2], "tile": [1, 2, 4]},
  "cache": {
    "1,1": {"bx": 1, "tile": 1, "time": 3.0},
    "1,2": {"bx": 1, "tile": 2, "time": 1.5},
    "1,4": {"bx": 1, "tile": 4, "time": "CompilationFailedConfig"},
    "2,2": {"bx": 2, "tile": 2, "time": 2.0},
    "2,4": {"bx": 2, "tile": 4, "time": 0.75}
  }})";

ConfigIndex Index(const KtCache& c, Config config) { return c.space().Encode(config).value(); }

TEST(KtCache, TheSpaceIsTheFullProductOfTuneParamsInTuneParamsKeysOrder) {
  KtCache c = KtCache::Parse(kSmall, "small").value();
  ASSERT_EQ(c.space().dims(), 2u);
  EXPECT_EQ(c.space().params()[0].name, "bx");
  EXPECT_EQ(c.space().params()[1].name, "tile");
  EXPECT_EQ(c.space().params()[1].values, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(c.space().size(), 6u);
  EXPECT_EQ(c.space().EnumerateValid().size(), 6u);  // no constraints: restrictions unknown
  EXPECT_EQ(c.kernel_name(), "toy");
  EXPECT_EQ(c.device_name(), "Toy GPU");
}

TEST(KtCache, TellsMeasuredFailedAndAbsentConfigsApart) {
  KtCache c = KtCache::Parse(kSmall, "small").value();
  KtCache::Measurement m = c.Lookup(Index(c, {1, 2}));
  EXPECT_EQ(m.outcome, KtCache::Outcome::kMeasured);
  EXPECT_DOUBLE_EQ(m.time_ms, 1.5);
  m = c.Lookup(Index(c, {1, 4}));
  EXPECT_EQ(m.outcome, KtCache::Outcome::kFailed);
  EXPECT_EQ(m.failure, "CompilationFailedConfig");
  EXPECT_EQ(c.Lookup(Index(c, {2, 1})).outcome, KtCache::Outcome::kAbsent);
  EXPECT_EQ(c.Lookup(c.space().size()).outcome, KtCache::Outcome::kAbsent);
  EXPECT_EQ(c.measured_count(), 4u);
  EXPECT_EQ(c.failed_count(), 1u);
  EXPECT_EQ(c.best_index(), Index(c, {2, 4}));
  EXPECT_DOUBLE_EQ(c.best_time_ms(), 0.75);
}

TEST(KtCache, NonIntegerParametersAreEncodedByPositionAndKeysAloneAreEnough) {
  // Entries without parameter fields: located by the key's Python str() tokens.
  KtCache c = KtCache::Parse(R"({
    "tune_params_keys": ["ratio", "kind", "n"],
    "tune_params": {"ratio": [0.5, 1.0, 2], "kind": ["float4", "float2"], "n": [8, 16]},
    "cache": {"1.0,float2,16": {"time": 4.0}, "2,float4,8": {"time": 5.0}}})", "mixed").value();
  EXPECT_EQ(c.space().params()[0].values, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(c.space().params()[1].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(c.space().params()[2].values, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(c.by_position(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(c.value_labels()[0][1], "1.0");
  EXPECT_EQ(c.value_labels()[1][0], "\"float4\"");
  EXPECT_DOUBLE_EQ(c.Lookup(Index(c, {1, 1, 16})).time_ms, 4.0);
  EXPECT_DOUBLE_EQ(c.Lookup(Index(c, {2, 0, 8})).time_ms, 5.0);
  EXPECT_EQ(c.Lookup(Index(c, {0, 0, 8})).outcome, KtCache::Outcome::kAbsent);
}

void ExpectInvalid(const std::string& json, const std::string& names) {
  Result<KtCache> c = KtCache::Parse(json, "bad.json");
  ASSERT_FALSE(c.ok()) << "parsed: " << json;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("bad.json"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(names), std::string::npos) << c.status().message();
}

TEST(KtCache, AMalformedCacheIsAnErrorThatNamesWhatIsWrong) {
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {)", "not valid JSON");
  ExpectInvalid(R"([1, 2])", "not a JSON object");
  ExpectInvalid(R"({"tune_params": {"a": [1]}, "cache": {}})", "tune_params_keys");
  ExpectInvalid(R"({"tune_params_keys": ["a", "b"], "tune_params": {"a": [1]}, "cache": {}})",
                "no non-empty value list for 'b'");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]}})", "'cache' is missing");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1, 1]}, "cache": {}})", "tune_params");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1, 2]},
                    "cache": {"3": {"a": 3, "time": 1.0}}})", "'3' has a=3, which is not in tune_params");
  ExpectInvalid(R"({"tune_params_keys": ["a", "b"], "tune_params": {"a": [1], "b": [1]},
                    "cache": {"1": {"time": 1.0}}})", "'1' has 1 values, tune_params_keys has 2");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                    "cache": {"1": {"a": 1}}})", "'1' has no 'time'");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                    "cache": {"1": {"a": 1, "time": -2}}})", "not a positive number");
  ExpectInvalid(R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "objective": "GFLOP/s",
                    "cache": {}})", "objective");
}

// Kernel Tuner leaves out of every search space the configs whose block_size_x x
// block_size_y x block_size_z exceeds the device's threads per block (1024 on every CUDA
// and HIP GPU): a capacity known in advance, which strategies must never spend on.
TEST(KtCache, BlocksOfMoreThreadsThanTheDeviceRunsAreAKnownConstraint) {
  KtCache c = KtCache::Parse(R"({
    "tune_params_keys": ["block_size_x", "block_size_y", "unroll"],
    "tune_params": {"block_size_x": [32, 512, 1024], "block_size_y": [1, 2], "unroll": [0, 1]},
    "cache": {"32,1,0": {"time": 2.0}, "512,2,1": {"time": 1.0}, "1024,1,0": {"time": 1.5}}})",
                             "blocks").value();
  EXPECT_EQ(c.thread_limit(), KtCache::kMaxThreadsPerBlock);
  EXPECT_EQ(c.space().size(), 12u);  // still the full product: indices are the product's
  EXPECT_EQ(c.space().EnumerateValid().size(), 10u);  // 1024 x 2 is out, with either unroll
  EXPECT_TRUE(c.space().IsValid({512, 2, 0}));
  EXPECT_TRUE(c.space().IsValid({1024, 1, 1}));
  const Status why = c.space().Validate({1024, 2, 0});
  EXPECT_EQ(why.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(why.message().find("threads per block: 2048 exceed the device's 1024"), std::string::npos)
      << why.ToString();
  EXPECT_EQ(c.Lookup(Index(c, {512, 2, 1})).outcome, KtCache::Outcome::kMeasured);

  // A cache that measured a larger block came from a device that runs it: no constraint.
  c = KtCache::Parse(R"({
    "tune_params_keys": ["block_size_x", "block_size_y"],
    "tune_params": {"block_size_x": [512, 1024], "block_size_y": [1, 2]},
    "cache": {"1024,2": {"time": 2.0}}})", "big device").value();
  EXPECT_EQ(c.thread_limit(), 0);
  EXPECT_EQ(c.space().EnumerateValid().size(), 4u);
  // Without block sizes there is nothing to limit (kSmall's "bx" is not Kernel Tuner's name).
  EXPECT_EQ(KtCache::Parse(kSmall, "small").value().thread_limit(), 0);
}

TEST(KtCache, LoadingAMissingFileIsNotFoundNamingThePath) {
  Result<KtCache> c = KtCache::Load("/nonexistent/dir/cache.json.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/dir/cache.json.gz"), std::string::npos);
}

// The figures of ../shared/datasets/README.md, so the loader and the README agree.
TEST(KtCache, TheSharedDatasetsLoadWithTheirDocumentedCounts) {
  const std::filesystem::path dir = TUNEFLEET_SHARED_DATASETS;
  if (!std::filesystem::exists(dir / "convolution_A100.json.gz")) {
    GTEST_SKIP() << "no shared datasets at " << dir;
  }
  struct Expect {
    const char* file;
    uint64_t product;
    size_t measured, failed, within_thread_limit;
  };
  for (const Expect& e : {Expect{"convolution_A100.json.gz", 10240, 4201, 161, 7680},
                          Expect{"pnpoly_RTX2080Ti.json.gz", 4092, 3722, 370, 4092},
                          Expect{"dedispersion_MI250X.json.gz", 22272, 11130, 0, 13568}}) {
    Result<KtCache> c = KtCache::Load((dir / e.file).string());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->space().size(), e.product) << e.file;
    EXPECT_EQ(c->measured_count(), e.measured) << e.file;
    EXPECT_EQ(c->failed_count(), e.failed) << e.file;
    EXPECT_EQ(c->space().EnumerateValid().size(), e.within_thread_limit) << e.file;
    EXPECT_EQ(c->Lookup(c->best_index()).outcome, KtCache::Outcome::kMeasured) << e.file;
  }
}

}  // namespace
}  // namespace tunefleet
