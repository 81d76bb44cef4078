#include "worker/evaluator.h"

#include <algorithm>

#include "worker/sim/noise.h"
#include "worker/sim/simulator.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::worker {
namespace {

// Shared by both back ends: builds the tuning problem and rejects invalid configs with
// the constraint's reason; subclasses supply the latency of a valid one.
class ProblemEvaluatorBase : public ProblemEvaluator {
 public:
  ProblemEvaluatorBase(TuningProblem problem, const SocSpec& soc)
      : problem_(std::move(problem)), soc_(soc) {}

  Evaluation Evaluate(ConfigIndex index) final {
    Evaluation e;
    e.index = index;
    if (index >= problem_.space.size()) {
      e.rejected = true;
      e.error = "config index " + std::to_string(index) + " is outside the space";
      return e;
    }
    problem_.space.DecodeInto(index, config_);
    Status valid = problem_.space.Validate(config_);
    if (!valid.ok()) {
      e.rejected = true;
      e.error = valid.message();
      return e;
    }
    Result<double> latency = Latency(config_);
    if (!latency.ok()) {
      e.error = latency.status().message();
      return e;
    }
    e.ok = true;
    e.latency_us = *latency;
    return e;
  }

 protected:
  virtual Result<double> Latency(const Config& config) = 0;
  const TuningProblem& problem() const { return problem_; }
  const SocSpec& soc() const { return soc_; }

 private:
  TuningProblem problem_;
  const SocSpec& soc_;
  Config config_;
};

class SimProblemEvaluator final : public ProblemEvaluatorBase {
 public:
  SimProblemEvaluator(TuningProblem p, const SocSpec& soc, uint64_t seed, double sigma)
      : ProblemEvaluatorBase(std::move(p), soc), hash_(HashOpKey(problem().key)), seed_(seed), sigma_(sigma) {}

 private:
  Result<double> Latency(const Config& config) override {
    TF_ASSIGN_OR_RETURN(sim::KernelEstimate est, sim::Simulate(problem(), config, soc()));
    if (sigma_ <= 0) return est.latency_us;
    TF_ASSIGN_OR_RETURN(ConfigIndex index, problem().space.Encode(config));
    // Noise never takes a measurement below launch + roofline, which no run beats: a
    // near-roofline config's lucky draw would otherwise be recorded as faster than the
    // hardware, and the task scheduler's headroom (best - floor) could go negative.
    return std::max(est.latency_us * sim::MeasurementNoiseFactor(hash_, index, seed_, 0, sigma_),
                    est.launch_us + sim::RooflineUs(est, soc()));
  }
  OpKeyHash hash_;
  uint64_t seed_;
  double sigma_;
};

class FixedProblemEvaluator final : public ProblemEvaluatorBase {
 public:
  FixedProblemEvaluator(TuningProblem p, const SocSpec& soc, double latency)
      : ProblemEvaluatorBase(std::move(p), soc), latency_(latency) {}

 private:
  Result<double> Latency(const Config&) override { return latency_; }
  double latency_;
};

Result<TuningProblem> Problem(const SocCatalog& catalog, const OpKey& key, const SocSpec** soc) {
  TF_ASSIGN_OR_RETURN(*soc, catalog.Find(key.soc));
  return MakeTuningProblem(key, **soc);
}

class SimEvaluator final : public Evaluator {
 public:
  SimEvaluator(const SocCatalog& catalog, double sigma) : catalog_(catalog), sigma_(sigma) {}
  std::string_view name() const override { return "sim"; }
  Result<std::unique_ptr<ProblemEvaluator>> Prepare(const OpKey& key, uint64_t seed) const override {
    const SocSpec* soc = nullptr;
    TF_ASSIGN_OR_RETURN(TuningProblem p, Problem(catalog_, key, &soc));
    return std::unique_ptr<ProblemEvaluator>(
        std::make_unique<SimProblemEvaluator>(std::move(p), *soc, seed, sigma_));
  }

 private:
  const SocCatalog& catalog_;
  double sigma_;
};

class FixedEvaluator final : public Evaluator {
 public:
  FixedEvaluator(const SocCatalog& catalog, double latency) : catalog_(catalog), latency_(latency) {}
  std::string_view name() const override { return "fixed"; }
  Result<std::unique_ptr<ProblemEvaluator>> Prepare(const OpKey& key, uint64_t) const override {
    const SocSpec* soc = nullptr;
    TF_ASSIGN_OR_RETURN(TuningProblem p, Problem(catalog_, key, &soc));
    return std::unique_ptr<ProblemEvaluator>(
        std::make_unique<FixedProblemEvaluator>(std::move(p), *soc, latency_));
  }

 private:
  const SocCatalog& catalog_;
  double latency_;
};

}  // namespace

std::unique_ptr<Evaluator> MakeSimEvaluator(const SocCatalog& catalog, double noise_sigma) {
  return std::make_unique<SimEvaluator>(catalog, noise_sigma);
}

std::unique_ptr<Evaluator> MakeFixedEvaluator(const SocCatalog& catalog, double latency_us) {
  return std::make_unique<FixedEvaluator>(catalog, latency_us);
}

}  // namespace tunefleet::worker
