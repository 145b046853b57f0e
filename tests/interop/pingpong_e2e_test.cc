// rocemu-pingpong end to end without root: two RNICs wired back to back in
// this process, each behind a session server on its own socket, frames
// moved in real time by the test (which may drop or rewrite them), and the
// real rocemu-pingpong binary ($ROCEMU_PINGPONG) run as server (on RNIC A)
// and client (on RNIC B).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nic/gid_table.h"
#include "nic/rnic.h"
#include "protocol/icrc.h"
#include "tests/verbs/tool_pair.h"
#include "verbs/server/session_server.h"

namespace rocemu::pingpong {
namespace {

nic::RnicConfig Config(uint8_t id) {
  nic::RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0x6e, id};
  c.gid = nic::GidFromIpv4(10, 8, 0, id);
  c.port.active_mtu = nic::Mtu::k4096;
  return c;
}

// Offsets in the frames these RNICs build (Ethernet, IPv4 without options,
// UDP, BTH).
constexpr size_t kIpOff = 14;
constexpr size_t kUdpOff = kIpOff + 20;
constexpr size_t kBthOff = kUdpOff + 8;
constexpr size_t kPayloadOff = kBthOff + 12;
constexpr uint8_t kRcSendOnly = 0x04;

bool IsRoce(const uint8_t* f, size_t len) {
  return len > kPayloadOff + 4 && f[12] == 0x08 && f[13] == 0x00 &&
         f[kIpOff + 9] == 17 && f[kUdpOff + 2] == 0x12 &&
         f[kUdpOff + 3] == 0xB7;  // 4791
}

using verbs::testing::FrameHook;
using Outcome = verbs::testing::ToolOutcome;

class PingpongEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_.SetUp("ROCEMU_PINGPONG", "pingpong", Config(1), Config(2));
  }

  // True when something listens on TCP `port` (/proc/net/tcp{,6}, state
  // 0A): probing with a connection would take the server's only accept.
  static bool Listening(int port) {
    char want[16];
    std::snprintf(want, sizeof(want), ":%04X ", port);
    for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      FILE* f = std::fopen(path, "r");
      if (f == nullptr) continue;
      char line[512];
      bool found = false;
      while (std::fgets(line, sizeof(line), f) != nullptr) {
        const std::string l = line;
        const size_t local = l.find(':', l.find(':') + 1);  // after "sl:"
        if (local != std::string::npos && l.compare(local, 6, want) == 0 &&
            l.find(" 0A ") != std::string::npos)
          found = true;
      }
      std::fclose(f);
      if (found) return true;
    }
    return false;
  }

  // The server on A, the client on B, the same arguments on both sides.
  Outcome Run(std::vector<std::string> args, const FrameHook& hook = {},
              std::vector<std::string> client_args = {}) {
    const int port = pair_.NextPort(21000);
    const std::string p = std::to_string(port);
    if (client_args.empty()) client_args = args;
    std::vector<std::string> s = args, c = client_args;
    s.insert(s.begin() + 1,
             {"-p", p, "-d", pair_.a_socket(), "-g", "0", "--timeout=10"});
    c.insert(c.begin() + 1,
             {"-p", p, "-d", pair_.b_socket(), "-g", "0", "--timeout=10"});
    c.push_back("127.0.0.1");
    verbs::testing::ToolChild sc = pair_.Spawn(s, "server");
    // The client connects once, as rdma-core's: start it when the server
    // listens (serving the server's control calls meanwhile) or has died.
    pair_.Pump([&] { return sc.status >= 0 || Listening(port); }, hook, {&sc});
    verbs::testing::ToolChild cc = pair_.Spawn(c, "client");
    return pair_.Finish(sc, cc, hook);
  }

  verbs::testing::ToolPair pair_;
};

struct Address {
  std::string qpn, psn, gid;
};

// The "local"/"remote" address line, in the rdma-core tools' format.
bool FindAddress(const std::string& out, const std::string& kind, Address* a) {
  const std::regex re("  " + kind +
                      " address: +LID 0x0000, QPN 0x([0-9a-f]{6}), PSN "
                      "0x([0-9a-f]{6})[,:] GID (\\S+)\n");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return false;
  *a = {m[1], m[2], m[3]};
  return true;
}

void ExpectCompleted(const Outcome& o, uint32_t size, uint32_t iters) {
  ASSERT_EQ(o.server_exit, 0) << o.server_out;
  ASSERT_EQ(o.client_exit, 0) << o.client_out;
  Address sl, sr, cl, cr;
  ASSERT_TRUE(FindAddress(o.server_out, "local", &sl)) << o.server_out;
  ASSERT_TRUE(FindAddress(o.server_out, "remote", &sr)) << o.server_out;
  ASSERT_TRUE(FindAddress(o.client_out, "local", &cl)) << o.client_out;
  ASSERT_TRUE(FindAddress(o.client_out, "remote", &cr)) << o.client_out;
  // Each side learned exactly what the other announced.
  EXPECT_EQ(sr.qpn, cl.qpn);
  EXPECT_EQ(sr.psn, cl.psn);
  EXPECT_EQ(sr.gid, cl.gid);
  EXPECT_EQ(cr.qpn, sl.qpn);
  EXPECT_EQ(cr.psn, sl.psn);
  EXPECT_EQ(sl.gid, "::ffff:10.8.0.1");
  EXPECT_EQ(cl.gid, "::ffff:10.8.0.2");
  const std::string bytes =
      std::to_string(uint64_t{size} * iters * 2) + " bytes in ";
  const std::string iter_line = std::to_string(iters) + " iters in ";
  const std::string verified =
      "verify: " + std::to_string(iters) + " messages received, all byte-exact";
  for (const std::string* out : {&o.server_out, &o.client_out}) {
    EXPECT_NE(out->find(bytes), std::string::npos) << *out;
    EXPECT_NE(out->find(iter_line), std::string::npos) << *out;
    EXPECT_NE(out->find(verified), std::string::npos) << *out;
  }
}

