// Which RNIC shard a received frame goes to (emulator/port/shard_dispatch.h),
// the port's CM listener registry (emulator/net/cm_services.h), and the
// residue classes the shards' RNICs draw QPNs and CM comm IDs from.
#include "emulator/port/shard_dispatch.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "emulator/net/cm_services.h"
#include "nic/cm/cm_agent.h"
#include "nic/rnic.h"
#include "protocol/cm_messages.h"
#include "protocol/frame.h"
#include "protocol/mad.h"
#include "protocol/multicast.h"
#include "protocol/opcode.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

using protocol::FrameSpec;

FrameSpec Spec(uint8_t opcode, uint32_t dest_qp, bool vlan = false,
               bool ipv6 = false) {
  FrameSpec s;
  s.net.dst_mac = {0x02, 0, 0, 0, 0, 1};
  s.net.src_mac = {0x02, 0, 0, 0, 0, 2};
  s.net.has_vlan = vlan;
  s.net.vlan.vid = 7;
  s.net.ipv6 = ipv6;
  s.net.src_ip = protocol::Ipv4Mapped(10, 0, 0, 2);
  s.net.dst_ip = protocol::Ipv4Mapped(10, 0, 0, 1);
  if (ipv6) {
    s.net.src_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    s.net.dst_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  }
  s.hdr.bth.opcode = opcode;
  s.hdr.bth.dest_qp = dest_qp;
  return s;
}

std::vector<uint8_t> Build(const FrameSpec& spec,
                           std::span<const uint8_t> payload = {}) {
  std::vector<uint8_t> f(9000);
  const size_t n = protocol::BuildRoceFrame(spec, payload, f);
  EXPECT_GT(n, 0u);
  f.resize(n);
  return f;
}

template <typename T>
std::vector<uint8_t> CmFrame(const T& msg) {
  std::array<uint8_t, protocol::kMadSize> mad{};
  protocol::EncodeCmMad(0x1234, msg, mad);
  FrameSpec s = Spec(protocol::kUdSendOnly, protocol::kGsiQpn);
  s.hdr.deth.qkey = protocol::kGsiQkey;
  s.hdr.deth.src_qp = protocol::kGsiQpn;
  return Build(s, mad);
}

uint32_t Of(const std::vector<uint8_t>& f, uint32_t shards,
            const nic::CmServiceRegistry* reg = nullptr) {
  return ShardOf(f.data(), f.size(), shards, reg);
}

TEST(ShardDispatch, TransportFramesGoByDestQp) {
  for (bool vlan : {false, true}) {
    for (bool v6 : {false, true}) {
      SCOPED_TRACE(testing::Message() << "vlan " << vlan << " ipv6 " << v6);
      for (uint32_t qpn : {0x12u, 0x13u, 0x14u, 0xABCDEu}) {
        EXPECT_EQ(Of(Build(Spec(protocol::kRcSendOnly, qpn, vlan, v6)), 3),
                  qpn % 3);
      }
    }
  }
  // One shard: everything is its.
  EXPECT_EQ(Of(Build(Spec(protocol::kRcSendOnly, 0x13)), 1), 0u);
  // A CNP names the QP it slows down.
  std::vector<uint8_t> cnp(128);
  cnp.resize(
      protocol::BuildCnp(Spec(0, 0).net, 0x17, protocol::kDefaultPKey, cnp));
  ASSERT_GT(cnp.size(), 0u);
  EXPECT_EQ(Of(cnp, 4), 0x17u % 4);
}

TEST(ShardDispatch, EveryShardSeesMulticastAndPfc) {
  EXPECT_EQ(Of(Build(Spec(protocol::kUdSendOnly, protocol::kMulticastQpn)), 2),
            kAllShards);
  std::array<uint8_t, 64> pfc{};
  protocol::PfcInfo info;
  info.enable_vector = 0x08;
  info.quanta[3] = 100;
  const size_t n = protocol::BuildPfcFrame({2, 0, 0, 0, 0, 9}, info, pfc);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(ShardOf(pfc.data(), n, 2, nullptr), kAllShards);
  EXPECT_EQ(ShardOf(pfc.data(), n, 1, nullptr), 0u);
}

TEST(ShardDispatch, MalformedAndForeignFramesGoToShardZero) {
  std::vector<uint8_t> f = Build(Spec(protocol::kRcSendOnly, 0x13));
  for (size_t len : {size_t{0}, size_t{13}, size_t{30}, size_t{45}}) {
    EXPECT_EQ(ShardOf(f.data(), len, 3, nullptr), 0u) << len;
  }
  // UDP to another port is not RoCE.
  std::vector<uint8_t> other = f;
  other[14 + 20 + 3] = 0x00;  // UDP destination port 4791 -> 4608
  EXPECT_EQ(Of(other, 3), 0u);
  // A QP1 frame too short for a MAD header.
  std::vector<uint8_t> gsi =
      Build(Spec(protocol::kUdSendOnly, protocol::kGsiQpn));
  EXPECT_EQ(Of(gsi, 3), 0u);
}

