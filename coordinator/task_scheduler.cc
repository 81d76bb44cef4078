#include "coordinator/task_scheduler.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace tunefleet::coordinator {

TaskScheduler::TaskScheduler(Policy policy, std::vector<double> weights, Options options)
    : policy_(policy), options_(options) {
  for (double w : weights) {
    TaskState t;
    t.weight = w;
    tasks_.push_back(std::move(t));
  }
}

size_t TaskScheduler::Next() {
  assert(!AllExhausted());
  if (policy_ == Policy::kRoundRobin) {
    for (size_t n = 0; n < tasks_.size(); ++n) {
      size_t i = (round_robin_ + n) % tasks_.size();
      if (!tasks_[i].exhausted) {
        round_robin_ = i + 1;
        return i;
      }
    }
    return 0;
  }
  // Warm-up: a task never served has no estimate; serve it first.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!tasks_[i].exhausted && !tasks_[i].served) {
      tasks_[i].served = true;
      return i;
    }
  }
  size_t best = tasks_.size();
  double best_gradient = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    // A served task whose first results are still out has no estimate yet: wait for it.
    if (tasks_[i].exhausted || tasks_[i].history.empty()) continue;
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
      if (!tasks_[i].exhausted) {
        round_robin_ = i + 1;
        return i;
      }
    }
  }
  return best;
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
  // bounded by reaching zero over as many evaluations again. Shrinks as a task matures.
  double forward = -best_now / static_cast<double>(std::max<uint64_t>(spent_now, 1));
  return t.weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
}

void TaskScheduler::Update(size_t task, uint64_t evaluations, double best_us) {
  TaskState& t = tasks_[task];
  t.spent += evaluations;
  t.history.emplace_back(t.spent, best_us);
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
