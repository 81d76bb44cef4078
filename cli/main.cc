// tunefleet: the user's command line. `tune` runs the embedded default (coordinator and
// worker slots in this process over inproc://, RocksDB in a local folder); `submit`,
// `status` and `lookup` talk to a running coordinator.
// Exit codes: 0 ok, 1 operational failure (retry), 2 bad input (fix it), 3 lookup miss,
// 4 a task ended without a successful config, 130 a --wait (or tune) interrupted by
// SIGINT/SIGTERM (the work goes on, or resumes on the next run), or profile, analyze,
// fuse or report interrupted (they only compute: cli::ExitInterrupted).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "cli/cache_cmd.h"
#include "cli/client.h"
#include "cli/embedded_coordinator.h"
#include "cli/ops_file.h"
#include "cli/profile_cmd.h"
#include "cli/report.h"
#include "cli/fuse_cmd.h"
#include "cli/verify_cmd.h"
#include "cli/watch_cmd.h"
#include "coordinator/lookup.h"
#include "coordinator/coordinator.h"
#include "tunefleet/common/curve.h"
#include "tunefleet/common/flag_checks.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/signals.h"
#include "worker/evaluator.h"
#include "worker/worker.h"

namespace tunefleet::cli {
namespace {

// A --wait given up on SIGINT/SIGTERM: the coordinator keeps the submission running.
int Interrupted(uint64_t submission) {
  fmt::print(stderr, "tunefleet: interrupted; submission {0} keeps running on the coordinator: "
             "`tunefleet status {0} --wait` follows it again\n", submission);
  return kExitInterrupted;
}

struct SubmitFlags {
  std::string ops_file;
  std::string soc;
  std::string strategy = "auto";
  uint64_t budget = 0;
  double budget_seconds = 0;
  uint64_t patience = 0;
  uint64_t seed = 1;
  bool force = false;
  bool warm_start = false;
  uint64_t total_budget = 0;
  std::string scheduler;  // empty: gradient, and not given (it only splits a --total-budget)
  uint32_t job_size = 0;
  int32_t priority = 0;
  bool json = false;
  ModelFlags model_flags;          // --dim; --resident (with --fuse: the graph fused)
  bool fuse = false;               // subgraph tuning first (fuse_cmd.h FuseForTuning)
  bool training = false;           // a model's training step (its backward GEMMs too)
  std::string fused_out;           // where the fused graph goes
};

void AddSubmitFlags(CLI::App* cmd, SubmitFlags& f) {
  cmd->add_option("--soc", f.soc, "SoC for every op (overrides the file's)");
  AddModelFlags(*cmd, f.model_flags);
  AddTrainingFlag(*cmd, f.training);
  cmd->add_option("--strategy", f.strategy,
                  "auto (exhaustive when the budget covers the whole space, or there is none and neither "
                  "--budget-seconds nor --patience may cut the walk short; else in the NPU's tiling spaces, "
                  "over 2^20 configs, ils below 75 evaluations and annealing from 75 or with no count; in smaller ones model), "
                  "exhaustive, random, annealing, genetic, ils (iterated local search), model")
      ->capture_default_str();
  cmd->add_option("--budget", f.budget, "evaluations per op; 0 = the whole valid space, or no count when --budget-seconds or --patience ends it")
      ->capture_default_str()
      ->check(Count());
  cmd->add_option("--budget-seconds", f.budget_seconds, "per op: stop handing out configs after this many seconds (0 = no limit)")
      ->check(AtLeast(0));
  cmd->add_option("--patience", f.patience, "per op: stop after this many evaluations without improvement (0 = no limit)")
      ->check(Count());
  cmd->add_option("--seed", f.seed, "seed of the strategy and of measurement noise")
      ->capture_default_str()
      ->check(Count());
  cmd->add_option("--job-size", f.job_size, "configs per job (0 = coordinator default)")->check(CLI::Range(0u, protocol::kMaxJobSize));
  cmd->add_flag("--force", f.force, "re-tune ops already in the knowledge base");
  cmd->add_option("--priority", f.priority,
                  "higher goes first: workers serve a submission only with the slots higher-priority ones cannot use "
                  "(default 0; negative for background work)")
      ->capture_default_str()
      ->check(CLI::Range(-protocol::kMaxPriority, protocol::kMaxPriority));
  cmd->add_flag("--warm-start", f.warm_start, "first try the best configs of the nearest tuned shapes of each op");
  cmd->add_flag("--fuse", f.fuse, "a model: fuse it first, as `tunefleet fuse` does (subgraph tuning), and tune the "
                                  "fused graph's kernels; the fused graph is written for `report`");
  cmd->add_option("--fused-out", f.fused_out, "with --fuse: where the fused graph goes (default: MODEL's name with "
                                              "_fused, here)");
  cmd->add_option("--total-budget", f.total_budget, "one evaluation budget for all ops, split by --scheduler (overrides --budget); at least one per op to tune")
      ->check(Count(1));
  cmd->add_option("--scheduler", f.scheduler, "how --total-budget is split: gradient (the default: by expected gain, weighted by each op's count) or round-robin")->check(CLI::IsMember({"gradient", "round-robin"}));
  cmd->add_flag("--json", f.json, "print JSON instead of text");
}

Result<client::SubmitSpec> MakeSpec(const SubmitFlags& f, std::vector<NamedOp>& ops, const SocCatalog& catalog) {
  if (!f.scheduler.empty() && f.total_budget == 0) {
    return InvalidArgument("--scheduler splits a --total-budget among the ops: give --total-budget N too, or leave "
                           "--scheduler out (each op then has its own --budget)");
  }
  if (!f.fused_out.empty() && !f.fuse) return InvalidArgument("--fused-out names where --fuse writes: give --fuse too");
  if (!f.model_flags.causal_masks.empty() && !f.fuse) {
    return InvalidArgument("--causal-mask tells fusion which masks are causal: tuning a model's kernels fuses none, so "
                           "give --fuse, or leave --causal-mask out");
  }
  if (!f.model_flags.resident.empty() && !f.fuse) {
    return InvalidArgument("--resident keeps tensors on the device when a model's graph runs: tuning its kernels runs "
                           "none, so give --fuse (whose graph runs and is written with them), or leave --resident out");
  }
  if (f.fuse) {
    TF_ASSIGN_OR_RETURN(Graph fused, FuseForTuning(f.ops_file, f.soc, f.model_flags, f.fused_out, catalog));
    if (f.training) fused.training = true;
    TF_ASSIGN_OR_RETURN(ops, OpsOfModel(fused, f.ops_file, &catalog));
  } else {
    TF_ASSIGN_OR_RETURN(ops, LoadOpsFile(f.ops_file, f.soc, &catalog, f.model_flags.dims, f.training));
  }
  client::SubmitSpec spec;
  for (const auto& op : ops) spec.ops.push_back(op.key);
  spec.strategy = f.strategy;
  spec.budget = f.budget;
  spec.budget_seconds = f.budget_seconds;
  spec.patience = f.patience;
  spec.seed = f.seed;
  spec.force = f.force;
  spec.job_size = f.job_size;
  spec.priority = f.priority;
  spec.warm_start = f.warm_start;
  spec.total_budget = f.total_budget;
  spec.scheduler = f.scheduler.empty() ? "gradient" : f.scheduler;
  for (const auto& op : ops) spec.weights.push_back(op.count);
  for (const auto& op : ops) spec.names.push_back(op.name);
  return spec;
}

// Polls until every task has finished; shows progress on a terminal. nullopt once
// `interrupted` is set (SIGINT/SIGTERM): the submission itself keeps running.
Result<std::optional<client::StatusView>> Wait(client::Client& c, uint64_t submission, bool quiet,
                                               const std::atomic<bool>& interrupted) {
  const bool tty = isatty(fileno(stderr)) && !quiet;
  // Fast at first (a small task is done in moments), then at most once a second: a
  // status of 10,000 tasks costs the coordinator's loop about 10 ms.
  auto poll = std::chrono::milliseconds(100);
  for (;;) {
    if (interrupted.load()) {
      if (tty) fmt::print(stderr, "\n");
      return std::optional<client::StatusView>();
    }
    auto got = c.GetStatus(submission);
    if (!got.ok() && interrupted.load()) {  // abandoned mid-request (Client::AbandonWhen)
      if (tty) fmt::print(stderr, "\n");
      return std::optional<client::StatusView>();
    }
    TF_ASSIGN_OR_RETURN(client::StatusView st, std::move(got));
    if (tty) {
      uint64_t evaluated = 0, planned = 0, done = 0;
      for (const auto& t : st.tasks) {
        evaluated += t.evaluated;
        planned += t.planned;
        done += t.state != "running" && t.state != "queued";
      }
      fmt::print(stderr, "\r  tasks {}/{}  evaluations {}/{}   ", done, st.tasks.size(), evaluated, planned);
    }
    if (st.done) {
      if (tty) fmt::print(stderr, "\n");
      return std::optional(std::move(st));
    }
    SleepUnless(interrupted, poll);
    poll = std::min(poll * 3 / 2, std::chrono::milliseconds(1000));
  }
}

// Wait() that SIGINT/SIGTERM end (nullopt).
Result<std::optional<client::StatusView>> WaitUntilInterrupted(client::Client& c, uint64_t submission, bool quiet) {
  std::atomic<bool> interrupted{false};
  TerminationWatcher watcher([&] { interrupted.store(true); });
  c.AbandonWhen(&interrupted);
  auto waited = Wait(c, submission, quiet, interrupted);
  c.AbandonWhen(nullptr);  // the flag dies here
  return waited;
}

// done; running once any task has had a job; else queued (no worker for its SoC yet).
std::string SubmissionState(const client::StatusView& st) {
  if (st.cancelled) return "cancelled";
  for (const auto& t : st.tasks) {
    if (t.state == "cancelled") return "cancelled";  // what it found is not in the knowledge base
  }
  if (st.done) return "done";
  for (const auto& t : st.tasks) {
    if (t.state != "queued") return "running";
  }
  return "queued";
}

int PrintOutcome(const std::vector<NamedOp>& ops, const client::StatusView& st,
                 const std::vector<bool>& from_cache, bool json, const SocCatalog& catalog) {
  nlohmann::json out = nlohmann::json::array();
  bool all_ok = !st.cancelled;
  for (size_t i = 0; i < st.tasks.size(); ++i) {
    // `status` knows the names from the coordinator, which keeps them with the submission.
    const std::string& name = i < ops.size()              ? ops[i].name
                              : !st.tasks[i].name.empty() ? st.tasks[i].name
                                                          : "op" + std::to_string(i);
    bool cached = i < from_cache.size() && from_cache[i];
    // A task still running has not failed (yet): `status` of a running submission is 0.
    // A cancelled one ended without a config in the knowledge base, whatever it found.
    all_ok &= st.tasks[i].state != "cancelled" &&
              (st.tasks[i].has_best || st.tasks[i].state == "running" || st.tasks[i].state == "queued");
    if (json) out.push_back(TaskJson(name, st.tasks[i], cached));
    else fmt::print("{}", TaskText(name, st.tasks[i], cached, catalog));
  }
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"submission_id", st.submission_id},
                                      {"state", SubmissionState(st)},
                                      {"priority", st.priority},
                                      {"done", st.done},
                                      {"tasks", out}}
                           .dump(2));
  }
  return all_ok ? kExitOk : kExitTaskFailed;
}

