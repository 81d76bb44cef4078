// The `replay` evaluator: serves measured GPU times from a Kernel Tuner cache file
// (common/kt_cache.h) instead of simulating. The loaded cache is shared read-only by all
// slots; each Prepare() returns a cheap view of it.
#include <memory>
#include <string>

#include <fmt/core.h>

#include "tunefleet/common/kt_cache.h"
#include "worker/evaluator.h"

namespace tunefleet::worker {
namespace {

class ReplayProblemEvaluator final : public ProblemEvaluator {
 public:
  explicit ReplayProblemEvaluator(std::shared_ptr<const KtCache> cache) : cache_(std::move(cache)) {}

  Evaluation Evaluate(ConfigIndex index) override {
    Evaluation e;
    e.index = index;
    // Outside the product, or over the device's threads per block: known in advance,
    // never measured (a coordinator's strategies do not propose these).
    if (Status valid = cache_->space().ValidateIndex(index); !valid.ok()) {
      e.rejected = true;
      e.error = "replay cache: " + valid.message();
      return e;
    }
    KtCache::Measurement m = cache_->Lookup(index);
    switch (m.outcome) {
      case KtCache::Outcome::kMeasured:
        e.ok = true;
        e.latency_us = m.time_ms * 1000.0;  // Kernel Tuner's "time" is in ms
        break;
      case KtCache::Outcome::kFailed:
        e.error = "measured as failed: " + m.failure;
        break;
      case KtCache::Outcome::kAbsent:
        // Published convention: an absent config violates the kernel's restrictions,
        // which are not known in advance, so it costs an evaluation and fails.
        e.error = "absent from the cache (violates the kernel's restrictions)";
        break;
    }
    return e;
  }

 private:
  std::shared_ptr<const KtCache> cache_;
};

class ReplayEvaluator final : public Evaluator {
 public:
  explicit ReplayEvaluator(std::shared_ptr<const KtCache> cache) : cache_(std::move(cache)) {}
  std::string_view name() const override { return "replay"; }
  Result<std::unique_ptr<ProblemEvaluator>> Prepare(const OpKey& key, uint64_t) const override {
    if (!cache_->kernel_name().empty() && key.op_type != cache_->kernel_name()) {
      return InvalidArgument(fmt::format(
          "the replay cache holds kernel '{}'; op type '{}' cannot be replayed from it (start a "
          "worker with the matching --replay-cache)", cache_->kernel_name(), key.op_type));
    }
    return std::unique_ptr<ProblemEvaluator>(std::make_unique<ReplayProblemEvaluator>(cache_));
  }

 private:
  std::shared_ptr<const KtCache> cache_;
};

}  // namespace

std::unique_ptr<Evaluator> MakeReplayEvaluator(std::shared_ptr<const KtCache> cache) {
  return std::make_unique<ReplayEvaluator>(std::move(cache));
}

Result<std::unique_ptr<Evaluator>> MakeReplayEvaluator(const std::string& cache_path) {
  TF_ASSIGN_OR_RETURN(KtCache cache, KtCache::Load(cache_path));
  return MakeReplayEvaluator(std::make_shared<const KtCache>(std::move(cache)));
}

}  // namespace tunefleet::worker
