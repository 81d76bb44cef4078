// The event simulation (worker/sim/event_sim.h) against NPU_MODEL.md "Pipes and timing"
// and against the closed-form fast path: its timeline keeps every pipe serial and every
// tile's stages in order, double buffering overlaps stages and single buffering does
// not, its busy times are its timeline's, and over a sweep of valid configs of every op
// family and BERT-base / ResNet-50 / small / odd shapes it agrees with the fast path
// within 2% on each config.
#include "worker/sim/event_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/support/op_test_util.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::sim {
namespace {

OpKey Key(const std::string& op, std::vector<std::vector<int64_t>> shapes,
          std::map<std::string, std::string> attrs = {}, const std::string& dtype = "float16") {
  return test_support::TestKey(op, test_support::Inputs(std::move(shapes), dtype), std::move(attrs));
}

OpKey ConvKey(int64_t n, int64_t cin, int64_t hw, int64_t cout, int64_t k, int64_t stride,
              int64_t pad, int64_t groups = 1) {
  OpKey key = Key("Conv2D", {{n, cin, hw, hw}, {cout, cin / groups, k, k}});
  if (stride != 1) key.attrs["strides"] = std::to_string(stride) + "," + std::to_string(stride);
  if (pad != 0) key.attrs["pads"] = std::to_string(pad);
  if (groups != 1) key.attrs["groups"] = std::to_string(groups);
  return key;
}

class EventSimTest : public ::testing::Test {
 protected:
  SocCatalog catalog_ = SocCatalog::Builtin();
  const SocSpec& soc() { return *catalog_.Find("Ascend910B2").value(); }

