// What a strategy pays to skip invalid configs: a full scan of sparse tiling spaces
// asking each config's validity the way strategies ask now (SearchSpace::IsValid, no
// reason built) and the way they asked before (Validate(config).ok(), which formats a
// reason for every config it rejects), side by side in one run. Prints the median of
// several runs per space and the ratio. Then what the coordinator's loop waits on when
// it plans an exhaustive job of 512 configs: the longest Ask of a whole walk of the
// space, with kExhaustiveScanPerAsk (strategy.h) against scanning until the job is full
// as Ask did before. Usage: space_scan [runs] (default 5).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_keys.h"
#include "coordinator/strategy.h"
#include "tunefleet/common/tuning_problem.h"

namespace {

using namespace tunefleet;
using bench::Key;

template <typename IsValid>
double ScanNsPerConfig(const SearchSpace& space, IsValid&& is_valid, size_t& valid) {
  Config config;
  valid = 0;
  const auto start = std::chrono::steady_clock::now();
  for (ConfigIndex i = 0; i < space.size(); ++i) {
    space.DecodeInto(i, config);
    valid += is_valid(config);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return ns / static_cast<double>(space.size());
}

struct Walk {
  double longest_ms = 0;
  size_t jobs = 0;
};

Walk TimeWalk(const std::function<size_t()>& ask) {
  Walk w;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    const size_t got = ask();
    w.longest_ms = std::max(
        w.longest_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (got == 0) return w;
    ++w.jobs;
  }
}

// The exhaustive strategy's walk in jobs of `job` configs, and the same walk scanning
// until each job is full (the Ask before kExhaustiveScanPerAsk).
std::pair<Walk, Walk> ExhaustiveWalks(const SearchSpace& space, size_t job) {
  auto strategy = coordinator::MakeStrategy("exhaustive", space, 0).value();
  Walk bounded = TimeWalk([&] { return strategy->Ask(job, {}).configs.size(); });
  ConfigIndex cursor = 0;
  Config config;
  Walk unbounded = TimeWalk([&] {
    size_t got = 0;
    while (cursor < space.size() && got < job) {
      space.DecodeInto(cursor++, config);
      got += space.IsValid(config);
    }
    return got;
  });
  return {bounded, unbounded};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  const std::vector<OpKey> keys = {Key("MatMul", {{32, 32}, {32, 64}}),
                                   Key("MatMul", {{4096, 768}, {768, 3072}}),
                                   Key("Conv2D", {{32, 64, 56, 56}, {64, 64, 1, 1}})};
  std::printf("%-44s %10s %8s %14s %14s %6s\n", "space", "configs", "valid", "IsValid ns", "Validate ns", "ratio");
  for (const OpKey& key : keys) {
    auto problem = MakeTuningProblem(key, soc);
    if (!problem.ok()) {
      std::fprintf(stderr, "%s: %s\n", key.Display().c_str(), problem.status().ToString().c_str());
      return 1;
    }
    const SearchSpace& space = problem->space;
    std::vector<double> quick, reasoned;
    size_t valid_quick = 0, valid_reasoned = 0;
    for (int r = 0; r < runs; ++r) {  // alternating, so load drifts hit both alike
      quick.push_back(ScanNsPerConfig(space, [&](const Config& c) { return space.IsValid(c); }, valid_quick));
      reasoned.push_back(ScanNsPerConfig(space, [&](const Config& c) { return space.Validate(c).ok(); }, valid_reasoned));
    }
    if (valid_quick != valid_reasoned) {
      std::fprintf(stderr, "%s: IsValid found %zu valid configs, Validate %zu\n", key.Display().c_str(), valid_quick,
                   valid_reasoned);
      return 1;
    }
    std::printf("%-44s %10llu %8zu %14.1f %14.1f %6.2f\n", key.Display().substr(0, 44).c_str(),
                static_cast<unsigned long long>(space.size()), valid_quick, Median(quick), Median(reasoned),
                Median(reasoned) / Median(quick));
  }
  std::printf("\nexhaustive jobs of 512, longest Ask (the coordinator's loop waits on it), median of %d walks\n",
              runs);
  std::printf("%-44s %12s %12s %12s %12s %6s\n", "space", "jobs", "longest ms", "unbounded", "longest ms", "ratio");
  for (const OpKey& key : keys) {
    auto problem = MakeTuningProblem(key, soc).value();
    std::vector<double> bounded_ms, unbounded_ms;
    size_t bounded_jobs = 0, unbounded_jobs = 0;
    for (int r = 0; r < runs; ++r) {
      auto [bounded, unbounded] = ExhaustiveWalks(problem.space, 512);
      bounded_ms.push_back(bounded.longest_ms);
      unbounded_ms.push_back(unbounded.longest_ms);
      bounded_jobs = bounded.jobs;
      unbounded_jobs = unbounded.jobs;
    }
    std::printf("%-44s %12zu %12.2f %12zu %12.2f %6.2f\n", key.Display().substr(0, 44).c_str(), bounded_jobs,
                Median(bounded_ms), unbounded_jobs, Median(unbounded_ms), Median(unbounded_ms) / Median(bounded_ms));
  }
  return 0;
}
