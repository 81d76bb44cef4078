// TaskScheduler: splits one submission's evaluation budget across its op tasks. The
// gradient policy follows Ansor's task scheduler (Zheng et al., OSDI 2020, sec. 6): the
// next batch goes to the task whose expected reduction of total model latency per
// evaluation is largest -- its weight (occurrences x share of the model) times a blend of
// its recent improvement rate and an optimistic guess of what is left. Round-robin is the
// baseline. Pure and deterministic; owned by the coordinator's loop thread (or a bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
  };

  // weights[i] = how many times task i's op runs per model step (its share of the model).
  TaskScheduler(Policy policy, std::vector<double> weights, Options options);
  TaskScheduler(Policy policy, std::vector<double> weights)
      : TaskScheduler(policy, std::move(weights), Options{}) {}

  // The task that should get the next batch. Every task is served once first (warm-up),
  // since nothing is known about a task before its baseline and first batch; a task
  // counts as served as soon as Next() returns it, so asynchronous callers that ask
  // again before any Update() still spread the warm-up over all tasks.
  // Requires at least one task that is not exhausted.
  size_t Next();
  // Task i measured `evaluations` more configs; its best latency is now best_us.
  void Update(size_t task, uint64_t evaluations, double best_us);
  // Task i has nothing left to propose: never chosen again.
  void MarkExhausted(size_t task);
  bool AllExhausted() const;

  // Sum over tasks of weight x best latency: the model latency being minimised.
  double ModelLatencyUs() const;
  uint64_t spent(size_t task) const { return tasks_[task].spent; }

 private:
  struct TaskState {
    double weight = 1;
    uint64_t spent = 0;
    bool exhausted = false;
    bool served = false;  // returned by Next() at least once
    // (evaluations spent, best latency) after every batch, oldest first.
    std::vector<std::pair<uint64_t, double>> history;
  };
  double Gradient(const TaskState& t) const;

  Policy policy_;
  Options options_;
  std::vector<TaskState> tasks_;
  size_t round_robin_ = 0;
};

}  // namespace tunefleet::coordinator
