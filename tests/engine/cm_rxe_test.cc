// rocemu's CM against the bytes Linux sends: captures/rxe_rping.pcap is a
// capture of Debian 12's rping between two Linux Soft-RoCE (rdma_rxe)
// guests (../shared/peer/run-pair.sh rping): client 10.99.0.2
// (52:54:00:12:34:02) connects to server 10.99.0.1 (52:54:00:12:34:01) on
// TCP port 7174, moves data, disconnects. The codec must read and rewrite
// every CM message of it, and a rocemu RNIC in the server's place must
// accept rxe's REQ and answer with a REP that names it correctly.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "nic/cm/cm_agent.h"
#include "nic/cm/cm_timing.h"
#include "nic/rnic.h"
#include "protocol/cm_ip.h"
#include "protocol/cm_messages.h"
#include "protocol/frame.h"
#include "protocol/mad.h"

namespace rocemu::nic {
namespace {

using protocol::MadHeader;

struct Mad {
  std::vector<uint8_t> frame;
  protocol::ParsedFrame parsed;
  MadHeader hdr;
  std::span<const uint8_t> data() const {
    return parsed.payload.subspan(protocol::kMadHeaderSize);
  }
};

std::vector<Mad> ReadMads() {
  const char* dir = std::getenv("ROCEMU_CAPTURES");
  const std::string path =
      std::string(dir != nullptr ? dir : "captures") + "/rxe_rping.pcap";
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  EXPECT_NE(p, nullptr) << path << ": " << err;
  std::vector<Mad> out;
  if (p == nullptr) return out;
  pcap_pkthdr* h;
  const u_char* bytes;
  while (pcap_next_ex(p, &h, &bytes) == 1) {
    Mad m;
    m.frame.assign(bytes, bytes + h->caplen);
    if (protocol::ParseFrame(m.frame, &m.parsed) != protocol::ParseError::kOk ||
        m.parsed.kind != protocol::FrameKind::kRoce ||
        m.parsed.hdr.bth.dest_qp != protocol::kGsiQpn) {
      continue;
    }
    EXPECT_TRUE(protocol::ParseMadHeader(m.parsed.payload, &m.hdr));
    out.push_back(std::move(m));
  }
  pcap_close(p);
  // `parsed` points into `frame`: re-parse now that the vector is final.
  for (Mad& m : out) protocol::ParseFrame(m.frame, &m.parsed);
  return out;
}

template <typename T>
T Decode(const Mad& m) {
  T msg;
  EXPECT_TRUE(protocol::ParseCm(m.data(), &msg));
  return msg;
}

// Our encoding of what we decoded is rxe's bytes, except where rxe sets
// bits the spec reserves (`reserved` masks, by CM data offset).
template <typename T>
void ExpectRewritesExactly(const Mad& m,
                           std::vector<std::pair<size_t, uint8_t>> reserved) {
  const T msg = Decode<T>(m);
  std::array<uint8_t, protocol::kMadDataSize> again;
  protocol::EncodeCm(msg, again);
  for (size_t i = 0; i < again.size(); ++i) {
    uint8_t mask = 0xFF;
    for (const auto& [at, bits] : reserved) {
      if (at == i) mask = static_cast<uint8_t>(~bits);
    }
    EXPECT_EQ(again[i] & mask, m.data()[i] & mask)
        << protocol::CmAttrName(m.hdr.attr_id) << " byte " << i;
  }
  std::array<uint8_t, protocol::kMadHeaderSize> hdr;
  protocol::EncodeMadHeader(m.hdr, hdr);
  EXPECT_TRUE(std::equal(hdr.begin(), hdr.end(), m.parsed.payload.begin()));
}

TEST(CmRxe, EveryMessageOfAnRpingDecodesAndRewrites) {
  const std::vector<Mad> mads = ReadMads();
  ASSERT_EQ(mads.size(), 5u);
  using namespace protocol::cm_attr;  // NOLINT
  const uint16_t want[] = {kReq, kRep, kRtu, kDreq, kDrep};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(mads[i].hdr.attr_id, want[i]);
    EXPECT_EQ(mads[i].hdr, protocol::CmMadHeader(want[i], mads[i].hdr.tid));
    EXPECT_EQ(mads[i].parsed.hdr.deth.qkey, protocol::kGsiQkey);
  }
  // rxe puts 0b10 in the 6 reserved bits between the flow label and the
  // packet rate of the primary path (CM data bytes 90-91).
  ExpectRewritesExactly<protocol::CmReq>(mads[0], {{90, 0x0F}, {91, 0xC0}});
  ExpectRewritesExactly<protocol::CmRep>(mads[1], {});
  ExpectRewritesExactly<protocol::CmRtu>(mads[2], {});
  ExpectRewritesExactly<protocol::CmDreq>(mads[3], {});
  ExpectRewritesExactly<protocol::CmDrep>(mads[4], {});

