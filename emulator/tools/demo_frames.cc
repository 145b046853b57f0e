#include "emulator/tools/demo_frames.h"

#include <array>
#include <bitset>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "protocol/cm_ip.h"
#include "protocol/cm_messages.h"
#include "protocol/mad.h"
#include "protocol/pfc.h"

namespace rocemu::tools {
namespace {

using protocol::Aeth;
using protocol::FrameKind;
using protocol::IpAddr;
using protocol::MacAddr;
using protocol::NakCode;
using protocol::NetHeaders;
using protocol::TransportHeaders;
namespace op = protocol;  // opcode names: op::kRcSendFirst ...

constexpr MacAddr kMacA = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0A};
constexpr MacAddr kMacB = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0B};
constexpr IpAddr kIp4A = protocol::Ipv4Mapped(10, 0, 0, 1);
constexpr IpAddr kIp4B = protocol::Ipv4Mapped(10, 0, 0, 2);
constexpr IpAddr kIp6A = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr IpAddr kIp6B = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
constexpr uint32_t kRkey = 0x00001234;
constexpr uint64_t kVa = 0x00007f0000001000;

// Both directions of one path between host A and host B.
struct Path {
  NetHeaders a_to_b;
  NetHeaders b_to_a;
};

Path MakePath(bool ipv6, bool vlan, uint16_t vid, uint8_t pcp) {
  Path p;
  NetHeaders& n = p.a_to_b;
  n.dst_mac = kMacB;
  n.src_mac = kMacA;
  n.has_vlan = vlan;
  n.vlan.vid = vid;
  n.vlan.pcp = pcp;
  n.ipv6 = ipv6;
  n.src_ip = ipv6 ? kIp6A : kIp4A;
  n.dst_ip = ipv6 ? kIp6B : kIp4B;
  if (ipv6) n.flow_label = 0x12345;
  p.b_to_a = n;
  std::swap(p.b_to_a.src_mac, p.b_to_a.dst_mac);
  std::swap(p.b_to_a.src_ip, p.b_to_a.dst_ip);
  if (ipv6) p.b_to_a.flow_label = 0x54321;
  return p;
}

// One connected QP pair: A's requester sends to B's QP, B answers to A's.
struct Connection {
  std::string name;
  Path path;
  uint32_t qp_a = 0;
  uint32_t qp_b = 0;
  uint32_t next_psn = 0;  // A's requester
  uint32_t msn = 0;       // B's responder: messages completed
  uint32_t xrc_srqn = 0;  // XRC: the SRQ every request's XRCETH names
};

class DemoBuilder {
 public:
  std::vector<DemoFrame> TakeFrames() { return std::move(frames_); }
  const absl::Status& status() const { return status_; }

  void Roce(NetHeaders net, const TransportHeaders& hdr, size_t payload_len,
            std::string_view where) {
    // Source-port entropy from the QP, as NICs derive it from the flow.
    net.udp_src_port =
        static_cast<uint16_t>(0xC000 | (hdr.bth.dest_qp & 0x3FFF));
    std::vector<uint8_t> payload(payload_len);
    for (size_t i = 0; i < payload_len; ++i) {
      payload[i] = static_cast<uint8_t>(i * 7 + hdr.bth.opcode);
    }
    protocol::FrameSpec spec{net, hdr};
    std::vector<uint8_t> out(
        protocol::RoceFrameLength(net, hdr.bth.opcode, payload_len));
    protocol::BuildError err = protocol::BuildError::kOk;
    const size_t len = protocol::BuildRoceFrame(spec, payload, out, &err);
    const auto& info = protocol::GetOpcodeInfo(hdr.bth.opcode);
    std::string label = absl::StrFormat("%s %s psn=%u payload=%u", where,
                                        info.name, hdr.bth.psn, payload_len);
    if (len == 0) {
      Fail(absl::StrFormat("%s: %s", label, protocol::BuildErrorName(err)));
      return;
    }
    out.resize(len);
    Add(std::move(label), FrameKind::kRoce, hdr.bth.opcode, std::move(out));
  }

