#include "cli/client.h"

#include <algorithm>

#include "tunefleet/common/transport.h"

namespace tunefleet::client {
namespace {

NamedConfig ReadConfig(capnp::List<schema::ParamValue>::Reader list) {
  NamedConfig out;
  for (auto p : list) out.emplace_back(p.getName(), p.getValue());
  return out;
}

const char* StateName(schema::TaskState s) {
  switch (s) {
    case schema::TaskState::QUEUED: return "queued";
    case schema::TaskState::RUNNING: return "running";
    case schema::TaskState::DONE: return "done";
    case schema::TaskState::FAILED: return "failed";
    case schema::TaskState::CANCELLED: return "cancelled";
  }
  return "unknown";
}

}  // namespace

Client::Client(zmq::context_t& ctx, std::string endpoint, std::chrono::milliseconds timeout,
               std::optional<curve::PeerKeys> curve)
    : ctx_(ctx), endpoint_(std::move(endpoint)), timeout_(timeout), curve_(std::move(curve)), socket_(NewSocket()) {}

zmq::socket_t Client::NewSocket() {
  zmq::socket_t s = transport::MakeSocket(ctx_, zmq::socket_type::dealer);
  if (curve_) socket_setup_ = curve::MakeClient(s, *curve_);
  return s;
}

Result<std::unique_ptr<wire::Incoming>> Client::RoundTrip(wire::Outgoing& msg) {
  TF_RETURN_IF_ERROR(socket_setup_);
  if (!connected_) {
    TF_RETURN_IF_ERROR(transport::Connect(socket_, endpoint_));
    connected_ = true;
  }
  uint64_t id = next_request_id_++;
  msg.Envelope().setRequestId(id);
  TF_RETURN_IF_ERROR(transport::Send(socket_, msg));
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (abandon_ != nullptr && abandon_->load()) {
      socket_ = NewSocket();  // its reply, if it comes, is for nobody
      connected_ = false;
      return DeadlineExceeded("interrupted while waiting for the coordinator's reply");
    }
    if (abandon_ != nullptr) left = std::min(left, std::chrono::milliseconds(100));
    if (left.count() <= 0) {
      // A fresh socket, so a late reply cannot be mistaken for the next one's.
      socket_ = NewSocket();
      connected_ = false;
      return Unavailable("no reply from the coordinator at " + endpoint_ + " within " +
                         std::to_string(timeout_.count()) + " ms (is it running, and is this its client endpoint? check --coordinator" +
                         (curve_ ? "; with CURVE, is this client's key listed in clients.public or readers.public?)"
                                 : "; if it runs CURVE, give --curve-dir)"));
    }
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
    if (!(item.revents & ZMQ_POLLIN)) continue;
    TF_ASSIGN_OR_RETURN(auto frames, transport::Receive(socket_, true));
    if (!frames) continue;
    const zmq::message_t& payload = frames->back();
    TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, wire::Decode(payload.data(), payload.size()));
    if (in->Envelope().getRequestId() != id) continue;  // late answer to an abandoned request
    Status err = wire::Guard("reply", [&]() -> tunefleet::Status {
      if (in->Which() != schema::Envelope::Body::ERROR) return tunefleet::Status::Ok();
      auto e = in->Envelope().getBody().getError();
      return tunefleet::Status(static_cast<StatusCode>(e.getCode()), e.getMessage());
    });
    TF_RETURN_IF_ERROR(err);
    return in;
  }
}

