#include "emulator/tools/frame_format.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rocemu::tools {
namespace {

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

void WriteEthJson(const ParsedFrame& v, JsonWriter* w) {
  w->Key("eth");
  w->BeginObject();
  w->Field("dst", FormatMac(v.net.dst_mac));
  w->Field("src", FormatMac(v.net.src_mac));
  w->Field("type", v.ethertype);
  w->EndObject();
  if (v.net.has_vlan) {
    w->Key("vlan");
    w->BeginObject();
    w->Field("pcp", v.net.vlan.pcp);
    w->Field("dei", v.net.vlan.dei);
    w->Field("vid", v.net.vlan.vid);
    w->EndObject();
  }
}

bool IsIpKind(FrameKind k) {
  return k == FrameKind::kRoce || k == FrameKind::kIcmpV4 ||
         k == FrameKind::kIcmpV6 || k == FrameKind::kOtherIpv4 ||
         k == FrameKind::kOtherIpv6;
}

void WriteIpJson(const ParsedFrame& v, JsonWriter* w) {
  const auto& n = v.net;
  w->Key("ip");
  w->BeginObject();
  w->Field("version", static_cast<uint8_t>(n.ipv6 ? 6 : 4));
  w->Field("src", FormatIp(n.src_ip, n.ipv6));
  w->Field("dst", FormatIp(n.dst_ip, n.ipv6));
  w->Field("dscp", n.dscp);
  w->Field("ecn", n.ecn);
  w->Field("ttl", n.ttl);
  if (n.ipv6) {
    w->Field("flow_label", n.flow_label);
  } else {
    w->Field("id", n.ip_id);
    w->Field("df", n.df);
  }
  w->EndObject();
}

void WriteRoceJson(const FrameReport& r, JsonWriter* w) {
  const ParsedFrame& v = r.view;
  const auto& h = v.hdr;
  const OpcodeInfo& op = protocol::GetOpcodeInfo(h.bth.opcode);
  w->Key("udp");
  w->BeginObject();
  w->Field("sport", v.net.udp_src_port);
  w->Field("dport", protocol::kRoceV2UdpPort);
  w->Field("checksum", v.udp_checksum);
  w->EndObject();

  w->Key("bth");
  w->BeginObject();
  w->Field("opcode", h.bth.opcode);
  w->Field("opcode_name", op.name);
  w->Field("se", h.bth.se);
  w->Field("m", h.bth.mig_req);
  w->Field("padcnt", h.bth.pad_cnt);
  w->Field("tver", h.bth.tver);
  w->Field("pkey", h.bth.pkey);
  w->Field("fecn", h.bth.fecn);
  w->Field("becn", h.bth.becn);
  w->Field("destqp", h.bth.dest_qp);
  w->Field("ackreq", h.bth.ack_req);
  w->Field("psn", h.bth.psn);
  w->EndObject();

  if (op.Has(protocol::kExtDeth)) {
    w->Key("deth");
    w->BeginObject();
    w->Field("qkey", h.deth.qkey);
    w->Field("src_qp", h.deth.src_qp);
    w->EndObject();
  }
  if (op.Has(protocol::kExtReth)) {
    w->Key("reth");
    w->BeginObject();
    w->Field("va", h.reth.va);
    w->Field("rkey", h.reth.rkey);
    w->Field("dma_len", h.reth.dma_len);
    w->EndObject();
  }
  if (op.Has(protocol::kExtAtomicEth)) {
    w->Key("atomiceth");
    w->BeginObject();
    w->Field("va", h.atomic.va);
    w->Field("rkey", h.atomic.rkey);
    w->Field("swap_add", h.atomic.swap_add);
    w->Field("compare", h.atomic.compare);
    w->EndObject();
  }
  if (op.Has(protocol::kExtAeth)) {
    w->Key("aeth");
    w->BeginObject();
    w->Field("syndrome", h.aeth.syndrome);
    w->Field("type", AethTypeName(h.aeth.type()));
    w->Field("value", h.aeth.value());
    if (h.aeth.type() == AethType::kNak) {
      w->Field("nak", NakCodeName(h.aeth.value()));
    }
    w->Field("msn", h.aeth.msn);
    w->EndObject();
  }
  if (op.Has(protocol::kExtAtomicAckEth)) {
    w->Key("atomicacketh");
    w->BeginObject();
    w->Field("orig", h.atomic_ack.orig);
    w->EndObject();
  }
  if (op.Has(protocol::kExtImmDt)) {
    w->Key("immdt");
    w->BeginObject();
    w->Field("data", h.imm);
    w->EndObject();
  }
  if (op.Has(protocol::kExtIeth)) {
    w->Key("ieth");
    w->BeginObject();
    w->Field("rkey", h.ieth_rkey);
    w->EndObject();
  }
  w->Field("payload_len", static_cast<uint64_t>(v.payload.size()));
  w->Field("icrc", v.icrc);
}

void WriteMacControlJson(const ParsedFrame& v, JsonWriter* w) {
  if (v.kind == FrameKind::kPause) {
    w->Key("pause");
    w->BeginObject();
    w->Field("quanta", v.pfc.quanta[0]);
    w->EndObject();
    return;
  }
  w->Key("pfc");
  w->BeginObject();
  w->Field("enable_vector", v.pfc.enable_vector);
  w->Key("quanta");
  w->BeginArray();
  for (uint16_t q : v.pfc.quanta) w->Uint(q);
  w->EndArray();
  w->EndObject();
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

void WriteFrameJson(const FrameReport& r, JsonWriter* w) {
  const ParsedFrame& v = r.view;
  w->BeginObject();
  w->Field("frame", r.number);
  w->Field("ok", r.ok());
  w->Key("error");
  if (HasError(r)) {
    w->String(ErrorText(r));
  } else {
    w->Null();
  }
  w->Field("kind", protocol::FrameKindName(v.kind));
  w->Field("len", r.wire_len);
  w->Field("caplen", r.caplen);
  if (r.decoded) {
    WriteEthJson(v, w);
    if (IsIpKind(v.kind)) WriteIpJson(v, w);
    if (v.kind == FrameKind::kRoce) WriteRoceJson(r, w);
    if (v.kind == FrameKind::kPfc || v.kind == FrameKind::kPause) {
      WriteMacControlJson(v, w);
    }
  }
  w->Key("icrc_valid");
  switch (r.icrc) {
    case IcrcState::kValid:
      w->Bool(true);
      break;
    case IcrcState::kInvalid:
      w->Bool(false);
      break;
    case IcrcState::kNotApplicable:
    case IcrcState::kUnknown:
      w->Null();
      break;
  }
  w->EndObject();
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
