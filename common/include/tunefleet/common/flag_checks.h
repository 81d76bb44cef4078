// Number checks for the command lines of tunefleet, tunefleet-coordinator and
// tunefleet-worker. CLI11 reads "-5" into an unsigned flag as 2^64 - 5, and its own
// NonNegativeNumber names DBL_MAX in the message; these say what to type instead.
// Header-only: included by the mains, which link CLI11.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

namespace tunefleet {

// A number of at least `min` (0 for counts and budgets, above 0 for latencies).
inline CLI::Validator AtLeast(double min, bool inclusive = true) {
  const std::string bound = std::string(inclusive ? ">= " : "> ") + CLI::detail::to_string(min);
  return CLI::Validator(
      [min, inclusive, bound](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        const bool ok = inclusive ? value >= min : value > min;
        return ok ? std::string() : "must be " + bound + ", not " + text;
      },
      "NUMBER " + bound);
}

// A whole count of at least `min` that fits in 64 bits: "-1", "1.5" or 2^64 are refused
// rather than wrapped or truncated into an unsigned flag.
inline CLI::Validator Count(uint64_t min = 0) {
  const std::string bound = "INTEGER >= " + std::to_string(min);
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::result_out_of_range) {
          return "'" + text + "' is too large (at most " + std::to_string(std::numeric_limits<uint64_t>::max()) + ")";
        }
        if (ec != std::errc() || ptr != end) return "'" + text + "' is not a whole number >= " + std::to_string(min);
        return value >= min ? std::string() : "must be >= " + std::to_string(min) + ", not " + text;
      },
      bound);
}

}  // namespace tunefleet
