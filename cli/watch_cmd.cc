#include "cli/watch_cmd.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>

#include <fmt/chrono.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/report.h"
#include "tunefleet/common/signals.h"

namespace tunefleet::cli {
namespace {

// How long the coordinator may hold a turn with nothing new.
constexpr std::chrono::milliseconds kTurnWait(1000);
// An empty answer that came back sooner than this was not held (the coordinator holds a
// bounded number of watches): wait this long before asking again, not spin.
constexpr std::chrono::milliseconds kEmptyTurnPause(250);
// At most one turn this often: a held turn is answered by the first event, and what
// happens in the next 200 ms comes in one answer, not one round trip per event (a busy
// submission's watcher otherwise asked once per coordinator loop turn).
constexpr std::chrono::milliseconds kMinTurnInterval(200);
// How long a coordinator may stay unreachable (restarting, a stalled loop) before the
// watch gives up.
constexpr std::chrono::seconds kReconnectFor(120);

// Each task's label: the names the submission gave its ops (several ops may share one
// task), else the op.
std::map<uint64_t, std::string> TaskLabels(const client::StatusView& st) {
  std::map<uint64_t, std::string> labels;
  for (const auto& t : st.tasks) {
    std::string& label = labels[t.task_id];
    if (t.name.empty()) {
      if (label.empty()) label = t.key.Display();
    } else {
      label = label.empty() || label == t.key.Display() ? t.name : label + ", " + t.name;
    }
  }
  return labels;
}

std::string Clock(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  return fmt::format("{:%H:%M:%S}", fmt::localtime(secs));
}

std::string Gain(const client::ProgressView& e) {
  if (e.baseline_latency_us <= 0 || e.best_latency_us <= 0) return "";
  return fmt::format(" ({:.2f}x over the default)", e.baseline_latency_us / e.best_latency_us);
}

std::string EventText(const client::ProgressView& e, const std::string& label) {
  const std::string head = fmt::format("{}  task {}  ", Clock(e.unix_ms), e.task_id);
  if (e.kind == "started") return head + "started     " + label;
  if (e.kind == "improved") {
    return head + fmt::format("best {:.3f} us{} after {} evaluations", e.best_latency_us, Gain(e), e.evaluated);
  }
  if (e.kind == "finished") {
    if (e.best_latency_us <= 0) return head + fmt::format("{} without a config that ran, after {} evaluations", e.state, e.evaluated);
    return head + fmt::format("{}: best {:.3f} us{} after {} evaluations", e.state, e.best_latency_us, Gain(e), e.evaluated);
  }
  return head + e.kind;
}

nlohmann::json EventJson(uint64_t submission, const client::ProgressView& e, const std::string& label) {
  nlohmann::json j{{"submission_id", submission}, {"seq", e.seq},
                   {"task_id", e.task_id}, {"op", label},
                   {"event", e.kind},       {"unix_ms", e.unix_ms},
                   {"evaluated", e.evaluated}};
  if (e.best_latency_us > 0) j["best_latency_us"] = e.best_latency_us;
  if (e.baseline_latency_us > 0) j["baseline_latency_us"] = e.baseline_latency_us;
  if (e.kind == "finished") j["state"] = e.state;
  return j;
}

// The watch itself; RunWatch owns the interrupt flag.
int Follow(client::Client& c, uint64_t submission, bool json, const std::atomic<bool>& interrupted) {
  const bool tty = !json && isatty(fileno(stderr));
  auto stopped = [&] {
    if (tty) fmt::print(stderr, "\r\x1b[K");
    fmt::print(stderr, "tunefleet: stopped watching; submission {0} keeps running: `tunefleet watch {0}` "
               "follows it again\n", submission);
    return kExitInterrupted;
  };
  auto first = c.GetStatus(submission);
  if (!first.ok()) return interrupted.load() ? stopped() : Fail(first.status());
  std::map<uint64_t, std::string> labels = TaskLabels(*first);
  if (!json) fmt::print("submission {}: {} task(s){}\n", submission, labels.size(),
                        first->priority ? fmt::format(", priority {}", first->priority) : "");
  // Held turns need a reply timeout that outlasts them, with room for the coordinator's
  // loop turn; a very short --timeout-ms asks without holding.
  const auto wait = c.timeout() >= std::chrono::milliseconds(200) ? std::min(kTurnWait, c.timeout() / 2)
                                                                   : std::chrono::milliseconds(0);
  uint64_t after = 0;
  bool unreachable = false;
  std::chrono::steady_clock::time_point unreachable_since{};
  auto pause = [&](std::chrono::milliseconds d) { SleepUnless(interrupted, d); };
  for (;;) {
    if (interrupted.load()) return stopped();
    const auto asked = std::chrono::steady_clock::now();
    auto turn = c.Watch(submission, after, wait);
    if (interrupted.load()) return stopped();
    if (!turn.ok()) {
      // A restarting coordinator, or one whose loop stalled: ask again (the new process
      // answers the old position with a gap) until kReconnectFor has passed.
      if (turn.status().code() != StatusCode::kUnavailable) return Fail(turn.status());
      if (!unreachable) {
        unreachable = true;
        unreachable_since = asked;
        if (tty) fmt::print(stderr, "\r\x1b[K");
        fmt::print(stderr, "tunefleet: the coordinator does not answer; still trying for {} s (Ctrl-C stops "
                   "watching)\n", kReconnectFor.count());
      } else if (std::chrono::steady_clock::now() - unreachable_since > kReconnectFor) {
        return Fail(turn.status());
      }
      pause(std::chrono::milliseconds(500));
      continue;
    }
    unreachable = false;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
    if (tty) fmt::print(stderr, "\r\x1b[K");
    if (turn->gap) {
      if (json) {
        fmt::print("{}\n", nlohmann::json{{"submission_id", submission}, {"event", "gap"}}.dump());
      } else {
        fmt::print("(some events were not kept by the coordinator -- it restarted, or many tasks reported at once; "
                   "`tunefleet status {}` shows where each task stands)\n", submission);
      }
    }
    for (const auto& e : turn->events) {
      const std::string& label = labels.count(e.task_id) ? labels[e.task_id] : "";
      if (json) fmt::print("{}\n", EventJson(submission, e, label).dump());
      else fmt::print("{}\n", EventText(e, label));
    }
    std::fflush(stdout);
    after = turn->next;
    if (turn->done) break;
    if (tty) {
      fmt::print(stderr, "  tasks {}/{}  evaluations {}/{}", turn->finished_tasks, turn->tasks, turn->evaluated,
                 turn->planned);
      std::fflush(stderr);
    }
    // Before the next turn (this one's lines are out): no spin on answers that were not
    // held, and no round trip per event on a busy submission.
    if (turn->closing) {
      if (tty) fmt::print(stderr, "\r\x1b[K");
      fmt::print(stderr, "tunefleet: the coordinator is stopping; waiting up to {} s for it to come back (Ctrl-C "
                 "stops watching)\n", kReconnectFor.count());
      unreachable = true;  // the next turns' timeouts count towards kReconnectFor, unannounced
      unreachable_since = std::chrono::steady_clock::now();
      pause(std::chrono::milliseconds(500));
    } else if (turn->more) {
      // A backlog: read on at once.
    } else if (turn->events.empty() && !turn->gap && took < std::min<std::chrono::milliseconds>(wait, kEmptyTurnPause)) {
      pause(kEmptyTurnPause);
    } else if (took < kMinTurnInterval) {
      pause(kMinTurnInterval - took);
    }
  }
  // The end as status has it (whatever a gap hid): a task without a config, or cancelled,
  // is exit 4.
  auto last = c.GetStatus(submission);
  if (!last.ok()) return Fail(last.status());
  uint32_t ok = 0, failed = 0, cancelled = 0;
  for (const auto& t : last->tasks) {
    // A cancelled submission's shared task runs on for another: not this one's any more.
    if (t.state == "cancelled" || (last->cancelled && (t.state == "queued" || t.state == "running"))) ++cancelled;
    else if (t.has_best) ++ok;
    else ++failed;
  }
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"submission_id", submission}, {"event", "end"}, {"done", ok},
                                      {"failed", failed}, {"cancelled", cancelled}}
                           .dump());
  } else {
    fmt::print("submission {} finished: {} op(s) tuned, {} failed, {} cancelled (`tunefleet status {}` shows the "
               "configs)\n", submission, ok, failed, cancelled, submission);
  }
  return failed + cancelled ? kExitTaskFailed : kExitOk;
}

}  // namespace

int RunWatch(client::Client& c, uint64_t submission, bool json) {
  std::atomic<bool> interrupted{false};
  TerminationWatcher watcher([&] { interrupted.store(true); });
  c.AbandonWhen(&interrupted);
  const int rc = Follow(c, submission, json, interrupted);
  c.AbandonWhen(nullptr);  // the flag dies here
  return rc;
}

}  // namespace tunefleet::cli
