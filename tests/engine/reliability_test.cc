// RC reliability back to back: loss, go-back-N, timeouts, duplicates, RNR,
// and the roce-sim negative catalogue (one test each).
#include <gtest/gtest.h>

#include <cstring>

#include "nic/psn.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::AethType;
using protocol::NakCode;
using protocol::Opcode;

SendWr Read(const Pair& p, uint64_t id, uint32_t len, size_t off = 0) {
  SendWr wr = WriteWr(p, id, len, off);
  wr.opcode = WrOpcode::kRdmaRead;
  return wr;
}

TEST(ReliabilityTest, LostMiddlePacketGetsOneSequenceNakAndGoBackN) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.ea.buf, 0, 5000, 11);
  // Drop the first transmission of PSN 101 (second packet).
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index == 1; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 5000)).ok());
  net.Run();
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_GE(naks.size(), 2u);
  EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome,
            protocol::Aeth::Nak(NakCode::kPsnSequenceError));
  EXPECT_EQ(naks[0]->parsed.hdr.bth.psn, 101u);
  // One NAK for the gap, then silence until 101 arrives again.
  size_t nak_count = 0;
  for (auto* f : naks) nak_count += f->parsed.hdr.aeth.type() == AethType::kNak;
  EXPECT_EQ(nak_count, 1u);
  // Go-back-N: after the NAK the requester resends from PSN 101.
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 5u + 4u);
  EXPECT_EQ(req[5]->parsed.hdr.bth.psn, 101u);
  EXPECT_EQ(req[8]->parsed.hdr.bth.psn, 104u);
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 5000));
  EXPECT_EQ(net.b().QueryCounters().out_of_sequence, 3u);
  EXPECT_EQ(net.a().QueryCounters().rcvd_seq_err, 1u);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
}

TEST(ReliabilityTest, LocalAckTimeoutRetransmitsALostLastPacket) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.ea.buf, 0, 2048, 2);
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index == 1; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 2048)).ok());
  net.Run();
  // No NAK is possible (nothing followed the loss): the 4.096 us * 2^14
  // timer fired once and the last packet went again.
  EXPECT_GE(net.clock().Now(), LocalAckTimeoutNs(14));
  EXPECT_EQ(net.a().QueryCounters().local_ack_timeout_err, 1u);
  // Go-back-N from the oldest unacknowledged PSN: 100 was never ACKed
  // (no AckReq on it), so both packets go again.
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 4u);
  EXPECT_EQ(req[2]->parsed.hdr.bth.psn, 100u);
  EXPECT_EQ(req[3]->parsed.hdr.bth.psn, 101u);
  EXPECT_TRUE(req[3]->parsed.hdr.bth.ack_req);
  EXPECT_EQ(net.b().QueryCounters().duplicate_request, 1u);
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 2048));
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);
}

TEST(ReliabilityTest, LostAckMakesADuplicateThatIsAckedAgain) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {2, {SgeOf(p.eb, 64, 64)}}).ok());
  SendWr s;
  s.wr_id = 9;
  s.opcode = WrOpcode::kSend;
  s.send_flags = send_flags::kSignaled;
  s.sg_list = {SgeOf(p.ea, 0, 32)};
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 0; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, s).ok());
  net.Run();
  EXPECT_EQ(net.b().QueryCounters().duplicate_request, 1u);
  auto acks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1]->parsed.hdr.bth.psn, 100u);
  // The duplicate consumed no second receive WQE.
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);
}

TEST(ReliabilityTest, DuplicateAtomicIsReplayedNotReexecuted) {
  BackToBack net;
  Pair p = Connect(net);
  uint64_t v = 10;
  std::memcpy(p.eb.buf.data() + 64, &v, 8);
  const SendWr fa = FetchAddWr(p, 1, 64, 1);
  // Lose the atomic ACK: the requester times out and resends the request.
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 0; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, fa).ok());
  net.Run();
  uint64_t after, orig;
  std::memcpy(&after, p.eb.buf.data() + 64, 8);
  std::memcpy(&orig, p.ea.buf.data(), 8);
  EXPECT_EQ(after, 11u);  // added once
  EXPECT_EQ(orig, 10u);   // the saved result came back
  EXPECT_EQ(net.Frames(0, Opcode::kRcFetchAdd).size(), 2u);
  EXPECT_EQ(net.b().QueryCounters().duplicate_request, 1u);
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);
}

TEST(ReliabilityTest, DuplicateReadIsReexecuted) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.eb.buf, 0, 3000, 4);
  // Lose the READ's last response: the timeout resends the READ from the
  // missing PSN and the responder serves it again.
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 2; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Read(p, 1, 3000)).ok());
  net.Run();
  auto reqs = net.Frames(0, Opcode::kRcRdmaReadRequest);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1]->parsed.hdr.bth.psn, 102u);
  EXPECT_EQ(reqs[1]->parsed.hdr.reth.dma_len, 3000u - 2048u);
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 3000));
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
}

