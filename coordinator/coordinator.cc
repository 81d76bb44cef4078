#include "coordinator/coordinator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/core.h>

#include "coordinator/index_set.h"
#include "coordinator/kb_transfer.h"
#include "coordinator/lookup.h"
#include "coordinator/metrics.h"
#include "coordinator/nearest.h"
#include "coordinator/plan_replay.h"
#include "coordinator/progress_log.h"
#include "coordinator/strategy.h"
#include "coordinator/task_scheduler.h"
#include "tunefleet/common/transport.h"
#include "tunefleet/common/tuning_problem.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::coordinator {
namespace {

using TimePoint = Clock::TimePoint;

// A running task's strategy is checkpointed with its results once at least this many
// new results (and a quarter of all so far) have arrived since the last checkpoint.
constexpr uint64_t kCheckpointEvery = 64;
// A turn's dispatch stops planning after heartbeat_interval / kDispatchSlices.
constexpr int kDispatchSlices = 4;
// Worker messages CheckLiveness reads before it calls a worker silent: one turn's batch
// more, so a backlog of results cannot hold the loop past the workers' own patience
// (draining 100,000 made a restarted coordinator under ASan send no heartbeat for 300 ms,
// and its workers registered twice).
constexpr size_t kDrainMax = 256;


struct WorkerEntry {
  std::string identity;  // ZeroMQ routing id
  std::string id;        // what the worker calls itself
  std::set<std::string, std::less<>> socs;
  uint32_t slots = 0;
  uint32_t credits = 0;
  TimePoint last_seen;
  TimePoint registered;
  uint64_t registration = 0;  // which WorkerReady of this routing id: jobs and credits belong to one
  uint64_t jobs_completed = 0;
  bool gone = false;  // said Disconnect: dropped at the next liveness check
  std::set<uint64_t> jobs;
};

// What to run: the valid configs, and the compact range they came from if any.
struct JobSpec {
  uint32_t attempt = 1;
  std::vector<ConfigIndex> configs;
  bool is_range = false;
  ConfigIndex begin = 0, end = 0;
};

struct Lease {
  uint64_t job_id = 0;
  uint64_t task_id = 0;
  JobSpec spec;
  std::string worker;  // identity
  uint64_t registration = 0;  // the worker's registration it was sent to
  TimePoint dispatched;
  TimePoint deadline;
  bool final_seen = false;  // once retired: its worker's credit came back
};

// Answers whether a config is one the job asked for, in O(log n) per question.
class JobMembership {
 public:
  explicit JobMembership(const JobSpec& spec) : spec_(spec) {
    if (!spec.is_range) {
      sorted_ = spec.configs;
      std::sort(sorted_.begin(), sorted_.end());
    }
  }
  bool Covers(ConfigIndex index) const {
    if (spec_.is_range) return index >= spec_.begin && index < spec_.end;
    return std::binary_search(sorted_.begin(), sorted_.end(), index);
  }

 private:
  const JobSpec& spec_;
  std::vector<ConfigIndex> sorted_;
};

// Leases requeued while their worker may still be measuring: a late original result is
// recorded (first result per config wins, DESIGN.md "Leases"). Bounded, oldest first out.
constexpr size_t kRetiredLeases = 4096;

// Watches held at once: a watch beyond that is answered at once (the CLI then pauses
// before asking again), so a flood of watchers costs polls, not held replies.
constexpr size_t kMaxHeldWatches = 1024;
constexpr uint32_t kMaxWatchWaitMs = 10000;
constexpr uint32_t kMaxWatchEvents = 1000;

struct Task {
  TaskRecord rec;
  OpKeyHash key_hash;  // of rec.key, set with it
  std::optional<TuningProblem> problem;
  std::unique_ptr<Strategy> strategy;
  std::string strategy_ran;  // the strategy as asked, and for "auto" what it chose
  double emitted_best_us = std::numeric_limits<double>::infinity();  // in the last `improved` event
  IndexSet recorded;
  IndexSet planned;  // handed out: in flight, waiting, or recorded
  std::deque<JobSpec> waiting;              // requeued jobs (and the baseline), sent first
  size_t in_flight = 0;
  bool strategy_done = false;
  uint64_t best_job_id = 0;
  uint64_t improved_at = 0;      // evaluations recorded when the best last improved
  uint64_t checkpointed_at = 0;  // evaluations recorded at the last strategy checkpoint
  // Planned since the last checkpoint and not yet written: goes out with the next results.
  std::vector<PlanRecord> unpersisted_plans;
  uint64_t next_plan = 0;  // PlanRecord::number of the next one
  // Set when the task shares its submission's total budget: the submission's
  // scheduler, not the task's own budget, decides how much it gets.
  uint64_t scheduled_by = 0;
  size_t schedule_index = 0;
  // When the heartbeat tick first saw it finished: it leaves memory keep_finished later.
  std::optional<TimePoint> finished_seen;

  uint64_t limit() const {
    return rec.budget == 0 || scheduled_by ? std::numeric_limits<uint64_t>::max() : rec.budget;
  }
};

// A submission whose tasks share one budget, split by a TaskScheduler.
struct Schedule {
  uint64_t submission_id = 0;
  uint64_t total = 0;
  uint64_t planned = 0;  // configs handed out across its tasks
  TaskScheduler scheduler;
  std::vector<uint64_t> task_ids;  // scheduler index -> task id
  bool finished = false;
};

// A client request's kind as the metrics label it (tunefleet_client_requests_total{kind});
// "invalid" for a message that is not a client request.
const char* RequestKind(schema::Envelope::Body::Which which) {
  switch (which) {
    case schema::Envelope::Body::SUBMIT: return "submit";
    case schema::Envelope::Body::STATUS: return "status";
    case schema::Envelope::Body::LOOKUP: return "lookup";
    case schema::Envelope::Body::CANCEL: return "cancel";
    case schema::Envelope::Body::KB_EXPORT: return "kb_export";
    case schema::Envelope::Body::KB_IMPORT: return "kb_import";
    case schema::Envelope::Body::WORKERS: return "workers";
    case schema::Envelope::Body::WATCH: return "watch";
    default: return "invalid";
  }
}

schema::TaskState WireTaskState(TaskState s) {
  static const schema::TaskState kStates[] = {schema::TaskState::QUEUED, schema::TaskState::RUNNING,
                                              schema::TaskState::DONE, schema::TaskState::FAILED,
                                              schema::TaskState::CANCELLED};
  return kStates[static_cast<int>(s)];
}

// Configs per job of a scheduled task: small, so the scheduler re-decides often, about 8
// jobs per task overall.
uint64_t ScheduledJobSize(uint64_t total_budget, size_t tasks) {
  return std::max<uint64_t>(1, total_budget / (8 * std::max<size_t>(tasks, 1)));
}

// A config by parameter name, as the knowledge base and status report it.
std::vector<std::pair<std::string, int64_t>> NamedConfig(const SearchSpace& space, ConfigIndex index) {
  const Config config = space.Decode(index);
  std::vector<std::pair<std::string, int64_t>> named;
  for (size_t i = 0; i < config.size(); ++i) named.emplace_back(space.params()[i].name, config[i]);
  return named;
}

Result<TaskScheduler::Policy> ParseSchedulerName(const std::string& name) {
  if (name.empty() || name == "gradient") return TaskScheduler::Policy::kGradient;
  if (name == "round-robin") return TaskScheduler::Policy::kRoundRobin;
  return InvalidArgument("unknown scheduler '" + name + "' (known: gradient, round-robin)");
}

}  // namespace

class Coordinator::Impl {
 public:
  Impl(CoordinatorOptions options, Store& store, const SocCatalog& catalog, Clock& clock,
       prometheus::Registry& registry, zmq::context_t& ctx)
      : options_(std::move(options)),
        store_(store),
        catalog_(catalog),
        clock_(clock),
        metrics_(registry),
        ctx_(ctx),
        client_(transport::MakeSocket(ctx, zmq::socket_type::router)),
        workers_sock_(transport::MakeSocket(ctx, zmq::socket_type::router)) {}

  Status Init() {
    if (options_.curve) {
      // The handler first: libzmq admits every key while none is bound.
      TF_ASSIGN_OR_RETURN(zap_, curve::ZapHandler::Start(ctx_, curve::ServerAllowList(*options_.curve)));
      TF_RETURN_IF_ERROR(curve::MakeServer(client_, options_.curve->server, curve::kClientDomain));
      TF_RETURN_IF_ERROR(curve::MakeServer(workers_sock_, options_.curve->server, curve::kWorkerDomain));
    }
    TF_RETURN_IF_ERROR(transport::Bind(client_, options_.client_endpoint));
    client_endpoint_ = transport::LastEndpoint(client_);
    TF_ASSIGN_OR_RETURN(uint64_t epoch, store_.NextId("job-epoch"));
    next_job_id_ = epoch << 32;
    progress_ = ProgressLog(epoch << 32, options_.progress_window);  // numbers no earlier process gave
    TF_RETURN_IF_ERROR(Resume());
    // Workers only after the resume: a worker that registered while a slow resume ran
    // heard no heartbeat, gave up and registered again (seen under ASan), and each
    // registration requeues the jobs it was given.
    TF_RETURN_IF_ERROR(transport::Bind(workers_sock_, options_.worker_endpoint));
    worker_endpoint_ = transport::LastEndpoint(workers_sock_);
    return Status::Ok();
  }

  Status Run(const std::atomic<bool>& stop);
  // Stamped every turn of Run's loop, read by the watchdog's thread (loop_watchdog.h).
  std::atomic<Clock::Duration::rep> last_turn_ns_{0};

  std::string client_endpoint_, worker_endpoint_;

 private:
  // The op's search space and baseline: from the SoC catalog, or for SoC kReplaySoc
  // from the replay cache of its kernel. kInvalidArgument / kNotFound naming what to fix.
  Result<TuningProblem> ProblemFor(const OpKey& key) const;

  // --- lifecycle of tasks -------------------------------------------------------
  Status Resume();
  Status ActivateTask(Task& task, const std::vector<StoredResult>& recovered);
  // Adds the submission's running tasks to runnable_ (dispatch), under its priority.
  void MakeRunnable(const SubmissionRecord& sub);
  // Queues the best configs of the nearest tuned shapes that are valid here (at most
  // max_seeds) right after the baseline. Returns how many were queued.
  size_t WarmStart(Task& task, size_t max_seeds);
  // The knowledge base's nearest-shape index: one scan at its first use, then kept
  // current by Indexed() after every knowledge-base write.
  Result<const NearestIndex*> Nearest();
  void Indexed(const KbEntry& e) {
    if (nearest_index_) nearest_index_->Put(e);
  }
  // Logs what was planned (plan_replay.h), to be written with the task's next results.
  void LogPlan(Task& task, bool asked, uint64_t max_configs, const JobSpec& spec);
  // The strategy's state now, with what it handed out that is not recorded yet.
  // Marks the task checkpointed now.
  StrategyCheckpointRecord MakeCheckpoint(Task& task);
  // Records the results that belong to `job`; a config outside the job is dropped and a
  // config reported ok with a latency that is not positive and finite is recorded failed.
  void RecordResults(Task& task, const Lease& job, schema::JobResult::Reader r);
  void RecordFailure(Task& task, uint64_t job_id, const std::vector<ConfigIndex>& configs,
                     const std::string& why);
  // `out` receives the result to persist; nullptr while replaying recovered results.
  // `tell` is false for recovered results a restored strategy checkpoint already saw.
  void Record(Task& task, uint64_t job_id, ConfigIndex index, bool ok, double latency,
              const std::string& error, std::vector<StoredResult>* out, bool tell = true);
  // Persists results, with a strategy checkpoint when enough is new since the last one.
  void Persist(Task& task, const std::vector<StoredResult>& stored);
  // Whether the task's time or no-improvement budget is spent.
  bool OutOfPatienceOrTime(const Task& task) const;
  bool OutOfTime(const Task& task) const;
  // Configs planned since the best last improved (before a best: those still out).
  uint64_t PlannedSincePatienceStart(const Task& task) const;
  // Whether NextJob holds a task back only until its jobs out report: their results
  // decide whether its patience is spent.
  bool WaitsOnItsJobsOut(const Task& task) const;
  void MaybeFinish(Task& task);
  // A finished task's state (and knowledge-base entry, if any) persisted; its search
  // state and queued work released.
  // `sync` as Store::FinishTask's.
  void Retire(Task& task, const std::optional<KbEntry>& entry, bool sync = true);
  void Requeue(Lease lease, const std::string& why);
  // The job `job_id` at `attempt` if `identity` holds it now or held it before it was
  // requeued; nullptr for anyone else (results from them are dropped).
  Lease* LeaseOf(uint64_t job_id, const std::string& identity, uint32_t attempt);
  // The task's next job of at most `cap` new configs (requeued work first); `fresh` says
  // whether it holds newly planned configs.
  std::optional<JobSpec> NextJob(Task& task, uint64_t cap, bool* fresh);
  void SendJob(const std::string& identity, WorkerEntry& worker, Task& task, JobSpec spec);
  // Serves scheduled submissions first; false when the worker's credit is used up.
  bool DispatchScheduledJob(const std::string& identity, WorkerEntry& worker, Schedule& schedule);
  bool ServeSubmission(const std::string& identity, WorkerEntry& worker, uint64_t submission,
                       std::set<uint64_t>& tasks);
  void FinishSchedule(Schedule& schedule);
  Status RestoreSchedule(const SubmissionRecord& sub);
  void Dispatch();
  void DispatchOne(const std::string& identity, WorkerEntry& worker);
  bool SliceSpent() const { return clock_.Now() >= dispatch_until_; }
  void CheckLiveness();
  // Tells the workers holding the task's jobs to stop them.
  void StopJobsOut(const Task& task);
  // The search of a task whose time or patience is spent ends: nothing more is asked.
  void EndSearch(Task& task);
  // Erases the worker, requeueing its leases; `why` ends "worker <id> <why>" in the log.
  std::map<std::string, WorkerEntry>::iterator DropWorker(std::map<std::string, WorkerEntry>::iterator it,
                                                          const std::string& why);
  void ProbeNamesakes();
  // Ends the running tasks whose time or patience is spent, once a heartbeat interval:
  // NextJob notices it only for tasks a slot reaches, and under priorities a lower
  // level's task may wait long for one. Sets the queue depth on the way.
  void EndSpentTasks();
  // Drops the schedules whose tasks have all finished (their records stay for status):
  // about 5 KB each, kept until restart they added up over months of total-budget
  // submissions. Once a heartbeat interval, outside any dispatch that holds a schedule.
  void DropEndedSchedules();
  // Forgets the shared task sets of submissions no held watch uses (their next watch
  // builds it again), so ended submissions' sets do not stay.
  void DropUnwatched() {
    std::unordered_set<uint64_t> held;
    for (const auto& h : held_) held.insert(h.submission);
    std::erase_if(watched_, [&](const auto& entry) { return !held.contains(entry.first); });
  }
  void UpdateTaskGauges();
  // Running, but no job of it was ever sent: reported as queued.
  static bool IsWaiting(const Task& task) {
    return task.rec.state == TaskState::kRunning && task.rec.started_ms == 0;
  }