  // A MAD to QP1 (UD SEND_ONLY from QP1 with the GSI Q_Key).
  void Mad(NetHeaders net, std::span<const uint8_t> mad, uint32_t psn,
           std::string_view where) {
    net.udp_src_port = 0xC001;
    TransportHeaders hdr;
    hdr.bth.opcode = op::kUdSendOnly;
    hdr.bth.dest_qp = protocol::kGsiQpn;
    hdr.bth.ack_req = true;
    hdr.bth.psn = psn;
    hdr.deth = {protocol::kGsiQkey, protocol::kGsiQpn};
    protocol::FrameSpec spec{net, hdr};
    std::vector<uint8_t> out(
        protocol::RoceFrameLength(net, hdr.bth.opcode, mad.size()));
    protocol::BuildError err = protocol::BuildError::kOk;
    const size_t len = protocol::BuildRoceFrame(spec, mad, out, &err);
    protocol::MadHeader h;
    protocol::ParseMadHeader(mad, &h);
    std::string label =
        absl::StrFormat("%s CM %s", where, protocol::CmAttrName(h.attr_id));
    if (len == 0) {
      Fail(absl::StrFormat("%s: %s", label, protocol::BuildErrorName(err)));
      return;
    }
    out.resize(len);
    Add(std::move(label), FrameKind::kRoce, hdr.bth.opcode, std::move(out));
  }

  void Cnp(const NetHeaders& net, uint32_t dest_qp, std::string_view where) {
    std::vector<uint8_t> out(protocol::RoceFrameLength(net, protocol::kCnp, 0));
    protocol::BuildError err = protocol::BuildError::kOk;
    const size_t len =
        protocol::BuildCnp(net, dest_qp, protocol::kDefaultPKey, out, &err);
    std::string label = absl::StrFormat("%s CNP", where);
    if (len == 0) {
      Fail(absl::StrFormat("%s: %s", label, protocol::BuildErrorName(err)));
      return;
    }
    out.resize(len);
    Add(std::move(label), FrameKind::kRoce, protocol::kCnp, std::move(out));
  }

  void Pfc(const MacAddr& src, const protocol::PfcInfo& pfc,
           std::string_view what) {
    std::vector<uint8_t> out(protocol::kMacControlFrameLen);
    if (protocol::BuildPfcFrame(src, pfc, out) != out.size()) {
      Fail(absl::StrFormat("PFC %s: build failed", what));
      return;
    }
    Add(absl::StrFormat("PFC %s", what), FrameKind::kPfc, 0, std::move(out));
  }

  void Pause(const MacAddr& src, uint16_t quanta) {
    std::vector<uint8_t> out(protocol::kMacControlFrameLen);
    if (protocol::BuildPauseFrame(src, quanta, out) != out.size()) {
      Fail("PAUSE: build failed");
      return;
    }
    Add(absl::StrFormat("PAUSE quanta=%u", quanta), FrameKind::kPause, 0,
        std::move(out));
  }

  // A request from A to B; returns the headers so callers can add fields.
  // `psns` is how many PSNs the request uses (a READ uses one per response).
  void Request(Connection& c, uint8_t opcode, size_t payload_len,
               TransportHeaders hdr = {}, uint32_t psns = 1) {
    hdr.bth.opcode = opcode;
    hdr.bth.dest_qp = c.qp_b;
    hdr.bth.psn = c.next_psn;
    if (protocol::GetOpcodeInfo(opcode).Has(protocol::kExtXrceth)) {
      hdr.xrceth.srqn = c.xrc_srqn;
    }
    c.next_psn = (c.next_psn + psns) & protocol::kPsnMask;
    Roce(c.path.a_to_b, hdr, payload_len, c.name);
  }

  // A response from B to A carrying an AETH (and more in `hdr`).
  void Response(Connection& c, uint8_t opcode, uint32_t psn, uint8_t syndrome,
                size_t payload_len = 0, TransportHeaders hdr = {}) {
    hdr.bth.opcode = opcode;
    hdr.bth.dest_qp = c.qp_a;
    hdr.bth.psn = psn;
    hdr.aeth.syndrome = syndrome;
    hdr.aeth.msn = c.msn;
    Roce(c.path.b_to_a, hdr, payload_len, c.name);
  }

