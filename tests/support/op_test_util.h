// What the op-space and simulator tests share: an OpKey builder (on the Ascend910B2
// unless a test names another SoC) and the tuning problem a key makes,
// reported as a test failure with the reason when the key is refused. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::test_support {

// Inputs as {shape} or {shape, dtype}: TensorDesc defaults to float16 in ND.
inline OpKey TestKey(std::string op, std::vector<TensorDesc> inputs, std::map<std::string, std::string> attrs = {},
                     std::string soc = "Ascend910B2") {
  OpKey key;
  key.soc = std::move(soc);
  key.op_type = std::move(op);
  key.inputs = std::move(inputs);
  key.attrs = std::move(attrs);
  return key;
}

// Shapes that share one dtype.
inline std::vector<TensorDesc> Inputs(std::vector<std::vector<int64_t>> shapes, const std::string& dtype = "float16") {
  std::vector<TensorDesc> inputs;
  for (auto& s : shapes) inputs.push_back({std::move(s), dtype});
  return inputs;
}

inline TuningProblem ProblemOrFail(const OpKey& key, const SocSpec& soc) {
  auto p = MakeTuningProblem(key, soc);
  EXPECT_TRUE(p.ok()) << key.Display() << ": " << p.status().ToString();
  return std::move(p).value();
}

}  // namespace tunefleet::test_support