  // --- messages -----------------------------------------------------------------
  void OnWorkerMessage(std::vector<zmq::message_t>& frames);
  void OnClientMessage(std::vector<zmq::message_t>& frames);
  Status HandleSubmit(schema::SubmitRequest::Reader req, schema::Envelope::Body::Builder reply);
  Status HandleStatus(schema::StatusRequest::Reader req, schema::Envelope::Body::Builder reply);
  Status HandleCancel(schema::CancelRequest::Reader req, schema::Envelope::Body::Builder reply);
  Status HandleKbExport(schema::KbExportRequest::Reader req, schema::Envelope::Body::Builder reply);
  Status HandleKbImport(schema::KbImportRequest::Reader req, schema::Envelope::Body::Builder reply);
  Status HandleWorkers(schema::Envelope::Body::Builder reply);
  // Answers at once when there is something new (or nothing may be waited for);
  // otherwise parks the request in held_ (the caller keeps its route) to be answered by
  // AnswerHeldWatches.
  Status HandleWatch(schema::WatchRequest::Reader req, schema::Envelope::Body::Builder reply);
  // What watches of one submission share: its distinct task ids, and where its tasks
  // stand (recounted at most every 250 ms, or when its last tasks may have finished:
  // every request recounting 10,000 tasks cost 0.8 ms per watcher). Dropped at a
  // heartbeat tick when no watch of it is held.
  struct WatchTotals {
    uint32_t tasks = 0, finished = 0;
    uint64_t evaluated = 0, planned = 0;
  };
  struct WatchedSubmission {
    std::unordered_set<uint64_t> tasks;  // filled on the first watch
    WatchTotals totals;
    uint32_t finished_seen = 0;  // `finished` events read since the count
    // Evaluations of its finished tasks no longer in memory, read from the store once.
    std::unordered_map<uint64_t, uint64_t> evicted_evaluated;
    TimePoint counted_at;
    bool counted = false;
  };
  // A watch reply's content: the events after `after` of the submission's tasks, and
  // where its tasks stand.
  struct WatchAnswer {
    ProgressRead read;
    WatchTotals totals;
    bool done = true;
    bool Worth() const { return !read.events.empty() || read.gap || done; }
  };
  WatchAnswer ReadWatch(uint64_t submission, uint64_t after, uint32_t max);
  static void FillWatchReply(uint64_t submission, const WatchAnswer& a, schema::WatchReply::Builder out);
  // Answers the held watches that have news, or whose wait is over (all of them with
  // `all`: at shutdown, so watchers hear at once rather than at their timeout); each loop turn.
  void AnswerHeldWatches(bool all = false);
  void SendToClient(const std::vector<zmq::message_t>& route, wire::Outgoing& reply);
  // A task event for `watch`, from the task's record as it is now.
  void Emit(const Task& task, ProgressKind kind);
  // kNotFound naming the id for a submission this coordinator never accepted.
  // In memory, or read back from the store (and kept until the next sweep lets it go).
  Result<const SubmissionRecord*> FindSubmission(uint64_t id);
  // Stops a running task for good: persisted as cancelled, nothing written to the
  // knowledge base; the workers holding its jobs are told to stop them.
  void CancelTask(Task& task);
  Status HandleLookup(schema::LookupRequest::Reader req, schema::Envelope::Body::Builder reply);
  void FillTaskStatus(Task& task, schema::TaskStatus::Builder b);
  // A task as Resume and a status of one no longer in memory take it from its record:
  // under its canonical key (a record may hold an older form, kKbKeyVersion), hashed.
  static Task TaskFromRecord(TaskRecord rec);
  // Drops from memory the tasks finished keep_finished ago that no running task
  // scheduler holds, then the submissions none of whose tasks is left in memory and that
  // no watch or scheduler holds; `status`, `watch` and `cancel` read them from the store
  // after that.
  void EvictFinishedTasks(TimePoint now);
  void EvictFinishedSubmissions();
  void SendToWorker(const std::string& identity, wire::Outgoing& msg);
  void Log(const std::string& line) {
    if (options_.verbose) fmt::print(stderr, "coordinator: {}\n", line);
  }
  // A refused client request is logged also without -v, so an operator sees why users'
  // commands fail; at most 10 lines in 10 seconds (a misbehaving client cannot flood the
  // log), the next one saying how many went unlogged. Every one is counted in
  // tunefleet_client_requests_total{code}.
  void LogRefused(std::string_view kind, const Status& s) {
    const TimePoint now = clock_.Now();
    if (now - refused_window_start_ >= std::chrono::seconds(10)) {
      refused_window_start_ = now;
      refused_in_window_ = 0;
    }
    if (++refused_in_window_ > 10) {
      ++refused_unlogged_;
      return;
    }
    fmt::print(stderr, "coordinator: refused {} request: {}{}\n", kind == "invalid" ? "an invalid" : "a " + std::string(kind),
               Clipped(s.ToString()), refused_unlogged_ ? fmt::format(" ({} more refused and not logged before it)", refused_unlogged_) : "");
    refused_unlogged_ = 0;
  }

  CoordinatorOptions options_;
  Store& store_;
  std::optional<NearestIndex> nearest_index_;  // see Nearest()
  const SocCatalog& catalog_;
  Clock& clock_;
  CoordinatorMetrics metrics_;
  zmq::context_t& ctx_;
  std::unique_ptr<curve::ZapHandler> zap_;  // with CURVE; outlives the sockets it guards
  zmq::socket_t client_;
  zmq::socket_t workers_sock_;

  std::map<uint64_t, Task> tasks_;  // by id; ordered so dispatch is deterministic
  std::map<uint64_t, SubmissionRecord> submissions_;
  std::map<uint64_t, Schedule> schedules_;  // by submission id
  std::map<std::string, WorkerEntry> workers_;  // by identity
  // Earlier registrations of a worker id that registered again -> turns left to probe them.
  std::map<std::string, int> namesake_probes_;
  static constexpr int kNamesakeProbeTurns = 50;
  std::unordered_map<uint64_t, Lease> leases_;  // by job id
  std::unordered_map<uint64_t, Lease> retired_;  // requeued leases by job id, kRetiredLeases at most
  std::deque<uint64_t> retired_order_;
  uint64_t next_job_id_ = 0;
  uint64_t registrations_ = 0;  // WorkerReady messages accepted
  // Running tasks to dispatch, by submission priority (highest first), then by each live
  // submission waiting on them (a shared task under each of its submissions): filled at
  // Resume and by each accepted submission; dispatch drops what it finds finished or
  // cancelled.
  std::map<int32_t, std::map<uint64_t, std::set<uint64_t>>, std::greater<>> runnable_;
  std::map<int32_t, uint64_t> dispatch_submission_cursor_;  // per priority: the submission served last
  std::map<uint64_t, uint64_t> dispatch_task_cursor_;  // per submission served: its task served last
  std::string dispatch_worker_cursor_;  // identity of the worker served last
  // `watch`: task events, and the requests waiting for one.
  ProgressLog progress_{0, 1};  // sized in Init
  std::unordered_map<uint64_t, WatchedSubmission> watched_;
  // The progress head when each submission was accepted by this process: none of its
  // events come before it, so a watch from 0 that finds older events dropped lost none
  // of its own. Submissions resumed at a restart start at the process's first number.
  std::unordered_map<uint64_t, uint64_t> progress_floor_;
  struct HeldWatch {
    std::vector<zmq::message_t> route;  // the frames before the request's payload
    uint64_t request_id = 0;
    uint64_t submission = 0;
    uint64_t after = 0;
    uint32_t max_events = 0;
    TimePoint deadline;
  };
  std::optional<HeldWatch> hold_;  // set by HandleWatch for OnClientMessage to park
  std::vector<HeldWatch> held_;
  uint64_t held_seen_head_ = 0;  // progress_.head() when the held watches were last read
  TimePoint dispatch_until_;            // end of this turn's dispatch slice
  TimePoint next_heartbeat_;
  // LogRefused's window: its start, the refusals in it, those not logged since a line.
  TimePoint refused_window_start_{};
  uint64_t refused_in_window_ = 0;
  uint64_t refused_unlogged_ = 0;
};

// ----------------------------------------------------------------------------------
// Task lifecycle

Status Coordinator::Impl::Resume() {
  // Only the open index is read: unfinished tasks and the submissions still in memory
  // when the coordinator stopped. A finished one is read from the store when asked for
  // (loading every task ever run made a restart hold them all, 4.5 KB each, and reading
  // them made it as slow as the history was long).
  TF_ASSIGN_OR_RETURN(std::vector<SubmissionRecord> subs, store_.LoadOpenSubmissions());
  for (auto& s : subs) submissions_[s.submission_id] = std::move(s);
  // Records written before submissions kept their priority have 0; the unfinished tasks
  // they created carry it (the lowest of them: a task another submission shared may have
  // been raised).
  std::vector<TaskRecord> records;
  std::map<uint64_t, int32_t> created_priority;
  TF_RETURN_IF_ERROR(store_.ForEachOpenTask([&](TaskRecord rec) {
    auto [it, fresh] = created_priority.emplace(rec.submission_id, rec.priority);
    if (!fresh) it->second = std::min(it->second, rec.priority);
    records.push_back(std::move(rec));
  }));
  // A cancel writes its submission first and its tasks unsynced after (HandleCancel): an
  // unfinished task that only cancelled submissions wait on was being cancelled.
  std::unordered_set<uint64_t> waited_on;
  for (const auto& [id, sub] : submissions_) {
    if (!sub.cancelled) waited_on.insert(sub.task_ids.begin(), sub.task_ids.end());
  }
  for (TaskRecord& rec : records) {
    const uint64_t id = rec.task_id;
    Task& task = tasks_[id] = TaskFromRecord(std::move(rec));
    if (!waited_on.contains(task.rec.task_id)) {
      task.rec.state = TaskState::kCancelled;
      (void)store_.FinishTask(task.rec, std::nullopt);
      Log(fmt::format("task {} cancelled: its submissions were", task.rec.task_id));
      continue;
    }
    TF_ASSIGN_OR_RETURN(std::vector<StoredResult> recovered, store_.LoadResults(task.rec.task_id));
    Status s = ActivateTask(task, recovered);
    if (!s.ok()) {
      // The task can no longer run here (e.g. its SoC left the catalog): fail it, keep serving.
      fmt::print(stderr, "coordinator: task {} cannot resume: {}\n", task.rec.task_id, s.ToString());
      task.rec.state = TaskState::kFailed;
      (void)store_.FinishTask(task.rec, std::nullopt);
      continue;
    }
    Log(fmt::format("resumed task {} with {} recorded results", task.rec.task_id, recovered.size()));
  }
  for (const auto& [id, sub] : submissions_) TF_RETURN_IF_ERROR(RestoreSchedule(sub));
  for (auto& [id, task] : tasks_) MaybeFinish(task);
  for (auto& [id, sub] : submissions_) {
    if (auto p = created_priority.find(id); sub.priority == 0 && p != created_priority.end()) sub.priority = p->second;
    MakeRunnable(sub);
  }
  // A submission whose tasks have all finished stays in the store only.
  EvictFinishedSubmissions();
  UpdateTaskGauges();
  return Status::Ok();
}

void Coordinator::Impl::MakeRunnable(const SubmissionRecord& sub) {
  if (sub.cancelled) return;
  for (uint64_t id : sub.task_ids) {
    auto t = tasks_.find(id);
    if (t != tasks_.end() && t->second.rec.state == TaskState::kRunning) {
      runnable_[sub.priority][sub.submission_id].insert(id);
    }
  }
}

Status Coordinator::Impl::RestoreSchedule(const SubmissionRecord& sub) {
  if (sub.total_budget == 0 || sub.scheduled_task_ids.empty()) return Status::Ok();
  // Resume brought only unfinished tasks into memory: a schedule none of whose tasks
  // runs has ended; one that goes on needs its finished tasks too (their evaluations).
  const bool goes_on = std::any_of(sub.scheduled_task_ids.begin(), sub.scheduled_task_ids.end(), [&](uint64_t id) {
    auto t = tasks_.find(id);
    return t != tasks_.end() && t->second.rec.state == TaskState::kRunning;
  });
  if (!goes_on) {
    TF_ASSIGN_OR_RETURN(std::optional<std::string> saved, store_.LoadSchedule(sub.submission_id));
    if (saved) (void)store_.DeleteSchedule(sub.submission_id);
    return Status::Ok();
  }
  for (uint64_t id : sub.scheduled_task_ids) {
    if (tasks_.contains(id)) continue;
    TF_ASSIGN_OR_RETURN(std::optional<TaskRecord> rec, store_.GetTask(id));
    if (rec) tasks_[id] = TaskFromRecord(std::move(rec).value());
  }
  TF_ASSIGN_OR_RETURN(TaskScheduler::Policy policy, ParseSchedulerName(sub.scheduler));
  // FLOPs, floors and similarity groups follow from the op keys and the SoC catalog, so a
  // restart rebuilds them as they were.
  std::vector<TaskScheduler::TaskInfo> infos;
  for (size_t i = 0; i < sub.scheduled_task_ids.size(); ++i) {
    auto it = tasks_.find(sub.scheduled_task_ids[i]);
    if (it == tasks_.end()) return FailedPrecondition("submission " + std::to_string(sub.submission_id) + " names an unknown task");
    double weight = i < sub.scheduled_weights.size() ? sub.scheduled_weights[i] : 1;
    const OpKey& key = it->second.rec.key;
    auto soc = catalog_.Find(key.soc);  // none for a replayed kernel: no floor
    infos.push_back(TaskScheduler::InfoFor(key, soc.ok() ? *soc : nullptr, weight));
  }
  TaskScheduler::Options options;
  options.batch_evaluations = ScheduledJobSize(sub.total_budget, infos.size());
  Schedule schedule{sub.submission_id, sub.total_budget, 0, TaskScheduler(policy, infos, options), sub.scheduled_task_ids, false};
  // The scheduler as it last learned (written after each batch), so the split continues as
  // it would have; results recorded after that are its next batch. Without one (a new
  // submission, or one from before it was written), one summary update per task.
  TF_ASSIGN_OR_RETURN(std::optional<std::string> saved, store_.LoadSchedule(sub.submission_id));
  if (saved) {
    Status s = schedule.scheduler.Restore(*saved);
    if (!s.ok()) {
      Log(fmt::format("submission {}: {}; its split starts again from its tasks' results", sub.submission_id, s.ToString()));
      schedule.scheduler = TaskScheduler(policy, infos, options);
      saved.reset();
    }
  }
  bool any_running = false;
  for (size_t i = 0; i < schedule.task_ids.size(); ++i) {
    Task& task = tasks_.at(schedule.task_ids[i]);
    task.scheduled_by = sub.submission_id;
    task.schedule_index = i;
    if (task.rec.state != TaskState::kRunning) {
      schedule.planned += task.rec.evaluated;
      schedule.scheduler.MarkExhausted(i);
      continue;
    }
    any_running = true;
    schedule.planned += task.planned.size();
    const uint64_t learned = saved ? schedule.scheduler.spent(i) : 0;
    if (task.rec.has_best && task.rec.evaluated > learned) {
      schedule.scheduler.Update(i, task.rec.evaluated - learned, task.rec.best_latency_us);
    }
  }
  if (!any_running) {
    if (saved) (void)store_.DeleteSchedule(sub.submission_id);
    return Status::Ok();
  }
  schedules_.emplace(sub.submission_id, std::move(schedule));
  return Status::Ok();
}

