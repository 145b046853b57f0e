// Shared receive queues on RC and UD: QPs created with an SRQ take its
// WQEs in arrival order, the armed limit raises IBV_EVENT_SRQ_LIMIT_REACHED
// once, an empty SRQ makes RC answer RNR and UD drop (out_of_buffer).
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Aeth;
using protocol::Opcode;

// B's side: one PD, CQ, SRQ and receive buffer shared by its QPs.
struct SrqSide {
  Endpoint e;  // pd, cq, buf, key; qpn unused
  SrqHandle srq = 0;
};

SrqSide MakeSrqSide(Rnic& nic, uint32_t max_wr, uint32_t limit) {
  SrqSide s;
  s.e.pd = *nic.AllocPd();
  s.e.cq = *nic.CreateCq(256);
  s.e.buf.assign(1 << 16, 0);
  s.e.key = *nic.RegMr(s.e.pd, s.e.buf.data(), s.e.buf.size(),
                       access::kLocalWrite | access::kRemoteWrite);
  absl::StatusOr<SrqHandle> srq = nic.CreateSrq(s.e.pd, {max_wr, 2, limit});
  EXPECT_TRUE(srq.ok()) << srq.status();
  s.srq = srq.ok() ? *srq : 0;
  return s;
}

Endpoint SrqQp(Rnic& nic, const SrqSide& s, QpType type) {
  QpInitAttr init;
  init.qp_type = type;
  init.send_cq = s.e.cq;
  init.recv_cq = s.e.cq;
  init.has_srq = true;
  init.srq = s.srq;
  init.cap = {16, 0, 2, 2, 64};
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(s.e.pd, init);
  EXPECT_TRUE(qpn.ok()) << qpn.status();
  Endpoint e;
  e.pd = s.e.pd;
  e.cq = s.e.cq;
  e.qpn = qpn.ok() ? *qpn : 0;
  e.key = s.e.key;
  return e;
}

// A's endpoint connected to a QP `eb` of B.
Endpoint ConnectToB(BackToBack& net, const Endpoint& eb, uint32_t psn_a,
                    uint32_t psn_b, const ConnectOptions& o) {
  Endpoint ea;
  EXPECT_TRUE(SetupEndpoint(net.a(), o, &ea).ok());
  EXPECT_TRUE(
      ConnectQp(net.a(), ea, net.b().config(), eb.qpn, psn_a, psn_b, o).ok());
  EXPECT_TRUE(
      ConnectQp(net.b(), eb, net.a().config(), ea.qpn, psn_b, psn_a, o).ok());
  return ea;
}

void PostSrq(BackToBack& net, const SrqSide& s, uint64_t id) {
  ASSERT_TRUE(net.b()
                  .PostSrqRecv(s.srq, {id, {SgeOf(s.e, (id % 64) * 512, 512)}})
                  .ok());
}

void Send(BackToBack& net, const Endpoint& ea, uint64_t id, uint32_t len) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(ea, 0, len)};
  ASSERT_TRUE(net.a().PostSend(ea.qpn, wr).ok());
}

std::vector<AsyncEvent> Events(Rnic& nic) {
  std::vector<AsyncEvent> out;
  AsyncEvent e;
  while (nic.async_events().Pop(&e)) out.push_back(e);
  return out;
}

