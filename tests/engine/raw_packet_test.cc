// Raw packet QPs and flow steering (nic/raw_packet.h, nic/flow_table.h):
// frames leave as the application built them, flow rules place matching
// frames whole into a raw QP's receive WQEs, and the RNIC's own RoCE
// traffic is never diverted.
#include "nic/raw_packet.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nic/flow_table.h"
#include "nic/rss.h"
#include "protocol/checksum.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::MacAddr;

constexpr uint16_t kDstPort = 5678;

// Eth | IPv4 | UDP | payload, with a valid IPv4 header checksum.
std::vector<uint8_t> UdpFrame(const MacAddr& dst, const MacAddr& src,
                              uint16_t dport, size_t payload,
                              uint8_t seed = 1) {
  std::vector<uint8_t> f(14 + 20 + 8 + payload);
  std::memcpy(f.data(), dst.data(), 6);
  std::memcpy(f.data() + 6, src.data(), 6);
  f[12] = 0x08;
  uint8_t* ip = f.data() + 14;
  const uint16_t ip_len = static_cast<uint16_t>(20 + 8 + payload);
  ip[0] = 0x45;
  ip[2] = ip_len >> 8;
  ip[3] = ip_len & 0xFF;
  ip[8] = 64;
  ip[9] = 17;
  const uint8_t sip[4] = {1, 1, 1, 1}, dip[4] = {2, 2, 2, 2};
  std::memcpy(ip + 12, sip, 4);
  std::memcpy(ip + 16, dip, 4);
  const uint16_t sum = protocol::Ipv4HeaderChecksum({ip, 20});
  ip[10] = sum >> 8;
  ip[11] = sum & 0xFF;
  uint8_t* udp = ip + 20;
  udp[0] = 1234 >> 8;
  udp[1] = 1234 & 0xFF;
  udp[2] = dport >> 8;
  udp[3] = dport & 0xFF;
  udp[4] = static_cast<uint8_t>((8 + payload) >> 8);
  udp[5] = static_cast<uint8_t>((8 + payload) & 0xFF);
  for (size_t i = 0; i < payload; ++i) {
    udp[8 + i] = static_cast<uint8_t>(seed + i);
  }
  return f;
}

// A raw packet QP in RTS with its own CQ and a 16 KiB buffer.
struct RawQp {
  PdHandle pd = 0;
  CqHandle cq = 0;
  uint32_t qpn = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 14);
  uint32_t key = 0;
};

RawQp MakeRawQp(Rnic& nic) {
  RawQp q;
  q.pd = *nic.AllocPd();
  q.cq = *nic.CreateCq(64);
  QpInitAttr init;
  init.qp_type = QpType::kRawPacket;
  init.send_cq = q.cq;
  init.recv_cq = q.cq;
  init.sq_sig_all = true;
  init.cap = {16, 16, 2, 2, 64};
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(q.pd, init);
  EXPECT_TRUE(qpn.ok()) << qpn.status();
  q.qpn = *qpn;
  q.key = *nic.RegMr(q.pd, q.buf.data(), q.buf.size(), access::kLocalWrite);
  using namespace qp_attr;  // NOLINT
  QpAttr a;
  a.port_num = 1;
  a.qp_state = QpState::kInit;
  EXPECT_TRUE(nic.ModifyQp(q.qpn, a, kState | kPort).ok());
  a.qp_state = QpState::kRtr;
  EXPECT_TRUE(nic.ModifyQp(q.qpn, a, kState).ok());
  a.qp_state = QpState::kRts;
  EXPECT_TRUE(nic.ModifyQp(q.qpn, a, kState).ok());
  return q;
}

Sge SgeAt(RawQp& q, size_t off, uint32_t len) {
  return {reinterpret_cast<uint64_t>(q.buf.data() + off), len, q.key};
}

void SendFrame(Rnic& nic, RawQp& q, const std::vector<uint8_t>& frame,
               uint64_t wr_id = 7) {
  std::memcpy(q.buf.data(), frame.data(), frame.size());
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {SgeAt(q, 0, static_cast<uint32_t>(frame.size()))};
  ASSERT_TRUE(nic.PostSend(q.qpn, wr).ok());
}

void PostRecv(Rnic& nic, RawQp& q, uint32_t len, uint64_t wr_id = 9) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = {SgeAt(q, 8192, len)};
  ASSERT_TRUE(nic.PostRecv(q.qpn, wr).ok());
}

