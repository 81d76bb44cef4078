// TaskScheduler: splits one submission's evaluation budget across its op tasks. The
// gradient policy follows Ansor's task scheduler (Zheng et al., OSDI 2020, sec. 6): the
// next batch goes to the task whose expected reduction of total model latency per
// evaluation is largest -- its weight (occurrences x share of the model) times a blend of
// its recent improvement rate and an optimistic guess of what is left: the distance to the
// op's latency floor (its roofline) spread over as many evaluations again, or, for a task
// far behind the FLOP/s its similar tasks already reach, the way to beta x that within one
// batch (Ansor's similarity term). Round-robin is the baseline. Pure and deterministic;
// owned by the coordinator's loop thread (or a bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tunefleet/common/op_key.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/soc_spec.h"

namespace tunefleet::coordinator {

class TaskScheduler {
 public:
  enum class Policy { kRoundRobin, kGradient };
  struct Options {
    // Weight of the observed (backward) improvement rate against the optimistic
    // forward guess; Ansor's alpha.
    double alpha = 0.2;
    // Evaluations over which the backward rate is measured (Ansor's delta-t, in batches).
    size_t window_batches = 3;
    // Similarity: a task could reach beta x the latency its FLOPs would take at the best
    // throughput (FLOP/s) of its group within one batch. Ansor's beta: 2 in TVM's
    // auto_scheduler (python/tvm/auto_scheduler/task_scheduler.py); 1.5 and 3 measured no
    // better on bench/task_scheduler_bench.
    double beta = 2;
    // Evaluations in one batch (one Next()): the step of the similarity estimate, so it
    // is a rate per evaluation like the other two terms.
    uint64_t batch_evaluations = 16;
  };
  struct TaskInfo {
    double weight = 1;  // how many times the task's op runs per model step
    double flops = 0;   // useful work of one run; 0 = unknown: no similarity estimate
    std::string group;  // tasks with the same non-empty group are similar
    double floor_us = 0;  // no config is faster (launch + roofline); 0 = unknown
  };

  // weights[i] = how many times task i's op runs per model step (its share of the model);
  // no FLOPs or groups, so no similarity estimate.
  TaskScheduler(Policy policy, const std::vector<double>& weights, Options options);
  TaskScheduler(Policy policy, const std::vector<double>& weights)
      : TaskScheduler(policy, weights, Options{}) {}
  TaskScheduler(Policy policy, const std::vector<TaskInfo>& tasks, Options options);

  // The TaskInfo of a task tuning `key`: its cube FLOPs (CubeUsefulFlops), its floor on
  // `soc` (CubeLatencyFloorUs; none when soc is null) and the group "<op type>/<dtype>",
  // plus "/<kh>x<kw>" for Conv2D: a 1x1 conv is a plain GEMM over channels, a 3x3 one
  // gathers a window, and their reachable FLOP/s differ by that structure, not by tuning.
  static TaskInfo InfoFor(const OpKey& key, const SocSpec* soc, double weight);

  // The task that should get the next batch. Every task is served once first (warm-up),
  // since nothing is known about a task before its baseline and first batch; a task
  // counts as served as soon as Next() returns it, so asynchronous callers that ask
  // again before any Update() still spread the warm-up over all tasks.
  // Requires at least one task that is not exhausted.
  size_t Next();
  // The same choice among the tasks `eligible` admits (those a worker can serve now);
  // size() when none is. Next() is Next with every task eligible.
  size_t Next(const std::function<bool(size_t)>& eligible);
  // Task i measured `evaluations` more configs; its best latency is now best_us.
  void Update(size_t task, uint64_t evaluations, double best_us);
  // Task i has nothing left to propose: never chosen again.
  void MarkExhausted(size_t task);
  bool AllExhausted() const;

  // Sum over tasks of weight x best latency: the model latency being minimised.
  double ModelLatencyUs() const;
  uint64_t spent(size_t task) const { return tasks_[task].spent; }
  // Whether task i is still in its similarity group (false: it never had one, or it left).
  bool InSimilarityGroup(size_t task) const { return tasks_[task].group >= 0; }

  // Everything Next() and Update() depend on, as bytes (of each task's history, the last
  // window_batches + 1 entries: all Gradient reads). Restore() on a scheduler built with
  // the same tasks and options continues exactly, except that a task served but never
  // updated is served again first (its first job was lost with the process that sent it).
  // kInvalidArgument when the bytes are not such a checkpoint.
  std::string Checkpoint() const;
  Status Restore(std::string_view bytes);

 private:
  struct TaskState {
    double weight = 1;
    double flops = 0;
    double floor_us = 0;
    int group = -1;  // index of its similarity group, -1: none (or left it)
    uint64_t spent = 0;
    bool exhausted = false;
    bool served = false;  // returned by Next() at least once
    // (evaluations spent, best latency) after each of the last window_batches + 1
    // batches, oldest first.
    std::vector<std::pair<uint64_t, double>> history;
  };
  double Gradient(const TaskState& t) const;
  // Best FLOP/s among the measured tasks of t's group; 0 when t has no group or is alone
  // in it.
  double GroupBestThroughput(const TaskState& t) const;
  // Ansor's adjustment: a task that had far more evaluations than the rest of its group
  // and still runs under 1/beta of the group's best throughput is not similar after all.
  void MaybeLeaveGroup(size_t task);

  Policy policy_;
  Options options_;
  std::vector<TaskState> tasks_;
  size_t round_robin_ = 0;
};

}  // namespace tunefleet::coordinator
