// The headers below the BTH of a connected QP's frames are encoded once per
// path (Rnic::ConnectedHeaders): they must follow a change of the QP's path
// (SQD->SQD with a new address vector, IBTA 11.2.4.2) and of the GID table
// entry the path names, from the next frame on. A UD send's headers are
// kept in its address handle for the QP that last sent through it.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

// The last frame A sent.
const protocol::NetHeaders& LastSent(BackToBack& net) {
  const std::vector<const WireFrame*> sent = net.Frames(0);
  EXPECT_FALSE(sent.empty());
  return sent.back()->parsed.net;
}

TEST(PathHeadersTest, NewAddressVectorInSqdChangesTheNextFrames) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
  net.Run();
  EXPECT_EQ(LastSent(net).ttl, 64);
  EXPECT_EQ(LastSent(net).dscp, 26);
  // Both sides' frames went through the same encoded headers: B's ACK too.
  ASSERT_FALSE(net.Frames(1).empty());
  EXPECT_EQ(net.Frames(1).back()->parsed.net.ttl, 64);

  QpAttr a;
  a.qp_state = QpState::kSqd;
  ASSERT_TRUE(net.a().ModifyQp(p.ea.qpn, a, qp_attr::kState).ok());
  net.Run();
  a = *net.a().QueryQp(p.ea.qpn);
  a.ah_attr.hop_limit = 7;
  a.ah_attr.traffic_class = 10 << 2;
  a.ah_attr.flow_label = 0x12345;
  ASSERT_TRUE(net.a().ModifyQp(p.ea.qpn, a, qp_attr::kAv).ok());
  a.qp_state = QpState::kRts;
  ASSERT_TRUE(net.a().ModifyQp(p.ea.qpn, a, qp_attr::kState).ok());

  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 64)).ok());
  net.Run();
  EXPECT_EQ(LastSent(net).ttl, 7);
  EXPECT_EQ(LastSent(net).dscp, 10);
  EXPECT_EQ(LastSent(net).src_ip, net.a().config().gid);
  const std::vector<WorkCompletion> wc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
}

TEST(PathHeadersTest, ChangedSourceGidIsSentFromTheNextFrame) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 64)).ok());
  net.Run();
  EXPECT_EQ(LastSent(net).src_ip, net.a().config().gid);

  // The address behind A's GID index 0 changes (as the daemon does when the
  // port's IP does); B's QP learns the new one the same way.
  const Gid moved = GidFromIpv4(10, 0, 0, 77);
  ASSERT_TRUE(net.a().gid_table().Set(0, moved).ok());
  QpAttr b;
  b.qp_state = QpState::kSqd;
  ASSERT_TRUE(net.b().ModifyQp(p.eb.qpn, b, qp_attr::kState).ok());
  b = *net.b().QueryQp(p.eb.qpn);
  b.ah_attr.dgid = moved;
  ASSERT_TRUE(net.b().ModifyQp(p.eb.qpn, b, qp_attr::kAv).ok());
  b.qp_state = QpState::kRts;
  ASSERT_TRUE(net.b().ModifyQp(p.eb.qpn, b, qp_attr::kState).ok());

  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 64)).ok());
  net.Run();
  EXPECT_EQ(LastSent(net).src_ip, moved);
  EXPECT_EQ(net.Frames(1).back()->parsed.net.dst_ip, moved);
  const std::vector<WorkCompletion> wc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
}

// Two UD QPs send through one AH in turn: each frame carries its own QP's
// UDP source port (the AH's cached headers are the last QP's), and a GID
// change reaches the next send.
TEST(PathHeadersTest, UdSendsThroughOneAhFromTwoQps) {
  BackToBack net;
  AhHandle ah;
  Pair p = ConnectUd(net, &ah);
  ConnectOptions o;
  o.type = QpType::kUd;
  QpInitAttr init;
  init.qp_type = QpType::kUd;
  init.send_cq = init.recv_cq = p.ea.cq;
  init.cap = {o.max_send_wr, o.max_recv_wr, 4, 4, 256};
  absl::StatusOr<uint32_t> qpn2 = net.a().CreateQp(p.ea.pd, init);
  ASSERT_TRUE(qpn2.ok());
  Endpoint e2 = {.pd = p.ea.pd, .cq = p.ea.cq, .qpn = *qpn2};
  ASSERT_TRUE(ConnectQp(net.a(), e2, net.b().config(), p.eb.qpn, 0, 0, o).ok());
  const uint16_t sport1 = net.a().GetQp(p.ea.qpn)->udp_sport();
  const uint16_t sport2 = net.a().GetQp(*qpn2)->udp_sport();
  ASSERT_NE(sport1, sport2);

  const Gid moved = GidFromIpv4(10, 0, 0, 77);
  const uint32_t senders[] = {p.ea.qpn, *qpn2, *qpn2, p.ea.qpn, *qpn2};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("send " + std::to_string(i));
    if (i == 2) {  // between two sends of the same QP
      ASSERT_TRUE(net.a().gid_table().Set(0, moved).ok());
    }
    ASSERT_TRUE(
        net.b().PostRecv(p.eb.qpn, {uint64_t(i), {SgeOf(p.eb, 0, 100)}}).ok());
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kSend;
    wr.sg_list = {SgeOf(p.ea, 0, 32)};
    wr.ud = {ah, p.eb.qpn, o.qkey};
    ASSERT_TRUE(net.a().PostSend(senders[i], wr).ok());
    net.Run();
    const protocol::NetHeaders& sent = LastSent(net);
    EXPECT_EQ(net.Frames(0).back()->parsed.hdr.deth.src_qp, senders[i]);
    EXPECT_EQ(sent.udp_src_port, senders[i] == p.ea.qpn ? sport1 : sport2);
    EXPECT_EQ(sent.src_ip, i >= 2 ? moved : net.a().config().gid);
    EXPECT_EQ(sent.dst_mac, net.b().config().mac);
  }
  EXPECT_EQ(net.Frames(0).size(), 5u);
  EXPECT_EQ(Poll(net.b(), p.eb.cq).size(), 5u);
}

}  // namespace
}  // namespace rocemu::nic::testing
