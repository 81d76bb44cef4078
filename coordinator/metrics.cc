#include "coordinator/metrics.h"

namespace tunefleet::coordinator {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& r)
    : tasks(BuildGauge().Name("tunefleet_tasks").Help("Tasks by state").Register(r)),
      tasks_queued(tasks.Add({{"state", "queued"}})),
      tasks_running(tasks.Add({{"state", "running"}})),
      tasks_done(tasks.Add({{"state", "done"}})),
      tasks_failed(tasks.Add({{"state", "failed"}})),
      tasks_cancelled(tasks.Add({{"state", "cancelled"}})),
      submissions(BuildCounter().Name("tunefleet_submissions_total").Help("Accepted submissions").Register(r).Add({})),
      jobs_dispatched(BuildCounter().Name("tunefleet_jobs_dispatched_total").Help("Jobs sent to worker slots").Register(r).Add({})),
      jobs_completed(BuildCounter().Name("tunefleet_jobs_completed_total").Help("Jobs whose final result arrived").Register(r).Add({})),
      jobs_requeued(BuildCounter().Name("tunefleet_jobs_requeued_total").Help("Jobs requeued after a lost worker, expired lease or failure").Register(r).Add({})),
      jobs_abandoned(BuildCounter().Name("tunefleet_jobs_abandoned_total").Help("Jobs that failed on every attempt; their configs are recorded failed").Register(r).Add({})),
      tasks_resumed(BuildCounter()
                        .Name("tunefleet_tasks_resumed_total")
                        .Help("Tasks resumed with recorded results at start, by how their search was restored: "
                              "exactly (checkpoint and plan log replayed), or relearning from its results")
                        .Register(r)),
      tasks_resumed_exactly(tasks_resumed.Add({{"how", "exactly"}})),
      tasks_resumed_relearning(tasks_resumed.Add({{"how", "relearning"}})),
      evaluations(BuildCounter().Name("tunefleet_evaluations_total").Help("Config evaluations recorded").Register(r).Add({})),
      failed_evaluations(BuildCounter().Name("tunefleet_failed_evaluations_total").Help("Config evaluations that failed").Register(r).Add({})),
      duplicate_results(BuildCounter().Name("tunefleet_duplicate_results_total").Help("Results dropped because (task, config) was already recorded").Register(r).Add({})),
      rejected_results(BuildCounter().Name("tunefleet_rejected_results_total").Help("Worker results refused, by reason").Register(r)),
      kb_imported(BuildCounter()
                      .Name("tunefleet_kb_imported_entries_total")
                      .Help("Entries of `cache import` requests written (added, replaced) or left out because the "
                            "stored one is as fast (kept), dry runs not counted; and refused, dry runs counted (the "
                            "CLI's all-or-nothing check is one)")
                      .Register(r)),
      results_not_leased(rejected_results.Add({{"reason", "not_leased"}})),
      results_not_in_job(rejected_results.Add({{"reason", "not_in_job"}})),
      invalid_latencies(rejected_results.Add({{"reason", "invalid_latency"}})),
      results_cancelled(rejected_results.Add({{"reason", "cancelled"}})),
      curve_refused(BuildCounter().Name("tunefleet_curve_refused_total").Help("CURVE handshakes refused: a peer whose public key is not listed (0 without CURVE)").Register(r).Add({})),
      worker_registrations(BuildCounter().Name("tunefleet_worker_registrations_total").Help("Workers registering (WorkerReady), first time or again after a coordinator restart or a missed heartbeat").Register(r).Add({})),
      workers_connected(BuildGauge().Name("tunefleet_workers_connected").Help("Registered, live workers").Register(r).Add({})),
      worker_slots(BuildGauge().Name("tunefleet_worker_slots").Help("Evaluation slots of live workers").Register(r).Add({})),
      jobs_in_flight(BuildGauge().Name("tunefleet_jobs_in_flight").Help("Jobs leased to workers").Register(r).Add({})),
      kb_entries(BuildGauge().Name("tunefleet_kb_entries").Help("Knowledge-base entries (RocksDB estimate)").Register(r).Add({})),
      schedules(BuildGauge().Name("tunefleet_scheduled_submissions").Help("Submissions whose tasks share a total budget and have not all ended").Register(r).Add({})),
      tasks_in_memory(BuildGauge().Name("tunefleet_tasks_in_memory").Help("Tasks the coordinator holds in memory: unfinished ones and those finished less than --keep-finished-s ago (about 4.5 KB each); the rest are read from RocksDB").Register(r).Add({})),
      submissions_in_memory(BuildGauge().Name("tunefleet_submissions_in_memory").Help("Submissions the coordinator holds in memory: those with a task in memory, a watch or a shared-budget scheduler; the rest are read from RocksDB").Register(r).Add({})),
      queue_depth(BuildGauge().Name("tunefleet_queue_depth").Help("Running tasks that have work to hand out and no job at a worker: above 0 for long, the pool needs more slots").Register(r).Add({})),
      lookups(BuildCounter().Name("tunefleet_lookups_total").Help("Keys looked up in the knowledge base (lookup requests, not submissions), by result").Register(r)),
      lookup_hits(lookups.Add({{"result", "hit"}})),
      lookup_misses(lookups.Add({{"result", "miss"}})),
      client_requests(BuildCounter().Name("tunefleet_client_requests_total").Help("Client requests by kind and status code").Register(r)),
      client_request_duration(BuildHistogram().Name("tunefleet_client_request_duration_seconds").Help("Time the coordinator took to answer a client request, by kind").Register(r)),
      rocksdb_sst_bytes(BuildGauge().Name("tunefleet_rocksdb_sst_bytes").Help("RocksDB SST files, all column families").Register(r).Add({})),
      rocksdb_memtable_bytes(BuildGauge().Name("tunefleet_rocksdb_memtable_bytes").Help("RocksDB memtables, all column families").Register(r).Add({})),
      rocksdb_pending_compaction_bytes(BuildGauge().Name("tunefleet_rocksdb_pending_compaction_bytes").Help("RocksDB's estimate of bytes compaction still has to rewrite").Register(r).Add({})),
      job_duration(BuildHistogram().Name("tunefleet_job_duration_seconds").Help("Dispatch to final result of a job").Register(r).Add(
          {}, prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60})),
      planning(BuildHistogram().Name("tunefleet_planning_seconds").Help("Time a strategy took to plan one job (the coordinator loop waits on it)").Register(r).Add(
          {}, prometheus::Histogram::BucketBoundaries{0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5})),
      task_best_improvement(BuildGauge().Name("tunefleet_task_best_improvement_ratio").Help("Baseline over best latency of each running task").Register(r)) {
  // At 0 from the start, so the dashboard shows 0 rather than no data before an import.
  for (const char* outcome : {"added", "replaced", "kept", "refused"}) kb_imported.Add({{"outcome", outcome}});
}

prometheus::Histogram& CoordinatorMetrics::RequestDuration(const std::string& kind) {
  // A lookup of keys in the knowledge base takes microseconds, a 10,000-op submission a
  // fraction of a second.
  return client_request_duration.Add({{"kind", kind}},
                                     prometheus::Histogram::BucketBoundaries{1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5, 1, 5});
}

}  // namespace tunefleet::coordinator
