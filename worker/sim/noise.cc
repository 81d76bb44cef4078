#include "worker/sim/noise.h"

#include <cmath>

namespace tunefleet::sim {
namespace {

// splitmix64 (Steele, Lea & Flood 2014): a well-mixed 64-bit step, stable everywhere.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double Unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)

}  // namespace

double MeasurementNoiseFactor(const OpKeyHash& key, ConfigIndex config, uint64_t seed,
                              uint32_t repetition, double sigma) {
  if (sigma <= 0) return 1.0;
  uint64_t h = Mix(key.high ^ Mix(key.low ^ Mix(config ^ Mix(seed ^ Mix(repetition)))));
  // Box-Muller from two independent uniforms.
  double u1 = Unit(h), u2 = Unit(Mix(h));
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return std::exp(sigma * z);
}

}  // namespace tunefleet::sim
