# Coordinator <-> worker protocol (worker DEALER, coordinator ROUTER).
# Credit-based: a worker's Ready grants one credit per slot; every final JobResult
# returns one. The coordinator never sends a job without a credit.
@0xcb1073104a0d3ba8;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tunefleet::schema");
using Common = import "common.capnp";

struct WorkerReady {
  workerId @0 :Text;
  socs @1 :List(Text);
  slots @2 :UInt32;
  evaluators @3 :List(Text);   # "sim", "replay", "fixed"
}

struct Heartbeat {
  inFlightJobs @0 :UInt32;
}

struct JobAssignment {
  taskId @0 :UInt64;
  jobId @1 :UInt64;
  attempt @2 :UInt32;
  opKey @3 :Common.OpKey;
  evaluator @4 :Text;
  measurementSeed @5 :UInt64;
  configs :union {
    range @6 :IndexRange;      # [begin, end) over the mixed-radix product
    indices @7 :List(UInt64);  # a guided job
  }
}

struct IndexRange {
  begin @0 :UInt64;
  end @1 :UInt64;
}

struct EvalResult {
  configIndex @0 :UInt64;
  ok @1 :Bool;
  latencyUs @2 :Float64;
  error @3 :Text;              # why the config failed, when not ok
}

struct JobResult {
  taskId @0 :UInt64;
  jobId @1 :UInt64;
  attempt @2 :UInt32;
  results @3 :List(EvalResult);
  final @4 :Bool;              # last chunk of the job: returns the slot's credit
  jobError @5 :Text;           # the whole job could not run (e.g. unknown SoC)
}

# The coordinator no longer wants a task's results (`tunefleet cancel`): a worker stops
# its jobs of that task, queued or running, and sends what it measured as their final
# chunk, so their credits come back.
struct StopTask {
  taskId @0 :UInt64;
}

struct Disconnect {
  reason @0 :Text;
}
