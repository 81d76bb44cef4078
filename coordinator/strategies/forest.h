// RegressionForest: the surrogate cost model of the model-based strategy: a small random
// forest (bagged CART regression trees with random feature subsets) over a config's
// features. Predict() gives the mean over trees and their spread, which the strategy
// turns into an expected improvement; PerTree() gives each tree's answer, a posterior
// draw for Thompson sampling. Deterministic given the rng passed to Fit(). A plain value
// owned by one strategy; not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tunefleet::coordinator {

struct ForestOptions {
  int trees = 24;
  int max_depth = 14;
  int min_leaf = 1;
  double feature_fraction = 1.0;  // share of features tried at each split (1: bagging only)
};

class RegressionForest {
 public:
  struct Prediction {
    double mean = 0;
    double stddev = 0;  // spread of the trees' answers: the model's uncertainty
  };

  explicit RegressionForest(ForestOptions options = {}) : options_(options) {}

  // Requires rows.size() == y.size() > 0 and every row of the same width.
  void Fit(const std::vector<std::vector<float>>& rows, const std::vector<double>& y,
           std::mt19937_64& rng);
  bool fitted() const { return !trees_.empty(); }
  // Requires fitted() and a row of the width Fit() saw.
  Prediction Predict(const std::vector<float>& row) const;
  // Each tree's answer, in tree order: draws from the model's posterior (Thompson sampling).
  std::vector<double> PerTree(const std::vector<float>& row) const;
  // The mean and spread of PerTree()'s answers (what Predict() returns), for a caller
  // that needs both without walking the trees twice. Requires non-empty answers.
  static Prediction Summarize(const std::vector<double>& answers);

 private:
  struct Node {
    int feature = -1;  // -1: leaf
    float threshold = 0;
    int left = 0, right = 0;
    double value = 0;
  };
  using Tree = std::vector<Node>;
  static double Leaf(const Tree& tree, const std::vector<float>& row);

  int Grow(Tree& tree, const std::vector<std::vector<float>>& rows, const std::vector<double>& y,
           std::vector<int>& sample, size_t begin, size_t end, int depth, std::mt19937_64& rng);

  ForestOptions options_;
  std::vector<Tree> trees_;
};

}  // namespace tunefleet::coordinator
