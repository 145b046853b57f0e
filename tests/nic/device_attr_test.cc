#include "nic/device_attr.h"

#include <gtest/gtest.h>

#include <string>

namespace rocemu::nic {
namespace {

TEST(Mtu, BytesRoundTrip) {
  EXPECT_EQ(MtuToBytes(Mtu::k256), 256u);
  EXPECT_EQ(MtuToBytes(Mtu::k4096), 4096u);
  for (uint32_t b : {256u, 512u, 1024u, 2048u, 4096u}) {
    std::optional<Mtu> m = MtuFromBytes(b);
    ASSERT_TRUE(m.has_value()) << b;
    EXPECT_EQ(MtuToBytes(*m), b);
  }
  EXPECT_FALSE(MtuFromBytes(1500).has_value());
  EXPECT_FALSE(MtuFromBytes(128).has_value());
  EXPECT_FALSE(MtuFromBytes(8192).has_value());
  EXPECT_EQ(std::string(MtuName(Mtu::k2048)), "IBV_MTU_2048");
}

TEST(Mtu, ForLinkMtu) {
  EXPECT_EQ(MtuForLinkMtu(1500, false), Mtu::k1024);
  EXPECT_EQ(MtuForLinkMtu(1500, true), Mtu::k1024);
  EXPECT_EQ(MtuForLinkMtu(9000, false), Mtu::k4096);
  // 4096 + IPv4/UDP/BTH/AtomicETH/ICRC = 4168 fits 4200 (the usual
  // "RoCE 4K MTU" Ethernet setting) but not 4167.
  EXPECT_EQ(MtuForLinkMtu(4200, false), Mtu::k4096);
  EXPECT_EQ(MtuForLinkMtu(4167, false), Mtu::k2048);
  EXPECT_EQ(MtuForLinkMtu(4168, false), Mtu::k4096);
  EXPECT_EQ(MtuForLinkMtu(4168, true), Mtu::k2048);
  EXPECT_FALSE(MtuForLinkMtu(200, false).has_value());
}

TEST(DeviceAttr, DefaultsAtLeastRxe) {
  DeviceAttr d;
  EXPECT_TRUE(d.Validate().ok());
  // rxe_param.h: RXE_MAX_QP 0x10000, RXE_MAX_QP_WR 0x4000, RXE_MAX_SGE 32,
  // RXE_MAX_INLINE_DATA 400, RXE_MAX_SRQ 960, RXE_MAX_MR 2K,
  // RXE_MAX_QP_RD_ATOM 128, RXE_PORT_MAX_MSG_SZ 8 MiB.
  EXPECT_GE(d.max_qp, 0x10000u);
  EXPECT_GE(d.max_qp_wr, 0x4000u);
  EXPECT_GE(d.max_sge, 32u);
  EXPECT_GE(d.max_inline_data, 400u);
  EXPECT_GE(d.max_srq, 960u);
  EXPECT_GE(d.max_mr, 2048u);
  EXPECT_GE(d.max_qp_rd_atom, 128u);
  EXPECT_GE(d.max_ah, 100u);
  EXPECT_EQ(d.max_msg_sz, 1u << 31);
  EXPECT_EQ(d.atomic_cap, AtomicCap::kHca);
  PortAttr p;
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_GE(p.gid_tbl_len, 1024);
  EXPECT_GE(p.pkey_tbl_len, 64);
  EXPECT_EQ(p.max_mtu, Mtu::k4096);
  EXPECT_EQ(p.max_msg_sz, 1u << 31);
  EXPECT_EQ(std::string(PortStateName(p.state)), "IBV_PORT_ACTIVE");
}

TEST(DeviceAttr, ValidateRejectsWhatWeCannotHonour) {
  DeviceAttr d;
  d.max_sge = kMaxSge + 1;
  EXPECT_FALSE(d.Validate().ok());
  d = DeviceAttr{};
  d.max_inline_data = kMaxInlineData + 1;
  EXPECT_FALSE(d.Validate().ok());
  d = DeviceAttr{};
  d.max_msg_sz = (1u << 31) + 1;
  EXPECT_FALSE(d.Validate().ok());
  d = DeviceAttr{};
  d.max_mr = 1u << 24;  // key index is 24 bits
  EXPECT_FALSE(d.Validate().ok());
  d = DeviceAttr{};
  d.max_cqe = 0;
  EXPECT_FALSE(d.Validate().ok());

  PortAttr p;
  p.max_mtu = Mtu::k1024;
  p.active_mtu = Mtu::k2048;
  EXPECT_FALSE(p.Validate().ok());
  p = PortAttr{};
  p.active_mtu = static_cast<Mtu>(7);
  p.max_mtu = static_cast<Mtu>(7);
  EXPECT_FALSE(p.Validate().ok());
}

}  // namespace
}  // namespace rocemu::nic
