// Number checks for the command lines of tunefleet, tunefleet-coordinator and
// tunefleet-worker. CLI11 reads "-5" into an unsigned flag as 2^64 - 5, and its own
// NonNegativeNumber names DBL_MAX in the message; these say what to type instead.
// Header-only: included by the mains, which link CLI11.
#pragma once

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

}  // namespace tunefleet
