#include "tunefleet/common/curve.h"

#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <zmq_addon.hpp>

namespace tunefleet::curve {
namespace {

constexpr char kPlaceholder[] = "REPLACE_ME";
constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The file's keys, one per non-empty line, each checked.
Result<std::vector<std::string>> ReadKeys(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read CURVE key file " + path + " (is the key folder mounted?)");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty()) continue;
    if (line == kPlaceholder) {
      return InvalidArgument(path + " holds the placeholder REPLACE_ME: put a Z85 CURVE key there "
                             "(`tunefleet curve-keypair` prints a pair)");
    }
    TF_RETURN_IF_ERROR(CheckKey(line, path));
    keys.push_back(line);
  }
  return keys;
}

Result<std::string> ReadOneKey(const std::string& path) {
  TF_ASSIGN_OR_RETURN(std::vector<std::string> keys, ReadKeys(path));
  if (keys.size() != 1) {
    return InvalidArgument(path + " must hold exactly one Z85 CURVE key, not " + std::to_string(keys.size()));
  }
  return keys.front();
}

Result<KeyPair> ReadPair(const std::string& dir, const std::string& stem) {
  KeyPair pair;
  TF_ASSIGN_OR_RETURN(pair.public_key, ReadOneKey(dir + "/" + stem + ".public"));
  TF_ASSIGN_OR_RETURN(pair.secret_key, ReadOneKey(dir + "/" + stem + ".secret"));
  char derived[41] = {};
  if (zmq_curve_public(derived, pair.secret_key.c_str()) != 0 || pair.public_key != derived) {
    return InvalidArgument(dir + "/" + stem + ".public is not the public key of " + stem + ".secret");
  }
  return pair;
}

Status FromZmq(const zmq::error_t& e, const std::string& what) { return InvalidArgument(what + ": " + e.what()); }

}  // namespace

Status CheckKey(const std::string& key, const std::string& what) {
  uint8_t decoded[32];
  if (key.size() != 40 || zmq_z85_decode(decoded, key.c_str()) == nullptr) {
    return InvalidArgument(what + ": '" + key.substr(0, 48) + "' is not a Z85 CURVE key (40 characters)");
  }
  return Status::Ok();
}

KeyPair GenerateKeyPair() {
  char pub[41] = {}, sec[41] = {};
  zmq_curve_keypair(pub, sec);
  return {pub, sec};
}

Result<ServerKeys> LoadServerKeys(const std::string& dir) {
  ServerKeys keys;
  TF_ASSIGN_OR_RETURN(keys.server, ReadPair(dir, "server"));
  TF_ASSIGN_OR_RETURN(keys.worker_public, ReadOneKey(dir + "/worker.public"));
  TF_ASSIGN_OR_RETURN(keys.clients, ReadKeys(dir + "/clients.public"));
  TF_ASSIGN_OR_RETURN(keys.readers, ReadKeys(dir + "/readers.public"));
  return keys;
}

Result<PeerKeys> LoadPeerKeys(const std::string& dir, const std::string& own) {
  PeerKeys keys;
  TF_ASSIGN_OR_RETURN(keys.server_public, ReadOneKey(dir + "/server.public"));
  TF_ASSIGN_OR_RETURN(keys.own, ReadPair(dir, own));
  return keys;
}

Result<std::optional<std::string>> KeyDir(const std::string& flag, const char* env_enabled, const char* env_dir) {
  if (!flag.empty()) return std::optional<std::string>(flag);
  const std::string enabled = env_enabled ? env_enabled : "";
  if (enabled.empty() || enabled == "false" || enabled == "0") return std::optional<std::string>();
  if (enabled != "true" && enabled != "1") {
    return InvalidArgument("TUNEFLEET_CURVE_ENABLED is '" + enabled + "' (use true or false)");
  }
  if (env_dir == nullptr || *env_dir == '\0') {
    return InvalidArgument("TUNEFLEET_CURVE_ENABLED is true but TUNEFLEET_CURVE_DIR names no key folder");
  }
  return std::optional<std::string>(env_dir);
}

