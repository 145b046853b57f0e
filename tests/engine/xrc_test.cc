// XRC (IBTA vol. 1 annex A14) back to back: A holds XRC INI QPs, B an XRC
// domain with XRC SRQs and TGT QPs. Each request carries an XRCETH naming
// the SRQ it is for; the TGT QP answers as an RC responder with the SRQ's
// PD, receive WQEs and CQ; an SRQ of no or another domain is NAKed.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Aeth;
using protocol::AethType;
using protocol::Opcode;

constexpr uint8_t kXrc = Opcode::kXrcSendFirst;  // XRC = RC + 0xA0

// B's shared side: a domain, and one SRQ with its PD, CQ and buffer.
struct XrcSrq {
  PdHandle pd = 0;
  CqHandle cq = 0;
  SrqHandle srq = 0;
  uint32_t srqn = 0;
  std::vector<uint8_t> buf;
  uint32_t key = 0;
};

XrcSrq MakeSrq(Rnic& nic, XrcdHandle xrcd, uint32_t max_wr = 64) {
  XrcSrq s;
  s.pd = *nic.AllocPd();
  s.cq = *nic.CreateCq(256);
  s.buf.assign(1 << 16, 0);
  s.key = *nic.RegMr(s.pd, s.buf.data(), s.buf.size(),
                     access::kLocalWrite | access::kRemoteWrite |
                         access::kRemoteRead | access::kRemoteAtomic);
  absl::StatusOr<SrqHandle> srq =
      nic.CreateXrcSrq(s.pd, xrcd, s.cq, {max_wr, 2, 0});
  EXPECT_TRUE(srq.ok()) << srq.status();
  s.srq = srq.ok() ? *srq : 0;
  absl::StatusOr<uint32_t> n = nic.GetSrqNum(s.srq);
  EXPECT_TRUE(n.ok()) << n.status();
  s.srqn = n.ok() ? *n : 0;
  EXPECT_LE(s.srqn, protocol::kQpnMask);
  return s;
}

uint32_t MakeTgt(Rnic& nic, XrcdHandle xrcd) {
  QpInitAttr init;
  init.qp_type = QpType::kXrcTgt;
  init.xrcd = xrcd;
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(kInvalidHandle, init);
  EXPECT_TRUE(qpn.ok()) << qpn.status();
  return qpn.ok() ? *qpn : 0;
}

Endpoint MakeIni(Rnic& nic) {
  Endpoint e;
  e.pd = *nic.AllocPd();
  e.cq = *nic.CreateCq(256);
  QpInitAttr init;
  init.qp_type = QpType::kXrcIni;
  init.send_cq = e.cq;
  init.cap = {64, 0, 2, 0, 64};
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(e.pd, init);
  EXPECT_TRUE(qpn.ok()) << qpn.status();
  e.qpn = qpn.ok() ? *qpn : 0;
  e.buf.assign(1 << 16, 0);
  e.key = *nic.RegMr(e.pd, e.buf.data(), e.buf.size(),
                     access::kLocalWrite | access::kRemoteWrite);
  return e;
}

// RESET -> INIT -> RTR (-> RTS for the INI QP) with every RC attribute.
void Bring(Rnic& nic, uint32_t qpn, const RnicConfig& peer, uint32_t peer_qpn,
           uint32_t sq_psn, uint32_t rq_psn, bool rts, uint16_t pkey_index = 0,
           uint8_t retry_cnt = 7) {
  using namespace qp_attr;  // NOLINT
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.pkey_index = pkey_index;
  a.port_num = 1;
  a.qp_access_flags =
      access::kRemoteWrite | access::kRemoteRead | access::kRemoteAtomic;
  ASSERT_TRUE(
      nic.ModifyQp(qpn, a, kState | kPkeyIndex | kPort | kAccessFlags).ok());
  a.qp_state = QpState::kRtr;
  a.path_mtu = PathMtu::kMtu1024;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.dgid = peer.gid;
  a.ah_attr.dmac = peer.mac;
  absl::Status s = nic.ModifyQp(qpn, a,
                                kState | kAv | kPathMtu | kDestQpn | kRqPsn |
                                    kMaxDestRdAtomic | kMinRnrTimer);
  ASSERT_TRUE(s.ok()) << s;
  if (!rts) return;
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  a.timeout = 14;
  a.retry_cnt = retry_cnt;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  s = nic.ModifyQp(
      qpn, a,
      kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic);
  ASSERT_TRUE(s.ok()) << s;
}

