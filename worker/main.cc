// tunefleet-worker: connects to a coordinator and evaluates jobs in N slots until
// SIGINT/SIGTERM.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "tunefleet/common/cpu_count.h"
#include "tunefleet/common/curve.h"
#include "tunefleet/common/flag_checks.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/signals.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  tunefleet::BlockTerminationSignals();
  using namespace tunefleet;
  CLI::App app{"tunefleet-worker: evaluates tiling configs on the simulated NPU for a coordinator"};
  worker::WorkerOptions options;
  options.coordinator_endpoint = fmt::format("tcp://127.0.0.1:{}", protocol::kDefaultWorkerPort);
  options.slots = UsableCpus();  // the CPUs it may use: affinity, and a container's CPU limit
  std::string evaluator_name = "sim";
  double fixed_us = 10;
  std::string soc_dir;
  int heartbeat_ms = static_cast<int>(protocol::kHeartbeatInterval.count());
  char host[256] = "worker";
  gethostname(host, sizeof host - 1);
  options.worker_id = fmt::format("{}-{}", host, getpid());
  app.add_option("--coordinator", options.coordinator_endpoint, "the coordinator's worker endpoint")->capture_default_str();
  app.add_option("--slots", options.slots, "evaluation slots (threads); default: the CPUs this process may use (its affinity, lowered to its cgroup's CPU quota)")->capture_default_str()->check(CLI::Range(1, 1024));
  app.add_option("--id", options.worker_id, "name in the coordinator's worker table")->capture_default_str();
  auto* evaluator_flag = app.add_option("--evaluator", evaluator_name, "sim (simulated NPU), fixed (constant latency, for load tests) or replay (measured times from --replay-cache; the default when that is given)")->capture_default_str()->check(CLI::IsMember({"sim", "fixed", "replay"}));
  std::string replay_cache;
  app.add_option("--replay-cache", replay_cache, "Kernel Tuner cache file (.json or .json.gz) to serve: implies --evaluator replay");
  app.add_option("--fixed-us", fixed_us, "latency reported by the fixed evaluator")
      ->capture_default_str()
      ->check(AtLeast(0, false));
  app.add_option("--soc-dir", soc_dir, "folder of extra SoC spec .ini files");
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")->capture_default_str()->check(CLI::Range(10, 60000));
  int64_t min_eval_us = 0;
  double noise_sigma = 0;
  app.add_option("--noise-sigma", noise_sigma, "log-normal measurement noise of the sim evaluator (0 = exact; reproducible per op, config and seed)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-eval-us", min_eval_us, "make every evaluation take at least this long (fault and load tests)")->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  std::string curve_dir;
  app.add_option("--curve-dir", curve_dir,
                 "CURVE key folder (server.public, worker.public, worker.secret) of a coordinator that runs CURVE; "
                 "default from TUNEFLEET_CURVE_ENABLED / TUNEFLEET_CURVE_DIR");
  app.add_flag("-v,--verbose", options.verbose, "log jobs to stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError with exit code 0; anything else is bad input (exit 2).
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.min_eval_time = std::chrono::microseconds(min_eval_us);

  auto key_dir = curve::KeyDir(curve_dir, std::getenv("TUNEFLEET_CURVE_ENABLED"), std::getenv("TUNEFLEET_CURVE_DIR"));
  if (key_dir.ok() && key_dir->has_value()) {
    auto keys = curve::LoadPeerKeys(**key_dir, "worker");
    if (!keys.ok()) key_dir = keys.status();
    else options.curve = std::move(keys).value();
  }
  if (!key_dir.ok()) {  // fails closed, like the coordinator
    fmt::print(stderr, "tunefleet-worker: CURVE: {}\n", key_dir.status().ToString());
    return 2;
  }
  SocCatalog catalog = SocCatalog::Builtin();
  if (!soc_dir.empty()) {
    if (Status s = catalog.LoadDirectory(soc_dir); !s.ok()) {
      fmt::print(stderr, "tunefleet-worker: {}\n", s.ToString());
      return 2;
    }
  }
  options.socs = catalog.Names();
  // A cache given without an evaluator is one to serve: the coordinator takes the same
  // flag, and a worker that silently simulated left replay tasks waiting forever.
  if (!replay_cache.empty() && evaluator_flag->count() == 0) evaluator_name = "replay";
  if (!replay_cache.empty() && evaluator_name != "replay") {
    fmt::print(stderr, "tunefleet-worker: --replay-cache is served only by --evaluator replay, not {} (drop one of them)\n",
               evaluator_name);
    return 2;
  }
  std::unique_ptr<worker::Evaluator> evaluator;
  if (evaluator_name == "replay") {
    if (replay_cache.empty()) {
      fmt::print(stderr, "tunefleet-worker: --evaluator replay needs --replay-cache FILE (a Kernel Tuner cache, .json or .json.gz)\n");
      return 2;
    }
    auto replay = worker::MakeReplayEvaluator(replay_cache);
    if (!replay.ok()) {
      fmt::print(stderr, "tunefleet-worker: {}\n", replay.status().ToString());
      return 2;
    }
    evaluator = std::move(replay).value();
    options.socs = {std::string(kReplaySoc)};  // it serves only the cache's kernel
  } else {
    evaluator = evaluator_name == "fixed" ? worker::MakeFixedEvaluator(catalog, fixed_us)
                                          : worker::MakeSimEvaluator(catalog, noise_sigma);
  }
  zmq::context_t ctx(1);
  SteadyClock clock;
  worker::Worker w(options, *evaluator, clock, ctx);
  TerminationWatcher watcher([&] { w.Stop(); });
  fmt::print("tunefleet-worker {} connecting to {} with {} slots\n", options.worker_id,
             options.coordinator_endpoint, options.slots);
  std::fflush(stdout);
  Status s = w.Run();
  if (!s.ok()) {
    fmt::print(stderr, "tunefleet-worker: {}\n", s.ToString());
    return ExitCodeFor(s);  // 2 for a malformed --coordinator
  }
  return 0;
}
