// Graph execution on the simulated NPU: the step's list schedule, PCIe/HCCL transfers,
// backward pass and memory plan (docs/profiling.md "How a step is simulated").
#include "worker/profile/graph_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/core.h>

#include "tunefleet/common/conv2d_space.h"
#include "tunefleet/common/fused_space.h"
#include "tunefleet/common/matmul_space.h"
#include "tunefleet/common/tuning_problem.h"
#include "worker/sim/simulator.h"

namespace tunefleet::profile {
namespace {

// Backward of a vector op (and of any op without a GEMM form: a FlashAttention, whose
// backward recomputes the scores and runs four GEMMs where the forward runs two) costs
// twice its forward: it reads the saved input and the incoming gradient and writes the
// input's gradient. A documented simplification; cube ops simulate their two backward
// GEMMs instead.
constexpr double kBackwardFactor = 2.0;

// The backward of a cube op: its two GEMMs (BackwardGemmKeys: dX and dW), each with its
// config from `configs` (by OpKey::Canonical(), as a tuned training graph has them) or its
// default tiling, as one record with both launches. A fused cube op adds its epilogue's
// backward at 2x the epilogue's forward: what the fused op takes beyond the cube op alone,
// both at their default tilings (so a tuned forward config moves the forward only). Null
// when `key` is not a cube op.
Result<std::optional<sim::KernelEstimate>> CubeBackward(const OpKey& key,
                                                        const SocSpec& soc,
                                                        const std::map<std::string, Config>& configs,
                                                        KernelCache& kernels) {
  TF_ASSIGN_OR_RETURN(std::vector<OpKey> keys, BackwardGemmKeys(key));
  if (keys.empty()) return std::optional<sim::KernelEstimate>();
  auto gemm = [&](const OpKey& gemm_key) -> Result<sim::KernelEstimate> {
    auto c = configs.find(gemm_key.Canonical());
    TF_ASSIGN_OR_RETURN(KernelCache::Kernel k, kernels.Get(gemm_key, c != configs.end() ? &c->second : nullptr, soc));
    return k.estimate;
  };
  TF_ASSIGN_OR_RETURN(sim::KernelEstimate dx, gemm(keys[0]));
  TF_ASSIGN_OR_RETURN(sim::KernelEstimate dw, gemm(keys[1]));
  sim::KernelEstimate e = dx;
  for (size_t i = 0; i < e.busy_us.size(); ++i) e.busy_us[i] += dw.busy_us[i];
  e.launch_us += dw.launch_us;
  e.duration_us += dw.duration_us;
  e.latency_us = e.launch_us + e.duration_us;
  // One profile row for two kernels: its block dim is their core-time over its duration,
  // so duration x block_dim / cores (the AI Core utilisation) counts each kernel's own
  // cores. The larger one counted a dW on 1 core as if it used all 24, 3x the utilisation.
  const double both = dx.duration_us + dw.duration_us;
  e.block_dim = both > 0 ? std::max<int64_t>(1, std::llround((static_cast<double>(dx.block_dim) * dx.duration_us +
                                                              static_cast<double>(dw.block_dim) * dw.duration_us) /
                                                             both))
                         : std::max(dx.block_dim, dw.block_dim);
  e.hbm_bytes += dw.hbm_bytes;
  e.l2_bytes += dw.l2_bytes;
  e.compulsory_bytes += dw.compulsory_bytes;
  e.flops += dw.flops;
  if (IsFusedCubeOpType(key.op_type)) {
    TF_ASSIGN_OR_RETURN(OpKey inner_key, FusedCubeInnerKey(key));
    inner_key.attrs.erase("out_dtype");  // the unfused op as a graph runs it, writing its inputs' dtype
    TF_ASSIGN_OR_RETURN(KernelCache::Kernel inner, kernels.Get(inner_key, nullptr, soc));
    TF_ASSIGN_OR_RETURN(KernelCache::Kernel fused, kernels.Get(key, nullptr, soc));
    const sim::KernelEstimate& cube = inner.estimate;
    const sim::KernelEstimate& forward = fused.estimate;
    e.duration_us += kBackwardFactor * std::max(0.0, forward.duration_us - cube.duration_us);
    e.latency_us = e.launch_us + e.duration_us;
    e.BusyUs(sim::Pipe::kVector) += kBackwardFactor * forward.BusyUs(sim::Pipe::kVector);
    e.hbm_bytes += kBackwardFactor * std::max(0.0, forward.hbm_bytes - cube.hbm_bytes);
  }
  return std::optional<sim::KernelEstimate>(e);
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ";" : "") + parts[i];
  return out;
}

std::string ShapeText(const TensorDesc& d) {
  std::string out;
  for (size_t i = 0; i < d.shape.size(); ++i) out += (i ? "," : "") + std::to_string(d.shape[i]);
  return out;
}

std::string DTypeText(const TensorDesc& d) {
  std::string upper;
  for (char c : d.dtype) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "DT_" + upper;  // msprof writes DT_FLOAT16
}

// A schedulable item: a kernel (forward or backward) or a zero-time view.
struct Item {
  int node = -1;
  bool backward = false;
  bool view = false;
  std::vector<int> deps;       // items that must be done first (earlier in `items`)
  bool after_forward = false;  // waits also for every forward item (a backward one)
  OpRecord record;
  double latency_us = 0;  // launch + duration: how long it holds its stream
  bool started = false, done = false;
  double begin_us = 0, end_us = 0;  // stream occupancy [begin, end)
  // While running: occupancy left at the op's own speed, the factor it is slowed by
  // (HBM shared with a concurrent op) and when both were last brought up to date.
  double left_us = 0, stretch = 1, updated_us = 0;
};

// The record's op key and its inputs' and outputs' shapes, dtypes and formats, as msprof
// writes them.
void DescribeOp(const OpKey& key, const GraphNode& node, OpRecord& r) {
  // As the knowledge base and `tune` spell it (Conv2D's default attrs left out).
  auto canonical = CanonicalOpKey(key);
  r.op_key = (canonical.ok() ? *canonical : key).Display();
  std::vector<std::string> s, d, f;
  for (const auto& t : key.inputs) {
    s.push_back(ShapeText(t));
    d.push_back(DTypeText(t));
    f.push_back(t.format);
  }
  r.input_shapes = Join(s), r.input_dtypes = Join(d), r.input_formats = Join(f);
  s.clear(), d.clear(), f.clear();
  for (const auto& t : node.outputs) {
    s.push_back(ShapeText(t.desc));
    d.push_back(DTypeText(t.desc));
    f.push_back(t.desc.format);
  }
  r.output_shapes = Join(s), r.output_dtypes = Join(d), r.output_formats = Join(f);
}

// Two ops running at once share HBM: each asks for its bytes over its occupancy, and
// when together they ask for more than the roof, both slow down by the excess
// (proportional sharing). Brings every running op's remaining time up to `t` at its
// old speed, then sets the new speeds and ends.
void ShareHbm(std::vector<Item*>& running, double t, const SocSpec& soc) {
  double demand = 0;  // bytes per us
  for (Item* it : running) {
    it->left_us = std::max(0.0, it->left_us - (t - it->updated_us) / it->stretch);
    it->updated_us = t;
    if (it->latency_us > 0) demand += it->record.estimate.hbm_bytes / it->latency_us;
  }
  const double roof = soc.hbm_bandwidth_gbps * 1e3;
  const double stretch = running.size() > 1 ? std::max(1.0, demand / roof) : 1.0;
  for (Item* it : running) {
    it->stretch = stretch;
    it->end_us = t + it->left_us * stretch;
  }
}

struct Buffer {
  int64_t bytes = 0;
  double alloc_us = 0, free_us = 0;
};

bool Small(const Item& it) { return it.record.estimate.block_dim * 2 <= it.record.unit_cores; }

MemoryPlan PlanMemory(std::vector<Buffer> buffers, int64_t weight_bytes) {
  MemoryPlan plan;
  plan.weight_bytes = weight_bytes;
  plan.buffers = static_cast<int>(buffers.size());
  for (const auto& b : buffers) plan.no_reuse_bytes += b.bytes;
  // The most bytes live at once, by a sweep: a buffer is live from its allocation up to,
  // not including, its free, so at one instant frees go before allocations. (Summing
  // every buffer live at each allocation was quadratic: 100,000 nodes took minutes.)
  std::vector<std::pair<double, int64_t>> events;  // (time, +bytes allocated / -bytes freed)
  events.reserve(2 * buffers.size());
  for (const auto& b : buffers) {
    events.emplace_back(b.alloc_us, b.bytes);
    events.emplace_back(b.free_us, -b.bytes);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    live += events[i].second;
    if (i + 1 == events.size() || events[i + 1].first != events[i].first) {
      plan.max_live_bytes = std::max(plan.max_live_bytes, live);
    }
  }
  // Greedy by size (largest first), each at the lowest offset free of every placed buffer
  // whose lifetime overlaps: the usual heuristic of framework memory planners.
  std::sort(buffers.begin(), buffers.end(), [](const Buffer& a, const Buffer& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.alloc_us < b.alloc_us;
  });
  struct Placed {
    int64_t offset, bytes;
    double alloc_us, free_us;
  };
  // Looking at every placed buffer for each was quadratic. Long-lived ones (weights, a
  // step's 1/64 or more) are few and always looked at; the others by allocation time: one
  // that overlaps b was allocated before b's free and at most the longest such lifetime
  // before b's allocation, so only that window is looked at.
  double first = 0, last = 0;
  for (const auto& b : buffers) {
    first = std::min(first, b.alloc_us);
    last = std::max(last, b.free_us);
  }
  const double long_lived = (last - first) / 64;
  std::vector<Placed> placed_long;
  std::multimap<double, Placed> placed;
  double longest = 0;  // of those in `placed`
  for (const auto& b : buffers) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    auto overlapping = [&](const Placed& p) {
      if (p.alloc_us < b.free_us && b.alloc_us < p.free_us) taken.emplace_back(p.offset, p.offset + p.bytes);
    };
    std::for_each(placed_long.begin(), placed_long.end(), overlapping);
    const double from = b.alloc_us - longest * (1 + 1e-9) - 1e-9;
    for (auto it = placed.lower_bound(from); it != placed.end() && it->first < b.free_us; ++it) overlapping(it->second);
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : taken) {
      if (offset + b.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    const Placed p{offset, b.bytes, b.alloc_us, b.free_us};
    if (b.free_us - b.alloc_us >= long_lived) {
      placed_long.push_back(p);
    } else {
      placed.emplace(b.alloc_us, p);
      longest = std::max(longest, b.free_us - b.alloc_us);
    }
    plan.with_reuse_bytes = std::max(plan.with_reuse_bytes, offset + b.bytes);
  }
  return plan;
}

}  // namespace

