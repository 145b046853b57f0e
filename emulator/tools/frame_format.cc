#include "emulator/tools/frame_format.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rocemu::tools {
namespace {

using Json = nlohmann::ordered_json;
using protocol::AethType;
using protocol::FrameKind;
using protocol::OpcodeInfo;
using protocol::ParsedFrame;

std::string_view IcrcStateName(IcrcState s) {
  switch (s) {
    case IcrcState::kValid:
      return "good";
    case IcrcState::kInvalid:
      return "BAD";
    case IcrcState::kUnknown:
      return "unchecked";
    case IcrcState::kNotApplicable:
      break;
  }
  return "";
}

std::string ErrorText(const FrameReport& r) {
  if (r.truncated()) return "snaplen_truncated";
  return std::string(protocol::ParseErrorName(r.error));
}

bool HasError(const FrameReport& r) {
  return r.truncated() || r.error != protocol::ParseError::kOk;
}

// The Ethernet header and the VLAN tag, if any.
void AddEthJson(const ParsedFrame& v, Json* j) {
  (*j)["eth"] = {{"dst", FormatMac(v.net.dst_mac)},
                 {"src", FormatMac(v.net.src_mac)},
                 {"type", v.ethertype}};
  if (v.net.has_vlan) {
    (*j)["vlan"] = {{"pcp", v.net.vlan.pcp},
                    {"dei", v.net.vlan.dei},
                    {"vid", v.net.vlan.vid}};
  }
}

bool IsIpKind(FrameKind k) {
  return k == FrameKind::kRoce || k == FrameKind::kIcmpV4 ||
         k == FrameKind::kIcmpV6 || k == FrameKind::kOtherIpv4 ||
         k == FrameKind::kOtherIpv6;
}

Json IpJson(const ParsedFrame& v) {
  const auto& n = v.net;
  Json ip = {{"version", n.ipv6 ? 6 : 4},
             {"src", FormatIp(n.src_ip, n.ipv6)},
             {"dst", FormatIp(n.dst_ip, n.ipv6)},
             {"dscp", n.dscp},
             {"ecn", n.ecn},
             {"ttl", n.ttl}};
  if (n.ipv6) {
    ip["flow_label"] = n.flow_label;
  } else {
    ip["id"] = n.ip_id;
    ip["df"] = n.df;
  }
  return ip;
}

void AddRoceJson(const FrameReport& r, Json* j) {
  const ParsedFrame& v = r.view;
  const auto& h = v.hdr;
  const OpcodeInfo& op = protocol::GetOpcodeInfo(h.bth.opcode);
  (*j)["udp"] = {{"sport", v.net.udp_src_port},
                 {"dport", protocol::kRoceV2UdpPort},
                 {"checksum", v.udp_checksum}};
  (*j)["bth"] = {{"opcode", h.bth.opcode},  {"opcode_name", op.name},
                 {"se", h.bth.se},          {"m", h.bth.mig_req},
                 {"padcnt", h.bth.pad_cnt}, {"tver", h.bth.tver},
                 {"pkey", h.bth.pkey},      {"fecn", h.bth.fecn},
                 {"becn", h.bth.becn},      {"destqp", h.bth.dest_qp},
                 {"ackreq", h.bth.ack_req}, {"psn", h.bth.psn}};
  if (op.Has(protocol::kExtDeth)) {
    (*j)["deth"] = {{"qkey", h.deth.qkey}, {"src_qp", h.deth.src_qp}};
  }
  if (op.Has(protocol::kExtXrceth)) {
    (*j)["xrceth"] = {{"xrcsrq", h.xrceth.srqn}};
  }
  if (op.Has(protocol::kExtFeth)) {
    (*j)["feth"] = {{"placement_type", h.feth.placement_type},
                    {"selectivity_level", h.feth.selectivity_level}};
  }
  if (op.Has(protocol::kExtReth)) {
    (*j)["reth"] = {
        {"va", h.reth.va}, {"rkey", h.reth.rkey}, {"dma_len", h.reth.dma_len}};
  }
  if (op.Has(protocol::kExtAtomicEth)) {
    (*j)["atomiceth"] = {{"va", h.atomic.va},
                         {"rkey", h.atomic.rkey},
                         {"swap_add", h.atomic.swap_add},
                         {"compare", h.atomic.compare}};
  }
  if (op.Has(protocol::kExtAeth)) {
    Json aeth = {{"syndrome", h.aeth.syndrome},
                 {"type", AethTypeName(h.aeth.type())},
                 {"value", h.aeth.value()}};
    if (h.aeth.type() == AethType::kNak) {
      aeth["nak"] = NakCodeName(h.aeth.value());
    }
    aeth["msn"] = h.aeth.msn;
    (*j)["aeth"] = std::move(aeth);
  }
  if (op.Has(protocol::kExtAtomicAckEth)) {
    (*j)["atomicacketh"] = {{"orig", h.atomic_ack.orig}};
  }
  if (op.Has(protocol::kExtImmDt)) (*j)["immdt"] = {{"data", h.imm}};
  if (op.Has(protocol::kExtIeth)) (*j)["ieth"] = {{"rkey", h.ieth_rkey}};
  (*j)["payload_len"] = v.payload.size();
  (*j)["icrc"] = v.icrc;
}

void AddMacControlJson(const ParsedFrame& v, Json* j) {
  if (v.kind == FrameKind::kPause) {
    (*j)["pause"] = {{"quanta", v.pfc.quanta[0]}};
    return;
  }
  Json quanta = Json::array();
  for (uint16_t q : v.pfc.quanta) quanta.push_back(q);
  (*j)["pfc"] = {{"enable_vector", v.pfc.enable_vector},
                 {"quanta", std::move(quanta)}};
}

}  // namespace

