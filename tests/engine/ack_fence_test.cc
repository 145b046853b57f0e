// Wire rules of the RC requester and responder: AckReq on long messages
// every ack_req_interval packets and on the last one, the responder's ACK
// per AckReq with the right MSN (coalesced while not yet sent), and the
// fence (a fenced WR waits for earlier READ responses).
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

TEST(AckReqTest, LongMessageAsksEveryIntervalAndIsAckedPerRequest) {
  BackToBack net;
  ConnectOptions o;
  o.buf_size = 1 << 17;
  Pair p = Connect(net, o);
  const uint32_t interval = net.a().config().ack_req_interval;
  const uint32_t npkts = interval + interval / 2 + 3;  // one mid-message ask
  const uint32_t len = npkts * 1024 - 100;
  Fill(p.ea.buf, 0, len, 7);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, len)};
  wr.rdma.remote_addr = Va(p.eb, 0);
  wr.rdma.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();

  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), npkts);
  for (uint32_t i = 0; i < npkts; ++i) {
    const bool ask = (i + 1) % interval == 0 || i + 1 == npkts;
    EXPECT_EQ(req[i]->parsed.hdr.bth.ack_req, ask) << i;
    EXPECT_EQ(req[i]->parsed.hdr.bth.psn, 100 + i);
  }
  // One ACK per AckReq: the mid-message one before the message completed
  // (MSN 0), the last one with MSN 1.
  auto acks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0]->parsed.hdr.bth.psn, 100 + interval - 1);
  EXPECT_EQ(acks[0]->parsed.hdr.aeth.msn, 0u);
  EXPECT_EQ(acks[1]->parsed.hdr.bth.psn, 100 + npkts - 1);
  EXPECT_EQ(acks[1]->parsed.hdr.aeth.msn, 1u);
  for (const WireFrame* f : acks) {
    EXPECT_EQ(f->parsed.hdr.aeth.type(), protocol::AethType::kAck);
  }
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), p.ea.buf.data(), len));
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  // A WRITE is no SEND.
  EXPECT_EQ(net.a().QueryCounters().rdma_sends, 0u);
}

TEST(AckReqTest, AcksNotYetSentCoalesceWithTheRightMsn) {
  BackToBack net;
  Pair p = Connect(net);
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {id, {SgeOf(p.eb, 0, 64)}}).ok());
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(p.ea, 0, 8)};
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  }
  net.Run();
  // Three AckReqs arrive in one burst before B transmits: one ACK covers
  // them, at the last PSN with MSN 3 (the requester completes all three).
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 3u);
  for (const WireFrame* f : req) EXPECT_TRUE(f->parsed.hdr.bth.ack_req);
  auto acks = net.Frames(1);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0]->parsed.hdr.bth.psn, 102u);
  EXPECT_EQ(acks[0]->parsed.hdr.aeth.msn, 3u);
  // The two folded into it are counted (rxe's ack_deffered).
  EXPECT_EQ(net.b().QueryCounters().ack_deferred, 2u);
  EXPECT_EQ(net.a().QueryCounters().ack_deferred, 0u);
  EXPECT_EQ(net.a().QueryCounters().rdma_sends, 3u);
  EXPECT_EQ(net.b().QueryCounters().rdma_recvs, 3u);
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 3u);
  EXPECT_EQ(Poll(net.b(), p.eb.cq).size(), 3u);
}

// Log position (global order) of the first frame matching dir/opcode.
size_t FirstAt(BackToBack& net, int dir, int opcode) {
  for (size_t i = 0; i < net.log().size(); ++i) {
    const WireFrame& f = *net.log()[i];
    if (f.dir == dir && f.parsed.hdr.bth.opcode == opcode) return i;
  }
  return SIZE_MAX;
}

// A READ, then a WRITE (fenced or not); returns whether the WRITE left
// only after the READ response arrived.
bool WriteWaitedForRead(bool fence) {
  BackToBack net;
  Pair p = Connect(net);
  Fill(p.eb.buf, 0, 512, 3);
  SendWr rd;
  rd.wr_id = 1;
  rd.opcode = WrOpcode::kRdmaRead;
  rd.send_flags = send_flags::kSignaled;
  rd.sg_list = {SgeOf(p.ea, 4096, 512)};
  rd.rdma.remote_addr = Va(p.eb, 0);
  rd.rdma.rkey = p.eb.key;
  SendWr wr;
  wr.wr_id = 2;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled | (fence ? send_flags::kFence : 0);
  wr.sg_list = {SgeOf(p.ea, 0, 64)};
  wr.rdma.remote_addr = Va(p.eb, 8192);
  wr.rdma.rkey = p.eb.key;
  EXPECT_TRUE(net.a().PostSend(p.ea.qpn, rd).ok());
  EXPECT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto sc = Poll(net.a(), p.ea.cq);
  EXPECT_EQ(sc.size(), 2u);
  for (const auto& wc : sc) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(p.ea.buf.data() + 4096, p.eb.buf.data(), 512));
  const size_t resp = FirstAt(net, 1, Opcode::kRcRdmaReadResponseOnly);
  const size_t write = FirstAt(net, 0, Opcode::kRcRdmaWriteOnly);
  EXPECT_NE(resp, SIZE_MAX);
  EXPECT_NE(write, SIZE_MAX);
  // PSNs follow post order whatever the timing.
  EXPECT_EQ(net.log()[write]->parsed.hdr.bth.psn, 101u);
  return write > resp;
}

TEST(FenceTest, FencedWriteWaitsForTheReadResponse) {
  EXPECT_TRUE(WriteWaitedForRead(true));
}

TEST(FenceTest, UnfencedWriteDoesNotWait) {
  EXPECT_FALSE(WriteWaitedForRead(false));
}

}  // namespace
}  // namespace rocemu::nic::testing
