// Affiliated asynchronous events as an RNIC raises them: CQ overflow (CQ_ERR
// on the CQ, QP_FATAL and ERR for the QP whose completion did not fit, QPs
// on other CQs unaffected), QP_LAST_WQE_REACHED for SRQ-attached QPs that
// enter ERR, COMM_EST on the first request in RTR, QP_REQ_ERR and
// QP_ACCESS_ERR on the responder for invalid-request and access errors.
#include <gtest/gtest.h>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Aeth;
using protocol::NakCode;
using protocol::Opcode;

std::vector<AsyncEvent> Events(Rnic& nic) {
  std::vector<AsyncEvent> out;
  AsyncEvent e;
  while (nic.async_events().Pop(&e)) out.push_back(e);
  return out;
}

SendWr Send(const Endpoint& e, uint64_t id, uint32_t len) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(e, 0, len)};
  return wr;
}

// Connects a fresh QP of A to `eb` (whose QP is already created on B).
Endpoint ConnectToB(BackToBack& net, const Endpoint& eb, uint32_t psn_a,
                    uint32_t psn_b) {
  ConnectOptions o;
  Endpoint ea;
  EXPECT_TRUE(SetupEndpoint(net.a(), o, &ea).ok());
  EXPECT_TRUE(
      ConnectQp(net.a(), ea, net.b().config(), eb.qpn, psn_a, psn_b, o).ok());
  EXPECT_TRUE(
      ConnectQp(net.b(), eb, net.a().config(), ea.qpn, psn_b, psn_a, o).ok());
  return ea;
}

TEST(CqOverflowTest, OverflowErrsTheCqAndItsQpOnlyOthersCarryOn) {
  BackToBack net;
  // B: QP 1 on a 2-entry CQ, QP 2 on its own CQ, one PD and buffer.
  Endpoint b1;
  b1.pd = *net.b().AllocPd();
  b1.cq = *net.b().CreateCq(2);
  b1.buf.assign(8192, 0);
  b1.key = *net.b().RegMr(b1.pd, b1.buf.data(), b1.buf.size(),
                          access::kLocalWrite | access::kRemoteWrite);
  Endpoint b2 = b1;  // same PD and region (b2.buf is not registered)
  b2.cq = *net.b().CreateCq(16);
  for (Endpoint* e : {&b1, &b2}) {
    QpInitAttr init;
    init.send_cq = e->cq;
    init.recv_cq = e->cq;
    init.cap = {8, 8, 1, 1, 0};
    e->qpn = *net.b().CreateQp(e->pd, init);
  }
  Endpoint a1 = ConnectToB(net, b1, 100, 5000);
  Endpoint a2 = ConnectToB(net, b2, 200, 6000);
  Events(net.b());  // COMM_EST and the like are not this test's concern
  for (uint64_t id = 1; id <= 4; ++id) {
    ASSERT_TRUE(net.b().PostRecv(b1.qpn, {id, {SgeOf(b1, 0, 64)}}).ok());
  }
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(net.a().PostSend(a1.qpn, Send(a1, id, 16)).ok());
  }
  net.RunUntil(net.clock().Now() + 1'000'000);

  // The third receive completion overflowed the CQ.
  auto ev = Events(net.b());
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kCqErr);
  EXPECT_EQ(ev[0].element, b1.cq);
  EXPECT_EQ(ev[1].type, AsyncEventType::kQpFatal);
  EXPECT_EQ(ev[1].element, b1.qpn);
  EXPECT_EQ(net.b().QueryQp(b1.qpn)->qp_state, QpState::kErr);
  // Completions queued before the overflow are still polled, nothing else
  // (the flushed WQE 4 had nowhere to go).
  auto rc = Poll(net.b(), b1.cq);
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[1].wr_id, 2u);
  // The requester is not told the message was executed: no ACK covers it.
  for (const WireFrame* f : net.Frames(1)) {
    if (f->parsed.hdr.bth.dest_qp != a1.qpn) continue;
    EXPECT_NE(f->parsed.hdr.bth.psn, 102u);
  }

  // QP 2 on its own CQ is unaffected.
  ASSERT_TRUE(net.b().PostRecv(b2.qpn, {7, {SgeOf(b1, 1024, 64)}}).ok());
  ASSERT_TRUE(net.a().PostSend(a2.qpn, Send(a2, 9, 32)).ok());
  net.RunUntil(net.clock().Now() + 1'000'000);
  rc = Poll(net.b(), b2.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  auto sc = Poll(net.a(), a2.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(net.b().QueryQp(b2.qpn)->qp_state, QpState::kRts);
  EXPECT_TRUE(Events(net.b()).empty());
}

TEST(LastWqeReachedTest, RaisedForSrqQpEnteringErrOnly) {
  BackToBack net;
  Rnic& nic = net.b();
  const PdHandle pd = *nic.AllocPd();
  const CqHandle cq = *nic.CreateCq(16);
  absl::StatusOr<SrqHandle> srq = nic.CreateSrq(pd, {8, 1, 0});
  ASSERT_TRUE(srq.ok());
  QpInitAttr init;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {8, 8, 1, 1, 0};
  const uint32_t plain = *nic.CreateQp(pd, init);
  init.has_srq = true;
  init.srq = *srq;
  init.cap.max_recv_wr = 0;
  const uint32_t shared = *nic.CreateQp(pd, init);
  QpAttr a;
  a.qp_state = QpState::kErr;
  ASSERT_TRUE(nic.ModifyQp(plain, a, qp_attr::kState).ok());
  EXPECT_TRUE(Events(nic).empty());
  ASSERT_TRUE(nic.ModifyQp(shared, a, qp_attr::kState).ok());
  auto ev = Events(nic);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kQpLastWqeReached);
  EXPECT_EQ(ev[0].element, shared);
}

