// CURVE keys and the ZAP handler (curve.h) over real ZeroMQ sockets on 127.0.0.1: key
// folders load or are refused naming the file to fix, and a CURVE server admits only
// listed keys, each message carrying its sender's role.
#include "tunefleet/common/curve.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/scratch_dir.h"
#include "tunefleet/common/transport.h"

namespace tunefleet::curve {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text << "\n"; }

struct Fleet {
  KeyPair server = GenerateKeyPair(), worker = GenerateKeyPair(), client = GenerateKeyPair(),
          reader = GenerateKeyPair();
  void WriteServerDir(const std::string& dir) const {
    Write(dir + "/server.public", server.public_key);
    Write(dir + "/server.secret", server.secret_key);
    Write(dir + "/worker.public", worker.public_key);
    Write(dir + "/clients.public", client.public_key);
    Write(dir + "/readers.public", reader.public_key);
  }
};

TEST(CurveKeys, AServerFolderLoadsWithItsRoles) {
  testing::ScratchDir dir;
  Fleet f;
  f.WriteServerDir(dir.Path());
  auto keys = LoadServerKeys(dir.Path());
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->server.secret_key, f.server.secret_key);
  EXPECT_EQ(keys->worker_public, f.worker.public_key);
  ASSERT_EQ(keys->clients.size(), 1u);
  EXPECT_EQ(keys->clients[0], f.client.public_key);
  auto allowed = ServerAllowList(*keys);
  EXPECT_EQ(allowed[kClientDomain][f.reader.public_key], kReaderRole);
  EXPECT_EQ(allowed[kClientDomain][f.client.public_key], kClientRole);
  EXPECT_EQ(allowed[kWorkerDomain][f.worker.public_key], kWorkerRole);
  EXPECT_EQ(allowed[kWorkerDomain].count(f.client.public_key), 0u);
}

TEST(CurveKeys, BadFoldersAreRefusedNamingTheFileToFix) {
  testing::ScratchDir dir;
  Fleet f;
  f.WriteServerDir(dir.Path());
  Write(dir.Path("server.secret"), "REPLACE_ME");
  auto placeholder = LoadServerKeys(dir.Path());
  ASSERT_FALSE(placeholder.ok());
  EXPECT_NE(placeholder.status().message().find("server.secret holds the placeholder REPLACE_ME"), std::string::npos)
      << placeholder.status().message();

  Write(dir.Path("server.secret"), f.worker.secret_key);  // not the pair of server.public
  auto mismatch = LoadServerKeys(dir.Path());
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("server.public is not the public key of server.secret"),
            std::string::npos)
      << mismatch.status().message();

  Write(dir.Path("server.secret"), f.server.secret_key);
  Write(dir.Path("clients.public"), f.client.public_key + "\nnot-a-key");
  auto malformed = LoadServerKeys(dir.Path());
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(malformed.status().message().find("clients.public: 'not-a-key' is not a Z85 CURVE key"), std::string::npos)
      << malformed.status().message();

  auto missing = LoadPeerKeys(dir.Path(), "client");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("client.public"), std::string::npos) << missing.status().message();
}

TEST(CurveKeys, TheFlagOrTheChartsEnvironmentTurnsCurveOn) {
  EXPECT_EQ(KeyDir("", nullptr, nullptr).value(), std::nullopt);
  EXPECT_EQ(KeyDir("", "false", "/keys").value(), std::nullopt);
  EXPECT_EQ(KeyDir("", "true", "/keys").value(), std::optional<std::string>("/keys"));
  EXPECT_EQ(KeyDir("/flag", "false", "/keys").value(), std::optional<std::string>("/flag"));
  auto no_dir = KeyDir("", "true", "");
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("TUNEFLEET_CURVE_DIR"), std::string::npos);
  EXPECT_FALSE(KeyDir("", "yes", "/keys").ok());
}

// A ROUTER CURVE server guarded by the handler; each DEALER sends one frame.
class CurveSockets : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerKeys keys{f_.server, f_.worker.public_key, {f_.client.public_key}, {f_.reader.public_key}};
    auto zap = ZapHandler::Start(ctx_, ServerAllowList(keys));
    ASSERT_TRUE(zap.ok()) << zap.status().ToString();
    zap_ = std::move(zap).value();
    ASSERT_TRUE(MakeServer(server_, f_.server, kClientDomain).ok());
    ASSERT_TRUE(transport::Bind(server_, "tcp://127.0.0.1:*").ok());
    endpoint_ = transport::LastEndpoint(server_);
  }

  // The role the server saw with the message, or "" when nothing arrived in time.
  std::string SendAs(const KeyPair& own, std::optional<std::string> server_public) {
    zmq::socket_t dealer = transport::MakeSocket(ctx_, zmq::socket_type::dealer);
    if (server_public) {
      EXPECT_TRUE(MakeClient(dealer, {*server_public, own}).ok());
    }
    EXPECT_TRUE(transport::Connect(dealer, endpoint_).ok());
    dealer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    server_.set(zmq::sockopt::rcvtimeo, 1500);
    auto frames = transport::Receive(server_, false);
    if (!frames.ok() || !frames->has_value()) return "";
    return PeerRole((*frames)->back()).value_or("(none)");
  }

  Fleet f_;
  zmq::context_t ctx_{1};
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t server_{transport::MakeSocket(ctx_, zmq::socket_type::router)};
  std::string endpoint_;
};

TEST_F(CurveSockets, ListedKeysArriveWithTheirRoleAndOthersAreRefused) {
  EXPECT_EQ(SendAs(f_.client, f_.server.public_key), kClientRole);
  EXPECT_EQ(SendAs(f_.reader, f_.server.public_key), kReaderRole);
  EXPECT_EQ(zap_->refused(), 0u);
  // The worker's key is listed for the worker domain only.
  EXPECT_EQ(SendAs(f_.worker, f_.server.public_key), "");
  EXPECT_EQ(SendAs(GenerateKeyPair(), f_.server.public_key), "");
  EXPECT_GE(zap_->refused(), 2u);
  // A plaintext peer cannot talk to a CURVE server at all.
  EXPECT_EQ(SendAs(f_.client, std::nullopt), "");
  // Still serving a listed key after the refusals.
  EXPECT_EQ(SendAs(f_.client, f_.server.public_key), kClientRole);
}

}  // namespace
}  // namespace tunefleet::curve
