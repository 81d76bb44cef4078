#include "coordinator/strategies/guided.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tunefleet::coordinator {

Batch GuidedStrategy::Ask(size_t max_configs, const Taken& taken) {
  Batch b;
  while (b.configs.size() < max_configs) {
    std::optional<ConfigIndex> next = Propose(taken);
    if (!next) next = RandomUsable(taken);
    if (!next) break;  // the valid space is used up
    proposed_.insert(*next);
    b.configs.push_back(*next);
  }
  return b;
}

void GuidedStrategy::Tell(ConfigIndex index, std::optional<double> latency_us) {
  double lat = latency_us.value_or(std::numeric_limits<double>::infinity());
  results_[index] = lat;
  history_.emplace_back(index, lat);
  if (latency_us && (!best_ || lat < Latency(*best_) || (lat == Latency(*best_) && index < *best_))) {
    best_ = index;
  }
  Learn(index, lat);
}

std::string GuidedStrategy::Checkpoint() const {
  CheckpointWriter w(Tag());
  w.Rng(rng_);
  w.U64(history_.size());
  for (const auto& [index, latency] : history_) {
    w.U64(index);
    w.F64(latency);
  }
  std::vector<ConfigIndex> proposed(proposed_.begin(), proposed_.end());
  std::sort(proposed.begin(), proposed.end());
  w.Indices(proposed);
  SaveOwn(w);
  return w.Take();
}

Status GuidedStrategy::Restore(std::string_view bytes) {
  CheckpointReader r(bytes, Tag());
  r.Rng(rng_);
  history_.clear();
  results_.clear();
  best_.reset();
  const uint64_t n = r.U64();
  for (uint64_t k = 0; k < n && !r.failed(); ++k) {
    ConfigIndex index = r.U64();
    double latency = r.F64();
    history_.emplace_back(index, latency);
    results_[index] = latency;
    if (std::isfinite(latency) && (!best_ || latency < Latency(*best_) || (latency == Latency(*best_) && index < *best_))) {
      best_ = index;
    }
  }
  std::vector<ConfigIndex> proposed = r.Indices();
  proposed_ = std::unordered_set<ConfigIndex>(proposed.begin(), proposed.end());
  LoadOwn(r);
  return r.status();
}

double GuidedStrategy::Latency(ConfigIndex i) const {
  auto it = results_.find(i);
  return it == results_.end() ? std::numeric_limits<double>::infinity() : it->second;
}

bool GuidedStrategy::Usable(ConfigIndex i, const Taken& taken) {
  if (i >= space_.size() || proposed_.count(i) || results_.count(i) || (taken && taken(i))) return false;
  return space_.IsValidIndex(i);
}

std::optional<ConfigIndex> GuidedStrategy::RandomUsable(const Taken& taken) {
  std::uniform_int_distribution<ConfigIndex> dist(0, space_.size() - 1);
  for (int attempt = 0; attempt < 512; ++attempt) {
    ConfigIndex i = dist(rng_);
    if (Usable(i, taken)) return i;
  }
  // Draws mostly miss: walk the product from a random point (always terminates).
  ConfigIndex start = dist(rng_);
  for (ConfigIndex n = 0; n < space_.size(); ++n) {
    ConfigIndex i = (start + n) % space_.size();
    if (Usable(i, taken)) return i;
  }
  return std::nullopt;
}

std::vector<size_t> GuidedStrategy::Positions(ConfigIndex index) const {
  std::vector<size_t> pos(space_.dims());
  for (size_t d = space_.dims(); d-- > 0;) {
    size_t radix = space_.params()[d].values.size();
    pos[d] = static_cast<size_t>(index % radix);
    index /= radix;
  }
  return pos;
}

ConfigIndex GuidedStrategy::EncodePositions(const std::vector<size_t>& positions) const {
  ConfigIndex index = 0;
  for (size_t d = 0; d < space_.dims(); ++d) index = index * space_.params()[d].values.size() + positions[d];
  return index;
}

std::optional<ConfigIndex> GuidedStrategy::Neighbour(ConfigIndex from, const Taken& taken) {
  std::vector<size_t> pos = Positions(from);
  std::vector<std::pair<size_t, int>> moves;
  for (size_t d = 0; d < pos.size(); ++d) {
    if (pos[d] > 0) moves.emplace_back(d, -1);
    if (pos[d] + 1 < space_.params()[d].values.size()) moves.emplace_back(d, +1);
  }
  std::shuffle(moves.begin(), moves.end(), rng_);
  for (const auto& [d, step] : moves) {
    std::vector<size_t> p = pos;
    p[d] = static_cast<size_t>(static_cast<int64_t>(p[d]) + step);
    ConfigIndex i = EncodePositions(p);
    if (Usable(i, taken)) return i;
  }
  return std::nullopt;
}

std::optional<ConfigIndex> GuidedStrategy::Mutate(ConfigIndex from, int k, const Taken& taken) {
  for (int attempt = 0; attempt < 32; ++attempt) {
    std::vector<size_t> pos = Positions(from);
    for (int m = 0; m < k; ++m) {
      size_t d = std::uniform_int_distribution<size_t>(0, pos.size() - 1)(rng_);
      pos[d] = std::uniform_int_distribution<size_t>(0, space_.params()[d].values.size() - 1)(rng_);
    }
    ConfigIndex i = EncodePositions(pos);
    if (Usable(i, taken)) return i;
  }
  return std::nullopt;
}

std::optional<ConfigIndex> GuidedStrategy::Cross(ConfigIndex a, ConfigIndex b, double p_mutate,
                                                 const Taken& taken) {
  std::vector<size_t> pa = Positions(a), pb = Positions(b);
  for (int attempt = 0; attempt < 32; ++attempt) {
    std::vector<size_t> child(pa.size());
    for (size_t d = 0; d < pa.size(); ++d) child[d] = (rng_() & 1) ? pa[d] : pb[d];
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < p_mutate) {
      size_t d = std::uniform_int_distribution<size_t>(0, child.size() - 1)(rng_);
      child[d] = std::uniform_int_distribution<size_t>(0, space_.params()[d].values.size() - 1)(rng_);
    }
    ConfigIndex i = EncodePositions(child);
    if (Usable(i, taken)) return i;
  }
  return std::nullopt;
}

}  // namespace tunefleet::coordinator
