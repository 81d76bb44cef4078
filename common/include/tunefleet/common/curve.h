// CURVE security (DESIGN.md "Security"): off on loopback, on in the Helm chart. The
// coordinator's two ROUTER sockets are CURVE servers; a ZAP handler on the same ZeroMQ
// context admits only listed public keys and names each peer's role, which arrives with
// every message as its "User-Id" property: worker (the worker socket), client (submit,
// status and lookup) or reader (lookup only).
//
// Keys live in a folder of files, one Z85 key (40 characters) per line, as the chart's
// Secret mounts them (helm/tunefleet/templates/secret-curve.yaml):
//   server.public, server.secret    the coordinator's pair
//   worker.public, worker.secret    the pair every worker shares
//   clients.public, readers.public  admitted client / reader public keys (any number)
//   client.public, client.secret    a client's own pair (read by `tunefleet submit` etc.)
// The chart's placeholder REPLACE_ME, an empty file or a malformed key is an error that
// names the file: the binaries fail closed instead of running unencrypted.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "tunefleet/common/status.h"

namespace tunefleet::curve {

inline constexpr char kWorkerRole[] = "worker";
inline constexpr char kClientRole[] = "client";
inline constexpr char kReaderRole[] = "reader";
// ZAP domains of the coordinator's sockets.
inline constexpr char kClientDomain[] = "tunefleet-clients";
inline constexpr char kWorkerDomain[] = "tunefleet-workers";

struct KeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// What the coordinator needs: its pair and the admitted public keys by role.
struct ServerKeys {
  KeyPair server;
  std::string worker_public;
  std::vector<std::string> clients, readers;
};

// What a worker or client needs: the coordinator's public key and its own pair.
struct PeerKeys {
  std::string server_public;
  KeyPair own;
};

// kInvalidArgument unless `key` is a Z85-encoded 32-byte key; `what` names its source.
Status CheckKey(const std::string& key, const std::string& what);
// A fresh key pair (for tests and key generation).
KeyPair GenerateKeyPair();

Result<ServerKeys> LoadServerKeys(const std::string& dir);
// `own` is the file stem of the peer's pair: "worker" or "client".
Result<PeerKeys> LoadPeerKeys(const std::string& dir, const std::string& own);

// The key folder asked for, in order: a --curve-dir flag (non-empty), else the chart's
// environment, TUNEFLEET_CURVE_ENABLED ("true"/"1", "false"/"0" or unset) with
// TUNEFLEET_CURVE_DIR (pass getenv's answers; null = unset). nullopt when CURVE is off;
// kInvalidArgument for CURVE enabled without a folder or an unreadable flag value.
Result<std::optional<std::string>> KeyDir(const std::string& flag, const char* env_enabled, const char* env_dir);

// Socket options, set before bind / connect.
Status MakeServer(zmq::socket_t& socket, const KeyPair& server, const std::string& zap_domain);
Status MakeClient(zmq::socket_t& socket, const PeerKeys& keys);

// The role the ZAP handler gave the sender of `msg`; nullopt on a socket without CURVE.
std::optional<std::string> PeerRole(const zmq::message_t& msg);

// Answers ZAP requests (RFC 27) on inproc://zeromq.zap.01 of one context, in its own
// thread: a CURVE peer whose public key is listed for the request's domain is admitted
// with its role as User-Id; anything else is refused (400). Start it before binding the
// sockets it guards: libzmq admits every key when no handler is bound.
class ZapHandler {
 public:
  // domain -> (Z85 public key -> role)
  using Allowed = std::map<std::string, std::map<std::string, std::string>>;
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& ctx, Allowed allowed);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Requests refused so far (for logs and tests).
  uint64_t refused() const { return refused_.load(); }

 private:
  ZapHandler(zmq::context_t& ctx, Allowed allowed) : ctx_(ctx), allowed_(std::move(allowed)) {}
  void Serve(zmq::socket_t socket);

  zmq::context_t& ctx_;
  const Allowed allowed_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

// The handler for a coordinator's two domains.
ZapHandler::Allowed ServerAllowList(const ServerKeys& keys);

}  // namespace tunefleet::curve
