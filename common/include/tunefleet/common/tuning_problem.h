// TuningProblem: what both the coordinator and a worker know about one op key without
// running anything: its search space (parameters + capacity/alignment constraints from
// the SoC spec) and CANN's default tiling, the baseline. Built per op type from the op
// key; timing is not here (worker/sim/). Plain value, safe to share once built.
#pragma once

#include <optional>

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

// The key an op is tuned, stored and looked up under: spellings that mean the same op
// made one, so a lookup finds what a differently spelt submission tuned -- input and
// Cast dst_type dtypes by name (fp16 -> float16), a cube GEMM's transpose flags as
// transpose_a/transpose_b "1" or left out (CanonicalTransposeFlags), Conv2D's attrs in
// one form each, defaults left out (CanonicalConv2dAttrs). kInvalidArgument for an
// attribute the op type does not take or cannot read. Keys of op types the simulator
// does not know (a replayed kernel's) keep their attrs.
Result<OpKey> CanonicalOpKey(const OpKey& key);

// kInvalidArgument naming the field to fix when the op type is unknown or its inputs
// or attributes do not describe a valid instance of the op.
Result<TuningProblem> MakeTuningProblem(const OpKey& key, const SocSpec& soc);

// Useful work of one launch of the op in FLOPs, from its key alone: 2*M*N*K*batch of the
// GEMM the cube runs (a conv's implicit im2col GEMM, a fused cube op's GEMM without its
// epilogue), the count the simulator reports as KernelEstimate::flops for these ops. 0
// for ops whose work is not a GEMM (a vector op's work is its instruction count, which
// is the timing model's business) and for a key that does not describe a valid op.
double CubeUsefulFlops(const OpKey& key);

// A lower bound on the op's latency on `soc` in us, from its key and the SoC spec alone:
// the kernel launch plus the roofline, max(CubeUsefulFlops / the cube's peak for the input
// dtype, compulsory bytes / HBM bandwidth), compulsory bytes being the inputs read once and
// the output written once in the dtype the op writes. The same bound as the simulator's launch_us +
// RooflineUs(estimate) (worker/sim/simulator.h); no config beats it. 0 where CubeUsefulFlops
// is 0 and for fused cube ops (their epilogue's operands are not counted here).
double CubeLatencyFloorUs(const OpKey& key, const SocSpec& soc);

// Elements of the op's (first) output, from its key alone: a cube op's GEMM M*N*batch (a
// conv's N*Cout*Ho*Wo), an element-wise op's output, a row-wise op's rows*cols (rows for
// a reduction), a transpose's input count. nullopt for a key that is not a valid op.
std::optional<int64_t> OutputElements(const OpKey& key);
// The dtype the op writes (a cube op its out_dtype, a fused op its epilogue's output, a
// vector op its own); nullopt for an int8 cube op's int32 (no dtype name has it) and
// for ops the simulator has no model of. The key's error when it does not parse.
Result<std::optional<DType>> WrittenDType(const OpKey& key);

// Op types MakeTuningProblem accepts.
std::vector<std::string> TunableOpTypes();

}  // namespace tunefleet