 private:
  void Add(std::string label, FrameKind kind, uint8_t opcode,
           std::vector<uint8_t> bytes) {
    frames_.push_back(
        DemoFrame{std::move(label), kind, opcode, std::move(bytes)});
  }
  void Fail(std::string msg) {
    if (status_.ok()) status_ = absl::InternalError(std::move(msg));
  }

  std::vector<DemoFrame> frames_;
  absl::Status status_;
};

TransportHeaders WithReth(uint32_t dma_len, uint64_t va = kVa) {
  TransportHeaders h;
  h.reth = {va, kRkey, dma_len};
  return h;
}
TransportHeaders WithImm(uint32_t imm) {
  TransportHeaders h;
  h.imm = imm;
  return h;
}
TransportHeaders AckReq(TransportHeaders h = {}) {
  h.bth.ack_req = true;
  return h;
}

// Every RC opcode, a coherent requester/responder exchange; with `base`
// kXrcSendFirst the same in XRC (every request with an XRCETH).
void RcExchange(DemoBuilder& b, Connection c, uint8_t base) {
  constexpr uint32_t P = kDemoPmtu;
  // SEND FIRST/MIDDLE/LAST, pad 3 on the last packet.
  b.Request(c, base + op::kRcSendFirst, P);
  b.Request(c, base + op::kRcSendMiddle, P);
  b.Request(c, base + op::kRcSendLast, 5, AckReq());
  c.msn = 1;
  b.Response(c, base + op::kRcAcknowledge, c.next_psn - 1, Aeth::Ack(8));
  // SEND with immediate (pad 2) and with invalidate (pad 1).
  b.Request(c, base + op::kRcSendFirst, P);
  TransportHeaders imm = WithImm(0x1234ABCD);
  imm.bth.se = true;
  b.Request(c, base + op::kRcSendLastWithImmediate, 6, imm);
  b.Request(c, base + op::kRcSendFirst, P);
  TransportHeaders inv;
  inv.ieth_rkey = 0x00ABCD01;
  b.Request(c, base + op::kRcSendLastWithInvalidate, 7, inv);
  b.Request(c, base + op::kRcSendOnly, 0);  // zero-length SEND
  b.Request(c, base + op::kRcSendOnlyWithImmediate, 8, WithImm(42));
  inv.ieth_rkey = 0x00ABCD02;
  b.Request(c, base + op::kRcSendOnlyWithInvalidate, 3, AckReq(inv));
  c.msn = 6;
  b.Response(c, base + op::kRcAcknowledge, c.next_psn - 1, Aeth::Ack(16));
  // RDMA WRITE: FIRST/MIDDLE/LAST, FIRST/LAST_WITH_IMM, ONLY, ONLY_WITH_IMM.
  b.Request(c, base + op::kRcRdmaWriteFirst, P, WithReth(2 * P + 2));
  b.Request(c, base + op::kRcRdmaWriteMiddle, P);
  b.Request(c, base + op::kRcRdmaWriteLast, 2);
  b.Request(c, base + op::kRcRdmaWriteFirst, P, WithReth(P + 1, kVa + 0x1000));
  b.Request(c, base + op::kRcRdmaWriteLastWithImmediate, 1, WithImm(7));
  b.Request(c, base + op::kRcRdmaWriteOnly, 64, WithReth(64, kVa + 0x2000));
  TransportHeaders wimm = WithReth(0, kVa + 0x3000);
  wimm.imm = 0xCAFE;
  b.Request(c, base + op::kRcRdmaWriteOnlyWithImmediate, 0, AckReq(wimm));
  c.msn = 10;
  b.Response(c, base + op::kRcAcknowledge, c.next_psn - 1,
             Aeth::Ack(protocol::kAethCreditInvalid));
  // RDMA READ of 600 bytes: three responses at PMTU 256.
  const uint32_t read_psn = c.next_psn;
  b.Request(c, base + op::kRcRdmaReadRequest, 0, WithReth(600, kVa + 0x4000),
            3);
  c.msn = 11;
  b.Response(c, base + op::kRcRdmaReadResponseFirst, read_psn, Aeth::Ack(4), P);
  TransportHeaders none;
  none.bth.opcode = base + op::kRcRdmaReadResponseMiddle;
  none.bth.dest_qp = c.qp_a;
  none.bth.psn = read_psn + 1;
  b.Roce(c.path.b_to_a, none, P, c.name);
  b.Response(c, base + op::kRcRdmaReadResponseLast, read_psn + 2, Aeth::Ack(4),
             600 - 2 * P);
  // A small READ answered by one READ_RESPONSE_ONLY (pad 3).
  const uint32_t read2_psn = c.next_psn;
  b.Request(c, base + op::kRcRdmaReadRequest, 0, WithReth(13, kVa + 0x5000));
  c.msn = 12;
  b.Response(c, base + op::kRcRdmaReadResponseOnly, read2_psn, Aeth::Ack(4),
             13);
  // Atomics and their ATOMIC ACKNOWLEDGEs.
  TransportHeaders cas;
  cas.atomic = {kVa + 0x6000, kRkey, 0x1111222233334444, 0x5555666677778888};
  const uint32_t cas_psn = c.next_psn;
  b.Request(c, base + op::kRcCmpSwap, 0, cas);
  c.msn = 13;
  TransportHeaders cas_ack;
  cas_ack.atomic_ack.orig = 0x5555666677778888;
  b.Response(c, base + op::kRcAtomicAcknowledge, cas_psn, Aeth::Ack(4), 0,
             cas_ack);
  TransportHeaders fadd;
  fadd.atomic = {kVa + 0x6008, kRkey, 1, 0};
  const uint32_t fadd_psn = c.next_psn;
  b.Request(c, base + op::kRcFetchAdd, 0, fadd);
  c.msn = 14;
  TransportHeaders fadd_ack;
  fadd_ack.atomic_ack.orig = 41;
  b.Response(c, base + op::kRcAtomicAcknowledge, fadd_psn, Aeth::Ack(4), 0,
             fadd_ack);
  // Every NAK code that RC uses, and an RNR NAK (timer code 14 = 1.28 ms).
  for (NakCode code :
       {NakCode::kPsnSequenceError, NakCode::kInvalidRequest,
        NakCode::kRemoteAccessError, NakCode::kRemoteOperationalError}) {
    b.Response(c, base + op::kRcAcknowledge, c.next_psn, Aeth::Nak(code));
  }
  b.Response(c, base + op::kRcAcknowledge, c.next_psn, Aeth::RnrNak(14));
}

