// SocSpec: one NPU's hardware description, read from a CANN platform_config-style ini
// file ([Section] key=value). Keys CANN's own files carry keep CANN's names; keys only
// the simulator needs live in the [TunefleetModel] section (model-only, not in CANN).
// SocCatalog owns the specs it loaded; both are immutable once built, safe to share.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/status.h"

namespace tunefleet {

struct SocSpec {
  std::string name;                 // [version] SoC_version
  // [SoCInfo]
  int ai_core_cnt = 0;              // cube cores
  int vector_core_cnt = 0;
  int64_t l2_size = 0;              // bytes
  int64_t memory_size = 0;          // HBM bytes
  // [AICoreSpec]
  double cube_freq_mhz = 0;
  int cube_m_size = 16, cube_n_size = 16, cube_k_size = 16;
  int vec_calc_size = 128;          // fp16 lanes per cycle
  int64_t l0_a_size = 0, l0_b_size = 0, l0_c_size = 0, l1_size = 0, ub_size = 0;
  int64_t ubblock_size = 32;        // alignment, bytes
  // [AICoreintrinsicDtypeMap] Intrinsic_mmad lists bf16 (the 910B parts; not the 910)
  bool supports_bf16 = true;
  // [TunefleetModel] (model-only keys)
  double hbm_bandwidth_gbps = 0;    // GB/s shared by all cores
  double l2_bandwidth_gbps = 0;     // GB/s shared by all cores
  double mte2_bytes_per_cycle = 0;  // per core, GM/L2 -> L1/UB
  double mte1_l0a_bytes_per_cycle = 256;  // L1 -> L0A (CANN tiling code)
  double mte1_l0b_bytes_per_cycle = 128;  // L1 -> L0B
  double fixpipe_bytes_per_cycle = 0;     // L0C -> GM
  double mte3_bytes_per_cycle = 0;        // UB -> GM
  double burst_overhead_bytes = 0;        // bytes-equivalent cost per contiguous burst
  double misaligned_stride_penalty = 0;   // extra fraction on rows not 32-byte aligned
  double scalar_cycles_per_iteration = 0; // loop bookkeeping per inner iteration
  double scalar_cycles_per_tile = 0;      // per output tile setup
  double kernel_launch_us = 0;
  double gm_latency_cycles = 0;           // first-byte latency of one DMA instruction to/from GM
  double vector_instr_overhead_cycles = 0;  // issue/startup of one vector instruction
  double hbm_stream_efficiency = 1;       // share of hbm_bandwidth_gbps streaming DMA sustains
  double pcie_bandwidth_gbps = 0, pcie_latency_us = 0;
  double hccs_bandwidth_gbps = 0, hccs_latency_us = 0;

  bool operator==(const SocSpec&) const = default;

  // Peak fp16 cube throughput in FLOP/s: cores * m*n*k MACs/cycle * 2 * freq.
  double CubePeakFlops() const;
  double CyclesPerUs() const { return cube_freq_mhz; }
};

// Parses one ini text. `source` names the file in error messages. Every required key
// must be present and positive; the error names the section and key to fix.
Result<SocSpec> ParseSocSpec(std::string_view ini_text, std::string_view source);
Result<SocSpec> LoadSocSpecFile(const std::string& path);

class SocCatalog {
 public:
  // The specs compiled into the binary (common/soc/*.ini).
  static SocCatalog Builtin();
  // Adds every *.ini in dir. kInvalidArgument for a file that names a SoC the catalog has
  // with other values: results are filed under the SoC's name, so a modified part tuned
  // under a built-in name would put latencies no such part reaches into every user's
  // knowledge base; it needs a name of its own.
  Status LoadDirectory(const std::string& dir);
  void Add(SocSpec spec);

  // kNotFound listing the known SoCs when name is unknown.
  Result<const SocSpec*> Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, std::shared_ptr<const SocSpec>, std::less<>> specs_;
};

}  // namespace tunefleet
