// UD over IPv6: the frame carries an IPv6 header and the 40-byte GRH area of
// the receive buffer holds exactly that header (rxe and ConnectX copy it).
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

TEST(UdIpv6Test, GrhAreaHoldsTheIpv6Header) {
  BackToBack net;
  ConnectOptions o;
  o.type = QpType::kUd;
  Pair p = Connect(net, o);
  const std::optional<Gid> ga = ParseGid("fd00:1::1");
  const std::optional<Gid> gb = ParseGid("fd00:1::2");
  ASSERT_TRUE(ga.has_value() && gb.has_value());
  ASSERT_TRUE(net.a().gid_table().Set(1, *ga).ok());
  ASSERT_TRUE(net.b().gid_table().Set(1, *gb).ok());
  AhAttr attr;
  attr.dgid = *gb;
  attr.sgid_index = 1;
  attr.hop_limit = 17;
  attr.flow_label = 0x12345;
  absl::StatusOr<AhHandle> ah =
      net.a().CreateAh(p.ea.pd, attr, net.b().config().mac);
  ASSERT_TRUE(ah.ok()) << ah.status();
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {5, {SgeOf(p.eb, 0, 1024)}}).ok());
  Fill(p.ea.buf, 0, 200, 9);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 200)};
  wr.ud = {*ah, p.eb.qpn, o.qkey};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();

  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 1u);
  const WireFrame& f = *req[0];
  EXPECT_EQ(f.parsed.hdr.bth.opcode, Opcode::kUdSendOnly);
  ASSERT_TRUE(f.parsed.net.ipv6);
  EXPECT_EQ(f.parsed.net.src_ip, *ga);
  EXPECT_EQ(f.parsed.net.dst_ip, *gb);

  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(rc[0].wc_flags & wc_flags::kGrh);
  EXPECT_EQ(rc[0].sl, 0x9);  // packet type: RoCE v2 (UDP) over IPv6
  EXPECT_EQ(rc[0].byte_len, 240u);
  EXPECT_EQ(rc[0].src_qp, p.ea.qpn);
  // The GRH area is the IPv6 header byte for byte: version 6, the flow
  // label, payload length, next header UDP, hop limit, both addresses.
  const uint8_t* grh = p.eb.buf.data();
  EXPECT_EQ(0, std::memcmp(grh, f.bytes.data() + f.parsed.l3_offset, 40));
  EXPECT_EQ(grh[0] >> 4, 6);
  EXPECT_EQ(((grh[1] & 0x0F) << 16) | (grh[2] << 8) | grh[3], 0x12345);
  EXPECT_EQ((grh[4] << 8) | grh[5],
            static_cast<int>(f.bytes.size() - f.parsed.l3_offset - 40));
  EXPECT_EQ(grh[6], 17);  // UDP
  EXPECT_EQ(grh[7], 17);  // hop limit from the AH
  EXPECT_EQ(0, std::memcmp(grh + 8, ga->data(), 16));
  EXPECT_EQ(0, std::memcmp(grh + 24, gb->data(), 16));
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data() + 40, p.ea.buf.data(), 200));
}

}  // namespace
}  // namespace rocemu::nic::testing