int RunTune(const SubmitFlags& f, const std::string& data_dir, int slots, const std::string& replay_path) {
  std::vector<NamedOp> ops;
  SocCatalog catalog = SocCatalog::Builtin();
  auto spec = MakeSpec(f, ops, catalog);
  if (!spec.ok()) return Fail(spec.status());
  // --replay-cache: the worker slots serve a Kernel Tuner cache's measured times instead
  // of simulating, for ops with soc "replay" (kt_cache.h).
  std::shared_ptr<const KtCache> replay;
  if (!replay_path.empty()) {
    auto cache = KtCache::Load(replay_path);
    if (!cache.ok()) return Fail(cache.status().WithContext("--replay-cache"));
    replay = std::make_shared<const KtCache>(std::move(cache).value());
  }
  auto embedded = EmbeddedCoordinator::Start(data_dir, catalog, replay);
  if (!embedded.ok()) return Fail(embedded.status());
  EmbeddedCoordinator& coord = **embedded;
  // One embedded worker simulates the catalog's SoCs; with --replay-cache a second one
  // serves ops with soc "replay", so a file may mix both.
  std::vector<std::unique_ptr<worker::Evaluator>> evaluators;
  std::vector<std::unique_ptr<worker::Worker>> workers;
  auto add_worker = [&](std::unique_ptr<worker::Evaluator> evaluator, std::string id, std::vector<std::string> socs) {
    worker::WorkerOptions wopts;
    wopts.coordinator_endpoint = coord.options().worker_endpoint;
    wopts.slots = slots;
    wopts.worker_id = std::move(id);
    wopts.socs = std::move(socs);
    evaluators.push_back(std::move(evaluator));
    workers.push_back(std::make_unique<worker::Worker>(wopts, *evaluators.back(), coord.clock(), coord.ctx()));
  };
  add_worker(worker::MakeSimEvaluator(catalog), "embedded", catalog.Names());
  if (replay) add_worker(worker::MakeReplayEvaluator(replay), "embedded-replay", {std::string(kReplaySoc)});
  std::vector<Status> worker_status(workers.size());
  std::vector<std::thread> worker_threads;
  for (size_t k = 0; k < workers.size(); ++k) {
    worker_threads.emplace_back([&, k] { worker_status[k] = workers[k]->Run(); });
  }
  auto shutdown = [&] {
    for (auto& w : workers) w->Stop();
    for (auto& t : worker_threads) t.join();
    return coord.Stop();
  };
  int rc = kExitOk;
  std::atomic<bool> interrupted{false};
  {
    TerminationWatcher watcher([&] { interrupted.store(true); });
    client::Client c(coord.ctx(), coord.options().client_endpoint);
    auto sub = c.Submit(*spec);
    if (!sub.ok()) {
      (void)shutdown();
      return Fail(sub.status());
    }
    if (!f.json) {
      std::string budget = f.total_budget ? fmt::format("{} in total ({} scheduler)", f.total_budget, spec->scheduler)
                           : f.budget     ? fmt::format("{} per op", f.budget)
                                          : "whole valid space";
      std::vector<std::string> socs;
      for (const auto& op : ops) {
        if (std::find(socs.begin(), socs.end(), op.key.soc) == socs.end()) socs.push_back(op.key.soc);
      }
      fmt::print("tunefleet tune: {} ops on {} with {} worker slots, strategy {}, budget {}, data in {}\n",
                 ops.size(), fmt::join(socs, ", "), slots, f.strategy, budget, data_dir);
      std::fflush(stdout);
    }
    auto st = Wait(c, sub->submission_id, f.json, interrupted);
    if (!st.ok()) {
      (void)shutdown();
      return Fail(st.status());
    }
    if (!st->has_value()) {
      // Every recorded result is in RocksDB; the coordinator resumes the tasks on start.
      fmt::print(stderr, "tunefleet: interrupted; what was measured is kept in {}: run the same command again to continue\n",
                 data_dir);
      rc = kExitInterrupted;
    } else {
      rc = PrintOutcome(ops, **st, sub->from_cache, f.json, catalog);
    }
  }
  Status coord_status = shutdown();
  if (!coord_status.ok()) return Fail(coord_status);
  for (const Status& ws : worker_status) {
    if (!ws.ok()) return Fail(ws);
  }
  return rc;
}

