// Reading the ops a user wants tuned or looked up: a JSON file holding either an array
// of ops, {"soc": "...", "ops": [...]} (examples/*_ops.json), or a model, as a JSON graph
// (examples/bert_base_layer.json) or an ONNX file (.onnx, common/onnx_import.h): its
// kernel nodes, named as the nodes, and a training graph's cube backward GEMMs
// (TunableKernels). Errors name the file, the op's position (or node) and the field to fix.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tunefleet/common/graph.h"
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
// `dims`: "NAME=SIZE" for each symbolic dimension of an ONNX model (--dim). `training`:
// a model's training step (its cube nodes' backward GEMMs too, as "training": true);
// kInvalidArgument for an ops list.
Result<std::vector<NamedOp>> LoadOpsFile(const std::string& path, const std::string& soc_override,
                                         const SocCatalog* catalog = nullptr, const std::vector<std::string>& dims = {},
                                         bool training = false);
// Adds --training (a model's training step) to a command that takes a model or ops file.
void AddTrainingFlag(CLI::App& cmd, bool& training);

// A model's kernels as ops (what LoadOpsFile lists for a model file), named as its nodes;
// `path` names the model in errors.
Result<std::vector<NamedOp>> OpsOfModel(const Graph& graph, const std::string& path, const SocCatalog* catalog);

// What a command that runs a model is told about it besides the file.
struct ModelFlags {
  std::vector<std::string> dims;      // --dim NAME=SIZE of an ONNX model
  std::vector<std::string> resident;  // --resident NAME: a graph input or output kept on the device
  std::vector<std::string> causal_masks;  // --causal-mask NAME: a tensor that is one (graph.h)
};

// A model file as a graph: JSON (LoadGraphFile) or ONNX (.onnx: its SoC `soc`, by default
// Ascend910B2, and flags.dims for its symbolic dimensions), with flags.resident kept on
// the device (MarkResident: beside what the file or the ONNX names already keep) and
// flags.causal_masks declared causal (MarkCausalMask: beside those it finds). soc,
// when non-empty, overrides.
Result<Graph> LoadModelFile(const std::string& path, const std::string& soc, const ModelFlags& flags);

// Adds the repeatable --dim NAME=SIZE option to a command that reads models.
void AddDimOption(CLI::App& cmd, std::vector<std::string>& dims);
// Adds --dim and the repeatable --resident NAME and --causal-mask NAME to a command that
// runs a model's graph.
void AddModelFlags(CLI::App& cmd, ModelFlags& flags);

}  // namespace tunefleet::cli
