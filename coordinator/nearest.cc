#include "coordinator/nearest.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace tunefleet::coordinator {
namespace {

// What ShapeDistance requires equal, as one string.
std::string ClassOf(const OpKey& key) {
  OpKey shapeless = key;
  for (TensorDesc& t : shapeless.inputs) {
    t.shape.assign(t.shape.size(), 1);  // the rank stays
  }
  return shapeless.Canonical();
}

std::vector<double> Logs(const OpKey& key) {
  std::vector<double> out;
  for (const TensorDesc& t : key.inputs) {
    for (int64_t d : t.shape) out.push_back(std::log(static_cast<double>(d)));
  }
  return out;
}

}  // namespace

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

Result<NearestIndex> NearestIndex::Build(const Store& store) {
  NearestIndex index;
  TF_RETURN_IF_ERROR(store.ForEachKb([&](const KbEntry& e) { index.Put(e); }));
  return index;
}

void NearestIndex::Put(const KbEntry& e) {
  Class& c = classes_[ClassOf(e.key)];
  const OpKeyHash hash = HashOpKey(e.key);
  if (auto at = c.position.find(hash); at != c.position.end()) {
    c.latency_us[at->second] = e.best_latency_us;  // a replacement: same key, same shape
    return;
  }
  const std::vector<double> logs = Logs(e.key);
  c.dims = logs.size();  // the same for the whole class: the ranks are part of it
  c.position.emplace(hash, c.hashes.size());
  c.logs.insert(c.logs.end(), logs.begin(), logs.end());
  c.latency_us.push_back(e.best_latency_us);
  c.hashes.push_back(hash);
  ++size_;
}

Result<std::vector<NearestEntry>> NearestIndex::Find(const Store& store, const OpKey& key, size_t k,
                                                     const Fits& fits) const {
  std::vector<NearestEntry> found;
  auto cls = classes_.find(ClassOf(key));
  if (cls == classes_.end() || k == 0) return found;
  const OpKeyHash own = HashOpKey(key);
  const std::vector<double> logs = Logs(key);
  using Candidate = std::tuple<double, double, OpKeyHash>;  // distance, latency, hash: the order
  // The `keep` nearest in one pass (a max-heap of them), and all of them only when that
  // many do not fit: most answers are among the first.
  const Class& c = cls->second;
  if (c.dims != logs.size()) return found;
  auto nearest = [&](size_t keep) {
    std::vector<Candidate> heap;
    for (size_t e = 0; e < c.hashes.size(); ++e) {
      const double* item = c.logs.data() + e * c.dims;
      double d = 0;
      for (size_t i = 0; i < c.dims; ++i) d += std::abs(logs[i] - item[i]);
      if (heap.size() == keep && !(Candidate(d, c.latency_us[e], c.hashes[e]) < heap.front())) continue;
      if (c.hashes[e] == own) continue;
      heap.emplace_back(d, c.latency_us[e], c.hashes[e]);
      std::push_heap(heap.begin(), heap.end());
      if (heap.size() > keep) {
        std::pop_heap(heap.begin(), heap.end());
        heap.pop_back();
      }
    }
    std::sort_heap(heap.begin(), heap.end());
    return heap;
  };
  std::vector<Candidate> candidates = nearest(std::max<size_t>(16, 4 * k));
  bool all = candidates.size() < std::max<size_t>(16, 4 * k);
  for (size_t next = 0; found.size() < k; ++next) {
    if (next == candidates.size()) {
      if (all) break;
      candidates = nearest(c.hashes.size());  // the same first ones, then the rest
      all = true;
      if (next == candidates.size()) break;
    }
    TF_ASSIGN_OR_RETURN(std::optional<KbEntry> e, store.GetKb(std::get<2>(candidates[next])));
    if (!e || !fits(*e)) continue;
    found.push_back({std::move(*e), std::get<0>(candidates[next])});
  }
  return found;
}

}  // namespace tunefleet::coordinator
