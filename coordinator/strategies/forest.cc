#include "coordinator/strategies/forest.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tunefleet::coordinator {

void RegressionForest::Fit(const std::vector<std::vector<float>>& rows, const std::vector<double>& y,
                           std::mt19937_64& rng) {
  trees_.clear();
  const size_t n = rows.size();
  std::uniform_int_distribution<size_t> draw(0, n - 1);
  for (int t = 0; t < options_.trees; ++t) {
    std::vector<int> sample(n);
    for (size_t i = 0; i < n; ++i) sample[i] = static_cast<int>(draw(rng));  // bootstrap
    Tree tree;
    tree.reserve(2 * n);
    Grow(tree, rows, y, sample, 0, n, 0, rng);
    trees_.push_back(std::move(tree));
  }
}

int RegressionForest::Grow(Tree& tree, const std::vector<std::vector<float>>& rows,
                           const std::vector<double>& y, std::vector<int>& sample, size_t begin,
                           size_t end, int depth, std::mt19937_64& rng) {
  const int id = static_cast<int>(tree.size());
  tree.push_back({});
  const size_t count = end - begin;
  double sum = 0, sum_sq = 0;
  for (size_t i = begin; i < end; ++i) {
    sum += y[sample[i]];
    sum_sq += y[sample[i]] * y[sample[i]];
  }
  tree[id].value = sum / static_cast<double>(count);
  const double sse = sum_sq - sum * sum / static_cast<double>(count);
  if (depth >= options_.max_depth || count < 2 * static_cast<size_t>(options_.min_leaf) || sse <= 1e-12) {
    return id;
  }

  const size_t width = rows[sample[begin]].size();
  std::vector<size_t> features(width);
  std::iota(features.begin(), features.end(), 0);
  std::shuffle(features.begin(), features.end(), rng);
  const size_t tried = std::max<size_t>(1, static_cast<size_t>(std::ceil(options_.feature_fraction * static_cast<double>(width))));

  double best_sse = sse;
  int best_feature = -1;
  float best_threshold = 0;
  std::vector<std::pair<float, double>> column(count);
  for (size_t f = 0; f < tried; ++f) {
    const size_t feature = features[f];
    for (size_t i = 0; i < count; ++i) column[i] = {rows[sample[begin + i]][feature], y[sample[begin + i]]};
    std::sort(column.begin(), column.end());
    if (column.front().first == column.back().first) continue;
    double left_sum = 0, left_sq = 0;
    for (size_t i = 0; i + 1 < count; ++i) {
      left_sum += column[i].second;
      left_sq += column[i].second * column[i].second;
      if (column[i].first == column[i + 1].first) continue;
      const size_t nl = i + 1, nr = count - nl;
      if (nl < static_cast<size_t>(options_.min_leaf) || nr < static_cast<size_t>(options_.min_leaf)) continue;
      const double right_sum = sum - left_sum, right_sq = sum_sq - left_sq;
      const double split_sse = (left_sq - left_sum * left_sum / static_cast<double>(nl)) +
                               (right_sq - right_sum * right_sum / static_cast<double>(nr));
      if (split_sse < best_sse - 1e-12) {
        best_sse = split_sse;
        best_feature = static_cast<int>(feature);
        best_threshold = 0.5f * (column[i].first + column[i + 1].first);
      }
    }
  }
  if (best_feature < 0) return id;

  auto mid = std::partition(sample.begin() + static_cast<std::ptrdiff_t>(begin),
                            sample.begin() + static_cast<std::ptrdiff_t>(end),
                            [&](int s) { return rows[s][static_cast<size_t>(best_feature)] < best_threshold; });
  const size_t split = static_cast<size_t>(mid - sample.begin());
  tree[id].feature = best_feature;
  tree[id].threshold = best_threshold;
  const int left = Grow(tree, rows, y, sample, begin, split, depth + 1, rng);
  const int right = Grow(tree, rows, y, sample, split, end, depth + 1, rng);
  tree[id].left = left;
  tree[id].right = right;
  return id;
}

double RegressionForest::Leaf(const Tree& tree, const std::vector<float>& row) {
  int node = 0;
  while (tree[node].feature >= 0) {
    node = row[static_cast<size_t>(tree[node].feature)] < tree[node].threshold ? tree[node].left : tree[node].right;
  }
  return tree[node].value;
}

std::vector<double> RegressionForest::PerTree(const std::vector<float>& row) const {
  std::vector<double> out;
  out.reserve(trees_.size());
  for (const Tree& tree : trees_) out.push_back(Leaf(tree, row));
  return out;
}

RegressionForest::Prediction RegressionForest::Predict(const std::vector<float>& row) const {
  return Summarize(PerTree(row));
}

RegressionForest::Prediction RegressionForest::Summarize(const std::vector<double>& answers) {
  double sum = 0, sum_sq = 0;
  for (double value : answers) {
    sum += value;
    sum_sq += value * value;
  }
  const double n = static_cast<double>(answers.size());
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean))};
}

}  // namespace tunefleet::coordinator
