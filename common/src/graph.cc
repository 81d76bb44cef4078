// The JSON model graph: parsing, structural validation and the node -> OpKey mapping.
#include "tunefleet/common/graph.h"

#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/json_fields.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"

#include "space_util.h"

namespace tunefleet {
namespace {

int64_t Elements(const TensorDesc& d) {
  int64_t n = 1;
  for (int64_t v : d.shape) n *= v;
  return n;
}

Result<NamedTensor> ParseTensor(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": expected an object {\"name\", \"shape\", \"dtype\"}");
  NamedTensor t;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty()) {
    return InvalidArgument(where + ": 'name' must be a non-empty string");
  }
  t.name = j["name"].get<std::string>();
  std::string at = where + " '" + t.name + "'";
  TF_RETURN_IF_ERROR(CheckKnownFields(j, {"name", "shape", "dtype", "format"}, at));
  if (!j.contains("shape") || !j["shape"].is_array() || j["shape"].empty()) {
    return InvalidArgument(at + ": 'shape' must be a non-empty array of positive integers");
  }
  for (const auto& v : j["shape"]) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      return InvalidArgument(at + ": 'shape' must be a non-empty array of positive integers");
    }
    t.desc.shape.push_back(v.get<int64_t>());
  }
  TF_RETURN_IF_ERROR(CheckTensorSize(t.desc.shape, at));
  if (j.contains("dtype")) {
    if (!j["dtype"].is_string()) return InvalidArgument(at + ": 'dtype' must be a string");
    t.desc.dtype = j["dtype"].get<std::string>();
    auto dt = ParseDType(t.desc.dtype);
    if (!dt.ok()) return dt.status().WithContext(at + ": 'dtype'");
  }
  if (j.contains("format")) {
    if (!j["format"].is_string()) return InvalidArgument(at + ": 'format' must be a string");
    t.desc.format = j["format"].get<std::string>();
  }
  return t;
}

}  // namespace

int64_t NamedTensor::Bytes() const {
  auto dt = ParseDType(desc.dtype);
  return Elements(desc) * (dt.ok() ? DTypeBytes(*dt) : 2);
}

const NamedTensor* Graph::FindTensor(const std::string& tensor) const {
  for (const auto& t : inputs) if (t.name == tensor) return &t;
  for (const auto& t : weights) if (t.name == tensor) return &t;
  for (const auto& n : nodes) {
    for (const auto& t : n.outputs) if (t.name == tensor) return &t;
  }
  return nullptr;
}

int Graph::ProducerOf(const std::string& tensor) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& t : nodes[i].outputs) if (t.name == tensor) return static_cast<int>(i);
  }
  return -1;
}

bool Graph::IsWeight(const std::string& tensor) const {
  for (const auto& t : weights) if (t.name == tensor) return true;
  return false;
}

GraphIndex::GraphIndex(const Graph& graph) : graph_(graph) {
  // In FindTensor's order, the first of a name kept.
  for (const auto& t : graph.inputs) by_name_.try_emplace(t.name, Entry{&t});
  for (const auto& t : graph.weights) by_name_.try_emplace(t.name, Entry{&t}).first->second.weight = true;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const auto& t : graph.nodes[i].outputs) {
      Entry& e = by_name_.try_emplace(t.name, Entry{&t}).first->second;
      if (e.producer < 0) e.producer = static_cast<int>(i);
    }
  }
}

const GraphIndex::Entry* GraphIndex::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

const NamedTensor* GraphIndex::FindTensor(const std::string& name) const {
  const Entry* e = Find(name);
  return e ? e->tensor : nullptr;
}

int GraphIndex::ProducerOf(const std::string& tensor) const {
  const Entry* e = Find(tensor);
  return e ? e->producer : -1;
}

bool Graph::IsResident(const std::string& tensor) const {
  return std::find(resident.begin(), resident.end(), tensor) != resident.end();
}

