// RC data movement back to back: SEND, WRITE, READ, atomics, byte-exact,
// with segmentation and ACKs checked on the wire.
#include <gtest/gtest.h>

#include <cstring>

#include "nic/psn.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

TEST(RcTest, MultiPacketSendIsSegmentedAckedAndByteExact) {
  BackToBack net;
  Pair p = Connect(net);
  const uint32_t len = 3 * 1024 + 100;
  Fill(p.ea.buf, 0, 2000, 1);
  Fill(p.ea.buf, 4000, len - 2000, 9);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {7, {SgeOf(p.eb, 100, 4096)}}).ok());
  SendWr wr;
  wr.wr_id = 42;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 2000), SgeOf(p.ea, 4000, len - 2000)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();

  // Wire: FIRST, MIDDLE, MIDDLE, LAST with consecutive PSNs from sq_psn,
  // AckReq only on LAST; one ACK for the LAST PSN.
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 4u);
  const int ops[] = {Opcode::kRcSendFirst, Opcode::kRcSendMiddle,
                     Opcode::kRcSendMiddle, Opcode::kRcSendLast};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(req[i]->parsed.hdr.bth.opcode, ops[i]);
    EXPECT_EQ(req[i]->parsed.hdr.bth.psn, 100u + i);
    EXPECT_EQ(req[i]->parsed.hdr.bth.ack_req, i == 3);
    EXPECT_EQ(req[i]->parsed.hdr.bth.dest_qp, p.eb.qpn);
    EXPECT_EQ(req[i]->parsed.payload.size(), i < 3 ? 1024u : 100u);
  }
  auto acks = net.Frames(1);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0]->parsed.hdr.bth.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(acks[0]->parsed.hdr.bth.psn, 103u);
  EXPECT_EQ(acks[0]->parsed.hdr.aeth.type(), protocol::AethType::kAck);
  EXPECT_EQ(acks[0]->parsed.hdr.aeth.msn, 1u);
  // Per-QP UDP source port in the RoCE entropy range.
  EXPECT_GE(req[0]->parsed.net.udp_src_port, 0xC000);

  // Data and completions.
  std::vector<uint8_t> expect(len);
  std::memcpy(expect.data(), p.ea.buf.data(), 2000);
  std::memcpy(expect.data() + 2000, p.ea.buf.data() + 4000, len - 2000);
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data() + 100, expect.data(), len));
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(rc[0].byte_len, len);
  EXPECT_EQ(rc[0].src_qp, p.ea.qpn);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 42u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[0].opcode, WcOpcode::kSend);
}

TEST(RcTest, SendWithImmediateAndInlineData) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  SendWr wr;
  wr.opcode = WrOpcode::kSendWithImm;
  wr.send_flags =
      send_flags::kInline | send_flags::kSignaled | send_flags::kSolicited;
  wr.imm_data = 0xA1B2C3D4;
  std::memcpy(wr.inline_data.data(), "hello world", 11);
  wr.inline_data.set_size(11);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kRcSendOnlyWithImmediate);
  EXPECT_TRUE(req[0]->parsed.hdr.bth.se);
  EXPECT_EQ(req[0]->parsed.hdr.imm, 0xA1B2C3D4u);
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), "hello world", 11));
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].byte_len, 11u);
  EXPECT_TRUE(rc[0].wc_flags & wc_flags::kWithImm);
  EXPECT_EQ(rc[0].imm_data, 0xA1B2C3D4u);
}

TEST(RcTest, WriteWithImmediatePlacesDataAndConsumesReceive) {
  BackToBack net;
  Pair p = Connect(net);
  const uint32_t len = 2500;
  Fill(p.ea.buf, 0, len, 3);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {5, {}}).ok());
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::kRdmaWriteWithImm;
  wr.send_flags = send_flags::kSignaled;
  wr.imm_data = 77;
  wr.sg_list = {SgeOf(p.ea, 0, len)};
  wr.rdma.remote_addr = Va(p.eb, 1000);
  wr.rdma.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kRcRdmaWriteFirst);
  EXPECT_EQ(req[0]->parsed.hdr.reth.dma_len, len);
  EXPECT_EQ(req[0]->parsed.hdr.reth.rkey, p.eb.key);
  EXPECT_EQ(req[1]->parsed.hdr.bth.opcode, Opcode::kRcRdmaWriteMiddle);
  EXPECT_EQ(req[2]->parsed.hdr.bth.opcode,
            Opcode::kRcRdmaWriteLastWithImmediate);
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data() + 1000, p.ea.buf.data(), len));
  EXPECT_EQ(p.eb.buf[999], 0);
  EXPECT_EQ(p.eb.buf[1000 + len], 0);
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(rc[0].imm_data, 77u);
  EXPECT_EQ(rc[0].byte_len, len);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].opcode, WcOpcode::kRdmaWrite);
}

