# Every message on every tunefleet socket is one Envelope: a protocol version and
# exactly one message kind. Receivers reject an unknown version with an ErrorReply.
@0xda644c22965acc48;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tunefleet::schema");
using Worker = import "worker.capnp";
using Client = import "client.capnp";

const protocolVersion :UInt32 = 1;

struct Envelope {
  protocolVersion @0 :UInt32;
  requestId @1 :UInt64;        # echoed in the reply
  body :union {
    workerReady @2 :Worker.WorkerReady;
    heartbeat @3 :Worker.Heartbeat;
    jobAssignment @4 :Worker.JobAssignment;
    jobResult @5 :Worker.JobResult;
    disconnect @6 :Worker.Disconnect;
    submit @7 :Client.SubmitRequest;
    submitReply @8 :Client.SubmitReply;
    status @9 :Client.StatusRequest;
    statusReply @10 :Client.StatusReply;
    lookup @11 :Client.LookupRequest;
    lookupReply @12 :Client.LookupReply;
    error @13 :Client.ErrorReply;
    cancel @14 :Client.CancelRequest;
    cancelReply @15 :Client.CancelReply;
    stopTask @16 :Worker.StopTask;
    kbExport @17 :Client.KbExportRequest;
    kbExportReply @18 :Client.KbExportReply;
    kbImport @19 :Client.KbImportRequest;
    kbImportReply @20 :Client.KbImportReply;
    workers @21 :Client.WorkersRequest;
    workersReply @22 :Client.WorkersReply;
    watch @23 :Client.WatchRequest;
    watchReply @24 :Client.WatchReply;
  }
}