// Prints what a lookup of the ops file's ops found; exit 3 when any is missing (or only
// approximate).
int PrintLookup(const std::vector<NamedOp>& ops, const std::vector<std::optional<client::KbView>>& found, bool json) {
  bool all = true;
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& name = ops[i].name;
    const auto& e = found[i];
    all &= e.has_value() && !e->approximate;
    if (json) {
      out.push_back(LookupJson(name, ops[i].key, e));
    } else if (e) {
      fmt::print("{}", KbText(name, *e));
    } else {
      fmt::print("{}  {}  [not in the knowledge base]\n", name, ops[i].key.Display());
    }
  }
  if (json) fmt::print("{}\n", out.dump(2));
  return all ? kExitOk : kExitMiss;
}

// `lookup`'s flags.
struct LookupFlags {
  std::string file, soc;
  std::vector<std::string> dims;
  bool training = false, nearest = false, json = false;
  std::string data_dir;
};

// Looks the ops file's ops up through c.
int RunLookup(client::Client& c, const LookupFlags& f) {
  auto ops = LoadOpsFile(f.file, f.soc, nullptr, f.dims, f.training);
  if (!ops.ok()) return Fail(ops.status());
  std::vector<OpKey> keys;
  for (const auto& op : *ops) keys.push_back(op.key);
  auto found = c.Lookup(keys, f.nearest);
  if (!found.ok()) return Fail(found.status());
  return PrintLookup(*ops, *found, f.json);
}

