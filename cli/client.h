// Client: the client side of schemas/client.capnp over a DEALER socket, used by the
// CLI and the integration tests. Requests carry an id; a reply with another id (a late
// answer to a timed-out request) is discarded. One Client per thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "tunefleet/common/curve.h"
#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/op_key.h"
#include "tunefleet/common/search_space.h"
#include "tunefleet/common/status.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::client {

struct SubmitSpec {
  std::vector<OpKey> ops;
  std::string strategy = "auto";
  uint64_t budget = 0;  // 0 = whole valid space
  double budget_seconds = 0;  // per task; 0 = no time limit
  uint64_t patience = 0;      // per task: evaluations without improvement; 0 = no limit
  uint64_t seed = 1;
  bool force = false;
  int32_t priority = 0;
  uint32_t job_size = 0;
  bool warm_start = false;
  // > 0: one budget for all the submission's new tasks, split by `scheduler`.
  uint64_t total_budget = 0;
  std::string scheduler;        // "gradient" (default) or "round-robin"
  std::vector<double> weights;  // per op, how often it runs per model step; empty = 1 each
  std::vector<std::string> names;  // per op, shown back by status; empty = none
};

struct SubmitOutcome {
  uint64_t submission_id = 0;
  std::vector<uint64_t> task_ids;
  std::vector<bool> from_cache;
};

// What a cancel did to the submission's tasks (client.capnp CancelReply).
struct CancelOutcome {
  uint64_t submission_id = 0;
  uint32_t cancelled = 0;  // stopped now
  uint32_t shared = 0;     // another submission also waits on them: still running
  uint32_t finished = 0;   // had already finished
};

using NamedConfig = std::vector<std::pair<std::string, int64_t>>;

struct TaskView {
  uint64_t task_id = 0;
  OpKey key;
  std::string op_key_hash;
  std::string state;  // queued, running, done, failed, cancelled
  uint64_t evaluated = 0, planned = 0, failed_configs = 0;
  bool has_best = false;
  ConfigIndex best_index = 0;
  double best_latency_us = 0, baseline_latency_us = 0;
  NamedConfig best_config;
  std::string name;  // the op's name in its submission ("" when none was given)
  std::vector<std::pair<std::string, uint64_t>> failure_reasons;  // why configs failed, with counts
};

struct StatusView {
  uint64_t submission_id = 0;
  bool done = false;
  bool cancelled = false;  // by its user: done, though a task it shares may run on for another
  int32_t priority = 0;
  std::vector<TaskView> tasks;
};

// A lookup's answer: the entry, and whether it is of the nearest tuned shape.
struct KbView : KbEntry {
  bool approximate = false;  // the nearest tuned shape's entry, not this key's
  double distance = 0;
};

// One page of `cache export`.
struct KbPage {
  std::vector<KbEntry> entries;
  std::string next;  // pass as `after` for the following page
  bool done = false; // nothing follows
};

// What an import request did (client.capnp KbImportReply).
struct KbImportView {
  uint32_t added = 0, replaced = 0, kept = 0;
  std::vector<std::pair<uint32_t, std::string>> refused;  // (position in the request, why)
};

// A worker as the coordinator sees it (client.capnp WorkerInfo).
struct WorkerView {
  std::string id;
  std::vector<std::string> socs;
  uint32_t slots = 0, busy_slots = 0;
  uint64_t jobs_completed = 0;
  double seconds_since_seen = 0, seconds_connected = 0;
};

// One event of a submission's progress (client.capnp ProgressEvent).
struct ProgressView {
  uint64_t seq = 0, task_id = 0;
  std::string kind;  // started, improved, finished
  int64_t unix_ms = 0;
  uint64_t evaluated = 0;
  double best_latency_us = 0, baseline_latency_us = 0;  // 0: not measured yet
  std::string state;  // for finished: done, failed or cancelled
};
// One turn of `watch` (client.capnp WatchReply).
struct WatchView {
  std::vector<ProgressView> events;
  uint64_t next = 0;  // `after` for the next turn
  bool gap = false;   // events were dropped before this turn read them
  bool done = false;  // every task finished: nothing follows
  bool more = false;  // cut at the event limit: more follow at once
  bool closing = false;  // the coordinator is stopping
  uint32_t tasks = 0, finished_tasks = 0;
  uint64_t evaluated = 0, planned = 0;
};

class Client {
 public:
  // Borrows ctx. Connecting is lazy in ZeroMQ: an absent coordinator shows up as a
  // kUnavailable timeout on the first request.
  // With `curve`, the socket is a CURVE client (curve.h) with the client's own pair.
  Client(zmq::context_t& ctx, std::string endpoint,
         std::chrono::milliseconds timeout = std::chrono::seconds(10),
         std::optional<curve::PeerKeys> curve = std::nullopt);

  // Errors: the coordinator's own (kInvalidArgument with what to fix), or kUnavailable.
  Result<SubmitOutcome> Submit(const SubmitSpec& spec);
  Result<StatusView> GetStatus(uint64_t submission_id);
  // kNotFound for an unknown submission.
  Result<CancelOutcome> Cancel(uint64_t submission_id);
  // One entry per key, nullopt where the knowledge base has none.
  // With nearest, a miss is answered from the closest tuned shape (approximate = true).
  Result<std::vector<std::optional<KbView>>> Lookup(const std::vector<OpKey>& keys, bool nearest = false);
  // The knowledge base's entries after `after` (empty: from the first), at most `limit`
  // (0: the coordinator's default).
  Result<KbPage> ExportKb(const std::string& after, uint32_t limit = 0);
  // Merges entries (at most protocol::kKbImportMax) into the knowledge base.
  Result<KbImportView> ImportKb(const std::vector<KbEntry>& entries, bool dry_run, bool skip_refused);
  // While *flag is set, a request waiting for its reply gives up within 100 ms
  // (kDeadlineExceeded, "interrupted"): Ctrl-C ends a wait on a coordinator that does not
  // answer. nullptr: wait the whole timeout. The flag must outlive the client's requests.
  void AbandonWhen(const std::atomic<bool>* flag) { abandon_ = flag; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // The workers the coordinator knows now, by routing id.
  Result<std::vector<WorkerView>> ListWorkers();
  // The submission's progress events after `after` (0: the oldest kept); with nothing
  // new the coordinator holds the answer up to `wait` (at most half this client's reply
  // timeout, so a held answer is not taken for a lost one). kNotFound for an unknown
  // submission.
  Result<WatchView> Watch(uint64_t submission_id, uint64_t after, std::chrono::milliseconds wait,
                          uint32_t max_events = 0);

 private:
  zmq::context_t& ctx_;
  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  std::optional<curve::PeerKeys> curve_;
  Status socket_setup_;  // a CURVE option the socket refused, reported by the next request
  zmq::socket_t socket_;
  uint64_t next_request_id_ = 1;
  const std::atomic<bool>* abandon_ = nullptr;
  bool connected_ = false;

  zmq::socket_t NewSocket();

  // Sends msg and waits for the reply with its request id; an ErrorReply becomes its
  // Status.
  Result<std::unique_ptr<wire::Incoming>> RoundTrip(wire::Outgoing& msg);
};

}  // namespace tunefleet::client