Result<SubmitOutcome> Client::Submit(const SubmitSpec& spec) {
  wire::Outgoing msg;
  auto req = msg.Body().initSubmit();
  auto ops = req.initOps(static_cast<unsigned>(spec.ops.size()));
  for (unsigned i = 0; i < spec.ops.size(); ++i) wire::FillOpKey(ops[i], spec.ops[i]);
  req.setStrategy(spec.strategy);
  req.setBudget(spec.budget);
  req.setBudgetSeconds(spec.budget_seconds);
  req.setPatience(spec.patience);
  req.setSeed(spec.seed);
  req.setForce(spec.force);
  req.setPriority(spec.priority);
  req.setJobSize(spec.job_size);
  req.setWarmStart(spec.warm_start);
  req.setTotalBudget(spec.total_budget);
  req.setScheduler(spec.scheduler);
  auto weights = req.initWeights(static_cast<unsigned>(spec.weights.size()));
  for (unsigned i = 0; i < spec.weights.size(); ++i) weights.set(i, spec.weights[i]);
  auto names = req.initNames(static_cast<unsigned>(spec.names.size()));
  for (unsigned i = 0; i < spec.names.size(); ++i) names.set(i, spec.names[i]);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  SubmitOutcome out;
  TF_RETURN_IF_ERROR(wire::Guard("submit reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::SUBMIT_REPLY) return Internal("coordinator answered submit with another message kind");
    auto r = in->Envelope().getBody().getSubmitReply();
    out.submission_id = r.getSubmissionId();
    for (uint64_t id : r.getTaskIds()) out.task_ids.push_back(id);
    for (bool c : r.getFromCache()) out.from_cache.push_back(c);
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<CancelOutcome> Client::Cancel(uint64_t submission_id) {
  wire::Outgoing msg;
  msg.Body().initCancel().setSubmissionId(submission_id);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  CancelOutcome out;
  TF_RETURN_IF_ERROR(wire::Guard("cancel reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::CANCEL_REPLY) return Internal("coordinator answered cancel with another message kind");
    auto r = in->Envelope().getBody().getCancelReply();
    out.submission_id = r.getSubmissionId();
    out.cancelled = r.getCancelled();
    out.shared = r.getShared();
    out.finished = r.getFinished();
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<StatusView> Client::GetStatus(uint64_t submission_id) {
  wire::Outgoing msg;
  msg.Body().initStatus().setSubmissionId(submission_id);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  StatusView out;
  TF_RETURN_IF_ERROR(wire::Guard("status reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::STATUS_REPLY) return Internal("coordinator answered status with another message kind");
    auto r = in->Envelope().getBody().getStatusReply();
    out.submission_id = r.getSubmissionId();
    out.done = r.getDone();
    out.cancelled = r.getCancelled();
    out.priority = r.getPriority();
    for (auto t : r.getTasks()) {
      TaskView v;
      v.task_id = t.getTaskId();
      TF_ASSIGN_OR_RETURN(v.key, wire::ReadOpKey(t.getOpKey()));
      v.op_key_hash = t.getOpKeyHash();
      v.name = t.getName();
      v.state = StateName(t.getState());
      v.evaluated = t.getEvaluated();
      v.planned = t.getPlanned();
      v.failed_configs = t.getFailedConfigs();
      v.has_best = t.getHasBest();
      v.best_index = t.getBestConfigIndex();
      v.best_latency_us = t.getBestLatencyUs();
      v.baseline_latency_us = t.getBaselineLatencyUs();
      v.best_config = ReadConfig(t.getBestConfig());
      v.failure_reasons = wire::ReadFailureReasons(t.getFailureReasons());
      out.tasks.push_back(std::move(v));
    }
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<std::vector<std::optional<KbView>>> Client::Lookup(const std::vector<OpKey>& keys, bool nearest) {
  wire::Outgoing msg;
  auto lookup = msg.Body().initLookup();
  lookup.setNearest(nearest);
  auto list = lookup.initKeys(static_cast<unsigned>(keys.size()));
  for (unsigned i = 0; i < keys.size(); ++i) wire::FillOpKey(list[i], keys[i]);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  std::vector<std::optional<KbView>> out;
  TF_RETURN_IF_ERROR(wire::Guard("lookup reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::LOOKUP_REPLY) return Internal("coordinator answered lookup with another message kind");
    for (auto e : in->Envelope().getBody().getLookupReply().getEntries()) {
      if (!e.getFound()) {
        out.emplace_back();
        continue;
      }
      KbView v;
      TF_ASSIGN_OR_RETURN(static_cast<KbEntry&>(v), wire::ReadKbRecord(e.getRecord()));
      v.approximate = e.getApproximate();
      v.distance = e.getDistance();
      out.push_back(std::move(v));
    }
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<KbPage> Client::ExportKb(const std::string& after, uint32_t limit) {
  wire::Outgoing msg;
  auto req = msg.Body().initKbExport();
  req.setAfter(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(after.data()), after.size()));
  req.setLimit(limit);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  KbPage page;
  TF_RETURN_IF_ERROR(wire::Guard("export reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::KB_EXPORT_REPLY) {
      return Internal("coordinator answered export with another message kind");
    }
    auto r = in->Envelope().getBody().getKbExportReply();
    for (auto rec : r.getRecords()) {
      TF_ASSIGN_OR_RETURN(KbEntry e, wire::ReadKbRecord(rec));
      page.entries.push_back(std::move(e));
    }
    auto next = r.getNext();
    page.next.assign(reinterpret_cast<const char*>(next.begin()), next.size());
    page.done = r.getDone();
    return tunefleet::Status::Ok();
  }));
  return page;
}

Result<KbImportView> Client::ImportKb(const std::vector<KbEntry>& entries, bool dry_run, bool skip_refused) {
  wire::Outgoing msg;
  auto req = msg.Body().initKbImport();
  req.setDryRun(dry_run);
  req.setSkipRefused(skip_refused);
  auto list = req.initRecords(static_cast<unsigned>(entries.size()));
  for (unsigned i = 0; i < entries.size(); ++i) wire::FillKbRecord(list[i], entries[i]);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  KbImportView out;
  TF_RETURN_IF_ERROR(wire::Guard("import reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::KB_IMPORT_REPLY) {
      return Internal("coordinator answered import with another message kind");
    }
    auto r = in->Envelope().getBody().getKbImportReply();
    out.added = r.getAdded();
    out.replaced = r.getReplaced();
    out.kept = r.getKept();
    for (auto f : r.getRefused()) out.refused.emplace_back(f.getIndex(), f.getReason());
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<std::vector<WorkerView>> Client::ListWorkers() {
  wire::Outgoing msg;
  msg.Body().initWorkers();
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  std::vector<WorkerView> out;
  TF_RETURN_IF_ERROR(wire::Guard("workers reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::WORKERS_REPLY) {
      return Internal("coordinator answered workers with another message kind");
    }
    for (auto w : in->Envelope().getBody().getWorkersReply().getWorkers()) {
      WorkerView v;
      v.id = w.getId();
      for (auto soc : w.getSocs()) v.socs.emplace_back(soc.cStr());
      v.slots = w.getSlots();
      v.busy_slots = w.getBusySlots();
      v.jobs_completed = w.getJobsCompleted();
      v.seconds_since_seen = w.getSecondsSinceSeen();
      v.seconds_connected = w.getSecondsConnected();
      out.push_back(std::move(v));
    }
    return tunefleet::Status::Ok();
  }));
  return out;
}

Result<WatchView> Client::Watch(uint64_t submission_id, uint64_t after, std::chrono::milliseconds wait,
                                uint32_t max_events) {
  wire::Outgoing msg;
  auto req = msg.Body().initWatch();
  req.setSubmissionId(submission_id);
  req.setAfter(after);
  req.setWaitMs(static_cast<uint32_t>(std::clamp<int64_t>(wait.count(), 0, timeout_.count() / 2)));
  req.setMaxEvents(max_events);
  TF_ASSIGN_OR_RETURN(std::unique_ptr<wire::Incoming> in, RoundTrip(msg));
  WatchView out;
  TF_RETURN_IF_ERROR(wire::Guard("watch reply", [&]() -> tunefleet::Status {
    if (in->Which() != schema::Envelope::Body::WATCH_REPLY) return Internal("coordinator answered watch with another message kind");
    auto r = in->Envelope().getBody().getWatchReply();
    for (auto e : r.getEvents()) {
      ProgressView v;
      v.seq = e.getSeq();
      v.task_id = e.getTaskId();
      switch (e.getKind()) {
        case schema::ProgressKind::STARTED: v.kind = "started"; break;
        case schema::ProgressKind::IMPROVED: v.kind = "improved"; break;
        case schema::ProgressKind::FINISHED: v.kind = "finished"; break;
        default: v.kind = "unknown"; break;  // a newer coordinator's kind
      }
      v.unix_ms = e.getUnixMs();
      v.evaluated = e.getEvaluated();
      v.best_latency_us = e.getBestLatencyUs();
      v.baseline_latency_us = e.getBaselineLatencyUs();
      v.state = StateName(e.getState());
      out.events.push_back(std::move(v));
    }
    out.next = r.getNext();
    out.gap = r.getGap();
    out.done = r.getDone();
    out.more = r.getMore();
    out.closing = r.getClosing();
    out.tasks = r.getTasks();
    out.finished_tasks = r.getFinishedTasks();
    out.evaluated = r.getEvaluated();
    out.planned = r.getPlanned();
    return tunefleet::Status::Ok();
  }));
  return out;
}

}  // namespace tunefleet::client