// `lookup --data-dir`: the same answers from a local knowledge base (what `tune` wrote),
// read through RocksDB's read-only instance, so also while a `tune` or a coordinator is
// using the folder (it sees what was written when it opened).
int RunLocalLookup(const LookupFlags& f, const SocCatalog& catalog) {
  auto ops = LoadOpsFile(f.file, f.soc, nullptr, f.dims, f.training);
  if (!ops.ok()) return Fail(ops.status());
  auto store = coordinator::Store::OpenReadOnly(f.data_dir);
  if (!store.ok()) return Fail(store.status());
  std::vector<OpKey> keys;
  for (const auto& op : *ops) keys.push_back(op.key);
  auto answers = coordinator::LookUp(**store, keys, f.nearest, [&catalog](const OpKey& key) -> Result<std::optional<SearchSpace>> {
    if (key.soc == kReplaySoc) return std::optional<SearchSpace>();  // its cache is not here
    TF_ASSIGN_OR_RETURN(const SocSpec* spec, catalog.Find(key.soc));
    TF_ASSIGN_OR_RETURN(TuningProblem problem, MakeTuningProblem(key, *spec));
    return std::optional<SearchSpace>(std::move(problem.space));
  });
  if (!answers.ok()) return Fail(answers.status());
  std::vector<std::optional<client::KbView>> found;
  for (const coordinator::LookupAnswer& a : *answers) {
    if (!a.entry) {
      found.emplace_back();
      continue;
    }
    client::KbView v;
    static_cast<KbEntry&>(v) = *a.entry;
    v.approximate = a.approximate;
    v.distance = a.distance;
    found.push_back(std::move(v));
  }
  return PrintLookup(*ops, found, f.json);
}

