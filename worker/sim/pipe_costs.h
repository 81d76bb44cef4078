// Stage costs the composed models (fused_model.cc, attention_model.cc) share, as the vector
// model counts them (NPU_MODEL.md "Pipes and timing"): a DMA transfer's bytes-equivalent
// with its bursts' overhead, the cycles of vector instructions over a buffer, and the
// instructions of a fused chain. Private
// to worker/sim/; pure functions.
#pragma once

#include <cstdint>
#include <utility>

#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/soc_spec.h"
#include "worker/sim/vector_model.h"

namespace tunefleet::sim::pipe_costs {

// One vector instruction streams at most 255 repeats of 256 B.
inline constexpr int64_t kRepeatBytes = 256;
inline constexpr int64_t kMaxRepeats = 255;

// Bytes-equivalent of `raw` bytes moved in `bursts` contiguous bursts.
inline double TransferEq(double raw, double bursts, const SocSpec& soc) {
  return raw + bursts * soc.burst_overhead_bytes;
}

// Cycles and instruction count of `per_elem` vector instructions over n elements of
// `bytes` each.
inline std::pair<double, int64_t> VectorCycles(int64_t n, int64_t bytes, int per_elem, const SocSpec& soc) {
  const double repeat_cycles = static_cast<double>(kRepeatBytes) / (2.0 * static_cast<double>(soc.vec_calc_size));
  const int64_t repeats = (n * bytes + kRepeatBytes - 1) / kRepeatBytes;
  const int64_t instrs_each = (repeats + kMaxRepeats - 1) / kMaxRepeats;
  const double cycles = per_elem * (static_cast<double>(instrs_each) * soc.vector_instr_overhead_cycles +
                                    static_cast<double>(repeats) * repeat_cycles);
  return {cycles, per_elem * instrs_each};
}

// Instructions per element of a fused chain run in fp32 (a cube op's epilogue, an
// attention's score chain): each op as the unfused element-wise op costs it
// (vector_model.cc), a vconv per operand that is not fp32.
inline int ChainInstructions(const FusedChain& chain) {
  int n = 0;
  for (VectorOp op : chain.ops) {
    VectorShape one;
    one.op = op;
    one.dtype = one.out_dtype = one.compute_dtype = DType::kFloat32;
    n += VectorInstructionsPerElement(one);
  }
  for (const FusedOperand& o : chain.operands) n += o.dtype != DType::kFloat32 ? 1 : 0;
  return n;
}

}  // namespace tunefleet::sim::pipe_costs