Status MarkResident(Graph& graph, const std::string& tensor) {
  const bool input =
      std::any_of(graph.inputs.begin(), graph.inputs.end(), [&](const NamedTensor& t) { return t.name == tensor; });
  if (!input && std::find(graph.outputs.begin(), graph.outputs.end(), tensor) == graph.outputs.end()) {
    std::string names;
    for (const auto& t : graph.inputs) names += (names.empty() ? "" : ", ") + t.name;
    for (const auto& o : graph.outputs) names += (names.empty() ? "" : ", ") + o;
    return InvalidArgument("resident: '" + tensor + "' is not a graph input or output (resident tensors stay on the " +
                           "device between steps; the graph's are: " + names + ")");
  }
  if (!graph.IsResident(tensor)) graph.resident.push_back(tensor);
  return Status::Ok();
}

bool Graph::IsCausalMask(const std::string& tensor) const {
  return std::find(causal_masks.begin(), causal_masks.end(), tensor) != causal_masks.end();
}

Status MarkCausalMask(Graph& graph, const std::string& tensor) {
  const NamedTensor* t = graph.FindTensor(tensor);
  if (t == nullptr) {
    return InvalidArgument("causal_masks: '" + tensor + "' is no tensor of the graph (a causal mask is a graph input, "
                           "weight or node output, added to or selecting the attention scores)");
  }
  if (t->desc.shape.size() < 2) {
    return InvalidArgument("causal_masks: '" + tensor + "' has rank " + std::to_string(t->desc.shape.size()) +
                           "; a causal mask is [..., Sq, Skv]");
  }
  if (!graph.IsCausalMask(tensor)) graph.causal_masks.push_back(tensor);
  return Status::Ok();
}

bool GraphIndex::IsWeight(const std::string& tensor) const {
  const Entry* e = Find(tensor);
  return e && e->weight;
}

namespace {

// A Conv2D whose groups are its channels, one filter each (x [N, C, H, W], filter [C, 1,
// kh, kw]), is the depthwise convolution CANN runs on the vector unit (vector_space.h
// DepthwiseConv2D), as the ONNX importer writes it: a framework's IR that spells it as a
// grouped convolution profiles it as it runs, not as a batch of one-row GEMMs padded to
// whole fractals (seven times slower). An int8 one, or one that declares another output
// dtype than its input's (the cube writes fp32; the vector op its input's), stays a Conv2D.
void UseDepthwiseKernels(Graph& g) {
  // The index's keys and tensors are not touched: only nodes' op types and attributes change.
  const GraphIndex index(g);
  auto desc = [&index](const std::string& name) -> const TensorDesc* {
    const NamedTensor* t = index.FindTensor(name);
    return t == nullptr ? nullptr : &t->desc;
  };
  for (GraphNode& n : g.nodes) {
    const auto groups = n.attrs.find("groups");
    if (n.op_type != "Conv2D" || groups == n.attrs.end() || n.inputs.size() < 2 || n.outputs.size() != 1 ||
        n.attrs.contains("out_dtype")) {
      continue;
    }
    const TensorDesc* x = desc(n.inputs[0]);
    const TensorDesc* w = desc(n.inputs[1]);
    const auto format = n.attrs.find("data_format");
    if (x == nullptr || w == nullptr || x->shape.size() != 4 || w->shape.size() != 4 ||
        (format != n.attrs.end() && format->second != "NCHW") || x->dtype == "int8" ||
        n.outputs[0].desc.dtype != x->dtype) {
      continue;
    }
    bool one_dtype = true;
    for (const std::string& in : n.inputs) one_dtype = one_dtype && desc(in) != nullptr && desc(in)->dtype == x->dtype;
    if (!one_dtype) continue;
    const int64_t c = x->shape[1];
    if (c > 1 && groups->second == std::to_string(c) && w->shape[0] == c && w->shape[1] == 1) {
      n.op_type = "DepthwiseConv2D";
      n.attrs.erase("groups");
      n.attrs.erase("data_format");
    }
  }
}

}  // namespace