Task Coordinator::Impl::TaskFromRecord(TaskRecord rec) {
  Task task;
  task.rec = std::move(rec);
  // A task stored under an older canonical form (kKbKeyVersion) ends under its key now:
  // the same space, so its results and checkpoint still apply.
  if (auto key = CanonicalOpKey(task.rec.key); key.ok()) task.rec.key = std::move(key).value();
  task.key_hash = HashOpKey(task.rec.key);
  return task;
}

void Coordinator::Impl::EvictFinishedTasks(TimePoint now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    Task& task = it->second;
    // A cancelled task's jobs may still be at workers: it stays until they are back, so
    // their results are counted as results of a cancelled task.
    if (!IsFinished(task.rec.state) || task.in_flight > 0 ||
        (task.scheduled_by && schedules_.contains(task.scheduled_by))) {
      ++it;
    } else if (!task.finished_seen) {
      task.finished_seen = now;
      ++it;
    } else if (now - *task.finished_seen < options_.keep_finished) {
      ++it;
    } else {
      it = tasks_.erase(it);
    }
  }
  metrics_.tasks_in_memory.Set(static_cast<double>(tasks_.size()));
  EvictFinishedSubmissions();
}

void Coordinator::Impl::EvictFinishedSubmissions() {
  std::vector<uint64_t> closed;
  std::erase_if(submissions_, [&](const auto& entry) {
    const auto& [id, sub] = entry;
    if (watched_.contains(id) || schedules_.contains(id)) return false;
    if (std::any_of(sub.task_ids.begin(), sub.task_ids.end(), [&](uint64_t t) { return tasks_.contains(t); })) {
      return false;
    }
    progress_floor_.erase(id);
    closed.push_back(id);
    return true;
  });
  // A restart resumes what is still open; these need nothing from it.
  if (Status s = store_.CloseSubmissions(closed); !s.ok()) {
    fmt::print(stderr, "coordinator: could not close {} finished submissions in the store ({}); "
               "the next restart loads them and closes them then\n", closed.size(), s.ToString());
  }
  metrics_.submissions_in_memory.Set(static_cast<double>(submissions_.size()));
}

Result<TuningProblem> Coordinator::Impl::ProblemFor(const OpKey& key) const {
  if (key.soc == kReplaySoc) {
    for (const auto& cache : options_.replay_caches) {
      if (cache->kernel_name().empty() || cache->kernel_name() == key.op_type) return MakeReplayProblem(key, *cache);
    }
    return NotFound("no replay cache of kernel '" + key.op_type +
                    "' is loaded (give --replay-cache FILE of that kernel to tunefleet-coordinator, or to tunefleet tune)");
  }
  // Tuned with this simulator, an entry of another version would be filed under that
  // version, where no lookup of this one sees it and an import of the export refuses it.
  if (key.model_version != kSimModelVersion) {
    return InvalidArgument(fmt::format("op key of simulator model version {}: this coordinator simulates version {} "
                                       "(send keys of version {}, as this tunefleet CLI does)",
                                       key.model_version, kSimModelVersion, kSimModelVersion));
  }
  TF_ASSIGN_OR_RETURN(const SocSpec* soc, catalog_.Find(key.soc));
  return MakeTuningProblem(key, *soc);
}

Status Coordinator::Impl::ActivateTask(Task& task, const std::vector<StoredResult>& recovered) {
  TF_ASSIGN_OR_RETURN(TuningProblem problem, ProblemFor(task.rec.key));
  task.problem.emplace(std::move(problem));
  task.planned = IndexSet(task.problem->space.size());
  task.recorded = IndexSet(task.problem->space.size());
  // "auto" picks by budget: a shared submission budget counts as this task's budget.
  uint64_t budget = task.rec.budget;
  if (auto sub = submissions_.find(task.rec.submission_id); sub != submissions_.end() && sub->second.total_budget) {
    budget = sub->second.total_budget;
  }
  const bool ends_early = task.rec.budget_seconds > 0 || task.rec.patience > 0;
  TF_ASSIGN_OR_RETURN(task.strategy,
                      MakeStrategy(task.rec.strategy, task.problem->space, task.rec.seed, budget, ends_early));
  task.strategy_ran = StrategyThatRan(task.rec.strategy, task.problem->space.size(), budget, ends_early);
  task.rec.state = TaskState::kRunning;
  task.rec.evaluated = 0;
  task.rec.failed_configs = 0;
  task.rec.failure_reasons.clear();  // counted again from the recovered results
  task.rec.has_best = false;

  // Restore the strategy's checkpoint when there is one: it has seen the results with
  // seq < told; the rest are told in recording order, and what was out when it was
  // taken is measured again. Without one, a fresh strategy learns every recovered result.
  // Then what it planned since is replayed between those results (plan_replay.h), so
  // it continues as it would have; what was planned and not recorded is measured again.
  std::optional<StrategyCheckpointRecord> checkpoint;
  std::vector<PlanRecord> plans;
  if (!recovered.empty()) {
    TF_ASSIGN_OR_RETURN(checkpoint, store_.LoadCheckpoint(task.rec.task_id));
    TF_ASSIGN_OR_RETURN(plans, store_.LoadPlans(task.rec.task_id));
  }
  const ConfigIndex space_size = task.problem->space.size();
  bool exact = true;  // the strategy is brought back as it was, not relearned from results
  auto restore = [&]() -> Status {
    TF_ASSIGN_OR_RETURN(task.strategy,
                        MakeStrategy(task.rec.strategy, task.problem->space, task.rec.seed, budget, ends_early));
    if (!checkpoint) return Status::Ok();
    Status restored = task.strategy->Restore(checkpoint->state);
    if (!restored.ok()) {
      exact = false;
      fmt::print(stderr, "coordinator: task {}: {}; relearning from its results\n", task.rec.task_id, restored.ToString());
      TF_ASSIGN_OR_RETURN(task.strategy,
                          MakeStrategy(task.rec.strategy, task.problem->space, task.rec.seed, budget, ends_early));
      checkpoint.reset();
    }
    return Status::Ok();
  };
  TF_RETURN_IF_ERROR(restore());
  std::vector<StoredResult> in_order;
  in_order.reserve(recovered.size());
  for (const StoredResult& r : recovered) {
    if (r.index < space_size) in_order.push_back(r);  // one not of this space is measured again
  }
  std::stable_sort(in_order.begin(), in_order.end(),
                   [](const StoredResult& a, const StoredResult& b) { return a.seq < b.seq; });
  if (!in_order.empty()) {
    Status s = ReplayPlans(*task.strategy, space_size, in_order, checkpoint ? &*checkpoint : nullptr, plans);
    if (!s.ok()) {
      fmt::print(stderr, "coordinator: task {}: cannot replay its plans ({}); it continues from its checkpoint and results\n",
                 task.rec.task_id, s.ToString());
      exact = false;
      TF_RETURN_IF_ERROR(restore());
      for (const StoredResult& r : in_order) {
        if (!checkpoint || r.seq >= checkpoint->told) {
          task.strategy->Tell(r.index, r.ok ? std::optional<double>(r.latency_us) : std::nullopt);
        }
      }
    }
  }
  for (const StoredResult& r : in_order) {
    task.planned.insert(r.index);
    Record(task, r.job_id, r.index, r.ok, r.latency_us, r.error, nullptr, /*tell=*/false);
  }
  if (!in_order.empty()) (exact ? metrics_.tasks_resumed_exactly : metrics_.tasks_resumed_relearning).Increment();
  task.checkpointed_at = task.rec.evaluated;
  task.next_plan = plans.empty() ? 0 : plans.back().number + 1;
  JobSpec again;
  auto measure_again = [&](ConfigIndex i) {
    if (i < space_size && task.planned.insert(i)) again.configs.push_back(i);
  };
  if (checkpoint) std::for_each(checkpoint->outstanding.begin(), checkpoint->outstanding.end(), measure_again);
  for (const PlanRecord& p : plans) std::for_each(p.configs.begin(), p.configs.end(), measure_again);
  if (!again.configs.empty()) task.waiting.push_back(std::move(again));
  if (!exact) {
    // The log no longer describes the strategy: a checkpoint of where it is now replaces it.
    StrategyCheckpointRecord now = MakeCheckpoint(task);
    Status s = store_.PutResults(task.rec.task_id, {}, &now);
    if (!s.ok()) fmt::print(stderr, "coordinator: cannot persist a strategy checkpoint: {}\n", s.ToString());
  }
  // The default tiling is measured first: it is the baseline improvements are quoted against.
  ConfigIndex def = task.problem->default_index;
  if (!task.planned.contains(def) && task.planned.size() < task.limit()) {
    task.planned.insert(def);
    JobSpec baseline;
    baseline.configs = {def};
    LogPlan(task, /*asked=*/false, 0, baseline);
    task.waiting.push_back(std::move(baseline));
  }
  return Status::Ok();
}

// A relative improvement smaller than this is float noise: no `improved` event, and the
// patience count goes on.
constexpr double kNewsTolerance = 1e-9;

void Coordinator::Impl::Record(Task& task, uint64_t job_id, ConfigIndex index, bool ok,
                               double latency, const std::string& error,
                               std::vector<StoredResult>* out, bool tell) {
  task.recorded.insert(index);
  const uint64_t seq = task.rec.evaluated++;
  if (out) metrics_.evaluations.Increment();
  if (ok) {
    bool improved = false;
    if (!task.rec.has_best || latency < task.rec.best_latency_us ||
        (latency == task.rec.best_latency_us && index < task.rec.best_index)) {
      improved = !task.rec.has_best || latency < task.rec.best_latency_us;
      // Patience counts from the last improvement a watcher is told of: float noise
      // (a 5e-16 gain) restarted it unseen.
      if (!task.rec.has_best || latency < task.rec.best_latency_us * (1 - kNewsTolerance)) {
        task.improved_at = task.rec.evaluated;
      }
      task.rec.has_best = true;
      task.rec.best_index = index;
      task.rec.best_latency_us = latency;
      task.best_job_id = job_id;
    }
    if (task.problem && index == task.problem->default_index) task.rec.baseline_latency_us = latency;
    // Live results only: results recovered at a restart were news before it. One more
    // decimal of float noise (1e-14 us) is not news to a watcher either.
    if (improved && out && latency < task.emitted_best_us * (1 - kNewsTolerance)) {
      task.emitted_best_us = latency;
      Emit(task, ProgressKind::kImproved);
    }
  } else {
    ++task.rec.failed_configs;
    CountFailureReason(task.rec, error.empty() ? "(no reason given)" : error);
    if (out) metrics_.failed_evaluations.Increment();
  }
  if (task.strategy && tell) task.strategy->Tell(index, ok ? std::optional<double>(latency) : std::nullopt);
  if (out) out->push_back({index, ok, latency, error, job_id, seq});
}

void Coordinator::Impl::Persist(Task& task, const std::vector<StoredResult>& stored) {
  if (stored.empty()) return;
  // Checkpoints grow with what the strategy remembers, so they are taken geometrically
  // less often: at most ~log(evaluations) of them plus one per kCheckpointEvery.
  std::optional<StrategyCheckpointRecord> checkpoint;
  const uint64_t fresh = task.rec.evaluated - task.checkpointed_at;
  if (task.strategy && fresh >= std::max<uint64_t>(kCheckpointEvery, task.checkpointed_at / 4)) {
    checkpoint = MakeCheckpoint(task);
    task.unpersisted_plans.clear();  // the checkpoint's state has seen them
  }
  Status s = store_.PutResults(task.rec.task_id, stored, checkpoint ? &*checkpoint : nullptr, task.unpersisted_plans);
  if (!s.ok()) fmt::print(stderr, "coordinator: cannot persist results: {}\n", s.ToString());
  task.unpersisted_plans.clear();
}

StrategyCheckpointRecord Coordinator::Impl::MakeCheckpoint(Task& task) {
  StrategyCheckpointRecord checkpoint;
  checkpoint.state = task.strategy->Checkpoint();
  checkpoint.told = task.rec.evaluated;
  auto outstanding = [&](const JobSpec& spec) {
    for (ConfigIndex i : spec.configs) {
      if (!task.recorded.contains(i)) checkpoint.outstanding.push_back(i);
    }
  };
  for (const auto& [id, lease] : leases_) {
    if (lease.task_id == task.rec.task_id) outstanding(lease.spec);
  }
  for (const JobSpec& spec : task.waiting) outstanding(spec);
  std::sort(checkpoint.outstanding.begin(), checkpoint.outstanding.end());
  task.checkpointed_at = task.rec.evaluated;
  return checkpoint;
}

void Coordinator::Impl::LogPlan(Task& task, bool asked, uint64_t max_configs, const JobSpec& spec) {
  if (!task.strategy || task.strategy->IgnoresResults()) return;
  PlanRecord p;
  p.number = task.next_plan++;
  p.asked = asked;
  p.told_before = task.rec.evaluated;
  p.max_configs = max_configs;
  p.configs = spec.configs;
  task.unpersisted_plans.push_back(std::move(p));
}