double RingAllReduceUs(double bytes, int devices, const SocSpec& soc) {
  if (devices <= 1 || bytes <= 0) return 0;
  const double bytes_per_us = soc.hccs_bandwidth_gbps * 1e3;  // GB/s = 1e3 B/us
  return soc.hccs_latency_us + 2.0 * (devices - 1) / devices * bytes / bytes_per_us;
}

Result<KernelCache::Kernel> KernelCache::Get(const OpKey& key, const Config* config, const SocSpec& soc,
                                             bool* config_rejected) {
  std::string id = soc.name + "\n" + key.Canonical() + "\n";
  if (config) {
    for (int64_t v : *config) id += std::to_string(v) + ",";
  } else {
    id += "default";
  }
  auto [it, fresh] = entries_.try_emplace(std::move(id));
  Entry& e = it->second;
  if (fresh) {
    auto simulate = [&]() -> Status {
      TF_ASSIGN_OR_RETURN(TuningProblem problem, MakeTuningProblem(key, soc));
      TF_ASSIGN_OR_RETURN(sim::PreparedProblem prepared, sim::Prepare(problem, soc));
      auto estimate = sim::Simulate(prepared, config ? *config : problem.default_config, soc);
      if (!estimate.ok()) {
        e.config_rejected = true;
        return estimate.status();
      }
      e.kernel = {prepared.op, *estimate};
      return Status::Ok();
    };
    e.status = simulate();
  }
  if (config_rejected) *config_rejected = e.config_rejected;
  if (!e.status.ok()) return e.status;
  return e.kernel;
}

