// What a strategy pays to skip invalid configs: a full scan of sparse tiling spaces
// asking each config's validity the way strategies ask now (SearchSpace::IsValid, no
// reason built) and the way they asked before (Validate(config).ok(), which formats a
// reason for every config it rejects), side by side in one run. Prints the median of
// several runs per space and the ratio. Usage: space_scan [runs] (default 5).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_keys.h"
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
  return 0;
}