uint64_t Coordinator::Impl::PlannedSincePatienceStart(const Task& task) const {
  const uint64_t from = task.rec.has_best ? task.improved_at : task.rec.evaluated;
  return task.planned.size() > from ? task.planned.size() - from : 0;
}

bool Coordinator::Impl::WaitsOnItsJobsOut(const Task& task) const {
  return task.rec.state == TaskState::kRunning && !task.strategy_done && task.rec.patience &&
         PlannedSincePatienceStart(task) >= task.rec.patience && task.planned.size() > task.rec.evaluated;
}

bool Coordinator::Impl::OutOfPatienceOrTime(const Task& task) const {
  if (task.rec.patience && task.rec.has_best && task.rec.evaluated - task.improved_at >= task.rec.patience) return true;
  return OutOfTime(task);
}

bool Coordinator::Impl::OutOfTime(const Task& task) const {
  return task.rec.budget_seconds > 0 && task.rec.started_ms > 0 &&
         static_cast<double>(clock_.UnixMillis() - task.rec.started_ms) >= task.rec.budget_seconds * 1000;
}

void Coordinator::Impl::RecordResults(Task& task, const Lease& job, schema::JobResult::Reader r) {
  std::vector<StoredResult> stored;
  std::string invalid;  // the first bad latency, for the log
  const JobMembership in_job(job.spec);
  for (auto e : r.getResults()) {
    ConfigIndex index = e.getConfigIndex();
    if (!in_job.Covers(index)) {
      metrics_.results_not_in_job.Increment();
      continue;
    }
    if (task.recorded.contains(index)) {
      metrics_.duplicate_results.Increment();
      continue;
    }
    if (!task.planned.contains(index)) continue;  // never asked for: ignore
    const double latency = e.getLatencyUs();
    if (e.getOk() && !(std::isfinite(latency) && latency > 0)) {
      // A broken evaluator must not become the knowledge base's best config.
      std::string why = fmt::format("the worker reported a latency of {} us, not a positive finite number", latency);
      if (invalid.empty()) invalid = why;
      metrics_.invalid_latencies.Increment();
      Record(task, job.job_id, index, false, 0, why, &stored);
      continue;
    }
    Record(task, job.job_id, index, e.getOk(), latency, e.getError(), &stored);
  }
  if (!invalid.empty()) Log(fmt::format("job {} of task {}: {}", job.job_id, task.rec.task_id, invalid));
  if (stored.empty()) return;
  Persist(task, stored);
  if (task.rec.has_best && task.rec.baseline_latency_us > 0) {
    metrics_.task_best_improvement.Add({{"task", std::to_string(task.rec.task_id)}})
        .Set(task.rec.baseline_latency_us / task.rec.best_latency_us);
  }
}

void Coordinator::Impl::RecordFailure(Task& task, uint64_t job_id,
                                      const std::vector<ConfigIndex>& configs,
                                      const std::string& why) {
  std::vector<StoredResult> stored;
  for (ConfigIndex i : configs) {
    if (!task.recorded.contains(i)) Record(task, job_id, i, false, 0, why, &stored);
  }
  Persist(task, stored);
}

void Coordinator::Impl::MaybeFinish(Task& task) {
  if (task.rec.state != TaskState::kRunning) return;
  if (task.in_flight > 0 || !task.waiting.empty()) return;
  if (!task.strategy_done && task.planned.size() < task.limit()) return;
  task.rec.state = task.rec.has_best ? TaskState::kDone : TaskState::kFailed;
  std::optional<KbEntry> entry;
  if (task.rec.has_best) {
    KbEntry e;
    e.key = task.rec.key;
    e.best_index = task.rec.best_index;
    e.best_config = NamedConfig(task.problem->space, task.rec.best_index);
    e.best_latency_us = task.rec.best_latency_us;
    e.baseline_latency_us = task.rec.baseline_latency_us;
    e.improvement = task.rec.baseline_latency_us > 0 ? task.rec.baseline_latency_us / task.rec.best_latency_us : 0;
    e.strategy = task.strategy_ran;  // "auto (model)": what a framework team reads in lookup
    e.evaluations = task.rec.evaluated;
    e.job_id = task.best_job_id;
    e.timestamp_ms = clock_.UnixMillis();
    entry = std::move(e);
  }
  Retire(task, entry);
  metrics_.kb_entries.Set(static_cast<double>(store_.KbSizeEstimate()));
  Log(fmt::format("task {} {}: {} evaluations, best {} at {:.3f} us", task.rec.task_id,
                  TaskStateName(task.rec.state), task.rec.evaluated, task.rec.best_index,
                  task.rec.best_latency_us));
}

void Coordinator::Impl::Retire(Task& task, const std::optional<KbEntry>& entry, bool sync) {
  // Its best config by name goes into its record: the search space is released below.
  if (task.rec.has_best && task.problem && task.rec.best_index < task.problem->space.size()) {
    task.rec.best_config = NamedConfig(task.problem->space, task.rec.best_index);
  }
  auto wrote = store_.FinishTask(task.rec, entry, sync);
  if (!wrote.ok()) fmt::print(stderr, "coordinator: cannot persist finished task: {}\n", wrote.status().ToString());
  if (wrote.ok() && *wrote) Indexed(*entry);
  metrics_.task_best_improvement.Remove(&metrics_.task_best_improvement.Add({{"task", std::to_string(task.rec.task_id)}}));
  // A finished task stays for status a while (EvictFinishedTasks): keep only its record
  // (about 10 KB less per task, which over months of submissions was the coordinator's
  // memory).
  task.waiting = {};
  task.strategy.reset();
  task.planned = IndexSet();
  task.recorded = IndexSet();
  task.problem.reset();
  // Counted from where it was, not by a full count: a count over every task in memory
  // (finished ones too) per finished task made finishing O(tasks), 5 ms a task with
  // 460,000 finished ones.
  (task.rec.started_ms == 0 ? metrics_.tasks_queued : metrics_.tasks_running).Decrement();
  (task.rec.state == TaskState::kDone        ? metrics_.tasks_done
   : task.rec.state == TaskState::kCancelled ? metrics_.tasks_cancelled
                                             : metrics_.tasks_failed)
      .Increment();
  Emit(task, ProgressKind::kFinished);
}

void Coordinator::Impl::Emit(const Task& task, ProgressKind kind) {
  ProgressEvent e;
  e.task_id = task.rec.task_id;
  e.kind = kind;
  e.unix_ms = clock_.UnixMillis();
  e.evaluated = task.rec.evaluated;
  e.best_latency_us = task.rec.has_best ? task.rec.best_latency_us : 0;
  e.baseline_latency_us = task.rec.baseline_latency_us;
  e.state = task.rec.state;
  progress_.Append(e);
}

Lease* Coordinator::Impl::LeaseOf(uint64_t job_id, const std::string& identity, uint32_t attempt) {
  for (auto* table : {&leases_, &retired_}) {
    auto it = table->find(job_id);
    if (it != table->end() && it->second.worker == identity && it->second.spec.attempt == attempt) {
      return &it->second;
    }
  }
  return nullptr;
}

void Coordinator::Impl::Requeue(Lease lease, const std::string& why) {
  if (retired_.size() >= kRetiredLeases) {
    retired_.erase(retired_order_.front());
    retired_order_.pop_front();
  }
  retired_order_.push_back(lease.job_id);
  retired_[lease.job_id] = lease;
  auto it = tasks_.find(lease.task_id);
  if (it == tasks_.end()) return;
  Task& task = it->second;
  if (task.in_flight > 0) --task.in_flight;
  if (task.rec.state != TaskState::kRunning) return;
  JobSpec spec = std::move(lease.spec);
  std::vector<ConfigIndex> left;
  for (ConfigIndex i : spec.configs) {
    if (!task.recorded.contains(i)) left.push_back(i);
  }
  // A job stopped because the task's time is spent: its rest does not go round again.
  if (task.strategy_done && OutOfTime(task)) left.clear();
  if (!left.empty()) {
    if (spec.attempt >= protocol::kMaxJobAttempts) {
      // Failing on every attempt marks the configs failed, not the task.
      metrics_.jobs_abandoned.Increment();
      RecordFailure(task, lease.job_id, left, "job failed on every attempt: " + why);
    } else {
      JobSpec again;
      again.attempt = spec.attempt + 1;
      again.configs = std::move(left);
      task.waiting.push_back(std::move(again));
      metrics_.jobs_requeued.Increment();
      Log(fmt::format("requeued job {} of task {} (attempt {}): {}", lease.job_id, lease.task_id,
                      spec.attempt + 1, why));
    }
  }
  MaybeFinish(task);
}

std::optional<JobSpec> Coordinator::Impl::NextJob(Task& task, uint64_t cap, bool* fresh) {
  *fresh = false;
  if (task.rec.state != TaskState::kRunning) return std::nullopt;
  bool drained = false;
  while (!task.waiting.empty()) {
    JobSpec spec = std::move(task.waiting.front());
    task.waiting.pop_front();
    // A late result of the requeued job's first attempt may have landed meanwhile.
    if (!spec.is_range) std::erase_if(spec.configs, [&task](ConfigIndex i) { return task.recorded.contains(i); });
    if (!spec.configs.empty()) return spec;
    drained = true;
  }
  if (drained) {
    MaybeFinish(task);
    if (task.rec.state != TaskState::kRunning) return std::nullopt;
  }
  if (!task.strategy_done && OutOfPatienceOrTime(task)) EndSearch(task);
  if (task.strategy_done || task.planned.size() >= task.limit() || cap == 0) return std::nullopt;
  uint32_t job_size = task.rec.job_size                      ? task.rec.job_size
                      : task.strategy->PreferredJobSize() > 0 ? static_cast<uint32_t>(task.strategy->PreferredJobSize())
                                                               : options_.default_job_size;
  // Patience is checked between jobs: a job longer than it would run past it (a task
  // with --patience 200 used to measure two 512-config jobs before it was looked at).
  // What is already planned counts too -- since the best, or before there is one, what
  // is out: with several slots, jobs handed out side by side ran patience 20 to 61-81
  // evaluations. Nothing is handed out while what is out could use patience up; its
  // results decide (with nothing out, the check above has ended the task or there is room).
  if (task.rec.patience) {
    const uint64_t since = PlannedSincePatienceStart(task);
    if (since >= task.rec.patience) return std::nullopt;
    job_size = static_cast<uint32_t>(std::min<uint64_t>(job_size, task.rec.patience - since));
  }
  size_t max = std::min<uint64_t>({job_size, task.limit() - task.planned.size(), cap});
  const TimePoint asked = clock_.Now();
  Batch batch = task.strategy->Ask(max, [&task](ConfigIndex i) { return task.planned.contains(i); });
  metrics_.planning.Observe(std::chrono::duration<double>(clock_.Now() - asked).count());
  if (batch.configs.empty()) {
    task.strategy_done = true;
    MaybeFinish(task);
    return std::nullopt;
  }
  for (ConfigIndex i : batch.configs) task.planned.insert(i);
  *fresh = true;
  JobSpec spec;
  spec.configs = std::move(batch.configs);
  spec.is_range = batch.is_range;
  spec.begin = batch.begin;
  spec.end = batch.end;
  LogPlan(task, /*asked=*/true, max, spec);
  return spec;
}

void Coordinator::Impl::SendJob(const std::string& identity, WorkerEntry& worker, Task& task,
                                JobSpec spec) {
  Lease lease;
  lease.job_id = ++next_job_id_;
  lease.task_id = task.rec.task_id;
  lease.spec = std::move(spec);
  lease.worker = identity;
  lease.registration = worker.registration;
  lease.dispatched = clock_.Now();
  if (task.rec.started_ms == 0) {
    task.rec.started_ms = clock_.UnixMillis();
    Status s = store_.PutTask(task.rec);  // so a time budget survives a restart
    if (!s.ok()) fmt::print(stderr, "coordinator: cannot persist task start: {}\n", s.ToString());
    // Queued until now (UpdateTaskGauges); counted here, not recounted per task.
    metrics_.tasks_queued.Decrement();
    metrics_.tasks_running.Increment();
    Emit(task, ProgressKind::kStarted);
  }
  lease.deadline = lease.dispatched + protocol::kLeaseFloor +
                   protocol::kLeasePerConfig * static_cast<int64_t>(lease.spec.configs.size());

  wire::Outgoing msg;
  auto a = msg.Body().initJobAssignment();
  a.setTaskId(lease.task_id);
  a.setJobId(lease.job_id);
  a.setAttempt(lease.spec.attempt);
  wire::FillOpKey(a.initOpKey(), task.rec.key);
  a.setEvaluator("sim");
  a.setMeasurementSeed(task.rec.seed);
  if (lease.spec.is_range) {
    auto range = a.initConfigs().initRange();
    range.setBegin(lease.spec.begin);
    range.setEnd(lease.spec.end);
  } else {
    auto list = a.initConfigs().initIndices(static_cast<unsigned>(lease.spec.configs.size()));
    for (unsigned i = 0; i < lease.spec.configs.size(); ++i) list.set(i, lease.spec.configs[i]);
  }
  SendToWorker(identity, msg);
  --worker.credits;
  worker.jobs.insert(lease.job_id);
  ++task.in_flight;
  metrics_.jobs_dispatched.Increment();
  leases_.emplace(lease.job_id, std::move(lease));
}

void Coordinator::Impl::FinishSchedule(Schedule& schedule) {
  schedule.finished = true;
  for (uint64_t id : schedule.task_ids) {
    Task& task = tasks_.at(id);
    task.strategy_done = true;
    MaybeFinish(task);
  }
}