// RC over IPv4.
void RcIpv4(DemoBuilder& b) {
  RcExchange(
      b,
      Connection{"IPv4 RC", MakePath(false, false, 0, 0), 0x11, 0x12, 100, 0},
      0);
}

// UC over IPv4: every UC opcode.
void UcIpv4(DemoBuilder& b) {
  Connection c{"IPv4 UC", MakePath(false, false, 0, 0), 0x21, 0x22, 500, 0};
  constexpr uint32_t P = kDemoPmtu;
  b.Request(c, op::kUcSendFirst, P);
  b.Request(c, op::kUcSendMiddle, P);
  b.Request(c, op::kUcSendLast, 9);
  b.Request(c, op::kUcSendFirst, P);
  b.Request(c, op::kUcSendLastWithImmediate, 10, WithImm(0xBEEF));
  b.Request(c, op::kUcSendOnly, 11);
  b.Request(c, op::kUcSendOnlyWithImmediate, 12, WithImm(3));
  b.Request(c, op::kUcRdmaWriteFirst, P, WithReth(2 * P + 3));
  b.Request(c, op::kUcRdmaWriteMiddle, P);
  b.Request(c, op::kUcRdmaWriteLast, 3);
  b.Request(c, op::kUcRdmaWriteFirst, P, WithReth(P + 2, kVa + 0x1000));
  b.Request(c, op::kUcRdmaWriteLastWithImmediate, 2, WithImm(4));
  b.Request(c, op::kUcRdmaWriteOnly, 4, WithReth(4, kVa + 0x2000));
  TransportHeaders wimm = WithReth(17, kVa + 0x3000);
  wimm.imm = 5;
  b.Request(c, op::kUcRdmaWriteOnlyWithImmediate, 17, wimm);
}