Result<Graph> GraphFromJson(const nlohmann::json& j, const std::string& soc_override) {
  if (!j.is_object()) return InvalidArgument("graph: expected a JSON object with 'nodes'");
  TF_RETURN_IF_ERROR(CheckKnownFields(
      j, {"name", "soc", "host_preprocess_us", "devices", "training", "inputs", "weights", "nodes", "outputs", "resident",
          "causal_masks"},
      "graph"));
  Graph g;
  if (j.contains("name") && !j["name"].is_string()) return InvalidArgument("graph: 'name' must be a string");
  g.name = j.contains("name") ? j["name"].get<std::string>() : std::string("model");
  if (j.contains("soc") && !j["soc"].is_string()) return InvalidArgument("graph: 'soc' must be a string");
  g.soc = !soc_override.empty() ? soc_override : j.contains("soc") ? j["soc"].get<std::string>() : std::string();
  if (g.soc.empty()) return InvalidArgument("graph: no 'soc' in the file; give one (or --soc)");
  if (j.contains("host_preprocess_us")) {
    if (!j["host_preprocess_us"].is_number() || j["host_preprocess_us"].get<double>() < 0) {
      return InvalidArgument("graph: 'host_preprocess_us' must be a number >= 0");
    }
    g.host_preprocess_us = j["host_preprocess_us"].get<double>();
  }
  if (j.contains("devices")) {
    if (!j["devices"].is_number_integer() || j["devices"].get<int64_t>() < 1 || j["devices"].get<int64_t>() > 4096) {
      return InvalidArgument("graph: 'devices' must be an integer in [1, 4096]");
    }
    g.devices = j["devices"].get<int>();
  }
  if (j.contains("training")) {
    if (!j["training"].is_boolean()) return InvalidArgument("graph: 'training' must be true or false");
    g.training = j["training"].get<bool>();
  }
  std::set<std::string> tensors;
  auto add_tensor = [&](const NamedTensor& t, const std::string& where) -> Status {
    if (!tensors.insert(t.name).second) {
      return InvalidArgument(where + ": tensor name '" + t.name + "' is already used; tensor names must be unique");
    }
    return Status::Ok();
  };
  for (const char* section : {"inputs", "weights"}) {
    if (!j.contains(section)) continue;
    if (!j[section].is_array()) return InvalidArgument(fmt::format("graph: '{}' must be an array of tensors", section));
    for (size_t i = 0; i < j[section].size(); ++i) {
      std::string where = fmt::format("graph: {}[{}]", section, i);
      TF_ASSIGN_OR_RETURN(NamedTensor t, ParseTensor(j[section][i], where));
      TF_RETURN_IF_ERROR(add_tensor(t, where));
      (std::string(section) == "inputs" ? g.inputs : g.weights).push_back(std::move(t));
    }
  }
  if (!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty()) {
    return InvalidArgument("graph: 'nodes' must be a non-empty array");
  }
  std::set<std::string> node_names;
  for (size_t i = 0; i < j["nodes"].size(); ++i) {
    const auto& n = j["nodes"][i];
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string() || n["name"].get<std::string>().empty()) {
      return InvalidArgument(fmt::format("graph: nodes[{}]: 'name' must be a non-empty string", i));
    }
    GraphNode node;
    node.name = n["name"].get<std::string>();
    std::string at = "node '" + node.name + "'";
    TF_RETURN_IF_ERROR(CheckKnownFields(n, {"name", "op", "inputs", "outputs", "attrs"}, at));
    if (!node_names.insert(node.name).second) return InvalidArgument(at + ": node name is used twice; names must be unique");
    if (!n.contains("op") || !n["op"].is_string() || n["op"].get<std::string>().empty()) {
      return InvalidArgument(at + ": 'op' must be the op type, e.g. \"MatMul\"");
    }
    node.op_type = n["op"].get<std::string>();
    if (!n.contains("inputs") || !n["inputs"].is_array() || n["inputs"].empty()) {
      return InvalidArgument(at + ": 'inputs' must be a non-empty array of tensor names");
    }
    for (const auto& in : n["inputs"]) {
      if (!in.is_string()) return InvalidArgument(at + ": 'inputs' must hold tensor names (strings)");
      node.inputs.push_back(in.get<std::string>());
    }
    if (!n.contains("outputs") || !n["outputs"].is_array() || n["outputs"].empty()) {
      return InvalidArgument(at + ": 'outputs' must be a non-empty array of {\"name\", \"shape\", \"dtype\"}");
    }
    for (size_t k = 0; k < n["outputs"].size(); ++k) {
      std::string where = fmt::format("{}: outputs[{}]", at, k);
      TF_ASSIGN_OR_RETURN(NamedTensor t, ParseTensor(n["outputs"][k], where));
      TF_RETURN_IF_ERROR(add_tensor(t, where));
      node.outputs.push_back(std::move(t));
    }
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) return InvalidArgument(at + ": 'attrs' must be an object of strings");
      for (const auto& [k, v] : n["attrs"].items()) {
        if (!v.is_string()) return InvalidArgument(at + ": attrs." + k + " must be a string (e.g. \"1,1\")");
        node.attrs[k] = v.get<std::string>();
      }
    }
    g.nodes.push_back(std::move(node));
  }
  for (const auto& node : g.nodes) {
    for (const auto& in : node.inputs) {
      if (!tensors.count(in)) {
        return InvalidArgument("node '" + node.name + "': input '" + in +
                               "' is not a graph input, weight or node output");
      }
    }
  }
  UseDepthwiseKernels(g);
  if (!j.contains("outputs") || !j["outputs"].is_array() || j["outputs"].empty()) {
    return InvalidArgument("graph: 'outputs' must be a non-empty array of tensor names");
  }
  for (const auto& o : j["outputs"]) {
    if (!o.is_string() || !tensors.count(o.get<std::string>())) {
      return InvalidArgument("graph: outputs: '" + (o.is_string() ? o.get<std::string>() : o.dump()) +
                             "' is not a tensor of the graph");
    }
    g.outputs.push_back(o.get<std::string>());
  }
  if (j.contains("resident")) {
    if (!j["resident"].is_array()) return InvalidArgument("graph: 'resident' must be an array of tensor names");
    for (const auto& r : j["resident"]) {
      if (!r.is_string()) return InvalidArgument("graph: resident: " + r.dump() + " is not a tensor name (a string)");
      TF_RETURN_IF_ERROR(MarkResident(g, r.get<std::string>()).WithContext("graph"));
    }
  }
  if (j.contains("causal_masks")) {
    if (!j["causal_masks"].is_array()) return InvalidArgument("graph: 'causal_masks' must be an array of tensor names");
    for (const auto& m : j["causal_masks"]) {
      if (!m.is_string()) return InvalidArgument("graph: causal_masks: " + m.dump() + " is not a tensor name (a string)");
      TF_RETURN_IF_ERROR(MarkCausalMask(g, m.get<std::string>()).WithContext("graph"));
    }
  }
  TF_RETURN_IF_ERROR(TopologicalOrder(g).status());
  return g;
}

