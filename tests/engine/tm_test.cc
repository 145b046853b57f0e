// Tag matching back to back: B's RC QP takes its receives from a
// tag-matching SRQ; A sends TMH-prefixed SENDs (eager, rendezvous, no-tag)
// as an MPI library would. Checks the matching order, the phase rule for
// unexpected messages, the rendezvous READ and FIN, and the list
// operations' completions and errors.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/tag_matching_header.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;
using protocol::TmhOp;

// B: a TM SRQ (its CQ takes receives and list operations) and an RC QP on
// it whose application send queue is empty, as pyverbs' test makes it.
struct TmSide {
  Endpoint e;  // e.cq is the SRQ's CQ
  SrqHandle srq = 0;
};

TmSide MakeTmSide(Rnic& nic, uint32_t tags = 8) {
  TmSide s;
  s.e.pd = *nic.AllocPd();
  s.e.cq = *nic.CreateCq(256);
  absl::StatusOr<SrqHandle> srq =
      nic.CreateTmSrq(s.e.pd, s.e.cq, {16, 1, 0}, tags, 8);
  EXPECT_TRUE(srq.ok()) << srq.status();
  s.srq = srq.ok() ? *srq : 0;
  QpInitAttr init;
  init.qp_type = QpType::kRc;
  init.send_cq = s.e.cq;
  init.recv_cq = s.e.cq;
  init.has_srq = true;
  init.srq = s.srq;
  init.cap = {0, 0, 0, 0, 0};
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(s.e.pd, init);
  EXPECT_TRUE(qpn.ok()) << qpn.status();
  s.e.qpn = qpn.ok() ? *qpn : 0;
  s.e.buf.assign(1 << 16, 0);
  s.e.key = *nic.RegMr(
      s.e.pd, s.e.buf.data(), s.e.buf.size(),
      access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead);
  return s;
}

struct Net {
  BackToBack net;
  Endpoint a;
  TmSide b;
  Net() {
    EXPECT_TRUE(SetupEndpoint(net.a(), ConnectOptions{}, &a).ok());
    b = MakeTmSide(net.b());
    Connect();
  }
  // Both QPs from RESET to RTS towards each other.
  void Connect() {
    const ConnectOptions o;
    EXPECT_TRUE(
        ConnectQp(net.a(), a, net.b().config(), b.e.qpn, 100, 900, o).ok());
    EXPECT_TRUE(
        ConnectQp(net.b(), b.e, net.a().config(), a.qpn, 900, 100, o).ok());
  }
  // A rendezvous request for `len` bytes A filled at 16384, with an
  // ordinary receive posted on A (wr_id 5, at 32768) for the FIN.
  void Rendezvous(uint64_t tag, uint32_t app_ctx, uint32_t len) {
    Fill(a.buf, 16384, len, static_cast<uint8_t>(len));
    const protocol::Rvh rvh{Va(a, 16384), a.key, len};
    ASSERT_TRUE(net.a().PostRecv(a.qpn, {5, {SgeOf(a, 32768, 64)}}).ok());
    Send(TmhOp::kRndv, tag, app_ctx, 0, 0, &rvh);
  }
  // An ordinary SRQ buffer of B at `off`.
  void PostSrq(uint64_t id, size_t off, uint32_t len = 4096) {
    ASSERT_TRUE(net.b().PostSrqRecv(b.srq, {id, {SgeOf(b.e, off, len)}}).ok());
  }
  // A tagged buffer; returns its handle.
  uint32_t Add(uint64_t id, uint64_t tag, uint64_t mask, size_t off,
               uint32_t len = 4096, uint32_t flags = tm_op_flags::kSignaled,
               uint32_t unexpected_cnt = 0) {
    TmOp op;
    op.wr_id = 1000 + id;
    op.opcode = TmOpcode::kAdd;
    op.flags = flags;
    op.unexpected_cnt = unexpected_cnt;
    op.add = {id, tag, mask, SgeOf(b.e, off, len), true};
    absl::StatusOr<uint32_t> h = net.b().PostSrqOp(b.srq, op);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *h : ~0u;
  }
  // A SEND from A of TMH (+ RVH) + `body` bytes written at A's `off`.
  void Send(TmhOp op, uint64_t tag, uint32_t app_ctx, size_t off, uint32_t body,
            const protocol::Rvh* rvh = nullptr) {
    protocol::Tmh tmh{op, app_ctx, tag};
    uint8_t hdr[32];
    protocol::WriteTmhRvh(tmh, rvh ? *rvh : protocol::Rvh{}, hdr);
    const uint32_t hlen = rvh ? 32 : 16;
    std::memcpy(a.buf.data() + off, hdr, hlen);
    Fill(a.buf, off + hlen, body, static_cast<uint8_t>(tag));
    SendWr wr;
    wr.wr_id = tag;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(a, off, hlen + body)};
    ASSERT_TRUE(net.a().PostSend(a.qpn, wr).ok());
  }
  std::vector<WorkCompletion> PollB() { return Poll(net.b(), b.e.cq); }
};