  const protocol::CmReq req = Decode<protocol::CmReq>(mads[0]);
  const protocol::CmRep rep = Decode<protocol::CmRep>(mads[1]);
  const protocol::CmRtu rtu = Decode<protocol::CmRtu>(mads[2]);
  const protocol::CmDreq dreq = Decode<protocol::CmDreq>(mads[3]);
  const protocol::CmDrep drep = Decode<protocol::CmDrep>(mads[4]);
  EXPECT_EQ(req.service_id,
            protocol::IpServiceId(protocol::RdmaPortSpace::kTcp, 7174));
  EXPECT_EQ(req.transport, protocol::cm_transport::kRc);
  EXPECT_EQ(req.path_mtu, 3);
  EXPECT_EQ(req.remote_cm_response_timeout, 20);
  EXPECT_EQ(req.local_cm_response_timeout, 20);
  EXPECT_EQ(req.max_cm_retries, 15);
  EXPECT_EQ(req.primary.local_lid, protocol::kPermissiveLid);
  EXPECT_EQ(req.primary.local_gid, GidFromIpv4(10, 99, 0, 2));
  EXPECT_EQ(req.primary.remote_gid, GidFromIpv4(10, 99, 0, 1));
  // The local ACK timeout rocemu computes for rxe's CA ACK delay and
  // rdma_cm's RoCE packet life time is the one rxe sends.
  EXPECT_EQ(req.primary.local_ack_timeout, CmAckTimeout(15, 18));
  const std::optional<protocol::CmIpHeader> ip =
      protocol::ParseCmIpHeader(req.private_data);
  ASSERT_TRUE(ip.has_value());
  EXPECT_EQ(ip->ip_version, 4);
  EXPECT_EQ(ip->src_addr, GidFromIpv4(10, 99, 0, 2));
  EXPECT_EQ(ip->dst_addr, GidFromIpv4(10, 99, 0, 1));
  EXPECT_EQ(req.local_ca_guid,
            GuidFromMac({0x52, 0x54, 0x00, 0x12, 0x34, 0x02}));
  // The exchange ties together as the CM expects.
  EXPECT_EQ(rep.remote_comm_id, req.local_comm_id);
  EXPECT_EQ(mads[1].hdr.tid, mads[0].hdr.tid);
  EXPECT_EQ(rtu.local_comm_id, req.local_comm_id);
  EXPECT_EQ(rtu.remote_comm_id, rep.local_comm_id);
  EXPECT_EQ(dreq.local_comm_id, req.local_comm_id);
  EXPECT_EQ(dreq.remote_qpn, rep.local_qpn);
  EXPECT_EQ(drep.local_comm_id, rep.local_comm_id);
  EXPECT_EQ(mads[4].hdr.tid, mads[3].hdr.tid);
}

// rocemu in the rxe server's place: rxe's REQ is accepted and answered.
TEST(CmRxe, RocemuAnswersRxesReq) {
  const std::vector<Mad> mads = ReadMads();
  ASSERT_EQ(mads.size(), 5u);
  RnicConfig cfg;
  cfg.mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x01};
  cfg.gid = GidFromIpv4(10, 99, 0, 1);
  Rnic nic(cfg);
  const PdHandle pd = *nic.AllocPd();
  const CqHandle cq = *nic.CreateCq(16);
  QpInitAttr init;
  init.send_cq = init.recv_cq = cq;
  init.cap = {16, 16, 1, 1, 0};
  const uint32_t qpn = *nic.CreateQp(pd, init);
  const CmId listener =
      *nic.cm().Listen({.service_id = protocol::IpServiceId(
                            protocol::RdmaPortSpace::kTcp, 7174)});

