#include "tunefleet/common/transport.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include <zmq_addon.hpp>

#include "tunefleet/common/protocol.h"

namespace tunefleet::transport {
namespace {

Status FromZmq(const zmq::error_t& e, const std::string& what) {
  if (e.num() == EADDRINUSE || e.num() == EAGAIN || e.num() == ETERM) {
    return Unavailable(what + ": " + e.what());
  }
  return InvalidArgument(what + ": " + e.what());
}

// A malformed endpoint's error, with the form it should take.
Status EndpointError(const zmq::error_t& e, const std::string& what) {
  Status s = FromZmq(e, what);
  if (e.num() != EINVAL && e.num() != EPROTONOSUPPORT) return s;
  return InvalidArgument(s.message() + " (an endpoint reads tcp://HOST:PORT, e.g. tcp://127.0.0.1:5555 for a "
                                       "coordinator's clients, :5556 for its workers)");
}

Status NotTaken() {
  return Unavailable("send: no connected peer took the message within " +
                     std::to_string(protocol::kSendTimeout.count()) +
                     " ms (is the other side running, and with CURVE, is this side's key listed there?)");
}

}  // namespace

zmq::socket_t MakeSocket(zmq::context_t& ctx, zmq::socket_type type) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::maxmsgsize, protocol::kMaxMessageBytes);
  if (type == zmq::socket_type::router) s.set(zmq::sockopt::router_handover, 1);
  if (type == zmq::socket_type::dealer) s.set(zmq::sockopt::sndtimeo, static_cast<int>(protocol::kSendTimeout.count()));
  return s;
}

bool IsLoopback(const std::string& endpoint) {
  if (endpoint.starts_with("inproc://") || endpoint.starts_with("ipc://")) return true;
  if (!endpoint.starts_with("tcp://")) return false;
  std::string host = endpoint.substr(6);
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  // The port follows the last ':'; an IPv6 address is in brackets.
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    const std::string v6 = host.substr(1, close - 1);
    return v6 == "::1" || v6 == "0:0:0:0:0:0:0:1" || v6.starts_with("::ffff:127.");
  }
  host = host.substr(0, host.rfind(':'));
  return host.starts_with("127.") || host == "localhost" || host == "lo";
}

Status Bind(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    return EndpointError(e, "cannot bind " + endpoint);
  }
  return Status::Ok();
}

Status Connect(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return EndpointError(e, "cannot connect to " + endpoint);
  }
  return Status::Ok();
}

std::string LastEndpoint(zmq::socket_t& socket) {
  return socket.get(zmq::sockopt::last_endpoint);
}

Status Send(zmq::socket_t& socket, wire::Outgoing& msg) {
  kj::Array<capnp::word> words = msg.Encode();
  auto bytes = words.asBytes();
  zmq::message_t frame(bytes.begin(), bytes.size());
  return SendEncoded(socket, frame);
}

Status SendEncoded(zmq::socket_t& socket, zmq::message_t& msg) {
  try {
    if (!socket.send(msg, zmq::send_flags::none)) return NotTaken();
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "send");
  }
  return Status::Ok();
}

Status SendTo(zmq::socket_t& socket, const std::string& identity, wire::Outgoing& msg) {
  kj::Array<capnp::word> words = msg.Encode();
  auto bytes = words.asBytes();
  try {
    socket.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    socket.send(zmq::buffer(bytes.begin(), bytes.size()), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "send to peer");
  }
  return Status::Ok();
}

Result<Delivery> SendIfConnected(zmq::socket_t& socket, const std::string& identity, wire::Outgoing& msg) {
  kj::Array<capnp::word> words = msg.Encode();
  auto bytes = words.asBytes();
  // ROUTER_MANDATORY only for this send: without it a ROUTER drops a message to an unknown
  // identity silently; with it, a full queue would block the other sends.
  socket.set(zmq::sockopt::router_mandatory, 1);
  Result<Delivery> delivery = Delivery::kSent;
  try {
    if (!socket.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      delivery = Delivery::kBlocked;
    } else {
      socket.send(zmq::buffer(bytes.begin(), bytes.size()), zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t& e) {
    delivery = e.num() == EHOSTUNREACH ? Result<Delivery>(Delivery::kGone) : Result<Delivery>(FromZmq(e, "send to peer"));
  }
  socket.set(zmq::sockopt::router_mandatory, 0);
  return delivery;
}

Result<std::optional<std::vector<zmq::message_t>>> Receive(zmq::socket_t& socket, bool dontwait) {
  std::vector<zmq::message_t> frames;
  try {
    auto n = zmq::recv_multipart(socket, std::back_inserter(frames),
                                 dontwait ? zmq::recv_flags::dontwait : zmq::recv_flags::none);
    if (!n) return std::optional<std::vector<zmq::message_t>>();
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "receive");
  }
  return std::optional<std::vector<zmq::message_t>>(std::move(frames));
}

}  // namespace tunefleet::transport
