// SEND with Invalidate: the responder invalidates the region the IETH names
// once the message is placed, reports it in the receive completion, and
// refuses later remote access through the key. A key it may not invalidate
// (unknown, of another PD, an ibv_reg_mr region) is IBTA class J: the
// receive WQE fails, the QP goes to ERR and the requester gets a NAK.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Aeth;
using protocol::NakCode;
using protocol::Opcode;

// A second region of B in `pd`, with every remote right.
uint32_t RegTarget(BackToBack& net, PdHandle pd, std::vector<uint8_t>& mem,
                   bool invalidatable) {
  absl::StatusOr<uint32_t> key =
      net.b().RegMr(pd, mem.data(), mem.size(),
                    access::kLocalWrite | access::kRemoteWrite |
                        access::kRemoteRead | access::kRemoteAtomic);
  EXPECT_TRUE(key.ok()) << key.status();
  if (!key.ok()) return 0;
  if (invalidatable) {
    EXPECT_TRUE(
        net.b().mr_table().AllowRemoteInvalidate(kKernelClient, *key).ok());
  }
  return *key;
}

SendWr SendInv(const Endpoint& e, uint32_t len, uint32_t rkey) {
  SendWr wr;
  wr.wr_id = 11;
  wr.opcode = WrOpcode::kSendWithInv;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(e, 0, len)};
  wr.invalidate_rkey = rkey;
  return wr;
}

TEST(SendWithInvTest, InvalidatesTheRegionAndLaterAccessIsNaked) {
  BackToBack net;
  Pair p = Connect(net);
  std::vector<uint8_t> target(8192, 0xEE);
  const uint32_t tkey = RegTarget(net, p.eb.pd, target, true);
  const uint32_t len = 2 * 1024 + 10;  // FIRST, MIDDLE, LAST_WITH_INV
  Fill(p.ea.buf, 0, len, 5);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {4, {SgeOf(p.eb, 0, 4096)}}).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, SendInv(p.ea, len, tkey)).ok());
  net.Run();

  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kRcSendFirst);
  EXPECT_EQ(req[1]->parsed.hdr.bth.opcode, Opcode::kRcSendMiddle);
  EXPECT_EQ(req[2]->parsed.hdr.bth.opcode, Opcode::kRcSendLastWithInvalidate);
  EXPECT_EQ(req[2]->parsed.hdr.ieth_rkey, tkey);
  auto acks = net.Frames(1);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0]->parsed.hdr.aeth.type(), protocol::AethType::kAck);
  EXPECT_EQ(acks[0]->parsed.hdr.bth.psn, 102u);

  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), p.ea.buf.data(), len));
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(rc[0].byte_len, len);
  EXPECT_TRUE(rc[0].wc_flags & wc_flags::kWithInv);
  EXPECT_FALSE(rc[0].wc_flags & wc_flags::kWithImm);
  EXPECT_EQ(rc[0].invalidated_rkey, tkey);
  EXPECT_FALSE(net.b().mr_table().Find(tkey)->valid());
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[0].opcode, WcOpcode::kSend);

  // A WRITE through the invalidated key: remote access NAK, nothing written.
  SendWr w;
  w.wr_id = 12;
  w.opcode = WrOpcode::kRdmaWrite;
  w.sg_list = {SgeOf(p.ea, 0, 64)};
  w.rdma.remote_addr = reinterpret_cast<uint64_t>(target.data());
  w.rdma.rkey = tkey;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, w).ok());
  net.Run();
  acks = net.Frames(1);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1]->parsed.hdr.aeth.syndrome,
            Aeth::Nak(NakCode::kRemoteAccessError));
  EXPECT_EQ(acks[1]->parsed.hdr.bth.psn, 103u);
  EXPECT_EQ(target[0], 0xEE);
  sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 12u);
  EXPECT_EQ(sc[0].status, WcStatus::kRemAccessErr);
}

// The class J outcome on both sides; returns B's receive completion.
void ExpectRefusedInvalidate(BackToBack& net, Pair& p, uint32_t rkey) {
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {4, {SgeOf(p.eb, 0, 4096)}}).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, SendInv(p.ea, 100, rkey)).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kRcSendOnlyWithInvalidate);
  EXPECT_EQ(req[0]->parsed.hdr.ieth_rkey, rkey);
  auto naks = net.Frames(1);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0]->parsed.hdr.bth.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome,
            Aeth::Nak(NakCode::kInvalidRequest));
  EXPECT_EQ(naks[0]->parsed.hdr.bth.psn, 100u);
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 4u);
  EXPECT_EQ(rc[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kErr);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kErr);
}

TEST(SendWithInvTest, RegionNotInvalidatableIsClassJ) {
  BackToBack net;
  Pair p = Connect(net);
  std::vector<uint8_t> target(4096);
  const uint32_t tkey = RegTarget(net, p.eb.pd, target, false);
  ExpectRefusedInvalidate(net, p, tkey);
  EXPECT_TRUE(net.b().mr_table().Find(tkey)->valid());
}

TEST(SendWithInvTest, RegionOfAnotherPdIsClassJ) {
  BackToBack net;
  Pair p = Connect(net);
  absl::StatusOr<PdHandle> pd2 = net.b().AllocPd();
  ASSERT_TRUE(pd2.ok());
  std::vector<uint8_t> target(4096);
  const uint32_t tkey = RegTarget(net, *pd2, target, true);
  ExpectRefusedInvalidate(net, p, tkey);
  EXPECT_TRUE(net.b().mr_table().Find(tkey)->valid());
}

TEST(SendWithInvTest, UnknownKeyIsClassJ) {
  BackToBack net;
  Pair p = Connect(net);
  ExpectRefusedInvalidate(net, p, p.eb.key ^ 0x5500);
  EXPECT_TRUE(net.b().mr_table().Find(p.eb.key)->valid());
}

}  // namespace
}  // namespace rocemu::nic::testing
