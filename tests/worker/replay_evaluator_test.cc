// The `replay` evaluator on small Kernel Tuner caches this test writes itself, plain and
// gzipped: measured times come back in us, absent and failed configs come back failed,
// blocks over the device's thread limit are rejected, a malformed file is an error naming
// the problem.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"
#include "worker/evaluator.h"

namespace tunefleet::worker {
namespace {

// Product 2 x 2 = 4 configs: index = 2 * pos(bx) + pos(tile).
constexpr const char* kCache = R"({
  "device_name": "Toy GPU", "kernel_name": "toy_kernel", "objective": "time",
  "tune_params_keys": ["bx", "tile"],
  "tune_params": {"bx": [32, 64], "tile": [1, 2]},
  "cache": {
    "32,1": {"bx": 32, "tile": 1, "time": 1.25},
    "32,2": {"bx": 32, "tile": 2, "time": "RuntimeFailedConfig"},
    "64,2": {"bx": 64, "tile": 2, "time": 0.5}
  }})";

// The files live in the test's own scratch folder, removed with it (they were left in
// the shared temp folder under fixed names).
std::string WritePlain(const testing::ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.Path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string WriteGzip(const testing::ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.Path(name);
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
  return path;
}

OpKey Toy() {
  OpKey k;
  k.soc = "Toy GPU";
  k.op_type = "toy_kernel";
  return k;
}

void ExpectServesTheCache(const std::string& path) {
  auto evaluator = MakeReplayEvaluator(path);
  ASSERT_TRUE(evaluator.ok()) << evaluator.status().ToString();
  EXPECT_EQ((*evaluator)->name(), "replay");
  auto job = (*evaluator)->Prepare(Toy(), 1);
  ASSERT_TRUE(job.ok()) << job.status().ToString();

  Evaluation measured = (*job)->Evaluate(0);  // 32,1
  EXPECT_TRUE(measured.ok) << measured.error;
  EXPECT_DOUBLE_EQ(measured.latency_us, 1250.0);
  EXPECT_DOUBLE_EQ((*job)->Evaluate(3).latency_us, 500.0);  // 64,2

  Evaluation failed = (*job)->Evaluate(1);  // 32,2
  EXPECT_FALSE(failed.ok);
  EXPECT_FALSE(failed.rejected);
  EXPECT_NE(failed.error.find("RuntimeFailedConfig"), std::string::npos) << failed.error;

  Evaluation absent = (*job)->Evaluate(2);  // 64,1
  EXPECT_FALSE(absent.ok);
  EXPECT_FALSE(absent.rejected);  // restrictions are not known in advance: it costs an evaluation
  EXPECT_NE(absent.error.find("absent"), std::string::npos) << absent.error;

  Evaluation outside = (*job)->Evaluate(4);
  EXPECT_FALSE(outside.ok);
  EXPECT_TRUE(outside.rejected);
}

TEST(ReplayEvaluator, ServesMeasuredTimesInMicrosecondsFromAPlainJsonCache) {
  const testing::ScratchDir dir;
  ExpectServesTheCache(WritePlain(dir, "replay_plain.json", kCache));
}

TEST(ReplayEvaluator, ServesAGzippedCacheLikeAPlainOne) {
  const testing::ScratchDir dir;
  ExpectServesTheCache(WriteGzip(dir, "replay_gz.json.gz", kCache));
}

TEST(ReplayEvaluator, ABlockOfMoreThreadsThanTheDeviceRunsIsRejectedNotSpent) {
  const testing::ScratchDir dir;
  auto evaluator = MakeReplayEvaluator(WritePlain(dir, "replay_blocks.json", R"({
    "kernel_name": "toy_kernel", "tune_params_keys": ["block_size_x", "block_size_y"],
    "tune_params": {"block_size_x": [256, 512], "block_size_y": [1, 4]},
    "cache": {"256,1": {"time": 1.0}, "256,4": {"time": 0.5}}})")).value();
  auto job = evaluator->Prepare(Toy(), 1).value();
  EXPECT_TRUE(job->Evaluate(1).ok);  // 256 x 4 = 1024 threads: measured
  Evaluation absent = job->Evaluate(2);  // 512 x 1: within the limit, not in the cache
  EXPECT_FALSE(absent.ok);
  EXPECT_FALSE(absent.rejected);
  Evaluation over = job->Evaluate(3);  // 512 x 4 = 2048 threads
  EXPECT_FALSE(over.ok);
  EXPECT_TRUE(over.rejected);
  EXPECT_NE(over.error.find("threads per block: 2048 exceed the device's 1024"), std::string::npos) << over.error;
}

TEST(ReplayEvaluator, RefusesAnOpKeyOfAnotherKernelNamingBoth) {
  const testing::ScratchDir dir;
  auto evaluator = MakeReplayEvaluator(WritePlain(dir, "replay_kernel.json", kCache)).value();
  OpKey other = Toy();
  other.op_type = "MatMul";
  auto job = evaluator->Prepare(other, 1);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("toy_kernel"), std::string::npos);
  EXPECT_NE(job.status().message().find("MatMul"), std::string::npos);
}

TEST(ReplayEvaluator, AMalformedCacheFileIsAnErrorNamingTheProblem) {
  const testing::ScratchDir dir;
  std::string bad_value = kCache;
  bad_value.replace(bad_value.find(R"("64,2": {"bx": 64)"), 17, R"("64,2": {"bx": 48)");
  auto e = MakeReplayEvaluator(WritePlain(dir, "replay_bad_value.json", bad_value));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("bx=48, which is not in tune_params"), std::string::npos)
      << e.status().message();

  std::string truncated_path = WriteGzip(dir, "replay_full.json.gz", kCache);
  std::string bytes;
  {
    std::ifstream in(truncated_path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  e = MakeReplayEvaluator(WritePlain(dir, "replay_truncated.json.gz", bytes.substr(0, bytes.size() / 2)));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("replay_truncated.json.gz"), std::string::npos) << e.status().message();

  e = MakeReplayEvaluator(std::string("/nonexistent/replay.json"));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tunefleet::worker