// One job of the schedule's tasks for this worker; false when it has none for it now.
bool Coordinator::Impl::DispatchScheduledJob(const std::string& identity, WorkerEntry& worker, Schedule& schedule) {
  std::set<size_t> blocked;  // tasks with nothing now: waiting on their jobs out
  for (;;) {
    // Work already planned (baselines, warm starts, requeued jobs) goes first, and still
    // goes once the shared budget is spent.
    Task* waiting = nullptr;
    for (uint64_t task_id : schedule.task_ids) {
      Task& t = tasks_.at(task_id);
      if (t.rec.state == TaskState::kRunning && !t.waiting.empty() && worker.socs.contains(t.rec.key.soc)) {
        waiting = &t;
        break;
      }
    }
    if (waiting) {
      bool fresh = false;
      // Empty when late results covered every config of the requeued jobs (they are
      // dropped from its queue, so the loop moves on).
      if (std::optional<JobSpec> spec = NextJob(*waiting, 0, &fresh)) {
        SendJob(identity, worker, *waiting, std::move(*spec));
        return true;
      }
      continue;
    }
    if (schedule.finished) return false;
    if (schedule.planned >= schedule.total || schedule.scheduler.AllExhausted()) {
      FinishSchedule(schedule);
      return false;
    }
    // Among the tasks this worker can serve now: one on another SoC, or waiting on its
    // jobs out, is left for later without keeping the worker from the others.
    const size_t i = schedule.scheduler.Next([&](size_t k) {
      const Task& t = tasks_.at(schedule.task_ids[k]);
      return worker.socs.contains(t.rec.key.soc) && !blocked.contains(k);
    });
    if (i == schedule.task_ids.size()) return false;
    Task& task = tasks_.at(schedule.task_ids[i]);
    uint64_t per_job = ScheduledJobSize(schedule.total, schedule.task_ids.size());
    bool fresh = false;
    std::optional<JobSpec> spec = NextJob(task, std::min(per_job, schedule.total - schedule.planned), &fresh);
    if (!spec) {
      // A task waiting on its jobs out is not done: leave it in the split (marking it
      // exhausted dropped it for good) and try the others.
      if (WaitsOnItsJobsOut(task)) {
        blocked.insert(i);
      } else {
        schedule.scheduler.MarkExhausted(i);
      }
      continue;
    }
    if (fresh) schedule.planned += spec->configs.size();
    SendJob(identity, worker, task, std::move(*spec));
    return true;
  }
}

// One job of the running tasks the submission waits on (`tasks`) for this worker: its
// shared budget's split when it has one, else its tasks round-robin after the one served
// last. False when none has work for this worker now; then the ids of tasks no longer
// running are dropped from `tasks`.
bool Coordinator::Impl::ServeSubmission(const std::string& identity, WorkerEntry& worker, uint64_t submission,
                                        std::set<uint64_t>& tasks) {
  if (auto sub = submissions_.find(submission); sub == submissions_.end() || sub->second.cancelled) {
    tasks.clear();  // a cancelled submission waits on nothing (its shared tasks run in others' turns)
    return false;
  }
  // The task behind id while it is running, else null.
  auto live = [&](uint64_t id) -> Task* {
    auto t = tasks_.find(id);
    return t != tasks_.end() && t->second.rec.state == TaskState::kRunning ? &t->second : nullptr;
  };
  auto stale = [&](uint64_t id) { return live(id) == nullptr; };
  if (auto s = schedules_.find(submission); s != schedules_.end()) {
    // A total-budget submission's own tasks are all in its split.
    if (DispatchScheduledJob(identity, worker, s->second)) return true;
    std::erase_if(tasks, stale);
    return false;
  }
  uint64_t& cursor = dispatch_task_cursor_[submission];
  auto it = tasks.upper_bound(cursor);
  for (size_t n = 0; n < tasks.size(); ++n, ++it) {
    if (it == tasks.end()) it = tasks.begin();
    Task* found = live(*it);
    if (found == nullptr) continue;
    Task& task = *found;
    if (task.scheduled_by || !worker.socs.contains(task.rec.key.soc)) continue;
    bool fresh = false;
    std::optional<JobSpec> spec = NextJob(task, std::numeric_limits<uint64_t>::max(), &fresh);
    if (!spec) continue;
    cursor = task.rec.task_id;
    SendJob(identity, worker, task, std::move(*spec));
    return true;
  }
  std::erase_if(tasks, stale);
  return false;
}

void Coordinator::Impl::Dispatch() {
  // Planning a job (a strategy's Ask) can take a good part of a second; past the slice
  // the rest waits for the next turn, so heartbeats and results keep flowing and no live
  // worker is declared dead or thinks the coordinator silent. Workers take turns to go
  // first, so one with many slots cannot keep the others waiting.
  dispatch_until_ = clock_.Now() + options_.heartbeat_interval / kDispatchSlices;
  auto first = workers_.upper_bound(dispatch_worker_cursor_);
  if (first == workers_.end()) first = workers_.begin();
  for (auto it = first; it != workers_.end();) {
    auto& [identity, worker] = *it;
    dispatch_worker_cursor_ = identity;
    DispatchOne(identity, worker);
    if (++it == workers_.end()) it = workers_.begin();
    if (it == first || SliceSpent()) break;
  }
  metrics_.jobs_in_flight.Set(static_cast<double>(leases_.size()));
}

void Coordinator::Impl::DispatchOne(const std::string& identity, WorkerEntry& worker) {
  // A level is served only with the slots the higher ones cannot use now (another SoC, a
  // learning strategy waiting on its results, a spent budget), so no slot idles. Within
  // it, submissions take turns one job at a time, after the one served last: a 1,000-op
  // submission does not get 1,000 turns to a 1-op one's one. The turn's time slice is
  // looked at after each job sent (planning is what takes time), so a turn always sends
  // one when it can.
  bool out_of_time = false;
  for (auto level = runnable_.begin(); level != runnable_.end() && worker.credits > 0 && !out_of_time;) {
    auto& submissions = level->second;
    uint64_t& cursor = dispatch_submission_cursor_[level->first];  // the submission served last
    std::set<uint64_t> idle;  // nothing for this worker now
    // Rounds over the level in turn order, after the cursor, one job per submission and
    // each submission tried at most once a round: O(submissions) when nothing is left
    // for this worker (restarting from the cursor for each pick was quadratic).
    for (bool sent = true; sent && worker.credits > 0 && !out_of_time;) {
      sent = false;
      auto it = submissions.upper_bound(cursor);
      for (size_t n = 0; n < submissions.size() && worker.credits > 0 && !out_of_time; ++n, ++it) {
        if (it == submissions.end()) it = submissions.begin();
        if (idle.contains(it->first)) continue;
        // The turn passes only with a job sent: a submission with nothing for this
        // worker does not take the next one's place.
        if (ServeSubmission(identity, worker, it->first, it->second)) {
          cursor = it->first;
          sent = true;
          out_of_time = SliceSpent();
        } else {
          idle.insert(it->first);
        }
      }
    }
    for (auto it = submissions.begin(); it != submissions.end();) {
      if (!it->second.empty()) {
        ++it;
        continue;
      }
      dispatch_task_cursor_.erase(it->first);
      it = submissions.erase(it);
    }
    if (submissions.empty()) dispatch_submission_cursor_.erase(level->first);
    level = submissions.empty() ? runnable_.erase(level) : std::next(level);
  }
}

void Coordinator::Impl::CheckLiveness() {
  TimePoint now = clock_.Now();
  const auto expiry = options_.heartbeat_interval * options_.liveness;
  // Silent means nothing of it arrived: after a turn that spent longer than the expiry on
  // a request (a 100,000-op submission, a big cancel), heartbeats and results wait unread
  // in the socket, and a worker dropped for them loses an attempt of every job it holds.
  const bool due = std::any_of(workers_.begin(), workers_.end(),
                               [&](const auto& w) { return !w.second.gone && now - w.second.last_seen > expiry; }) ||
                   std::any_of(leases_.begin(), leases_.end(), [&](const auto& l) { return now >= l.second.deadline; });
  if (due) {
    for (size_t n = 0; n < kDrainMax; ++n) {
      auto frames = transport::Receive(workers_sock_, true);
      if (!frames.ok() || !frames->has_value()) break;
      OnWorkerMessage(**frames);
    }
    now = clock_.Now();
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!it->second.gone && now - it->second.last_seen <= expiry) {
      ++it;
      continue;
    }
    it = DropWorker(it, it->second.gone ? "left" : "missed its heartbeats");
  }
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    Lease l = std::move(it->second);
    it = leases_.erase(it);
    if (auto w = workers_.find(l.worker); w != workers_.end()) w->second.jobs.erase(l.job_id);
    Requeue(std::move(l), "lease expired");
  }
  double slots = 0;
  for (const auto& [id, w] : workers_) slots += w.slots;
  metrics_.workers_connected.Set(static_cast<double>(workers_.size()));
  metrics_.worker_slots.Set(slots);
}

std::map<std::string, WorkerEntry>::iterator Coordinator::Impl::DropWorker(
    std::map<std::string, WorkerEntry>::iterator it, const std::string& why) {
  Log(fmt::format("worker {} {}: releasing its {} jobs (requeued, or failed on their last attempt)", it->second.id,
                  why, it->second.jobs.size()));
  for (uint64_t job_id : it->second.jobs) {
    auto lease = leases_.find(job_id);
    if (lease == leases_.end()) continue;
    Lease l = std::move(lease->second);
    leases_.erase(lease);
    Requeue(std::move(l), "worker " + it->second.id + " " + why);
  }
  return workers_.erase(it);
}

// A worker restarted under the same --id (a container restarted in its pod keeps its
// hostname and pid 1) registers from a new connection while its old registration would
// wait out its heartbeats, listed twice and its jobs held. So each earlier registration of
// that id is probed with a heartbeat, at once and then each turn for kNamesakeProbeTurns
// turns (ZeroMQ may take a message for a connection whose close it has not processed yet),
// and dropped as soon as ZeroMQ has no connection for it (the kernel closed it when the
// process died). A namesake still connected after that (two live workers given one id, or
// a network partition) is kept, and left to the heartbeats.
void Coordinator::Impl::ProbeNamesakes() {
  for (auto p = namesake_probes_.begin(); p != namesake_probes_.end();) {
    auto w = workers_.find(p->first);
    if (w == workers_.end()) {
      p = namesake_probes_.erase(p);
      continue;
    }
    wire::Outgoing probe;
    probe.Body().initHeartbeat().setInFlightJobs(static_cast<uint32_t>(w->second.jobs.size()));
    auto delivery = transport::SendIfConnected(workers_sock_, w->first, probe);
    if (!delivery.ok()) Log("probing an earlier registration of worker " + w->second.id + ": " + delivery.status().ToString());
    if (delivery.ok() && *delivery == transport::Delivery::kGone) {
      DropWorker(w, "registered again from a new connection, and the old one is closed");
    }
    if (delivery.ok() && *delivery != transport::Delivery::kGone && --p->second > 0) {
      ++p;
      continue;
    }
    p = namesake_probes_.erase(p);
  }
}

void Coordinator::Impl::UpdateTaskGauges() {
  double queued = 0, running = 0, done = 0, failed = 0, cancelled = 0;
  for (const auto& [id, t] : tasks_) {
    switch (t.rec.state) {
      case TaskState::kQueued: ++queued; break;
      // Waiting for its first job (no worker for its SoC yet, or every slot busy): the
      // backlog an operator sizes the worker pool by.
      case TaskState::kRunning: ++(IsWaiting(t) ? queued : running); break;
      case TaskState::kDone: ++done; break;
      case TaskState::kCancelled: ++cancelled; break;
      default: ++failed; break;
    }
  }
  metrics_.tasks_queued.Set(queued);
  metrics_.tasks_running.Set(running);
  metrics_.tasks_done.Set(done);
  metrics_.tasks_failed.Set(failed);
  metrics_.tasks_cancelled.Set(cancelled);
  metrics_.tasks_in_memory.Set(static_cast<double>(tasks_.size()));
}

Result<const NearestIndex*> Coordinator::Impl::Nearest() {
  if (!nearest_index_) {
    TF_ASSIGN_OR_RETURN(nearest_index_, NearestIndex::Build(store_));
    Log(fmt::format("nearest-shape index: {} knowledge-base entries", nearest_index_->size()));
  }
  return &*nearest_index_;
}

size_t Coordinator::Impl::WarmStart(Task& task, size_t max_seeds) {
  constexpr size_t kNeighbours = 3;
  const SearchSpace& space = task.problem->space;
  // The nearest tuned shapes whose best configs are configs of this space.
  auto index_of = [&space](const KbEntry& e) -> std::optional<ConfigIndex> {
    auto c = space.FromNamed(e.best_config);
    if (!c.ok() || !space.IsValid(*c)) return std::nullopt;
    auto index = space.Encode(*c);
    return index.ok() ? std::optional<ConfigIndex>(*index) : std::nullopt;
  };
  auto shapes = Nearest();
  auto nearest = shapes.ok() ? (*shapes)->Find(store_, task.rec.key, kNeighbours,
                                               [&](const KbEntry& e) { return index_of(e).has_value(); })
                             : Result<std::vector<NearestEntry>>(shapes.status());
  if (!nearest.ok()) {
    Log("warm start skipped: " + nearest.status().ToString());
    return 0;
  }
  JobSpec seeds;
  for (const NearestEntry& n : *nearest) {
    auto index = index_of(n.entry);
    if (!index || task.planned.contains(*index) || task.planned.size() >= task.limit() ||
        seeds.configs.size() >= max_seeds) {
      continue;
    }
    task.planned.insert(*index);
    seeds.configs.push_back(*index);
  }
  size_t n = seeds.configs.size();
  if (n) {
    LogPlan(task, /*asked=*/false, 0, seeds);
    task.waiting.push_back(std::move(seeds));
  }
  return n;
}

// ----------------------------------------------------------------------------------
// Worker protocol

void Coordinator::Impl::SendToWorker(const std::string& identity, wire::Outgoing& msg) {
  Status s = transport::SendTo(workers_sock_, identity, msg);
  if (!s.ok()) Log("send to worker failed: " + s.ToString());
}

