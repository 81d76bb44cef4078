#include "coordinator/strategy.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "coordinator/strategies/guided.h"

namespace tunefleet::coordinator {
namespace {

SearchSpace Space() {
  return SearchSpace::Create(
             {{"a", {1, 2, 3, 4, 5, 6, 7, 8}}, {"b", {1, 2, 3, 4, 5, 6, 7, 8}}, {"c", {0, 1, 2}}},
             {{"a+b<=12", [](const SearchSpace& s, const Config& c, std::string* why) -> bool {
                return s.Get(c, "a") + s.Get(c, "b") <= 12 || Violated(why, [] { return std::string("too big"); });
              }}})
      .value();
}

std::vector<ConfigIndex> Drain(Strategy& s, size_t batch, const Strategy::Taken& taken = {}) {
  std::vector<ConfigIndex> all;
  for (;;) {
    Batch b = s.Ask(batch, taken);
    if (b.configs.empty()) return all;
    all.insert(all.end(), b.configs.begin(), b.configs.end());
  }
}

TEST(Strategies, NeverProposeTwiceOrAnInvalidConfigAndCoverTheValidSpace) {
  SearchSpace space = Space();
  std::vector<ConfigIndex> valid = space.EnumerateValid();
  for (const std::string& name : StrategyNames()) {
    auto s = MakeStrategy(name, space, 3).value();
    std::vector<ConfigIndex> got = Drain(*s, 7);
    std::set<ConfigIndex> unique(got.begin(), got.end());
    EXPECT_EQ(unique.size(), got.size()) << name << " proposed a config twice";
    EXPECT_EQ(got.size(), valid.size()) << name;
    for (ConfigIndex i : got) EXPECT_TRUE(space.ValidateIndex(i).ok()) << name << " proposed invalid " << i;
  }
}

TEST(Strategies, RandomIsDeterministicPerSeed) {
  SearchSpace space = Space();
  auto a = Drain(*MakeStrategy("random", space, 11).value(), 5);
  auto b = Drain(*MakeStrategy("random", space, 11).value(), 5);
  auto c = Drain(*MakeStrategy("random", space, 12).value(), 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Strategies, SkipWhatIsAlreadyTaken) {
  SearchSpace space = Space();
  std::vector<ConfigIndex> valid = space.EnumerateValid();
  std::set<ConfigIndex> taken(valid.begin(), valid.begin() + 10);
  auto is_taken = [&](ConfigIndex i) { return taken.count(i) > 0; };
  for (const std::string& name : StrategyNames()) {
    auto got = Drain(*MakeStrategy(name, space, 1).value(), 4, is_taken);
    EXPECT_EQ(got.size(), valid.size() - taken.size()) << name;
    for (ConfigIndex i : got) EXPECT_FALSE(taken.count(i)) << name;
  }
}

TEST(Strategies, ExhaustiveSendsCompactRangesHoldingExactlyTheValidConfigs) {
  SearchSpace space = Space();
  auto s = MakeStrategy("exhaustive", space, 0).value();
  Batch b = s->Ask(20, {});
  ASSERT_TRUE(b.is_range);
  std::vector<ConfigIndex> in_range;
  for (ConfigIndex i = b.begin; i < b.end; ++i) {
    if (space.ValidateIndex(i).ok()) in_range.push_back(i);
  }
  EXPECT_EQ(in_range, b.configs);
}

TEST(Strategies, ExhaustiveScansABoundedStretchOfASparseSpacePerJobAndStillCoversIt) {
  // 100,000 configs, 1% valid: a job of 1,000 would scan the whole product.
  std::vector<int64_t> a(1000), b(100);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 0);
  SearchSpace space = SearchSpace::Create(
                          {{"a", a}, {"b", b}},
                          {{"b==0", [](const SearchSpace& s, const Config& c, std::string* why) -> bool {
                             return s.Get(c, "b") == 0 || Violated(why, [] { return std::string("b must be 0"); });
                           }}})
                          .value();
  auto s = MakeStrategy("exhaustive", space, 0).value();
  Batch first = s->Ask(1000, {});
  ASSERT_TRUE(first.is_range);
  EXPECT_LE(first.end - first.begin, kExhaustiveScanPerAsk + 100) << "scanned past the bound";
  EXPECT_GT(first.configs.size(), 0u);
  EXPECT_LT(first.configs.size(), 1000u);
  std::vector<ConfigIndex> got = first.configs;
  std::vector<ConfigIndex> rest = Drain(*s, 1000);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, space.EnumerateValid()) << "the bounded jobs together are the valid space, in order";
}

TEST(Strategies, UnknownNameListsTheKnownOnes) {
  SearchSpace space = Space();
  auto s = MakeStrategy("bayesian", space, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exhaustive"), std::string::npos);
}

TEST(Strategies, AutoSaysWhatItChoseForTheKnowledgeBase) {
  EXPECT_EQ(StrategyThatRan("auto", 1000, 50), "auto (model)");
  EXPECT_EQ(StrategyThatRan("auto", 1000, 1000), "auto (exhaustive)") << "a budget covering the space walks it";
  EXPECT_EQ(StrategyThatRan("auto", 1000, 0), "auto (exhaustive)") << "no budget: the whole space";
  EXPECT_EQ(StrategyThatRan("annealing", 1000, 50), "annealing");
  // Seconds or patience may cut a walk short: in index order it would see only the first configs.
  EXPECT_EQ(StrategyThatRan("auto", 1000, 0, /*ends_early=*/true), "auto (model)");
  EXPECT_EQ(StrategyThatRan("auto", 1000, 1000, /*ends_early=*/true), "auto (exhaustive)")
      << "a budget covering the space is walked in order whatever may end it";
}

// A smooth objective with one optimum at a=5, b=3, c=1, and a failing corner.
std::optional<double> Objective(const SearchSpace& space, ConfigIndex i) {
  Config c = space.Decode(i);
  int64_t a = space.Get(c, "a"), b = space.Get(c, "b"), cc = space.Get(c, "c");
  if (a == 1 && b == 1) return std::nullopt;  // "fails at run time"
  return 10.0 + (a - 5) * (a - 5) + 2.0 * (b - 3) * (b - 3) + (cc - 1) * (cc - 1);
}

// Asks in batches of `in_flight`, tells results back in a seeded shuffled order.
std::vector<ConfigIndex> RunWithResults(Strategy& s, const SearchSpace& space, size_t budget,
                                        size_t in_flight, uint64_t order_seed) {
  std::vector<ConfigIndex> proposed, pending;
  std::set<ConfigIndex> taken;
  std::mt19937_64 rng(order_seed);
  while (proposed.size() < budget) {
    Batch b = s.Ask(in_flight - pending.size(), [&](ConfigIndex i) { return taken.count(i) > 0; });
    for (ConfigIndex i : b.configs) {
      taken.insert(i);
      proposed.push_back(i);
      pending.push_back(i);
    }
    if (pending.empty()) break;
    std::shuffle(pending.begin(), pending.end(), rng);
    s.Tell(pending.back(), Objective(space, pending.back()));
    pending.pop_back();
  }
  return proposed;
}

TEST(Strategies, GuidedStrategiesNeverRepeatUnderOutOfOrderResultsAndAreDeterministic) {
  SearchSpace space = Space();
  for (const std::string name : {"annealing", "genetic", "ils", "model"}) {
    auto a = RunWithResults(*MakeStrategy(name, space, 5).value(), space, 150, 8, 99);
    auto b = RunWithResults(*MakeStrategy(name, space, 5).value(), space, 150, 8, 99);
    EXPECT_EQ(a, b) << name << " must be deterministic given seed and result order";
    std::set<ConfigIndex> unique(a.begin(), a.end());
    EXPECT_EQ(unique.size(), a.size()) << name;
    for (ConfigIndex i : a) EXPECT_TRUE(space.ValidateIndex(i).ok()) << name;
    auto c = RunWithResults(*MakeStrategy(name, space, 6).value(), space, 150, 8, 99);
    EXPECT_NE(a, c) << name << " seeds must matter";
  }
}

TEST(Strategies, GuidedStrategiesFindTheOptimumOfASmoothSpaceFasterThanRandom) {
  SearchSpace space = Space();
  const ConfigIndex optimum = space.Encode({5, 3, 1}).value();
  auto evaluations_to_optimum = [&](const std::string& name, uint64_t seed) {
    auto s = MakeStrategy(name, space, seed).value();
    auto proposed = RunWithResults(*s, space, space.size(), 1, seed);
    return static_cast<double>(std::find(proposed.begin(), proposed.end(), optimum) - proposed.begin());
  };
  double random = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) random += evaluations_to_optimum("random", seed);
  for (const std::string name : {"annealing", "genetic", "ils", "model"}) {
    double guided = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) guided += evaluations_to_optimum(name, seed);
    EXPECT_LT(guided, random) << name << " mean " << guided / 20 << " vs random " << random / 20;
  }
}

}  // namespace
}  // namespace tunefleet::coordinator

