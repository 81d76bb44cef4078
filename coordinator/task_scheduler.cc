#include "coordinator/task_scheduler.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>

#include "coordinator/strategies/checkpoint.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {

TaskScheduler::TaskScheduler(Policy policy, const std::vector<double>& weights, Options options)
    : policy_(policy), options_(options) {
  for (double w : weights) {
    TaskState t;
    t.weight = w;
    tasks_.push_back(std::move(t));
  }
}

TaskScheduler::TaskScheduler(Policy policy, const std::vector<TaskInfo>& tasks, Options options)
    : policy_(policy), options_(options) {
  std::map<std::string, int> group_ids;
  for (const TaskInfo& info : tasks) {
    TaskState t;
    t.weight = info.weight;
    t.flops = info.flops;
    t.floor_us = info.floor_us;
    // Without FLOPs a task can neither be compared nor serve as a yardstick.
    if (info.flops > 0 && !info.group.empty()) {
      t.group = group_ids.emplace(info.group, static_cast<int>(group_ids.size())).first->second;
    }
    tasks_.push_back(std::move(t));
  }
}

TaskScheduler::TaskInfo TaskScheduler::InfoFor(const OpKey& key, const SocSpec* soc, double weight) {
  TaskInfo info;
  info.weight = weight;
  info.flops = CubeUsefulFlops(key);
  if (soc != nullptr) info.floor_us = CubeLatencyFloorUs(key, *soc);
  info.group = key.op_type + "/" + (key.inputs.empty() ? std::string() : key.inputs.front().dtype);
  if (key.op_type == "Conv2D" && key.inputs.size() > 1 && key.inputs[1].shape.size() == 4) {
    info.group += "/" + std::to_string(key.inputs[1].shape[2]) + "x" + std::to_string(key.inputs[1].shape[3]);
  }
  return info;
}

size_t TaskScheduler::Next() {
  assert(!AllExhausted());
  const size_t i = Next([](size_t) { return true; });
  return i == tasks_.size() ? 0 : i;
}

size_t TaskScheduler::Next(const std::function<bool(size_t)>& eligible) {
  auto open = [&](size_t i) { return !tasks_[i].exhausted && eligible(i); };
  if (policy_ == Policy::kRoundRobin) {
    for (size_t n = 0; n < tasks_.size(); ++n) {
      size_t i = (round_robin_ + n) % tasks_.size();
      if (open(i)) {
        round_robin_ = i + 1;
        return i;
      }
    }
    return tasks_.size();
  }
  // Warm-up: a task never served has no estimate; serve it first.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (open(i) && !tasks_[i].served) {
      tasks_[i].served = true;
      return i;
    }
  }
  size_t best = tasks_.size();
  double best_gradient = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    // A served task whose first results are still out has no estimate yet: wait for it.
    if (!open(i) || tasks_[i].history.empty()) continue;
    double g = Gradient(tasks_[i]);  // <= 0: latency reduction per evaluation
    if (g < best_gradient) {         // ties go to the lower index: deterministic
      best_gradient = g;
      best = i;
    }
  }
  if (best == tasks_.size()) {
    // Everything is served and nothing has reported yet: fall back to round-robin.
    for (size_t n = 0; n < tasks_.size(); ++n) {
      size_t i = (round_robin_ + n) % tasks_.size();
      if (open(i)) {
        round_robin_ = i + 1;
        return i;
      }
    }
  }
  return best;
}

double TaskScheduler::GroupBestThroughput(const TaskState& t) const {
  if (t.group < 0) return 0;
  double best = 0;
  size_t members = 0;
  for (const TaskState& k : tasks_) {
    if (k.group != t.group) continue;
    ++members;
    if (!k.history.empty() && k.history.back().second > 0) {
      best = std::max(best, k.flops / k.history.back().second);
    }
  }
  return members > 1 ? best : 0;
}

