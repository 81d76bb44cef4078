// Measurement noise of the simulated NPU: off by default (sigma 0 returns exactly 1).
// When on, a multiplicative log-normal factor that is a pure function of (op key,
// config, measurement seed, repetition), so every worker reports the same "noisy"
// measurement for the same job and results stay reproducible whatever fails.
#pragma once

#include <cstdint>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"

namespace tunefleet::sim {

// exp(sigma * z), z standard normal drawn from a hash of the arguments.
double MeasurementNoiseFactor(const OpKeyHash& key, ConfigIndex config, uint64_t seed,
                              uint32_t repetition, double sigma);

}  // namespace tunefleet::sim