Result<Graph> LoadGraphFile(const std::string& path, const std::string& soc_override) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read model graph '" + path + "'");
  TF_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(in, path));
  if (j.is_array() || (j.is_object() && j.contains("ops") && !j.contains("nodes"))) {
    return InvalidArgument(path + ": this is an ops file (a list of ops to tune), not a model graph: profile and "
                           "report take a graph with 'nodes' (examples/bert_base_layer.json, docs/profiling.md)");
  }
  auto g = GraphFromJson(j, soc_override);
  if (!g.ok()) return g.status().WithContext(path);
  return g;
}

Result<std::vector<OpKey>> BackwardGemmKeys(const OpKey& forward) {
  MatmulShape g;
  bool conv = false;  // NCHW: Y (and dY) stored [N, M], channel-major
  if (IsCubeGemmOpType(forward.op_type)) {
    TF_ASSIGN_OR_RETURN(g, CubeGemmShapeFromOpKey(forward));
  } else if (forward.op_type == "Conv2D") {
    TF_ASSIGN_OR_RETURN(Conv2dShape shape, Conv2dShapeFromOpKey(forward));
    g = Conv2dGemm(shape);
    conv = true;
  } else if (IsFusedCubeOpType(forward.op_type)) {
    TF_ASSIGN_OR_RETURN(FusedCubeShape fused, FusedCubeShapeFromOpKey(forward));
    g = fused.gemm;
    conv = fused.conv;
  } else {
    return std::vector<OpKey>();
  }
  // The batch as the forward's leading dimensions ([32, 12] of a [32, 12, 128, 64]
  // BatchMatMul), so a gradient GEMM that is also a forward one has its key.
  std::vector<int64_t> lead{g.batch};
  if (!conv && g.batch > 1 && forward.inputs.front().shape.size() >= 3) {
    const auto& a = forward.inputs.front().shape;
    std::vector<int64_t> dims(a.begin(), a.end() - 2);
    int64_t product = 1;
    for (int64_t d : dims) product *= d;
    if (product == g.batch) lead = std::move(dims);
  }
  // Y = op(A) op(B): A is stored [m,k] ([k,m] with transpose_a), B [k,n] ([n,k]), dY
  // [m,n] ([n,m] for a conv). Each gradient is one GEMM reading the tensors as they are
  // stored, with a transpose flag where it reads one the other way round (no Transpose
  // kernel), and writes its gradient in its tensor's stored layout.
  struct Stored {
    int64_t rows, cols;
    bool transposed;  // read as [cols, rows]
  };
  const bool ta = g.transpose_a, tb = g.transpose_b, ty = conv;  // stored transposed
  const Stored a{ta ? g.k : g.m, ta ? g.m : g.k, false};
  const Stored b{tb ? g.n : g.k, tb ? g.k : g.n, false};
  const Stored dy{ty ? g.n : g.m, ty ? g.m : g.n, false};
  auto flipped = [](Stored s, bool transposed) {
    s.transposed = transposed;
    return s;
  };
  auto gemm = [&](Stored x, Stored y) {
    OpKey key;
    key.soc = forward.soc;
    key.op_type = g.batch > 1 ? "BatchMatMul" : "MatMul";
    const std::string dtype(DTypeName(g.in_dtype));
    auto shape = [&](const Stored& s) {
      std::vector<int64_t> dims = g.batch > 1 ? lead : std::vector<int64_t>{};
      dims.insert(dims.end(), {s.rows, s.cols});
      return dims;
    };
    key.inputs = {TensorDesc{shape(x), dtype, "ND"}, TensorDesc{shape(y), dtype, "ND"}};
    if (x.transposed) key.attrs["transpose_a"] = "1";
    if (y.transposed) key.attrs["transpose_b"] = "1";
    return key;
  };
  // dA = dY op(B)^T, or op(B) dY^T when A is stored transposed; dB = op(A)^T dY, or
  // dY^T op(A) when B is. Reading a tensor in its forward orientation takes its flag.
  const OpKey da = ta ? gemm(flipped(b, tb), flipped(dy, !ty)) : gemm(flipped(dy, ty), flipped(b, !tb));
  const OpKey db = tb ? gemm(flipped(dy, !ty), flipped(a, ta)) : gemm(flipped(a, !ta), flipped(dy, ty));
  return std::vector<OpKey>{da, db};
}

