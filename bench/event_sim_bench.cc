// Event simulation with the full per-core per-pipe timeline of one BERT-base encoder
// layer (batch 32, seq 128) at the default tilings (issue 3: under 1 s). Prints the
// median wall time of several runs, the intervals recorded and the ratio to the 1 s
// anchor. Usage: event_sim_bench [runs] (default 7).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_keys.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/event_sim.h"
#include "worker/sim/simulator.h"

namespace {

using tunefleet::OpKey;
using tunefleet::bench::Key;

// The layer's op launches (Q/K/V fused into one [768 x 2304] projection).
std::vector<OpKey> BertLayer() {
  return {
      Key("MatMul", {{4096, 768}, {768, 2304}}),
      Key("BatchMatMul", {{384, 128, 64}, {384, 64, 128}}),
      Key("Softmax", {{32, 12, 128, 128}}),
      Key("BatchMatMul", {{384, 128, 128}, {384, 128, 64}}),
      Key("MatMul", {{4096, 768}, {768, 768}}),
      Key("Add", {{4096, 768}, {4096, 768}}),
      Key("LayerNorm", {{4096, 768}, {768}, {768}}),
      Key("MatMul", {{4096, 768}, {768, 3072}}),
      Key("Gelu", {{4096, 3072}}),
      Key("MatMul", {{4096, 3072}, {3072, 768}}),
      Key("Add", {{4096, 768}, {4096, 768}}),
      Key("LayerNorm", {{4096, 768}, {768}, {768}}),
  };
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  tunefleet::SocCatalog catalog = tunefleet::SocCatalog::Builtin();
  const tunefleet::SocSpec& soc = *catalog.Find("Ascend910B2").value();
  std::vector<tunefleet::TuningProblem> problems;
  for (const OpKey& key : BertLayer()) {
    auto p = tunefleet::MakeTuningProblem(key, soc);
    if (!p.ok()) {
      std::fprintf(stderr, "%s: %s\n", key.Display().c_str(), p.status().ToString().c_str());
      return 1;
    }
    problems.push_back(std::move(p).value());
  }
  std::vector<double> seconds;
  size_t intervals = 0;
  double layer_us = 0;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    intervals = 0;
    layer_us = 0;
    for (const tunefleet::TuningProblem& p : problems) {
      auto prepared = tunefleet::sim::Prepare(p, soc);
      auto result = prepared.ok() ? tunefleet::sim::SimulateEvents(*prepared, p.default_config, soc)
                                  : tunefleet::Result<tunefleet::sim::EventSimResult>(prepared.status());
      if (!result.ok()) {
        std::fprintf(stderr, "%s: %s\n", p.key.Display().c_str(), result.status().ToString().c_str());
        return 1;
      }
      layer_us += result->estimate.latency_us;
      for (const auto& core : result->timeline.cores) {
        for (const auto& pipe : core.pipes) intervals += pipe.size();
      }
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf("BERT-base encoder layer (batch 32, seq 128), %zu op launches, event simulation with timeline\n",
              problems.size());
  std::printf("simulated layer latency %.1f us, %zu timeline intervals (one per distinct core group)\n",
              layer_us, intervals);
  std::printf("wall time: median %.4f s of %d runs (min %.4f, max %.4f); ratio to the 1 s anchor: %.4f\n",
              median, runs, seconds.front(), seconds.back(), median / 1.0);
  return 0;
}