template <size_t N>
void SetKey(FlowRule& r, uint32_t off, const uint8_t (&v)[N]) {
  for (size_t i = 0; i < N; ++i) {
    r.value.bytes[off + i] = v[i];
    r.mask.bytes[off + i] = 0xFF;
  }
}

// Destination MAC and UDP destination port.
FlowRule MacPortRule(uint32_t qpn, const MacAddr& mac, uint16_t dport) {
  FlowRule r;
  r.qpn = qpn;
  r.layers = flow_layer::kEth | flow_layer::kIpv4 | flow_layer::kUdp;
  uint8_t m[6];
  std::memcpy(m, mac.data(), 6);
  SetKey(r, flow_key::kDstMac, m);
  const uint8_t p[2] = {static_cast<uint8_t>(dport >> 8),
                        static_cast<uint8_t>(dport & 0xFF)};
  SetKey(r, flow_key::kDstPort, p);
  return r;
}

TEST(RawPacketTest, SendsTheFrameAsItIs) {
  BackToBack net;
  RawQp q = MakeRawQp(net.a());
  const auto frame =
      UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 300);
  SendFrame(net.a(), q, frame);
  net.Run();
  ASSERT_EQ(net.log().size(), 1u);
  EXPECT_EQ(net.log()[0]->bytes, frame);
  const auto wcs = Poll(net.a(), q.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wcs[0].wr_id, 7u);
  EXPECT_EQ(net.a().GetQp(q.qpn)->counters().sent_pkts, 1u);
  // B has no rule: the frame is what it always was, not RoCE.
  EXPECT_EQ(net.b().reason_counters()[DropReason::kNotRoce], 1u);
}

TEST(RawPacketTest, FlowRuleSteersMatchingFramesWhole) {
  BackToBack net;
  RawQp tx = MakeRawQp(net.a());
  RawQp rx = MakeRawQp(net.b());
  ASSERT_TRUE(
      net.b()
          .CreateFlow(MacPortRule(rx.qpn, net.b().config().mac, kDstPort))
          .ok());
  PostRecv(net.b(), rx, 2048);
  PostRecv(net.b(), rx, 2048, 10);
  const auto hit =
      UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 200, 3);
  const auto other_port =
      UdpFrame(net.b().config().mac, net.a().config().mac, 9999, 200);
  SendFrame(net.a(), tx, other_port, 1);
  net.Run();
  SendFrame(net.a(), tx, hit, 2);
  net.Run();
  const auto wcs = Poll(net.b(), rx.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wcs[0].wr_id, 9u);
  EXPECT_EQ(wcs[0].byte_len, hit.size());
  EXPECT_EQ(wcs[0].qp_num, rx.qpn);
  EXPECT_EQ(std::vector<uint8_t>(rx.buf.begin() + 8192,
                                 rx.buf.begin() + 8192 + hit.size()),
            hit);
  EXPECT_EQ(net.b().reason_counters()[DropReason::kNotRoce], 1u);
  EXPECT_EQ(net.b().GetQp(rx.qpn)->counters().rcvd_pkts, 1u);
}

TEST(RawPacketTest, RoceTrafficIsNeverDiverted) {
  BackToBack net;
  Pair p = Connect(net);
  RawQp rx = MakeRawQp(net.b());
  // A rule for every RoCEv2 frame and a catch-all: neither takes them.
  FlowRule roce;
  roce.qpn = rx.qpn;
  roce.layers = flow_layer::kUdp;
  const uint8_t port[2] = {0x12, 0xB7};  // 4791
  SetKey(roce, flow_key::kDstPort, port);
  ASSERT_TRUE(net.b().CreateFlow(roce).ok());
  FlowRule all;
  all.qpn = rx.qpn;
  all.type = FlowType::kAllDefault;
  ASSERT_TRUE(net.b().CreateFlow(all).ok());
  PostRecv(net.b(), rx, 4096);
  RecvWr rwr;
  rwr.wr_id = 55;
  rwr.sg_list = {SgeOf(p.eb, 0, 4096)};
  ASSERT_TRUE(net.b().PostRecv(p.eb.qpn, rwr).ok());
  Fill(p.ea.buf, 0, 3000, 5);
  SendWr wr;
  wr.wr_id = 44;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, 0, 3000)};
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  const auto sent = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::kSuccess);
  const auto got = Poll(net.b(), p.eb.cq);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::kSuccess);
  EXPECT_EQ(got[0].byte_len, 3000u);
  EXPECT_TRUE(
      std::equal(p.ea.buf.begin(), p.ea.buf.begin() + 3000, p.eb.buf.begin()));
  EXPECT_TRUE(Poll(net.b(), rx.cq).empty());
  // Not even one that fails to parse (a bad IPv4 header checksum).
  auto bad = UdpFrame(net.b().config().mac, net.a().config().mac, 4791, 40);
  bad[14 + 10] ^= 0xFF;
  net.Inject(1, bad);
  EXPECT_TRUE(Poll(net.b(), rx.cq).empty());
  EXPECT_EQ(net.b().reason_counters()[DropReason::kIpChecksum], 1u);
  // The catch-all does take what is not RoCE.
  RawQp tx = MakeRawQp(net.a());
  SendFrame(net.a(), tx,
            UdpFrame(net.b().config().mac, net.a().config().mac, 80, 10));
  net.Run();
  EXPECT_EQ(Poll(net.b(), rx.cq).size(), 1u);
}