void Coordinator::Impl::OnWorkerMessage(std::vector<zmq::message_t>& frames) {
  if (frames.size() < 2) return;
  std::string identity = frames.front().to_string();
  const zmq::message_t& payload = frames.back();
  auto in = wire::Decode(payload.data(), payload.size());
  if (!in.ok()) {
    Log("dropped a worker message: " + in.status().ToString());
    return;
  }
  Status s = wire::Guard("worker message", [&]() -> Status {
    auto body = (*in)->Envelope().getBody();
    auto known = workers_.find(identity);
    if (known != workers_.end()) known->second.last_seen = clock_.Now();
    switch (body.which()) {
      case schema::Envelope::Body::WORKER_READY: {
        auto r = body.getWorkerReady();
        if (known != workers_.end()) {
          // Re-registration replaces the old entry; its leases are requeued.
          for (uint64_t job_id : known->second.jobs) {
            auto lease = leases_.find(job_id);
            if (lease == leases_.end()) continue;
            Lease l = std::move(lease->second);
            leases_.erase(lease);
            Requeue(std::move(l), "worker re-registered");
          }
          workers_.erase(known);
        }
        WorkerEntry w;
        w.identity = identity;
        w.id = r.getWorkerId();
        for (auto soc : r.getSocs()) w.socs.insert(std::string(soc.cStr()));
        w.slots = std::min<uint32_t>(r.getSlots(), 1024);
        w.credits = w.slots;
        w.last_seen = clock_.Now();
        w.registered = w.last_seen;
        w.registration = ++registrations_;
        metrics_.worker_registrations.Increment();
        Log(fmt::format("worker {} ready with {} slots", w.id, w.slots));
        for (const auto& [other, earlier] : workers_) {
          if (earlier.id == w.id) namesake_probes_[other] = kNamesakeProbeTurns;
        }
        workers_[identity] = std::move(w);
        ProbeNamesakes();
        return Status::Ok();
      }
      case schema::Envelope::Body::HEARTBEAT:
        if (known == workers_.end()) {
          wire::Outgoing msg;
          msg.Body().initDisconnect().setReason("unknown worker: send WorkerReady");
          SendToWorker(identity, msg);
        }
        return Status::Ok();
      case schema::Envelope::Body::JOB_RESULT: {
        auto r = body.getJobResult();
        auto send_disconnect = [&] {
          wire::Outgoing msg;
          msg.Body().initDisconnect().setReason("unknown worker: send WorkerReady");
          SendToWorker(identity, msg);
        };
        Lease* job = LeaseOf(r.getJobId(), identity, r.getAttempt());
        if (!job || job->task_id != r.getTaskId()) {
          // Only the worker a job was leased to may report on it: anything else would let
          // a stray or misconfigured peer write latencies into the knowledge base.
          metrics_.results_not_leased.Increment(r.getResults().size());
          Log(fmt::format("dropped {} results for job {} (task {}, attempt {}) from {}: it never held that job",
                          r.getResults().size(), r.getJobId(), r.getTaskId(), r.getAttempt(),
                          known != workers_.end() ? known->second.id : "an unregistered peer"));
          if (known == workers_.end()) send_disconnect();
          return Status::Ok();
        }
        auto lease_it = leases_.find(r.getJobId());
        const bool current = lease_it != leases_.end() && &lease_it->second == job;
        auto task_it = tasks_.find(job->task_id);
        Task* task = task_it == tasks_.end() ? nullptr : &task_it->second;
        if (task && task->rec.state == TaskState::kRunning) RecordResults(*task, *job, r);
        else if (task && task->rec.state == TaskState::kCancelled) metrics_.results_cancelled.Increment(r.getResults().size());
        else metrics_.duplicate_results.Increment(r.getResults().size());
        if (current) {
          lease_it->second.deadline = clock_.Now() + protocol::kLeaseFloor;
        }
        if (r.getFinal()) {
          // The job's slot is free again: one credit back, once per job.
          // Only for a job of this registration: a late final of a job handed to the
          // worker before it registered again would give it a slot it does not have.
          if (known != workers_.end() && !job->final_seen && job->registration == known->second.registration) {
            known->second.credits = std::min(known->second.credits + 1, known->second.slots);
            known->second.jobs.erase(r.getJobId());
            ++known->second.jobs_completed;
          }
          job->final_seen = true;
          if (current) {
            Lease l = std::move(lease_it->second);
            leases_.erase(lease_it);
            if (task && task->scheduled_by) {
              auto sched = schedules_.find(task->scheduled_by);
              if (sched != schedules_.end() && task->rec.has_best) {
                sched->second.scheduler.Update(task->schedule_index, l.spec.configs.size(),
                                               task->rec.best_latency_us);
                Status kept = store_.PutSchedule(task->scheduled_by, sched->second.scheduler.Checkpoint());
                if (!kept.ok()) Log("cannot persist the task scheduler: " + kept.ToString());
              }
            }
            metrics_.jobs_completed.Increment();
            metrics_.job_duration.Observe(
                std::chrono::duration<double>(clock_.Now() - l.dispatched).count());
            std::string job_error = r.getJobError();
            // Anything the job should have measured but did not report goes round again.
            Requeue(std::move(l), job_error.empty() ? "configs missing from the job's results" : job_error);
          }
        }
        if (known == workers_.end()) send_disconnect();
        return Status::Ok();
      }
      case schema::Envelope::Body::DISCONNECT: {
        if (known != workers_.end()) {
          known->second.gone = true;
          Log("worker " + known->second.id + " disconnected");
        }
        return Status::Ok();
      }
      case schema::Envelope::Body::SUBMIT:
      case schema::Envelope::Body::STATUS:
      case schema::Envelope::Body::CANCEL:
      case schema::Envelope::Body::KB_EXPORT:
      case schema::Envelope::Body::KB_IMPORT:
      case schema::Envelope::Body::WORKERS:
      case schema::Envelope::Body::LOOKUP: {
        // A client pointed at the worker endpoint: answer, so it does not wait out its
        // timeout wondering whether the coordinator runs.
        wire::Outgoing msg;
        msg.Envelope().setRequestId((*in)->Envelope().getRequestId());
        auto err = msg.Body().initError();
        err.setCode(schema::StatusCode::INVALID_ARGUMENT);
        err.setMessage("this is the coordinator's worker endpoint: submit, status, cancel and lookup go to its "
                       "client endpoint (--client-bind, default port 5555)");
        SendToWorker(identity, msg);
        return Status::Ok();
      }
      default:
        return InvalidArgument("unexpected message kind on the worker socket");
    }
  });
  if (!s.ok()) Log("worker message rejected: " + s.ToString());
}

// ----------------------------------------------------------------------------------
// Client protocol

void Coordinator::Impl::OnClientMessage(std::vector<zmq::message_t>& frames) {
  if (frames.size() < 2) return;
  const zmq::message_t& payload = frames.back();
  wire::Outgoing reply;
  std::string kind = "invalid";
  const TimePoint received = clock_.Now();
  Status s = [&]() -> Status {
    TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, wire::Decode(payload.data(), payload.size()));
    reply.Envelope().setRequestId(in->Envelope().getRequestId());
    // With CURVE, a key listed in readers.public may only look configs up.
    const bool reader = options_.curve && curve::PeerRole(payload) == curve::kReaderRole;
    return wire::Guard("client request", [&]() -> Status {
      auto body = in->Envelope().getBody();
      const auto which = body.which();
      kind = RequestKind(which);
      if (reader && which != schema::Envelope::Body::LOOKUP && which != schema::Envelope::Body::KB_EXPORT) {
        return PermissionDenied("this client's CURVE key is a reader's (readers.public): it may look configs up "
                                "and export them but not submit, cancel, import or ask for status, progress or "
                                "workers; list it in clients.public for that");
      }
      switch (which) {
        case schema::Envelope::Body::SUBMIT: return HandleSubmit(body.getSubmit(), reply.Body());
        case schema::Envelope::Body::STATUS: return HandleStatus(body.getStatus(), reply.Body());
        case schema::Envelope::Body::LOOKUP: return HandleLookup(body.getLookup(), reply.Body());
        case schema::Envelope::Body::CANCEL: return HandleCancel(body.getCancel(), reply.Body());
        case schema::Envelope::Body::KB_EXPORT: return HandleKbExport(body.getKbExport(), reply.Body());
        case schema::Envelope::Body::KB_IMPORT: return HandleKbImport(body.getKbImport(), reply.Body());
        case schema::Envelope::Body::WORKERS: return HandleWorkers(reply.Body());
        case schema::Envelope::Body::WATCH: return HandleWatch(body.getWatch(), reply.Body());
        default:
          return InvalidArgument(
              "unexpected message kind on the client socket (send submit, status, watch, cancel, lookup, "
              "kb_export, kb_import or workers)");
      }
    });
  }();
  metrics_.client_requests.Add({{"kind", kind}, {"code", std::string(StatusCodeName(s.code()))}}).Increment();
  // A held watch counts the time to decide to hold it, not the wait: the API's latency
  // would otherwise read as the watchers' patience.
  metrics_.RequestDuration(kind).Observe(std::chrono::duration<double>(clock_.Now() - received).count());
  // Every frame before the payload: the identity, and the empty delimiter a REQ socket adds.
  frames.pop_back();
  if (s.ok() && hold_) {
    hold_->request_id = reply.Envelope().getRequestId();
    hold_->route = std::move(frames);
    held_.push_back(std::move(*hold_));
    hold_.reset();
    return;
  }
  hold_.reset();
  if (!s.ok()) {
    LogRefused(kind, s);
    auto err = reply.Body().initError();
    err.setCode(static_cast<schema::StatusCode>(s.code()));
    err.setMessage(Clipped(s.message()));
  }
  SendToClient(frames, reply);
}

void Coordinator::Impl::SendToClient(const std::vector<zmq::message_t>& route, wire::Outgoing& reply) {
  kj::Array<capnp::word> words = reply.Encode();
  auto bytes = words.asBytes();
  try {
    for (const auto& frame : route) client_.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::sndmore);
    client_.send(zmq::buffer(bytes.begin(), bytes.size()), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    Log(std::string("client reply failed: ") + e.what());
  }
}

Status Coordinator::Impl::HandleSubmit(schema::SubmitRequest::Reader req,
                                       schema::Envelope::Body::Builder reply) {
  auto ops = req.getOps();
  if (ops.size() == 0) return InvalidArgument("submission has no ops");
  std::string strategy = req.getStrategy();
  if (strategy.empty()) strategy = "auto";
  if (!(req.getBudgetSeconds() >= 0)) return InvalidArgument("budget seconds must be >= 0 (0: no time limit)");
  // The CLI's ranges, for any client: a job of 2^32 configs planned in one turn.
  if (req.getJobSize() > protocol::kMaxJobSize) {
    return InvalidArgument(fmt::format("job size {} exceeds {} configs per job (0: the coordinator's default)",
                                       req.getJobSize(), protocol::kMaxJobSize));
  }
  if (std::abs(static_cast<int64_t>(req.getPriority())) > protocol::kMaxPriority) {
    return InvalidArgument(fmt::format("priority {} is outside -{}..{} (0 is the default; higher goes first)",
                                       req.getPriority(), protocol::kMaxPriority, protocol::kMaxPriority));
  }
  TF_RETURN_IF_ERROR(CheckStrategyName(strategy));
  const uint64_t total_budget = req.getTotalBudget();
  TF_RETURN_IF_ERROR(ParseSchedulerName(req.getScheduler()).status());
  auto weights_in = req.getWeights();
  if (weights_in.size() != 0 && weights_in.size() != ops.size()) {
    return InvalidArgument("submission has " + std::to_string(ops.size()) + " ops but " +
                           std::to_string(weights_in.size()) + " weights (give one per op, or none)");
  }
  for (unsigned i = 0; i < weights_in.size(); ++i) {
    if (!(weights_in[i] > 0)) return InvalidArgument("op " + std::to_string(i) + " weight must be positive");
  }
  auto names_in = req.getNames();
  if (names_in.size() != 0 && names_in.size() != ops.size()) {
    return InvalidArgument("submission has " + std::to_string(ops.size()) + " ops but " +
                           std::to_string(names_in.size()) + " names (give one per op, or none)");
  }

  // Validate everything before accepting anything.
  std::vector<OpKey> keys;
  for (unsigned i = 0; i < ops.size(); ++i) {
    auto read = wire::ReadOpKey(ops[i]);
    if (!read.ok()) return read.status().WithContext("op " + std::to_string(i));
    auto key = CanonicalOpKey(*read);
    if (!key.ok()) return key.status().WithContext("op " + std::to_string(i) + " (" + read->Display() + ")");
    auto problem = ProblemFor(*key);
    if (!problem.ok()) return problem.status().WithContext("op " + std::to_string(i) + " (" + key->Display() + ")");
    keys.push_back(std::move(key).value());
  }

  SubmissionRecord sub;
  // Both counters move with PutSubmission, so a submission refused below uses up no id.
  TF_ASSIGN_OR_RETURN(sub.submission_id, store_.PeekId("submission"));
  TF_ASSIGN_OR_RETURN(const uint64_t first_task_id, store_.PeekId("task"));
  sub.created_ms = clock_.UnixMillis();
  sub.priority = req.getPriority();
  for (auto n : names_in) sub.names.emplace_back(n.cStr());
  std::vector<TaskRecord> new_tasks;
  struct Earlier {
    uint64_t task_id = 0;
    bool from_cache = false;
  };
  std::map<OpKeyHash, Earlier> in_this_submission;
  std::multimap<OpKeyHash, uint64_t> running_by_key;  // one pass, not one per op
  for (const auto& [id, t] : tasks_) {
    if (t.rec.state == TaskState::kRunning) running_by_key.emplace(t.key_hash, id);
  }
  std::vector<bool> from_cache;
  std::map<uint64_t, double> weight_of;  // new task id -> summed weight of its ops
  for (size_t op_index = 0; op_index < keys.size(); ++op_index) {
    const OpKey& key = keys[op_index];
    const double weight = weights_in.size() ? weights_in[static_cast<unsigned>(op_index)] : 1.0;
    OpKeyHash hash = HashOpKey(key);
    if (auto it = in_this_submission.find(hash); it != in_this_submission.end()) {
      sub.task_ids.push_back(it->second.task_id);  // identical op keys are tuned once
      if (weight_of.count(it->second.task_id)) weight_of[it->second.task_id] += weight;
      from_cache.push_back(it->second.from_cache);  // as its first occurrence was answered
      continue;
    }
    // An identical key already being tuned the same way: share that task. Other settings
    // (a bigger budget, another strategy) get a task of their own, as asked.
    uint64_t running = 0;
    auto [same_key, end] = running_by_key.equal_range(hash);
    for (auto it = same_key; it != end; ++it) {
      const Task& t = tasks_.at(it->second);
      if (t.rec.key == key && !t.scheduled_by && !t.rec.force && total_budget == 0 && t.rec.strategy == strategy &&
          t.rec.budget == req.getBudget() && t.rec.seed == req.getSeed() && t.rec.job_size == req.getJobSize() &&
          t.rec.budget_seconds == req.getBudgetSeconds() && t.rec.patience == req.getPatience()) {
        running = it->second;
      }
    }
    if (running && !req.getForce()) {
      sub.task_ids.push_back(running);
      in_this_submission[hash] = {running, false};
      from_cache.push_back(false);
      continue;
    }
    TaskRecord rec;
    rec.task_id = first_task_id + new_tasks.size();
    rec.submission_id = sub.submission_id;
    rec.key = key;
    rec.strategy = strategy;
    rec.budget = req.getBudget();
    rec.seed = req.getSeed();
    rec.job_size = req.getJobSize();
    rec.force = req.getForce();
    rec.priority = req.getPriority();
    rec.budget_seconds = req.getBudgetSeconds();
    rec.patience = req.getPatience();
    rec.created_ms = clock_.UnixMillis();
    rec.state = TaskState::kQueued;
    bool cached = false;
    if (!req.getForce()) {
      TF_ASSIGN_OR_RETURN(std::optional<KbEntry> hit, store_.GetKb(hash));
      if (hit) {
        cached = true;
        rec.from_cache = true;
        rec.state = TaskState::kDone;
        rec.has_best = true;
        rec.best_index = hit->best_index;
        rec.best_latency_us = hit->best_latency_us;
        rec.baseline_latency_us = hit->baseline_latency_us;
        rec.best_config = hit->best_config;
        rec.evaluated = 0;
      }
    }
    from_cache.push_back(cached);
    in_this_submission[hash] = {rec.task_id, cached};
    sub.task_ids.push_back(rec.task_id);
    if (!cached && total_budget > 0) weight_of[rec.task_id] = weight;
    new_tasks.push_back(rec);
  }
  if (total_budget > 0 && total_budget < weight_of.size()) {
    return InvalidArgument(fmt::format(
        "total budget {} is below the {} ops to tune: each op's first evaluation is its default tiling "
        "(the baseline every improvement is quoted against), so give a total budget of at least {}",
        total_budget, weight_of.size(), weight_of.size()));
  }
  if (total_budget > 0) {
    sub.total_budget = total_budget;
    sub.scheduler = req.getScheduler().size() ? std::string(req.getScheduler().cStr()) : "gradient";
    for (const auto& [id, w] : weight_of) {
      sub.scheduled_task_ids.push_back(id);
      sub.scheduled_weights.push_back(w);
    }
  }
  // Tasks are activated in place (a strategy refers to its task's search space, so a
  // Task never moves) and then stored with their submission in one synced write: one
  // write per task kept a 10,000-op submission waiting for seconds of fsyncs.
  submissions_[sub.submission_id] = sub;
  progress_floor_[sub.submission_id] = progress_.head();
  auto forget = [&] {
    for (const TaskRecord& rec : new_tasks) tasks_.erase(rec.task_id);
    submissions_.erase(sub.submission_id);
  };
  // Warm-start seeds are evaluations too: under a total budget they fit in what the
  // baselines (one per scheduled task) leave, or the total would be overspent.
  size_t warm_room = total_budget > 0 ? total_budget - weight_of.size() : std::numeric_limits<size_t>::max();
  for (TaskRecord& rec : new_tasks) {
    Task& task = tasks_[rec.task_id];
    task.rec = rec;
    task.key_hash = HashOpKey(task.rec.key);
    if (task.rec.from_cache) continue;
    Status s = ActivateTask(task, {});
    if (!s.ok()) {
      forget();
      return Internal("validated op failed to activate: " + s.message());
    }
    if (req.getWarmStart()) {
      size_t seeded = WarmStart(task, warm_room);
      warm_room -= seeded;
      Log(fmt::format("task {} warm-started with {} configs of nearby shapes", task.rec.task_id, seeded));
    }
    rec = task.rec;
  }
  if (Status put = store_.PutSubmission(sub, new_tasks); !put.ok()) {
    forget();
    return put;
  }
  TF_RETURN_IF_ERROR(RestoreSchedule(sub));
  MakeRunnable(sub);
  metrics_.submissions.Increment();
  // Counted where they start, as Retire and SendJob move them: a full count over every
  // task in memory per submission was O(tasks), finished ones included.
  for (const TaskRecord& rec : new_tasks) (rec.from_cache ? metrics_.tasks_done : metrics_.tasks_queued).Increment();
  Log(fmt::format("submission {}: {} ops, {} new tasks", sub.submission_id, keys.size(), new_tasks.size()));

  auto out = reply.initSubmitReply();
  out.setSubmissionId(sub.submission_id);
  auto ids = out.initTaskIds(static_cast<unsigned>(sub.task_ids.size()));
  auto cache = out.initFromCache(static_cast<unsigned>(from_cache.size()));
  for (unsigned i = 0; i < sub.task_ids.size(); ++i) {
    ids.set(i, sub.task_ids[i]);
    cache.set(i, from_cache[i]);
  }
  return Status::Ok();
}

