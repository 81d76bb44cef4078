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
// (integer, truncating as ONNX does), Equal, Where, Concat, Unsqueeze, Squeeze, Reshape
// (0 and -1 as ONNX reads them, not allowzero), Cast (to an integer type or bool), Gather
// (of a 1-D tensor), Slice (on one axis, either direction) and Transpose (torch's F.pad
// computes its pads with these: a Slice with step -1 its exporter leaves). Tensors of at most
// kMaxElements.
// Float (float32 or double) scalars too, for the attention scale PyTorch computes at export
// (GPT-2's `full([], d ** 0.5)`: Pow(64, 0.5), a ConstantOfShape of one element, Add): Add,
// Sub, Mul, Div, Pow, Sqrt and ConstantOfShape of one element, when the result is finite.
inline constexpr int64_t kMaxElements = 4096;

// Folds in place, in the graph's (topological) node order; returns how many nodes it folded.
int FoldConstantArithmetic(onnx::GraphProto& g);

// A model exported with dynamic axes computes its views' shapes from its tensors' (Shape,
// Gather, Unsqueeze, Concat, then Reshape). Once every input's size is given (--dim),
// ONNX's shape inference sizes those tensors: each Shape of a tensor it sized becomes a
// Constant of its value (start and end as attributes, opset 15), and the arithmetic on it
// folds, until no Shape is left that inference sizes (at most kMaxShapeRounds rounds: a
// Reshape whose shape folded sizes what reads it in the next). Returns the nodes folded.
inline constexpr int kMaxShapeRounds = 16;
int FoldKnownShapes(onnx::ModelProto& model);

}  // namespace tunefleet::onnx_fold
