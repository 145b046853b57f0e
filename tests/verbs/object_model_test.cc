// The ibverbs object model through the library: device name and state
// report, neighbour resolution of address vectors, and (below) the
// discovery, query, SRQ, AH and async-event calls.
#include <arpa/inet.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/verbs/session_fixture.h"
#include "verbs/client/client_control.h"

namespace rocemu::verbs::testing {
namespace {

// The server's state as JSON; a document that does not parse fails the
// test through is_discarded().
nlohmann::json StateJson(const SessionServer& server) {
  std::string text;
  server.AppendStateJson(&text);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
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

  nlohmann::json json = StateJson(*server_);
  ASSERT_TRUE(json.is_object()) << json;
  EXPECT_EQ(json["device"], "rocemu_t0") << json;
  EXPECT_EQ(json["socket"], path_);
  ASSERT_EQ(json["clients"].size(), 1u) << json;
  const nlohmann::json& c = json["clients"][0];
  EXPECT_EQ(c["id"], info.client_id);
  EXPECT_EQ(c["name"].type(), nlohmann::json::value_t::string);
  EXPECT_EQ(c["pid"], pid);
  EXPECT_EQ(c["uid"], geteuid());
  ASSERT_EQ(c["qps"].size(), 1u) << json;
  EXPECT_EQ(
      c["qps"][0],
      (nlohmann::json{{"qpn", info.qpn}, {"type", "RC"}, {"state", "RTS"}}));
  ASSERT_EQ(c["mrs"].size(), 1u) << json;
  EXPECT_EQ(c["mrs"][0]["key"], info.lkey);
  EXPECT_EQ(c["mrs"][0]["iova"], info.addr);
  EXPECT_EQ(c["mrs"][0]["length"], 1 << 16);
  EXPECT_EQ(c["mrs"][0]["kind"], "shm");
  ASSERT_EQ(c["cqs"].size(), 1u) << json;
  EXPECT_EQ(c["cqs"][0]["cqe"], 64);
  EXPECT_EQ(server_->HoldingsOf(info.client_id).ahs, 1u);
  EXPECT_EQ(c["ahs"].size(), 1u) << json;

  ASSERT_EQ(write(to_child, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  json = StateJson(*server_);
  ASSERT_TRUE(json.is_object()) << json;
  EXPECT_EQ(json["clients"], nlohmann::json::array()) << json;
  close(from_child);
  close(to_child);
}

// rdma_create_qp's INIT folded into create_qp (wire::kCreateQpToInit): the
// QP comes back in INIT with rdma_cm's values and takes receives at once;
// a QP type rdma_cm does not take there, or an unknown flag, is refused.
TEST_F(VerbsSessionTest, CreateQpToInitLeavesTheQpInRdmaCmsInit) {
  StartServer(SessionServerOptions{});
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o = OpenClient(path, 1 << 16);
        rocemu_qp_init_attr init{};
        init.send_cq = o.cq;
        init.recv_cq = o.cq;
        init.cap = {8, 8, 1, 1, 0};
        init.qp_type = ROCEMU_QPT_RC;
        rocemu_qp* qp = rocemu::verbs::client::CreateQp(
            o.pd, &init, rocemu::verbs::wire::kCreateQpToInit);
        if (qp == nullptr) _exit(kQp);
        rocemu_qp_attr a{};
        if (rocemu_query_qp(qp, &a, ROCEMU_QP_STATE) != 0 ||
            a.qp_state != ROCEMU_QPS_INIT) {
          _exit(kModify);
        }
        rocemu_sge sge{reinterpret_cast<uint64_t>(o.buf->addr), 64, o.mr->lkey};
        rocemu_recv_wr wr{7, nullptr, &sge, 1};
        rocemu_recv_wr* bad = nullptr;
        if (rocemu_post_recv(qp, &wr, &bad) != 0) _exit(kPostRecv);
        init.qp_type = ROCEMU_QPT_UD;
        errno = 0;
        if (rocemu::verbs::client::CreateQp(
                o.pd, &init, rocemu::verbs::wire::kCreateQpToInit) != nullptr ||
            errno != EINVAL) {
          _exit(kPd);
        }
        init.qp_type = ROCEMU_QPT_RC;
        errno = 0;
        if (rocemu::verbs::client::CreateQp(o.pd, &init, 1u << 7) != nullptr ||
            errno != EINVAL) {
          _exit(kBuf);
        }
        const uint32_t ids[2] = {rocemu_qp_num(qp), rocemu_client_id(o.ctx)};
        WriteAll(up, ids, sizeof(ids));
        char end;
        ReadAll(down, &end, 1);
      },
      &from_child, &to_child);
  uint32_t ids[2] = {};
  ASSERT_TRUE(PumpRead(from_child, ids, sizeof(ids)))
      << "client exited with " << PumpUntilExit(pid);
  absl::StatusOr<nic::QpAttr> qa = net_.a().QueryQp(ids[0]);
  ASSERT_TRUE(qa.ok()) << qa.status();
  EXPECT_EQ(qa->qp_state, nic::QpState::kInit);
  EXPECT_EQ(qa->port_num, 1);
  EXPECT_EQ(qa->pkey_index, 0);
  EXPECT_EQ(qa->qp_access_flags, 0u);
  // The refused requests left no QP behind: the client holds the one QP
  // of OpenClient and this one.
  EXPECT_EQ(server_->HoldingsOf(ids[1]).qps, 2u);
  ASSERT_EQ(write(to_child, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
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

// The child's checks, each failing with its own exit code.
#define CHILD_CHECK(cond, code) \
  do {                          \
    if (!(cond)) _exit(code);   \
  } while (0)

TEST_F(VerbsSessionTest, DeviceDiscoveryAndQueries) {
  SessionServerOptions opts;
  opts.device_name = "rocemu_q0";
  StartServer(opts);
  // A socket no daemon answers on any more, and a file that is no socket:
  // neither is a device.
  const std::string stale = tmp_.path() + "/stale.sock";
  {
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, stale.c_str(), sizeof(a.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    close(fd);
  }
  const std::string plain = tmp_.path() + "/notes.txt";
  FILE* f = fopen(plain.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  const std::string path = path_, dir = tmp_.path();
  const nic::DeviceAttr dev = net_.a().device_attr();
  const nic::PortAttr port = net_.a().port_attr();
  const nic::RnicConfig cfg = net_.a().config();
  const uint32_t gid_cap = net_.a().gid_table().capacity();
  const uint16_t pkey_cap = net_.a().pkey_table().capacity();
  const uint16_t pkey0 = net_.a().pkey_table().Get(0);
  const std::optional<nic::Gid> gid0 = net_.a().gid_table().Get(0);
  ASSERT_TRUE(gid0.has_value());
  // A sparse table of more valid entries than one query_gid_table batch:
  // 0, then 3, then 20..40.
  std::vector<uint32_t> valid_at = {0, 3};
  for (uint32_t i = 20; i <= 40; ++i) valid_at.push_back(i);
  for (uint32_t i : valid_at) {
    if (i == 0) continue;
    nic::Gid g = *gid0;
    g[15] = static_cast<uint8_t>(i);
    g[14] = 0xa5;
    ASSERT_TRUE(net_.a().gid_table().Set(i, g).ok());
  }
  ASSERT_LT(wire::kGidBatch, valid_at.size());
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int, int) {
        unsetenv("ROCEMU_VERBS_SOCKET");
        setenv("ROCEMU_VERBS_DIR", dir.c_str(), 1);
        int n = -1;
        rocemu_device** list = rocemu_get_device_list(&n);
        CHILD_CHECK(list != nullptr && n == 1 && list[1] == nullptr, 20);
        CHILD_CHECK(
            std::strcmp(rocemu_get_device_name(list[0]), "rocemu_q0") == 0, 21);
        CHILD_CHECK(rocemu_get_device_path(list[0]) == path, 22);
        rocemu_context* ctx = rocemu_open_device_from(list[0]);
        rocemu_free_device_list(list);
        CHILD_CHECK(ctx != nullptr, 23);

        rocemu_device_attr da{};
        CHILD_CHECK(rocemu_query_device(ctx, &da) == 0, 24);
        CHILD_CHECK(
            da.max_qp == static_cast<int>(dev.max_qp) &&
                da.max_qp_wr == static_cast<int>(dev.max_qp_wr) &&
                da.max_cqe == static_cast<int>(dev.max_cqe) &&
                da.max_srq_wr == static_cast<int>(dev.max_srq_wr) &&
                da.max_sge == static_cast<int>(dev.max_sge) &&
                da.max_qp_rd_atom == static_cast<int>(dev.max_qp_rd_atom) &&
                da.atomic_cap == ROCEMU_ATOMIC_HCA &&
                da.max_pkeys == dev.max_pkeys && da.phys_port_cnt == 1 &&
                da.vendor_id == dev.vendor_id &&
                da.node_guid == dev.node_guid && dev.fw_ver == da.fw_ver,
            25);

        rocemu_port_attr pa{};
        CHILD_CHECK(rocemu_query_port(ctx, 1, &pa) == 0, 26);
        CHILD_CHECK(pa.state == ROCEMU_PORT_ACTIVE &&
                        pa.link_layer == ROCEMU_LINK_LAYER_ETHERNET &&
                        pa.active_mtu == static_cast<int>(port.active_mtu) &&
                        pa.max_mtu == static_cast<int>(port.max_mtu) &&
                        pa.gid_tbl_len == static_cast<int>(gid_cap) &&
                        pa.pkey_tbl_len == pkey_cap &&
                        pa.max_msg_sz == port.max_msg_sz &&
                        std::memcmp(pa.gid, cfg.gid.data(), 16) == 0 &&
                        std::memcmp(pa.mac, cfg.mac.data(), 6) == 0,
                    27);
        CHILD_CHECK(rocemu_query_port(ctx, 2, &pa) == EINVAL, 28);

        uint8_t gid[16];
        CHILD_CHECK(rocemu_query_gid(ctx, 1, 0, gid) == 0 &&
                        std::memcmp(gid, gid0->data(), 16) == 0,
                    29);
        CHILD_CHECK(
            rocemu_query_gid(ctx, 1, static_cast<int>(gid_cap), gid) == EINVAL,
            30);
        // The valid entries in batches, each with its index and GID.
        std::vector<rocemu_gid_entry> all(gid_cap);
        const int nv = rocemu_query_gid_table(ctx, 1, all.data(),
                                              static_cast<int>(gid_cap));
        bool same = nv == static_cast<int>(valid_at.size());
        for (int k = 0; same && k < nv; ++k) {
          uint8_t one[16];
          same = all[k].index == valid_at[k] &&
                 rocemu_query_gid(ctx, 1, static_cast<int>(all[k].index),
                                  one) == 0 &&
                 std::memcmp(one, all[k].gid, 16) == 0;
        }
        CHILD_CHECK(same, 35);
        CHILD_CHECK(rocemu_query_gid_table(ctx, 1, all.data(), 5) == -ENOSPC,
                    36);
        CHILD_CHECK(rocemu_query_gid_table(ctx, 2, all.data(), 5) == -EINVAL,
                    37);
        uint16_t pkey = 0;
        CHILD_CHECK(
            rocemu_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htons(pkey0),
            31);
        CHILD_CHECK(rocemu_query_pkey(ctx, 1, pkey_cap, &pkey) == EINVAL, 32);
        rocemu_close_device(ctx);

        // One socket named outright; a stale one gives no device.
        setenv("ROCEMU_VERBS_SOCKET", path.c_str(), 1);
        list = rocemu_get_device_list(&n);
        CHILD_CHECK(n == 1 && rocemu_get_device_path(list[0]) == path, 33);
        rocemu_free_device_list(list);
        setenv("ROCEMU_VERBS_SOCKET", (dir + "/stale.sock").c_str(), 1);
        list = rocemu_get_device_list(&n);
        CHILD_CHECK(list != nullptr && n == 0 && list[0] == nullptr, 34);
        rocemu_free_device_list(list);
      },
      &from_child, &to_child);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  // Each listing probed the live daemon and hung up.
  EXPECT_EQ(server_->counters().clients_accepted, 3u);
  EXPECT_EQ(server_->num_clients(), 0u);
  close(from_child);
  close(to_child);
  unlink(stale.c_str());
  unlink(plain.c_str());
}

// The port's link as a client sees it: IBV_EVENT_PORT_ERR and a DOWN port
// when the link drops, IBV_EVENT_PORT_ACTIVE and ACTIVE when it is back.
TEST_F(VerbsSessionTest, LinkChangesReachClientsAsPortEvents) {
  StartServer();
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        rocemu_context* ctx = rocemu_open_device(path.c_str());
        CHILD_CHECK(ctx != nullptr, kOpen);
        char step = 'o';
        WriteAll(up, &step, 1);
        ReadAll(down, &step, 1);  // the link went down
        rocemu_async_event ae{};
        CHILD_CHECK(rocemu_get_async_event(ctx, &ae, 10000) == 0 &&
                        ae.event_type == ROCEMU_EVENT_PORT_ERR &&
                        ae.element.port_num == 1,
                    20);
        rocemu_ack_async_event(&ae);
        rocemu_port_attr pa{};
        CHILD_CHECK(rocemu_query_port(ctx, 1, &pa) == 0 &&
                        pa.state == ROCEMU_PORT_DOWN && pa.phys_state == 3,
                    21);
        WriteAll(up, &step, 1);
        ReadAll(down, &step, 1);  // and came back
        CHILD_CHECK(rocemu_get_async_event(ctx, &ae, 10000) == 0 &&
                        ae.event_type == ROCEMU_EVENT_PORT_ACTIVE &&
                        ae.element.port_num == 1,
                    22);
        rocemu_ack_async_event(&ae);
        CHILD_CHECK(rocemu_query_port(ctx, 1, &pa) == 0 &&
                        pa.state == ROCEMU_PORT_ACTIVE && pa.phys_state == 5,
                    23);
        CHILD_CHECK(rocemu_get_async_event(ctx, &ae, 0) == ETIMEDOUT, 24);
        rocemu_close_device(ctx);
      },
      &from_child, &to_child);
  char step;
  ASSERT_TRUE(PumpRead(from_child, &step, 1))
      << "client exited with " << PumpUntilExit(pid);
  net_.a().SetLinkUp(false);
  ASSERT_EQ(write(to_child, "d", 1), 1);
  ASSERT_TRUE(PumpRead(from_child, &step, 1))
      << "client exited with " << PumpUntilExit(pid);
  net_.a().SetLinkUp(true);
  ASSERT_EQ(write(to_child, "u", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(server_->counters().async_events, 2u);
  EXPECT_EQ(net_.a().QueryCounters().link_downed, 1u);
  close(from_child);
  close(to_child);
}

// The first number after `key` in the state JSON (handles of a client).
// The first element of a client's list `list`, or of its first element's
// member `key`; 0 when there is none.
uint32_t FirstHandle(const nlohmann::json& client, const char* list,
                     const char* key = nullptr) {
  const nlohmann::json& l = client.value(list, nlohmann::json::array());
  if (!l.is_array() || l.empty()) return 0;
  const nlohmann::json& v =
      key == nullptr ? l[0] : l[0].value(key, nlohmann::json());
  return v.is_number_unsigned() ? v.get<uint32_t>() : 0;
}

// Objects of one client are invisible to another (ENOENT), whatever the
// handle; destroy order is enforced (EBUSY).
TEST_F(VerbsSessionTest, ForeignHandlesAndDestroyOrder) {
  StartServer();
  const std::string path = path_;
  const nic::Gid peer_gid = net_.b().config().gid;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs a = OpenClient(path, 8192);
        rocemu_srq_init_attr si{};
        si.attr = {8, 1, 0};
        rocemu_srq* srq = rocemu_create_srq(a.pd, &si);
        CHILD_CHECK(srq != nullptr, 20);
        rocemu_ah_attr aa{};
        std::memcpy(aa.dgid, peer_gid.data(), 16);
        aa.dmac[0] = 2;
        aa.port_num = 1;
        aa.hop_limit = 64;
        rocemu_ah* ah = rocemu_create_ah(a.pd, &aa);
        CHILD_CHECK(ah != nullptr, 21);
        char go = 0;
        WriteAll(up, &go, 1);
        ReadAll(down, &go, 1);  // the other client tried its luck
        // EBUSY: the CQ is used by a QP, the PD holds objects.
        CHILD_CHECK(rocemu_destroy_cq(a.cq) == EBUSY, 25);
        CHILD_CHECK(rocemu_dealloc_pd(a.pd) == EBUSY, 26);
        CHILD_CHECK(rocemu_destroy_comp_channel(a.ch) == EBUSY, 27);
        CHILD_CHECK(rocemu_destroy_ah(ah) == 0, 28);
        CHILD_CHECK(rocemu_destroy_srq(srq) == 0, 29);
        CHILD_CHECK(rocemu_destroy_qp(a.qp) == 0, 30);
        CHILD_CHECK(rocemu_dealloc_pd(a.pd) == EBUSY, 31);  // still the MR
        CHILD_CHECK(rocemu_dereg_mr(a.mr) == 0, 32);
        CHILD_CHECK(rocemu_dealloc_pd(a.pd) == 0, 33);
        CHILD_CHECK(rocemu_destroy_cq(a.cq) == 0, 34);
        CHILD_CHECK(rocemu_destroy_comp_channel(a.ch) == 0, 35);
        CHILD_CHECK(rocemu_close_device(a.ctx) == 0, 36);
      },
      &from_child, &to_child);
  char ready;
  ASSERT_TRUE(PumpRead(from_child, &ready, 1))
      << "client exited with " << PumpUntilExit(pid);
  const nlohmann::json json = StateJson(*server_);
  ASSERT_TRUE(json.is_object() && json["clients"].size() == 1) << json;
  const nlohmann::json& client = json["clients"][0];
  const uint32_t pd = FirstHandle(client, "pds");
  const uint32_t mr = FirstHandle(client, "mrs", "key");
  const uint32_t cq = FirstHandle(client, "cqs", "handle");
  const uint32_t qpn = FirstHandle(client, "qps", "qpn");
  const uint32_t srq = FirstHandle(client, "srqs", "handle");
  const uint32_t ah = FirstHandle(client, "ahs");
  for (uint32_t h : {pd, mr, cq, qpn, srq, ah}) ASSERT_NE(h, 0u) << json;

  RawClient other(path_);
  ASSERT_TRUE(other.connected());
  wire::HelloReq hello{wire::kVersion, wire::kVersion, 0, 0, "other"};
  ASSERT_EQ(
      RawCall(other, *server_, wire::MsgType::kHello, 1, &hello, sizeof(hello)),
      0);
  uint32_t seq = 2;
  auto handle_call = [&](wire::MsgType t, uint32_t h) {
    const wire::HandleReq r{h, 0};
    return RawCall(other, *server_, t, seq++, &r, sizeof(r));
  };
  EXPECT_EQ(handle_call(wire::MsgType::kDeallocPd, pd), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kDeregMr, mr), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kDestroyCq, cq), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kDestroyQp, qpn), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kQueryQp, qpn), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kDestroySrq, srq), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kQuerySrq, srq), ENOENT);
  EXPECT_EQ(handle_call(wire::MsgType::kDestroyAh, ah), ENOENT);
  wire::ModifySrqReq ms{srq, 2, {0, 0, 1}};
  EXPECT_EQ(RawCall(other, *server_, wire::MsgType::kModifySrq, seq++, &ms,
                    sizeof(ms)),
            ENOENT);
  wire::CreateSrqReq cs{pd, {8, 1, 0}};
  EXPECT_EQ(RawCall(other, *server_, wire::MsgType::kCreateSrq, seq++, &cs,
                    sizeof(cs)),
            ENOENT);
  wire::CreateQpReq cq_req{};
  cq_req.pd = pd;
  cq_req.qp_type = 2;
  cq_req.send_cq = cq_req.recv_cq = cq;
  cq_req.cap = {4, 4, 1, 1, 0};
  EXPECT_EQ(RawCall(other, *server_, wire::MsgType::kCreateQp, seq++, &cq_req,
                    sizeof(cq_req)),
            ENOENT);
  // Nothing of the first client was touched.
  const SessionServer::Holdings h = server_->HoldingsOf(1);
  EXPECT_EQ(h.pds + h.mrs + h.cqs + h.qps + h.srqs + h.ahs, 6u);

  ASSERT_EQ(write(to_child, "g", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(net_.a().mr_table().size(), 0u);
  close(from_child);
  close(to_child);
}

// An SRQ feeding an RC QP through its ring, the SRQ limit, QP access
// error and last-WQE events through the async ring, and a solicited-only
// completion channel that wakes for the solicited SEND only.
TEST_F(VerbsSessionTest, SrqAsyncEventsAndSolicitedOnlyNotification) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  const std::string path = path_;
  constexpr uint32_t kLen = 1000;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        ClientObjs o;
        o.ctx = rocemu_open_device(path.c_str());
        CHILD_CHECK(o.ctx != nullptr, kOpen);
        o.pd = rocemu_alloc_pd(o.ctx);
        o.buf = rocemu_alloc_buf(o.ctx, 1 << 16);
        CHILD_CHECK(o.pd != nullptr && o.buf != nullptr, kPd);
        o.mr = rocemu_reg_mr(
            o.pd, o.buf->addr, 1 << 16,
            ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE);
        o.ch = rocemu_create_comp_channel(o.ctx);
        CHILD_CHECK(o.mr != nullptr && o.ch != nullptr, kMr);
        o.cq = rocemu_create_cq(o.ctx, 32, &kCqContext, o.ch, 0);
        CHILD_CHECK(o.cq != nullptr, kCq);
        int sid = 0;
        rocemu_srq_init_attr si{&sid, {8, 2, 0}};
        rocemu_srq* srq = rocemu_create_srq(o.pd, &si);
        CHILD_CHECK(srq != nullptr, 20);
        rocemu_srq_attr sa{};
        CHILD_CHECK(rocemu_query_srq(srq, &sa) == 0 && sa.max_wr == 8 &&
                        sa.max_sge == 2 && sa.srq_limit == 0,
                    21);
        sa.max_wr = 16;
        CHILD_CHECK(rocemu_modify_srq(srq, &sa, ROCEMU_SRQ_MAX_WR) == EINVAL,
                    22);
        rocemu_qp_init_attr init{};
        init.send_cq = o.cq;
        init.recv_cq = o.cq;
        init.srq = srq;
        init.cap = {8, 0, 1, 0, 0};
        init.qp_type = ROCEMU_QPT_RC;
        o.qp = rocemu_create_qp(o.pd, &init);
        CHILD_CHECK(o.qp != nullptr, kQp);
        CHILD_CHECK(rocemu_destroy_srq(srq) == EBUSY, 23);
        // Three receives of kLen bytes each in separate places.
        auto* base = static_cast<uint8_t*>(o.buf->addr);
        for (uint64_t i = 0; i < 3; ++i) {
          rocemu_sge sge{reinterpret_cast<uint64_t>(base + 4096 * i), kLen,
                         o.mr->lkey};
          rocemu_recv_wr wr{100 + i, nullptr, &sge, 1};
          rocemu_recv_wr* bad = nullptr;
          CHILD_CHECK(rocemu_post_srq_recv(srq, &wr, &bad) == 0, kPostRecv);
          // The QP's own receive queue is not there.
          if (i == 0) {
            CHILD_CHECK(
                rocemu_post_recv(o.qp, &wr, &bad) == EINVAL && bad == &wr, 24);
          }
        }
        sa.srq_limit = 3;
        CHILD_CHECK(rocemu_modify_srq(srq, &sa, ROCEMU_SRQ_LIMIT) == 0, 25);
        CHILD_CHECK(rocemu_query_srq(srq, &sa) == 0 && sa.srq_limit == 3, 26);
        ConnectClient(o, peer);
        // Only a solicited receive (or an error) may wake this arm.
        CHILD_CHECK(rocemu_req_notify_cq(o.cq, 1) == 0, 27);
        uint32_t qpn = rocemu_qp_num(o.qp);
        WriteAll(up, &qpn, sizeof(qpn));
        char step;
        ReadAll(down, &step, 1);  // an unsolicited SEND has completed
        rocemu_cq* ev_cq = nullptr;
        void* ev_ctx = nullptr;
        CHILD_CHECK(rocemu_get_cq_event(o.ch, &ev_cq, &ev_ctx, 0) == ETIMEDOUT,
                    28);
        rocemu_wc wc{};
        CHILD_CHECK(rocemu_poll_cq(o.cq, 1, &wc) == 1 && wc.wr_id == 100 &&
                        wc.status == ROCEMU_WC_SUCCESS &&
                        wc.opcode == ROCEMU_WC_RECV && wc.byte_len == kLen,
                    29);
        for (uint32_t i = 0; i < kLen; ++i) {
          CHILD_CHECK(base[i] == Pattern(i, 1), kRecvBytes);
        }
        // Taking that receive left 2 < 3 queued: the limit event.
        rocemu_async_event ae{};
        CHILD_CHECK(rocemu_get_async_event(o.ctx, &ae, 10000) == 0, 30);
        CHILD_CHECK(ae.event_type == ROCEMU_EVENT_SRQ_LIMIT_REACHED &&
                        ae.element.srq == srq,
                    31);
        rocemu_ack_async_event(&ae);
        WriteAll(up, &step, 1);
        ReadAll(down, &step, 1);  // a solicited SEND has completed
        CHILD_CHECK(rocemu_get_cq_event(o.ch, &ev_cq, &ev_ctx, 0) == 0 &&
                        ev_cq == o.cq && ev_ctx == &kCqContext,
                    32);
        rocemu_ack_cq_events(ev_cq, 1);
        CHILD_CHECK(rocemu_poll_cq(o.cq, 1, &wc) == 1 && wc.wr_id == 101 &&
                        wc.byte_len == kLen,
                    33);
        for (uint32_t i = 0; i < kLen; ++i) {
          CHILD_CHECK(base[4096 + i] == Pattern(i, 2), kRecvBytes);
        }
        WriteAll(up, &step, 1);
        ReadAll(down, &step, 1);  // B WRITEs with a bad R_Key
        // The responder's access error: QP_ACCESS_ERR, then, the QP being
        // on an SRQ and in ERR, LAST_WQE_REACHED. The async fd is pollable.
        pollfd p{rocemu_async_fd(o.ctx), POLLIN, 0};
        CHILD_CHECK(poll(&p, 1, 10000) == 1, 34);
        CHILD_CHECK(rocemu_get_async_event(o.ctx, &ae, 10000) == 0 &&
                        ae.event_type == ROCEMU_EVENT_QP_ACCESS_ERR &&
                        ae.element.qp == o.qp,
                    35);
        // The second may be published a moment after the first.
        CHILD_CHECK(poll(&p, 1, 10000) == 1, 36);
        CHILD_CHECK(rocemu_get_async_event(o.ctx, &ae, 10000) == 0 &&
                        ae.event_type == ROCEMU_EVENT_QP_LAST_WQE_REACHED &&
                        ae.element.qp == o.qp,
                    37);
        CHILD_CHECK(rocemu_get_async_event(o.ctx, &ae, 0) == ETIMEDOUT, 38);
        CHILD_CHECK(std::strcmp(rocemu_event_type_str(ae.event_type),
                                "IBV_EVENT_QP_LAST_WQE_REACHED") == 0,
                    39);
        CHILD_CHECK(rocemu_destroy_qp(o.qp) == 0, 40);
        CHILD_CHECK(rocemu_destroy_srq(srq) == 0, 41);
      },
      &from_child, &to_child);
  uint32_t qpn = 0;
  ASSERT_TRUE(PumpRead(from_child, &qpn, sizeof(qpn)))
      << "client exited with " << PumpUntilExit(pid);
  ConnectPeer(eb, qpn);
  const uint64_t events_before = server_->counters().cq_events;
  for (uint32_t i = 0; i < kLen; ++i) eb.buf[i] = Pattern(i, 1);
  ASSERT_TRUE(PeerSend(eb, 1, 0, kLen).ok());
  const time_t give_up = time(nullptr) + 30;
  while (server_->counters().cqes < 1 && time(nullptr) < give_up) Pump();
  ASSERT_EQ(server_->counters().cqes, 1u);
  EXPECT_EQ(server_->counters().cq_events, events_before);  // not woken
  ASSERT_EQ(write(to_child, "n", 1), 1);
  char step;
  ASSERT_TRUE(PumpRead(from_child, &step, 1))
      << "client exited with " << PumpUntilExit(pid);
  for (uint32_t i = 0; i < kLen; ++i) eb.buf[i] = Pattern(i, 2);
  ASSERT_TRUE(PeerSend(eb, 2, 0, kLen, /*solicited=*/true).ok());
  while (server_->counters().cqes < 2 && time(nullptr) < give_up) Pump();
  ASSERT_EQ(server_->counters().cqes, 2u);
  EXPECT_EQ(server_->counters().cq_events, events_before + 1);
  ASSERT_EQ(write(to_child, "s", 1), 1);
  ASSERT_TRUE(PumpRead(from_child, &step, 1))
      << "client exited with " << PumpUntilExit(pid);
  nic::SendWr w;
  w.wr_id = 3;
  w.opcode = nic::WrOpcode::kRdmaWrite;
  w.send_flags = nic::send_flags::kSignaled;
  w.rdma.remote_addr = 0x1000;
  w.rdma.rkey = 0xdead00;
  w.sg_list.PushBack(nic::testing::SgeOf(eb, 0, 64));
  ASSERT_TRUE(net_.b().PostSend(eb.qpn, w).ok());
  ASSERT_EQ(write(to_child, "w", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(server_->counters().srq_wqes, 3u);
  EXPECT_EQ(server_->counters().async_events, 3u);
  const std::vector<nic::WorkCompletion> wcs =
      nic::testing::Poll(net_.b(), eb.cq);
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[2].status, nic::WcStatus::kRemAccessErr);
  close(from_child);
  close(to_child);
}