  TuningProblem Problem(const OpKey& key) { return test_support::ProblemOrFail(key, soc()); }
  EventSimResult Events(const TuningProblem& p, const Config& c, bool timeline = true) {
    auto prepared = Prepare(p, soc());
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    auto r = SimulateEvents(*prepared, c, soc(), {timeline});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : EventSimResult{};
  }
  Config WithParam(const TuningProblem& p, Config c, const char* name, int64_t value) {
    c[static_cast<size_t>(p.space.IndexOf(name))] = value;
    return c;
  }
};

using EventSim = EventSimTest;

// Every interval of one pipe on one core, in order, never overlapping the next.
void ExpectPipesSerial(const Timeline& t) {
  for (const CoreTimeline& core : t.cores) {
    for (const auto& pipe : core.pipes) {
      for (size_t i = 0; i < pipe.size(); ++i) {
        EXPECT_LE(pipe[i].start_us, pipe[i].end_us);
        if (i > 0) {
          EXPECT_LE(pipe[i - 1].end_us, pipe[i].start_us + 1e-9) << pipe[i].label;
        }
      }
    }
  }
}

// Total time during which both pipes of one core are busy at once.
double OverlapUs(const std::vector<TimelineInterval>& a, const std::vector<TimelineInterval>& b) {
  double overlap = 0;
  size_t j = 0;
  for (const TimelineInterval& x : a) {
    while (j < b.size() && b[j].end_us <= x.start_us) ++j;
    for (size_t k = j; k < b.size() && b[k].start_us < x.end_us; ++k) {
      overlap += std::max(0.0, std::min(x.end_us, b[k].end_us) - std::max(x.start_us, b[k].start_us));
    }
  }
  return overlap;
}

TEST_F(EventSim, PipeIntervalsOnOneCoreNeverOverlap) {
  for (const OpKey& key : {Key("MatMul", {{1000, 300}, {300, 770}}), ConvKey(2, 64, 28, 64, 3, 1, 1),
                           Key("Softmax", {{64, 1000}}), Key("Gelu", {{4096, 300}})}) {
    TuningProblem p = Problem(key);
    EventSimResult r = Events(p, p.default_config);
    ASSERT_FALSE(r.timeline.cores.empty()) << key.Display();
    ExpectPipesSerial(r.timeline);
  }
}

TEST_F(EventSim, EachTileRunsItsStagesInPipelineOrder) {
  // Vector: a tile's MTE2 ends before its VECTOR starts, which ends before its MTE3.
  TuningProblem vec = Problem(Key("Add", {{4096, 768}, {4096, 768}}));
  EventSimResult v = Events(vec, vec.default_config);
  const CoreTimeline& vc = v.timeline.cores.at(0);
  std::map<int64_t, double> mte2_end, vec_end;
  for (const auto& i : vc.Of(Pipe::kMte2)) mte2_end[i.tile] = i.end_us;
  for (const auto& i : vc.Of(Pipe::kVector)) {
    ASSERT_TRUE(mte2_end.count(i.tile));
    EXPECT_GE(i.start_us + 1e-9, mte2_end[i.tile]);
    vec_end[i.tile] = i.end_us;
  }
  for (const auto& i : vc.Of(Pipe::kMte3)) EXPECT_GE(i.start_us + 1e-9, vec_end.at(i.tile));
  ASSERT_FALSE(vc.Of(Pipe::kMte3).empty());

  // Cube: a tile's MMADs start after its first L1->L0 move, and FIXPIPE drains it only
  // after its last MMAD.
  TuningProblem mm = Problem(Key("MatMul", {{1024, 768}, {768, 768}}));
  EventSimResult m = Events(mm, mm.default_config);
  const CoreTimeline& mc = m.timeline.cores.at(0);
  std::map<int64_t, double> first_mte1, last_cube;
  for (const auto& i : mc.Of(Pipe::kMte1)) first_mte1.emplace(i.tile, i.end_us);
  for (const auto& i : mc.Of(Pipe::kCube)) {
    EXPECT_GE(i.start_us + 1e-9, first_mte1.at(i.tile));
    last_cube[i.tile] = i.end_us;
  }
  ASSERT_FALSE(mc.Of(Pipe::kFixpipe).empty());
  for (const auto& i : mc.Of(Pipe::kFixpipe)) EXPECT_GE(i.start_us + 1e-9, last_cube.at(i.tile));
}

TEST_F(EventSim, DoubleBufferingOverlapsStagesAndSingleBufferingDoesNot) {
  TuningProblem p = Problem(Key("Gelu", {{4096, 768}}));
  const Config two = WithParam(p, p.default_config, "bufferNum", 2);
  Config one = WithParam(p, two, "bufferNum", 1);
  ASSERT_TRUE(p.space.Validate(one).ok()) << p.space.Validate(one).ToString();
  const CoreTimeline db = Events(p, two).timeline.cores.at(0);
  const CoreTimeline sb = Events(p, one).timeline.cores.at(0);
  EXPECT_GT(OverlapUs(db.Of(Pipe::kMte2), db.Of(Pipe::kVector)), 0.0);
  EXPECT_GT(OverlapUs(db.Of(Pipe::kVector), db.Of(Pipe::kMte3)), 0.0);
  EXPECT_EQ(OverlapUs(sb.Of(Pipe::kMte2), sb.Of(Pipe::kVector)), 0.0);
  EXPECT_EQ(OverlapUs(sb.Of(Pipe::kVector), sb.Of(Pipe::kMte3)), 0.0);
  EXPECT_EQ(OverlapUs(sb.Of(Pipe::kMte2), sb.Of(Pipe::kMte3)), 0.0);

  // The cube: ping-ponged L0A/L0B let MTE1 run under the MMADs; single ones do not.
  TuningProblem mm = Problem(Key("MatMul", {{512, 512}, {512, 512}}));
  Config c = mm.default_config;
  c = WithParam(mm, c, "dbL0A", 1);
  c = WithParam(mm, c, "dbL0B", 1);
  Config s = WithParam(mm, WithParam(mm, c, "dbL0A", 0), "dbL0B", 0);
  ASSERT_TRUE(mm.space.Validate(c).ok());
  ASSERT_TRUE(mm.space.Validate(s).ok());
  const CoreTimeline mdb = Events(mm, c).timeline.cores.at(0);
  const CoreTimeline msb = Events(mm, s).timeline.cores.at(0);
  EXPECT_GT(OverlapUs(mdb.Of(Pipe::kMte1), mdb.Of(Pipe::kCube)), 0.0);
  EXPECT_EQ(OverlapUs(msb.Of(Pipe::kMte1), msb.Of(Pipe::kCube)), 0.0);
}

TEST_F(EventSim, BusyTimePerPipeIsTheCriticalCoresTimelineBusyTime) {
  for (const OpKey& key : {Key("MatMul", {{1000, 300}, {300, 770}}), Key("LayerNorm", {{4096, 768}, {768}, {768}}),
                           ConvKey(4, 64, 56, 64, 3, 1, 1)}) {
    TuningProblem p = Problem(key);
    EventSimResult r = Events(p, p.default_config);
    const CoreTimeline& crit = r.timeline.cores.at(static_cast<size_t>(r.timeline.critical));
    for (int pipe = 0; pipe < kPipeCount; ++pipe) {
      EXPECT_NEAR(r.estimate.BusyUs(static_cast<Pipe>(pipe)), crit.BusyUs(static_cast<Pipe>(pipe)),
                  1e-9 * (1 + r.estimate.duration_us))
          << key.Display() << " pipe " << pipe;
    }
    EXPECT_GT(r.estimate.BusyUs(Pipe::kMte2), 0.0);
    // Without the timeline the estimate is the same.
    EXPECT_DOUBLE_EQ(Events(p, p.default_config, false).estimate.latency_us, r.estimate.latency_us);
  }
}

TEST_F(EventSim, EveryCoreOfTheLaunchAppearsOnceInTheTimeline) {
  TuningProblem p = Problem(Key("MatMul", {{1000, 300}, {300, 770}}));
  EventSimResult r = Events(p, p.default_config);
  std::vector<int64_t> ids;
  for (const CoreTimeline& c : r.timeline.cores) ids.insert(ids.end(), c.core_ids.begin(), c.core_ids.end());
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(static_cast<int64_t>(ids.size()), r.estimate.block_dim);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<int64_t>(i));
}

