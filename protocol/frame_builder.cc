// RoceFrameWriter / BuildRoceFrame: headers, payload, pad, ICRC, lengths and
// checksums written into a caller buffer with no allocation.
#include <cstring>

#include "protocol/checksum.h"
#include "protocol/frame.h"
#include "protocol/icrc.h"
#include "protocol/transport_codec.h"
#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

// The IP total length / payload length field is 16 bits.
constexpr size_t kMaxIpPayload = 0xFFFF;

size_t L3Offset(const NetHeaders& net) {
  return kEthHeaderLen + (net.has_vlan ? kVlanTagLen : 0);
}

size_t PadFor(size_t payload_len) { return (4 - payload_len % 4) % 4; }

// Ethernet, VLAN, IP and UDP headers; UDP checksum left 0.
void EncodeNetHeaders(const NetHeaders& net, size_t udp_len, uint8_t* p) {
  std::memcpy(p, net.dst_mac.data(), 6);
  std::memcpy(p + 6, net.src_mac.data(), 6);
  p += 12;
  if (net.has_vlan) {
    StoreBe16(p, kEtherTypeVlan);
    StoreBe16(p + 2, static_cast<uint16_t>((net.vlan.pcp & 0x7) << 13 |
                                           (net.vlan.dei ? 0x1000 : 0) |
                                           (net.vlan.vid & 0xFFF)));
    p += kVlanTagLen;
  }
  const uint8_t tos =
      static_cast<uint8_t>((net.dscp & 0x3F) << 2 | (net.ecn & 0x3));
  if (net.ipv6) {
    StoreBe16(p, kEtherTypeIpv6);
    p += 2;
    StoreBe32(p, 6u << 28 | uint32_t{tos} << 20 | (net.flow_label & 0xFFFFF));
    StoreBe16(p + 4, static_cast<uint16_t>(udp_len));
    p[6] = kIpProtoUdp;
    p[7] = net.ttl;
    std::memcpy(p + 8, net.src_ip.data(), 16);
    std::memcpy(p + 24, net.dst_ip.data(), 16);
    p += kIpv6HeaderLen;
  } else {
    StoreBe16(p, kEtherTypeIpv4);
    p += 2;
    p[0] = 0x45;
    p[1] = tos;
    StoreBe16(p + 2, static_cast<uint16_t>(kIpv4HeaderLen + udp_len));
    StoreBe16(p + 4, net.ip_id);
    StoreBe16(p + 6, net.df ? 0x4000 : 0);
    p[8] = net.ttl;
    p[9] = kIpProtoUdp;
    StoreBe16(p + 10, 0);
    std::memcpy(p + 12, net.src_ip.data() + 12, 4);
    std::memcpy(p + 16, net.dst_ip.data() + 12, 4);
    StoreBe16(p + 10, Ipv4HeaderChecksum({p, kIpv4HeaderLen}));
    p += kIpv4HeaderLen;
  }
  StoreBe16(p, net.udp_src_port);
  StoreBe16(p + 2, kRoceV2UdpPort);
  StoreBe16(p + 4, static_cast<uint16_t>(udp_len));
  StoreBe16(p + 6, 0);
}

}  // namespace

const ParsedFrame kEmptyParsedFrame{};

size_t NetHeadersLength(const NetHeaders& net) {
  return L3Offset(net) + (net.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen) +
         kUdpHeaderLen;
}

size_t RoceFrameLength(const NetHeaders& net, uint8_t opcode,
                       size_t payload_len) {
  const OpcodeInfo& info = GetOpcodeInfo(opcode);
  if (!info.defined) return 0;
  return NetHeadersLength(net) + info.header_len + payload_len +
         PadFor(payload_len) + kIcrcLen;
}

