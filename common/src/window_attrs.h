// The 2-D window attributes Conv2D and the poolings (MaxPool, AveragePool) share: a
// kernel's, stride's or dilation's [h, w] and the pads [top, bottom, left, right], read
// from an op key's attrs with one set of rules and errors, and written back in one
// spelling (CanonicalConv2dAttrs, CanonicalPoolAttrs). Private to common/src/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/status.h"

namespace tunefleet::window_attrs {

// Windows, strides, dilations and pads beyond this are no convolution's or pooling's (and
// their sums with H and W would overflow: pads of 2^63 - 1 were tuned as a 5.7 us op).
inline constexpr int64_t kMaxWindowAttr = 65535;

using Hw = std::array<int64_t, 2>;
using Pads = std::array<int64_t, 4>;  // top, bottom, left, right

// attrs[name] as [h, w]: 1 value (both), 2 = [h, w], or 4 in NCHW order with N and C
// equal to 1; each in [low, kMaxWindowAttr]. `fallback` when the key does not give it;
// without one the attribute is required. Errors name the op, the attribute and, when
// required, an `example`.
Result<Hw> ReadHw(const OpKey& key, const std::string& name, int64_t low, std::optional<Hw> fallback,
                  const std::string& example = "3,3");

// attrs.pads as [top, bottom, left, right]: 1 value (all), 2 = [h, w], or 4 in that
// order; all 0 when absent. Each in [0, kMaxWindowAttr].
Result<Pads> ReadPads(const OpKey& key);

// Writes attrs[name] as "a,b" or "a,b,c,d", or leaves it out when `values` are all
// `omit_at` (a default): one spelling for one op.
void WriteHw(OpKey& key, const std::string& name, const Hw& values, std::optional<int64_t> omit_at);
void WritePads(OpKey& key, const Pads& pads);

}  // namespace tunefleet::window_attrs
