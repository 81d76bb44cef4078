// CoordinatorMetrics: the coordinator's Prometheus families (DESIGN.md
// "Observability"), registered on a registry passed in from main(). Names are
// tunefleet_<noun>_<unit>[_total]. prometheus-cpp metrics are thread-safe; the loop
// thread updates them, the exposer thread reads them.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace tunefleet::coordinator {

struct CoordinatorMetrics {
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Gauge>& tasks;  // {state}
  prometheus::Gauge& tasks_queued;
  prometheus::Gauge& tasks_running;
  prometheus::Gauge& tasks_done;
  prometheus::Gauge& tasks_failed;
  prometheus::Gauge& tasks_cancelled;
  prometheus::Counter& submissions;
  prometheus::Counter& jobs_dispatched;
  prometheus::Counter& jobs_completed;
  prometheus::Counter& jobs_requeued;
  prometheus::Counter& jobs_abandoned;  // failed on every attempt: their configs recorded failed
  // Tasks resumed at start with recorded results, by how their strategy was brought back:
  // replayed exactly (plan_replay.h), or relearned from its results (a log or checkpoint
  // this build could not use).
  prometheus::Family<prometheus::Counter>& tasks_resumed;  // {how}
  prometheus::Counter& tasks_resumed_exactly;
  prometheus::Counter& tasks_resumed_relearning;
  prometheus::Counter& evaluations;
  prometheus::Counter& failed_evaluations;
  prometheus::Counter& duplicate_results;
  prometheus::Family<prometheus::Counter>& rejected_results;  // {reason}
  prometheus::Family<prometheus::Counter>& kb_imported;       // {outcome}: added, replaced, kept, refused
  prometheus::Counter& results_not_leased;  // from a peer that never held the job
  prometheus::Counter& results_not_in_job;  // a config the job did not ask for
  prometheus::Counter& invalid_latencies;   // ok with a latency <= 0 or not finite: recorded failed
  prometheus::Counter& results_cancelled;   // for a task cancelled while its job was out
  prometheus::Counter& curve_refused;  // handshakes the ZAP handler refused (a key not listed)
  prometheus::Counter& worker_registrations;  // WorkerReady messages: more than workers started means flapping
  prometheus::Gauge& workers_connected;
  prometheus::Gauge& worker_slots;
  prometheus::Gauge& jobs_in_flight;
  prometheus::Gauge& kb_entries;
  prometheus::Gauge& schedules;  // submissions splitting a total budget, not yet ended
  prometheus::Gauge& tasks_in_memory;  // running and recently finished (keep_finished)
  prometheus::Gauge& submissions_in_memory;  // those with a task in memory, a watch or a scheduler
  prometheus::Gauge& queue_depth;  // running tasks with work to hand out and no job out
  prometheus::Family<prometheus::Counter>& lookups;  // {result=hit|miss}
  prometheus::Counter& lookup_hits;
  prometheus::Counter& lookup_misses;
  prometheus::Family<prometheus::Counter>& client_requests;  // {kind, code}
  prometheus::Family<prometheus::Histogram>& client_request_duration;  // {kind}: the D of RED
  prometheus::Histogram& RequestDuration(const std::string& kind);
  prometheus::Gauge& rocksdb_sst_bytes;
  prometheus::Gauge& rocksdb_memtable_bytes;
  prometheus::Gauge& rocksdb_pending_compaction_bytes;
  prometheus::Histogram& job_duration;
  prometheus::Histogram& planning;  // one strategy Ask: the loop does nothing else meanwhile
  prometheus::Family<prometheus::Gauge>& task_best_improvement;  // {task}
};

}  // namespace tunefleet::coordinator
