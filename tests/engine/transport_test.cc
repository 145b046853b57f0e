// R_Key violations, receive-path drops (P_Key, Q_Key, opcode, state), UD
// and UC, flush on ERR and modify-QP checks through the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::NakCode;
using protocol::Opcode;

// A WRITE towards B that B must refuse; returns A's completion status and
// checks B's NAK syndrome.
WcStatus RefusedWrite(BackToBack& net, Pair& p, uint64_t va, uint32_t rkey) {
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = {SgeOf(p.ea, 0, 64)};
  wr.rdma.remote_addr = va;
  wr.rdma.rkey = rkey;
  EXPECT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  EXPECT_EQ(naks.size(), 1u);
  if (!naks.empty()) {
    EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome,
              protocol::Aeth::Nak(NakCode::kRemoteAccessError));
  }
  // The responder's QP is in error too (class C error).
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kErr);
  auto sc = Poll(net.a(), p.ea.cq);
  EXPECT_EQ(sc.size(), 1u);
  return sc.empty() ? WcStatus::kGeneralErr : sc[0].status;
}

TEST(RKeyTest, WrongKey) {
  BackToBack net;
  Pair p = Connect(net);
  EXPECT_EQ(RefusedWrite(net, p, Va(p.eb, 0), p.eb.key ^ 0x55),
            WcStatus::kRemAccessErr);
  EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state, QpState::kErr);
}

TEST(RKeyTest, OutOfBounds) {
  BackToBack net;
  Pair p = Connect(net);
  EXPECT_EQ(RefusedWrite(net, p, Va(p.eb, p.eb.buf.size() - 10), p.eb.key),
            WcStatus::kRemAccessErr);
}

TEST(RKeyTest, MissingRight) {
  BackToBack net;
  ConnectOptions o;
  o.mr_access = access::kLocalWrite | access::kRemoteRead;
  Pair p = Connect(net, o);
  EXPECT_EQ(RefusedWrite(net, p, Va(p.eb, 0), p.eb.key),
            WcStatus::kRemAccessErr);
}

TEST(RKeyTest, DeregisteredRegion) {
  BackToBack net;
  Pair p = Connect(net);
  const uint32_t key = p.eb.key;
  ASSERT_TRUE(net.b().DeregMr(key).ok());
  EXPECT_EQ(RefusedWrite(net, p, Va(p.eb, 0), key), WcStatus::kRemAccessErr);
}

TEST(RKeyTest, RegionOfAnotherPd) {
  BackToBack net;
  Pair p = Connect(net);
  absl::StatusOr<PdHandle> pd2 = net.b().AllocPd();
  ASSERT_TRUE(pd2.ok());
  std::vector<uint8_t> other(4096);
  absl::StatusOr<uint32_t> key =
      net.b().RegMr(*pd2, other.data(), other.size(),
                    access::kLocalWrite | access::kRemoteWrite);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(
      RefusedWrite(net, p, reinterpret_cast<uint64_t>(other.data()), *key),
      WcStatus::kRemAccessErr);
  EXPECT_EQ(other[0], 0);
}

