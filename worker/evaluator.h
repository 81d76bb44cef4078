// Evaluator: how a worker slot turns (op key, config index) into a latency. One
// interface, several back ends: `sim` (the simulated NPU), `fixed` (a given latency,
// for load tests), `replay` (measured times from a Kernel Tuner cache file).
// Evaluators are immutable and shared by all slots; a ProblemEvaluator belongs to one
// slot for one job.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet::worker {

struct Evaluation {
  ConfigIndex index = 0;
  bool ok = false;
  bool rejected = false;  // violates a known constraint: never measured
  double latency_us = 0;
  std::string error;      // why, when !ok
};

class ProblemEvaluator {
 public:
  virtual ~ProblemEvaluator() = default;
  // Pure function of (op key, config, SoC spec, measurement seed, repetition).
  virtual Evaluation Evaluate(ConfigIndex index) = 0;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string_view name() const = 0;
  // kInvalidArgument when the op key cannot be evaluated here (unknown SoC or op).
  virtual Result<std::unique_ptr<ProblemEvaluator>> Prepare(const OpKey& key,
                                                            uint64_t measurement_seed) const = 0;
};

// The simulated NPU; borrows the catalog, which must outlive it. noise_sigma > 0 adds
// reproducible log-normal measurement noise (worker/sim/noise.h); 0 = exact.
std::unique_ptr<Evaluator> MakeSimEvaluator(const SocCatalog& catalog, double noise_sigma = 0);
// Every valid config takes latency_us (load tests).
std::unique_ptr<Evaluator> MakeFixedEvaluator(const SocCatalog& catalog, double latency_us);
// Measured times of a Kernel Tuner cache (worker/replay_evaluator.cc), in us. Serves op
// keys whose op type is the cache's kernel_name (any, when the file names none); the
// config index is the cache's full-product index. Absent and failed configs come back
// failed (ok=false, not rejected); an index outside the product is rejected.
std::unique_ptr<Evaluator> MakeReplayEvaluator(std::shared_ptr<const KtCache> cache);
// Loads the file first: kNotFound / kInvalidArgument as KtCache::Load.
Result<std::unique_ptr<Evaluator>> MakeReplayEvaluator(const std::string& cache_path);

}  // namespace tunefleet::worker
