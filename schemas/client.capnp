# Client <-> coordinator protocol (client DEALER/REQ, coordinator ROUTER).
@0xce568f75bde36f0e;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tunefleet::schema");
using Common = import "common.capnp";
using Kb = import "kb.capnp";

struct SubmitRequest {
  ops @0 :List(Common.OpKey);
  strategy @1 :Text;           # "auto" (default), "exhaustive", "random", "annealing", "genetic", "ils", "model"
  budget @2 :UInt64;           # evaluations per task; 0 = whole valid space
  seed @3 :UInt64;
  force @4 :Bool;              # re-tune keys already in the knowledge base
  priority @5 :Int32;
  jobSize @6 :UInt32;          # configs per job; 0 = coordinator default
  warmStart @7 :Bool;          # seed each task with the best configs of the nearest tuned shapes
  totalBudget @8 :UInt64;      # > 0: evaluations shared by all of this submission's tasks,
                               # split by `scheduler`; then `budget` is ignored
  scheduler @9 :Text;          # "gradient" (default) or "round-robin"
  weights @10 :List(Float64);  # per op: how often it runs per model step (default 1)
  budgetSeconds @11 :Float64;  # per task: stop planning after this many seconds (0: none)
  patience @12 :UInt64;        # per task: stop after this many evaluations without improvement
  names @13 :List(Text);       # per op, what the submitter calls it (shown by status); empty = none
}

struct SubmitReply {
  submissionId @0 :UInt64;
  taskIds @1 :List(UInt64);    # one per op, in request order
  fromCache @2 :List(Bool);    # answered from the knowledge base
}

struct StatusRequest {
  submissionId @0 :UInt64;
}

enum TaskState {
  queued @0;
  running @1;
  done @2;
  failed @3;
  cancelled @4;
}

struct TaskStatus {
  taskId @0 :UInt64;
  opKeyHash @1 :Text;
  state @2 :TaskState;
  evaluated @3 :UInt64;
  planned @4 :UInt64;
  failedConfigs @5 :UInt64;
  bestConfigIndex @6 :UInt64;
  bestLatencyUs @7 :Float64;
  baselineLatencyUs @8 :Float64;
  bestConfig @9 :List(Common.ParamValue);
  hasBest @10 :Bool;
  opKey @11 :Common.OpKey;
  name @12 :Text;              # the op's name in this submission ("" when none was given)
  failureReasons @13 :List(Kb.FailureCount);  # why failedConfigs failed: first met first, "(other reasons)" last
}

# Stops the submission's unfinished tasks that no other submission also waits on: no
# further jobs, late results dropped, nothing written to the knowledge base (a stopped
# search's best is not the op's best). Their state becomes cancelled, also after a restart.
struct CancelRequest {
  submissionId @0 :UInt64;
}

struct CancelReply {
  submissionId @0 :UInt64;
  cancelled @1 :UInt32;        # tasks stopped by this request
  shared @2 :UInt32;           # tasks another submission also waits on: they keep running
  finished @3 :UInt32;         # tasks that had already finished (done, failed or cancelled)
}

struct StatusReply {
  submissionId @0 :UInt64;
  tasks @1 :List(TaskStatus);
  done @2 :Bool;
  priority @3 :Int32;          # as submitted
  cancelled @4 :Bool;          # cancelled by its user: done, whatever tasks it shares still do for others
}

struct LookupRequest {
  keys @0 :List(Common.OpKey);
  nearest @1 :Bool;            # on a miss, answer from the closest tuned shape (flagged)
}

struct LookupEntry {
  found @0 :Bool;
  record @1 :Kb.KbRecord;
  approximate @2 :Bool;        # record is of the nearest tuned shape, not this key
  distance @3 :Float64;        # sum over dimensions of |ln(a/b)|; 0 for an exact hit
}

struct LookupReply {
  entries @0 :List(LookupEntry);
}

struct ErrorReply {
  code @0 :Common.StatusCode;
  message @1 :Text;
}