TEST(ReliabilityTest, RnrNakThenRetryAfterTheTimer) {
  BackToBack net;
  ConnectOptions o;
  o.min_rnr_timer = 14;  // 1.28 ms
  Pair p = Connect(net, o);
  SendWr s;
  s.wr_id = 1;
  s.opcode = WrOpcode::kSend;
  s.send_flags = send_flags::kSignaled;
  s.sg_list = {SgeOf(p.ea, 0, 16)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, s).ok());
  net.RunUntil(RnrTimerNs(14) / 2);
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome, protocol::Aeth::RnrNak(14));
  EXPECT_EQ(naks[0]->parsed.hdr.bth.psn, 100u);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  net.Run();
  EXPECT_GE(net.clock().Now(), RnrTimerNs(14));
  EXPECT_EQ(net.a().QueryCounters().rcvd_rnr_err, 1u);
  EXPECT_EQ(net.b().QueryCounters().send_rnr_err, 1u);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(Poll(net.b(), p.eb.cq).size(), 1u);
}

TEST(NegativeTest, RnrRetryLimitExceeded) {
  BackToBack net;
  ConnectOptions o;
  o.rnr_retry = 2;
  Pair p = Connect(net, o);
  SendWr s;
  s.wr_id = 1;
  s.opcode = WrOpcode::kSend;
  s.sg_list = {SgeOf(p.ea, 0, 16)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, s).ok());
  net.Run();
  EXPECT_EQ(net.Frames(0).size(), 3u);  // first try + 2 retries
  EXPECT_EQ(net.Frames(1).size(), 3u);  // three RNR NAKs
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kErr);
}

TEST(NegativeTest, RnrRetryLimitNotExceeded) {
  BackToBack net;
  ConnectOptions o;
  o.rnr_retry = 2;
  Pair p = Connect(net, o);
  SendWr s;
  s.wr_id = 1;
  s.opcode = WrOpcode::kSend;
  s.send_flags = send_flags::kSignaled;
  s.sg_list = {SgeOf(p.ea, 0, 16)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, s).ok());
  // Two RNR NAKs, then a buffer appears before the last retry.
  net.RunUntil(RnrTimerNs(1) * 3 / 2);
  ASSERT_EQ(net.Frames(1).size(), 2u);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  net.Run();
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
}

TEST(NegativeTest, RetryLimitExceeded) {
  BackToBack net;
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 8;
  Pair p = Connect(net, o);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 100)).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 100)).ok());
  net.drop = [](const WireFrame& f) { return f.dir == 0; };
  net.Run();
  // Original + retry_cnt retransmissions of both packets, then ERR.
  EXPECT_EQ(net.Frames(0).size(), 6u);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(sc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(net.a().QueryCounters().retry_exceeded_err, 1u);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kErr);
}

TEST(NegativeTest, RetryLimitNotExceeded) {
  BackToBack net;
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 8;
  Pair p = Connect(net, o);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 100)).ok());
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index < 2; };
  net.Run();
  EXPECT_EQ(net.Frames(0).size(), 3u);
  EXPECT_EQ(net.a().QueryCounters().local_ack_timeout_err, 2u);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
}

TEST(NegativeTest, ImpliedNakForReadResponseSkippingPsns) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.eb.buf, 0, 4096, 8);
  // Lose the second READ response packet: the third one skips a PSN.
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 1; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, Read(p, 1, 4096)).ok());
  net.Run();
  EXPECT_GE(net.a().QueryCounters().implied_nak_seq_err, 1u);
  auto reqs = net.Frames(0, Opcode::kRcRdmaReadRequest);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1]->parsed.hdr.bth.psn, 101u);  // retried from the gap
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 4096));
  EXPECT_LT(net.clock().Now(), LocalAckTimeoutNs(14));  // no timeout needed
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);
}

TEST(NegativeTest, GhostAckIsIgnored) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 3000)).ok());
  // Capture the first request but hold the rest: inject an ACK for a PSN
  // that was never sent.
  net.drop = [](const WireFrame& f) { return f.dir == 0; };
  net.RunUntil(1000);
  protocol::FrameSpec spec;
  spec.net.src_mac = net.b().config().mac;
  spec.net.dst_mac = net.a().config().mac;
  spec.net.src_ip = net.b().config().gid;
  spec.net.dst_ip = net.a().config().gid;
  spec.hdr.bth.opcode = Opcode::kRcAcknowledge;
  spec.hdr.bth.dest_qp = p.ea.qpn;
  spec.hdr.bth.psn = 100 + 50;
  spec.hdr.aeth.syndrome = protocol::Aeth::Ack(0x1F);
  std::vector<uint8_t> buf(256);
  const size_t n = protocol::BuildRoceFrame(spec, {}, buf);
  ASSERT_GT(n, 0u);
  net.Inject(0, {buf.data(), n});
  EXPECT_EQ(net.a().GetQp(p.ea.qpn)->counters().ghost_ack, 1u);
  EXPECT_TRUE(Poll(net.a(), p.ea.cq).empty());
  net.drop = nullptr;
  net.Run();
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
}

TEST(NegativeTest, PsnWrapsAround) {
  BackToBack net;
  ConnectOptions o;
  o.sq_psn_a = kPsnMask - 1;
  Pair p = Connect(net, o);
  Fill(p.ea.buf, 0, 5000, 6);
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index == 3; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 1, 5000)).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_GE(req.size(), 5u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.psn, kPsnMask - 1);
  EXPECT_EQ(req[1]->parsed.hdr.bth.psn, kPsnMask);
  EXPECT_EQ(req[2]->parsed.hdr.bth.psn, 0u);
  EXPECT_EQ(req[4]->parsed.hdr.bth.psn, 2u);
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 5000));
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->sq_psn, 3u);
}

}  // namespace
}  // namespace rocemu::nic::testing