// B stops in RTR; A is connected up to RTS.
Pair ConnectBInRtr(BackToBack& net) {
  ConnectOptions o;
  Pair p;
  EXPECT_TRUE(SetupEndpoint(net.a(), o, &p.ea).ok());
  EXPECT_TRUE(SetupEndpoint(net.b(), o, &p.eb).ok());
  EXPECT_TRUE(
      ConnectQp(net.a(), p.ea, net.b().config(), p.eb.qpn, 100, 5000, o).ok());
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = o.qp_access;
  EXPECT_TRUE(net.b()
                  .ModifyQp(p.eb.qpn, a,
                            qp_attr::kState | qp_attr::kPkeyIndex |
                                qp_attr::kPort | qp_attr::kAccessFlags)
                  .ok());
  a.qp_state = QpState::kRtr;
  a.path_mtu = o.mtu;
  a.dest_qp_num = p.ea.qpn;
  a.rq_psn = 100;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.dgid = net.a().config().gid;
  a.ah_attr.dmac = net.a().config().mac;
  EXPECT_TRUE(net.b()
                  .ModifyQp(p.eb.qpn, a,
                            qp_attr::kState | qp_attr::kAv | qp_attr::kPathMtu |
                                qp_attr::kDestQpn | qp_attr::kRqPsn |
                                qp_attr::kMaxDestRdAtomic |
                                qp_attr::kMinRnrTimer)
                  .ok());
  return p;
}

TEST(CommEstTest, FirstRequestInRtrRaisesItOnce) {
  BackToBack net;
  Pair p = ConnectBInRtr(net);
  EXPECT_TRUE(Events(net.b()).empty());
  for (uint64_t id = 1; id <= 2; ++id) {
    ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {id, {SgeOf(p.eb, 0, 64)}}).ok());
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Send(p.ea, id, 8)).ok());
  }
  net.Run();
  // The responder works in RTR: both messages land and are acknowledged.
  EXPECT_EQ(Poll(net.b(), p.eb.cq).size(), 2u);
  auto acks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_FALSE(acks.empty());
  EXPECT_EQ(acks.back()->parsed.hdr.bth.psn, 101u);
  auto ev = Events(net.b());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kCommEst);
  EXPECT_EQ(ev[0].element, p.eb.qpn);
  // The requester, already in RTS, gets only responses: no event.
  EXPECT_TRUE(Events(net.a()).empty());
}

TEST(PortEventTest, LinkDownAndUpRaisePortErrAndPortActive) {
  BackToBack net;
  Pair p = Connect(net);
  Rnic& a = net.a();
  EXPECT_EQ(a.port_attr().state, PortState::kActive);
  a.SetLinkUp(true);  // no change, no event
  EXPECT_TRUE(Events(a).empty());

  a.SetLinkUp(false);
  EXPECT_EQ(a.port_attr().state, PortState::kDown);
  EXPECT_EQ(a.port_attr().phys_state, kPhysDisabled);
  EXPECT_EQ(a.QueryCounters().link_downed, 1u);
  a.SetLinkUp(false);  // still down: counted once
  auto ev = Events(a);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kPortErr);
  EXPECT_EQ(ev[0].element, kPortNumber);
  EXPECT_EQ(ElementOf(ev[0].type), AsyncEventElement::kPortOrDevice);
  // The QPs are not touched by the link (no flush, no QP event).
  EXPECT_EQ(a.QueryQp(p.ea.qpn)->qp_state, QpState::kRts);

  a.SetLinkUp(true);
  EXPECT_EQ(a.port_attr().state, PortState::kActive);
  EXPECT_EQ(a.port_attr().phys_state, kPhysLinkUp);
  EXPECT_EQ(a.QueryCounters().link_downed, 1u);
  ev = Events(a);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kPortActive);
  EXPECT_EQ(ev[0].element, kPortNumber);
  EXPECT_TRUE(Events(net.b()).empty());
  EXPECT_EQ(net.b().QueryCounters().link_downed, 0u);
}

// A request B must refuse; returns B's events.
std::vector<AsyncEvent> ResponderError(BackToBack& net, Pair& p, uint32_t rkey,
                                       uint8_t syndrome) {
  SendWr wr;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = {SgeOf(p.ea, 0, 64)};
  wr.rdma.remote_addr = Va(p.eb, 0);
  wr.rdma.rkey = rkey;
  EXPECT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  EXPECT_EQ(naks.size(), 1u);
  if (!naks.empty()) {
    EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome, syndrome);
  }
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kErr);
  // The requester learns from its completion, not from an event.
  EXPECT_TRUE(Events(net.a()).empty());
  return Events(net.b());
}

TEST(ResponderErrorEventTest, RemoteAccessErrorRaisesQpAccessErr) {
  BackToBack net;
  Pair p = Connect(net);
  auto ev = ResponderError(net, p, p.eb.key ^ 0x77,
                           Aeth::Nak(NakCode::kRemoteAccessError));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kQpAccessErr);
  EXPECT_EQ(ev[0].element, p.eb.qpn);
}

TEST(ResponderErrorEventTest, InvalidRequestRaisesQpReqErr) {
  BackToBack net;
  ConnectOptions o;
  o.qp_access = access::kRemoteRead;  // WRITE not allowed on B's QP
  Pair p = Connect(net, o);
  auto ev =
      ResponderError(net, p, p.eb.key, Aeth::Nak(NakCode::kInvalidRequest));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kQpReqErr);
  EXPECT_EQ(ev[0].element, p.eb.qpn);
}

}  // namespace
}  // namespace rocemu::nic::testing