Result<std::vector<NamedKernel>> TunableKernels(const Graph& graph) {
  std::vector<NamedKernel> out;
  const GraphIndex index(graph);
  std::set<std::string_view> node_names;
  if (graph.training) {
    for (const GraphNode& node : graph.nodes) node_names.insert(node.name);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    if (node.IsView()) continue;
    const OpKey key = NodeOpKey(index, node);
    out.push_back({node.name, key, static_cast<int>(i), false});
    if (!graph.training) continue;
    auto backward = BackwardGemmKeys(key);
    if (!backward.ok()) return backward.status().WithContext("node '" + node.name + "' backward");
    for (size_t b = 0; b < backward->size(); ++b) {
      std::string name = node.name + kBackwardGemmSuffixes[b];
      if (node_names.contains(name)) {
        return InvalidArgument("node '" + name + "' is named like node '" + node.name +
                               "''s backward GEMM in a training graph: rename it");
      }
      out.push_back({std::move(name), (*backward)[b], static_cast<int>(i), true});
    }
  }
  return out;
}

nlohmann::json GraphToJson(const Graph& graph) {
  auto tensor = [](const NamedTensor& t) {
    return nlohmann::json{{"name", t.name}, {"shape", t.desc.shape}, {"dtype", t.desc.dtype}, {"format", t.desc.format}};
  };
  auto tensors = [&](const std::vector<NamedTensor>& ts) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& t : ts) a.push_back(tensor(t));
    return a;
  };
  nlohmann::json j{{"name", graph.name},
                   {"soc", graph.soc},
                   {"host_preprocess_us", graph.host_preprocess_us},
                   {"devices", graph.devices},
                   {"training", graph.training},
                   {"inputs", tensors(graph.inputs)},
                   {"weights", tensors(graph.weights)},
                   {"outputs", graph.outputs},
                   {"nodes", nlohmann::json::array()}};
  if (!graph.resident.empty()) j["resident"] = graph.resident;
  if (!graph.causal_masks.empty()) j["causal_masks"] = graph.causal_masks;
  for (const GraphNode& node : graph.nodes) {
    nlohmann::json n{{"name", node.name}, {"op", node.op_type}, {"inputs", node.inputs}, {"outputs", tensors(node.outputs)}};
    if (!node.attrs.empty()) n["attrs"] = node.attrs;
    j["nodes"].push_back(std::move(n));
  }
  return j;
}