// A bad L_Key fails the WR with IBV_WC_LOC_PROT_ERR before any of its
// packets leaves: checked whole up front for a message of several packets,
// by the gather for a one-packet message. The bad SGE is the second one, so
// that the first is gathered before the failure is found.
TEST(LKeyTest, BadLocalKeyFailsTheMessageBeforeAnyPacket) {
  for (QpType type : {QpType::kRc, QpType::kUc}) {
    for (uint32_t len : {64u, 3000u}) {  // 1 and 3 packets of 1024
      for (int flaw = 0; flaw < 3; ++flaw) {
        SCOPED_TRACE("type " + std::to_string(static_cast<int>(type)) +
                     " len " + std::to_string(len) + " flaw " +
                     std::to_string(flaw));
        BackToBack net;
        ConnectOptions o;
        o.type = type;
        Pair p = Connect(net, o);
        Sge bad = SgeOf(p.ea, len, len / 2);
        if (flaw == 0) bad.lkey ^= 0x55;                          // no such key
        if (flaw == 1) bad.addr = Va(p.ea, p.ea.buf.size() - 8);  // bounds
        if (flaw == 2) {  // a region of another PD
          absl::StatusOr<PdHandle> pd2 = net.a().AllocPd();
          ASSERT_TRUE(pd2.ok());
          absl::StatusOr<uint32_t> k = net.a().RegMr(
              *pd2, p.ea.buf.data(), p.ea.buf.size(), access::kLocalWrite);
          ASSERT_TRUE(k.ok());
          bad.lkey = *k;
        }
        SendWr wr = WriteWr(p, 7, len);
        wr.sg_list = {SgeOf(p.ea, 0, len - len / 2), bad};
        ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
        net.Run();
        EXPECT_TRUE(net.Frames(0).empty()) << "a packet left";
        const std::vector<WorkCompletion> wc = Poll(net.a(), p.ea.cq);
        ASSERT_EQ(wc.size(), 1u);
        EXPECT_EQ(wc[0].wr_id, 7u);
        EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
        // RC ends in ERR; UC's send queue stops in SQE (IBTA 10.3.1).
        EXPECT_EQ(net.a().QueryQp(p.ea.qpn)->qp_state,
                  type == QpType::kRc ? QpState::kErr : QpState::kSqe);
      }
    }
  }
}

// Frames for a QP that was destroyed after it carried traffic (so that the
// data path's QPN lookup cached it) are counted as rx_unknown_qp: under
// ASan, a stale pointer left by DestroyQp fails here.
TEST(QpLookupTest, DestroyedQpIsForgottenByTheDataPath) {
  BackToBack net;
  ConnectOptions o;
  o.retry_cnt = 1;
  Pair p = Connect(net, o);
  SendWr wr = WriteWr(p, 1, 64);
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  ASSERT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);

  ASSERT_TRUE(net.b().DestroyQp(p.eb.qpn).ok());
  const uint64_t unknown = net.b().QueryCounters().rx_unknown_qp;
  wr.wr_id = 2;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  // The first try and one retry, both dropped; A gives up.
  EXPECT_EQ(net.b().QueryCounters().rx_unknown_qp, unknown + 2);
  const std::vector<WorkCompletion> wc = Poll(net.a(), p.ea.cq);
  ASSERT_GE(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
}

std::vector<uint8_t> CraftRequest(BackToBack& net, uint32_t dest_qp,
                                  uint8_t opcode, uint16_t pkey, uint32_t psn,
                                  uint32_t qkey = 0) {
  protocol::FrameSpec spec;
  spec.net.src_mac = net.a().config().mac;
  spec.net.dst_mac = net.b().config().mac;
  spec.net.src_ip = net.a().config().gid;
  spec.net.dst_ip = net.b().config().gid;
  spec.hdr.bth.opcode = opcode;
  spec.hdr.bth.dest_qp = dest_qp;
  spec.hdr.bth.pkey = pkey;
  spec.hdr.bth.psn = psn;
  spec.hdr.deth.qkey = qkey;
  spec.hdr.deth.src_qp = 99;
  std::vector<uint8_t> buf(512);
  const uint8_t payload[16] = {1, 2, 3};
  const size_t n = protocol::BuildRoceFrame(spec, payload, buf);
  EXPECT_GT(n, 0u);
  buf.resize(n);
  return buf;
}