TEST(TmTest, EagerMatchesTheOldestBufferAndSkipsTheTmh) {
  Net n;
  n.PostSrq(7, 32768);
  const uint32_t h1 = n.Add(1, 0x05, 0xff, 0);
  const uint32_t h2 = n.Add(2, 0x05, 0xff, 8192);
  EXPECT_NE(h1, h2);
  std::vector<WorkCompletion> adds = n.PollB();
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(adds[0].opcode, WcOpcode::kTmAdd);
  EXPECT_EQ(adds[0].wr_id, 1001u);
  EXPECT_EQ(adds[0].wc_flags & wc_flags::kTmSyncReq, 0u);

  n.Send(TmhOp::kEager, 0x305, 0xabcd, 0, 100);  // 0x305 & 0xff == 0x05
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmRecv);
  EXPECT_EQ(wc[0].wr_id, 1u);  // the older of the two
  EXPECT_EQ(wc[0].wc_flags & (wc_flags::kTmMatch | wc_flags::kTmDataValid),
            wc_flags::kTmMatch | wc_flags::kTmDataValid);
  EXPECT_EQ(wc[0].tm_tag, 0x305u);
  EXPECT_EQ(wc[0].tm_priv, 0xabcdu);
  EXPECT_EQ(wc[0].byte_len, 100u);
  EXPECT_TRUE(wc[0].tagged);
  EXPECT_EQ(std::memcmp(n.b.e.buf.data(), n.a.buf.data() + 16, 100), 0);
  // The ordinary buffer is still there; the second tagged one too.
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->size(), 1u);
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->tm()->size(), 1u);
  // It was an ordinary SEND on the wire, acknowledged.
  EXPECT_EQ(n.net.Frames(0, Opcode::kRcSendOnly).size(), 1u);
  ASSERT_EQ(Poll(n.net.a(), n.a.cq).size(), 1u);
}

TEST(TmTest, UnexpectedGoesWholeToTheSrqAndBlocksNewTagsUntilSync) {
  Net n;
  n.PostSrq(7, 32768);
  n.PostSrq(8, 40960);
  n.Add(1, 0x1, 0xffff, 0);
  n.PollB();
  n.Send(TmhOp::kEager, 0x1234, 0, 0, 50);
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmRecv);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].wc_flags, 0u);
  EXPECT_EQ(wc[0].tm_tag, 0u);
  EXPECT_FALSE(wc[0].tagged);
  EXPECT_EQ(wc[0].byte_len, 66u);  // TMH included
  EXPECT_EQ(std::memcmp(n.b.e.buf.data() + 32768, n.a.buf.data(), 66), 0);
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->tm()->hw_unexpected(), 1u);

  // Added before software counted the unexpected message: not matched.
  n.Add(2, 0x1234, 0xffff, 4096);
  std::vector<WorkCompletion> add = n.PollB();
  ASSERT_EQ(add.size(), 1u);
  EXPECT_NE(add[0].wc_flags & wc_flags::kTmSyncReq, 0u);
  n.Send(TmhOp::kEager, 0x1234, 0, 0, 50);
  n.net.Run();
  wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 8u);  // the second ordinary buffer

  // Synchronised: a buffer added now matches; the older stale one is
  // still never used.
  TmOp sync;
  sync.wr_id = 27;
  sync.opcode = TmOpcode::kSync;
  sync.flags = tm_op_flags::kSignaled | tm_op_flags::kSync;
  sync.unexpected_cnt = 2;
  ASSERT_TRUE(n.net.b().PostSrqOp(n.b.srq, sync).ok());
  wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmSync);
  EXPECT_EQ(wc[0].wc_flags & wc_flags::kTmSyncReq, 0u);
  n.Add(3, 0x1234, 0xffff, 12288);
  n.PollB();
  n.Send(TmhOp::kEager, 0x1234, 0, 0, 50);
  n.net.Run();
  wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 3u);
  EXPECT_EQ(wc[0].wc_flags & wc_flags::kTmMatch, wc_flags::kTmMatch);
}