TEST(RcTest, ReadIsServedInResponsePacketsAndByteExact) {
  BackToBack net;
  Pair p = Connect(net);
  const uint32_t len = 4 * 1024 + 1;
  Fill(p.eb.buf, 8, len, 5);
  SendWr wr;
  wr.wr_id = 3;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 1000), SgeOf(p.ea, 2000, len - 1000)};
  wr.rdma.remote_addr = Va(p.eb, 8);
  wr.rdma.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  // A SEND after the READ takes the PSN after the READ's response PSNs.
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 60000, 16)}}).ok());
  SendWr s;
  s.opcode = WrOpcode::kSend;
  s.send_flags = send_flags::kSignaled;
  s.sg_list = {SgeOf(p.ea, 50000, 16)};
  s.wr_id = 4;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, s).ok());
  net.Run();

  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kRcRdmaReadRequest);
  EXPECT_EQ(req[0]->parsed.hdr.reth.dma_len, len);
  EXPECT_EQ(req[1]->parsed.hdr.bth.psn, 105u);  // 100 + 5 response PSNs
  auto resp = net.Frames(1);
  ASSERT_GE(resp.size(), 6u);
  const int ops[] = {
      Opcode::kRcRdmaReadResponseFirst, Opcode::kRcRdmaReadResponseMiddle,
      Opcode::kRcRdmaReadResponseMiddle, Opcode::kRcRdmaReadResponseMiddle,
      Opcode::kRcRdmaReadResponseLast};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(resp[i]->parsed.hdr.bth.opcode, ops[i]);
    EXPECT_EQ(resp[i]->parsed.hdr.bth.psn, 100u + i);
  }
  EXPECT_EQ(resp[5]->parsed.hdr.bth.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(resp[5]->parsed.hdr.bth.psn, 105u);
  std::vector<uint8_t> got(len);
  std::memcpy(got.data(), p.ea.buf.data(), 1000);
  std::memcpy(got.data() + 1000, p.ea.buf.data() + 2000, len - 1000);
  EXPECT_EQ(0, std::memcmp(got.data(), p.eb.buf.data() + 8, len));
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].wr_id, 3u);
  EXPECT_EQ(sc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[1].wr_id, 4u);
}

TEST(RcTest, AtomicsReturnTheOriginalValue) {
  BackToBack net;
  Pair p = Connect(net);
  uint64_t v = 1000;
  std::memcpy(p.eb.buf.data() + 64, &v, 8);
  SendWr fa = FetchAddWr(p, 1, 64, 5);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, fa).ok());
  SendWr cs = fa;
  cs.wr_id = 2;
  cs.opcode = WrOpcode::kAtomicCmpAndSwp;
  cs.sg_list = {SgeOf(p.ea, 8, 8)};
  cs.atomic.compare_add = 1005;
  cs.atomic.swap = 77;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, cs).ok());
  SendWr cs_fail = cs;
  cs_fail.wr_id = 3;
  cs_fail.sg_list = {SgeOf(p.ea, 16, 8)};
  cs_fail.atomic.compare_add = 1;  // does not match 77: no swap
  cs_fail.atomic.swap = 99;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, cs_fail).ok());
  net.Run();
  uint64_t r0, r1, r2, now;
  std::memcpy(&r0, p.ea.buf.data(), 8);
  std::memcpy(&r1, p.ea.buf.data() + 8, 8);
  std::memcpy(&r2, p.ea.buf.data() + 16, 8);
  std::memcpy(&now, p.eb.buf.data() + 64, 8);
  EXPECT_EQ(r0, 1000u);
  EXPECT_EQ(r1, 1005u);
  EXPECT_EQ(r2, 77u);
  EXPECT_EQ(now, 77u);
  auto acks = net.Frames(1, Opcode::kRcAtomicAcknowledge);
  ASSERT_EQ(acks.size(), 3u);
  EXPECT_EQ(acks[0]->parsed.hdr.atomic_ack.orig, 1000u);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 3u);
  EXPECT_EQ(sc[0].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(sc[1].opcode, WcOpcode::kCompSwap);
  for (const auto& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess);
}