TEST(DropTest, PKeyMismatchIsCounted) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  const std::vector<uint8_t> before(p.eb.buf.begin(), p.eb.buf.begin() + 16);
  net.Inject(1, CraftRequest(net, p.eb.qpn, Opcode::kRcSendOnly, 0x1234, 100));
  EXPECT_EQ(net.b().QueryCounters().bad_pkey_cntr, 1u);
  // Dropped before the transport saw it: no completion, the receive
  // buffer untouched, and PSN 100 still the one expected.
  EXPECT_TRUE(Poll(net.b(), p.eb.cq).empty());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), p.eb.buf.begin()));
  // A limited-membership key with the same base still matches a full one.
  net.Inject(1, CraftRequest(net, p.eb.qpn, Opcode::kRcSendOnly, 0x7FFF, 100));
  EXPECT_EQ(net.b().QueryCounters().bad_pkey_cntr, 1u);
  const std::vector<WorkCompletion> wcs = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[0].byte_len, 16u);
  EXPECT_EQ(p.eb.buf[0], 1);
  EXPECT_EQ(p.eb.buf[2], 3);
}

TEST(DropTest, UnexpectedOpcodeForQpTypeAndState) {
  BackToBack net;
  Pair p = Connect(net);
  // A UC opcode to an RC QP, a UD opcode to an RC QP.
  net.Inject(1, CraftRequest(net, p.eb.qpn, Opcode::kUcSendOnly, 0xFFFF, 5000));
  net.Inject(1,
             CraftRequest(net, p.eb.qpn, Opcode::kUdSendOnly, 0xFFFF, 5000, 1));
  EXPECT_EQ(net.b().QueryCounters().rx_bad_opcode, 2u);
  // A request to a QP that exists but is only in INIT.
  ConnectOptions o;
  Endpoint e;
  ASSERT_TRUE(SetupEndpoint(net.b(), o, &e).ok());
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qp_access_flags = access::kRemoteWrite;
  ASSERT_TRUE(net.b()
                  .ModifyQp(e.qpn, a,
                            qp_attr::kState | qp_attr::kPkeyIndex |
                                qp_attr::kPort | qp_attr::kAccessFlags)
                  .ok());
  net.Inject(1, CraftRequest(net, e.qpn, Opcode::kRcSendOnly, 0xFFFF, 0));
  EXPECT_EQ(net.b().QueryCounters().rx_wrong_state, 1u);
  // And to a QP that does not exist.
  net.Inject(1, CraftRequest(net, 0xABCDE, Opcode::kRcSendOnly, 0xFFFF, 0));
  EXPECT_EQ(net.b().QueryCounters().rx_unknown_qp, 1u);
  // An out-of-sequence opcode (MIDDLE with no FIRST) is an invalid request.
  net.Inject(1,
             CraftRequest(net, p.eb.qpn, Opcode::kRcSendMiddle, 0xFFFF, 100));
  net.Run();
  auto naks = net.Frames(1, Opcode::kRcAcknowledge);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0]->parsed.hdr.aeth.syndrome,
            protocol::Aeth::Nak(NakCode::kInvalidRequest));
}

TEST(DropTest, BadIcrcIsCounted) {
  BackToBack net;
  Pair p = Connect(net);
  auto f = CraftRequest(net, p.eb.qpn, Opcode::kRcSendOnly, 0xFFFF, 5000);
  f[f.size() - 1] ^= 0xFF;
  net.Inject(1, f);
  EXPECT_EQ(net.b().QueryCounters().rx_icrc_encapsulated, 1u);
}

TEST(DropTest, BadIpv4HeaderChecksumUnlessTheCarrierVerifiedIt) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  auto f = CraftRequest(net, p.eb.qpn, Opcode::kRcSendOnly, 0xFFFF, 0);
  f[14 + 10] ^= 0x5A;  // the IPv4 header checksum (the ICRC masks it)
  const uint64_t pkts = net.b().QueryCounters().rcvd_pkts;
  net.Inject(1, f);
  EXPECT_EQ(net.b().QueryCounters().rx_malformed, 1u);
  EXPECT_EQ(net.b().QueryCounters().rcvd_pkts, pkts);
  // The daemon's net stack verified and dropped such a frame already; what
  // it hands over is not summed again.
  net.Inject(1, f, /*ip_checksum_good=*/true);
  EXPECT_EQ(net.b().QueryCounters().rx_malformed, 1u);
  EXPECT_EQ(net.b().QueryCounters().rcvd_pkts, pkts + 1);
}