// `tunefleet workers`: one line per worker, or JSON.
int RunWorkers(client::Client& c, bool json) {
  auto list = c.ListWorkers();
  if (!list.ok()) return Fail(list.status());
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& w : *list) {
      out.push_back({{"id", w.id},
                     {"socs", w.socs},
                     {"slots", w.slots},
                     {"busy_slots", w.busy_slots},
                     {"jobs_completed", w.jobs_completed},
                     {"seconds_since_seen", w.seconds_since_seen},
                     {"seconds_connected", w.seconds_connected}});
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  if (list->empty()) {
    fmt::print("no workers connected (start tunefleet-worker --coordinator WORKER_ENDPOINT)\n");
    return kExitOk;
  }
  fmt::print("{:<20} {:>5} {:>5} {:>10} {:>10} {:>10}  {}\n", "worker", "slots", "busy", "jobs done", "last seen",
             "connected", "SoCs");
  for (const auto& w : *list) {
    fmt::print("{:<20} {:>5} {:>5} {:>10} {:>9.1f}s {:>9.0f}s  {}\n", w.id, w.slots, w.busy_slots, w.jobs_completed,
               w.seconds_since_seen, w.seconds_connected, fmt::join(w.socs, ","));
  }
  return kExitOk;
}

// NAME.public and NAME.secret (owner-only) in dir; never overwrites a key.
Status WriteKeyPair(const std::string& dir, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return InvalidArgument("curve-keypair NAME must be a file stem like server, worker or client, not '" + name + "'");
  }
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    // Key folders hold secrets: owner-only from the start.
    std::filesystem::create_directories(dir, ec);
    if (ec) return InvalidArgument("cannot make the key folder " + dir + ": " + ec.message());
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  } else if (!std::filesystem::is_directory(dir, ec)) {
    return InvalidArgument("--dir " + dir + " is a file, not a folder");
  }
  const curve::KeyPair pair = curve::GenerateKeyPair();
  const std::string stem = dir + "/" + name;
  for (const char* ext : {".public", ".secret"}) {
    if (std::filesystem::exists(stem + ext)) {
      return InvalidArgument(stem + ext + " exists; remove it first or choose another NAME");
    }
  }
  // Each file is created with its final mode (the secret owner-only, never readable for a
  // moment under the umask) and only if it does not exist yet.
  for (const auto& [ext, key, mode] : {std::tuple{".public", pair.public_key, 0644},
                                       std::tuple{".secret", pair.secret_key, 0600}}) {
    const std::string path = stem + ext;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return Unavailable("cannot create " + path + ": " + std::strerror(errno));
    const std::string line = key + "\n";
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (::close(fd) != 0 || !written) return Unavailable("cannot write " + path);
  }
  fmt::print("wrote {0}.public and {0}.secret (public key {1})\n", stem, pair.public_key);
  return Status::Ok();
}

}  // namespace
}  // namespace tunefleet::cli

