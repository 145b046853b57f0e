// Send queue drain: RTS -> SQD lets requests already on the wire complete,
// starts no new WQE, raises IBV_EVENT_SQ_DRAINED when the drain ends (if
// the QP asked for it), and SQD -> RTS resumes with the WQEs left.
#include <gtest/gtest.h>

#include "nic/psn.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

std::vector<AsyncEvent> Events(Rnic& nic) {
  std::vector<AsyncEvent> out;
  AsyncEvent e;
  while (nic.async_events().Pop(&e)) out.push_back(e);
  return out;
}

absl::Status ToSqd(Rnic& nic, uint32_t qpn, bool notify) {
  QpAttr a;
  a.qp_state = QpState::kSqd;
  a.en_sqd_async_notify = notify ? 1 : 0;
  return nic.ModifyQp(qpn, a, qp_attr::kState | qp_attr::kEnSqdAsyncNotify);
}

TEST(SqdTest, DrainsOutstandingStartsNothingNewAndResumes) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.ea.buf, 0, 2500, 4);
  // WR 1 goes out (PSNs 100..102); its ACK is lost, so it is outstanding.
  bool drop_acks = true;
  net.drop = [&](const WireFrame& f) { return f.dir == 1 && drop_acks; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 2500)).ok());
  net.RunUntil(net.clock().Now() + 1'000'000);
  ASSERT_EQ(net.Frames(0).size(), 3u);

  ASSERT_TRUE(ToSqd(net.a(), p.ea.qpn, true).ok());
  // WRs may be posted in SQD; they wait.
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 100)).ok());
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kSqd);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->sq_draining, 1);
  EXPECT_TRUE(Events(net.a()).empty());

  // The local ACK timeout resends WR 1; its ACK now arrives and ends the
  // drain. WR 2 does not start.
  drop_acks = false;
  net.Run();
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  auto ev = Events(net.a());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kSqDrained);
  EXPECT_EQ(ev[0].element, p.ea.qpn);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kSqd);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->sq_draining, 0);
  for (const WireFrame* f : net.Frames(0)) {
    EXPECT_TRUE(PsnLessEq(f->parsed.hdr.bth.psn, 102)) << f->parsed.hdr.bth.psn;
    EXPECT_NE(f->parsed.hdr.bth.opcode, Opcode::kRcRdmaWriteOnly);
  }
  EXPECT_GT(net.Frames(0).size(), 3u);  // the retransmission

  // SQD -> RTS: WR 2 goes out with the next PSN.
  QpAttr a;
  a.qp_state = QpState::kRts;
  ASSERT_TRUE(net.a().ModifyQp(p.ea.qpn, a, qp_attr::kState).ok());
  net.Run();
  auto only = net.Frames(0, Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0]->parsed.hdr.bth.psn, 103u);
  sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 2u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(Events(net.a()).empty());
}

TEST(SqdTest, IdleQueueDrainsAtOnceAndNotifyIsOptional) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(ToSqd(net.a(), p.ea.qpn, true).ok());
  auto ev = Events(net.a());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AsyncEventType::kSqDrained);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->sq_draining, 0);

  // Without en_sqd_async_notify the drain ends silently.
  ASSERT_TRUE(ToSqd(net.b(), p.eb.qpn, false).ok());
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->sq_draining, 0);
  EXPECT_TRUE(Events(net.b()).empty());
  // A WR posted in SQD stays on the queue.
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 3, 10)).ok());
  net.Run();
  EXPECT_TRUE(net.Frames(0).empty());
  EXPECT_TRUE(Poll(net.a(), p.ea.cq).empty());
}

}  // namespace
}  // namespace rocemu::nic::testing