TEST(RawPacketTest, NoReceiveWqeIsACountedDrop) {
  BackToBack net;
  RawQp rx = MakeRawQp(net.b());
  ASSERT_TRUE(
      net.b()
          .CreateFlow(MacPortRule(rx.qpn, net.b().config().mac, kDstPort))
          .ok());
  const auto f =
      UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 64);
  net.Inject(1, f, true);
  EXPECT_EQ(net.b().GetQp(rx.qpn)->counters().out_of_buffer, 1u);
  EXPECT_EQ(net.b().reason_counters()[DropReason::kRnr], 1u);
  EXPECT_EQ(net.b().reason_counters()[DropReason::kNotRoce], 0u);
  EXPECT_TRUE(Poll(net.b(), rx.cq).empty());
}

TEST(RawPacketTest, FrameLongerThanTheBufferCompletesInError) {
  BackToBack net;
  RawQp rx = MakeRawQp(net.b());
  ASSERT_TRUE(
      net.b()
          .CreateFlow(MacPortRule(rx.qpn, net.b().config().mac, kDstPort))
          .ok());
  PostRecv(net.b(), rx, 100, 1);
  PostRecv(net.b(), rx, 1000, 2);
  const auto f =
      UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 400);
  net.Inject(1, f, true);
  net.Inject(1, f, true);
  const auto wcs = Poll(net.b(), rx.cq);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocLenErr);
  // As a UD receive, the QP keeps working.
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].status, WcStatus::kSuccess);
  EXPECT_EQ(wcs[1].byte_len, f.size());
  EXPECT_EQ(net.b().GetQp(rx.qpn)->state(), QpState::kRts);
}

TEST(RawPacketTest, DestroyedFlowStopsDelivery) {
  BackToBack net;
  RawQp rx = MakeRawQp(net.b());
  absl::StatusOr<uint32_t> flow =
      net.b().CreateFlow(MacPortRule(rx.qpn, net.b().config().mac, kDstPort));
  ASSERT_TRUE(flow.ok());
  EXPECT_EQ(net.b().DestroyQp(rx.qpn).code(),
            absl::StatusCode::kFailedPrecondition);
  PostRecv(net.b(), rx, 1000, 1);
  PostRecv(net.b(), rx, 1000, 2);
  const auto f =
      UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 40);
  net.Inject(1, f, true);
  ASSERT_TRUE(net.b().DestroyFlow(*flow).ok());
  EXPECT_EQ(net.b().DestroyFlow(*flow).code(), absl::StatusCode::kNotFound);
  net.Inject(1, f, true);
  EXPECT_EQ(Poll(net.b(), rx.cq).size(), 1u);
  EXPECT_EQ(net.b().reason_counters()[DropReason::kNotRoce], 1u);
  EXPECT_TRUE(net.b().DestroyQp(rx.qpn).ok());
}

TEST(RawPacketTest, RulesAreCheckedWhenCreated) {
  BackToBack net;
  Pair p = Connect(net);
  FlowRule r;
  r.qpn = p.eb.qpn;
  EXPECT_EQ(net.b().CreateFlow(r).status().code(),
            absl::StatusCode::kInvalidArgument);  // an RC QP
  RawQp rx = MakeRawQp(net.b());
  r.qpn = rx.qpn;
  r.value.bytes[flow_key::kDstPort] = 1;  // outside its (empty) mask
  EXPECT_EQ(net.b().CreateFlow(r).status().code(),
            absl::StatusCode::kInvalidArgument);
  r.qpn = 0x777777;
  EXPECT_EQ(net.b().CreateFlow(r).status().code(), absl::StatusCode::kNotFound);
}

