// transport::IsLoopback: what the coordinator warns about when it serves without CURVE.
#include "tunefleet/common/transport.h"

#include <gtest/gtest.h>

namespace tunefleet::transport {
namespace {

TEST(Transport, OnlyEndpointsThisHostAloneCanReachAreLoopback) {
  for (const char* local : {"tcp://127.0.0.1:5555", "tcp://127.0.0.2:*", "tcp://localhost:5555", "tcp://lo:5555",
                            "tcp://[::1]:5555", "tcp://[0:0:0:0:0:0:0:1]:5555", "tcp://[::ffff:127.0.0.1]:5555",
                            "tcp://LOCALHOST:5555", "inproc://clients", "ipc:///tmp/tf.sock"}) {
    EXPECT_TRUE(IsLoopback(local)) << local;
  }
  for (const char* open : {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://10.0.0.5:5555", "tcp://eth0:5555",
                           "tcp://[::]:5555", "tcp://[2001:db8::1]:5555", "tcp://1270.0.0.1:5555", "udp://127.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopback(open)) << open;
  }
}

}  // namespace
}  // namespace tunefleet::transport
