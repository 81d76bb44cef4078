// Arithmetic on constants only, folded before an ONNX graph is converted (internal to
// onnx_import.cc). PyTorch's exporter writes some sizes as a small computation on constants
// even at fixed shapes: GQA's repeat_kv computes its Expand's shape with ConstantOfShape,
// Mul, Equal and Where. Each node of the ops below whose inputs are all integer or bool
// constants (initializers with their data, Constant nodes, earlier folds) is replaced by a
// Constant node of its value, with its name and output, so what reads it (an Expand's or a
// Reshape's shape, a Slice's bounds) reads a constant. Everything else is left as it is.
#pragma once

#include <onnx/onnx_pb.h>

namespace tunefleet::onnx_fold {

// The ops folded: ConstantOfShape (of an integer or bool value), Add, Sub, Mul, Div
// (integer, truncating as ONNX does), Equal, Where, Concat, Unsqueeze, Squeeze, Cast (to an
// integer type or bool), Gather (of a 1-D tensor). Tensors of at most kMaxElements.
// Float (float32 or double) scalars too, for the attention scale PyTorch computes at export
// (GPT-2's `full([], d ** 0.5)`: Pow(64, 0.5), a ConstantOfShape of one element, Add): Add,
// Sub, Mul, Div, Pow, Sqrt and ConstantOfShape of one element, when the result is finite.
inline constexpr int64_t kMaxElements = 4096;

// Folds in place, in the graph's (topological) node order; returns how many nodes it folded.
int FoldConstantArithmetic(onnx::GraphProto& g);

}  // namespace tunefleet::onnx_fold
