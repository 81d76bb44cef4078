// Explicit pads for the ONNX nodes whose padding is computed from shapes (internal to
// onnx_import.cc): a Conv's, ConvTranspose's, MaxPool's or AveragePool's auto_pad
// SAME_UPPER, SAME_LOWER or VALID (what tf2onnx and keras2onnx write for TensorFlow's
// "same" and "valid" padding when a shape is dynamic), and a ConvTranspose's output_shape
// (TensorFlow's conv2d_transpose); and a pool's ceil_mode 1 (torchvision's GoogLeNet and
// SqueezeNet), whose last window, partly past the input, reads padding at the end. The
// importer rewrites such a node once shape inference has sized its input and output, so
// every conversion after it reads `pads` alone.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tunefleet/common/status.h"

namespace tunefleet::onnx_pads {

// Whether `n` is such a node: one of those ops with an auto_pad other than NOTSET, a
// ConvTranspose with an output_shape, or a pool with ceil_mode 1.
bool NeedsExplicitPads(const onnx::NodeProto& n);

// `n` with `pads` (ONNX's order: each spatial axis's begin, then each one's end) in place of
// its auto_pad, output_shape and ceil_mode, as the ONNX operators' definitions compute them.
// x: its input's shape [N, C, spatial...]; y: its output's, as inference gave it (a ceil_mode
// pool's windows); weight: a Conv's or ConvTranspose's weight shape [.., .., kernel...]
// (empty for a pool, whose kernel_shape gives its window). An unknown auto_pad, or strides,
// dilations, kernel or output_shape of the wrong length, is refused naming it.
Result<onnx::NodeProto> WithExplicitPads(const onnx::NodeProto& n, const std::string& where,
                                         const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                                         const std::vector<int64_t>& weight);

}  // namespace tunefleet::onnx_pads