double TaskScheduler::Gradient(const TaskState& t) const {
  const auto& [spent_now, best_now] = t.history.back();
  // Backward: observed improvement rate over the last few batches.
  size_t back = std::min(options_.window_batches, t.history.size() - 1);
  double backward = 0;
  if (back > 0) {
    const auto& [spent_then, best_then] = t.history[t.history.size() - 1 - back];
    if (spent_now > spent_then) {
      backward = (best_now - best_then) / static_cast<double>(spent_now - spent_then);
    }
  }
  // Forward (optimistic): as if the latency could keep falling at its average rate so far,
  // bounded by reaching the floor (zero when unknown) over as many evaluations again.
  // Shrinks as a task matures, and for a task already near its roofline (a memory-bound
  // conv its default tiling nearly saturates) it is small from the start.
  double forward = -std::max(0.0, best_now - t.floor_us) /
                   static_cast<double>(std::max<uint64_t>(spent_now, 1));
  // Similarity (Ansor): a task of the same kind already runs at `best_throughput`, so this
  // one could reach beta x its FLOPs at that rate within a batch. Only binds for a task
  // well behind its group, and unlike the term above it does not fade with evaluations
  // (MaybeLeaveGroup ends it). Not when the task's own floor is above that target: then
  // launch or memory bounds it, not tuning (BERT's pooler MatMul, M = 32).
  double best_throughput = GroupBestThroughput(t);
  if (best_throughput > 0) {
    double reachable = options_.beta * t.flops / best_throughput;
    double step = static_cast<double>(std::max<uint64_t>(options_.batch_evaluations, 1));
    if (reachable > t.floor_us) forward = std::min(forward, (reachable - best_now) / step);
  }
  return t.weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
}

void TaskScheduler::Update(size_t task, uint64_t evaluations, double best_us) {
  TaskState& t = tasks_[task];
  t.spent += evaluations;
  t.history.emplace_back(t.spent, best_us);
  if (t.history.size() > options_.window_batches + 1) t.history.erase(t.history.begin());
  MaybeLeaveGroup(task);
}

std::string TaskScheduler::Checkpoint() const {
  CheckpointWriter w("task-scheduler");
  w.U64(tasks_.size());
  w.U64(round_robin_);
  for (const TaskState& t : tasks_) {
    w.U64(static_cast<uint64_t>(static_cast<int64_t>(t.group)));
    w.U64(t.spent);
    w.U64((t.exhausted ? 1 : 0) | (t.served ? 2 : 0));
    w.U64(t.history.size());
    for (const auto& [spent, best] : t.history) {
      w.U64(spent);
      w.F64(best);
    }
  }
  return w.Take();
}

Status TaskScheduler::Restore(std::string_view bytes) {
  CheckpointReader r(bytes, "task-scheduler");
  if (r.U64() != tasks_.size() && !r.failed()) return InvalidArgument("the scheduler checkpoint has another number of tasks");
  std::vector<TaskState> tasks = tasks_;
  const uint64_t round_robin = r.U64();
  for (TaskState& t : tasks) {
    t.group = static_cast<int>(static_cast<int64_t>(r.U64()));
    t.spent = r.U64();
    const uint64_t flags = r.U64();
    t.exhausted = flags & 1;
    t.served = flags & 2;
    const uint64_t n = r.U64();
    if (n > options_.window_batches + 1) return InvalidArgument("the scheduler checkpoint's history is longer than its window");
    t.history.clear();
    for (uint64_t i = 0; i < n && !r.failed(); ++i) {
      const uint64_t spent = r.U64();
      t.history.emplace_back(spent, r.F64());
    }
    if (t.history.empty()) t.served = false;
  }
  TF_RETURN_IF_ERROR(r.status());
  tasks_ = std::move(tasks);
  round_robin_ = round_robin;
  return Status::Ok();
}

void TaskScheduler::MaybeLeaveGroup(size_t task) {
  TaskState& t = tasks_[task];
  double best_throughput = GroupBestThroughput(t);
  if (best_throughput <= 0 || t.history.back().second <= 0) return;
  if (t.flops / t.history.back().second >= best_throughput / options_.beta) return;
  // TVM leaves a task's group after 5 rounds more than any other member got.
  uint64_t others = 0;
  for (size_t k = 0; k < tasks_.size(); ++k) {
    if (k != task && tasks_[k].group == t.group) others = std::max(others, tasks_[k].spent);
  }
  if (t.spent > others + 5 * options_.batch_evaluations) t.group = -1;
}

void TaskScheduler::MarkExhausted(size_t task) { tasks_[task].exhausted = true; }

bool TaskScheduler::AllExhausted() const {
  return std::all_of(tasks_.begin(), tasks_.end(), [](const TaskState& t) { return t.exhausted; });
}

double TaskScheduler::ModelLatencyUs() const {
  double sum = 0;
  for (const TaskState& t : tasks_) {
    if (!t.history.empty()) sum += t.weight * t.history.back().second;
  }
  return sum;
}

}  // namespace tunefleet::coordinator