// UD: both UD opcodes; `where` names the path.
void Ud(DemoBuilder& b, const Path& path, std::string_view where,
        uint32_t psn) {
  Connection c{std::string(where), path, 0x31, 0x32, psn, 0};
  TransportHeaders h;
  h.deth = {0x11111111, c.qp_a};
  b.Request(c, op::kUdSendOnly, 100, h);
  h.imm = 0x0D0D0D0D;
  h.bth.se = true;
  b.Request(c, op::kUdSendOnlyWithImmediate, 101, h);
}

// RC over IPv6 (and over IPv6 in a VLAN): SEND, WRITE, READ with responses.
void RcIpv6(DemoBuilder& b, const Path& path, std::string_view where,
            uint32_t qp, uint32_t psn) {
  Connection c{std::string(where), path, qp, qp + 1, psn, 0};
  b.Request(c, op::kRcSendOnly, 33, AckReq());
  c.msn = 1;
  b.Response(c, op::kRcAcknowledge, c.next_psn - 1, Aeth::Ack(30));
  b.Request(c, op::kRcRdmaWriteOnly, 20, AckReq(WithReth(20)));
  c.msn = 2;
  b.Response(c, op::kRcAcknowledge, c.next_psn - 1, Aeth::Ack(30));
  const uint32_t read_psn = c.next_psn;
  b.Request(c, op::kRcRdmaReadRequest, 0, WithReth(40, kVa + 0x100));
  c.msn = 3;
  b.Response(c, op::kRcRdmaReadResponseOnly, read_psn, Aeth::Ack(30), 40);
}

// VLAN-tagged IPv4: an RC SEND and its ACK at priority 3.
void RcVlan(DemoBuilder& b) {
  Connection c{"IPv4 VLAN 100 RC",
               MakePath(false, true, 100, 3),
               0x51,
               0x52,
               0xFFFFFE,
               0};
  // PSN wraps from 0xFFFFFF to 0 inside this exchange.
  b.Request(c, op::kRcSendOnly, 64);
  b.Request(c, op::kRcSendOnly, 65, AckReq());
  c.msn = 2;
  b.Response(c, op::kRcAcknowledge, 0xFFFFFF, Aeth::Ack(10));
  b.Request(c, op::kRcSendOnly, 66, AckReq());
  c.msn = 3;
  b.Response(c, op::kRcAcknowledge, 0, Aeth::Ack(10));
}

// Congestion signalling: an ECN-CE-marked WRITE, the CNP B sends back, and
// PFC / PAUSE frames.
void Congestion(DemoBuilder& b) {
  Connection c{
      "IPv4 ECN-CE RC", MakePath(false, false, 0, 0), 0x61, 0x62, 3000, 0};
  c.path.a_to_b.ecn = 0b11;  // CE, as a congested switch marks it
  b.Request(c, op::kRcRdmaWriteOnly, 128, AckReq(WithReth(128)));
  c.msn = 1;
  b.Response(c, op::kRcAcknowledge, 3000, Aeth::Ack(12));
  NetHeaders cnp = c.path.b_to_a;
  cnp.dscp = 48;  // ConnectX sends CNPs with DSCP 48 (cnp_dscp)
  cnp.ecn = 0;
  cnp.udp_src_port = 0xC061;
  b.Cnp(cnp, c.qp_a, "IPv4");
  NetHeaders cnp6 = MakePath(true, false, 0, 0).b_to_a;
  cnp6.dscp = 48;
  cnp6.ecn = 0;
  cnp6.udp_src_port = 0xC041;
  b.Cnp(cnp6, 0x41, "IPv6");

  protocol::PfcInfo xoff;
  xoff.enable_vector = 0x08;
  xoff.quanta[3] = 0xFFFF;
  b.Pfc(kMacB, xoff, "XOFF priority 3");
  protocol::PfcInfo two;
  two.enable_vector = 0x0C;
  two.quanta[2] = 200;
  two.quanta[3] = 100;
  b.Pfc(kMacB, two, "priorities 2 and 3");
  protocol::PfcInfo xon;
  xon.enable_vector = 0x08;
  b.Pfc(kMacB, xon, "XON priority 3");
  b.Pause(kMacB, 0xFFFF);
  b.Pause(kMacB, 0);
}