TEST(TmTest, NoTagAndNonTmSendsAreOrdinaryReceives) {
  Net n;
  n.PostSrq(7, 32768);
  n.PostSrq(8, 40960);
  n.Add(1, 0, 0, 0);  // mask 0 matches every tag
  n.PollB();
  n.Send(TmhOp::kNoTag, 0x55, 0, 0, 10);
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmNoTag);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].byte_len, 26u);
  // A SEND shorter than a TMH is an ordinary IBV_WC_RECV.
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {SgeOf(n.a, 0, 8)};
  ASSERT_TRUE(n.net.a().PostSend(n.a.qpn, wr).ok());
  n.net.Run();
  wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].wr_id, 8u);
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->tm()->size(), 1u);  // untouched
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->tm()->hw_unexpected(), 0u);
}

TEST(TmTest, MultiPacketEagerReportsMatchThenData) {
  Net n;
  n.Add(1, 9, ~0ull, 0, 8192);
  n.PollB();
  n.Send(TmhOp::kEager, 9, 3, 0, 3000);  // MTU 1024: four packets
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wc_flags, wc_flags::kTmMatch);
  EXPECT_EQ(wc[0].tm_tag, 9u);
  EXPECT_EQ(wc[1].wc_flags, wc_flags::kTmDataValid);
  EXPECT_EQ(wc[1].byte_len, 3000u);
  EXPECT_EQ(wc[1].wr_id, 1u);
  EXPECT_EQ(std::memcmp(n.b.e.buf.data(), n.a.buf.data() + 16, 3000), 0);
}

TEST(TmTest, RendezvousReadsTheSendersBufferAndSendsFin) {
  Net n;
  n.Add(1, 0x77, ~0ull, 0, 8192);
  n.PollB();
  n.Rendezvous(0x77, 0x99, 3000);
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmRecv);
  EXPECT_EQ(wc[0].wc_flags, wc_flags::kTmMatch);
  EXPECT_EQ(wc[0].tm_tag, 0x77u);
  EXPECT_EQ(wc[0].tm_priv, 0x99u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kTmRecv);
  EXPECT_EQ(wc[1].wc_flags, wc_flags::kTmDataValid);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].wr_id, 1u);
  EXPECT_EQ(wc[1].byte_len, 3000u);
  EXPECT_EQ(std::memcmp(n.b.e.buf.data(), n.a.buf.data() + 16384, 3000), 0);
  // B issued the READ itself and answered with the FIN: TMH | RVH, FIN.
  EXPECT_EQ(n.net.Frames(1, Opcode::kRcRdmaReadRequest).size(), 1u);
  std::vector<WorkCompletion> wa = Poll(n.net.a(), n.a.cq);
  ASSERT_EQ(wa.size(), 2u);  // the RNDV SEND, the FIN's receive
  const WorkCompletion& fin = wa[0].opcode == WcOpcode::kRecv ? wa[0] : wa[1];
  EXPECT_EQ(fin.wr_id, 5u);
  EXPECT_EQ(fin.byte_len, 32u);
  const uint8_t* f = n.a.buf.data() + 32768;
  EXPECT_EQ(f[0], static_cast<uint8_t>(TmhOp::kFin));
  EXPECT_EQ(std::memcmp(f + 4, n.a.buf.data() + 4, 28), 0);  // same TMH, RVH
  // Nothing of B's application send queue was used or completed.
  EXPECT_EQ(n.net.b().GetQp(n.b.e.qpn)->sq_outstanding(), 0u);
}