# `tunefleet cache export`: one page of the knowledge base, in key order. Readers may ask.
struct KbExportRequest {
  after @0 :Data;              # `next` of the previous page; empty = from the first entry
  limit @1 :UInt32;            # entries per page; 0 = 500; at most 1000
}

struct KbExportReply {
  records @0 :List(Kb.KbRecord);
  next @1 :Data;               # `after` for the next page
  done @2 :Bool;               # fewer than asked: nothing follows (a full last page is followed by an empty one)
}

# `tunefleet cache import`: entries merged into the knowledge base, the faster one per
# key winning. Each is checked first (model version, key, config in the op's space); with
# a refusal and no skipRefused nothing of the request is written.
struct KbImportRequest {
  records @0 :List(Kb.KbRecord);  # at most 1000
  dryRun @1 :Bool;             # count what would happen; write nothing
  skipRefused @2 :Bool;        # merge the entries that pass even when some are refused
}

struct KbRefusal {
  index @0 :UInt32;            # position in the request's records
  reason @1 :Text;
}

struct KbImportReply {
  added @0 :UInt32;            # keys that had no entry
  replaced @1 :UInt32;         # keys whose entry was slower
  kept @2 :UInt32;             # keys whose entry is as fast or faster: left as it was
  refused @3 :List(KbRefusal);
}

# `tunefleet workers`: the workers the coordinator knows now.
struct WorkersRequest {
  unused @0 :Bool;             # no fields yet
}

struct WorkerInfo {
  id @0 :Text;                 # what the worker calls itself (--id)
  socs @1 :List(Text);         # what it can evaluate
  slots @2 :UInt32;
  busySlots @3 :UInt32;        # slots running a job now
  jobsCompleted @4 :UInt64;    # since it registered
  secondsSinceSeen @5 :Float64;  # since its last message (heartbeats every second)
  secondsConnected @6 :Float64;  # since it registered
}

struct WorkersReply {
  workers @0 :List(WorkerInfo);
}

# `tunefleet watch`: a submission's progress as a stream of events, read in turns. A
# request with nothing new to answer is held up to waitMs (long polling), so an event
# reaches the watcher within a loop turn of happening.
struct WatchRequest {
  submissionId @0 :UInt64;
  after @1 :UInt64;            # `next` of the previous reply; 0 = from the oldest event kept
  waitMs @2 :UInt32;           # hold the reply this long while nothing is new; at most 10000
  maxEvents @3 :UInt32;        # 0 = 1000; at most 1000
}

enum ProgressKind {
  started @0;                  # the task's first job was sent
  improved @1;                 # a config faster than every one before it was measured
  finished @2;                 # the task ended (state says how)
}

struct ProgressEvent {
  seq @0 :UInt64;
  taskId @1 :UInt64;
  kind @2 :ProgressKind;
  unixMs @3 :Int64;
  evaluated @4 :UInt64;        # the task's evaluations when it happened
  bestLatencyUs @5 :Float64;   # 0: nothing ran yet
  baselineLatencyUs @6 :Float64;  # the default tiling's; 0: not measured yet
  state @7 :TaskState;         # for finished: done, failed or cancelled
}

struct WatchReply {
  submissionId @0 :UInt64;
  events @1 :List(ProgressEvent);
  next @2 :UInt64;             # `after` for the next request
  gap @3 :Bool;                # events after `after` were dropped (the coordinator keeps the
                               # latest 65536 of all tasks, and none from before a restart):
                               # ask status for where each task stands
  done @4 :Bool;               # every task has finished; nothing follows
  tasks @5 :UInt32;            # the submission's distinct tasks, and how far they are:
  finishedTasks @6 :UInt32;
  evaluated @7 :UInt64;
  planned @8 :UInt64;
  more @9 :Bool;               # the answer stopped at maxEvents: ask again at once for the rest
  closing @10 :Bool;           # the coordinator is stopping: the next answer comes from its next process
}