Result<std::vector<int>> TopologicalOrder(const Graph& graph) { return TopologicalOrder(GraphIndex(graph)); }

Result<std::vector<int>> TopologicalOrder(const GraphIndex& index) {
  const Graph& graph = index.graph();
  const size_t n = graph.nodes.size();
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> missing(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& in : graph.nodes[i].inputs) {
      int p = index.ProducerOf(in);
      if (p >= 0) {
        consumers[p].push_back(static_cast<int>(i));
        ++missing[i];
      }
    }
  }
  // Kahn's algorithm, always taking the lowest ready index so file order breaks ties.
  std::set<int> ready;
  for (size_t i = 0; i < n; ++i) if (missing[i] == 0) ready.insert(static_cast<int>(i));
  std::vector<int> order;
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[i]) if (--missing[c] == 0) ready.insert(c);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i) {
      if (missing[i] > 0) {
        return InvalidArgument("node '" + graph.nodes[i].name +
                               "': its inputs depend on its own output (the graph has a cycle)");
      }
    }
  }
  return order;
}

namespace {

// NodeOpKey through either lookup: find(name) gives the tensor or nullptr.
template <typename Find>
OpKey NodeOpKeyWith(const Graph& graph, const GraphNode& node, Find&& find) {
  OpKey key;
  key.soc = graph.soc;
  key.op_type = node.op_type;
  key.attrs = node.attrs;
  for (const auto& in : node.inputs) {
    const NamedTensor* t = find(in);
    key.inputs.push_back(t ? t->desc : TensorDesc{});
  }
  // A cube op writes the dtype its node declares (out_dtype, matmul_space.h): an fp32
  // output costs FIXPIPE and HBM twice an fp16 one's bytes.
  if ((IsCubeGemmOpType(node.op_type) || node.op_type == "Conv2D") && !node.outputs.empty() &&
      !key.inputs.empty() && !key.attrs.contains("out_dtype")) {
    auto in = ParseDType(key.inputs[0].dtype);
    auto out = ParseDType(node.outputs[0].desc.dtype);
    if (in.ok() && out.ok() && *out != CubeDefaultOutDType(*in)) key.attrs["out_dtype"] = std::string(DTypeName(*out));
  }
  return key;
}

}  // namespace

