// Evaluations per second of the simulated NPU on a BERT-base-like MatMul
// (M = 32 x 128 tokens, K = 768, N = 3072: the FFN up-projection), over a fixed list of
// ~1000 valid configs spread across its tiling space. Anchor (DESIGN.md "bench/"):
// 1,000,000 evaluations/s on one core; `vs_anchor` = evaluations/s / 1e6. The Conv2D
// rows do the same on ResNet-50's layer1 3x3 convolution (batch 32, 64 -> 64 channels
// on 56x56), whose model adds the input-window A side to the MatMul core.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"
#include "tunefleet/common/conv2d_space.h"
#include "worker/sim/conv2d_model.h"
#include "worker/sim/matmul_model.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

constexpr double kAnchorEvalsPerS = 1e6;
constexpr size_t kConfigs = 1000;

TuningProblem BertFfnProblem(const SocSpec& soc) {
  OpKey key;
  key.soc = soc.name;
  key.op_type = "MatMul";
  key.inputs = {{{4096, 768}, "float16", "ND"}, {{768, 3072}, "float16", "ND"}};
  auto p = MakeTuningProblem(key, soc);
  if (!p.ok()) {
    std::fprintf(stderr, "sim_bench: %s\n", p.status().ToString().c_str());
    std::abort();
  }
  return std::move(p).value();
}

struct Fixture {
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec* soc = catalog.Find("Ascend910B2").value();
  TuningProblem problem = BertFfnProblem(*soc);
  MatmulShape shape = MatmulShapeFromOpKey(problem.key).value();
  std::vector<Config> configs;        // valid, spread evenly over the space
  std::vector<MatmulTiling> tilings;  // the same configs, decoded

  Fixture() {
    std::vector<ConfigIndex> valid = problem.space.EnumerateValid();
    const size_t stride = valid.size() > kConfigs ? valid.size() / kConfigs : 1;
    for (size_t i = 0; i < valid.size() && configs.size() < kConfigs; i += stride) {
      configs.push_back(problem.space.Decode(valid[i]));
      tilings.push_back(MatmulTilingFromConfig(configs.back()));
    }
    std::printf("sim_bench: %zu of %zu valid configs of MatMul 4096x768 x 768x3072\n",
                configs.size(), valid.size());
  }
};

const Fixture& TheFixture() {
  static const Fixture kFixture;  // built once, outside the timed loops
  return kFixture;
}

void Report(benchmark::State& state, size_t per_iteration) {
  const auto evals = static_cast<double>(state.iterations() * per_iteration);
  state.SetItemsProcessed(static_cast<int64_t>(evals));
  state.counters["vs_anchor"] =
      benchmark::Counter(evals / kAnchorEvalsPerS, benchmark::Counter::kIsRate);
}

// The closed-form model alone, on configs already known to be valid.
void BM_EstimateMatmul(benchmark::State& state) {
  const Fixture& f = TheFixture();
  for (auto _ : state) {
    for (const MatmulTiling& t : f.tilings) {
      Result<KernelEstimate> e = EstimateMatmul(f.shape, t, *f.soc);
      benchmark::DoNotOptimize(e);
    }
  }
  Report(state, f.tilings.size());
}
BENCHMARK(BM_EstimateMatmul);

// What a worker slot pays per config: validation against the space, then the model.
void BM_SimulatePrepared(benchmark::State& state) {
  const Fixture& f = TheFixture();
  PreparedProblem prepared = Prepare(f.problem, *f.soc).value();
  for (auto _ : state) {
    for (const Config& c : f.configs) {
      Result<KernelEstimate> e = Simulate(prepared, c, *f.soc);
      benchmark::DoNotOptimize(e);
    }
  }
  Report(state, f.configs.size());
}
BENCHMARK(BM_SimulatePrepared);

// The one-call form, which also re-reads the shape from the op key each time.
void BM_Simulate(benchmark::State& state) {
  const Fixture& f = TheFixture();
  for (auto _ : state) {
    for (const Config& c : f.configs) {
      Result<KernelEstimate> e = Simulate(f.problem, c, *f.soc);
      benchmark::DoNotOptimize(e);
    }
  }
  Report(state, f.configs.size());
}
BENCHMARK(BM_Simulate);

TuningProblem ResNetConvProblem(const SocSpec& soc) {
  OpKey key;
  key.soc = soc.name;
  key.op_type = "Conv2D";
  key.inputs = {{{32, 64, 56, 56}, "float16", "ND"}, {{64, 64, 3, 3}, "float16", "ND"}};
  key.attrs = {{"pads", "1,1,1,1"}};
  auto p = MakeTuningProblem(key, soc);
  if (!p.ok()) {
    std::fprintf(stderr, "sim_bench: %s\n", p.status().ToString().c_str());
    std::abort();
  }
  return std::move(p).value();
}

struct ConvFixture {
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec* soc = catalog.Find("Ascend910B2").value();
  TuningProblem problem = ResNetConvProblem(*soc);
  Conv2dShape shape = Conv2dShapeFromOpKey(problem.key).value();
  std::vector<Config> configs;
  std::vector<MatmulTiling> tilings;

  ConvFixture() {
    std::vector<ConfigIndex> valid = problem.space.EnumerateValid();
    const size_t stride = valid.size() > kConfigs ? valid.size() / kConfigs : 1;
    for (size_t i = 0; i < valid.size() && configs.size() < kConfigs; i += stride) {
      configs.push_back(problem.space.Decode(valid[i]));
      tilings.push_back(MatmulTilingFromConfig(configs.back()));
    }
    std::printf("sim_bench: %zu of %zu valid configs of Conv2D 32x64x56x56 * 64x64x3x3\n",
                configs.size(), valid.size());
  }
};

const ConvFixture& TheConvFixture() {
  static const ConvFixture kFixture;
  return kFixture;
}

void BM_EstimateConv2d(benchmark::State& state) {
  const ConvFixture& f = TheConvFixture();
  for (auto _ : state) {
    for (const MatmulTiling& t : f.tilings) {
      Result<KernelEstimate> e = EstimateConv2d(f.shape, t, *f.soc);
      benchmark::DoNotOptimize(e);
    }
  }
  Report(state, f.tilings.size());
}
BENCHMARK(BM_EstimateConv2d);

void BM_SimulateConv2dPrepared(benchmark::State& state) {
  const ConvFixture& f = TheConvFixture();
  PreparedProblem prepared = Prepare(f.problem, *f.soc).value();
  for (auto _ : state) {
    for (const Config& c : f.configs) {
      Result<KernelEstimate> e = Simulate(prepared, c, *f.soc);
      benchmark::DoNotOptimize(e);
    }
  }
  Report(state, f.configs.size());
}
BENCHMARK(BM_SimulateConv2dPrepared);

}  // namespace
}  // namespace tunefleet::sim

BENCHMARK_MAIN();