TEST_F(EventSim, AnInvalidConfigIsRejectedWithTheSpacesReason) {
  TuningProblem p = Problem(Key("MatMul", {{512, 512}, {512, 512}}));
  Config c = WithParam(p, p.default_config, "baseK", 256);
  c = WithParam(p, c, "baseM", 256);
  auto prepared = Prepare(p, soc());
  ASSERT_TRUE(prepared.ok());
  auto r = SimulateEvents(*prepared, c, soc());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// The agreement sweep (issue 3: "two evaluation paths that must agree").
std::vector<OpKey> CubeSweepKeys() {
  return {
      // BERT-base (batch 32, seq 128) and small / odd GEMMs.
      Key("MatMul", {{4096, 768}, {768, 2304}}),
      Key("MatMul", {{4096, 3072}, {3072, 768}}),
      Key("MatMul", {{64, 64}, {64, 64}}),
      Key("MatMul", {{100, 77}, {77, 300}}),
      Key("MatMul", {{2048, 1000}, {1000, 48}}),
      Key("BatchMatMul", {{384, 128, 64}, {384, 64, 128}}),
      Key("BatchMatMul", {{384, 128, 128}, {384, 128, 64}}),
      Key("BatchMatMul", {{3, 50, 70}, {3, 70, 33}}),
      Key("Gemm", {{4096, 768}, {768, 768}, {768}}),
      Key("Gemm", {{300, 129}, {200, 129}}, {{"transB", "1"}}),
      Key("Gemm", {{1000, 512}, {1000, 300}, {300}}, {{"transA", "1"}}),
      // Long K (hundreds of K steps a tile) and many tiles a block: the fast path's
      // periodic jumps over chunk pairs and tiles.
      Key("MatMul", {{256, 8192}, {8192, 512}}),
      Key("MatMul", {{8192, 4096}, {4096, 64}}),
      Key("MatMul", {{1024, 1000}, {1000, 640}}, {}, "int8"),
      // ResNet-50, MobileNet (depthwise) and small / odd convolutions.
      ConvKey(32, 64, 56, 64, 3, 1, 1),
      ConvKey(32, 256, 56, 64, 1, 1, 0),
      ConvKey(32, 3, 224, 64, 7, 2, 3),
      ConvKey(32, 512, 7, 512, 3, 1, 1),
      ConvKey(32, 256, 28, 256, 3, 2, 1),
      ConvKey(32, 96, 56, 96, 3, 2, 1, 96),
      ConvKey(8, 64, 28, 128, 3, 1, 1, 4),
      ConvKey(2, 5, 13, 7, 3, 1, 1),
  };
}

std::vector<OpKey> VectorSweepKeys() {
  return {
      // BERT-base and small / odd shapes.
      Key("Add", {{4096, 768}, {4096, 768}}),
      Key("Gelu", {{4096, 3072}}),
      Key("Mul", {{7, 33}, {7, 33}}),
      Key("Relu", {{1000, 37}}),
      Key("Sigmoid", {{32, 64, 56, 56}}),
      Key("Cast", {{4096, 768}}, {{"dst_type", "float32"}}),
      Key("Add", {{4096, 768}, {768}}),
      Key("Softmax", {{32, 12, 128, 128}}),
      Key("Softmax", {{16, 200000}}),
      Key("Softmax", {{50, 77}}),
      Key("LayerNorm", {{4096, 768}, {768}, {768}}),
      Key("LayerNorm", {{64, 120000}, {120000}, {120000}}),
      Key("RmsNorm", {{4096, 4096}, {4096}}),
      Key("RmsNorm", {{64, 120000}, {120000}}),
      Key("ReduceSum", {{4096, 768}}),
      Key("ReduceMean", {{333, 1001}}),
      Key("Transpose", {{384, 128, 64}}),
      Key("Transpose", {{5, 77, 130}}),
      // Partial last waves, where the busiest cores' last tiles run at a larger HBM
      // share: split rows over one or two passes, and element-wise tails.
      Key("Softmax", {{50, 200000}}),
      Key("Softmax", {{97, 200000}}),
      Key("Softmax", {{49, 200000}}, {}, "float32"),
      Key("Softmax", {{50, 70000}}),
      Key("LayerNorm", {{50, 70000}, {70000}, {70000}}),
      Key("ReduceSum", {{50, 300000}}),
      Key("Gelu", {{3000001}}),
      Key("Cast", {{3000001}}, {{"dst_type", "float32"}}),
      // The window ops (ResNet's stem pooling, MobileNet's depthwise conv with its ReLU6)
      // and Llama's SiLU.
      Key("MaxPool", {{32, 64, 112, 112}}, {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}}),
      Key("DepthwiseConv2D", {{32, 96, 56, 56}, {96, 1, 3, 3}, {96}}, {{"pads", "1"}, {"epilogue", "Clip"}}),
      Key("Silu", {{2048, 11008}}),
      // A feature pyramid's upsampling, nearest and bilinear.
      Key("Resize", {{8, 256, 40, 40}}, {{"sizes", "80,80"}}),
      Key("Resize", {{4, 64, 30, 30}}, {{"sizes", "60,60"}, {"mode", "linear"}}),
      // Llama-2's token embedding: rows of the table by int64 ids, a burst each.
      test_support::TestKey("Gather", {TensorDesc{{32000, 4096}}, TensorDesc{{2048}, "int64"}}),
  };
}

