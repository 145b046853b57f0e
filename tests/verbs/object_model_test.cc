// The ibverbs object model through the library: device name and state
// report, neighbour resolution of address vectors, and (below) the
// discovery, query, SRQ, AH and async-event calls.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "tests/verbs/session_fixture.h"

namespace rocemu::verbs::testing {
namespace {

// Braces and brackets balance outside strings: the state is one JSON value.
bool JsonBalanced(const std::string& s) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth < 0) return false;
    }
  }
  return depth == 0 && !in_string && !s.empty() && s.front() == '{' &&
         s.back() == '}';
}

TEST_F(VerbsSessionTest, ZeroDmacResolvedByTheDaemonAndStateReported) {
  SessionServerOptions opts;
  opts.device_name = "rocemu_t0";
  const protocol::MacAddr mac_b = net_.b().config().mac;
  int calls = 0;
  std::optional<nic::Gid> asked;
  opts.resolve_dmac =
      [&](const nic::Gid& g) -> std::optional<protocol::MacAddr> {
    asked = g;
    // ARP takes a few polls: the library must retry transparently.
    if (++calls % 4 != 0) return std::nullopt;
    return mac_b;
  };
  StartServer(opts);
  Endpoint eb = MakePeer();
  Peer peer = PeerOf(eb);
  peer.mac = {};  // the application does not know the MAC
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenClient(path, 1 << 16);
        if (std::strcmp(rocemu_device_name(o.ctx), "rocemu_t0") != 0) {
          _exit(kOpen);
        }
        ConnectClient(o, peer);  // resolves the QP's dmac
        rocemu_ah_attr ah{};
        std::memcpy(ah.dgid, peer.gid.data(), 16);
        ah.port_num = 1;
        ah.hop_limit = 64;
        rocemu_ah* a = rocemu_create_ah(o.pd, &ah);  // resolves again
        if (a == nullptr) _exit(kQp);
        ClientInfo info{rocemu_qp_num(o.qp), o.mr->lkey,
                        reinterpret_cast<uint64_t>(o.buf->addr),
                        rocemu_client_id(o.ctx)};
        WriteAll(up, &info, sizeof(info));
        char end;
        ReadAll(down, &end, 1);
      },
      &from_child, &to_child);
  ClientInfo info;
  ASSERT_TRUE(PumpRead(from_child, &info, sizeof(info)))
      << "client exited with " << PumpUntilExit(pid);
  ASSERT_TRUE(asked.has_value());
  EXPECT_EQ(*asked, net_.b().config().gid);
  EXPECT_EQ(calls, 8);  // 3 EAGAIN + 1 success, for the QP and the AH
  EXPECT_EQ(server_->counters().dmac_pending, 6u);
  absl::StatusOr<nic::QpAttr> qa = net_.a().QueryQp(info.qpn);
  ASSERT_TRUE(qa.ok());
  EXPECT_EQ(qa->ah_attr.dmac, mac_b);
  EXPECT_EQ(qa->qp_state, nic::QpState::kRts);

  std::string json;
  server_->AppendStateJson(&json);
  EXPECT_TRUE(JsonBalanced(json)) << json;
  EXPECT_NE(json.find("\"device\":\"rocemu_t0\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"socket\":\"" + path_ + "\""), std::string::npos);
  EXPECT_NE(json.find(absl::StrFormat("\"id\":%u,\"pid\":%d,\"uid\":%u",
                                      info.client_id, pid, geteuid())),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(absl::StrFormat(
                "{\"qpn\":%u,\"type\":\"RC\",\"state\":\"RTS\"}", info.qpn)),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(absl::StrFormat("{\"key\":%u,", info.lkey)),
            std::string::npos);
  EXPECT_NE(json.find(absl::StrFormat("\"iova\":%u,\"length\":%u,", info.addr,
                                      1 << 16)),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"kind\":\"shm\""), std::string::npos);
  EXPECT_NE(json.find("\"cqe\":64"), std::string::npos);
  EXPECT_EQ(server_->HoldingsOf(info.client_id).ahs, 1u);
  EXPECT_EQ(json.find("\"ahs\":[]"), std::string::npos) << json;

  ASSERT_EQ(write(to_child, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  json.clear();
  server_->AppendStateJson(&json);
  EXPECT_TRUE(JsonBalanced(json)) << json;
  EXPECT_NE(json.find("\"clients\":[]"), std::string::npos) << json;
  close(from_child);
  close(to_child);
}

TEST_F(VerbsSessionTest, UnresolvableNeighbourFailsWithEhostunreach) {
  SessionServerOptions opts;
  const nic::Gid unreachable = nic::GidFromIpv4(10, 99, 99, 99);
  opts.resolve_dmac =
      [&](const nic::Gid& g) -> std::optional<protocol::MacAddr> {
    if (g == unreachable) return std::nullopt;
    return protocol::MacAddr{2, 0, 0, 0, 0, 9};
  };
  StartServer(opts);
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int) {
        ClientObjs o = OpenClient(path, 4096);
        rocemu_qp_attr a{};
        a.qp_state = ROCEMU_QPS_INIT;
        a.port_num = 1;
        if (rocemu_modify_qp(o.qp, &a,
                             ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX |
                                 ROCEMU_QP_PORT | ROCEMU_QP_ACCESS_FLAGS) !=
            0) {
          _exit(kModify);
        }
        a.qp_state = ROCEMU_QPS_RTR;
        a.path_mtu = ROCEMU_MTU_1024;
        a.dest_qp_num = 0x99;
        std::memcpy(a.ah_attr.dgid, unreachable.data(), 16);
        a.ah_attr.port_num = 1;
        int err = rocemu_modify_qp(
            o.qp, &a,
            ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
                ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
                ROCEMU_QP_MAX_DEST_RD_ATOMIC | ROCEMU_QP_MIN_RNR_TIMER);
        WriteAll(up, &err, sizeof(err));
        rocemu_qp_attr q{};
        err = rocemu_query_qp(o.qp, &q, ROCEMU_QP_STATE) != 0 ? -1 : q.qp_state;
        WriteAll(up, &err, sizeof(err));
        rocemu_ah_attr ah{};
        std::memcpy(ah.dgid, unreachable.data(), 16);
        ah.port_num = 1;
        err = rocemu_create_ah(o.pd, &ah) == nullptr ? errno : 0;
        WriteAll(up, &err, sizeof(err));
      },
      &from_child, &to_child);
  int err = 0;
  ASSERT_TRUE(PumpRead(from_child, &err, sizeof(err)))
      << "client exited with " << PumpUntilExit(pid);
  EXPECT_EQ(err, EHOSTUNREACH);
  ASSERT_TRUE(PumpRead(from_child, &err, sizeof(err)));
  EXPECT_EQ(err, ROCEMU_QPS_INIT);  // the failed RTR left it where it was
  ASSERT_TRUE(PumpRead(from_child, &err, sizeof(err)));
  EXPECT_EQ(err, EHOSTUNREACH);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_GT(server_->counters().dmac_pending, 100u);  // it kept retrying
  close(from_child);
  close(to_child);
}

}  // namespace
}  // namespace rocemu::verbs::testing