TEST(SrqTest, RcQpsShareTheSrqLimitEventAndRnrWhenEmpty) {
  BackToBack net;
  SrqSide s = MakeSrqSide(net.b(), 8, 3);
  Endpoint b1 = SrqQp(net.b(), s, QpType::kRc);
  Endpoint b2 = SrqQp(net.b(), s, QpType::kRc);
  ConnectOptions o;
  Endpoint a1 = ConnectToB(net, b1, 100, 5000, o);
  Endpoint a2 = ConnectToB(net, b2, 200, 6000, o);
  Fill(a1.buf, 0, 300, 1);
  Fill(a2.buf, 0, 300, 2);
  for (uint64_t id = 1; id <= 4; ++id) PostSrq(net, s, id);

  // Three messages: WQEs 1, 2, 3 in arrival order, whichever QP.
  Send(net, a1, 10, 100);
  net.Run();
  Send(net, a2, 20, 200);
  net.Run();
  Send(net, a1, 11, 300);
  net.Run();
  auto rc = Poll(net.b(), s.e.cq);
  ASSERT_EQ(rc.size(), 3u);
  const uint32_t qpn[] = {b1.qpn, b2.qpn, b1.qpn};
  const uint32_t len[] = {100, 200, 300};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rc[i].wr_id, i + 1u);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].qp_num, qpn[i]);
    EXPECT_EQ(rc[i].byte_len, len[i]);
  }
  EXPECT_EQ(0, std::memcmp(s.e.buf.data() + 2 * 512, a2.buf.data(), 200));
  EXPECT_EQ(0, std::memcmp(s.e.buf.data() + 3 * 512, a1.buf.data(), 300));
  // The second take left 2 < 3 queued: one event, then the limit disarms.
  auto ev = Events(net.b());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kSrqLimitReached);
  EXPECT_EQ(ev[0].element, s.srq);
  EXPECT_EQ(net.b().QueryCounters().rdma_recvs, 3u);

  // WQE 4 takes the next message; the one after finds the SRQ empty: RNR
  // NAK at its PSN, retried until a WQE is posted.
  Send(net, a2, 21, 10);
  Send(net, a2, 22, 20);
  net.RunUntil(net.clock().Now() + 200'000);
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  size_t rnr = 0;
  for (const WireFrame* f : naks) {
    if (f->parsed.hdr.aeth.type() != protocol::AethType::kRnrNak) continue;
    ++rnr;
    EXPECT_EQ(f->parsed.hdr.aeth.syndrome, Aeth::RnrNak(o.min_rnr_timer));
    EXPECT_EQ(f->parsed.hdr.bth.psn, 202u);
    EXPECT_EQ(f->parsed.hdr.bth.dest_qp, a2.qpn);
  }
  EXPECT_GE(rnr, 2u);
  EXPECT_EQ(net.b().QueryCounters().send_rnr_err, rnr);
  rc = Poll(net.b(), s.e.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 4u);
  PostSrq(net, s, 5);
  net.Run();
  rc = Poll(net.b(), s.e.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 5u);
  EXPECT_EQ(rc[0].byte_len, 20u);
  EXPECT_EQ(rc[0].qp_num, b2.qpn);
  auto sc = Poll(net.a(), a2.cq);
  ASSERT_EQ(sc.size(), 3u);
  for (const auto& wc : sc) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_TRUE(Events(net.b()).empty());
  // A QP with an SRQ has no receive queue of its own.
  EXPECT_FALSE(net.b().PostRecv(b1.qpn, {9, {SgeOf(s.e, 0, 8)}}).ok());
}

TEST(SrqTest, UdQpTakesSrqWqesAndDropsWhenEmpty) {
  BackToBack net;
  SrqSide s = MakeSrqSide(net.b(), 4, 0);
  Endpoint eb = SrqQp(net.b(), s, QpType::kUd);
  ConnectOptions o;
  o.type = QpType::kUd;
  Endpoint ea = ConnectToB(net, eb, 1, 1, o);
  AhAttr attr;
  attr.dgid = net.b().config().gid;
  absl::StatusOr<AhHandle> ah =
      net.a().CreateAh(ea.pd, attr, net.b().config().mac);
  ASSERT_TRUE(ah.ok());
  PostSrq(net, s, 1);
  Fill(ea.buf, 0, 64, 3);
  for (uint64_t id = 1; id <= 2; ++id) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(ea, 0, 64)};
    wr.ud = {*ah, eb.qpn, o.qkey};
    ASSERT_TRUE(net.a().PostSend(ea.qpn, wr).ok());
  }
  net.Run();
  EXPECT_EQ(net.Frames(0, Opcode::kUdSendOnly).size(), 2u);
  auto rc = Poll(net.b(), s.e.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].qp_num, eb.qpn);
  EXPECT_EQ(rc[0].src_qp, ea.qpn);
  EXPECT_EQ(rc[0].byte_len, 40u + 64u);
  EXPECT_EQ(0, std::memcmp(s.e.buf.data() + 512 + 40, ea.buf.data(), 64));
  EXPECT_EQ(net.b().QueryCounters().out_of_buffer, 1u);
}

}  // namespace
}  // namespace rocemu::nic::testing
