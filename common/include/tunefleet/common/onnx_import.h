// ONNX import (DESIGN.md: a submission is a model as a JSON graph or an ONNX file): reads
// a .onnx model with libonnx, fixes its symbolic dimensions to given sizes, infers every
// tensor's shape (onnx::shape_inference) and converts it to a Graph, node by node
// (docs/profiling.md "ONNX models"), after folding GELU and LayerNorm written out as
// primitive nodes back into one op each. Initializers become weights, Constant nodes too;
// weights' data is read only to find causal masks (Graph::causal_masks: a bool or float
// constant that masks every key after the query's own) and may live in external files that
// are not there. Ops
// with no tunefleet equivalent are refused naming the node. Pure function of the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

struct OnnxImportOptions {
  std::string soc;                      // the graph's SoC (ONNX has none): required
  std::map<std::string, int64_t> dims;  // symbolic dimension -> size ("batch" -> 32)
  // false: float32 tensors are float16, as ATC's default precision_mode (force_fp16)
  // runs a model (PyTorch exports float32 by default; the cube takes no float32).
  bool keep_fp32 = false;
};

bool IsOnnxPath(const std::string& path);  // ends with ".onnx"

// The model's metadata_props key naming, comma-separated, tensors that hold a causal mask,
// beside those found from their values: what scripts/onnx_weights.py writes for the masks
// whose data it drops. A name the graph has no tensor of is an error.
inline constexpr const char* kCausalMasksMetadataKey = "tunefleet.causal_masks";

// A decoding step's KV cache, inputs named past* and outputs named present* (HF's
// past_key_values.N.key and present.N.key), is resident (Graph::resident): not copied
// over PCIe every step.
// kInvalidArgument naming what to fix: a file that is not an ONNX model, a symbolic
// dimension without a size (listing them all), a node whose op has no equivalent (listing
// the supported ones), a tensor shape inference left unknown. kNotFound when unreadable.
Result<Graph> GraphFromOnnxFile(const std::string& path, const OnnxImportOptions& options);

// "batch=32" -> {"batch", 32}; kInvalidArgument saying the expected form otherwise.
Result<std::pair<std::string, int64_t>> ParseDimFlag(const std::string& text);

}  // namespace tunefleet