TEST(RawPacketTest, LowerPriorityValueWinsWhateverTheOrder) {
  BackToBack net;
  RawQp low = MakeRawQp(net.b());
  RawQp high = MakeRawQp(net.b());
  FlowRule r = MacPortRule(low.qpn, net.b().config().mac, kDstPort);
  r.priority = 5;
  ASSERT_TRUE(net.b().CreateFlow(r).ok());
  r.qpn = high.qpn;
  r.priority = 1;
  ASSERT_TRUE(net.b().CreateFlow(r).ok());
  PostRecv(net.b(), low, 1000);
  PostRecv(net.b(), high, 1000);
  net.Inject(1,
             UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 8),
             true);
  EXPECT_TRUE(Poll(net.b(), low.cq).empty());
  EXPECT_EQ(Poll(net.b(), high.cq).size(), 1u);
}

TEST(RawPacketTest, DefaultAndSnifferRules) {
  BackToBack net;
  RawQp normal = MakeRawQp(net.b());
  RawQp mc = MakeRawQp(net.b());
  RawQp all = MakeRawQp(net.b());
  RawQp sniff = MakeRawQp(net.b());
  ASSERT_TRUE(
      net.b()
          .CreateFlow(MacPortRule(normal.qpn, net.b().config().mac, kDstPort))
          .ok());
  FlowRule r;
  r.type = FlowType::kMcDefault;
  r.qpn = mc.qpn;
  ASSERT_TRUE(net.b().CreateFlow(r).ok());
  r.type = FlowType::kAllDefault;
  r.qpn = all.qpn;
  ASSERT_TRUE(net.b().CreateFlow(r).ok());
  r.type = FlowType::kSniffer;
  r.qpn = sniff.qpn;
  ASSERT_TRUE(net.b().CreateFlow(r).ok());
  for (RawQp* q : {&normal, &mc, &all, &sniff}) {
    for (int i = 0; i < 4; ++i) PostRecv(net.b(), *q, 1000, i);
  }
  const MacAddr group = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
  const MacAddr& self = net.b().config().mac;
  const MacAddr& peer = net.a().config().mac;
  net.Inject(1, UdpFrame(self, peer, kDstPort, 8), true);  // NORMAL
  net.Inject(1, UdpFrame(group, peer, 9, 8), true);        // MC_DEFAULT
  net.Inject(1, UdpFrame(self, peer, 9, 8), true);         // ALL_DEFAULT
  EXPECT_EQ(Poll(net.b(), normal.cq).size(), 1u);
  EXPECT_EQ(Poll(net.b(), mc.cq).size(), 1u);
  EXPECT_EQ(Poll(net.b(), all.cq).size(), 1u);
  EXPECT_EQ(Poll(net.b(), sniff.cq).size(), 3u);  // a copy of each
}

TEST(RawPacketTest, LoopbackToOwnMacAndGroupAddresses) {
  BackToBack net;
  RawQp tx = MakeRawQp(net.a());
  RawQp rx = MakeRawQp(net.a());
  const MacAddr group = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
  ASSERT_TRUE(net.a().CreateFlow(MacPortRule(rx.qpn, group, kDstPort)).ok());
  ASSERT_TRUE(
      net.a()
          .CreateFlow(MacPortRule(rx.qpn, net.a().config().mac, kDstPort))
          .ok());
  PostRecv(net.a(), rx, 1000, 1);
  PostRecv(net.a(), rx, 1000, 2);
  // To a group: a copy to the local rule and the frame to the wire.
  SendFrame(net.a(), tx, UdpFrame(group, net.a().config().mac, kDstPort, 50));
  net.Run();
  EXPECT_EQ(net.log().size(), 1u);
  // To the port's own MAC: local only.
  SendFrame(net.a(), tx,
            UdpFrame(net.a().config().mac, net.a().config().mac, kDstPort, 60));
  net.Run();
  EXPECT_EQ(net.log().size(), 1u);
  const auto wcs = Poll(net.a(), rx.cq);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].byte_len, 14u + 20 + 8 + 50);
  EXPECT_EQ(wcs[1].byte_len, 14u + 20 + 8 + 60);
  EXPECT_EQ(Poll(net.a(), tx.cq).size(), 2u);  // both sends completed
}

