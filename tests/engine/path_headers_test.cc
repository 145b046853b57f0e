// The headers below the BTH of a connected QP's frames are encoded once per
// path (Rnic::ConnectedHeaders): they must follow a change of the QP's path
// (SQD->SQD with a new address vector, IBTA 11.2.4.2) and of the GID table
// entry the path names, from the next frame on.
#include <gtest/gtest.h>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

SendWr Write(const Pair& p, uint64_t id, uint32_t len) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, len)};
  wr.rdma.remote_addr = Va(p.eb, 0);
  wr.rdma.rkey = p.eb.key;
  return wr;
}

// The last frame A sent.
const protocol::NetHeaders& LastSent(BackToBack& net) {
  const std::vector<const WireFrame*> sent = net.Frames(0);
  EXPECT_FALSE(sent.empty());
  return sent.back()->parsed.net;
}

TEST(PathHeadersTest, NewAddressVectorInSqdChangesTheNextFrames) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Write(p, 1, 64)).ok());
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

  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Write(p, 2, 64)).ok());
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
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Write(p, 1, 64)).ok());
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

  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Write(p, 2, 64)).ok());
  net.Run();
  EXPECT_EQ(LastSent(net).src_ip, moved);
  EXPECT_EQ(net.Frames(1).back()->parsed.net.dst_ip, moved);
  const std::vector<WorkCompletion> wc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace rocemu::nic::testing