Result<RunProfile> RunGraph(const Graph& graph, const SocSpec& soc, const RunOptions& options) {
  if (graph.soc != soc.name) {
    return InvalidArgument("graph is for SoC '" + graph.soc + "' but the run was given '" + soc.name + "'");
  }
  const GraphIndex index(graph);
  TF_RETURN_IF_ERROR(ValidateGraphOps(index, soc, options.checks));
  TF_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(index));
  const int n = static_cast<int>(graph.nodes.size());
  KernelCache own_kernels;
  KernelCache& kernels = options.kernels ? *options.kernels : own_kernels;

  // Kernel consumers of each tensor, looking through views.
  std::unordered_map<std::string, std::vector<int>> consumers;
  for (int i = 0; i < n; ++i) {
    for (const auto& in : graph.nodes[i].inputs) consumers[in].push_back(i);
  }

  // Forward items, in topological order.
  std::vector<Item> items;
  items.reserve(graph.training ? 2 * static_cast<size_t>(n) : static_cast<size_t>(n));
  std::vector<int> fwd_item(n, -1);
  for (int idx : order) {
    const GraphNode& node = graph.nodes[idx];
    Item it;
    it.node = idx;
    it.view = node.IsView();
    for (const auto& in : node.inputs) {
      int p = index.ProducerOf(in);
      if (p >= 0) it.deps.push_back(fwd_item[p]);
    }
    if (!it.view) {
      OpKey key = NodeOpKey(index, node);
      const auto given = options.configs.empty() ? options.configs.end() : options.configs.find(key.Canonical());
      bool config_rejected = false;
      auto kernel = kernels.Get(key, given != options.configs.end() ? &given->second : nullptr, soc, &config_rejected);
      if (!kernel.ok()) return kernel.status().WithContext("node '" + node.name + "'" + (config_rejected ? " config" : ""));
      const sim::KernelEstimate* est = &kernel->estimate;
      OpRecord& r = it.record;
      r.name = node.name;
      r.op_type = node.op_type;
      r.node = idx;
      const bool vector = kernel->op == sim::PreparedProblem::Op::kVector;
      // A fused cube op runs its epilogue on the vector cores: msprof's mixed task.
      const bool mix =
          kernel->op == sim::PreparedProblem::Op::kFusedCube || kernel->op == sim::PreparedProblem::Op::kAttention;
      r.task_type = vector ? "AI_VECTOR_CORE" : mix ? "MIX_AIC" : "AI_CORE";
      r.unit_cores = vector ? soc.vector_core_cnt : soc.ai_core_cnt;
      r.estimate = *est;
      r.launch_us = est->launch_us;
      r.duration_us = est->duration_us;
      r.roofline_us = sim::RooflineUs(*est, soc);
      it.latency_us = est->latency_us;
      if (!options.step_time_only) DescribeOp(key, node, r);
    }
    fwd_item[idx] = static_cast<int>(items.size());
    items.push_back(std::move(it));
  }

  // Backward items, in reverse topological order: node i's backward waits for the
  // backward of every consumer of its outputs, and the first ones for the whole forward.
  std::vector<int> bwd_item(n, -1);
  if (graph.training) {
    const int forward_count = static_cast<int>(items.size());
    for (auto r = order.rbegin(); r != order.rend(); ++r) {
      const int idx = *r;
      const GraphNode& node = graph.nodes[idx];
      Item it;
      it.node = idx;
      it.backward = true;
      it.view = node.IsView();
      for (const auto& out : node.outputs) {
        for (int c : consumers[out.name]) it.deps.push_back(bwd_item[c]);
      }
      it.after_forward = forward_count > 0;  // one flag, not forward_count deps each
      if (!it.view) {
        it.record = items[fwd_item[idx]].record;
        it.record.name = node.name + "_grad";
        it.record.op_type = node.op_type + "Grad";
        it.record.backward = true;
        sim::KernelEstimate& e = it.record.estimate;
        auto cube = CubeBackward(NodeOpKey(index, node), soc, options.configs, kernels);
        if (!cube.ok()) return cube.status().WithContext("node '" + node.name + "' backward");
        if (cube->has_value()) {
          e = **cube;
          it.record.launch_us = e.launch_us;
          it.record.roofline_us = sim::RooflineUs(e, soc);
        } else {
          for (double& b : e.busy_us) b *= kBackwardFactor;
          e.duration_us *= kBackwardFactor;
          e.latency_us = e.launch_us + e.duration_us;
          e.hbm_bytes *= kBackwardFactor;
          e.l2_bytes *= kBackwardFactor;
          e.compulsory_bytes *= kBackwardFactor;
          e.flops *= kBackwardFactor;
          it.record.roofline_us *= kBackwardFactor;
        }
        it.record.duration_us = e.duration_us;
        it.latency_us = e.latency_us;
      }
      bwd_item[idx] = static_cast<int>(items.size());
      items.push_back(std::move(it));
    }
  }

  RunProfile run;
  run.model = graph.name;
  run.soc = soc.name;
  run.devices = graph.devices;
  run.training = graph.training;
  run.hbm_bandwidth_gbps = static_cast<int>(soc.hbm_bandwidth_gbps);

  // Host preprocessing, then every graph input over PCIe, one copy after the other.
  const double pcie_bytes_per_us = soc.pcie_bandwidth_gbps * 1e3;
  double t = 0;
  if (graph.host_preprocess_us > 0) {
    run.transfers.push_back({"host_preprocess", "Host", 0, graph.host_preprocess_us, 0});
    t = graph.host_preprocess_us;
  }
  run.host_us = graph.host_preprocess_us;
  std::map<std::string, double> h2d_start;
  for (const auto& in : graph.inputs) {
    if (graph.IsResident(in.name)) continue;  // on the device already (a KV cache)
    double dur = soc.pcie_latency_us + static_cast<double>(in.Bytes()) / pcie_bytes_per_us;
    run.transfers.push_back({"H2D " + in.name, "PCIe", t, dur, static_cast<double>(in.Bytes())});
    h2d_start[in.name] = t;
    t += dur;
    run.h2d_us += dur;
  }
  run.compute_start_us = t;

  // The list schedule: ready ops issue in topological order (one that is ready but does
  // not fit blocks every later op, so none starves), at most two ops at a time and two
  // only when both are small; two at once share HBM (ShareHbm).
  // Only items whose dependencies are all done are looked at (`ready`, in index order):
  // scanning every unstarted item per step was quadratic (a 20,000-node chain took 3 s).
  std::vector<Item*> running;
  const size_t forward_count = static_cast<size_t>(
      std::count_if(items.begin(), items.end(), [](const Item& it) { return !it.backward; }));
  std::vector<std::vector<size_t>> waiting_on(items.size());  // item -> the items it unblocks
  std::vector<size_t> missing(items.size(), 0);               // dependencies not done yet
  std::set<size_t> ready;
  for (size_t i = 0; i < items.size(); ++i) {
    for (int d : items[i].deps) waiting_on[static_cast<size_t>(d)].push_back(i);
    missing[i] = items[i].deps.size() + (items[i].after_forward ? 1 : 0);
    if (missing[i] == 0) ready.insert(i);
  }
  size_t forward_done = 0;
  auto unblock = [&](size_t i) {
    if (--missing[i] == 0) ready.insert(i);
  };
  auto mark_done = [&](Item& it) {
    it.done = true;
    for (size_t w : waiting_on[static_cast<size_t>(&it - items.data())]) unblock(w);
    if (!it.backward && ++forward_done == forward_count) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].after_forward) unblock(i);
      }
    }
  };
  size_t finished = 0;
  while (finished < items.size()) {
    bool progress = true;
    while (progress) {
      progress = false;
      // Dependencies come earlier in `items`, so what an item unblocks is later in `ready`
      // and seen in the same pass, as a scan in index order would.
      for (auto next = ready.begin(); next != ready.end();) {
        Item& it = items[*next];
        if (it.view) {
          next = ready.erase(next);
          it.started = true;
          it.begin_us = it.end_us = t;
          mark_done(it);
          ++finished;
          progress = true;
          continue;
        }
        bool fits = running.empty() ||
                    (options.concurrent_streams && running.size() == 1 && Small(*running[0]) && Small(it));
        if (!fits) break;
        int stream = 0;
        if (!running.empty() && running[0]->record.stream == 0) stream = 1;
        it.started = true;
        it.begin_us = t;
        it.end_us = t + it.latency_us;
        it.left_us = it.latency_us;
        it.updated_us = t;
        it.record.stream = stream;
        it.record.start_us = t + it.record.launch_us;
        running.push_back(&it);
        next = ready.erase(next);
        progress = true;
      }
    }
    if (finished == items.size()) break;  // the last ops were views: they finished at once
    if (running.empty()) {
      return Internal("graph schedule made no progress at " + std::to_string(t) + " us (a bug)");
    }
    ShareHbm(running, t, soc);
    auto first = std::min_element(running.begin(), running.end(),
                                  [](const Item* a, const Item* b) { return a->end_us < b->end_us; });
    t = (*first)->end_us;
    for (auto r = running.begin(); r != running.end();) {
      if ((*r)->end_us <= t) {
        Item& it = **r;
        if (it.end_us - it.begin_us > it.latency_us * (1 + 1e-9)) {  // slowed by a concurrent op
          it.record.duration_us = it.end_us - it.begin_us - it.record.launch_us;
          it.record.estimate.duration_us = it.record.duration_us;
          it.record.estimate.latency_us = it.end_us - it.begin_us;
        }
        mark_done(it);
        ++finished;
        r = running.erase(r);
      } else {
        ++r;
      }
    }
  }
  double compute_end = run.compute_start_us;
  for (const auto& it : items) compute_end = std::max(compute_end, it.end_us);
  run.compute_end_us = compute_end;

  // Gradient all-reduce, one bucket per backward op with weights, on one HCCL ring that
  // serves buckets in the order their backward ops finish.
  std::map<int, double> grad_reduced_at;  // node -> when its gradient buffer may be freed
  if (graph.training) {
    std::vector<const Item*> with_grads;
    for (const auto& it : items) {
      if (it.backward && !it.view) with_grads.push_back(&it);
    }
    std::sort(with_grads.begin(), with_grads.end(),
              [](const Item* a, const Item* b) { return a->end_us < b->end_us; });
    double hccl_free = 0;
    for (const Item* it : with_grads) {
      double bytes = 0;
      for (const auto& in : graph.nodes[it->node].inputs) {
        if (index.IsWeight(in)) bytes += static_cast<double>(index.FindTensor(in)->Bytes());
      }
      grad_reduced_at[it->node] = it->end_us;
      if (bytes <= 0) continue;
      run.gradient_bytes += bytes;
      if (graph.devices <= 1) continue;
      double start = std::max(it->end_us, hccl_free);
      double dur = RingAllReduceUs(bytes, graph.devices, soc);
      run.transfers.push_back({"allreduce " + graph.nodes[it->node].name, "HCCL", start, dur, bytes});
      hccl_free = start + dur;
      grad_reduced_at[it->node] = hccl_free;
      run.comm_us += dur;
    }
    run.exposed_comm_us = std::max(0.0, hccl_free - compute_end);
  }

  // Graph outputs back to the host after the last op.
  double d2h_t = compute_end;
  std::map<std::string, double> output_freed;
  for (const auto& out : graph.outputs) {
    if (graph.IsResident(out)) continue;  // stays on the device for the next step
    const NamedTensor* tensor = index.FindTensor(out);
    double dur = soc.pcie_latency_us + static_cast<double>(tensor->Bytes()) / pcie_bytes_per_us;
    run.transfers.push_back({"D2H " + out, "PCIe", d2h_t, dur, static_cast<double>(tensor->Bytes())});
    d2h_t += dur;
    run.d2h_us += dur;
    output_freed[out] = d2h_t;
  }
  double step_end = d2h_t;
  for (const auto& tr : run.transfers) step_end = std::max(step_end, tr.EndUs());
  run.step_us = step_end;

  // In start order, ties in item order; records are moved once (items' are not read again).
  std::vector<size_t> kernel_items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].view) kernel_items.push_back(i);
  }
  std::stable_sort(kernel_items.begin(), kernel_items.end(),
                   [&](size_t a, size_t b) { return items[a].record.start_us < items[b].record.start_us; });
  run.ops.reserve(kernel_items.size());
  for (size_t i : kernel_items) run.ops.push_back(std::move(items[i].record));
  std::stable_sort(run.transfers.begin(), run.transfers.end(),
                   [](const TransferRecord& a, const TransferRecord& b) { return a.start_us < b.start_us; });

  // Utilisation: busy core-time over the step; HBM bytes over the time any op ran.
  double core_time = 0;
  std::vector<std::pair<double, double>> intervals;
  for (const auto& op : run.ops) {
    core_time += op.duration_us * static_cast<double>(op.estimate.block_dim) / op.unit_cores;
    run.hbm_bytes += op.estimate.hbm_bytes;
    intervals.emplace_back(op.start_us, op.EndUs());
  }
  std::sort(intervals.begin(), intervals.end());
  double cover_end = -1;
  for (const auto& [s, e] : intervals) {
    if (s >= cover_end) {
      run.device_busy_us += e - s;
      cover_end = e;
    } else if (e > cover_end) {
      run.device_busy_us += e - cover_end;
      cover_end = e;
    }
  }
  run.ai_core_utilisation = run.step_us > 0 ? core_time / run.step_us : 0;
  run.memory_bw_utilisation =
      run.device_busy_us > 0 ? run.hbm_bytes / (run.device_busy_us * soc.hbm_bandwidth_gbps * 1e3) : 0;
  if (options.step_time_only) return run;

  // Buffers and their lifetimes [alloc, free): a view's output shares its input's buffer.
  std::map<std::string, std::string> root;  // tensor -> tensor owning its buffer
  for (int idx : order) {
    const GraphNode& node = graph.nodes[idx];
    for (const auto& out : node.outputs) {
      root[out.name] = node.IsView() ? (root.count(node.inputs[0]) ? root[node.inputs[0]] : node.inputs[0]) : out.name;
    }
  }
  for (const auto& in : graph.inputs) root[in.name] = in.name;
  std::map<std::string, Buffer> buffers;
  int64_t weight_bytes = 0;
  for (const auto& w : graph.weights) {
    weight_bytes += w.Bytes();
    buffers[w.name] = {w.Bytes(), 0, run.step_us};
  }
  for (const auto& in : graph.inputs) {
    buffers[in.name] = graph.IsResident(in.name) ? Buffer{in.Bytes(), 0, run.step_us}
                                                 : Buffer{in.Bytes(), h2d_start[in.name], h2d_start[in.name]};
  }
  for (int idx : order) {
    const GraphNode& node = graph.nodes[idx];
    if (node.IsView()) continue;
    const Item& it = items[fwd_item[idx]];
    for (const auto& out : node.outputs) buffers[out.name] = {out.Bytes(), it.begin_us, it.end_us};
  }
  auto extend = [&](const std::string& tensor, double until) {
    auto b = buffers.find(root[tensor]);
    if (b != buffers.end() && !index.IsWeight(tensor)) b->second.free_us = std::max(b->second.free_us, until);
  };
  for (int idx : order) {
    const GraphNode& node = graph.nodes[idx];
    for (const auto& in : node.inputs) {
      extend(in, items[fwd_item[idx]].end_us);
      // Training keeps every forward input until its consumer's backward has run.
      if (graph.training) extend(in, items[bwd_item[idx]].end_us);
    }
  }
  for (const auto& [tensor, freed] : output_freed) extend(tensor, freed);
  std::vector<Buffer> all;
  for (const auto& [name, b] : buffers) all.push_back(b);
  if (graph.training) {
    for (int idx : order) {
      const GraphNode& node = graph.nodes[idx];
      if (node.IsView()) continue;
      const Item& bwd = items[bwd_item[idx]];
      for (const auto& in : node.inputs) {
        const NamedTensor* tensor = index.FindTensor(in);
        if (index.IsWeight(in)) {
          // The weight's gradient lives until its bucket is all-reduced.
          all.push_back({tensor->Bytes(), bwd.begin_us, std::max(bwd.end_us, grad_reduced_at[idx])});
        } else {
          // The activation gradient lives until the producer's backward consumed it.
          int p = index.ProducerOf(in);
          double until = p >= 0 ? std::max(bwd.end_us, items[bwd_item[p]].end_us) : bwd.end_us;
          all.push_back({tensor->Bytes(), bwd.begin_us, until});
        }
      }
    }
  }
  for (auto& b : all) b.free_us = std::max(b.free_us, b.alloc_us);
  // A zero-length lifetime still needs its bytes for an instant: give it a sliver so the
  // live-set and overlap tests see it.
  for (auto& b : all) if (b.free_us <= b.alloc_us) b.free_us = b.alloc_us + 1e-6;
  run.memory = PlanMemory(std::move(all), weight_bytes);

  // Producer -> consumer edges for fusion advice.
  for (int idx : order) {
    const GraphNode& node = graph.nodes[idx];
    if (node.IsView()) continue;
    for (const auto& out : node.outputs) {
      // Follow views to the kernels that read the data.
      std::vector<std::string> frontier{out.name};
      std::vector<int> readers;
      while (!frontier.empty()) {
        std::string tname = frontier.back();
        frontier.pop_back();
        for (int c : consumers[tname]) {
          if (graph.nodes[c].IsView()) {
            for (const auto& o : graph.nodes[c].outputs) frontier.push_back(o.name);
          } else {
            readers.push_back(c);
          }
        }
      }
      for (int c : readers) {
        run.edges.push_back({node.name, graph.nodes[c].name, out.name, out.Bytes(), static_cast<int>(readers.size())});
      }
    }
  }
  return run;
}

}  // namespace tunefleet::profile
