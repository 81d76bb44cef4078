// Helpers shared by the profile tests: the builtin SoC, examples and graphs built inline,
// and a scratch folder removed at the end of each test (tests/support/scratch_dir.h).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/graph.h"
#include "tests/support/scratch_dir.h"
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

// The node of `g` named `name`, or null.
inline const GraphNode* FindNode(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

inline nlohmann::json Tensor(const std::string& name, std::vector<int64_t> shape) {
  return {{"name", name}, {"shape", shape}, {"dtype", "float16"}};
}

inline nlohmann::json Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                           nlohmann::json output) {
  return {{"name", name}, {"op", op}, {"inputs", inputs}, {"outputs", nlohmann::json::array({output})}};
}

}  // namespace tunefleet::testing