// An INI QP on A connected to a new TGT QP on B; returns the TGT's number.
uint32_t ConnectXrc(BackToBack& net, const Endpoint& ini, XrcdHandle xrcd,
                    uint16_t pkey_index = 0, uint8_t retry_cnt = 7) {
  const uint32_t tgt = MakeTgt(net.b(), xrcd);
  Bring(net.a(), ini.qpn, net.b().config(), tgt, 100, 900, true, pkey_index,
        retry_cnt);
  Bring(net.b(), tgt, net.a().config(), ini.qpn, 900, 100, false);
  return tgt;
}

void PostSrq(Rnic& nic, const XrcSrq& s, uint64_t id) {
  ASSERT_TRUE(
      nic.PostSrqRecv(s.srq,
                      {id,
                       {Sge{reinterpret_cast<uint64_t>(s.buf.data() + id * 256),
                            256, s.key}}})
          .ok());
}

SendWr XrcWr(const Endpoint& ini, uint64_t id, WrOpcode op, uint32_t srqn,
             uint32_t len) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.send_flags = send_flags::kSignaled;
  wr.remote_srqn = srqn;
  wr.sg_list = {SgeOf(ini, id * 256, len)};
  return wr;
}

TEST(XrcTest, SendWriteReadAtomicsThroughTheNamedSrq) {
  BackToBack net;
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  Endpoint ini = MakeIni(net.a());
  const uint32_t tgt = ConnectXrc(net, ini, xrcd);
  PostSrq(net.b(), srq, 1);

  Fill(ini.buf, 1 * 256, 100, 0x10);  // SEND
  Fill(ini.buf, 2 * 256, 64, 0x20);   // WRITE
  Fill(srq.buf, 8192, 48, 0x30);      // READ source
  uint64_t counter = 40;
  std::memcpy(srq.buf.data() + 4096, &counter, 8);
  const uint64_t target = reinterpret_cast<uint64_t>(srq.buf.data());

  ASSERT_TRUE(
      net.a()
          .PostSend(ini.qpn, XrcWr(ini, 1, WrOpcode::kSend, srq.srqn, 100))
          .ok());
  SendWr w = XrcWr(ini, 2, WrOpcode::kRdmaWrite, srq.srqn, 64);
  w.rdma = {target + 2048, srq.key};
  {
    auto st = net.a().PostSend(ini.qpn, w);
    ASSERT_TRUE(st.ok()) << st;
  }
  SendWr r = XrcWr(ini, 3, WrOpcode::kRdmaRead, srq.srqn, 48);
  r.rdma = {target + 8192, srq.key};
  ASSERT_TRUE(net.a().PostSend(ini.qpn, r).ok());
  SendWr fa = XrcWr(ini, 4, WrOpcode::kAtomicFetchAndAdd, srq.srqn, 8);
  fa.atomic = {.remote_addr = target + 4096, .compare_add = 2, .rkey = srq.key};
  ASSERT_TRUE(net.a().PostSend(ini.qpn, fa).ok());
  SendWr cs = XrcWr(ini, 5, WrOpcode::kAtomicCmpAndSwp, srq.srqn, 8);
  cs.atomic = {.remote_addr = target + 4096,
               .compare_add = 42,
               .swap = 7,
               .rkey = srq.key};
  ASSERT_TRUE(net.a().PostSend(ini.qpn, cs).ok());
  net.Run();

  // Every request carried the XRC opcode and the SRQ number.
  for (uint8_t op :
       {Opcode::kRcSendOnly, Opcode::kRcRdmaWriteOnly,
        Opcode::kRcRdmaReadRequest, Opcode::kRcFetchAdd, Opcode::kRcCmpSwap}) {
    auto f = net.Frames(0, kXrc + op);
    ASSERT_EQ(f.size(), 1u) << int(op);
    EXPECT_EQ(f[0]->parsed.hdr.xrceth.srqn, srq.srqn);
    EXPECT_EQ(f[0]->parsed.hdr.bth.dest_qp, tgt);
  }
  EXPECT_EQ(net.Frames(1, kXrc + Opcode::kRcRdmaReadResponseOnly).size(), 1u);
  EXPECT_EQ(net.Frames(1, kXrc + Opcode::kRcAtomicAcknowledge).size(), 2u);
  EXPECT_FALSE(net.Frames(1, kXrc + Opcode::kRcAcknowledge).empty());
  EXPECT_TRUE(net.Frames(0, Opcode::kRcSendOnly).empty());

  const auto sends = Poll(net.a(), ini.cq);
  ASSERT_EQ(sends.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sends[i].status, WcStatus::kSuccess) << i;
    EXPECT_EQ(sends[i].wr_id, i + 1);
    EXPECT_EQ(sends[i].qp_num, ini.qpn);
  }
  // The SEND went to the SRQ's buffer and its completion to the SRQ's CQ,
  // naming the TGT QP and, as the source, the INI QP.
  const auto recvs = Poll(net.b(), srq.cq);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(recvs[0].wr_id, 1u);
  EXPECT_EQ(recvs[0].byte_len, 100u);
  EXPECT_EQ(recvs[0].qp_num, tgt);
  EXPECT_EQ(recvs[0].src_qp, ini.qpn);
  EXPECT_EQ(std::memcmp(srq.buf.data() + 256, ini.buf.data() + 256, 100), 0);
  EXPECT_EQ(std::memcmp(srq.buf.data() + 2048, ini.buf.data() + 512, 64), 0);
  EXPECT_EQ(std::memcmp(ini.buf.data() + 768, srq.buf.data() + 8192, 48), 0);
  uint64_t orig_fa, orig_cs, now;
  std::memcpy(&orig_fa, ini.buf.data() + 4 * 256, 8);
  std::memcpy(&orig_cs, ini.buf.data() + 5 * 256, 8);
  std::memcpy(&now, srq.buf.data() + 4096, 8);
  EXPECT_EQ(orig_fa, 40u);
  EXPECT_EQ(orig_cs, 42u);
  EXPECT_EQ(now, 7u);
  EXPECT_EQ(net.b().GetQp(tgt)->state(), QpState::kRtr);
}