TEST(RcTest, MisalignedAtomicIsALocalError) {
  BackToBack net;
  Pair p = Connect(net);
  SendWr fa;
  fa.wr_id = 1;
  fa.opcode = WrOpcode::kAtomicFetchAndAdd;
  fa.sg_list = {SgeOf(p.ea, 0, 8)};
  fa.atomic.remote_addr = Va(p.eb, 65);
  fa.atomic.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, fa).ok());
  net.Run();
  EXPECT_TRUE(net.Frames(0).empty());
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kLocQpOpErr);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kErr);
}

TEST(RcTest, MaxRdAtomicLimitsOutstandingReads) {
  BackToBack net;
  ConnectOptions o;
  o.max_rd_atomic = 1;
  Pair p = Connect(net, o);
  for (int i = 0; i < 3; ++i) {
    SendWr rd;
    rd.wr_id = i;
    rd.opcode = WrOpcode::kRdmaRead;
    rd.send_flags = send_flags::kSignaled;
    rd.sg_list = {SgeOf(p.ea, i * 100, 100)};
    rd.rdma.remote_addr = Va(p.eb, i * 100);
    rd.rdma.rkey = p.eb.key;
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, rd).ok());
  }
  net.Run();
  // Only one READ may be in flight before its response arrives.
  int outstanding = 0, max_outstanding = 0;
  for (const auto& f : net.log()) {
    const uint8_t op = f->parsed.hdr.bth.opcode;
    if (f->dir == 0 && op == Opcode::kRcRdmaReadRequest) ++outstanding;
    if (f->dir == 1 && op == Opcode::kRcRdmaReadResponseOnly) --outstanding;
    max_outstanding = std::max(max_outstanding, outstanding);
  }
  EXPECT_EQ(max_outstanding, 1);
  EXPECT_EQ(net.Frames(0, Opcode::kRcRdmaReadRequest).size(), 3u);
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 3u);
}

// mlx5's rx_write/read/atomic_requests count request messages at the
// responder; device counters stay cumulative when QPs are destroyed.
TEST(RcTest, ResponderCountsRequestsAndCountersOutliveQps) {
  BackToBack net;
  Pair p = Connect(net);
  SendWr w;
  w.wr_id = 1;
  w.opcode = WrOpcode::kRdmaWrite;
  w.send_flags = send_flags::kSignaled;
  w.sg_list = {SgeOf(p.ea, 0, 3000)};  // three packets at MTU 1024
  w.rdma.remote_addr = Va(p.eb, 0);
  w.rdma.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, w).ok());
  SendWr r = w;
  r.wr_id = 2;
  r.opcode = WrOpcode::kRdmaRead;
  r.sg_list = {SgeOf(p.ea, 4000, 100)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, r).ok());
  const SendWr fa = FetchAddWr(p, 3, 64, 1, /*local_off=*/8000);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, fa).ok());
  net.Run();
  ASSERT_EQ(Poll(net.a(), p.ea.cq).size(), 3u);
  const DeviceCounters b = net.b().QueryCounters();
  EXPECT_EQ(b.rx_write_requests, 1u);
  EXPECT_EQ(b.rx_read_requests, 1u);
  EXPECT_EQ(b.rx_atomic_requests, 1u);
  const DeviceCounters a = net.a().QueryCounters();
  EXPECT_GE(a.sent_bytes, 3000u);
  EXPECT_EQ(a.rx_write_requests, 0u);
  ASSERT_TRUE(net.a().DestroyQp(p.ea.qpn).ok());
  ASSERT_TRUE(net.b().DestroyQp(p.eb.qpn).ok());
  EXPECT_EQ(net.a().QueryCounters().sent_bytes, a.sent_bytes);
  EXPECT_EQ(net.b().QueryCounters().rcvd_bytes, b.rcvd_bytes);
  EXPECT_EQ(net.b().QueryCounters().rx_write_requests, 1u);
}

}  // namespace
}  // namespace rocemu::nic::testing