TEST(ShardDispatch, CmMessagesGoByCommIdOrListener) {
  PortCmServices reg;
  constexpr uint64_t kService = 0x0000000001064E20ull;  // RDMA_PS_TCP 20000
  protocol::CmReq req;
  req.local_comm_id = 0x11111111;
  req.service_id = kService;
  // Nobody listens: shard 0 answers (REJ 8, as any RNIC).
  EXPECT_EQ(Of(CmFrame(req), 3, &reg), 0u);
  ASSERT_TRUE(reg.Claim(kService, ~uint64_t{0}, 2).ok());
  EXPECT_EQ(Of(CmFrame(req), 3, &reg), 2u);
  protocol::CmSidrReq sreq;
  sreq.request_id = 5;
  sreq.service_id = kService;
  EXPECT_EQ(Of(CmFrame(sreq), 3, &reg), 2u);

  // Answers name our comm ID: its residue is the shard.
  protocol::CmRep rep;
  rep.local_comm_id = 0x22222222;
  rep.remote_comm_id = 3 * 1000 + 1;
  EXPECT_EQ(Of(CmFrame(rep), 3, &reg), 1u);
  protocol::CmRtu rtu;
  rtu.remote_comm_id = 3 * 77 + 2;
  EXPECT_EQ(Of(CmFrame(rtu), 3, &reg), 2u);
  protocol::CmDreq dreq;
  dreq.remote_comm_id = 3 * 5;
  EXPECT_EQ(Of(CmFrame(dreq), 3, &reg), 0u);
  protocol::CmRej rej;
  rej.remote_comm_id = 3 * 9 + 1;
  EXPECT_EQ(Of(CmFrame(rej), 3, &reg), 1u);
  protocol::CmSidrRep srep;
  srep.request_id = 3 * 4 + 2;
  EXPECT_EQ(Of(CmFrame(srep), 3, &reg), 2u);
}

TEST(PortCmServices, OneShardPerService) {
  PortCmServices reg;
  EXPECT_TRUE(reg.Claim(0x100, ~uint64_t{0}, 1).ok());
  // The same shard may listen again (its own agent decides).
  EXPECT_TRUE(reg.Claim(0x100, ~uint64_t{0}, 1).ok());
  EXPECT_EQ(reg.Claim(0x100, ~uint64_t{0}, 2).code(),
            absl::StatusCode::kAlreadyExists);
  // A wildcard (masked) listener overlapping another shard's is refused;
  // one that cannot match it is not.
  EXPECT_EQ(reg.Claim(0x100, 0xF00, 0).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(reg.Claim(0x200, 0xF00, 0).ok());
  EXPECT_EQ(reg.Lookup(0x100), 1u);
  EXPECT_EQ(reg.Lookup(0x2AB), 0u);
  EXPECT_FALSE(reg.Lookup(0x300).has_value());
  reg.Release(0x100, ~uint64_t{0}, 1);
  EXPECT_EQ(reg.Lookup(0x100), 1u);  // claimed twice, released once
  reg.Release(0x100, ~uint64_t{0}, 1);
  EXPECT_FALSE(reg.Lookup(0x100).has_value());
  EXPECT_TRUE(reg.Claim(0x100, ~uint64_t{0}, 2).ok());
}

nic::QpInitAttr RcInit(nic::CqHandle cq) {
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kRc;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  return init;
}

TEST(RnicShards, QpnsAndCommIdsStayInTheShardsClass) {
  PortCmServices reg;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    nic::RnicConfig rc;
    rc.mac = {0x02, 0, 0, 0, 0, 1};
    rc.gid = protocol::Ipv4Mapped(10, 0, 0, 1);
    rc.shard = shard;
    rc.shards = 3;
    nic::Rnic rnic(rc);
    rnic.cm().set_service_registry(&reg);
    absl::StatusOr<nic::PdHandle> pd = rnic.AllocPd();
    ASSERT_TRUE(pd.ok());
    absl::StatusOr<nic::CqHandle> cq = rnic.CreateCq(16);
    ASSERT_TRUE(cq.ok());
    std::set<uint32_t> qpns;
    for (int i = 0; i < 20; ++i) {
      absl::StatusOr<uint32_t> qpn = rnic.CreateQp(*pd, RcInit(*cq));
      ASSERT_TRUE(qpn.ok()) << qpn.status();
      EXPECT_EQ(*qpn % 3, shard);
      EXPECT_GE(*qpn, 2u);
      qpns.insert(*qpn);
    }
    EXPECT_EQ(qpns.size(), 20u);
    // The comm IDs of its connections carry the shard: the peer's
    // answers name them.
    for (uint32_t qpn : qpns) {
      nic::CmConnectParams cp;
      cp.service_id = 0x900;
      cp.qpn = qpn;
      cp.manage_qp = false;
      cp.path.dgid = protocol::Ipv4Mapped(10, 0, 0, 2);
      absl::StatusOr<nic::CmId> c = rnic.cm().Connect(cp, 0);
      ASSERT_TRUE(c.ok()) << c.status();
      absl::StatusOr<nic::CmIdInfo> info = rnic.cm().Query(*c);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->local_comm_id % 3, shard);
      EXPECT_NE(info->local_comm_id, 0u);
    }
    // Each shard listens on its own service and the registry knows it.
    nic::CmListenParams lp;
    lp.service_id = 0x500 + shard;
    absl::StatusOr<nic::CmId> id = rnic.cm().Listen(lp);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(reg.Lookup(0x500 + shard), shard);
    // Another shard's service is refused here.
    if (shard > 0) {
      nic::CmListenParams other;
      other.service_id = 0x500;
      EXPECT_EQ(rnic.cm().Listen(other).status().code(),
                absl::StatusCode::kAlreadyExists);
    }
    // Destroying the listener frees the service for others.
    ASSERT_TRUE(rnic.cm().Destroy(*id, 0).ok());
    EXPECT_FALSE(reg.Lookup(0x500 + shard).has_value());
    ASSERT_TRUE(reg.Claim(0x500 + shard, ~uint64_t{0}, 9).ok());
    reg.Release(0x500 + shard, ~uint64_t{0}, 9);
    if (shard == 0) {
      // Keep shard 0's 0x500 claimed for the next shards' refusal check.
      ASSERT_TRUE(reg.Claim(0x500, ~uint64_t{0}, 0).ok());
    }
  }
}

}  // namespace
}  // namespace rocemu::emulator