  const RxFrame rx{mads[0].frame.data(),
                   static_cast<uint32_t>(mads[0].frame.size())};
  nic.Receive(0, {&rx, 1}, 1000);
  CmEvent ev;
  ASSERT_TRUE(nic.cm().PollEvent(&ev));
  EXPECT_EQ(ev.type, CmEventType::kReqReceived);
  EXPECT_EQ(ev.listen_id, listener);
  EXPECT_EQ(ev.remote_qpn, 0x11u);
  EXPECT_EQ(ev.responder_resources, 1);  // rping's initiator depth
  ASSERT_TRUE(ev.ip.has_value());
  EXPECT_EQ(ev.ip->src_addr, GidFromIpv4(10, 99, 0, 2));
  EXPECT_EQ(ev.path.dmac,
            (protocol::MacAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x02}));
  CmAcceptParams acc;
  acc.qpn = qpn;
  acc.responder_resources = 1;
  acc.initiator_depth = 1;
  ASSERT_TRUE(nic.cm().Accept(ev.id, acc, 1000).ok());

  std::vector<uint8_t> buf(2048);
  TxFrame tx{buf.data(), static_cast<uint32_t>(buf.size())};
  ASSERT_EQ(nic.Transmit(0, {&tx, 1}, 1000), 1u);
  buf.resize(tx.len);
  protocol::ParsedFrame out;
  ASSERT_EQ(protocol::ParseFrame(buf, &out), protocol::ParseError::kOk);
  // rxe's REP went out the same way: 322 bytes, to the client's MAC and IP,
  // UD SEND_ONLY from QP1 to QP1.
  EXPECT_EQ(buf.size(), mads[1].frame.size());
  EXPECT_EQ(out.net.dst_mac, mads[1].parsed.net.dst_mac);
  EXPECT_EQ(out.net.src_mac, mads[1].parsed.net.src_mac);
  EXPECT_EQ(out.net.dst_ip, mads[1].parsed.net.dst_ip);
  EXPECT_EQ(out.net.src_ip, mads[1].parsed.net.src_ip);
  EXPECT_EQ(out.hdr.bth.opcode, mads[1].parsed.hdr.bth.opcode);
  EXPECT_EQ(out.hdr.bth.dest_qp, protocol::kGsiQpn);
  EXPECT_EQ(out.hdr.bth.pkey, mads[1].parsed.hdr.bth.pkey);
  EXPECT_EQ(out.hdr.deth.src_qp, protocol::kGsiQpn);
  EXPECT_EQ(out.hdr.deth.qkey, protocol::kGsiQkey);
  MadHeader h;
  ASSERT_TRUE(protocol::ParseMadHeader(out.payload, &h));
  EXPECT_EQ(h, mads[1].hdr);  // same class, method, TID, attribute
  protocol::CmRep ours;
  ASSERT_TRUE(
      protocol::ParseCm(out.payload.subspan(protocol::kMadHeaderSize), &ours));
  const protocol::CmRep theirs = Decode<protocol::CmRep>(mads[1]);
  EXPECT_EQ(ours.remote_comm_id, theirs.remote_comm_id);
  EXPECT_EQ(ours.local_qpn, qpn);
  EXPECT_EQ(ours.responder_resources, theirs.responder_resources);
  EXPECT_EQ(ours.initiator_depth, theirs.initiator_depth);
  EXPECT_EQ(ours.target_ack_delay, theirs.target_ack_delay);
  EXPECT_EQ(ours.local_ca_guid, theirs.local_ca_guid);  // EUI-64 of the MAC
  EXPECT_EQ(nic.QueryQp(qpn)->qp_state, QpState::kRtr);
  EXPECT_EQ(nic.QueryQp(qpn)->dest_qp_num, 0x11u);

  // rxe's RTU, re-addressed to our communication ID, establishes the
  // connection.
  protocol::CmRtu rtu = Decode<protocol::CmRtu>(mads[2]);
  rtu.remote_comm_id = ours.local_comm_id;
  protocol::FrameSpec spec = protocol::SpecFromParsed(mads[2].parsed);
  std::array<uint8_t, protocol::kMadSize> mad;
  protocol::EncodeCmMad(mads[2].hdr.tid, rtu, mad);
  std::vector<uint8_t> frame(2048);
  frame.resize(protocol::BuildRoceFrame(spec, mad, frame));
  const RxFrame rx_rtu{frame.data(), static_cast<uint32_t>(frame.size())};
  nic.Receive(0, {&rx_rtu, 1}, 2000);
  ASSERT_TRUE(nic.cm().PollEvent(&ev));
  EXPECT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(nic.QueryQp(qpn)->qp_state, QpState::kRts);
  EXPECT_EQ(nic.QueryQp(qpn)->sq_psn,
            Decode<protocol::CmReq>(mads[0]).starting_psn);
}

}  // namespace
}  // namespace rocemu::nic
