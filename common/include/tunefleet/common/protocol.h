// Protocol constants shared by the coordinator, the worker and the CLI: heartbeat
// cadence (Paranoid Pirate style, both directions), liveness, lease slack, reconnect
// backoff and message-size bounds. The only place such numbers live.
#pragma once

#include <chrono>
#include <cstdint>

namespace tunefleet::protocol {

using namespace std::chrono_literals;

inline constexpr std::chrono::milliseconds kHeartbeatInterval = 1000ms;
// A peer silent for this many intervals is dead: its jobs are requeued.
inline constexpr int kHeartbeatLiveness = 3;
// A job's lease: a floor plus a per-config allowance; streaming results renews it.
inline constexpr std::chrono::milliseconds kLeaseFloor = 30s;
inline constexpr std::chrono::microseconds kLeasePerConfig = 2ms;
// A job that fails this many attempts marks its configs failed, not the task.
inline constexpr uint32_t kMaxJobAttempts = 3;
inline constexpr std::chrono::milliseconds kReconnectInitial = 250ms;
inline constexpr std::chrono::milliseconds kReconnectMax = 8s;
// A DEALER send that no connected peer takes within this fails (kUnavailable).
inline constexpr std::chrono::milliseconds kSendTimeout = 1000ms;
// ZMQ_MAXMSGSIZE on every socket; Cap'n Proto traversal limit in 8-byte words.
inline constexpr int64_t kMaxMessageBytes = 64ll << 20;
inline constexpr uint64_t kTraversalLimitWords = (64ull << 20) / 8;
inline constexpr int kNestingLimit = 32;
// Knowledge-base entries per `cache export` page (default, most) and per import request.
inline constexpr uint32_t kKbPageDefault = 500;
inline constexpr uint32_t kKbPageMax = 1000;
inline constexpr uint32_t kKbImportMax = 1000;
// Default configs per job and evaluations per streamed result chunk.
inline constexpr uint32_t kDefaultJobSize = 512;
// What a submission may ask for (the CLI's ranges; the coordinator refuses more from
// any client): configs per job, and priorities either side of the default 0.
inline constexpr uint32_t kMaxJobSize = 1u << 20;
inline constexpr int32_t kMaxPriority = 1000;
inline constexpr uint32_t kResultChunk = 128;
// A chunk goes out also when this long has passed since the last one: each chunk renews
// the job's lease (kLeaseFloor from its arrival), so slow evaluations -- real hardware,
// up to kLeaseFloor each -- keep a healthy job's lease alive.
inline constexpr std::chrono::milliseconds kResultFlushInterval = 1000ms;

inline constexpr uint16_t kDefaultClientPort = 5555;
inline constexpr uint16_t kDefaultWorkerPort = 5556;
inline constexpr uint16_t kDefaultMetricsPort = 9464;

}  // namespace tunefleet::protocol