TEST(XrcTest, SeveralTgtQpsShareOneSrq) {
  BackToBack net;
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  Endpoint ini1 = MakeIni(net.a());
  Endpoint ini2 = MakeIni(net.a());
  const uint32_t tgt1 = ConnectXrc(net, ini1, xrcd);
  const uint32_t tgt2 = ConnectXrc(net, ini2, xrcd);
  for (uint64_t id = 1; id <= 4; ++id) PostSrq(net.b(), srq, id);
  for (uint64_t id = 1; id <= 2; ++id) {
    ASSERT_TRUE(
        net.a()
            .PostSend(ini1.qpn, XrcWr(ini1, id, WrOpcode::kSend, srq.srqn, 8))
            .ok());
    ASSERT_TRUE(
        net.a()
            .PostSend(ini2.qpn, XrcWr(ini2, id, WrOpcode::kSend, srq.srqn, 8))
            .ok());
  }
  net.Run();
  EXPECT_EQ(Poll(net.a(), ini1.cq).size(), 2u);
  EXPECT_EQ(Poll(net.a(), ini2.cq).size(), 2u);
  const auto recvs = Poll(net.b(), srq.cq);
  ASSERT_EQ(recvs.size(), 4u);
  int from1 = 0, from2 = 0;
  for (const WorkCompletion& wc : recvs) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess);
    if (wc.qp_num == tgt1 && wc.src_qp == ini1.qpn) ++from1;
    if (wc.qp_num == tgt2 && wc.src_qp == ini2.qpn) ++from2;
  }
  EXPECT_EQ(from1, 2);
  EXPECT_EQ(from2, 2);
  // The SRQ is busy while its domain is: neither goes while the other or a
  // TGT QP uses it.
  EXPECT_EQ(net.b().DeallocXrcd(xrcd).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(net.b().DestroyCq(srq.cq).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(net.b().DestroySrq(srq.srq).ok());
  ASSERT_TRUE(net.b().DestroyQp(tgt1).ok());
  EXPECT_FALSE(net.b().DeallocXrcd(xrcd).ok());
  ASSERT_TRUE(net.b().DestroyQp(tgt2).ok());
  EXPECT_TRUE(net.b().DeallocXrcd(xrcd).ok());
  EXPECT_TRUE(net.b().DestroyCq(srq.cq).ok());
}

// An XRCETH naming an SRQ of another domain, or none: NAK invalid request,
// counted with its reason; the INI QP's WQE fails with REM_INV_REQ_ERR.
TEST(XrcTest, SrqOfAnotherDomainOrNoneIsNaked) {
  for (bool other_domain : {true, false}) {
    SCOPED_TRACE(other_domain ? "other domain" : "no SRQ");
    BackToBack net;
    const XrcdHandle xrcd = *net.b().AllocXrcd();
    const XrcdHandle other = *net.b().AllocXrcd();
    XrcSrq mine = MakeSrq(net.b(), xrcd);
    XrcSrq theirs = MakeSrq(net.b(), other);
    PostSrq(net.b(), theirs, 1);
    Endpoint ini = MakeIni(net.a());
    const uint32_t tgt = ConnectXrc(net, ini, xrcd);
    const uint32_t srqn = other_domain ? theirs.srqn : 0x777777;
    ASSERT_TRUE(net.a()
                    .PostSend(ini.qpn, XrcWr(ini, 1, WrOpcode::kSend, srqn, 16))
                    .ok());
    net.Run();
    const auto wcs = Poll(net.a(), ini.cq);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, WcStatus::kRemInvReqErr);
    const DropReason why =
        other_domain ? DropReason::kXrcSrqXrcd : DropReason::kXrcSrqInvalid;
    EXPECT_EQ(net.b().reason_counters()[why], 1u);
    auto naks = net.Frames(1, kXrc + Opcode::kRcAcknowledge);
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome,
              Aeth::Nak(protocol::NakCode::kInvalidRequest));
    EXPECT_TRUE(Poll(net.b(), theirs.cq).empty());
    EXPECT_TRUE(Poll(net.b(), mine.cq).empty());
    EXPECT_EQ(theirs.buf[256], 0);
    EXPECT_EQ(net.b().GetQp(tgt)->state(), QpState::kErr);
  }
}

