// ParseFrame: classification of any Ethernet frame and full validation of a
// RoCEv2 one. Reads only, never allocates.
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "protocol/checksum.h"
#include "protocol/frame.h"
#include "protocol/icrc.h"
#include "protocol/transport_codec.h"
#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

using Bytes = std::span<const uint8_t>;

// The IP datagram may be followed only by the zero padding of a minimum-size
// Ethernet frame.
bool TrailerOk(Bytes frame, size_t datagram_end) {
  return datagram_end == frame.size() || frame.size() <= kEthMinFrameLen;
}

void SetTos(uint8_t tos, NetHeaders* net) {
  net->dscp = tos >> 2;
  net->ecn = tos & 0x3;
}

// `l3` is the IP datagram (exactly its length), `udp` the UDP datagram in it.
ParseError ParseRoce(Bytes l3, size_t ip_header_len, bool ipv6,
                     const ParseOptions& options, ParsedFrame* out) {
  const Bytes udp = l3.subspan(ip_header_len);
  out->kind = FrameKind::kRoce;
  out->net.udp_src_port = LoadBe16(udp.data());
  if (LoadBe16(udp.data() + 4) != udp.size()) {
    return ParseError::kUdpLengthMismatch;
  }
  out->udp_checksum = LoadBe16(udp.data() + 6);
  out->net.udp_checksum = out->udp_checksum == 0 ? UdpChecksumMode::kZero
                                                 : UdpChecksumMode::kCompute;
  if (options.verify_udp_checksum && out->udp_checksum != 0 &&
      !UdpChecksumOk(l3.data(), ipv6, udp)) {
    return ParseError::kBadUdpChecksum;
  }
  const Bytes t = udp.subspan(kUdpHeaderLen);
  out->bth_offset = out->l3_offset + ip_header_len + kUdpHeaderLen;
  if (t.size() < kBthLen) return ParseError::kTooShort;
  DecodeBth(t.data(), &out->hdr.bth);
  if (out->hdr.bth.tver != 0) return ParseError::kBadTver;
  const OpcodeInfo& info = GetOpcodeInfo(out->hdr.bth.opcode);
  out->op = &info;
  if (!info.defined) return ParseError::kUnknownOpcode;
  if (t.size() < size_t{info.header_len} + kIcrcLen) {
    return info.supported ? ParseError::kHeadersDoNotFit
                          : ParseError::kUnsupportedOpcode;
  }
  DecodeExtensionHeaders(t.data(), info, &out->hdr);
  if (!info.supported) return ParseError::kUnsupportedOpcode;
  const size_t body = t.size() - info.header_len - kIcrcLen;  // payload + pad
  const uint8_t pad = out->hdr.bth.pad_cnt;
  out->icrc = LoadIcrc(t.data() + t.size() - kIcrcLen);
  if (!info.payload) {
    if (body != 0) return ParseError::kPayloadNotAllowed;
    if (pad != 0) return ParseError::kBadPad;
  }
  if (body % 4 != 0 || pad > body) return ParseError::kBadPad;
  out->payload = t.subspan(info.header_len, body - pad);
  if (options.verify_icrc &&
      ComputeIcrc(l3.first(l3.size() - kIcrcLen), ipv6) != out->icrc) {
    return ParseError::kBadIcrc;
  }
  return ParseError::kOk;
}

ParseError ParseIpv4(Bytes frame, const ParseOptions& options,
                     ParsedFrame* out) {
  Bytes l3 = frame.subspan(out->l3_offset);
  if (l3.size() < kIpv4HeaderLen) return ParseError::kTooShort;
  if (l3[0] >> 4 != 4) return ParseError::kBadIpVersion;
  const size_t header_len = size_t{l3[0] & 0xFu} * 4;
  if (header_len < kIpv4HeaderLen) return ParseError::kBadIhl;
  if (l3.size() < header_len) return ParseError::kTooShort;
  const size_t total = LoadBe16(l3.data() + 2);
  if (total < header_len || total > l3.size() ||
      !TrailerOk(frame, out->l3_offset + total)) {
    return ParseError::kIpLengthMismatch;
  }
  l3 = l3.first(total);
  NetHeaders& net = out->net;
  net.ipv6 = false;
  SetTos(l3[1], &net);
  net.ip_id = LoadBe16(l3.data() + 4);
  const uint16_t flags = LoadBe16(l3.data() + 6);
  net.df = (flags & 0x4000) != 0;
  net.ttl = l3[8];
  out->ip_protocol = l3[9];
  out->ip_checksum = LoadBe16(l3.data() + 10);
  net.src_ip = Ipv4Mapped(l3[12], l3[13], l3[14], l3[15]);
  net.dst_ip = Ipv4Mapped(l3[16], l3[17], l3[18], l3[19]);
  if (options.verify_ip_checksum &&
      OnesComplementSum(l3.first(header_len), 0) != 0xFFFF) {
    return ParseError::kBadIpChecksum;
  }
  if (out->ip_protocol == kIpProtoIcmp) {
    out->kind = FrameKind::kIcmpV4;
    return ParseError::kOk;
  }
  out->kind = FrameKind::kOtherIpv4;
  const bool more_fragments = (flags & 0x2000) != 0;
  const uint16_t fragment_offset = flags & 0x1FFF;
  // Only a first fragment shows its UDP port.
  if (out->ip_protocol != kIpProtoUdp || fragment_offset != 0) {
    return ParseError::kOk;
  }
  if (total < header_len + kUdpHeaderLen) return ParseError::kTooShort;
  if (LoadBe16(l3.data() + header_len + 2) != kRoceV2UdpPort) {
    return ParseError::kOk;
  }
  out->kind = FrameKind::kRoce;
  net.udp_src_port = LoadBe16(l3.data() + header_len);
  if (more_fragments) return ParseError::kIpFragment;
  // RFC 791 reserves the bit; NetHeaders cannot carry it, so a frame with it
  // set could not be re-encoded or answered faithfully.
  if (flags & 0x8000) return ParseError::kIpReservedFlag;
  if (header_len != kIpv4HeaderLen) return ParseError::kIpOptions;
  return ParseRoce(l3, header_len, false, options, out);
}