void Coordinator::Impl::FillTaskStatus(Task& task, schema::TaskStatus::Builder b) {
  b.setTaskId(task.rec.task_id);
  b.setOpKeyHash(task.key_hash.Hex());
  b.setState(IsWaiting(task) ? schema::TaskState::QUEUED : WireTaskState(task.rec.state));
  b.setEvaluated(task.rec.evaluated);
  b.setPlanned(IsFinished(task.rec.state) ? task.rec.evaluated : task.planned.size());
  b.setFailedConfigs(task.rec.failed_configs);
  wire::FillFailureReasons(b.initFailureReasons(static_cast<unsigned>(task.rec.failure_reasons.size())),
                           task.rec.failure_reasons);
  b.setHasBest(task.rec.has_best);
  b.setBestConfigIndex(task.rec.best_index);
  b.setBestLatencyUs(task.rec.best_latency_us);
  b.setBaselineLatencyUs(task.rec.baseline_latency_us);
  wire::FillOpKey(b.initOpKey(), task.rec.key);
  if (!task.rec.has_best) return;
  // The best config by name: through the op's space while the task runs; a finished
  // task's record keeps it by name (one finished before records kept it gets it on its
  // first status).
  if (task.problem) {
    if (task.rec.best_index >= task.problem->space.size()) return;
    Config best = task.problem->space.Decode(task.rec.best_index);
    wire::FillConfig(b.initBestConfig(static_cast<unsigned>(best.size())), task.problem->space, best);
    return;
  }
  auto& named = task.rec.best_config;
  if (named.empty()) {
    auto p = ProblemFor(task.rec.key);
    if (!p.ok() || task.rec.best_index >= p->space.size()) return;
    named = NamedConfig(p->space, task.rec.best_index);
  }
  auto list = b.initBestConfig(static_cast<unsigned>(named.size()));
  for (unsigned i = 0; i < named.size(); ++i) {
    list[i].setName(named[i].first);
    list[i].setValue(named[i].second);
  }
}

Result<const SubmissionRecord*> Coordinator::Impl::FindSubmission(uint64_t id) {
  auto it = submissions_.find(id);
  if (it == submissions_.end()) {
    TF_ASSIGN_OR_RETURN(std::optional<SubmissionRecord> stored, store_.GetSubmission(id));
    if (stored) return &submissions_.emplace(id, std::move(stored).value()).first->second;
    return NotFound("no submission " + std::to_string(id) + " (submit first; ids are printed by `tunefleet submit`)");
  }
  return &it->second;
}

Status Coordinator::Impl::HandleStatus(schema::StatusRequest::Reader req,
                                       schema::Envelope::Body::Builder reply) {
  TF_ASSIGN_OR_RETURN(const SubmissionRecord* found, FindSubmission(req.getSubmissionId()));
  const SubmissionRecord& sub = *found;
  auto out = reply.initStatusReply();
  out.setSubmissionId(sub.submission_id);
  out.setPriority(sub.priority);
  auto list = out.initTasks(static_cast<unsigned>(sub.task_ids.size()));
  bool done = true;
  for (unsigned i = 0; i < sub.task_ids.size(); ++i) {
    auto t = tasks_.find(sub.task_ids[i]);
    std::optional<Task> evicted;  // finished, and no longer in memory: from its record
    if (t == tasks_.end()) {
      TF_ASSIGN_OR_RETURN(std::optional<TaskRecord> rec, store_.GetTask(sub.task_ids[i]));
      if (!rec) return Internal("submission " + std::to_string(sub.submission_id) + " names task " +
                                std::to_string(sub.task_ids[i]) + ", which the store does not hold");
      evicted = TaskFromRecord(std::move(rec).value());
    }
    Task& task = evicted ? *evicted : t->second;
    FillTaskStatus(task, list[i]);
    if (i < sub.names.size()) list[i].setName(sub.names[i]);
    done &= IsFinished(task.rec.state);
  }
  // A cancelled submission waits on none of its tasks: a shared one runs on for the others.
  out.setDone(done || sub.cancelled);
  out.setCancelled(sub.cancelled);
  return Status::Ok();
}

Status Coordinator::Impl::HandleCancel(schema::CancelRequest::Reader req,
                                       schema::Envelope::Body::Builder reply) {
  TF_ASSIGN_OR_RETURN(const SubmissionRecord* found, FindSubmission(req.getSubmissionId()));
  SubmissionRecord& sub = submissions_.at(found->submission_id);
  // A task another submission still waits on (the same op with the same search settings
  // shares one task) keeps running for it; a cancelled one waits on nothing.
  // One pass over the others' task ids, not one per task (this runs on the loop thread).
  std::unordered_set<uint64_t> waited_on;
  for (const auto& [id, other] : submissions_) {
    if (id != sub.submission_id && !other.cancelled) waited_on.insert(other.task_ids.begin(), other.task_ids.end());
  }
  // The submission's shared budget is spent on nothing more.
  if (auto sched = schedules_.find(sub.submission_id); sched != schedules_.end()) sched->second.finished = true;
  // The submission first, synced: a crash before its tasks are written cancelled leaves
  // them to Resume, which cancels every unfinished task only cancelled submissions wait on.
  if (!sub.cancelled) {
    sub.cancelled = true;
    TF_RETURN_IF_ERROR(store_.PutSubmission(sub, {}));
  }
  uint32_t cancelled = 0, kept = 0, finished = 0;
  for (uint64_t task_id : std::set<uint64_t>(sub.task_ids.begin(), sub.task_ids.end())) {
    auto t = tasks_.find(task_id);
    if (t == tasks_.end() || IsFinished(t->second.rec.state)) {
      ++finished;
    } else if (waited_on.contains(task_id)) {
      ++kept;
    } else {
      CancelTask(t->second);
      ++cancelled;
    }
  }
  Log(fmt::format("submission {} cancelled: {} tasks stopped, {} shared kept running, {} already finished",
                  sub.submission_id, cancelled, kept, finished));
  auto out = reply.initCancelReply();
  out.setSubmissionId(sub.submission_id);
  out.setCancelled(cancelled);
  out.setShared(kept);
  out.setFinished(finished);
  return Status::Ok();
}

void Coordinator::Impl::CancelTask(Task& task) {
  task.rec.state = TaskState::kCancelled;
  StopJobsOut(task);
  Retire(task, std::nullopt, /*sync=*/false);  // its submission's record is (Resume repairs)
}

void Coordinator::Impl::StopJobsOut(const Task& task) {
  // The workers holding its jobs stop them (their final chunks return the credits), so
  // their slots serve other work now rather than after a whole job.
  std::set<std::string> holders;
  for (const auto& [job_id, lease] : leases_) {
    if (lease.task_id == task.rec.task_id) holders.insert(lease.worker);
  }
  for (const std::string& identity : holders) {
    wire::Outgoing msg;
    msg.Body().initStopTask().setTaskId(task.rec.task_id);
    SendToWorker(identity, msg);
  }
}

void Coordinator::Impl::EndSearch(Task& task) {
  task.strategy_done = true;
  // Out of time: what is out stops at its next config (its results so far count) and
  // nothing requeued goes out again. Out of patience, what is out was sized not to
  // outrun it (NextJob), and its results decide.
  if (OutOfTime(task)) {
    task.waiting.clear();
    if (task.in_flight > 0) StopJobsOut(task);
  }
  MaybeFinish(task);
}

Status Coordinator::Impl::HandleLookup(schema::LookupRequest::Reader req,
                                       schema::Envelope::Body::Builder reply) {
  std::vector<OpKey> keys;
  for (auto k : req.getKeys()) {
    auto key = wire::ReadOpKey(k);
    if (!key.ok()) return key.status().WithContext("op " + std::to_string(keys.size()));
    keys.push_back(std::move(key).value());
  }
  // A replayed kernel's key is one this coordinator could tune only with its cache: a miss
  // without it says so, as a submission of it does.
  const NearestIndex* index = nullptr;
  if (req.getNearest()) {
    TF_ASSIGN_OR_RETURN(index, Nearest());
  }
  TF_ASSIGN_OR_RETURN(std::vector<LookupAnswer> found,
                      LookUp(
                          store_, keys, req.getNearest(),
                          [this](const OpKey& key) -> Result<std::optional<SearchSpace>> {
                            TF_ASSIGN_OR_RETURN(TuningProblem problem, ProblemFor(key));
                            return std::optional<SearchSpace>(std::move(problem.space));
                          },
                          index));
  for (const LookupAnswer& a : found) (a.exact() ? metrics_.lookup_hits : metrics_.lookup_misses).Increment();
  auto list = reply.initLookupReply().initEntries(static_cast<unsigned>(found.size()));
  for (unsigned i = 0; i < found.size(); ++i) {
    list[i].setFound(found[i].entry.has_value());
    if (!found[i].entry) continue;
    list[i].setApproximate(found[i].approximate);
    list[i].setDistance(found[i].distance);
    wire::FillKbRecord(list[i].initRecord(), *found[i].entry);
  }
  return Status::Ok();
}

Status Coordinator::Impl::HandleKbExport(schema::KbExportRequest::Reader req,
                                         schema::Envelope::Body::Builder reply) {
  const uint32_t limit = req.getLimit() == 0 ? protocol::kKbPageDefault : std::min(req.getLimit(), protocol::kKbPageMax);
  auto after = req.getAfter();
  TF_ASSIGN_OR_RETURN(Store::KbEntries page,
                      store_.KbPage(std::string(reinterpret_cast<const char*>(after.begin()), after.size()), limit));
  auto r = reply.initKbExportReply();
  auto list = r.initRecords(static_cast<unsigned>(page.entries.size()));
  for (unsigned i = 0; i < page.entries.size(); ++i) wire::FillKbRecord(list[i], page.entries[i]);
  // A full page may be the last: the next one then comes back empty and done.
  r.setDone(page.entries.size() < limit);
  r.setNext(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(page.last_key.data()), page.last_key.size()));
  return Status::Ok();
}