OpKey NodeOpKey(const Graph& graph, const GraphNode& node) {
  return NodeOpKeyWith(graph, node, [&](const std::string& name) { return graph.FindTensor(name); });
}

OpKey NodeOpKey(const GraphIndex& index, const GraphNode& node) {
  return NodeOpKeyWith(index.graph(), node, [&](const std::string& name) { return index.FindTensor(name); });
}

namespace {

// A window view (attrs.slice_starts: ONNX's Split and Slice) reads the part of its input
// that starts there and has the output's shape, on every axis.
Status CheckSliceView(const GraphNode& node, const NamedTensor& in, const std::string& text) {
  const std::string what = "node '" + node.name + "': Reshape attrs." + kSliceStartsAttr;
  TF_ASSIGN_OR_RETURN(std::vector<int64_t> starts, space_util::ParseIntList(text, what, "0,0,768"));
  const auto& from = in.desc.shape;
  const auto& to = node.outputs[0].desc.shape;
  if (in.desc.dtype != node.outputs[0].desc.dtype) {
    return InvalidArgument("node '" + node.name + "': Reshape output '" + node.outputs[0].name +
                           "' must keep the input's dtype " + in.desc.dtype);
  }
  if (starts.size() != from.size() || to.size() != from.size()) {
    return InvalidArgument(fmt::format("{}='{}': a window view gives one start per axis of its input {} and keeps its "
                                       "rank (output {})",
                                       what, text, space_util::ShapeText(from), space_util::ShapeText(to)));
  }
  for (size_t a = 0; a < from.size(); ++a) {
    if (starts[a] < 0 || starts[a] > from[a] - to[a]) {
      return InvalidArgument(fmt::format("{}='{}': on axis {} the window [{}, {}) is outside the input's {} (input {}, "
                                         "output {})",
                                         what, text, a, starts[a], starts[a] + to[a], from[a],
                                         space_util::ShapeText(from), space_util::ShapeText(to)));
    }
  }
  return Status::Ok();
}

}  // namespace

const OpChecks::Facts& OpChecks::Of(const OpKey& key, const SocSpec& soc) {
  auto [it, fresh] = facts_.try_emplace(soc.name + '\n' + key.Canonical());
  if (fresh) {
    Facts& f = it->second;
    f.problem = MakeTuningProblem(key, soc).status();
    if (auto written = WrittenDType(key); written.ok()) f.written = *written;
    f.elements = OutputElements(key);
  }
  return it->second;
}

Status ValidateGraphOps(const Graph& graph, const SocSpec& soc, OpChecks* checks) {
  return ValidateGraphOps(GraphIndex(graph), soc, checks);
}