namespace tunefleet::coordinator {
namespace {

// Drives a strategy the way the coordinator does: up to `in_flight` configs outstanding,
// results told one at a time in a seeded shuffled order. Copyable, so two strategies
// can be driven through identical futures.
struct Driver {
  std::set<ConfigIndex> taken;
  std::vector<ConfigIndex> pending, proposed;
  std::mt19937_64 order{42};
  std::optional<double> best;

  bool Step(Strategy& s, const SearchSpace& space, size_t in_flight) {
    Batch b = s.Ask(in_flight - pending.size(), [&](ConfigIndex i) { return taken.count(i) > 0; });
    for (ConfigIndex i : b.configs) {
      taken.insert(i);
      proposed.push_back(i);
      pending.push_back(i);
    }
    if (pending.empty()) return false;
    std::shuffle(pending.begin(), pending.end(), order);
    std::optional<double> latency = Objective(space, pending.back());
    if (latency && (!best || *latency < *best)) best = latency;
    s.Tell(pending.back(), latency);
    pending.pop_back();
    return true;
  }
};

TEST(Strategies, ARestoredCheckpointContinuesExactlyAsTheUninterruptedRun) {
  SearchSpace space = Space();
  for (const std::string& name : StrategyNames()) {
    auto original = MakeStrategy(name, space, 17).value();
    Driver driver;
    for (int step = 0; step < 30; ++step) driver.Step(*original, space, 4);
    const std::string bytes = original->Checkpoint();

    auto restored = MakeStrategy(name, space, 17).value();
    ASSERT_TRUE(restored->Restore(bytes).ok()) << name;
    EXPECT_EQ(restored->Checkpoint(), bytes) << name << ": restore must reproduce the state";
    Driver twin = driver;
    // Past the model's 100th proposal, where its late phase (ModelOptions::local_from) begins.
    for (int step = 0; step < 100; ++step) {
      driver.Step(*original, space, 4);
      twin.Step(*restored, space, 4);
    }
    EXPECT_EQ(twin.proposed, driver.proposed) << name;
    EXPECT_EQ(twin.best, driver.best) << name;
    EXPECT_GT(driver.proposed.size(), 30u) << name;
    if (name == "model") {
      EXPECT_GT(driver.proposed.size(), 110u);
    }
  }
}

// What a restarted coordinator does: restore the last checkpoint, tell the results
// recorded after it, and ask again with every recorded config taken. The non-adaptive
// strategies must go on with exactly the configs the uninterrupted run proposed next,
// even when hundreds of results were recorded after the checkpoint.
TEST(Strategies, ARestartedNonAdaptiveTaskSkipsWhatWasRecordedSinceItsCheckpointAndContinuesUnchanged) {
  std::vector<int64_t> values(32);
  std::iota(values.begin(), values.end(), 1);
  SearchSpace space = SearchSpace::Create({{"a", values}, {"b", values}, {"c", {0, 1, 2, 3}}}, {}).value();
  for (const std::string name : {"random", "exhaustive"}) {
    auto original = MakeStrategy(name, space, 5).value();
    std::set<ConfigIndex> recorded;
    auto is_recorded = [&](ConfigIndex i) { return recorded.count(i) > 0; };
    auto run = [&](Strategy& s, size_t configs) {
      std::vector<ConfigIndex> got;
      while (got.size() < configs) {
        Batch b = s.Ask(8, is_recorded);
        if (b.configs.empty()) break;
        for (ConfigIndex i : b.configs) {
          recorded.insert(i);
          s.Tell(i, 1.0 + static_cast<double>(i % 97));
          got.push_back(i);
        }
      }
      return got;
    };
    run(*original, 40);
    const std::string bytes = original->Checkpoint();
    const std::vector<ConfigIndex> since = run(*original, 400);  // recorded after the checkpoint
    const std::set<ConfigIndex> at_crash = recorded;
    const std::vector<ConfigIndex> next = run(*original, 200);

    recorded = at_crash;
    auto restored = MakeStrategy(name, space, 5).value();
    ASSERT_TRUE(restored->Restore(bytes).ok()) << name;
    for (ConfigIndex i : since) restored->Tell(i, 1.0 + static_cast<double>(i % 97));
    EXPECT_EQ(run(*restored, 200), next) << name << " took another path after the restart";
  }
}

// Over 2^20 configs (the NPU's tiling spaces) auto walks: ils below 75 evaluations,
// annealing from there, as bench/npu_strategies measured; up to 2^20 the model.
TEST(Strategies, AutoWalksTheVeryLargeSpaces) {
  const ConfigIndex large = (ConfigIndex{1} << 20) + 1;
  EXPECT_EQ(AutoChoice(large, 25), "ils");
  EXPECT_EQ(AutoChoice(large, 74), "ils");
  EXPECT_EQ(AutoChoice(large, 75), "annealing");
  EXPECT_EQ(AutoChoice(large, 3000), "annealing");
  EXPECT_EQ(AutoChoice(large, 0), "exhaustive") << "no budget: the whole space, however large";
  EXPECT_EQ(AutoChoice(large, 0, /*ends_early=*/true), "annealing") << "seconds or patience only: open-ended";
  EXPECT_EQ(AutoChoice(large, 30, /*ends_early=*/true), "ils") << "an evaluation budget still picks";
  EXPECT_EQ(AutoChoice(ConfigIndex{1} << 20, 50), "model") << "2^20 itself is not very large";
  EXPECT_EQ(StrategyThatRan("auto", large, 30), "auto (ils)");
  // MakeStrategy builds what AutoChoice names: a checkpoint restores only into that strategy.
  std::vector<int64_t> values(1025);
  std::iota(values.begin(), values.end(), 0);
  auto space = SearchSpace::Create({{"a", values}, {"b", values}, {"c", {1}}}, {});  // Objective() reads a, b, c
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ASSERT_GT(space->size(), ConfigIndex{1} << 20);
  for (const auto& [budget, ran] : {std::pair<uint64_t, std::string>{30, "ils"}, {300, "annealing"}}) {
    auto picked = MakeStrategy("auto", *space, 1, budget).value();
    Driver driver;
    for (int step = 0; step < 5; ++step) driver.Step(*picked, *space, 2);
    const std::string bytes = picked->Checkpoint();
    EXPECT_TRUE(MakeStrategy(ran, *space, 1).value()->Restore(bytes).ok()) << "budget " << budget;
    EXPECT_FALSE(MakeStrategy("model", *space, 1).value()->Restore(bytes).ok()) << "budget " << budget;
  }
}

TEST(Strategies, RestoreRefusesAnotherStrategysOrACorruptCheckpoint) {
  SearchSpace space = Space();
  auto annealing = MakeStrategy("annealing", space, 1).value();
  Driver driver;
  for (int step = 0; step < 10; ++step) driver.Step(*annealing, space, 2);
  const std::string bytes = annealing->Checkpoint();

  Status foreign = MakeStrategy("genetic", space, 1).value()->Restore(bytes);
  EXPECT_EQ(foreign.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(foreign.message().find("genetic"), std::string::npos) << foreign.message();
  Status truncated = MakeStrategy("annealing", space, 1).value()->Restore(bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(truncated.code(), StatusCode::kInvalidArgument);
  Status padded = MakeStrategy("annealing", space, 1).value()->Restore(bytes + "x");
  EXPECT_EQ(padded.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(MakeStrategy("annealing", space, 1).value()->Restore(bytes).ok());
}

TEST(Strategies, ModelBasedLearnsWhichConfigsFailAndStopsSpendingOnThem) {
  // Half the product (a == 1 && b == 1 corner, plus every c == 2) fails at run time: a
  // space whose restrictions are not known in advance. Random keeps paying for them.
  SearchSpace space = Space();
  auto failures_in_first = [&](const std::string& name, uint64_t seed, size_t n) {
    auto s = MakeStrategy(name, space, seed).value();
    std::set<ConfigIndex> taken;
    size_t failed = 0;
    for (size_t k = 0; k < n; ++k) {
      Batch b = s->Ask(1, [&](ConfigIndex i) { return taken.count(i) > 0; });
      if (b.configs.empty()) break;
      ConfigIndex i = b.configs[0];
      taken.insert(i);
      std::optional<double> latency = Objective(space, i);
      if (space.Get(space.Decode(i), "c") == 2) latency.reset();
      failed += !latency;
      s->Tell(i, latency);
    }
    return failed;
  };
  size_t model = 0, random = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    model += failures_in_first("model", seed, 60);
    random += failures_in_first("random", seed, 60);
  }
  EXPECT_LT(model * 2, random) << "model " << model << " vs random " << random << " failures";
}

}  // namespace
}  // namespace tunefleet::coordinator

namespace tunefleet::coordinator {
namespace {

TEST(Strategies, ModelBasedLearnsWhatDependsOnAProductOfTwoParameters) {
  // What GPU kernels' speed and restrictions often depend on (conv A100: block_size_x *
  // block_size_y threads, at most 1024): here a*b > 48 fails and the fastest configs
  // have a*b == 36 (5 of 256). Trees over the positions alone draw the hyperbola as a
  // staircase; with the product as a feature, one split finds it.
  std::vector<int64_t> values;
  for (int64_t v = 1; v <= 16; ++v) values.push_back(v);
  SearchSpace space = SearchSpace::Create({{"a", values}, {"b", values}}, {}).value();
  auto evaluations_to_optimum = [&](bool products, uint64_t seed) {
    ModelOptions options;
    options.pair_products = products;
    auto s = MakeModelBased(space, seed, options);
    std::set<ConfigIndex> taken;
    for (size_t k = 1; k <= space.size(); ++k) {
      Batch b = s->Ask(1, [&](ConfigIndex i) { return taken.count(i) > 0; });
      if (b.configs.empty()) break;
      const ConfigIndex i = b.configs[0];
      taken.insert(i);
      const Config c = space.Decode(i);
      const int64_t threads = space.Get(c, "a") * space.Get(c, "b");
      if (threads == 36) return k;
      s->Tell(i, threads <= 48 ? std::optional<double>(1.0 + static_cast<double>(std::abs(threads - 36)))
                               : std::nullopt);
    }
    return space.size();
  };
  size_t with = 0, without = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    with += evaluations_to_optimum(true, seed);
    without += evaluations_to_optimum(false, seed);
  }
  EXPECT_LT(with * 5, without * 4) << "evaluations to a*b == 36 over 20 seeds: with products " << with
                                   << ", positions only " << without;
}

// a and b in 1..32; latency 1 + (a - 23)^2 + 2 (b - 9)^2, one optimum of 1024 configs.
SearchSpace Grid32() {
  std::vector<int64_t> values;
  for (int64_t v = 1; v <= 32; ++v) values.push_back(v);
  return SearchSpace::Create({{"a", values}, {"b", values}}, {}).value();
}
double Bowl(const SearchSpace& space, ConfigIndex i) {
  const Config c = space.Decode(i);
  const double a = static_cast<double>(space.Get(c, "a")), b = static_cast<double>(space.Get(c, "b"));
  return 1.0 + (a - 23) * (a - 23) + 2 * (b - 9) * (b - 9);
}

TEST(Strategies, ModelBasedWithABoundedTrainingSetStillSteersToTheFastest) {
  // Past max_train results the forests see the fastest half and a spread of the rest,
  // so planning stays bounded in a task of thousands of results (1.3 s per Ask at 8000
  // unbounded). Here 16 rows: the search must still home in on the basin, far faster
  // than random draws, and never repeat a config. Over these 10 seeds: random 5007
  // evaluations, unbounded 315, bounded 395; keeping the slowest half instead 778.
  SearchSpace space = Grid32();
  auto latency = [&](ConfigIndex i) { return Bowl(space, i); };
  auto evaluations_to_optimum = [&](const std::string& name, uint64_t seed) {
    ModelOptions options;
    options.max_train = 16;
    auto s = name == "model" ? MakeModelBased(space, seed, options) : MakeStrategy(name, space, seed).value();
    std::set<ConfigIndex> taken;
    for (size_t k = 1; k <= space.size(); ++k) {
      Batch b = s->Ask(1, [&](ConfigIndex i) { return taken.count(i) > 0; });
      EXPECT_EQ(b.configs.size(), 1u) << name << " ran dry after " << k - 1;
      if (b.configs.empty()) break;
      EXPECT_TRUE(taken.insert(b.configs[0]).second) << name << " repeated " << b.configs[0];
      if (latency(b.configs[0]) == 1.0) return k;
      s->Tell(b.configs[0], latency(b.configs[0]));
    }
    return space.size();
  };
  size_t model = 0, random = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    model += evaluations_to_optimum("model", seed);
    random += evaluations_to_optimum("random", seed);
  }
  EXPECT_LT(model * 8, random) << "evaluations to the optimum over 10 seeds: model " << model << ", random " << random;
}

TEST(Strategies, ModelBasedRefinesAroundTheFastestConfigsLateInTheTask) {
  // From local_from proposals on, late_pattern "L" proposes only configs one parameter
  // one position away from the local_elites fastest measured so far. Refit at every
  // result, one config at a time, so each proposal comes from a fresh ranking. Before
  // local_from (and with local_from 0, never) the search ranges over the whole space.
  SearchSpace space = Grid32();
  auto latency = [&](ConfigIndex i) { return Bowl(space, i) + static_cast<double>(i % 7); };
  // The unmeasured configs one step from the 8 fastest told so far.
  auto frontier = [&](std::vector<std::pair<double, ConfigIndex>> told, const std::set<ConfigIndex>& taken) {
    std::sort(told.begin(), told.end());
    std::set<ConfigIndex> out;
    for (size_t f = 0; f < std::min<size_t>(8, told.size()); ++f) {
      const Config c = space.Decode(told[f].second);
      for (size_t d = 0; d < c.size(); ++d) {
        for (const int64_t step : {-1, 1}) {
          Config n = c;
          n[d] += step;
          const Result<ConfigIndex> j = space.Encode(n);  // fails past the grid's edge
          if (j.ok() && !taken.count(j.value())) out.insert(j.value());
        }
      }
    }
    return out;
  };
  // Late proposals outside that frontier while it is not empty.
  auto far_late_proposals = [&](size_t local_from, uint64_t seed) {
    ModelOptions options;
    options.local_from = local_from;
    options.late_pattern = "L";
    options.refit_divisor = 1 << 20;
    auto s = MakeModelBased(space, seed, options);
    std::set<ConfigIndex> taken;
    std::vector<std::pair<double, ConfigIndex>> told;
    size_t far = 0;
    for (size_t k = 0; k < 60; ++k) {
      Batch b = s->Ask(1, [&](ConfigIndex i) { return taken.count(i) > 0; });
      EXPECT_EQ(b.configs.size(), 1u);
      if (b.configs.empty()) break;
      const ConfigIndex i = b.configs[0];
      const std::set<ConfigIndex> near = frontier(told, taken);
      if (k >= 30 && !near.empty() && !near.count(i)) ++far;
      EXPECT_TRUE(taken.insert(i).second) << "repeated " << i;
      s->Tell(i, latency(i));
      told.emplace_back(latency(i), i);
    }
    return far;
  };
  for (uint64_t seed = 0; seed < 5; ++seed) {
    EXPECT_EQ(far_late_proposals(30, seed), 0u) << "seed " << seed;
    EXPECT_GT(far_late_proposals(0, seed), 0u) << "seed " << seed << ": without the late phase too";
  }
}

TEST(Strategies, ForestTreesAreDrawsWhoseMeanIsThePrediction) {
  std::mt19937_64 rng(3);
  std::vector<std::vector<float>> rows;
  std::vector<double> y;
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      rows.push_back({static_cast<float>(a), static_cast<float>(b)});
      y.push_back(a * b + (a == 3 ? 5.0 : 0.0));
    }
  }
  RegressionForest forest({.trees = 16, .max_depth = 6, .min_leaf = 2, .feature_fraction = 1.0});
  forest.Fit(rows, y, rng);
  size_t spread = 0;
  for (const auto& row : rows) {
    std::vector<double> draws = forest.PerTree(row);
    ASSERT_EQ(draws.size(), 16u);
    double sum = 0;
    for (double d : draws) sum += d;
    RegressionForest::Prediction p = forest.Predict(row);
    EXPECT_NEAR(sum / 16, p.mean, 1e-9);
    spread += *std::max_element(draws.begin(), draws.end()) > *std::min_element(draws.begin(), draws.end());
  }
  EXPECT_GT(spread, rows.size() / 2) << "bootstrapped trees must disagree somewhere: they are the posterior's draws";
}

}  // namespace
}  // namespace tunefleet::coordinator