BuildError RoceFrameWriter::Begin(const FrameSpec& spec, size_t payload_len,
                                  std::span<uint8_t> out) {
  out_ = {};
  payload_ = {};
  frame_len_ = 0;
  const OpcodeInfo& info = GetOpcodeInfo(spec.hdr.bth.opcode);
  if (!info.defined) return BuildError::kUnknownOpcode;
  if (payload_len > 0 && !info.payload) return BuildError::kPayloadNotAllowed;
  const size_t pad = PadFor(payload_len);
  const size_t udp_len =
      kUdpHeaderLen + info.header_len + payload_len + pad + kIcrcLen;
  const size_t ip_payload =
      udp_len + (spec.net.ipv6 ? 0 : kIpv4HeaderLen);  // what the field holds
  if (payload_len > kMaxIpPayload || ip_payload > kMaxIpPayload) {
    return BuildError::kPayloadTooLarge;
  }
  const size_t headers = NetHeadersLength(spec.net);
  const size_t frame_len = headers + udp_len - kUdpHeaderLen;
  if (out.size() < frame_len) return BuildError::kBufferTooSmall;

  uint8_t* p = out.data();
  EncodeNetHeaders(spec.net, udp_len, p);
  // The pad count is the payload's, whatever spec.hdr says: set in the
  // encoded BTH (byte 1, bits 5:4) rather than in a copy of the headers.
  EncodeTransportHeaders(spec.hdr, info, p + headers);
  p[headers + 1] =
      static_cast<uint8_t>((p[headers + 1] & ~0x30) | (pad & 0x3) << 4);

  out_ = out.first(frame_len);
  payload_ = out.subspan(headers + info.header_len, payload_len);
  l3_offset_ = L3Offset(spec.net);
  frame_len_ = frame_len;
  ipv6_ = spec.net.ipv6;
  switch (spec.net.udp_checksum) {
    case UdpChecksumMode::kAuto:
      udp_checksum_ = ipv6_;
      break;
    case UdpChecksumMode::kZero:
      udp_checksum_ = false;
      break;
    case UdpChecksumMode::kCompute:
      udp_checksum_ = true;
      break;
  }
  return BuildError::kOk;
}

size_t RoceFrameWriter::Finish() {
  if (frame_len_ == 0) return 0;
  uint8_t* pad = payload_.data() + payload_.size();
  uint8_t* icrc = out_.data() + frame_len_ - kIcrcLen;
  std::memset(pad, 0, static_cast<size_t>(icrc - pad));
  const std::span<uint8_t> l3 =
      out_.subspan(l3_offset_, frame_len_ - l3_offset_);
  StoreIcrc(ComputeIcrc(l3.first(l3.size() - kIcrcLen), ipv6_), icrc);
  // The UDP checksum covers the ICRC, while the ICRC masks the UDP checksum:
  // so the ICRC comes first.
  if (udp_checksum_) {
    const size_t ip_len = ipv6_ ? kIpv6HeaderLen : kIpv4HeaderLen;
    const std::span<uint8_t> udp = l3.subspan(ip_len);
    StoreBe16(udp.data() + 6, UdpChecksum(l3.data(), ipv6_, udp));
  }
  return frame_len_;
}

size_t BuildRoceFrame(const FrameSpec& spec, std::span<const uint8_t> payload,
                      std::span<uint8_t> out, BuildError* error) {
  RoceFrameWriter writer;
  const BuildError e = writer.Begin(spec, payload.size(), out);
  if (error != nullptr) *error = e;
  if (e != BuildError::kOk) return 0;
  if (!payload.empty()) {
    std::memcpy(writer.payload().data(), payload.data(), payload.size());
  }
  return writer.Finish();
}

FrameSpec CnpSpec(const NetHeaders& net, uint32_t dest_qp, uint16_t pkey) {
  FrameSpec spec;
  spec.net = net;
  spec.hdr.bth.opcode = kCnp;
  spec.hdr.bth.mig_req = false;
  spec.hdr.bth.pkey = pkey;
  spec.hdr.bth.becn = true;
  spec.hdr.bth.dest_qp = dest_qp & kQpnMask;
  spec.hdr.bth.psn = 0;
  return spec;
}

size_t BuildCnp(const NetHeaders& net, uint32_t dest_qp, uint16_t pkey,
                std::span<uint8_t> out, BuildError* error) {
  return BuildRoceFrame(CnpSpec(net, dest_qp, pkey), {}, out, error);
}

}  // namespace rocemu::protocol
