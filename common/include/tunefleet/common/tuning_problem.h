// TuningProblem: what both the coordinator and a worker know about one op key without
// running anything: its search space (parameters + capacity/alignment constraints from
// the SoC spec) and CANN's default tiling, the baseline. Built per op type from the op
// key; timing is not here (worker/sim/). Plain value, safe to share once built.
#pragma once

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"

namespace tunefleet {

struct TuningProblem {
  OpKey key;
  SearchSpace space;
  Config default_config;          // always valid in `space`
  ConfigIndex default_index = 0;  // space.Encode(default_config)
};

// kInvalidArgument naming the field to fix when the op type is unknown or its inputs
// or attributes do not describe a valid instance of the op.
Result<TuningProblem> MakeTuningProblem(const OpKey& key, const SocSpec& soc);

// Op types MakeTuningProblem accepts.
std::vector<std::string> TunableOpTypes();

}  // namespace tunefleet