// The SRQ's PD checks the keys: a key of another PD (the INI side's) and
// a wrong R_Key are remote access errors.
TEST(XrcTest, KeysAreCheckedAgainstTheSrqsPd) {
  BackToBack net;
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  XrcSrq other_pd = MakeSrq(net.b(), xrcd);
  Endpoint ini = MakeIni(net.a());
  ConnectXrc(net, ini, xrcd);
  // The region is other_pd's: through srq (another PD) it is refused.
  SendWr w = XrcWr(ini, 1, WrOpcode::kRdmaWrite, srq.srqn, 32);
  w.rdma = {reinterpret_cast<uint64_t>(other_pd.buf.data()), other_pd.key};
  ASSERT_TRUE(net.a().PostSend(ini.qpn, w).ok());
  net.Run();
  auto wcs = Poll(net.a(), ini.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(net.b().reason_counters()[DropReason::kRkeyPd], 1u);

  // Through the region's own SRQ the same WRITE lands; a wrong key not.
  Endpoint ini2 = MakeIni(net.a());
  ConnectXrc(net, ini2, xrcd);
  w = XrcWr(ini2, 2, WrOpcode::kRdmaWrite, other_pd.srqn, 32);
  Fill(ini2.buf, 512, 32, 0x55);
  w.rdma = {reinterpret_cast<uint64_t>(other_pd.buf.data()), other_pd.key};
  ASSERT_TRUE(net.a().PostSend(ini2.qpn, w).ok());
  SendWr bad = w;
  bad.wr_id = 3;
  bad.rdma.rkey ^= 0x100;
  ASSERT_TRUE(net.a().PostSend(ini2.qpn, bad).ok());
  net.Run();
  wcs = Poll(net.a(), ini2.cq);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[1].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(std::memcmp(other_pd.buf.data(), ini2.buf.data() + 512, 32), 0);
}

// A P_Key the TGT QP's partition does not accept is dropped and counted;
// the INI QP retries and gives up.
TEST(XrcTest, WrongPkeyIsDropped) {
  BackToBack net;
  ASSERT_TRUE(net.a().pkey_table().Set(1, 0x8123).ok());
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  PostSrq(net.b(), srq, 1);
  Endpoint ini = MakeIni(net.a());
  ConnectXrc(net, ini, xrcd, /*pkey_index=*/1, /*retry_cnt=*/1);
  ASSERT_TRUE(
      net.a()
          .PostSend(ini.qpn, XrcWr(ini, 1, WrOpcode::kSend, srq.srqn, 16))
          .ok());
  net.Run();
  const auto wcs = Poll(net.a(), ini.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(net.b().QueryCounters().bad_pkey_cntr, 2u);  // sent, resent
  EXPECT_TRUE(Poll(net.b(), srq.cq).empty());
}

// An empty XRC SRQ answers RNR NAK; the INI QP retries until a WQE is
// posted.
TEST(XrcTest, EmptySrqIsRnrNak) {
  BackToBack net;
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  Endpoint ini = MakeIni(net.a());
  const uint32_t tgt = ConnectXrc(net, ini, xrcd);
  ASSERT_TRUE(
      net.a()
          .PostSend(ini.qpn, XrcWr(ini, 1, WrOpcode::kSend, srq.srqn, 16))
          .ok());
  net.RunUntil(net.clock().Now() + 5000);
  auto naks = net.Frames(1, kXrc + Opcode::kRcAcknowledge);
  ASSERT_FALSE(naks.empty());
  EXPECT_EQ(naks[0]->parsed.hdr.aeth.type(), AethType::kRnrNak);
  EXPECT_GE(net.b().GetQp(tgt)->counters().rnr_naks_sent, 1u);
  EXPECT_TRUE(Poll(net.a(), ini.cq).empty());
  PostSrq(net.b(), srq, 1);
  net.Run();
  const auto wcs = Poll(net.a(), ini.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(Poll(net.b(), srq.cq).size(), 1u);
}

// Each half has one direction: the INI QP takes no receive, the TGT QP no
// send, and neither takes the other half's frames.
TEST(XrcTest, EachHalfRefusesTheOtherDirection) {
  BackToBack net;
  const XrcdHandle xrcd = *net.b().AllocXrcd();
  XrcSrq srq = MakeSrq(net.b(), xrcd);
  Endpoint ini = MakeIni(net.a());
  const uint32_t tgt = ConnectXrc(net, ini, xrcd);
  EXPECT_EQ(net.a().PostRecv(ini.qpn, {1, {SgeOf(ini, 0, 8)}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net.b().PostRecv(tgt, {1, {}}).code(),
            absl::StatusCode::kInvalidArgument);
  SendWr wr;
  wr.opcode = WrOpcode::kSend;
  EXPECT_FALSE(net.b().PostSend(tgt, wr).ok());
  SendWr flush = XrcWr(ini, 1, WrOpcode::kFlush, srq.srqn, 0);
  EXPECT_EQ(net.a().PostSend(ini.qpn, flush).code(),
            absl::StatusCode::kInvalidArgument);
  // The INI QP has no receive queue, the TGT QP needs its domain.
  QpInitAttr init;
  init.qp_type = QpType::kXrcIni;
  init.send_cq = ini.cq;
  init.cap = {4, 4, 1, 1, 0};
  EXPECT_FALSE(net.a().CreateQp(ini.pd, init).ok());
  init = {};
  init.qp_type = QpType::kXrcTgt;
  init.xrcd = xrcd + 1;
  EXPECT_FALSE(net.b().CreateQp(kInvalidHandle, init).ok());
  // An ordinary SRQ has no SRQ number.
  const SrqHandle plain = *net.b().CreateSrq(srq.pd, {4, 1, 0});
  EXPECT_FALSE(net.b().GetSrqNum(plain).ok());
}

}  // namespace
}  // namespace rocemu::nic::testing
