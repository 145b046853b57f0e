// UD multicast: ibv_attach_mcast's group table, a SEND to QPN 0xFFFFFF
// reaching every attached QP (and only those), the group MAC and GID on the
// wire, the sender's own looped-back copy skipping the sender, and the
// checks and limits rxe and ConnectX apply.
#include "protocol/multicast.h"

#include <gtest/gtest.h>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

constexpr Gid kGroup = protocol::Ipv4Mapped(239, 1, 2, 3);

class MulticastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    o_.type = QpType::kUd;
    p_ = Connect(net_, o_);
    // A second UD QP on B and one on A, both ready to receive.
    ASSERT_TRUE(SetupEndpoint(net_.b(), o_, &b2_).ok());
    ASSERT_TRUE(ConnectQp(net_.b(), b2_, net_.a().config(), 0, 0, 0, o_).ok());
    ASSERT_TRUE(SetupEndpoint(net_.a(), o_, &a2_).ok());
    ASSERT_TRUE(ConnectQp(net_.a(), a2_, net_.b().config(), 0, 0, 0, o_).ok());
    for (auto [nic, e] : {std::pair{&net_.b(), &p_.eb},
                          {&net_.b(), &b2_},
                          {&net_.a(), &a2_},
                          {&net_.a(), &p_.ea}}) {
      for (uint64_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(
            nic->PostRecv(e->qpn, {i, {SgeOf(*e, 1024 * i, 1024)}}).ok());
      }
    }
  }

  // A SEND of `len` bytes from A's first QP to the group.
  void SendToGroup(uint32_t len, uint32_t qkey) {
    AhAttr attr;
    attr.dgid = kGroup;
    absl::StatusOr<AhHandle> ah =
        net_.a().CreateAh(p_.ea.pd, attr, protocol::MulticastMac(kGroup));
    ASSERT_TRUE(ah.ok()) << ah.status();
    Fill(p_.ea.buf, 8192, len, 7);
    SendWr wr;
    wr.wr_id = 99;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(p_.ea, 8192, len)};
    wr.ud = {*ah, protocol::kMulticastQpn, qkey};
    ASSERT_TRUE(net_.a().PostSend(p_.ea.qpn, wr).ok());
    net_.Run();
  }

  BackToBack net_;
  ConnectOptions o_;
  Pair p_;
  Endpoint b2_, a2_;
};

TEST_F(MulticastTest, SendReachesEveryAttachedQpAndOnlyThose) {
  ASSERT_TRUE(net_.b().AttachMcast(p_.eb.qpn, kGroup).ok());
  ASSERT_TRUE(net_.b().AttachMcast(b2_.qpn, kGroup).ok());
  // Attaching twice is no error and no second copy.
  ASSERT_TRUE(net_.b().AttachMcast(b2_.qpn, kGroup).ok());
  EXPECT_EQ(net_.b().multicast_groups().attach_count(), 2u);
  SendToGroup(300, o_.qkey);

  auto req = net_.Frames(0, static_cast<int>(Opcode::kUdSendOnly));
  ASSERT_EQ(req.size(), 1u);
  const WireFrame& f = *req[0];
  EXPECT_EQ(f.parsed.hdr.bth.dest_qp, protocol::kMulticastQpn);
  EXPECT_EQ(f.parsed.net.dst_ip, kGroup);
  EXPECT_EQ(f.parsed.net.dst_mac,
            (protocol::MacAddr{0x01, 0x00, 0x5E, 0x01, 0x02, 0x03}));
  for (const Endpoint* e : {&p_.eb, &b2_}) {
    auto wc = Poll(net_.b(), e->cq);
    ASSERT_EQ(wc.size(), 1u) << "QP " << e->qpn;
    EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[0].byte_len, 300u + 40u);  // GRH area + payload
    EXPECT_EQ(wc[0].src_qp, p_.ea.qpn);
    EXPECT_EQ(e->buf[40], 7);
  }
  EXPECT_EQ(net_.b().QueryCounters().multicast_rcv_packets, 1u);
  EXPECT_EQ(net_.b().QueryCounters().rx_mcast_no_group, 0u);
}