TEST(UdTest, SendFillsTheGrhAreaAndSourceQp) {
  BackToBack net;
  AhHandle ah;
  Pair p = ConnectUd(net, &ah);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {3, {SgeOf(p.eb, 0, 1000)}}).ok());
  Fill(p.ea.buf, 0, 300, 1);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSendWithImm;
  wr.send_flags = send_flags::kSignaled;
  wr.imm_data = 5;
  wr.sg_list = {SgeOf(p.ea, 0, 300)};
  wr.ud = {ah, p.eb.qpn, 0x11111111};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto req = net.Frames(0);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->parsed.hdr.bth.opcode, Opcode::kUdSendOnlyWithImmediate);
  EXPECT_EQ(req[0]->parsed.hdr.deth.src_qp, p.ea.qpn);
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, 340u);
  EXPECT_EQ(rc[0].src_qp, p.ea.qpn);
  EXPECT_TRUE(rc[0].wc_flags & wc_flags::kGrh);
  EXPECT_EQ(rc[0].imm_data, 5u);
  // The SL field carries the packet type, as ConnectX reports it: RoCE v2
  // (UDP, bit 3) over IPv4 (2).
  EXPECT_EQ(rc[0].sl, 0xA);
  // IPv4: 20 zero bytes, then the IPv4 header (version 4, IHL 5).
  // The destination address ends the area (UCX checks it there).
  for (int i = 0; i < 20; ++i) EXPECT_EQ(p.eb.buf[i], 0) << i;
  EXPECT_EQ(p.eb.buf[20], 0x45);
  EXPECT_EQ(
      0, std::memcmp(p.eb.buf.data() + 36,
                     req[0]->bytes.data() + req[0]->parsed.l3_offset + 16, 4));
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data() + 40, p.ea.buf.data(), 300));
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);
}

TEST(UdTest, QKeyMismatchIsDroppedAndCounted) {
  BackToBack net;
  AhHandle ah;
  Pair p = ConnectUd(net, &ah);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {3, {SgeOf(p.eb, 0, 1000)}}).ok());
  SendWr wr;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {SgeOf(p.ea, 0, 10)};
  wr.ud = {ah, p.eb.qpn, 0x22222222};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  EXPECT_EQ(net.b().QueryCounters().qkey_viol_cntr, 1u);
  EXPECT_TRUE(Poll(net.b(), p.eb.cq).empty());
}

TEST(UcTest, LossDropsOnlyTheMessageItHit) {
  BackToBack net;
  ConnectOptions o;
  o.type = QpType::kUc;
  Pair p = Connect(net, o);
  Fill(p.ea.buf, 0, 6000, 3);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 4000)}}).ok());
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {2, {SgeOf(p.eb, 4000, 4000)}}).ok());
  for (int i = 0; i < 2; ++i) {
    SendWr wr;
    wr.wr_id = 10 + i;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(p.ea, i * 3000, 3000)};
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  }
  // Lose the MIDDLE of the first message.
  net.drop = [](const WireFrame& f) { return f.dir == 0 && f.index == 1; };
  net.Run();
  EXPECT_TRUE(net.Frames(1).empty());  // UC never acknowledges
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  // The second message landed in the first receive WQE (reused).
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].byte_len, 3000u);
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), p.ea.buf.data() + 3000, 3000));
  EXPECT_EQ(Poll(net.a(), p.ea.cq).size(), 2u);  // sends complete locally
}

