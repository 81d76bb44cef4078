// Every built-in SoC: MatMul's default tiling is valid, no valid config beats the
// roofline, and the best config is at least as fast as the default.
#include <gtest/gtest.h>

#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

TEST(EverySoc, MatmulNeverBeatsItsRooflineAndTuningNeverLosesToTheDefault) {
  SocCatalog catalog = SocCatalog::Builtin();
  for (const std::string& name : catalog.Names()) {
    const SocSpec& soc = *catalog.Find(name).value();
    OpKey key;
    key.soc = name;
    key.op_type = "MatMul";
    key.inputs = {{{512, 256}, "float16", "ND"}, {{256, 384}, "float16", "ND"}};
    auto p = MakeTuningProblem(key, soc);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    auto prepared = Prepare(*p, soc).value();
    double def = Simulate(prepared, p->default_config, soc)->latency_us;
    double best = def;
    size_t checked = 0;
    p->space.ForEachValid([&](ConfigIndex i) {
      if (i % 7) return true;  // a deterministic seventh of the space keeps this fast
      auto est = Simulate(prepared, p->space.Decode(i), soc);
      EXPECT_TRUE(est.ok()) << name;
      if (!est.ok()) return false;
      EXPECT_GE(est->latency_us, RooflineUs(*est, soc) * (1 - 1e-9)) << name << " config " << i;
      best = std::min(best, est->latency_us);
      ++checked;
      return true;
    });
    EXPECT_GT(checked, 1000u) << name;
    EXPECT_LE(best, def) << name;
  }
}

}  // namespace
}  // namespace tunefleet::sim
