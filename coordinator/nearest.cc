#include "coordinator/nearest.h"

#include <algorithm>
#include <cmath>

namespace tunefleet::coordinator {

std::optional<double> ShapeDistance(const OpKey& a, const OpKey& b) {
  if (a.soc != b.soc || a.op_type != b.op_type || a.model_version != b.model_version ||
      a.attrs != b.attrs || a.inputs.size() != b.inputs.size()) {
    return std::nullopt;
  }
  double d = 0;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const TensorDesc& x = a.inputs[i];
    const TensorDesc& y = b.inputs[i];
    if (x.dtype != y.dtype || x.format != y.format || x.shape.size() != y.shape.size()) return std::nullopt;
    for (size_t j = 0; j < x.shape.size(); ++j) {
      d += std::abs(std::log(static_cast<double>(x.shape[j]) / static_cast<double>(y.shape[j])));
    }
  }
  return d;
}

Result<std::vector<NearestEntry>> FindNearest(const Store& store, const OpKey& key, size_t k) {
  std::vector<NearestEntry> found;
  TF_RETURN_IF_ERROR(store.ForEachKb([&](const KbEntry& e) {
    if (e.key == key) return;
    if (auto d = ShapeDistance(key, e.key)) found.push_back({e, *d});
  }));
  std::sort(found.begin(), found.end(), [](const NearestEntry& x, const NearestEntry& y) {
    if (x.distance != y.distance) return x.distance < y.distance;
    if (x.entry.best_latency_us != y.entry.best_latency_us) return x.entry.best_latency_us < y.entry.best_latency_us;
    return HashOpKey(x.entry.key) < HashOpKey(y.entry.key);
  });
  if (found.size() > k) found.resize(k);
  return found;
}

}  // namespace tunefleet::coordinator