// UC has no NAK: a request the responder cannot execute is dropped and
// counted, nothing is written, and both QPs stay in RTS for what follows.
TEST(UcTest, RefusedWriteIsDroppedAndTheQpCarriesOn) {
  BackToBack net;
  ConnectOptions o;
  o.type = QpType::kUc;
  Pair p = Connect(net, o);
  Fill(p.ea.buf, 0, 64, 7);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 64)};
  wr.rdma.remote_addr = Va(p.eb, 0);
  wr.rdma.rkey = p.eb.key ^ 0x55;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  EXPECT_TRUE(net.Frames(1).empty());  // no NAK
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->counters().rx_dropped, 1u);
  EXPECT_EQ(p.eb.buf[0], 0);
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kRts);
  ASSERT_EQ(Poll(net.a(), p.ea.cq).size(), 1u);  // completes locally

  wr.wr_id = 2;
  wr.rdma.rkey = p.eb.key;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), p.ea.buf.data(), 64));
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->counters().rx_dropped, 1u);
}

TEST(UcTest, SendWithoutReceiveWqeIsLostAndCounted) {
  BackToBack net;
  ConnectOptions o;
  o.type = QpType::kUc;
  Pair p = Connect(net, o);
  Fill(p.ea.buf, 0, 64, 9);
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {SgeOf(p.ea, 0, 64)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  EXPECT_TRUE(net.Frames(1).empty());  // no RNR NAK on UC
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->counters().out_of_buffer, 1u);
  EXPECT_EQ(net.b().GetQp(p.eb.qpn)->counters().send_rnr_err, 0u);
  EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kRts);

  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {5, {SgeOf(p.eb, 0, 64)}}).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 5u);
  EXPECT_EQ(0, std::memcmp(p.eb.buf.data(), p.ea.buf.data(), 64));
}

TEST(QpTest, ErrorFlushesOutstandingWork) {
  BackToBack net;
  Pair p = Connect(net);
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {1, {SgeOf(p.eb, 0, 64)}}).ok());
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {2, {SgeOf(p.eb, 0, 64)}}).ok());
  QpAttr a;
  a.qp_state = QpState::kErr;
  ASSERT_TRUE(net.b().ModifyQp(p.eb.qpn, a, qp_attr::kState).ok());
  auto rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(rc[1].wr_id, 2u);
  // Posting in ERR completes at once with a flush error.
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, {3, {SgeOf(p.eb, 0, 64)}}).ok());
  rc = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kWrFlushErr);
}

TEST(QpTest, InvalidModifyLeavesTheQpUnchanged) {
  BackToBack net;
  ConnectOptions o;
  Endpoint e;
  ASSERT_TRUE(SetupEndpoint(net.a(), o, &e).ok());
  QpAttr a;
  a.qp_state = QpState::kRtr;
  EXPECT_FALSE(net.a().ModifyQp(e.qpn, a, qp_attr::kState).ok());
  a.qp_state = QpState::kInit;
  a.pkey_index = 63;  // empty P_Key slot
  EXPECT_FALSE(net.a()
                   .ModifyQp(e.qpn, a,
                             qp_attr::kState | qp_attr::kPkeyIndex |
                                 qp_attr::kPort | qp_attr::kAccessFlags)
                   .ok());
  EXPECT_EQ(net.a().QueryQp(e.qpn)->qp_state, QpState::kReset);
  // Posting before RTS is refused.
  SendWr wr;
  EXPECT_FALSE(net.a().PostSend(e.qpn, wr).ok());
  // A send queue of max_send_wr entries refuses the next post.
  Pair p = Connect(net);
  for (uint32_t i = 0; i < o.max_send_wr; ++i) {
    SendWr w;
    w.opcode = WrOpcode::kRdmaWrite;
    w.rdma.remote_addr = Va(p.eb, 0);
    w.rdma.rkey = p.eb.key;
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, w).ok());
  }
  SendWr w;
  EXPECT_EQ(net.a().PostSend(p.ea.qpn, w).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace rocemu::nic::testing