TEST(RawPacketTest, AMediumThatLoopsBackDeliversGroupFramesOnce) {
  RnicConfig ca = MakeConfig(1);
  ca.medium_loops_back = true;
  BackToBack net(ca, MakeConfig(2));
  RawQp tx = MakeRawQp(net.a());
  RawQp rx = MakeRawQp(net.a());
  const MacAddr group = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
  ASSERT_TRUE(net.a().CreateFlow(MacPortRule(rx.qpn, group, kDstPort)).ok());
  PostRecv(net.a(), rx, 1000, 1);
  SendFrame(net.a(), tx, UdpFrame(group, net.a().config().mac, kDstPort, 50));
  net.Run();
  ASSERT_EQ(net.log().size(), 1u);
  EXPECT_TRUE(Poll(net.a(), rx.cq).empty());  // not looped inside
  net.Inject(0, net.log()[0]->bytes, true);   // the medium returns it
  EXPECT_EQ(Poll(net.a(), rx.cq).size(), 1u);
}

TEST(RawPacketTest, FramesTooShortOrTooLongFailTheSend) {
  BackToBack net;
  RawQp q = MakeRawQp(net.a());
  SendWr wr;
  wr.wr_id = 3;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {SgeAt(q, 0, 10)};
  ASSERT_TRUE(net.a().PostSend(q.qpn, wr).ok());
  net.Run();
  auto wcs = Poll(net.a(), q.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(net.a().GetQp(q.qpn)->state(), QpState::kErr);
  EXPECT_TRUE(net.log().empty());

  RawQp big = MakeRawQp(net.a());
  wr.sg_list = {SgeAt(big, 0, 9216), SgeAt(big, 0, 100)};  // above the buffer
  ASSERT_TRUE(net.a().PostSend(big.qpn, wr).ok());
  net.Run();
  wcs = Poll(net.a(), big.cq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocLenErr);
  EXPECT_TRUE(net.log().empty());
  // A raw frame has no immediate and no remote memory.
  RawQp q3 = MakeRawQp(net.a());
  wr.opcode = WrOpcode::kSendWithImm;
  EXPECT_FALSE(net.a().PostSend(q3.qpn, wr).ok());
  wr.opcode = WrOpcode::kRdmaWrite;
  EXPECT_FALSE(net.a().PostSend(q3.qpn, wr).ok());
}

// The verification suite of Microsoft's RSS specification (the key every
// NIC ships as its default): IPv4 addresses alone, then with the ports.
TEST(RssTest, ToeplitzMatchesTheSpecificationsVectors) {
  const uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
                           0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
                           0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
                           0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
                           0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
  // 66.9.149.187:2794 -> 161.142.100.80:1766
  const uint8_t in[12] = {66,  9,  149,  187,  161,  142,
                          100, 80, 0x0a, 0xea, 0x06, 0xe6};
  EXPECT_EQ(ToeplitzHash(key, {in, 8}), 0x323e8fc2u);
  EXPECT_EQ(ToeplitzHash(key, in), 0x51ccc178u);
}

TEST(RssTest, FramesSpreadOverTheTablesWqsByHash) {
  BackToBack net;
  RawQp rss = MakeRawQp(net.b());
  std::vector<RawQp> wqs;
  RssConfig c;
  c.key.assign(40, 0);
  for (int i = 0; i < 40; ++i) c.key[i] = static_cast<uint8_t>(i * 37 + 1);
  c.fields = rx_hash::kSrcIpv4 | rx_hash::kDstIpv4;
  for (int i = 0; i < 4; ++i) {
    // A WQ: a raw QP of the RSS QP's PD.
    RawQp w;
    w.pd = rss.pd;
    w.cq = *net.b().CreateCq(64);
    QpInitAttr init;
    init.qp_type = QpType::kRawPacket;
    init.send_cq = init.recv_cq = w.cq;
    init.cap = {0, 16, 0, 1, 0};
    w.qpn = *net.b().CreateQp(w.pd, init);
    w.key =
        *net.b().RegMr(w.pd, w.buf.data(), w.buf.size(), access::kLocalWrite);
    QpAttr a;
    a.port_num = 1;
    a.qp_state = QpState::kInit;
    ASSERT_TRUE(
        net.b().ModifyQp(w.qpn, a, qp_attr::kState | qp_attr::kPort).ok());
    a.qp_state = QpState::kRtr;
    ASSERT_TRUE(net.b().ModifyQp(w.qpn, a, qp_attr::kState).ok());
    for (int k = 0; k < 16; ++k) PostRecv(net.b(), w, 1000, k);
    c.table.push_back(w.qpn);
    wqs.push_back(std::move(w));
  }
  ASSERT_TRUE(net.b().SetRss(rss.qpn, c).ok());
  ASSERT_TRUE(
      net.b()
          .CreateFlow(MacPortRule(rss.qpn, net.b().config().mac, kDstPort))
          .ok());
  // Frames with 16 source addresses: each lands on the WQ its hash names.
  std::vector<int> expect(4, 0);
  for (uint8_t i = 0; i < 16; ++i) {
    auto f = UdpFrame(net.b().config().mac, net.a().config().mac, kDstPort, 8);
    f[14 + 12] = i;  // source address 1.1.1.i ...
    f[14 + 10] = f[14 + 11] = 0;
    const uint16_t sum = protocol::Ipv4HeaderChecksum({f.data() + 14, 20});
    f[14 + 10] = sum >> 8;
    f[14 + 11] = sum & 0xFF;
    const uint8_t in[8] = {i, 1, 1, 1, 2, 2, 2, 2};
    const uint32_t h = ToeplitzHash(c.key, in);
    ++expect[h & 3];
    net.Inject(1, f, true);
  }
  int total = 0, used = 0;
  for (int w = 0; w < 4; ++w) {
    const auto wcs = Poll(net.b(), wqs[w].cq);
    EXPECT_EQ(static_cast<int>(wcs.size()), expect[w]) << "WQ " << w;
    for (const auto& wc : wcs) EXPECT_EQ(wc.qp_num, wqs[w].qpn);
    total += static_cast<int>(wcs.size());
    used += !wcs.empty();
  }
  EXPECT_EQ(total, 16);
  EXPECT_GT(used, 1);  // spread, not all on one WQ
  EXPECT_TRUE(Poll(net.b(), rss.cq).empty());
  // A WQ a table names is busy; the RSS QP's rule and then the RSS QP
  // first.
  EXPECT_EQ(net.b().DestroyQp(wqs[0].qpn).code(),
            absl::StatusCode::kFailedPrecondition);
  c.fields = 1u << 8;  // IPsec SPI: not offered
  EXPECT_EQ(net.b().SetRss(rss.qpn, c).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlowTableTest, KeysOfVlanIpv6AndTcpFrames) {
  // 802.1Q, IPv6, TCP.
  std::vector<uint8_t> f(14 + 4 + 40 + 20);
  f[0] = 0x02;
  f[12] = 0x81;
  f[14] = 0xA0;  // PCP 5
  f[15] = 0x0C;
  f[16] = 0x86;
  f[17] = 0xDD;
  uint8_t* ip = f.data() + 18;
  ip[0] = 0x60;
  ip[6] = 6;
  ip[7] = 64;
  ip[8] = 0xA0;   // source address's first byte
  ip[24] = 0xB0;  // destination's
  ip[40] = 0x04;  // source port 1234
  ip[41] = 0xD2;
  FlowKey k;
  ASSERT_TRUE(ExtractFlowKey(f, &k));
  EXPECT_EQ(k.layers, flow_layer::kEth | flow_layer::kVlan | flow_layer::kIpv6 |
                          flow_layer::kTcp);
  EXPECT_EQ(k.bytes[flow_key::kEtherType], 0x86);
  EXPECT_EQ(k.bytes[flow_key::kVlanTag], 0xA0);
  EXPECT_EQ(k.bytes[flow_key::kSrcIp], 0xA0);
  EXPECT_EQ(k.bytes[flow_key::kDstIp], 0xB0);
  EXPECT_EQ(k.bytes[flow_key::kIpProto], 6);
  EXPECT_EQ(k.bytes[flow_key::kSrcPort + 1], 0xD2);
  // A UDP rule does not match a TCP frame, even with nothing masked.
  FlowRule udp;
  udp.layers = flow_layer::kUdp;
  EXPECT_FALSE(FlowTable::Matches(udp, k));
  FlowRule tcp;
  tcp.layers = flow_layer::kTcp;
  const uint8_t sport[2] = {0x04, 0xD2};
  SetKey(tcp, flow_key::kSrcPort, sport);
  EXPECT_TRUE(FlowTable::Matches(tcp, k));
  tcp.value.bytes[flow_key::kSrcPort] = 0x05;
  EXPECT_FALSE(FlowTable::Matches(tcp, k));
  // Too short for an Ethernet header.
  EXPECT_FALSE(ExtractFlowKey(std::span<const uint8_t>(f.data(), 13), &k));
}

}  // namespace
}  // namespace rocemu::nic::testing