TEST_F(PingpongEndToEnd, RcSingleAndMultiPacketVerified) {
  ExpectCompleted(Run({"rc", "-s", "64", "-n", "50", "--verify"}), 64, 50);
  // 4100 bytes at MTU 1024: FIRST, 3 MIDDLE, LAST (4 bytes) per message.
  ExpectCompleted(
      Run({"rc", "-s", "4100", "-m", "1024", "-n", "30", "--verify"}), 4100,
      30);
  ExpectCompleted(Run({"rc", "-s", "2048", "-m", "4096", "-n", "30", "-e", "-r",
                       "3", "--verify", "-c"}),
                  2048, 30);
}

TEST_F(PingpongEndToEnd, UdUpToThePortMtuVerified) {
  ExpectCompleted(Run({"ud", "-s", "64", "-n", "50", "--verify"}), 64, 50);
  ExpectCompleted(Run({"ud", "-s", "4096", "-n", "30", "-e", "--verify"}), 4096,
                  30);
}

TEST_F(PingpongEndToEnd, RcCompletesThroughLossByRetransmission) {
  int dropped = 0;
  uint64_t lcg = 12345;
  // 15 % of the RoCE frames in each direction are lost (SENDs and ACKs
  // alike), picked pseudo-randomly: a periodic pattern could hit the same
  // packet of every retransmission and exhaust the retries.
  const FrameHook drop = [&](bool, uint8_t* f, size_t len) {
    if (!IsRoce(f, len)) return true;
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    if ((lcg >> 33) % 100 >= 15) return true;
    ++dropped;
    return false;
  };
  ExpectCompleted(
      Run({"rc", "-s", "3000", "-m", "1024", "-n", "20", "--verify"}, drop),
      3000, 20);
  EXPECT_GT(dropped, 5);
}

// A peer that echoes a wrong byte (rewritten in flight with a valid ICRC,
// so both RNICs accept it): --verify must name the message and the offset
// on the side that receives it, and on the other side when it comes back.
TEST_F(PingpongEndToEnd, VerifyReportsACorruptedEcho) {
  int server_sends = 0;
  const FrameHook corrupt = [&](bool a_to_b, uint8_t* f, size_t len) {
    if (!a_to_b || !IsRoce(f, len) || f[kBthOff] != kRcSendOnly) return true;
    if (++server_sends != 3) return true;
    f[kPayloadOff + 10] ^= 0x5A;
    f[kUdpOff + 6] = f[kUdpOff + 7] = 0;  // UDP checksum: not computed
    const std::span<const uint8_t> l3(f + kIpOff, len - kIpOff - 4);
    protocol::StoreIcrc(protocol::ComputeIcrc(l3, false), f + len - 4);
    return true;
  };
  const Outcome o = Run({"rc", "-s", "64", "-n", "6", "--verify"}, corrupt);
  // The server's 3rd message is the client's 3rd received one; the client
  // echoes it, so the server sees it in its 4th.
  EXPECT_EQ(o.client_exit, 1) << o.client_out;
  EXPECT_NE(o.client_out.find("verify: message 3: first bad byte at offset 10"),
            std::string::npos)
      << o.client_out;
  EXPECT_NE(o.client_out.find("verify: 1 errors in 6 messages"),
            std::string::npos)
      << o.client_out;
  EXPECT_EQ(o.server_exit, 1) << o.server_out;
  EXPECT_NE(o.server_out.find("verify: message 4: first bad byte at offset 10"),
            std::string::npos)
      << o.server_out;
}

// An RC client against a UD server: the RC SENDs reach a UD QP and are
// dropped, the client exhausts its retries (as against any wrong peer) and
// the server gives up at its --timeout; both fail with rdma-core's words.
TEST_F(PingpongEndToEnd, MismatchedTransportsFailCleanly) {
  const Outcome o = Run({"ud", "-s", "64", "-n", "3", "--timeout=3"}, {},
                        {"rc", "-s", "64", "-n", "3"});
  EXPECT_EQ(o.client_exit, 1) << o.client_out;
  EXPECT_NE(o.client_out.find("Failed status"), std::string::npos)
      << o.client_out;
  EXPECT_NE(o.client_out.find("for wr_id 2"), std::string::npos)
      << o.client_out;
  EXPECT_EQ(o.server_exit, 1) << o.server_out;
  EXPECT_NE(o.server_out.find("No completion within"), std::string::npos)
      << o.server_out;
}

TEST_F(PingpongEndToEnd, NoDaemonIsAClearError) {
  const Outcome o = Run({"rc", "-n", "1", "--timeout=2"}, {},
                        {"rc", "-n", "1", "-d", pair_.dir() + "/nothing.sock"});
  EXPECT_EQ(o.client_exit, 1);
  EXPECT_NE(o.client_out.find("Couldn't get context for " + pair_.dir() +
                              "/nothing.sock"),
            std::string::npos)
      << o.client_out;
  // The server got no client before its --timeout.
  EXPECT_EQ(o.server_exit, 1);
}

}  // namespace
}  // namespace rocemu::pingpong