std::string_view AethTypeName(AethType type) {
  switch (type) {
    case AethType::kAck:
      return "ack";
    case AethType::kRnrNak:
      return "rnr_nak";
    case AethType::kNak:
      return "nak";
    case AethType::kReserved:
      break;
  }
  return "reserved";
}

std::string_view NakCodeName(uint8_t code) {
  switch (static_cast<protocol::NakCode>(code)) {
    case protocol::NakCode::kPsnSequenceError:
      return "psn_sequence_error";
    case protocol::NakCode::kInvalidRequest:
      return "invalid_request";
    case protocol::NakCode::kRemoteAccessError:
      return "remote_access_error";
    case protocol::NakCode::kRemoteOperationalError:
      return "remote_operational_error";
    case protocol::NakCode::kInvalidRdRequest:
      return "invalid_rd_request";
  }
  return "reserved";
}

std::string FormatMac(const protocol::MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
                         m[3], m[4], m[5]);
}

std::string FormatIp(const protocol::IpAddr& ip, bool ipv6) {
  if (!ipv6) {
    return absl::StrFormat("%u.%u.%u.%u", ip[12], ip[13], ip[14], ip[15]);
  }
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, ip.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

Json FrameJson(const FrameReport& r) {
  const ParsedFrame& v = r.view;
  Json j = {{"frame", r.number},
            {"ok", r.ok()},
            {"error", HasError(r) ? Json(ErrorText(r)) : Json(nullptr)},
            {"kind", protocol::FrameKindName(v.kind)},
            {"len", r.wire_len},
            {"caplen", r.caplen}};
  if (r.decoded) {
    AddEthJson(v, &j);
    if (IsIpKind(v.kind)) j["ip"] = IpJson(v);
    if (v.kind == FrameKind::kRoce) AddRoceJson(r, &j);
    if (v.kind == FrameKind::kPfc || v.kind == FrameKind::kPause) {
      AddMacControlJson(v, &j);
    }
  }
  switch (r.icrc) {
    case IcrcState::kValid:
      j["icrc_valid"] = true;
      break;
    case IcrcState::kInvalid:
      j["icrc_valid"] = false;
      break;
    case IcrcState::kNotApplicable:
    case IcrcState::kUnknown:
      j["icrc_valid"] = nullptr;
      break;
  }
  return j;
}

std::string FormatFrameText(const FrameReport& r) {
  const ParsedFrame& v = r.view;
  std::string s = absl::StrFormat("%5u %-3s %-6s", r.number,
                                  r.ok() ? "ok" : (r.invalid() ? "BAD" : "-"),
                                  protocol::FrameKindName(v.kind));
  if (r.decoded) {
    absl::StrAppend(&s, " ", FormatMac(v.net.src_mac), ">",
                    FormatMac(v.net.dst_mac));
    if (v.net.has_vlan) {
      absl::StrAppendFormat(&s, " vlan=%u pcp=%u", v.net.vlan.vid,
                            v.net.vlan.pcp);
    }
    if (IsIpKind(v.kind)) {
      absl::StrAppendFormat(&s, " %s>%s dscp=%u ecn=%u ttl=%u",
                            FormatIp(v.net.src_ip, v.net.ipv6),
                            FormatIp(v.net.dst_ip, v.net.ipv6), v.net.dscp,
                            v.net.ecn, v.net.ttl);
      if (v.net.ipv6) absl::StrAppendFormat(&s, " fl=0x%05x", v.net.flow_label);
    }
  }
  if (r.decoded && v.kind == FrameKind::kRoce) {
    const auto& h = v.hdr;
    const auto& b = h.bth;
    const OpcodeInfo& op = protocol::GetOpcodeInfo(b.opcode);
    absl::StrAppendFormat(&s,
                          " sport=%u %s(0x%02x) se=%d m=%d pad=%u tver=%u "
                          "pkey=0x%04x fecn=%d becn=%d dqp=0x%06x a=%d psn=%u",
                          v.net.udp_src_port, op.name, b.opcode, b.se,
                          b.mig_req, b.pad_cnt, b.tver, b.pkey, b.fecn, b.becn,
                          b.dest_qp, b.ack_req, b.psn);
    if (op.Has(protocol::kExtDeth)) {
      absl::StrAppendFormat(&s, " DETH[qkey=0x%08x srcqp=0x%06x]", h.deth.qkey,
                            h.deth.src_qp);
    }
    if (op.Has(protocol::kExtXrceth)) {
      absl::StrAppendFormat(&s, " XRCETH[srq=0x%06x]", h.xrceth.srqn);
    }
    if (op.Has(protocol::kExtFeth)) {
      // Placement type bits: 1 global visibility, 2 persistence; selectivity
      // level 0 the RETH's range, 1 the whole memory region.
      absl::StrAppendFormat(&s, " FETH[plt=%u sel=%u]", h.feth.placement_type,
                            h.feth.selectivity_level);
    }
    if (op.Has(protocol::kExtReth)) {
      absl::StrAppendFormat(&s, " RETH[va=0x%x rkey=0x%08x len=%u]", h.reth.va,
                            h.reth.rkey, h.reth.dma_len);
    }
    if (op.Has(protocol::kExtAtomicEth)) {
      absl::StrAppendFormat(
          &s, " AtomicETH[va=0x%x rkey=0x%08x swap_add=0x%x compare=0x%x]",
          h.atomic.va, h.atomic.rkey, h.atomic.swap_add, h.atomic.compare);
    }
    if (op.Has(protocol::kExtAeth)) {
      absl::StrAppendFormat(&s, " AETH[%s", AethTypeName(h.aeth.type()));
      if (h.aeth.type() == AethType::kNak) {
        absl::StrAppendFormat(&s, " %s", NakCodeName(h.aeth.value()));
      } else {
        absl::StrAppendFormat(&s, " %u", h.aeth.value());
      }
      absl::StrAppendFormat(&s, " msn=%u]", h.aeth.msn);
    }
    if (op.Has(protocol::kExtAtomicAckEth)) {
      absl::StrAppendFormat(&s, " AtomicAckETH[orig=0x%x]", h.atomic_ack.orig);
    }
    if (op.Has(protocol::kExtImmDt)) {
      absl::StrAppendFormat(&s, " ImmDt[0x%08x]", h.imm);
    }
    if (op.Has(protocol::kExtIeth)) {
      absl::StrAppendFormat(&s, " IETH[rkey=0x%08x]", h.ieth_rkey);
    }
    absl::StrAppendFormat(&s, " payload=%u icrc=0x%08x(%s)", v.payload.size(),
                          v.icrc, IcrcStateName(r.icrc));
  }
  if (r.decoded && v.kind == FrameKind::kPfc) {
    absl::StrAppendFormat(&s, " enable=0x%02x quanta=", v.pfc.enable_vector);
    for (size_t i = 0; i < v.pfc.quanta.size(); ++i) {
      absl::StrAppendFormat(&s, "%s%u", i ? "," : "", v.pfc.quanta[i]);
    }
  }
  if (r.decoded && v.kind == FrameKind::kPause) {
    absl::StrAppendFormat(&s, " quanta=%u", v.pfc.quanta[0]);
  }
  if (HasError(r)) absl::StrAppendFormat(&s, " error=\"%s\"", ErrorText(r));
  return s;
}

}  // namespace rocemu::tools
