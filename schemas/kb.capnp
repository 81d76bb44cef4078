# Records stored in RocksDB (DESIGN.md "Persistence").
@0xfa93a4411e9d4b2a;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tunefleet::schema");
using Common = import "common.capnp";

# Column family `kb`, key = 16-byte op-key hash.
struct KbRecord {
  opKey @0 :Common.OpKey;
  bestConfigIndex @1 :UInt64;
  bestConfig @2 :List(Common.ParamValue);
  bestLatencyUs @3 :Float64;
  baselineLatencyUs @4 :Float64;
  improvement @5 :Float64;     # baseline / best
  strategy @6 :Text;
  evaluations @7 :UInt64;
  jobId @8 :UInt64;
  timestampUnixMs @9 :Int64;
  soc @10 :Text;
  modelVersion @11 :UInt32;
}

# Column family `tasks`, key = "t/" + big-endian task id.
struct TaskRecord {
  taskId @0 :UInt64;
  submissionId @1 :UInt64;
  opKey @2 :Common.OpKey;
  strategy @3 :Text;
  budget @4 :UInt64;
  seed @5 :UInt64;
  state @6 :UInt8;             # tunefleet::TaskState
  jobSize @7 :UInt32;
  force @8 :Bool;
  createdUnixMs @9 :Int64;
  # Outcome, written when the task ends (the task's results are then deleted).
  evaluated @10 :UInt64;
  failedConfigs @11 :UInt64;
  hasBest @12 :Bool;
  bestConfigIndex @13 :UInt64;
  bestLatencyUs @14 :Float64;
  baselineLatencyUs @15 :Float64;
  fromCache @16 :Bool;         # answered from the knowledge base, never run
  priority @17 :Int32;
  budgetSeconds @18 :Float64;  # stop planning after this long since the task started (0: none)
  patience @19 :UInt64;        # stop after this many evaluations without improvement (0: none)
  startedUnixMs @20 :Int64;    # first dispatch
  failureReasons @21 :List(FailureCount);  # why configs failed: 8 distinct reasons at most
  bestConfig @22 :List(Common.ParamValue);  # the best config by name, once finished (empty before, and in older records)
}

struct FailureCount {
  reason @0 :Text;             # the evaluator's message; "(other reasons)" collects the rest
  count @1 :UInt64;
}

# Column family `tasks`, key = "s/" + big-endian submission id.
struct SubmissionRecord {
  submissionId @0 :UInt64;
  taskIds @1 :List(UInt64);    # one per submitted op, in request order
  createdUnixMs @2 :Int64;
  totalBudget @3 :UInt64;      # shared budget of the tasks it created (0: per-task budgets)
  scheduler @4 :Text;
  scheduledTaskIds @5 :List(UInt64);   # the tasks sharing totalBudget
  scheduledWeights @6 :List(Float64);  # their weights, same order
  names @7 :List(Text);        # per submitted op, as the submitter named it (may be empty)
  cancelled @8 :Bool;          # by `tunefleet cancel`: it waits on none of its tasks any more
  priority @9 :Int32;          # dispatch: higher first; its tasks, shared ones too, are served in its turns
}

# Column family `results`, key = big-endian task id + big-endian config index.
struct ResultRecord {
  ok @0 :Bool;
  latencyUs @1 :Float64;
  error @2 :Text;
  jobId @3 :UInt64;
  seq @4 :UInt64;              # order in which the coordinator recorded it (0-based)
}

# Column family `tasks`, key = "c/" + big-endian task id: a running task's strategy
# state, written in the same batch as the results it has seen.
struct StrategyCheckpoint {
  state @0 :Data;              # Strategy::Checkpoint()
  told @1 :UInt64;             # results (by seq) the state has learned from
  outstanding @2 :List(UInt64);  # configs handed out but not yet recorded: re-measured on resume
}

# Column family `tasks`, key = "p/" + big-endian task id + big-endian plan number: what
# a running task planned since its last strategy checkpoint, in order (a checkpoint
# deletes them). A restart replays them so an adaptive strategy continues exactly.
struct PlanRecord {
  asked @0 :Bool;              # true: Strategy::Ask; false: planned by the coordinator (baseline, warm start)
  toldBefore @1 :UInt64;       # results recorded (by seq) when it was planned
  maxConfigs @2 :UInt64;       # the Ask's limit
  configs @3 :List(UInt64);
}
