// Op keys the benchmark programs build in code: fp16 ND inputs on the Ascend910B2.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tunefleet/common/op_key.h"

namespace tunefleet::bench {

inline OpKey Key(const std::string& op, std::vector<std::vector<int64_t>> shapes) {
  OpKey key;
  key.soc = "Ascend910B2";
  key.op_type = op;
  for (auto& s : shapes) key.inputs.push_back({std::move(s), "float16", "ND"});
  return key;
}

}  // namespace tunefleet::bench