struct Agreement {
  int64_t checked = 0;
  int64_t within_2_percent = 0;
};

// Compares up to `per_problem` valid configs of each key; every one must agree within
// `bound` (relative latency difference).
Agreement ExpectAgreement(const SocSpec& soc, const std::vector<OpKey>& keys, int per_problem,
                          double bound) {
  Agreement a;
  std::map<std::string, std::pair<double, std::string>> worst;  // op type -> (error, what)
  for (const OpKey& key : keys) {
    auto problem = MakeTuningProblem(key, soc);
    EXPECT_TRUE(problem.ok()) << key.Display();
    if (!problem.ok()) continue;
    const TuningProblem& p = *problem;
    auto prepared = Prepare(p, soc);
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    if (!prepared.ok()) continue;
    // A prime stride through the product reaches every parameter's values without
    // enumerating the whole space.
    const uint64_t size = p.space.size();
    const uint64_t stride = 1000003 % size == 0 ? 1 : 1000003;
    int found = 0;
    Config c;
    for (uint64_t i = 0, idx = p.default_index; i < size && found < per_problem; ++i) {
      idx = (idx + stride) % size;
      p.space.DecodeInto(idx, c);
      if (!p.space.Validate(c).ok()) continue;
      ++found;
      auto fast = Simulate(*prepared, c, soc);
      auto ev = SimulateEvents(*prepared, c, soc, {false});
      EXPECT_TRUE(fast.ok() && ev.ok());
      if (!fast.ok() || !ev.ok()) continue;
      const double err = std::abs(ev->estimate.latency_us / fast->latency_us - 1);
      auto& w = worst[key.op_type];
      if (err > w.first) {
        w = {err, key.Display() + " " + p.space.Describe(c)};
      }
      EXPECT_LE(err, bound) << key.Display() << " " << p.space.Describe(c) << ": fast "
                           << fast->latency_us << " us, events " << ev->estimate.latency_us << " us";
      ++a.checked;
      if (err <= 0.02) ++a.within_2_percent;
    }
    EXPECT_GE(found, 10) << key.Display();
  }
  for (const auto& [op, w] : worst) std::printf("worst %-12s %.2e %s\n", op.c_str(), w.first, w.second.c_str());
  return a;
}