TEST_F(MulticastTest, NoMemberDetachAndDestroyAreCountedDrops) {
  SendToGroup(64, o_.qkey);  // nobody joined
  EXPECT_EQ(net_.b().QueryCounters().rx_mcast_no_group, 1u);
  ASSERT_TRUE(net_.b().AttachMcast(p_.eb.qpn, kGroup).ok());
  ASSERT_TRUE(net_.b().AttachMcast(b2_.qpn, kGroup).ok());
  ASSERT_TRUE(net_.b().DetachMcast(p_.eb.qpn, kGroup).ok());
  EXPECT_EQ(net_.b().DetachMcast(p_.eb.qpn, kGroup).code(),
            absl::StatusCode::kInvalidArgument);
  SendToGroup(64, o_.qkey);
  EXPECT_TRUE(Poll(net_.b(), p_.eb.cq).empty());
  EXPECT_EQ(Poll(net_.b(), b2_.cq).size(), 1u);
  // Destroying the last member leaves the group empty: gone.
  ASSERT_TRUE(net_.b().DestroyQp(b2_.qpn).ok());
  EXPECT_EQ(net_.b().multicast_groups().group_count(), 0u);
  SendToGroup(64, o_.qkey);
  EXPECT_EQ(net_.b().QueryCounters().rx_mcast_no_group, 2u);
}

TEST_F(MulticastTest, QkeyIsCheckedPerMember) {
  ASSERT_TRUE(net_.b().AttachMcast(p_.eb.qpn, kGroup).ok());
  SendToGroup(64, o_.qkey + 1);
  EXPECT_TRUE(Poll(net_.b(), p_.eb.cq).empty());
  EXPECT_EQ(net_.b().QueryCounters().qkey_viol_cntr, 1u);
}

TEST_F(MulticastTest, LoopedBackCopySkipsTheSender) {
  // A's sender QP and a second A QP both joined; the carrier loops the
  // frame back to A (as the daemon does for a group frame).
  ASSERT_TRUE(net_.a().AttachMcast(p_.ea.qpn, kGroup).ok());
  ASSERT_TRUE(net_.a().AttachMcast(a2_.qpn, kGroup).ok());
  SendToGroup(100, o_.qkey);
  auto req = net_.Frames(0, static_cast<int>(Opcode::kUdSendOnly));
  ASSERT_EQ(req.size(), 1u);
  net_.Inject(0, req[0]->bytes);
  auto own = Poll(net_.a(), p_.ea.cq);
  ASSERT_EQ(own.size(), 1u);  // its send completion only
  EXPECT_EQ(own[0].opcode, WcOpcode::kSend);
  auto other = Poll(net_.a(), a2_.cq);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(other[0].src_qp, p_.ea.qpn);
}

TEST_F(MulticastTest, AttachChecksAndLimits) {
  EXPECT_EQ(net_.b().AttachMcast(p_.eb.qpn, GidFromIpv4(10, 0, 0, 9)).code(),
            absl::StatusCode::kInvalidArgument);  // not a group
  EXPECT_EQ(net_.b().AttachMcast(12345, kGroup).code(),
            absl::StatusCode::kNotFound);
  ConnectOptions rc;
  Endpoint e;
  ASSERT_TRUE(SetupEndpoint(net_.b(), rc, &e).ok());
  EXPECT_EQ(net_.b().AttachMcast(e.qpn, kGroup).code(),
            absl::StatusCode::kInvalidArgument);  // RC QPs do not join
  const std::optional<Gid> v6 = ParseGid("ff0e::1:2");
  ASSERT_TRUE(v6.has_value());
  EXPECT_TRUE(net_.b().AttachMcast(p_.eb.qpn, *v6).ok());

  MulticastGroups small(2, 1, 2);
  EXPECT_TRUE(small.Attach(kGroup, 1).ok());
  EXPECT_EQ(small.Attach(kGroup, 2).code(),
            absl::StatusCode::kResourceExhausted);  // max_mcast_qp_attach
  EXPECT_TRUE(small.Attach(*v6, 2).ok());
  EXPECT_EQ(small.Attach(protocol::Ipv4Mapped(239, 9, 9, 9), 3).code(),
            absl::StatusCode::kResourceExhausted);  // max_mcast_grp
  small.DetachAll(1);
  EXPECT_EQ(small.group_count(), 1u);
  EXPECT_EQ(small.attach_count(), 1u);
}

}  // namespace
}  // namespace rocemu::nic::testing
