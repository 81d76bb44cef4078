// KernelEstimate: what the simulated NPU says about one kernel launch of any op — its
// latency, how busy each pipe of the critical (slowest) core was, the bytes it moved
// and the useful work it did. It is what the profiler turns into msprof-style
// op_summary rows (NPU_MODEL.md "What a simulated run reports"). Plain copyable value;
// every op's timing model fills one in, pipes an op does not use stay zero.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace tunefleet::sim {

// The pipes of one AI Core (NPU_MODEL.md "Pipes and timing").
enum class Pipe { kMte2, kMte1, kCube, kFixpipe, kScalar, kVector, kMte3 };
inline constexpr int kPipeCount = 7;

// msprof's column stem for a pipe's ratio: "aic_mac_ratio" for kCube etc.
constexpr std::string_view PipeRatioName(Pipe pipe) {
  switch (pipe) {
    case Pipe::kMte2:
      return "aic_mte2_ratio";
    case Pipe::kMte1:
      return "aic_mte1_ratio";
    case Pipe::kCube:
      return "aic_mac_ratio";
    case Pipe::kFixpipe:
      return "aic_fixpipe_ratio";
    case Pipe::kScalar:
      return "aic_scalar_ratio";
    case Pipe::kVector:
      return "aiv_vec_ratio";
    case Pipe::kMte3:
      return "aiv_mte3_ratio";
  }
  return "";
}

struct KernelEstimate {
  double latency_us = 0;   // launch_us + duration_us: what a tuner compares
  double duration_us = 0;  // on-device time of the critical core (msprof "Task Duration")
  double launch_us = 0;    // kernel launch overhead (SocSpec::kernel_launch_us)
  // Busy time of each pipe on the critical core, indexed by Pipe.
  std::array<double, kPipeCount> busy_us{};
  int64_t block_dim = 0;          // cores used
  double hbm_bytes = 0;           // HBM traffic: reads that miss L2 plus every output byte written
  double l2_bytes = 0;            // input bytes served by L2 hits (re-reads of panels)
  double compulsory_bytes = 0;    // inputs read once + outputs written once: the roofline's bytes
  double flops = 0;               // useful work (2*M*N*K*batch for MatMul); padding is not counted
  double compute_roof_flops = 0;  // whole-chip peak FLOP/s of the unit and dtype the op runs on

  double BusyUs(Pipe pipe) const { return busy_us[static_cast<size_t>(pipe)]; }
  double& BusyUs(Pipe pipe) { return busy_us[static_cast<size_t>(pipe)]; }
  // busy / duration, msprof's aic_*_ratio: in [0, 1]; 0 for an empty kernel.
  double Ratio(Pipe pipe) const { return duration_us > 0 ? BusyUs(pipe) / duration_us : 0; }
  double AchievedFlopsPerS() const { return latency_us > 0 ? flops / (latency_us * 1e-6) : 0; }
  // Share of the compute roof reached over the whole latency (launch included).
  double ComputeEfficiency() const {
    return compute_roof_flops > 0 ? AchievedFlopsPerS() / compute_roof_flops : 0;
  }
  // msprof's memory_bound = mte2_ratio / max(mac_ratio, vec_ratio) (DESIGN.md step 3).
  double MemoryBound() const {
    double compute =
        Ratio(Pipe::kCube) > Ratio(Pipe::kVector) ? Ratio(Pipe::kCube) : Ratio(Pipe::kVector);
    return compute > 0 ? Ratio(Pipe::kMte2) / compute : 0;
  }
};

}  // namespace tunefleet::sim
