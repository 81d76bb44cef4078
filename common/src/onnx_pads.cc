#include "onnx_pads.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "onnx_util.h"

namespace tunefleet::onnx_pads {
namespace {

using onnx_util::Attr;
using onnx_util::IntsAttr;
using onnx_util::IsStandardDomain;

bool IsPool(const onnx::NodeProto& n) {
  return IsStandardDomain(n.domain()) && (n.op_type() == "MaxPool" || n.op_type() == "AveragePool");
}

bool IsPadded(const onnx::NodeProto& n) {
  return IsPool(n) || (IsStandardDomain(n.domain()) && (n.op_type() == "Conv" || n.op_type() == "ConvTranspose"));
}

std::string AutoPad(const onnx::NodeProto& n) {
  const auto* a = Attr(n, "auto_pad");
  return a == nullptr ? "NOTSET" : a->s();
}

// An ints attribute of one value per spatial axis, or `fallback` for each when absent.
Result<std::vector<int64_t>> PerAxis(const onnx::NodeProto& n, const std::string& where, const char* attr,
                                     size_t axes, int64_t fallback) {
  std::vector<int64_t> v = IntsAttr(n, attr);
  if (v.empty()) return std::vector<int64_t>(axes, fallback);
  if (v.size() != axes) {
    return InvalidArgument(fmt::format("{}: {} [{}] must have one value for each of its input's {} spatial axes", where,
                                       attr, fmt::join(v, ","), axes));
  }
  return v;
}

}  // namespace

bool NeedsExplicitPads(const onnx::NodeProto& n) {
  if (!IsPadded(n)) return false;
  return AutoPad(n) != "NOTSET" || (n.op_type() == "ConvTranspose" && Attr(n, "output_shape") != nullptr) ||
         (IsPool(n) && onnx_util::IntAttr(n, "ceil_mode", 0) != 0);
}

Result<onnx::NodeProto> WithExplicitPads(const onnx::NodeProto& n, const std::string& where,
                                         const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                                         const std::vector<int64_t>& weight) {
  const std::string mode = AutoPad(n);
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
    return InvalidArgument(fmt::format("{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER and VALID",
                                       where, mode));
  }
  if (x.size() < 3) return InvalidArgument(where + ": its input needs a batch, a channel and a spatial axis");
  const size_t axes = x.size() - 2;
  const bool transposed = n.op_type() == "ConvTranspose";
  const bool same = mode == "SAME_UPPER" || mode == "SAME_LOWER";
  std::vector<int64_t> kernel = IntsAttr(n, "kernel_shape");
  if (kernel.empty() && weight.size() == x.size()) kernel.assign(weight.begin() + 2, weight.end());
  if (kernel.size() != axes) {
    return InvalidArgument(fmt::format("{}: its window [{}] must have one size for each of its input's {} spatial axes",
                                       where, fmt::join(kernel, ","), axes));
  }
  TF_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, PerAxis(n, where, "strides", axes, 1));
  TF_ASSIGN_OR_RETURN(const std::vector<int64_t> dilations, PerAxis(n, where, "dilations", axes, 1));
  TF_ASSIGN_OR_RETURN(const std::vector<int64_t> extra, PerAxis(n, where, "output_padding", axes, 0));
  const std::vector<int64_t> target = IntsAttr(n, "output_shape");
  if (transposed && Attr(n, "output_shape") != nullptr && target.size() != axes) {
    return InvalidArgument(fmt::format("{}: output_shape [{}] must have one size for each of its input's {} spatial axes",
                                       where, fmt::join(target, ","), axes));
  }
  const bool shaped = transposed && !target.empty();

  std::vector<int64_t> pads = IntsAttr(n, "pads");
  if (pads.size() != 2 * axes) pads.assign(2 * axes, 0);
  for (size_t a = 0; a < axes; ++a) {
    const int64_t in = x[2 + a], s = strides[a], window = (kernel[a] - 1) * dilations[a] + 1;
    if (s < 1 || window < 1) {
      return InvalidArgument(fmt::format("{}: strides [{}] and its window [{}] must be positive", where,
                                         fmt::join(strides, ","), fmt::join(kernel, ",")));
    }
    int64_t total = 0;  // VALID's
    if (transposed && (same || shaped)) {
      // The padding that makes a ConvTranspose's output output_shape, or in * stride for SAME.
      const int64_t out = shaped ? target[a] : in * s;
      total = s * (in - 1) + extra[a] + window - out;
    } else if (same) {
      const int64_t out = (in + s - 1) / s;  // ceil(in / stride)
      total = std::max<int64_t>(0, (out - 1) * s + window - in);
    }
    if (mode != "NOTSET" || shaped) {
      // SAME_UPPER puts the odd one at the end; SAME_LOWER, and a ConvTranspose's
      // output_shape without auto_pad, at the beginning.
      const int64_t half = total / 2;
      pads[a] = mode == "SAME_UPPER" ? half : total - half;
      pads[axes + a] = mode == "SAME_UPPER" ? total - half : half;
    }
    if (IsPool(n) && onnx_util::IntAttr(n, "ceil_mode", 0) != 0) {
      // Rounded up, the last window reaches past the input and its padding: as far again
      // of padding at the end.
      if (y.size() != x.size()) return InvalidArgument(where + ": its output's shape is not known");
      pads[axes + a] += std::max<int64_t>(0, (y[2 + a] - 1) * s + window - (in + pads[a] + pads[axes + a]));
    }
  }

  onnx::NodeProto out = n;
  out.clear_attribute();
  for (const auto& a : n.attribute()) {
    const std::string& name = a.name();
    if (name != "auto_pad" && name != "output_shape" && name != "pads" && name != "ceil_mode") *out.add_attribute() = a;
  }
  onnx::AttributeProto* p = out.add_attribute();
  p->set_name("pads");
  p->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : pads) p->add_ints(v);
  return out;
}

}  // namespace tunefleet::onnx_pads
