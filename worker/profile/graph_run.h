// RunGraph: one step of a model graph on the simulated NPU, what a profiler would record.
// Ops run in topological order with each op's default tiling (or a given config per op
// key) on at most two streams; H2D of graph inputs and D2H of outputs over PCIe, host
// preprocessing, liveness-based memory planning, and for data-parallel training a
// backward pass with bucketed ring all-reduce over HCCL. The model and its departures
// are in docs/profiling.md. Pure function of its arguments (a KernelCache only remembers
// what it computed); RunProfile is a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tunefleet/common/graph.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/soc_spec.h"
#include "tunefleet/common/status.h"
#include "worker/sim/kernel_estimate.h"
#include "worker/sim/simulator.h"

namespace tunefleet::profile {

// One kernel launch of the step.
struct OpRecord {
  std::string name;       // node name; backward ops are "<name>_grad"
  std::string op_type;    // node op type; backward ops are "<OpType>Grad"
  std::string task_type;  // msprof: AI_CORE (cube), AI_VECTOR_CORE (vector), MIX_AIC
  int node = -1;          // index in Graph::nodes
  bool backward = false;
  int stream = 0;         // 0 or 1
  double launch_us = 0;   // launch overhead before start_us on the same stream
  double start_us = 0;    // task start (after launch), from the start of the step
  double duration_us = 0; // on-device duration
  double roofline_us = 0; // sim::RooflineUs of the estimate
  int unit_cores = 0;     // cores of the unit the op runs on (cube or vector)
  sim::KernelEstimate estimate;
  std::string op_key;     // OpKey::Display()
  std::string input_shapes, input_dtypes, input_formats;     // msprof style "4096,768;768,768"
  std::string output_shapes, output_dtypes, output_formats;
  double EndUs() const { return start_us + duration_us; }
};

// Non-kernel activity: host preprocessing, PCIe copies, HCCL all-reduces.
struct TransferRecord {
  std::string name;
  std::string unit;  // "Host", "PCIe" or "HCCL" (profiler_data.csv's unit column)
  double start_us = 0;
  double duration_us = 0;
  double bytes = 0;
  double EndUs() const { return start_us + duration_us; }
};

struct MemoryPlan {
  int64_t no_reuse_bytes = 0;    // every buffer its own allocation for the whole step
  int64_t with_reuse_bytes = 0;  // greedy offset reuse of buffers whose lifetimes do not overlap
  int64_t max_live_bytes = 0;    // max over time of live bytes: the lower bound of any plan
  int64_t weight_bytes = 0;
  int buffers = 0;
};

// A producer -> consumer edge through a tensor, for fusion advice.
struct GraphEdge {
  std::string from, to, tensor;
  int64_t bytes = 0;
  int consumers = 0;  // kernel consumers of the tensor (fusion needs exactly one)
};

struct RunProfile {
  std::string model, soc;
  int devices = 1;
  bool training = false;
  std::vector<OpRecord> ops;             // in start order
  std::vector<TransferRecord> transfers; // host, PCIe, HCCL, in start order
  std::vector<GraphEdge> edges;
  MemoryPlan memory;
  double step_us = 0;
  double host_us = 0, h2d_us = 0, d2h_us = 0;
  double compute_start_us = 0, compute_end_us = 0;
  double device_busy_us = 0;        // union of op intervals
  double ai_core_utilisation = 0;   // sum(duration * block_dim / unit cores) / step_us
  double memory_bw_utilisation = 0; // HBM bytes / (device_busy_us * HBM bandwidth)
  double hbm_bytes = 0;
  double comm_us = 0;               // sum of all-reduce durations
  double exposed_comm_us = 0;       // all-reduce time after the last compute op
  double gradient_bytes = 0;
  int hbm_bandwidth_gbps = 0;
};

// Each op key simulated once per config: a model repeats its layers (BERT-base's 12, a
// chain's thousands of identical nodes), and `fuse` runs a graph once per candidate
// fusion. Building every node's tuning problem (its default-tiling search) was 60% of
// a fuse. One cache may serve runs of many graphs on many SoCs. Not thread-safe.
class KernelCache {
 public:
  struct Kernel {
    sim::PreparedProblem::Op op = sim::PreparedProblem::Op::kMatmul;
    sim::KernelEstimate estimate;
  };
  // `key` simulated on `soc` at `config`, or at its default tiling when config is null.
  // The op's own error when it is not a valid tunable op; the simulator's, with
  // *config_rejected set, when it refuses the config.
  Result<Kernel> Get(const OpKey& key, const Config* config, const SocSpec& soc, bool* config_rejected = nullptr);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Status status;
    bool config_rejected = false;
    Kernel kernel;
  };
  std::unordered_map<std::string, Entry> entries_;
};

struct RunOptions {
  // Config per op key (OpKey::Canonical()); ops not listed run their default tiling.
  std::map<std::string, Config> configs;
  // Two ops share the chip when both use at most half the cores of their unit.
  bool concurrent_streams = true;
  // Shared by the caller's runs (fuse); each run keeps its own when null.
  KernelCache* kernels = nullptr;
  OpChecks* checks = nullptr;  // likewise, for the graph's validation (ValidateGraphOps)
  // Only what times the step: ops without their op_key and shape texts, no memory plan
  // and no edges (RunProfile::memory and edges stay empty). For a caller that compares
  // step and kernel times of many variants of a graph (fuse).
  bool step_time_only = false;
};

// kInvalidArgument naming the node when an op is not a valid tunable op or a given config
// is rejected; kInvalidArgument when `soc` is not the graph's SoC.
Result<RunProfile> RunGraph(const Graph& graph, const SocSpec& soc, const RunOptions& options = {});

// Ring all-reduce time of `bytes` over `devices` (NPU_MODEL.md "Host and devices"):
// latency + 2(N-1)/N * bytes / link bandwidth; 0 for one device.
double RingAllReduceUs(double bytes, int devices, const SocSpec& soc);

}  // namespace tunefleet::profile
