// The Rnic's destroy and SRQ verbs (ibv_destroy_cq, ibv_dealloc_pd,
// ibv_destroy_ah, ibv_modify_srq, ibv_query_srq, ibv_destroy_srq) with their
// EBUSY ordering, and the solicited flag of receive completions.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

QpInitAttr InitAttr(CqHandle scq, CqHandle rcq, SrqHandle srq = 0) {
  QpInitAttr init;
  init.send_cq = scq;
  init.recv_cq = rcq;
  init.has_srq = srq != 0;
  init.srq = srq;
  init.cap = {16, srq != 0 ? 0u : 16u, 2, 2, 64};
  return init;
}

TEST(RnicDestroy, CqIsBusyWhileAQpUsesIt) {
  Rnic nic(MakeConfig(1));
  const PdHandle pd = *nic.AllocPd();
  const CqHandle scq = *nic.CreateCq(16);
  const CqHandle rcq = *nic.CreateCq(16);
  const uint32_t qpn = *nic.CreateQp(pd, InitAttr(scq, rcq));
  EXPECT_EQ(nic.DestroyCq(scq).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(nic.DestroyCq(rcq).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DestroyQp(qpn).ok());
  EXPECT_TRUE(nic.DestroyCq(scq).ok());
  EXPECT_TRUE(nic.DestroyCq(rcq).ok());
  // Stale handles: gone, and nothing to poll.
  EXPECT_EQ(nic.DestroyCq(scq).code(), absl::StatusCode::kNotFound);
  WorkCompletion wc[1];
  EXPECT_EQ(nic.PollCq(scq, wc), 0u);
  EXPECT_EQ(nic.CreateQp(pd, InitAttr(scq, scq)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(nic.DeallocPd(pd).ok());
}

TEST(RnicDestroy, PdIsBusyWhileAnyObjectUsesIt) {
  Rnic nic(MakeConfig(1));
  const PdHandle pd = *nic.AllocPd();
  std::vector<uint8_t> buf(256);
  const uint32_t key = *nic.RegMr(pd, buf.data(), buf.size(), 0);
  AhAttr ah_attr;
  ah_attr.dgid = GidFromIpv4(10, 0, 0, 2);
  const AhHandle ah = *nic.CreateAh(pd, ah_attr, {2, 0, 0, 0, 0, 2});
  const SrqHandle srq = *nic.CreateSrq(pd, {8, 1, 0});
  const CqHandle cq = *nic.CreateCq(16);
  const uint32_t qpn = *nic.CreateQp(pd, InitAttr(cq, cq));

  // Each object in turn keeps the PD alive.
  EXPECT_EQ(nic.DeallocPd(pd).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DestroyQp(qpn).ok());
  EXPECT_EQ(nic.DeallocPd(pd).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DeregMr(key).ok());
  EXPECT_EQ(nic.DeallocPd(pd).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DestroyAh(ah).ok());
  EXPECT_EQ(nic.DeallocPd(pd).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DestroySrq(srq).ok());
  EXPECT_TRUE(nic.DeallocPd(pd).ok());
  EXPECT_EQ(nic.DeallocPd(pd).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nic.RegMr(pd, buf.data(), buf.size(), 0).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(nic.DestroyCq(cq).ok());
}

TEST(RnicDestroy, AhDestroyedIsStaleAndUdSendThroughItFails) {
  BackToBack net;
  ConnectOptions o;
  o.type = QpType::kUd;
  Pair p = Connect(net, o);
  AhAttr attr;
  attr.dgid = net.b().config().gid;
  const AhHandle ah = *net.a().CreateAh(p.ea.pd, attr, net.b().config().mac);
  ASSERT_TRUE(net.a().DestroyAh(ah).ok());
  EXPECT_EQ(net.a().DestroyAh(ah).code(), absl::StatusCode::kNotFound);
  SendWr wr;
  wr.wr_id = 5;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 16)};
  wr.ud.ah = ah;
  wr.ud.remote_qpn = p.eb.qpn;
  wr.ud.remote_qkey = o.qkey;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto wc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocQpOpErr);
  EXPECT_TRUE(net.Frames(0).empty());
}

// A send-only QP (max_recv_wr 0) towards a receive-only one (max_send_wr
// 0), as qperf's bandwidth tests make them: both are created, the empty
// queue refuses every post (ENOMEM), and SEND, WRITE and READ still flow
// (the receive-only side answers READs and acknowledges with no send
// queue).
TEST(RnicQp, SendOnlyTowardsReceiveOnly) {
  BackToBack net;
  ConnectOptions o;
  o.max_recv_wr = 0;
  Endpoint ea, eb;
  ASSERT_TRUE(SetupEndpoint(net.a(), o, &ea).ok());
  o.max_recv_wr = 64;
  o.max_send_wr = 0;
  ASSERT_TRUE(SetupEndpoint(net.b(), o, &eb).ok());
  ASSERT_TRUE(ConnectQp(net.a(), ea, net.b().config(), eb.qpn, o.sq_psn_a,
                        o.sq_psn_b, o)
                  .ok());
  ASSERT_TRUE(ConnectQp(net.b(), eb, net.a().config(), ea.qpn, o.sq_psn_b,
                        o.sq_psn_a, o)
                  .ok());
  EXPECT_EQ(net.a().QueryQp(ea.qpn)->cap.max_recv_wr, 0u);
  EXPECT_EQ(net.b().QueryQp(eb.qpn)->cap.max_send_wr, 0u);
  EXPECT_EQ(net.a().PostRecv(ea.qpn, {1, {SgeOf(ea, 0, 64)}}).code(),
            absl::StatusCode::kResourceExhausted);
  SendWr send;
  send.wr_id = 2;
  send.opcode = WrOpcode::kSend;
  send.send_flags = send_flags::kSignaled;
  send.sg_list = {SgeOf(eb, 0, 64)};
  EXPECT_EQ(net.b().PostSend(eb.qpn, send).code(),
            absl::StatusCode::kResourceExhausted);

  Fill(ea.buf, 0, 256, 3);
  ASSERT_TRUE(net.b().PostRecv(eb.qpn, {7, {SgeOf(eb, 1024, 256)}}).ok());
  send.sg_list = {SgeOf(ea, 0, 256)};
  ASSERT_TRUE(net.a().PostSend(ea.qpn, send).ok());
  SendWr write;
  write.wr_id = 3;
  write.opcode = WrOpcode::kRdmaWrite;
  write.send_flags = send_flags::kSignaled;
  write.sg_list = {SgeOf(ea, 256, 128)};
  write.rdma.remote_addr = Va(eb, 256);
  write.rdma.rkey = eb.key;
  ASSERT_TRUE(net.a().PostSend(ea.qpn, write).ok());
  Fill(eb.buf, 4096, 512, 9);
  SendWr read;
  read.wr_id = 4;
  read.opcode = WrOpcode::kRdmaRead;
  read.send_flags = send_flags::kSignaled;
  read.sg_list = {SgeOf(ea, 8192, 512)};
  read.rdma.remote_addr = Va(eb, 4096);
  read.rdma.rkey = eb.key;
  ASSERT_TRUE(net.a().PostSend(ea.qpn, read).ok());
  net.Run();
  auto wa = Poll(net.a(), ea.cq);
  ASSERT_EQ(wa.size(), 3u);
  for (const WorkCompletion& wc : wa) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  auto wb = Poll(net.b(), eb.cq);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 7u);
  EXPECT_EQ(wb[0].byte_len, 256u);
  EXPECT_TRUE(
      std::equal(ea.buf.begin(), ea.buf.begin() + 256, eb.buf.begin() + 1024));
  EXPECT_TRUE(std::equal(ea.buf.begin() + 256, ea.buf.begin() + 384,
                         eb.buf.begin() + 256));
  EXPECT_TRUE(std::equal(eb.buf.begin() + 4096, eb.buf.begin() + 4608,
                         ea.buf.begin() + 8192));
}

