// ZeroMQ helpers: socket set-up with tunefleet's bounds, bind/connect, and sending and
// receiving Envelopes as frames. The one place zmq::error_t becomes Status. Sockets are
// not thread-safe: each helper must be called by the thread that owns the socket.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "tunefleet/common/status.h"
#include "tunefleet/common/wire.h"

namespace tunefleet::transport {

// LINGER 0 and ZMQ_MAXMSGSIZE on every socket; ROUTER_HANDOVER on ROUTERs so a
// reconnecting peer with the same identity takes over its route; on DEALERs a send
// timeout of protocol::kSendTimeout: a DEALER with no peer (its CURVE handshake was
// refused, say) blocks a send forever, and its thread with it, even to SIGTERM.
zmq::socket_t MakeSocket(zmq::context_t& ctx, zmq::socket_type type);

// kInvalidArgument for a malformed endpoint, kUnavailable when the address is in use.
Status Bind(zmq::socket_t& socket, const std::string& endpoint);
Status Connect(zmq::socket_t& socket, const std::string& endpoint);
// The endpoint actually bound (resolves "tcp://127.0.0.1:*" to a port).
std::string LastEndpoint(zmq::socket_t& socket);
// Whether a bind endpoint is reachable only from this host: inproc://, ipc://, or tcp://
// on a loopback address (127.0.0.0/8, ::1, localhost, the `lo` interface).
bool IsLoopback(const std::string& endpoint);

// DEALER side: one frame, the envelope. kUnavailable when no peer took it in time.
Status Send(zmq::socket_t& socket, wire::Outgoing& msg);
// The same for a message already encoded (a worker forwarding its slots' results).
Status SendEncoded(zmq::socket_t& socket, zmq::message_t& msg);
// ROUTER side: [identity][envelope].
Status SendTo(zmq::socket_t& socket, const std::string& identity, wire::Outgoing& msg);
// ROUTER side, as a probe of whether `identity` is still connected. Never blocks.
enum class Delivery {
  kSent,     // connected
  kBlocked,  // not taken now: the peer's queue is full, or its connection is closing
  kGone,     // ZeroMQ has no connection for it (the peer closed it, or died and its kernel did)
};
Result<Delivery> SendIfConnected(zmq::socket_t& socket, const std::string& identity, wire::Outgoing& msg);

// Receives one whole multipart message; nullopt when dontwait and nothing is queued
// (or the wait timed out on a socket with RCVTIMEO).
Result<std::optional<std::vector<zmq::message_t>>> Receive(zmq::socket_t& socket, bool dontwait);

}  // namespace tunefleet::transport
