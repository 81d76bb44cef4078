// Instructions per fast-path MatMul evaluation, for valgrind --tool=callgrind (which
// counts instructions, not seconds: repeatable on a noisy machine). Evaluates the same
// 1000 valid configs of the BERT-base FFN MatMul REPS times; bench/sim_instructions.sh
// runs it with two REPS values and divides the difference, cancelling the set-up.
//   sim_instructions REPS
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/matmul_model.h"

int main(int argc, char** argv) {
  using namespace tunefleet;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 1;
  SocCatalog catalog = SocCatalog::Builtin();
  const SocSpec& soc = *catalog.Find("Ascend910B2").value();
  OpKey key;
  key.soc = soc.name;
  key.op_type = "MatMul";
  key.inputs = {{{4096, 768}, "float16", "ND"}, {{768, 3072}, "float16", "ND"}};
  TuningProblem p = MakeTuningProblem(key, soc).value();
  MatmulShape shape = MatmulShapeFromOpKey(key).value();
  std::vector<MatmulTiling> tilings;
  std::mt19937_64 rng(1);
  while (tilings.size() < 1000) {
    ConfigIndex i = rng() % p.space.size();
    if (p.space.IsValidIndex(i)) tilings.push_back(MatmulTilingFromConfig(p.space.Decode(i)));
  }
  double sink = 0;
  for (int r = 0; r < reps; ++r) {
    for (const MatmulTiling& t : tilings) sink += sim::EstimateMatmul(shape, t, soc)->latency_us;
  }
  std::printf("evaluations=%zu checksum=%.3f\n", tilings.size() * static_cast<size_t>(reps), sink);
  return 0;
}