TEST_F(VerbsSessionTest, RaiiLayerCoversTheNewObjects) {
  SessionServerOptions opts;
  opts.device_name = "rocemu_r0";
  StartServer(opts);
  const std::string path = path_;
  const nic::Gid peer_gid = net_.b().config().gid;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        setenv("ROCEMU_VERBS_SOCKET", path.c_str(), 1);
        int n = 0;
        absl::StatusOr<DeviceList> list = GetDeviceList(&n);
        CHILD_CHECK(list.ok() && n == 1, 20);
        absl::StatusOr<Context> ctx = OpenDevice((*list)[0]);
        CHILD_CHECK(ctx.ok(), 21);
        CHILD_CHECK(
            std::strcmp(rocemu_device_name(ctx->get()), "rocemu_r0") == 0, 22);
        absl::StatusOr<rocemu_device_attr> da = QueryDevice(ctx->get());
        absl::StatusOr<rocemu_port_attr> pa = QueryPort(ctx->get());
        CHILD_CHECK(da.ok() && da->max_srq > 0 && pa.ok() &&
                        pa->state == ROCEMU_PORT_ACTIVE &&
                        QueryPort(ctx->get(), 3).status().code() ==
                            absl::StatusCode::kInvalidArgument,
                    23);
        uint32_t id = rocemu_client_id(ctx->get());
        {
          absl::StatusOr<Pd> pd = AllocPd(ctx->get());
          CHILD_CHECK(pd.ok(), 24);
          rocemu_srq_init_attr si{nullptr, {4, 1, 0}};
          absl::StatusOr<Srq> srq = CreateSrq(pd->get(), si);
          rocemu_ah_attr aa{};
          std::memcpy(aa.dgid, peer_gid.data(), 16);
          aa.dmac[0] = 2;
          aa.port_num = 1;
          absl::StatusOr<Ah> ah = CreateAh(pd->get(), aa);
          absl::StatusOr<Cq> cq = CreateCq(ctx->get(), 8);
          CHILD_CHECK(srq.ok() && ah.ok() && cq.ok(), 25);
          rocemu_qp_init_attr init{};
          init.send_cq = init.recv_cq = cq->get();
          init.srq = srq->get();
          init.cap = {4, 0, 1, 0, 0};
          init.qp_type = ROCEMU_QPT_RC;
          absl::StatusOr<Qp> qp = CreateQp(pd->get(), init);
          CHILD_CHECK(qp.ok(), 26);
          CHILD_CHECK(GetAsyncEvent(ctx->get(), 0).status().code() ==
                          absl::StatusCode::kDeadlineExceeded,
                      27);
          WriteAll(up, &id, sizeof(id));
          char go;
          ReadAll(down, &go, 1);
        }  // qp, cq, ah, srq, pd destroyed here, in that order
        WriteAll(up, &id, sizeof(id));
        char end;
        ReadAll(down, &end, 1);
      },
      &from_child, &to_child);
  uint32_t id = 0;
  ASSERT_TRUE(PumpRead(from_child, &id, sizeof(id)))
      << "client exited with " << PumpUntilExit(pid);
  SessionServer::Holdings h = server_->HoldingsOf(id);
  EXPECT_EQ(h.pds, 1u);
  EXPECT_EQ(h.srqs, 1u);
  EXPECT_EQ(h.ahs, 1u);
  EXPECT_EQ(h.cqs, 1u);
  EXPECT_EQ(h.qps, 1u);
  ASSERT_EQ(write(to_child, "g", 1), 1);
  ASSERT_TRUE(PumpRead(from_child, &id, sizeof(id)));
  h = server_->HoldingsOf(id);
  EXPECT_EQ(h.pds + h.srqs + h.ahs + h.cqs + h.qps, 0u);
  EXPECT_EQ(server_->counters().failed_requests, 1u);  // query_port(3)
  ASSERT_EQ(write(to_child, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  close(from_child);
  close(to_child);
}

}  // namespace
}  // namespace rocemu::verbs::testing