Status MakeServer(zmq::socket_t& socket, const KeyPair& server, const std::string& zap_domain) {
  try {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, server.secret_key);
    socket.set(zmq::sockopt::zap_domain, zap_domain);
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "CURVE server socket");
  }
  return Status::Ok();
}

Status MakeClient(zmq::socket_t& socket, const PeerKeys& keys) {
  try {
    socket.set(zmq::sockopt::curve_serverkey, keys.server_public);
    socket.set(zmq::sockopt::curve_publickey, keys.own.public_key);
    socket.set(zmq::sockopt::curve_secretkey, keys.own.secret_key);
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "CURVE client socket");
  }
  return Status::Ok();
}

std::optional<std::string> PeerRole(const zmq::message_t& msg) {
  const char* user = zmq_msg_gets(msg.handle(), "User-Id");
  if (user == nullptr || *user == '\0') return std::nullopt;
  return std::string(user);
}

ZapHandler::Allowed ServerAllowList(const ServerKeys& keys) {
  ZapHandler::Allowed allowed;
  allowed[kWorkerDomain][keys.worker_public] = kWorkerRole;
  // A key listed as both keeps the larger role.
  for (const auto& k : keys.readers) allowed[kClientDomain][k] = kReaderRole;
  for (const auto& k : keys.clients) allowed[kClientDomain][k] = kClientRole;
  return allowed;
}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& ctx, Allowed allowed) {
  std::unique_ptr<ZapHandler> handler(new ZapHandler(ctx, std::move(allowed)));
  zmq::socket_t socket(ctx, zmq::socket_type::rep);
  try {
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    return FailedPrecondition(std::string("cannot start the ZAP handler on ") + kZapEndpoint + ": " + e.what());
  }
  // The socket moves to the handler's thread; thread creation orders the hand-over.
  handler->thread_ = std::thread([h = handler.get(), s = std::move(socket)]() mutable { h->Serve(std::move(s)); });
  return handler;
}

ZapHandler::~ZapHandler() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::Serve(zmq::socket_t socket) {
  socket.set(zmq::sockopt::rcvtimeo, 100);
  while (!stop_.load()) {
    std::vector<zmq::message_t> frames;
    try {
      if (!zmq::recv_multipart(socket, std::back_inserter(frames))) continue;  // timed out
    } catch (const zmq::error_t&) {
      return;  // context terminated
    }
    // RFC 27: version, request id, domain, address, identity, mechanism, credentials...
    std::string code = "400", text = "refused", user;
    if (frames.size() >= 6 && frames[0].to_string() == "1.0") {
      const std::string domain = frames[2].to_string(), mechanism = frames[5].to_string();
      if (mechanism != "CURVE" || frames.size() < 7 || frames[6].size() != 32) {
        text = "tunefleet admits CURVE peers only";
      } else {
        char z85[41] = {};
        zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
        const std::string* role = nullptr;
        if (auto d = allowed_.find(domain); d != allowed_.end()) {
          if (auto k = d->second.find(z85); k != d->second.end()) role = &k->second;
        }
        if (role != nullptr) {
          code = "200";
          text = "OK";
          user = *role;
        } else {
          text = "public key not listed for " + domain;
        }
      }
    }
    if (code != "200") {
      refused_.fetch_add(1);
      // What an operator needs to fix a key list: who, where, why (the key is public).
      const std::string domain = frames.size() > 2 ? frames[2].to_string() : "?";
      const std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
      char z85[41] = "?";
      if (frames.size() > 6 && frames[6].size() == 32) zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
      fmt::print(stderr, "curve: refused a {} peer from {} with public key {}: {}\n", domain, address, z85, text);
    }
    const std::string request_id = frames.size() >= 2 ? frames[1].to_string() : "";
    std::vector<zmq::message_t> reply;
    reply.emplace_back(std::string("1.0"));
    reply.emplace_back(request_id);
    reply.emplace_back(code);
    reply.emplace_back(text);
    reply.emplace_back(user);
    reply.emplace_back();  // metadata
    try {
      zmq::send_multipart(socket, reply);
    } catch (const zmq::error_t&) {
      return;
    }
  }
}

}  // namespace tunefleet::curve