ParseError ParseIpv6(Bytes frame, const ParseOptions& options,
                     ParsedFrame* out) {
  Bytes l3 = frame.subspan(out->l3_offset);
  if (l3.size() < kIpv6HeaderLen) return ParseError::kTooShort;
  if (l3[0] >> 4 != 6) return ParseError::kBadIpVersion;
  const size_t total = kIpv6HeaderLen + LoadBe16(l3.data() + 4);
  if (total > l3.size() || !TrailerOk(frame, out->l3_offset + total)) {
    return ParseError::kIpLengthMismatch;
  }
  l3 = l3.first(total);
  NetHeaders& net = out->net;
  net.ipv6 = true;
  const uint32_t word0 = LoadBe32(l3.data());
  SetTos(static_cast<uint8_t>(word0 >> 20), &net);
  net.flow_label = word0 & 0xFFFFF;
  out->ip_protocol = l3[6];
  net.ttl = l3[7];
  std::memcpy(net.src_ip.data(), l3.data() + 8, 16);
  std::memcpy(net.dst_ip.data(), l3.data() + 24, 16);
  if (out->ip_protocol == kIpProtoIcmpV6) {
    out->kind = FrameKind::kIcmpV6;
    return ParseError::kOk;
  }
  out->kind = FrameKind::kOtherIpv6;
  // Extension headers (including the fragment header) are not followed:
  // RoCEv2 never sends them.
  if (out->ip_protocol != kIpProtoUdp) return ParseError::kOk;
  if (total < kIpv6HeaderLen + kUdpHeaderLen) return ParseError::kTooShort;
  if (LoadBe16(l3.data() + kIpv6HeaderLen + 2) != kRoceV2UdpPort) {
    return ParseError::kOk;
  }
  return ParseRoce(l3, kIpv6HeaderLen, true, options, out);
}

}  // namespace

ParseError ParseFrame(std::span<const uint8_t> frame, ParsedFrame* out,
                      const ParseOptions& options) {
  CopyInChunks(out, kEmptyParsedFrame);
  if (frame.size() < kEthHeaderLen) return ParseError::kTooShort;
  std::memcpy(out->net.dst_mac.data(), frame.data(), 6);
  std::memcpy(out->net.src_mac.data(), frame.data() + 6, 6);
  uint16_t ethertype = LoadBe16(frame.data() + 12);
  size_t l3_offset = kEthHeaderLen;
  if (ethertype == kEtherTypeVlan) {
    if (frame.size() < kEthHeaderLen + kVlanTagLen) {
      return ParseError::kTooShort;
    }
    const uint16_t tci = LoadBe16(frame.data() + 14);
    out->net.has_vlan = true;
    out->net.vlan = {.pcp = static_cast<uint8_t>(tci >> 13),
                     .dei = (tci & 0x1000) != 0,
                     .vid = static_cast<uint16_t>(tci & 0xFFF)};
    ethertype = LoadBe16(frame.data() + 16);
    l3_offset += kVlanTagLen;
  }
  out->ethertype = ethertype;
  out->l3_offset = l3_offset;
  switch (ethertype) {
    case kEtherTypeIpv4:
      return ParseIpv4(frame, options, out);
    case kEtherTypeIpv6:
      return ParseIpv6(frame, options, out);
    case kEtherTypeArp:
      out->kind = FrameKind::kArp;
      return ParseError::kOk;
    case kEtherTypeMacControl: {
      bool is_pfc = false;
      // Decided in pfc.h: MAC Control frames are never tagged.
      const ParseError e = out->net.has_vlan
                               ? ParseError::kBadMacControl
                               : ParseMacControl(frame, &out->pfc, &is_pfc);
      out->kind = is_pfc ? FrameKind::kPfc : FrameKind::kPause;
      return e;
    }
    default:
      out->kind = FrameKind::kOther;
      return ParseError::kOk;
  }
}

absl::StatusOr<ParsedFrame> ParseFrameOrStatus(std::span<const uint8_t> frame,
                                               const ParseOptions& options) {
  ParsedFrame parsed;
  const ParseError e = ParseFrame(frame, &parsed, options);
  if (e != ParseError::kOk) {
    // Debian's Abseil has its own string_view type, not std::string_view.
    const std::string_view name = ParseErrorName(e);
    return absl::InvalidArgumentError(absl::StrCat(
        "frame rejected: ", absl::string_view(name.data(), name.size())));
  }
  return parsed;
}

FrameSpec SpecFromParsed(const ParsedFrame& parsed) {
  return FrameSpec{.net = parsed.net, .hdr = parsed.hdr};
}

std::string_view FrameKindName(FrameKind k) {
  switch (k) {
    case FrameKind::kRoce:
      return "roce";
    case FrameKind::kPfc:
      return "pfc";
    case FrameKind::kPause:
      return "pause";
    case FrameKind::kArp:
      return "arp";
    case FrameKind::kIcmpV4:
      return "icmpv4";
    case FrameKind::kIcmpV6:
      return "icmpv6";
    case FrameKind::kOtherIpv4:
      return "other_ipv4";
    case FrameKind::kOtherIpv6:
      return "other_ipv6";
    case FrameKind::kOther:
      return "other";
  }
  return "invalid_frame_kind";
}

}  // namespace rocemu::protocol