Status ValidateGraphOps(const GraphIndex& index, const SocSpec& soc, OpChecks* checks) {
  const Graph& graph = index.graph();
  // Each op key checked once: a model repeats its layers, and building a tuning problem
  // searches the op's default tiling.
  OpChecks own;
  OpChecks& known = checks ? *checks : own;
  for (const auto& node : graph.nodes) {
    if (node.IsView()) {
      const NamedTensor* in = node.inputs.empty() ? nullptr : index.FindTensor(node.inputs[0]);
      if (node.inputs.size() != 1 || node.outputs.size() != 1 || in == nullptr) {
        return InvalidArgument("node '" + node.name + "': Reshape takes one input and has one output");
      }
      if (auto starts = node.attrs.find(kSliceStartsAttr); starts != node.attrs.end()) {
        TF_RETURN_IF_ERROR(CheckSliceView(node, *in, starts->second));
        continue;
      }
      // A reshape keeps the element count; a broadcast (ONNX's Expand, GQA's repeat_kv) is
      // read at its output's shape and copies nothing.
      const bool reshape = Elements(in->desc) == Elements(node.outputs[0].desc);
      if ((!reshape && !space_util::BroadcastsTo(in->desc.shape, node.outputs[0].desc.shape)) ||
          in->desc.dtype != node.outputs[0].desc.dtype) {
        return InvalidArgument("node '" + node.name + "': Reshape output '" + node.outputs[0].name +
                               "' must keep the input's dtype, and its element count or broadcast it (" +
                               space_util::kBroadcastRule + ")");
      }
      continue;
    }
    const OpKey key = NodeOpKey(index, node);
    const NamedTensor& out = node.outputs[0];
    if (IsCubeGemmOpType(node.op_type) || node.op_type == "Conv2D") {
      // Before the op's own checks: an out_dtype they refuse came from this declaration.
      auto in = key.inputs.empty() ? Result<DType>(InvalidArgument("no input")) : ParseDType(key.inputs[0].dtype);
      auto declared = ParseDType(out.desc.dtype);
      if (in.ok() && declared.ok() && !node.attrs.contains("out_dtype") && !CubeOutDType(key, *in).ok()) {
        return InvalidArgument(fmt::format(
            "node '{}' ({}): output '{}' is declared {}, which the cube does not write: declare {}", node.name,
            node.op_type, out.name, out.desc.dtype,
            *in == DType::kInt8 ? "float16 or float32 (dequantised by FIXPIPE)" : "float16, bfloat16 or float32"));
      }
      if (in.ok() && declared.ok() && *in == DType::kInt8 && *declared == DType::kInt8) {
        return InvalidArgument(fmt::format(
            "node '{}' ({}): output '{}' is declared int8, but an int8 {} writes int32, which a graph cannot declare: "
            "declare float16 or float32 (dequantised by FIXPIPE)",
            node.name, node.op_type, out.name, node.op_type));
      }
    }
    const OpChecks::Facts& facts = known.Of(key, soc);
    if (!facts.problem.ok()) return facts.problem.WithContext("node '" + node.name + "' (" + node.op_type + ")");
    // The declared output sizes the D2H copies, the consumers' reads and peak memory: one
    // that is not what the op writes would make every one of them silently wrong.
    // So does its dtype: a declaration that is not what the op writes would size them too.
    if (facts.written) {
      auto declared = ParseDType(out.desc.dtype);
      if (declared.ok() && *declared != *facts.written) {
        return InvalidArgument(fmt::format(
            "node '{}' ({}): output '{}' is declared {}, but the op writes {}{}", node.name, node.op_type, out.name,
            out.desc.dtype, DTypeName(*facts.written),
            node.attrs.contains("out_dtype") ? "; make attrs.out_dtype and the declaration agree, or leave the attr out"
                                             : "; fix the declaration"));
      }
    }
    const std::optional<int64_t>& writes = facts.elements;
    if (writes && Elements(node.outputs[0].desc) != *writes) {
      return InvalidArgument(fmt::format("node '{}' ({}): output '{}' has {} elements, but the op writes {}; fix its shape",
                                         node.name, node.op_type, node.outputs[0].name, Elements(node.outputs[0].desc),
                                         *writes));
    }
    // A second output is a fused cube op's value before its Quantize (attrs.value_out,
    // fused_space.h), which the op's key has already checked: of the first's elements.
    if (node.outputs.size() > 1) {
      const auto value = node.attrs.find("value_out");
      if (value == node.attrs.end() || node.outputs.size() != 2) {
        return InvalidArgument(fmt::format("node '{}' ({}): it declares {} outputs; an op writes one (a fused cube op "
                                           "with attrs.value_out also the value before its Quantize)",
                                           node.name, node.op_type, node.outputs.size()));
      }
      const NamedTensor& second = node.outputs[1];
      if (Elements(second.desc) != Elements(out.desc) || second.desc.dtype != value->second) {
        return InvalidArgument(fmt::format("node '{}' ({}): its second output '{}' must be the value before its "
                                           "Quantize: {} elements of {}, declared {} of {}",
                                           node.name, node.op_type, second.name, Elements(out.desc), value->second,
                                           Elements(second.desc), second.desc.dtype));
      }
    }
  }
  return Status::Ok();
}

}  // namespace tunefleet