Status Coordinator::Impl::HandleKbImport(schema::KbImportRequest::Reader req,
                                         schema::Envelope::Body::Builder reply) {
  auto records = req.getRecords();
  if (records.size() > protocol::kKbImportMax) {
    return InvalidArgument(fmt::format("an import request holds at most {} entries, not {}; send them in parts",
                                       protocol::kKbImportMax, records.size()));
  }
  std::vector<KbEntry> entries;
  entries.reserve(records.size());
  for (auto r : records) {
    auto e = wire::ReadKbRecord(r);
    if (!e.ok()) return e.status().WithContext("entry " + std::to_string(entries.size()));
    entries.push_back(std::move(e).value());
  }
  TF_ASSIGN_OR_RETURN(
      ImportOutcome outcome,
      ImportKb(store_, std::move(entries),
               [this](const OpKey& key) -> Result<std::optional<ImportCheck>> {
                 if (key.soc == kReplaySoc) {
                   for (const auto& cache : options_.replay_caches) {
                     if (cache->kernel_name().empty() || cache->kernel_name() == key.op_type) {
                       TF_ASSIGN_OR_RETURN(ImportCheck check, ReplayImportCheck(key, *cache));
                       return std::optional<ImportCheck>(std::move(check));
                     }
                   }
                   return ProblemFor(key).status();  // says which --replay-cache is missing
                 }
                 TF_ASSIGN_OR_RETURN(const SocSpec* soc, catalog_.Find(key.soc));
                 TF_ASSIGN_OR_RETURN(ImportCheck check, SimulatedImportCheck(key, *soc));
                 return std::optional<ImportCheck>(std::move(check));
               },
               req.getDryRun(), req.getSkipRefused()));
  // Refusals count also from a dry run: the CLI's all-or-nothing check is one, and the
  // real request never comes.
  metrics_.kb_imported.Add({{"outcome", "refused"}}).Increment(static_cast<double>(outcome.refused.size()));
  for (const KbEntry& e : outcome.written) Indexed(e);
  if (!req.getDryRun()) {
    for (const auto& [name, n] : {std::pair{"added", outcome.added}, std::pair{"replaced", outcome.replaced},
                                  std::pair{"kept", outcome.kept}}) {
      metrics_.kb_imported.Add({{"outcome", name}}).Increment(n);
    }
  }
  if (!req.getDryRun() && outcome.added + outcome.replaced > 0) {
    metrics_.kb_entries.Set(static_cast<double>(store_.KbSizeEstimate()));
    Log(fmt::format("imported {} new and {} faster knowledge-base entries", outcome.added, outcome.replaced));
  }
  auto r = reply.initKbImportReply();
  r.setAdded(outcome.added);
  r.setReplaced(outcome.replaced);
  r.setKept(outcome.kept);
  auto refused = r.initRefused(static_cast<unsigned>(outcome.refused.size()));
  for (unsigned i = 0; i < outcome.refused.size(); ++i) {
    refused[i].setIndex(static_cast<uint32_t>(outcome.refused[i].index));
    refused[i].setReason(outcome.refused[i].reason);
  }
  return Status::Ok();
}

Status Coordinator::Impl::HandleWorkers(schema::Envelope::Body::Builder reply) {
  const TimePoint now = clock_.Now();
  auto list = reply.initWorkersReply().initWorkers(static_cast<unsigned>(workers_.size()));
  unsigned i = 0;
  for (const auto& [identity, w] : workers_) {
    auto b = list[i++];
    b.setId(w.id);
    auto socs = b.initSocs(static_cast<unsigned>(w.socs.size()));
    unsigned k = 0;
    for (const std::string& soc : w.socs) socs.set(k++, soc);
    b.setSlots(w.slots);
    b.setBusySlots(w.slots - std::min(w.credits, w.slots));
    b.setJobsCompleted(w.jobs_completed);
    b.setSecondsSinceSeen(std::chrono::duration<double>(now - w.last_seen).count());
    b.setSecondsConnected(std::chrono::duration<double>(now - w.registered).count());
  }
  return Status::Ok();
}

Coordinator::Impl::WatchAnswer Coordinator::Impl::ReadWatch(uint64_t submission, uint64_t after, uint32_t max) {
  WatchedSubmission& w = watched_[submission];
  if (w.tasks.empty()) {  // a submission has at least one task
    const SubmissionRecord& sub = submissions_.at(submission);
    w.tasks.insert(sub.task_ids.begin(), sub.task_ids.end());
  }
  WatchAnswer a;
  // A number of this process from before the submission was accepted: nothing of it
  // came earlier, so it reads from there (a gap before it is not its own).
  const uint64_t floor = progress_floor_.contains(submission) ? progress_floor_[submission] : progress_.first_after();
  if (after == 0 || (after >= progress_.first_after() && after < floor)) after = floor;
  a.read = progress_.Read(after, w.tasks, max);
  const TimePoint now = clock_.Now();
  // `done` must be exact, the rest may be 250 ms old. A read with tasks' ends recounts
  // only when they may be the last ones: finished_seen overcounts (every watcher reads
  // the same ends), which recounts early, never late.
  const auto ended = static_cast<uint32_t>(std::count_if(a.read.events.begin(), a.read.events.end(),
                                      [](const ProgressEvent& e) { return e.kind == ProgressKind::kFinished; }));
  w.finished_seen += ended;
  if (!w.counted || (ended > 0 && w.totals.finished + w.finished_seen >= w.totals.tasks) ||
      now - w.counted_at >= std::chrono::milliseconds(250)) {
    w.totals = {};
    w.finished_seen = 0;
    for (uint64_t id : w.tasks) {
      auto t = tasks_.find(id);
      if (t == tasks_.end()) {  // finished, and left memory (EvictFinishedTasks)
        auto [e, fresh] = w.evicted_evaluated.try_emplace(id, 0);
        if (fresh) {
          auto rec = store_.GetTask(id);
          if (rec.ok() && *rec) e->second = (*rec)->evaluated;
        }
        ++w.totals.tasks;
        ++w.totals.finished;
        w.totals.evaluated += e->second;
        w.totals.planned += e->second;
        continue;
      }
      const Task& task = t->second;
      const bool finished = IsFinished(task.rec.state);
      ++w.totals.tasks;
      w.totals.finished += finished;
      w.totals.evaluated += task.rec.evaluated;
      w.totals.planned += finished ? task.rec.evaluated : task.planned.size();
    }
    w.counted_at = now;
    w.counted = true;
  }
  a.totals = w.totals;
  // Not done while the read stopped short: the last events are still to be read. A
  // cancelled submission is done whatever its shared tasks still do for others.
  a.done = (a.totals.finished == a.totals.tasks || submissions_.at(submission).cancelled) && !a.read.more;
  return a;
}

void Coordinator::Impl::FillWatchReply(uint64_t submission, const WatchAnswer& a, schema::WatchReply::Builder out) {
  static const schema::ProgressKind kKinds[] = {schema::ProgressKind::STARTED, schema::ProgressKind::IMPROVED,
                                                schema::ProgressKind::FINISHED};
  out.setSubmissionId(submission);
  auto list = out.initEvents(static_cast<unsigned>(a.read.events.size()));
  for (unsigned i = 0; i < a.read.events.size(); ++i) {
    const ProgressEvent& e = a.read.events[i];
    auto b = list[i];
    b.setSeq(e.seq);
    b.setTaskId(e.task_id);
    b.setKind(kKinds[static_cast<int>(e.kind)]);
    b.setUnixMs(e.unix_ms);
    b.setEvaluated(e.evaluated);
    b.setBestLatencyUs(e.best_latency_us);
    b.setBaselineLatencyUs(e.baseline_latency_us);
    b.setState(WireTaskState(e.state));
  }
  out.setNext(a.read.next);
  out.setGap(a.read.gap);
  out.setMore(a.read.more);
  out.setDone(a.done);
  out.setTasks(a.totals.tasks);
  out.setFinishedTasks(a.totals.finished);
  out.setEvaluated(a.totals.evaluated);
  out.setPlanned(a.totals.planned);
}

Status Coordinator::Impl::HandleWatch(schema::WatchRequest::Reader req, schema::Envelope::Body::Builder reply) {
  TF_ASSIGN_OR_RETURN(const SubmissionRecord* sub, FindSubmission(req.getSubmissionId()));
  if (req.getWaitMs() > kMaxWatchWaitMs) {
    return InvalidArgument(fmt::format("watch wait of {} ms is too long: at most {} ms (a client's reply timeout "
                                       "must outlast it)",
                                       req.getWaitMs(), kMaxWatchWaitMs));
  }
  const uint32_t max = req.getMaxEvents() == 0 ? kMaxWatchEvents : std::min(req.getMaxEvents(), kMaxWatchEvents);
  WatchAnswer a = ReadWatch(sub->submission_id, req.getAfter(), max);
  if (a.Worth() || req.getWaitMs() == 0 || held_.size() >= kMaxHeldWatches) {
    FillWatchReply(sub->submission_id, a, reply.initWatchReply());
    return Status::Ok();
  }
  HeldWatch h;
  h.submission = sub->submission_id;
  h.after = a.read.next;  // what this read looked at held nothing of the submission's
  h.max_events = max;
  h.deadline = clock_.Now() + std::chrono::milliseconds(req.getWaitMs());
  hold_ = std::move(h);
  return Status::Ok();
}

void Coordinator::Impl::AnswerHeldWatches(bool all) {
  if (held_.empty()) return;
  const TimePoint now = clock_.Now();
  const bool news = progress_.head() != held_seen_head_;
  held_seen_head_ = progress_.head();
  std::erase_if(held_, [&](HeldWatch& h) {
    if (!news && !all && now < h.deadline) return false;
    WatchAnswer a = ReadWatch(h.submission, h.after, h.max_events);
    if (!a.Worth() && !all && now < h.deadline) {
      h.after = a.read.next;
      return false;
    }
    wire::Outgoing reply;
    reply.Envelope().setRequestId(h.request_id);
    auto out = reply.Body().initWatchReply();
    FillWatchReply(h.submission, a, out);
    out.setClosing(all);
    SendToClient(h.route, reply);
    return true;
  });
}

// ----------------------------------------------------------------------------------
// The loop

Status Coordinator::Impl::Run(const std::atomic<bool>& stop) {
  next_heartbeat_ = clock_.Now();
  metrics_.kb_entries.Set(static_cast<double>(store_.KbSizeEstimate()));
  while (!stop.load()) {
    last_turn_ns_.store(clock_.Now().time_since_epoch().count());
    zmq::pollitem_t items[] = {{workers_sock_.handle(), 0, ZMQ_POLLIN, 0},
                               {client_.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(20));
    // Bounded batches per socket per turn, so neither side can starve the other.
    for (int n = 0; n < 256 && (items[0].revents & ZMQ_POLLIN); ++n) {
      auto frames = transport::Receive(workers_sock_, true);
      if (!frames.ok() || !frames->has_value()) break;
      OnWorkerMessage(**frames);
    }
    for (int n = 0; n < 64 && (items[1].revents & ZMQ_POLLIN); ++n) {
      auto frames = transport::Receive(client_, true);
      if (!frames.ok() || !frames->has_value()) break;
      OnClientMessage(**frames);
    }
    TimePoint now = clock_.Now();
    if (now >= next_heartbeat_) {
      for (const auto& [identity, w] : workers_) {
        wire::Outgoing hb;
        hb.Body().initHeartbeat().setInFlightJobs(static_cast<uint32_t>(w.jobs.size()));
        SendToWorker(identity, hb);
      }
      next_heartbeat_ = now + options_.heartbeat_interval;
      EndSpentTasks();
      DropEndedSchedules();
      EvictFinishedTasks(now);
      DropUnwatched();
      const Store::DbStats db = store_.Stats();
      metrics_.rocksdb_sst_bytes.Set(static_cast<double>(db.sst_bytes));
      metrics_.rocksdb_memtable_bytes.Set(static_cast<double>(db.memtable_bytes));
      metrics_.rocksdb_pending_compaction_bytes.Set(static_cast<double>(db.pending_compaction_bytes));
      if (zap_) {
        const auto refused = static_cast<double>(zap_->refused());
        metrics_.curve_refused.Increment(refused - metrics_.curve_refused.Value());
      }
    }
    ProbeNamesakes();
    CheckLiveness();
    Dispatch();
    AnswerHeldWatches();
  }
  AnswerHeldWatches(/*all=*/true);  // a watcher hears now, and reconnects to the next process
  return Status::Ok();
}

void Coordinator::Impl::DropEndedSchedules() {
  std::erase_if(schedules_, [&](const auto& entry) {
    const bool ended = std::all_of(entry.second.task_ids.begin(), entry.second.task_ids.end(), [&](uint64_t id) {
      auto t = tasks_.find(id);
      return t == tasks_.end() || IsFinished(t->second.rec.state);
    });
    if (ended) {
      Status s = store_.DeleteSchedule(entry.first);
      if (!s.ok()) Log("cannot delete a finished task scheduler: " + s.ToString());
    }
    return ended;
  });
  metrics_.schedules.Set(static_cast<double>(schedules_.size()));
}

void Coordinator::Impl::EndSpentTasks() {
  std::unordered_set<uint64_t> starved;  // running, work to hand out, nothing at a worker
  for (auto& [priority, submissions] : runnable_) {
    for (auto& [submission, ids] : submissions) {
      for (uint64_t id : ids) {
        auto t = tasks_.find(id);
        if (t == tasks_.end()) continue;
        Task& task = t->second;
        const auto sched = task.scheduled_by ? schedules_.find(task.scheduled_by) : schedules_.end();
        const bool budget_left = sched == schedules_.end() ? task.planned.size() < task.limit() : !sched->second.finished;
        if (task.rec.state == TaskState::kRunning && task.in_flight == 0 &&
            (!task.waiting.empty() || (!task.strategy_done && budget_left))) {
          starved.insert(id);
        }
        if (task.rec.state != TaskState::kRunning || task.strategy_done) continue;
        if (!task.rec.budget_seconds && !task.rec.patience) continue;
        if (!OutOfPatienceOrTime(task)) continue;
        EndSearch(task);
      }
    }
  }
  metrics_.queue_depth.Set(static_cast<double>(starved.size()));
}

// ----------------------------------------------------------------------------------

Result<std::unique_ptr<Coordinator>> Coordinator::Create(CoordinatorOptions options, Store& store,
                                                         const SocCatalog& catalog, Clock& clock,
                                                         prometheus::Registry& registry,
                                                         zmq::context_t& ctx) {
  auto impl = std::make_unique<Impl>(std::move(options), store, catalog, clock, registry, ctx);
  TF_RETURN_IF_ERROR(impl->Init());
  impl->last_turn_ns_.store(clock.Now().time_since_epoch().count());
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(impl)));
}

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Coordinator::~Coordinator() = default;
const std::string& Coordinator::client_endpoint() const { return impl_->client_endpoint_; }
const std::string& Coordinator::worker_endpoint() const { return impl_->worker_endpoint_; }
Status Coordinator::Run() { return impl_->Run(stop_); }
Clock::TimePoint Coordinator::LastTurn() const {
  return Clock::TimePoint(Clock::Duration(impl_->last_turn_ns_.load()));
}

}  // namespace tunefleet::coordinator