// Inline data and SGEs share the send slot, as rxe sizes it: a QP asked
// for no inline data gets what its SGEs' room holds (16 bytes per SGE),
// one asked for more inline data than its SGEs take gets the SGEs that
// room holds; both within the device's limits. Inline posts are checked
// against what was granted.
TEST(RnicQp, InlineDataAndSgesFillTheSendSlot) {
  Rnic nic(MakeConfig(1));
  const PdHandle pd = *nic.AllocPd();
  const CqHandle cq = *nic.CreateCq(16);
  struct Case {
    QpCap asked;
    uint32_t sge, inline_data;
  };
  const uint32_t max_sge = nic.device_attr().max_sge;
  const uint32_t max_inline = nic.device_attr().max_inline_data;
  for (const Case& c :
       {Case{{8, 8, 1, 1, 0}, 1, 16}, Case{{8, 8, 2, 1, 100}, 6, 100},
        Case{{8, 8, 4, 1, 16}, 4, 64}, Case{{8, 8, 0, 1, 0}, 0, 0},
        Case{{8, 8, max_sge, 1, 0}, max_sge, max_inline}}) {
    QpInitAttr init = InitAttr(cq, cq);
    init.cap = c.asked;
    const uint32_t qpn = *nic.CreateQp(pd, init);
    absl::StatusOr<QpAttr> a = nic.QueryQp(qpn);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->cap.max_send_sge, c.sge) << c.asked.max_send_sge;
    EXPECT_EQ(a->cap.max_inline_data, c.inline_data) << c.asked.max_send_sge;
    EXPECT_EQ(a->cap.max_recv_sge, c.asked.max_recv_sge);
    ASSERT_TRUE(nic.DestroyQp(qpn).ok());
  }
  QpInitAttr init = InitAttr(cq, cq);
  init.cap = {8, 8, 1, 1, max_inline + 1};
  EXPECT_EQ(nic.CreateQp(pd, init).status().code(),
            absl::StatusCode::kInvalidArgument);
  init.cap = {8, 8, max_sge + 1, 1, 0};
  EXPECT_EQ(nic.CreateQp(pd, init).status().code(),
            absl::StatusCode::kInvalidArgument);
  init.cap = {nic.device_attr().max_qp_wr + 1, 8, 1, 1, 0};
  EXPECT_EQ(nic.CreateQp(pd, init).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RnicSrq, DestroyIsBusyWhileAQpIsAttached) {
  Rnic nic(MakeConfig(1));
  const PdHandle pd = *nic.AllocPd();
  const CqHandle cq = *nic.CreateCq(16);
  const SrqHandle srq = *nic.CreateSrq(pd, {8, 1, 0});
  const uint32_t qpn = *nic.CreateQp(pd, InitAttr(cq, cq, srq));
  EXPECT_EQ(nic.DestroySrq(srq).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(nic.DestroyQp(qpn).ok());
  EXPECT_TRUE(nic.DestroySrq(srq).ok());
  EXPECT_EQ(nic.DestroySrq(srq).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nic.QuerySrq(srq).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nic.ModifySrq(srq, {4, 1, 0}, srq_attr_mask::kMaxWr).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(nic.PostSrqRecv(srq, {1, {}}).code(), absl::StatusCode::kNotFound);
}

TEST(RnicSrq, ModifyResizesAndQueryReports) {
  Rnic nic(MakeConfig(1));
  const PdHandle pd = *nic.AllocPd();
  const SrqHandle srq = *nic.CreateSrq(pd, {4, 2, 0});
  absl::StatusOr<SrqAttr> a = nic.QuerySrq(srq);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->max_wr, 4u);
  EXPECT_EQ(a->max_sge, 2u);
  EXPECT_EQ(a->srq_limit, 0u);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(nic.PostSrqRecv(srq, {i}).ok());
  EXPECT_EQ(nic.PostSrqRecv(srq, {9}).code(),
            absl::StatusCode::kResourceExhausted);
  // Grow, then post into the new room; cannot shrink below what is queued.
  ASSERT_TRUE(nic.ModifySrq(srq, {10, 0, 0}, srq_attr_mask::kMaxWr).ok());
  EXPECT_EQ(nic.QuerySrq(srq)->max_wr, 10u);
  EXPECT_TRUE(nic.PostSrqRecv(srq, {4}).ok());
  EXPECT_EQ(nic.ModifySrq(srq, {3, 0, 0}, srq_attr_mask::kMaxWr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.ModifySrq(srq, {nic.device_attr().max_srq_wr + 1, 0, 0},
                          srq_attr_mask::kMaxWr)
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.ModifySrq(srq, {0, 0, 0}, srq_attr_mask::kMaxWr).code(),
            absl::StatusCode::kInvalidArgument);
  // The limit may not exceed max_wr; an unknown mask bit is refused.
  EXPECT_EQ(nic.ModifySrq(srq, {0, 0, 11}, srq_attr_mask::kLimit).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic.ModifySrq(srq, {0, 0, 1}, 1u << 5).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(nic.ModifySrq(srq, {0, 0, 3}, srq_attr_mask::kLimit).ok());
  a = nic.QuerySrq(srq);
  EXPECT_EQ(a->max_wr, 10u);
  EXPECT_EQ(a->srq_limit, 3u);
}

// The armed limit fires IBV_EVENT_SRQ_LIMIT_REACHED once, when a SEND takes
// the WQE that leaves fewer than the limit queued, and disarms.
TEST(RnicSrq, LimitArmedByModifyFiresOnceWhenCountDropsBelow) {
  BackToBack net;
  ConnectOptions o;
  Endpoint ea, eb;
  ASSERT_TRUE(SetupEndpoint(net.a(), o, &ea).ok());
  eb.pd = *net.b().AllocPd();
  eb.cq = *net.b().CreateCq(64);
  eb.buf.assign(4096, 0);
  eb.key =
      *net.b().RegMr(eb.pd, eb.buf.data(), eb.buf.size(), access::kLocalWrite);
  const SrqHandle srq = *net.b().CreateSrq(eb.pd, {8, 1, 0});
  eb.qpn = *net.b().CreateQp(eb.pd, InitAttr(eb.cq, eb.cq, srq));
  ASSERT_TRUE(
      ConnectQp(net.a(), ea, net.b().config(), eb.qpn, 100, 5000, o).ok());
  ASSERT_TRUE(
      ConnectQp(net.b(), eb, net.a().config(), ea.qpn, 5000, 100, o).ok());
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(net.b().PostSrqRecv(srq, {i, {SgeOf(eb, i * 64, 64)}}).ok());
  }
  ASSERT_TRUE(net.b().ModifySrq(srq, {0, 0, 2}, srq_attr_mask::kLimit).ok());
  AsyncEvent ev;
  while (net.b().async_events().Pop(&ev)) {
  }
  auto send = [&](uint64_t id) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = WrOpcode::kSend;
    wr.sg_list = {SgeOf(ea, 0, 32)};
    ASSERT_TRUE(net.a().PostSend(ea.qpn, wr).ok());
    net.Run();
  };
  auto limit_events = [&] {
    int n = 0;
    while (net.b().async_events().Pop(&ev)) {
      if (ev.type == AsyncEventType::kSrqLimitReached) {
        EXPECT_EQ(ev.element, srq);
        ++n;
      }
    }
    return n;
  };
  send(1);  // 3 left: not below 2
  EXPECT_EQ(limit_events(), 0);
  EXPECT_EQ(net.b().QuerySrq(srq)->srq_limit, 2u);
  send(2);  // 2 left: not below 2
  EXPECT_EQ(limit_events(), 0);
  send(3);  // 1 left: below
  EXPECT_EQ(limit_events(), 1);
  EXPECT_EQ(net.b().QuerySrq(srq)->srq_limit, 0u);  // disarmed
  send(4);
  EXPECT_EQ(limit_events(), 0);
  EXPECT_EQ(Poll(net.b(), eb.cq).size(), 4u);
  // Re-armed above the count: the next take fires again.
  ASSERT_TRUE(net.b().PostSrqRecv(srq, {7, {SgeOf(eb, 0, 64)}}).ok());
  ASSERT_TRUE(net.b().PostSrqRecv(srq, {8, {SgeOf(eb, 64, 64)}}).ok());
  ASSERT_TRUE(net.b().ModifySrq(srq, {0, 0, 8}, srq_attr_mask::kLimit).ok());
  send(5);
  EXPECT_EQ(limit_events(), 1);
}

// Receive completions say whether the SEND asked for a solicited event (the
// CQ's own solicited-only arm is covered in queues_test).
TEST(RnicSolicited, ReceiveCompletionCarriesTheSeBit) {
  BackToBack net;
  Pair p = Connect(net);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        net.b().PostRecv(p.eb.qpn, {i, {SgeOf(p.eb, i * 2048, 2048)}}).ok());
  }
  auto send = [&](uint64_t id, uint32_t flags, WrOpcode op) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.sg_list = {SgeOf(p.ea, 0, 2000)};  // two packets: SE on the last
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
    net.Run();
  };
  send(1, 0, WrOpcode::kSend);
  send(2, send_flags::kSolicited, WrOpcode::kSend);
  send(3, send_flags::kSolicited, WrOpcode::kSendWithImm);
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 3u);
  for (const WorkCompletion& wc : rc) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess);
    EXPECT_EQ(wc.byte_len, 2000u);
  }
  EXPECT_FALSE(rc[0].solicited);
  EXPECT_TRUE(rc[1].solicited);
  EXPECT_TRUE(rc[2].solicited);
  EXPECT_EQ(rc[2].opcode, WcOpcode::kRecv);
  // Send completions are never solicited.
  for (const WorkCompletion& wc : Poll(net.a(), p.ea.cq)) {
    EXPECT_FALSE(wc.solicited);
  }
  // Only the frame that ends the message carries SE.
  int se = 0;
  for (const WireFrame* f : net.Frames(0)) se += f->parsed.hdr.bth.se;
  EXPECT_EQ(se, 2);
}

}  // namespace
}  // namespace rocemu::nic::testing
