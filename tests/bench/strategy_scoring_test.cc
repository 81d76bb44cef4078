// bench/strategy_scoring: the published scoring convention on a toy space, with a
// scripted strategy, sequentially and with several configs in flight.
#include "bench/strategy_scoring.h"

#include <gtest/gtest.h>

namespace tunefleet::bench {
namespace {

// Proposes a fixed list in order; records what it was told, in order.
class ScriptedStrategy final : public coordinator::Strategy {
 public:
  explicit ScriptedStrategy(std::vector<ConfigIndex> script) : script_(std::move(script)) {}
  coordinator::Batch Ask(size_t max_configs, const Taken& taken) override {
    coordinator::Batch b;
    while (next_ < script_.size() && b.configs.size() < max_configs) {
      EXPECT_FALSE(taken(script_[next_])) << "config " << script_[next_] << " reported taken early";
      b.configs.push_back(script_[next_++]);
    }
    return b;
  }
  void Tell(ConfigIndex index, std::optional<double> latency_us) override {
    told.push_back(index);
    told_latency.push_back(latency_us);
  }
  std::string Checkpoint() const override { return {}; }  // the scorer never checkpoints
  Status Restore(std::string_view) override { return Status::Ok(); }
  std::vector<ConfigIndex> told;
  std::vector<std::optional<double>> told_latency;

 private:
  std::vector<ConfigIndex> script_;
  size_t next_ = 0;
};

// Configs 0..7: 0-2 absent or failed, 3..7 measured; the optimum (1 ms) is config 5.
ReplayObjective Toy() {
  ReplayObjective o;
  o.time = {kPenaltyTime, kPenaltyTime, kPenaltyTime, 8.0, 4.0, 1.0, 2.0, 16.0};
  o.optimum = 1.0;
  return o;
}

TEST(StrategyScoring, TheOptimumDrawnAtEvaluationKScoresOneFromBudgetKOn) {
  ScriptedStrategy s({3, 0, 4, 5, 6});  // optimum at draw k = 4
  Trace t = RunStrategy(s, Toy(), 5, 1, 0.1);
  ASSERT_EQ(t.times.size(), 5u);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 1), 1.0 / 8.0);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 3), 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 4), 1.0);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 5), 1.0);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 400), 1.0);  // fewer than n: all of them
}

TEST(StrategyScoring, AbsentAndFailedDrawsCostAnEvaluationAndCountAsTenToTheTen) {
  ScriptedStrategy s({0, 1, 2, 5});
  Trace t = RunStrategy(s, Toy(), 3, 1, 0.1);
  ASSERT_EQ(t.times.size(), 3u);  // the budget is spent on the three failed draws
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 3), 1.0 / kPenaltyTime);
  ASSERT_EQ(s.told_latency.size(), 3u);
  EXPECT_FALSE(s.told_latency[0].has_value());  // the strategy learns they failed
}

TEST(StrategyScoring, SequentialRunsTellEachResultBeforeTheNextAskInMicroseconds) {
  ScriptedStrategy s({3, 4, 5});
  Trace t = RunStrategy(s, Toy(), 3, 1, 0.1);
  EXPECT_EQ(t.configs, (std::vector<ConfigIndex>{3, 4, 5}));
  EXPECT_EQ(s.told, (std::vector<ConfigIndex>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(*s.told_latency[0], 8000.0);
}

TEST(StrategyScoring, InFlightResultsArriveInVirtualFinishOrder) {
  // 2 in flight: 7 (16 ms) and 4 (4 ms) start at 0; 4 finishes at 4, then 5 starts and
  // finishes at 5, then 0 (failed, cost 0.5) at 5.5, then 6 at 7.5 ... 7 last at 16.
  ScriptedStrategy s({7, 4, 5, 0, 6});
  Trace t = RunStrategy(s, Toy(), 5, 2, 0.5);
  EXPECT_EQ(t.configs, (std::vector<ConfigIndex>{4, 5, 0, 6, 7}));
  EXPECT_EQ(s.told, t.configs);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 2), 1.0);
}

TEST(StrategyScoring, StopsWhenTheStrategyHasNothingLeft) {
  ScriptedStrategy s({3, 6});
  Trace t = RunStrategy(s, Toy(), 25, 8, 0.5);
  EXPECT_EQ(t.times.size(), 2u);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, t.times, 25), 0.5);
  EXPECT_DOUBLE_EQ(FractionOfOptimum(1.0, {}, 25), 0.0);
}

TEST(StrategyScoring, ExpectedRandomFractionIsTheExactMeanOverAllDrawOrders) {
  ReplayObjective o;
  o.time = {1.0, 2.0, kPenaltyTime};
  o.optimum = 1.0;
  // One draw: each config with probability 1/3.
  EXPECT_NEAR(ExpectedRandomFraction(o, 1), (1.0 + 0.5 + 1.0 / kPenaltyTime) / 3, 1e-12);
  // Two draws: the optimum is missed only by the pair {2, failed}, 1 of 3 pairs.
  EXPECT_NEAR(ExpectedRandomFraction(o, 2), (2 * 1.0 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(ExpectedRandomFraction(o, 3), 1.0, 1e-12);
}

TEST(StrategyScoring, ExpectedRandomFractionWithinKnownConstraintsDrawsOnlyTheAllowedConfigs) {
  ReplayObjective o;
  o.time = {1.0, 2.0, kPenaltyTime, kPenaltyTime};
  o.allowed = {true, true, true, false};  // the last one over the device's thread limit
  o.optimum = 1.0;
  // From the full product, one draw in four scores 1e-10; within the limit, one in three.
  EXPECT_NEAR(ExpectedRandomFraction(o, 1), (1.0 + 0.5 + 2 / kPenaltyTime) / 4, 1e-12);
  EXPECT_NEAR(ExpectedRandomFraction(o, 1, true), (1.0 + 0.5 + 1 / kPenaltyTime) / 3, 1e-12);
  EXPECT_NEAR(ExpectedRandomFraction(o, 2, true), (2 * 1.0 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(ExpectedRandomFraction(o, 9, true), 1.0, 1e-12);

  // FromCache takes the allowed configs from the cache's space.
  const KtCache cache = KtCache::Parse(R"({
    "tune_params_keys": ["block_size_x", "block_size_y"],
    "tune_params": {"block_size_x": [256, 1024], "block_size_y": [1, 4]},
    "cache": {"256,1": {"time": 2.0}, "1024,1": {"time": 1.0}}})", "blocks").value();
  o = ReplayObjective::FromCache(cache);
  EXPECT_EQ(o.allowed, (std::vector<bool>{true, true, true, false}));  // 1024 x 4 is over
  EXPECT_NEAR(ExpectedRandomFraction(o, 1, true), (0.5 + 1.0 + 1 / kPenaltyTime) / 3, 1e-12);
}

}  // namespace
}  // namespace tunefleet::bench
