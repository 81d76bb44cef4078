// tunefleet-coordinator: binds the client and worker sockets, serves /metrics, and
// runs the scheduling loop until SIGINT/SIGTERM.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "coordinator/coordinator.h"
#include "coordinator/loop_watchdog.h"
#include "tunefleet/common/curve.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/signals.h"
#include "tunefleet/common/transport.h"

namespace {
constexpr long kMinLoopStallLimitMs = 200;
}  // namespace

int main(int argc, char** argv) {
  tunefleet::BlockTerminationSignals();
  using namespace tunefleet;
  CLI::App app{"tunefleet-coordinator: splits tuning tasks into jobs for workers and keeps the knowledge base"};
  coordinator::CoordinatorOptions options;
  // Loopback by default (DESIGN.md "Security": off by default on loopback): reaching
  // it from other hosts is a choice, made with CURVE on (the Helm chart does both).
  options.client_endpoint = fmt::format("tcp://127.0.0.1:{}", protocol::kDefaultClientPort);
  options.worker_endpoint = fmt::format("tcp://127.0.0.1:{}", protocol::kDefaultWorkerPort);
  std::string data_dir = "./tunefleet-data";
  std::string metrics_address = "127.0.0.1";
  int metrics_port = protocol::kDefaultMetricsPort;
  std::string soc_dir;
  int heartbeat_ms = static_cast<int>(protocol::kHeartbeatInterval.count());
  bool no_sync = false;
  int loop_stall_limit_ms = 60000;
  app.add_option("--client-bind", options.client_endpoint, "ZeroMQ endpoint for clients (tcp://HOST:PORT, port * = any)")->capture_default_str();
  app.add_option("--worker-bind", options.worker_endpoint, "ZeroMQ endpoint for workers")->capture_default_str();
  app.add_option("--data-dir", data_dir, "RocksDB folder (knowledge base, tasks, results)")->capture_default_str();
  app.add_option("--metrics-address", metrics_address, "address for the /metrics HTTP endpoint")->capture_default_str();
  app.add_option("--metrics-port", metrics_port, "port for /metrics; 0 picks one, -1 disables")
      ->capture_default_str()
      ->check(CLI::Range(-1, 65535));
  app.add_option("--soc-dir", soc_dir, "folder of extra SoC spec .ini files (a file naming a built-in SoC must "
                                      "match it: give a modified part a name of its own)");
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval; a worker silent for 3 intervals is dead")->capture_default_str()->check(CLI::Range(10, 60000));
  std::vector<std::string> replay_paths;
  app.add_option("--replay-cache", replay_paths, "Kernel Tuner cache (.json or .json.gz) whose space tasks with soc 'replay' and its kernel name as op may target; repeatable");
  app.add_option("--job-size", options.default_job_size, "configs per job unless a submission says otherwise")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  std::string curve_dir;
  app.add_option("--curve-dir", curve_dir,
                 "CURVE key folder (server.public/.secret, worker.public, clients.public, readers.public): encrypt both "
                 "sockets and admit only listed keys; default from TUNEFLEET_CURVE_ENABLED / TUNEFLEET_CURVE_DIR");
  app.add_option("--loop-stall-limit-ms", loop_stall_limit_ms,
                 "exit (code 5) when the scheduling loop has not turned for this long, so the supervisor restarts it; "
                 "0 disables")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            const long ms = std::strtol(value.c_str(), nullptr, 10);
            // The idle loop turns every 20 ms (a poll's timeout); a limit near that would
            // end a coordinator that is only waiting.
            if (ms == 0 || (ms >= kMinLoopStallLimitMs && ms <= 3600000)) return "";
            return "give 0 (off) or " + std::to_string(kMinLoopStallLimitMs) +
                   " to 3600000 ms: the idle loop turns every 20 ms, so a smaller limit would end a coordinator "
                   "that is only waiting";
          },
          "0 or 200..3600000"));
  int64_t keep_finished_s = options.keep_finished.count();
  app.add_option("--keep-finished-s", keep_finished_s,
                 "seconds a finished task stays in memory (about 4.5 KB each) before `status` and `watch` read it "
                 "from the data folder")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{30} * 24 * 3600));
  app.add_flag("--no-sync", no_sync, "do not fsync state changes (faster, loses the last changes on a crash)");
  app.add_flag("-v,--verbose", options.verbose, "log scheduling decisions to stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError with exit code 0; anything else is bad input (exit 2).
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.keep_finished = std::chrono::seconds(keep_finished_s);

  // CURVE fails closed: a key folder asked for but unusable stops the coordinator.
  auto key_dir = curve::KeyDir(curve_dir, std::getenv("TUNEFLEET_CURVE_ENABLED"), std::getenv("TUNEFLEET_CURVE_DIR"));
  if (key_dir.ok() && key_dir->has_value()) {
    auto keys = curve::LoadServerKeys(**key_dir);
    if (!keys.ok()) key_dir = keys.status();
    else options.curve = std::move(keys).value();
  }
  if (!key_dir.ok()) {
    fmt::print(stderr, "tunefleet-coordinator: CURVE: {}\n", key_dir.status().ToString());
    return 2;
  }
  for (const auto& path : replay_paths) {
    auto cache = KtCache::Load(path);
    if (!cache.ok()) {
      fmt::print(stderr, "tunefleet-coordinator: --replay-cache: {}\n", cache.status().ToString());
      return 2;
    }
    options.replay_caches.push_back(std::make_shared<const KtCache>(std::move(cache).value()));
  }
  SocCatalog catalog = SocCatalog::Builtin();
  if (!soc_dir.empty()) {
    if (Status s = catalog.LoadDirectory(soc_dir); !s.ok()) {
      fmt::print(stderr, "tunefleet-coordinator: {}\n", s.ToString());
      return 2;
    }
  }
  auto store = coordinator::Store::Open(data_dir, !no_sync);
  if (!store.ok()) {
    fmt::print(stderr, "tunefleet-coordinator: {}\n", store.status().ToString());
    return ExitCodeFor(store.status());
  }
  auto registry = std::make_shared<prometheus::Registry>();
  // Probes on the metrics port: /healthz answers from here on, while the process serves
  // HTTP; /readyz only once the coordinator has bound its sockets and resumed its tasks
  // (a restart on a large knowledge base takes a while), so no traffic is sent early.
  auto healthy = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge().Name("tunefleet_up").Help("1: the coordinator process serves").Register(*healthy).Add({}).Set(1);
  auto ready = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge().Name("tunefleet_ready").Help("1: the coordinator serves clients and workers").Register(*ready).Add({}).Set(1);
  std::unique_ptr<prometheus::Exposer> exposer;
  std::string metrics = "off";
  if (metrics_port >= 0) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(fmt::format("{}:{}", metrics_address, metrics_port));
    } catch (const std::exception& e) {
      fmt::print(stderr, "tunefleet-coordinator: cannot serve /metrics on {}:{}: {}\n", metrics_address, metrics_port, e.what());
      return 1;
    }
    exposer->RegisterCollectable(registry);
    exposer->RegisterCollectable(healthy, "/healthz");
    metrics = fmt::format("{}:{}", metrics_address, exposer->GetListeningPorts().at(0));
  }
  zmq::context_t ctx(1);
  SteadyClock clock;
  auto coord = coordinator::Coordinator::Create(options, **store, catalog, clock, *registry, ctx);
  if (!coord.ok()) {
    fmt::print(stderr, "tunefleet-coordinator: {}\n", coord.status().ToString());
    return ExitCodeFor(coord.status());  // 2 for a malformed --client-bind, 1 for a port in use
  }
  // Once bound: a malformed endpoint is refused above, not warned about.
  if (!options.curve) {
    for (const std::string* endpoint : {&options.client_endpoint, &options.worker_endpoint}) {
      if (transport::IsLoopback(*endpoint)) continue;
      fmt::print(stderr,
                 "tunefleet-coordinator: warning: {} is reachable beyond this host without CURVE: anyone who reaches "
                 "it may submit, cancel and import into the knowledge base, or serve as a worker. Give --curve-dir "
                 "(docs/architecture.md, \"Security\"), or bind 127.0.0.1\n",
                 *endpoint);
    }
  }
  TerminationWatcher watcher([&] { (*coord)->Stop(); });
  // The loop turns at least every 20 ms when well; a liveness probe only sees the HTTP
  // server, so a stuck loop ends the process here instead (loop_watchdog.h).
  // Its gauge is served also when the limit is 0 (off).
  const coordinator::Coordinator& c = **coord;
  auto watchdog = std::make_shared<coordinator::LoopWatchdog>(
        clock, [&c] { return c.LastTurn(); }, std::chrono::milliseconds(loop_stall_limit_ms),
        [loop_stall_limit_ms](Clock::Duration since) {
          fmt::print(stderr,
                     "tunefleet-coordinator: the scheduling loop has not turned for {} ms (limit "
                     "--loop-stall-limit-ms {}): exiting for the supervisor to restart it; accepted work is in "
                     "the data folder\n",
                     std::chrono::duration_cast<std::chrono::milliseconds>(since).count(), loop_stall_limit_ms);
          std::fflush(stderr);
          std::_Exit(kExitLoopStalled);
        });
  if (exposer) {
    exposer->RegisterCollectable(watchdog, "/healthz");
    exposer->RegisterCollectable(watchdog);
  }
  if (loop_stall_limit_ms > 0) watchdog->Start();
  if (exposer) exposer->RegisterCollectable(ready, "/readyz");
  // One machine-readable line: tests and scripts read the resolved endpoints from it.
  fmt::print("tunefleet-coordinator ready client={} worker={} metrics={} data={} curve={}\n",
             (*coord)->client_endpoint(), (*coord)->worker_endpoint(), metrics, data_dir,
             options.curve ? "on" : "off");
  std::fflush(stdout);
  Status s = (*coord)->Run();
  if (!s.ok()) {
    fmt::print(stderr, "tunefleet-coordinator: {}\n", s.ToString());
    return ExitCodeFor(s);
  }
  return 0;
}