// The Communication Manager on QP1: an rdma_cm connection (REQ with the IP
// header, MRA, REP, RTU, DREQ, DREP), a refused one (REJ) and a UD service
// resolution (SIDR_REQ / SIDR_REP), every message as rocemu's CM sends it.
void CmMessages(DemoBuilder& b) {
  const Path path = MakePath(false, false, 0, 0);
  using Mad = std::array<uint8_t, protocol::kMadSize>;
  auto send = [&](bool a_to_b, uint64_t tid, const auto& msg, uint32_t psn) {
    Mad mad;
    protocol::EncodeCmMad(tid, msg, mad);
    b.Mad(a_to_b ? path.a_to_b : path.b_to_a, mad, psn, "IPv4");
  };
  constexpr uint64_t kTid = 0x0000000100001111ull;
  constexpr uint32_t kIdA = 0x00001111, kIdB = 0x00002222;
  protocol::CmReq req;
  req.local_comm_id = kIdA;
  req.service_id = protocol::IpServiceId(protocol::RdmaPortSpace::kTcp, 7174);
  req.local_ca_guid = 0x020000FFFE00000Aull;
  req.local_qpn = 0x81;
  req.responder_resources = 4;
  req.initiator_depth = 4;
  req.remote_cm_response_timeout = 20;
  req.starting_psn = 0x123456;
  req.local_cm_response_timeout = 20;
  req.retry_count = 7;
  req.pkey = 0xFFFF;
  req.path_mtu = 3;
  req.rnr_retry_count = 7;
  req.max_cm_retries = 15;
  req.primary.local_lid = protocol::kPermissiveLid;
  req.primary.remote_lid = protocol::kPermissiveLid;
  req.primary.local_gid = kIp4A;
  req.primary.remote_gid = kIp4B;
  req.primary.hop_limit = 64;
  req.primary.local_ack_timeout = 19;
  protocol::CmIpHeader ip;
  ip.src_addr = kIp4A;
  ip.dst_addr = kIp4B;
  ip.src_port = 40000;
  protocol::EncodeCmIpHeader(ip, req.private_data);
  send(true, kTid, req, 0);
  protocol::CmMra mra;
  mra.local_comm_id = kIdB;
  mra.remote_comm_id = kIdA;
  mra.service_timeout = 22;
  send(false, kTid, mra, 0);
  protocol::CmRep rep;
  rep.local_comm_id = kIdB;
  rep.remote_comm_id = kIdA;
  rep.local_qpn = 0x82;
  rep.starting_psn = 0x654321;
  rep.responder_resources = 4;
  rep.initiator_depth = 4;
  rep.target_ack_delay = 15;
  rep.rnr_retry_count = 7;
  rep.local_ca_guid = 0x020000FFFE00000Bull;
  send(false, kTid, rep, 1);
  protocol::CmRtu rtu;
  rtu.local_comm_id = kIdA;
  rtu.remote_comm_id = kIdB;
  send(true, kTid, rtu, 1);
  protocol::CmDreq dreq;
  dreq.local_comm_id = kIdA;
  dreq.remote_comm_id = kIdB;
  dreq.remote_qpn = 0x82;
  send(true, 0x0000000100001111ull, dreq, 2);
  protocol::CmDrep drep;
  drep.local_comm_id = kIdB;
  drep.remote_comm_id = kIdA;
  send(false, 0x0000000100001111ull, drep, 2);

  protocol::CmReq refused = req;
  refused.local_comm_id = kIdA + 1;
  refused.service_id = protocol::IpServiceId(protocol::RdmaPortSpace::kTcp, 9);
  send(true, kTid + 1, refused, 3);
  protocol::CmRej rej;
  rej.remote_comm_id = kIdA + 1;
  rej.message_rejected = protocol::cm_msg_response::kReq;
  rej.reason = protocol::cm_rej_reason::kInvalidServiceId;
  send(false, kTid + 1, rej, 3);

  protocol::CmSidrReq sreq;
  sreq.request_id = kIdA + 2;
  sreq.pkey = 0xFFFF;
  sreq.service_id = protocol::IpServiceId(protocol::RdmaPortSpace::kUdp, 7174);
  protocol::EncodeCmIpHeader(ip, sreq.private_data);
  send(true, kTid + 2, sreq, 4);
  protocol::CmSidrRep srep;
  srep.request_id = kIdA + 2;
  srep.qpn = 0x91;
  srep.service_id = sreq.service_id;
  srep.qkey = 0x11111111;
  send(false, kTid + 2, srep, 4);
}