namespace {
int Run(int argc, char** argv);
}  // namespace

int main(int argc, char** argv) {
  const int rc = Run(argc, argv);
  // What was printed must have arrived: a full disk or a closed pipe on standard output
  // is a failure, not a silent success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "tunefleet: writing standard output failed: %s\n", std::strerror(errno));
    return rc == 0 ? tunefleet::kExitFailure : rc;
  }
  return rc;
}

namespace {
int Run(int argc, char** argv) {
  tunefleet::BlockTerminationSignals();
  using namespace tunefleet;
  using namespace tunefleet::cli;
  CLI::App app{"tunefleet: operator auto-tuning for Ascend-style NPUs"};
  app.require_subcommand(1);
  std::string coordinator_ep = fmt::format("tcp://127.0.0.1:{}", protocol::kDefaultClientPort);
  int timeout_ms = 10000;

  SubmitFlags tune_flags;
  std::string data_dir = "./tunefleet-data";
  int slots = 2;
  auto* tune = app.add_subcommand("tune", "tune ops locally: embedded coordinator + worker slots, RocksDB in --data-dir");
  tune->add_option("OPS", tune_flags.ops_file, "JSON ops file (see examples/)")->required()->check(CLI::ExistingFile);
  AddSubmitFlags(tune, tune_flags);
  tune->add_option("--data-dir", data_dir, "knowledge-base folder")->capture_default_str();
  tune->add_option("--slots", slots, "worker slots (threads)")->capture_default_str()->check(CLI::Range(1, 256));
  std::string replay_cache;
  tune->add_option("--replay-cache", replay_cache, "tune ops with soc 'replay' over this Kernel Tuner cache's measured times (.json or .json.gz); the file's other ops are simulated")->check(CLI::ExistingFile);

  SubmitFlags submit_flags;
  bool submit_wait = false;
  auto* submit = app.add_subcommand("submit", "submit ops to a running coordinator; prints the submission id");
  submit->add_option("OPS", submit_flags.ops_file, "JSON ops file")->required()->check(CLI::ExistingFile);
  AddSubmitFlags(submit, submit_flags);
  auto* submit_wait_flag = submit->add_flag("--wait", submit_wait, "wait for the result and print it");
  bool submit_watch = false;
  submit->add_flag("--watch", submit_watch, "follow the submission's progress as `tunefleet watch` does")
      ->excludes(submit_wait_flag);

  uint64_t status_id = 0;
  bool status_wait = false, status_json = false;
  auto* status = app.add_subcommand("status", "show a submission's tasks");
  status->add_option("SUBMISSION", status_id, "submission id printed by submit")->required()->check(Count(1));
  status->add_flag("--wait", status_wait, "wait until every task has finished");
  status->add_flag("--json", status_json, "print JSON");

  uint64_t watch_id = 0;
  bool watch_json = false;
  auto* watch = app.add_subcommand(
      "watch", "follow a submission as it runs: each task's start, every better config found, each task's end");
  watch->add_option("SUBMISSION", watch_id, "submission id printed by submit")->required()->check(Count(1));
  watch->add_flag("--json", watch_json, "print one JSON object per event (JSON Lines)");

  uint64_t cancel_id = 0;
  bool cancel_json = false;
  auto* cancel = app.add_subcommand(
      "cancel", "stop a submission's tasks (those another submission also waits on keep running); nothing of them "
                "goes into the knowledge base");
  cancel->add_option("SUBMISSION", cancel_id, "submission id printed by submit")->required()->check(Count(1));
  cancel->add_flag("--json", cancel_json, "print JSON");

  LookupFlags lookup_flags;
  auto* lookup = app.add_subcommand("lookup", "look ops up in the knowledge base (exit 3 when any is missing)");
  lookup->add_option("OPS", lookup_flags.file, "JSON ops file")->required()->check(CLI::ExistingFile);
  lookup->add_option("--soc", lookup_flags.soc, "SoC for every op");
  AddDimOption(*lookup, lookup_flags.dims);
  AddTrainingFlag(*lookup, lookup_flags.training);
  lookup->add_flag("--json", lookup_flags.json, "print JSON");
  lookup->add_flag("--nearest", lookup_flags.nearest, "answer a miss from the closest tuned shape of the same op and SoC (flagged APPROXIMATE)");
  auto* lookup_local = lookup->add_option("--data-dir", lookup_flags.data_dir,
                                          "look up in this knowledge-base folder (what `tune` wrote) instead of asking a coordinator")
                           ->check(CLI::ExistingDirectory);

  CacheCommands cache_commands;
  AddCacheCommands(app, cache_commands);

  bool workers_json = false;
  auto* workers = app.add_subcommand("workers", "list the workers a coordinator knows: SoCs, slots, busy slots, jobs done");
  workers->add_flag("--json", workers_json, "print JSON");

  VerifyCommand verify;
  AddVerifyCommand(app, verify);
  FuseCommand fuse;
  AddFuseCommand(app, fuse);

  std::string curve_dir;
  std::vector<CLI::App*> coordinator_cmds{submit, status, watch, cancel, lookup, workers, verify.cmd};
  for (CLI::App* cmd : CoordinatorCommands(cache_commands)) coordinator_cmds.push_back(cmd);
  for (auto* cmd : coordinator_cmds) {
    auto* ep = cmd->add_option("--coordinator", coordinator_ep, "the coordinator's client endpoint")->capture_default_str();
    if (cmd == lookup) ep->excludes(lookup_local);
    if (auto* local = cmd->get_option_no_throw("--data-dir"); local != nullptr && cmd != lookup) ep->excludes(local);
    cmd->add_option("--timeout-ms", timeout_ms, "how long to wait for each reply")
        ->capture_default_str()
        ->check(CLI::Range(1, 3'600'000));
    cmd->add_option("--curve-dir", curve_dir,
                    "CURVE key folder (server.public, client.public, client.secret) for a coordinator that runs "
                    "CURVE; default from TUNEFLEET_CURVE_ENABLED / TUNEFLEET_CURVE_DIR");
  }

  std::string keypair_name, keypair_dir = ".";
  auto* keypair = app.add_subcommand(
      "curve-keypair", "write a new CURVE key pair as NAME.public and NAME.secret (server, worker, client: curve.h)");
  keypair->add_option("NAME", keypair_name, "file stem, e.g. server, worker or client")->required();
  keypair->add_option("--dir", keypair_dir, "folder to write into (made, owner-only, if missing)")->capture_default_str();
  ProfileCommands profile_commands;
  AddProfileCommands(app, profile_commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError with exit code 0; anything else is bad input (README's exit 2).
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }

  SocCatalog catalog = SocCatalog::Builtin();
  std::optional<TerminationWatcher> compute_only;
  if (profile_commands.profile->parsed() || profile_commands.analyze->parsed() || fuse.cmd->parsed() ||
      verify.cmd->parsed()) {
    compute_only.emplace(ExitInterrupted);
  }
  if (int rc = RunProfileCommands(profile_commands, catalog); rc >= 0) return rc;
  if (fuse.cmd->parsed()) return RunFuse(fuse, catalog);
  if (tune->parsed()) return RunTune(tune_flags, data_dir, slots, replay_cache);
  if (lookup->parsed() && !lookup_flags.data_dir.empty()) {
    return RunLocalLookup(lookup_flags, catalog);
  }

  if (CacheIsLocal(cache_commands)) return RunCacheCommand(cache_commands, catalog, nullptr);
  if (verify.cmd->parsed() && !verify.data_dir.empty()) return RunVerify(verify, catalog, nullptr);

  if (keypair->parsed()) {
    Status s = WriteKeyPair(keypair_dir, keypair_name);
    return s.ok() ? kExitOk : Fail(s);
  }

  auto key_dir = curve::KeyDir(curve_dir, std::getenv("TUNEFLEET_CURVE_ENABLED"), std::getenv("TUNEFLEET_CURVE_DIR"));
  if (!key_dir.ok()) return Fail(key_dir.status());
  std::optional<curve::PeerKeys> curve_keys;
  if (key_dir->has_value()) {
    auto loaded = curve::LoadPeerKeys(**key_dir, "client");
    if (!loaded.ok()) return Fail(loaded.status());
    curve_keys = std::move(loaded).value();
  }
  zmq::context_t ctx(1);
  client::Client c(ctx, coordinator_ep, std::chrono::milliseconds(timeout_ms), std::move(curve_keys));
  if (submit->parsed()) {
    std::vector<NamedOp> ops;
    auto spec = MakeSpec(submit_flags, ops, catalog);
    if (!spec.ok()) return Fail(spec.status());
    auto sub = c.Submit(*spec);
    if (!sub.ok()) return Fail(sub.status());
    if (submit_watch) {
      if (submit_flags.json) {
        fmt::print("{}\n", nlohmann::json{{"submission_id", sub->submission_id}, {"event", "submitted"},
                                          {"task_ids", sub->task_ids}}
                               .dump());
      } else {
        fmt::print("submission {}\n", sub->submission_id);
      }
      std::fflush(stdout);
      return RunWatch(c, sub->submission_id, submit_flags.json);
    }
    if (!submit_wait) {
      if (submit_flags.json) {
        fmt::print("{}\n", nlohmann::json{{"submission_id", sub->submission_id}, {"task_ids", sub->task_ids}}.dump());
      } else {
        fmt::print("submission {}\n", sub->submission_id);
      }
      return kExitOk;
    }
    // On stderr first: a log of a wait that ends badly (a timeout, a killed job) still
    // names the submission to ask `status` about.
    fmt::print(stderr, "submission {}: waiting for its tasks (Ctrl-C stops waiting, not the tuning)\n",
               sub->submission_id);
    auto st = WaitUntilInterrupted(c, sub->submission_id, submit_flags.json);
    if (!st.ok()) return Fail(st.status());
    if (!st->has_value()) return Interrupted(sub->submission_id);
    return PrintOutcome(ops, **st, sub->from_cache, submit_flags.json, catalog);
  }
  if (cancel->parsed()) {
    auto done = c.Cancel(cancel_id);
    if (!done.ok()) return Fail(done.status());
    if (cancel_json) {
      fmt::print("{}\n", nlohmann::json{{"submission_id", done->submission_id},
                                        {"cancelled", done->cancelled},
                                        {"shared", done->shared},
                                        {"finished", done->finished}}
                             .dump());
    } else {
      fmt::print("submission {}: {} task(s) cancelled", done->submission_id, done->cancelled);
      if (done->shared > 0) fmt::print(", {} kept running for another submission that waits on them", done->shared);
      if (done->finished > 0) fmt::print(", {} had already finished", done->finished);
      fmt::print("\n");
    }
    return kExitOk;
  }
  if (status->parsed()) {
    std::optional<client::StatusView> st;
    if (status_wait) {
      auto waited = WaitUntilInterrupted(c, status_id, status_json);
      if (!waited.ok()) return Fail(waited.status());
      if (!waited->has_value()) return Interrupted(status_id);
      st = std::move(*waited);
    } else {
      auto got = c.GetStatus(status_id);
      if (!got.ok()) return Fail(got.status());
      st = std::move(got).value();
    }
    if (!status_json && (!st->done || SubmissionState(*st) == "cancelled")) {
      const std::string state = SubmissionState(*st);
      fmt::print("submission {}: {}{}\n", st->submission_id,
                 state == "queued" ? "queued (no worker serving its SoC has taken a job yet)" : state,
                 st->priority != 0 ? fmt::format(" (priority {})", st->priority) : "");
    }
    std::vector<NamedOp> none;
    std::vector<bool> cached;
    for (const auto& t : st->tasks) cached.push_back(t.state == "done" && t.evaluated == 0);
    return PrintOutcome(none, *st, cached, status_json, catalog);
  }
  if (lookup->parsed()) return RunLookup(c, lookup_flags);
  if (CacheParsed(cache_commands)) return RunCacheCommand(cache_commands, catalog, &c);
  if (workers->parsed()) return RunWorkers(c, workers_json);
  if (watch->parsed()) return RunWatch(c, watch_id, watch_json);
  if (verify.cmd->parsed()) return RunVerify(verify, catalog, &c);
  return kExitBadInput;
}
}  // namespace