TEST_F(EventSim, AgreesWithTheFastPathWithinTwoPercentOnEveryVectorConfigOfTheSweep) {
  const Agreement a = ExpectAgreement(soc(), VectorSweepKeys(), 260, 0.02);
  EXPECT_GE(a.checked, 2000);
}

// Issue 3's bar for the cube ops too. Both paths walk one per-block recurrence
// (cube_recurrence.h); the fast path jumps over whole periods once it repeats and
// starts each block at 0, so any difference is the jump's booked bound (1e-5 of the
// time) or rounding.
TEST_F(EventSim, AgreesWithTheFastPathWithinTwoPercentOnEveryCubeConfigOfTheSweep) {
  const Agreement a = ExpectAgreement(soc(), CubeSweepKeys(), 120, 0.02);
  EXPECT_GE(a.checked, 1500);
  EXPECT_EQ(a.within_2_percent, a.checked);
  std::printf("cube configs within 2%%: %lld of %lld\n", static_cast<long long>(a.within_2_percent),
              static_cast<long long>(a.checked));
}

// The other SoCs' clocks, DMA rates and L0C size put the pipes in other balances (other
// periods and transients for the fast path to detect).
TEST_F(EventSim, AgreesWithTheFastPathWithinTwoPercentOnEveryCubeConfigOnTheOtherSocs) {
  for (const char* name : {"Ascend910B4", "Ascend910"}) {
    std::vector<OpKey> keys = CubeSweepKeys();
    for (OpKey& key : keys) key.soc = name;
    const Agreement a = ExpectAgreement(*catalog_.Find(name).value(), keys, 30, 0.02);
    EXPECT_GE(a.checked, 500) << name;
    std::printf("%s: %lld cube configs checked\n", name, static_cast<long long>(a.checked));
  }
}

}  // namespace
}  // namespace tunefleet::sim