// IBTA 1.5 on a connection of its own (so that oracles which predate it can
// be shown the rest without it, tests/tools/demo_oracle.sh): an ATOMIC
// WRITE (RETH + 8 bytes) and a FLUSH (FETH + RETH, global placement of a
// range), each answered by a READ_RESPONSE_ONLY without payload.
void Ibta15(DemoBuilder& b) {
  Connection c{
      kIbta15Connection, MakePath(false, false, 0, 0), 0x81, 0x82, 9000, 0};
  const uint32_t aw_psn = c.next_psn;
  b.Request(c, op::kRcAtomicWrite, 8, WithReth(8, kVa + 0x6010));
  c.msn = 1;
  b.Response(c, op::kRcRdmaReadResponseOnly, aw_psn, Aeth::Ack(4));
  TransportHeaders flush = WithReth(4096, kVa);
  flush.feth.placement_type = protocol::feth::kGlobal;
  flush.feth.selectivity_level = protocol::feth::kRange;
  const uint32_t flush_psn = c.next_psn;
  b.Request(c, op::kRcFlush, 0, flush);
  c.msn = 2;
  b.Response(c, op::kRcRdmaReadResponseOnly, flush_psn, Aeth::Ack(4));
}

// XRC (annex A14) on a connection of its own, the demo's last (oracles that
// predate it are shown the rest without it, tests/tools/demo_oracle.sh):
// RC's exchange at opcodes + 0xA0, every request naming XRC SRQ 0x000123.
void Xrc(DemoBuilder& b) {
  Connection c{
      kXrcConnection, MakePath(false, false, 0, 0), 0x91, 0x92, 300, 0};
  c.xrc_srqn = 0x000123;
  RcExchange(b, c, op::kXrcSendFirst);
}

absl::Status CheckFrames(const std::vector<DemoFrame>& frames) {
  std::bitset<256> seen;
  for (size_t i = 0; i < frames.size(); ++i) {
    const DemoFrame& f = frames[i];
    protocol::ParsedFrame p;
    const protocol::ParseError e = protocol::ParseFrame(f.bytes, &p);
    if (e != protocol::ParseError::kOk || p.kind != f.kind ||
        (f.kind == FrameKind::kRoce && p.hdr.bth.opcode != f.opcode)) {
      return absl::InternalError(
          absl::StrFormat("demo frame %u (%s) does not parse back: %s", i + 1,
                          f.label, protocol::ParseErrorName(e)));
    }
    if (f.kind == FrameKind::kRoce) seen.set(f.opcode);
  }
  std::string missing;
  for (int o = 0; o < 256; ++o) {
    const auto& info = protocol::GetOpcodeInfo(static_cast<uint8_t>(o));
    if (info.supported && !seen.test(o)) {
      absl::StrAppendFormat(&missing, " %s", info.name);
    }
  }
  if (!missing.empty()) {
    return absl::InternalError(
        absl::StrCat("demo lacks supported opcodes:", missing));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<DemoFrame>> BuildDemoFrames() {
  DemoBuilder b;
  RcIpv4(b);
  UcIpv4(b);
  Ud(b, MakePath(false, false, 0, 0), "IPv4 UD", 900);
  RcIpv6(b, MakePath(true, false, 0, 0), "IPv6 RC", 0x41, 7000);
  Ud(b, MakePath(true, false, 0, 0), "IPv6 UD", 950);
  RcVlan(b);
  RcIpv6(b, MakePath(true, true, 200, 5), "IPv6 VLAN 200 RC", 0x71, 8000);
  Congestion(b);
  CmMessages(b);
  Ibta15(b);
  Xrc(b);
  if (!b.status().ok()) return b.status();
  std::vector<DemoFrame> frames = b.TakeFrames();
  if (absl::Status s = CheckFrames(frames); !s.ok()) return s;
  return frames;
}

}  // namespace rocemu::tools
