// Reading the ops a user wants tuned or looked up: a JSON file holding either an array
// of ops, {"soc": "...", "ops": [...]} (examples/*_ops.json), or a model graph
// (examples/bert_base_layer.json: its kernel nodes, named as the nodes; a training
// graph's backward kernels are not listed). Errors name the file, the op's position (or
// node) and the field to fix.
#pragma once

#include <string>
#include <vector>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::cli {

struct NamedOp {
  std::string name;  // "name" field, or "op<i>"
  OpKey key;
  double count = 1;  // "count": how often the op runs per model step
};

// soc_override, when non-empty, replaces every op's SoC. With a catalog that knows a
// graph's SoC, the graph's kernels are checked against it first, so an error names the
// node to fix (the coordinator, which may know more SoCs, checks every op anyway).
Result<std::vector<NamedOp>> LoadOpsFile(const std::string& path, const std::string& soc_override,
                                         const SocCatalog* catalog = nullptr);

}  // namespace tunefleet::cli