TEST(TmTest, ResetKeepsTheQpsOwnSendSlots) {
  Net n;
  using namespace qp_attr;  // NOLINT
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_TRUE(n.net.b().ModifyQp(n.b.e.qpn, reset, kState).ok());
  ASSERT_TRUE(n.net.a().ModifyQp(n.a.qpn, reset, kState).ok());
  n.Connect();
  n.Add(1, 0x77, ~0ull, 0, 8192);
  n.PollB();
  n.Rendezvous(0x77, 0, 2000);
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].wc_flags, wc_flags::kTmDataValid);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(n.b.e.buf.data(), n.a.buf.data() + 16384, 2000), 0);
}

TEST(TmTest, RendezvousTooLargeForTheBufferIsLeftToSoftware) {
  Net n;
  n.Add(1, 0x77, ~0ull, 0, 100);
  n.PollB();
  const protocol::Rvh rvh{Va(n.a, 16384), n.a.key, 3000};
  n.Send(TmhOp::kRndv, 0x77, 0, 0, 0, &rvh);
  n.net.Run();
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kTmRndvIncomplete);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(std::memcmp(n.b.e.buf.data(), n.a.buf.data(), 32), 0);
  EXPECT_TRUE(n.net.Frames(1, Opcode::kRcRdmaReadRequest).empty());
  // The QP is unharmed: the request was acknowledged.
  EXPECT_EQ(n.net.b().GetQp(n.b.e.qpn)->state(), QpState::kRts);
}

TEST(TmTest, ListOperationsCompleteAndFail) {
  Net n;
  const uint32_t h = n.Add(1, 1, ~0ull, 0);
  n.PollB();
  TmOp del;
  del.wr_id = 50;
  del.opcode = TmOpcode::kDel;
  del.handle = h;
  // Unsignaled and successful: no completion.
  ASSERT_TRUE(n.net.b().PostSrqOp(n.b.srq, del).ok());
  EXPECT_TRUE(n.PollB().empty());
  EXPECT_EQ(n.net.b().GetSrq(n.b.srq)->tm()->size(), 0u);
  // Deleting it again fails, signaled or not: IBV_WC_TM_ERR.
  ASSERT_TRUE(n.net.b().PostSrqOp(n.b.srq, del).ok());
  std::vector<WorkCompletion> wc = n.PollB();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kTmDel);
  EXPECT_EQ(wc[0].status, WcStatus::kTmErr);
  // max_num_tags (8) buffers, then ENOMEM.
  for (int i = 0; i < 8; ++i) n.Add(10 + i, i, ~0ull, i * 64, 64, 0);
  TmOp add;
  add.opcode = TmOpcode::kAdd;
  add.add = {99, 99, ~0ull, SgeOf(n.b.e, 0, 8), true};
  EXPECT_EQ(n.net.b().PostSrqOp(n.b.srq, add).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Not a TM SRQ; a TM SRQ for a UC QP; limits beyond the device's.
  const SrqHandle plain = *n.net.b().CreateSrq(n.b.e.pd, {4, 1, 0});
  EXPECT_EQ(n.net.b().PostSrqOp(plain, add).status().code(),
            absl::StatusCode::kInvalidArgument);
  QpInitAttr uc;
  uc.qp_type = QpType::kUc;
  uc.send_cq = uc.recv_cq = n.b.e.cq;
  uc.has_srq = true;
  uc.srq = n.b.srq;
  EXPECT_EQ(n.net.b().CreateQp(n.b.e.pd, uc).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(
      n.net.b().CreateTmSrq(n.b.e.pd, n.b.e.cq, {4, 1, 0}, 100000, 8).ok());
  // The application may not post the RNIC's own requests.
  SendWr wr;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kTmInternal;
  EXPECT_FALSE(n.net.a().PostSend(n.a.qpn, wr).ok());
}

}  // namespace
}  // namespace rocemu::nic::testing
