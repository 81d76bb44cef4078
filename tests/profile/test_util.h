// Helpers shared by the profile tests: the builtin SoC, examples and graphs built inline,
// and a scratch folder removed at the end of each test.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::testing {

inline const SocSpec& Soc910B2() {
  static const SocCatalog catalog = SocCatalog::Builtin();
  return **catalog.Find("Ascend910B2");
}

inline Graph LoadExample(const std::string& name) {
  auto g = LoadGraphFile(std::string(TUNEFLEET_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : Graph{};
}

inline nlohmann::json Tensor(const std::string& name, std::vector<int64_t> shape) {
  return {{"name", name}, {"shape", shape}, {"dtype", "float16"}};
}

inline nlohmann::json Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                           nlohmann::json output) {
  return {{"name", name}, {"op", op}, {"inputs", inputs}, {"outputs", nlohmann::json::array({output})}};
}

class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("tunefleet_profile_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string Path(const std::string& file = "") const { return file.empty() ? path_.string() : (path_ / file).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tunefleet::testing
