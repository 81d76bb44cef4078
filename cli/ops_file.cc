#include "cli/ops_file.h"

#include <fstream>
#include <map>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/json_fields.h"
#include "tunefleet/common/onnx_import.h"

namespace tunefleet::cli {
namespace {

// A model graph's kernels, one op per node (views have no kernel), named as the nodes
// are. The same op at several nodes is tuned once: the coordinator shares identical keys.
Result<std::vector<NamedOp>> OpsOfGraph(const Result<Graph>& graph, const std::string& path,
                                        const SocCatalog* catalog) {
  if (!graph.ok()) return graph.status().WithContext(path);
  if (catalog != nullptr) {
    if (auto soc = catalog->Find(graph->soc); soc.ok()) {
      if (Status s = ValidateGraphOps(*graph, **soc); !s.ok()) return s.WithContext(path);
    }
  }
  auto kernels = TunableKernels(*graph);
  if (!kernels.ok()) return kernels.status().WithContext(path);
  std::vector<NamedOp> out;
  for (NamedKernel& k : *kernels) {
    NamedOp op;
    op.name = std::move(k.name);
    op.key = std::move(k.key);
    out.push_back(std::move(op));
  }
  if (out.empty()) return InvalidArgument(path + ": the model has no kernel to tune (only views)");
  return out;
}

}  // namespace

Result<std::vector<NamedOp>> OpsOfModel(const Graph& graph, const std::string& path, const SocCatalog* catalog) {
  return OpsOfGraph(graph, path, catalog);
}

namespace {

Result<Graph> LoadModelGraph(const std::string& path, const std::string& soc, const std::vector<std::string>& dims) {
  if (!IsOnnxPath(path)) {
    if (!dims.empty()) return InvalidArgument("--dim sizes an ONNX model's symbolic dimensions: " + path + " is not one (.onnx)");
    return LoadGraphFile(path, soc);
  }
  OnnxImportOptions options;
  options.soc = soc;
  for (const std::string& d : dims) {
    TF_ASSIGN_OR_RETURN(auto dim, ParseDimFlag(d));
    if (!options.dims.emplace(dim).second) return InvalidArgument("--dim " + dim.first + " is given twice: give it once");
  }
  return GraphFromOnnxFile(path, options);
}

}  // namespace

Result<Graph> LoadModelFile(const std::string& path, const std::string& soc, const ModelFlags& flags) {
  TF_ASSIGN_OR_RETURN(Graph graph, LoadModelGraph(path, soc, flags.dims));
  for (const std::string& name : flags.resident) TF_RETURN_IF_ERROR(MarkResident(graph, name).WithContext(path));
  for (const std::string& name : flags.causal_masks) {
    TF_RETURN_IF_ERROR(MarkCausalMask(graph, name).WithContext("--causal-mask").WithContext(path));
  }
  return graph;
}

void AddDimOption(CLI::App& cmd, std::vector<std::string>& dims) {
  cmd.add_option("--dim", dims, "an ONNX model's symbolic dimension and its size, NAME=SIZE (repeat for each: "
                                "--dim batch=32 --dim seq=128)");
}

void AddModelFlags(CLI::App& cmd, ModelFlags& flags) {
  AddDimOption(cmd, flags.dims);
  cmd.add_option("--resident", flags.resident,
                 "a graph input or output kept on the device between steps, not copied over PCIe (a KV cache; repeat "
                 "for each; an ONNX model's past* inputs and present* outputs already are)");
  cmd.add_option("--causal-mask", flags.causal_masks,
                 "a tensor (input, weight or node output) that holds a causal mask: every key after the query's own "
                 "masked (false, or a large negative when added to the scores). The FlashAttention `fuse` makes of an "
                 "attention that applies it skips the key blocks it masks whole (repeat for each; an ONNX model's "
                 "constant masks are found from their values)");
}

void AddTrainingFlag(CLI::App& cmd, bool& training) {
  cmd.add_flag("--training", training, "a model's training step: its cube nodes' backward GEMMs (<node>_grad.dX and "
                                       "_grad.dW) too, as for a graph with \"training\": true");
}

Result<std::vector<NamedOp>> LoadOpsFile(const std::string& path, const std::string& soc_override,
                                         const SocCatalog* catalog, const std::vector<std::string>& dims,
                                         bool training) {
  if (IsOnnxPath(path) || !dims.empty()) {
    auto graph = LoadModelGraph(path, soc_override, dims);
    if (!graph.ok()) return graph.status();  // names the file already
    if (training) graph->training = true;
    return OpsOfGraph(graph, path, catalog);
  }
  std::ifstream in(path);
  if (!in) return NotFound("cannot read ops file '" + path + "'");
  TF_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(in, path));
  std::string soc = soc_override;
  const nlohmann::json* ops = &j;
  if (j.is_object()) {
    if (j.contains("nodes")) {
      auto graph = GraphFromJson(j, soc_override);
      if (graph.ok() && training) graph->training = true;
      return OpsOfGraph(graph, path, catalog);
    }
    TF_RETURN_IF_ERROR(CheckKnownFields(j, {"soc", "ops"}, path));
    if (soc.empty() && j.contains("soc")) {
      if (!j["soc"].is_string()) return InvalidArgument(path + ": 'soc' must be a string");
      soc = j["soc"].get<std::string>();
    }
    if (!j.contains("ops") || !j["ops"].is_array()) {
      return InvalidArgument(path + ": expected an array of ops or an object with an 'ops' array");
    }
    ops = &j["ops"];
  } else if (!j.is_array()) {
    return InvalidArgument(path + ": expected an array of ops or an object with an 'ops' array");
  }
  if (training) {
    return InvalidArgument("--training tunes a model's training step: " + path +
                           " is a list of ops, not a model (a graph with 'nodes', or .onnx)");
  }
  if (ops->empty()) return InvalidArgument(path + ": the ops list is empty");
  std::vector<NamedOp> out;
  std::map<std::string, size_t> named_at;  // name -> op index
  for (size_t i = 0; i < ops->size(); ++i) {
    const nlohmann::json& op = (*ops)[i];
    auto key = OpKeyFromJson(op, soc);
    if (!key.ok()) return key.status().WithContext(path + ": op " + std::to_string(i));
    if (!soc_override.empty()) key->soc = soc_override;
    NamedOp named;
    named.name = "op" + std::to_string(i);
    if (op.is_object() && op.contains("name")) {
      // The name labels the op in every report: an empty or non-string one is a typo.
      if (!op["name"].is_string() || op["name"].get<std::string>().empty()) {
        return InvalidArgument(path + ": op " + std::to_string(i) + " 'name' must be a non-empty string (or left out)");
      }
      named.name = op["name"].get<std::string>();
    }
    // Reports and lookups are matched to ops by name: two alike would be told apart by
    // order alone.
    if (auto [at, fresh] = named_at.emplace(named.name, i); !fresh) {
      return InvalidArgument(fmt::format(
          "{}: op {} is named '{}' like op {}{}: give each op its own name (an op that runs several times takes "
          "\"count\" instead)",
          path, i, named.name, at->second, op.contains("name") ? "" : " (ops without a name are called op<index>)"));
    }
    named.key = std::move(key).value();
    if (op.is_object() && op.contains("count")) {
      if (!op["count"].is_number() || !(op["count"].get<double>() > 0)) {
        return InvalidArgument(path + ": op " + std::to_string(i) + " 'count' must be a positive number");
      }
      named.count = op["count"].get<double>();
    }
    out.push_back(std::move(named));
  }
  return out;
}

}  // namespace tunefleet::cli
