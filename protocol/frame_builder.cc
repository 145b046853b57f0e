// RoceFrameWriter / BuildRoceFrame: headers, payload, pad, ICRC, lengths and
// checksums written into a caller buffer with no allocation.
#include <cstring>

#include "protocol/checksum.h"
#include "protocol/frame.h"
#include "protocol/icrc.h"
#include "protocol/net_header_template.h"
#include "protocol/transport_codec.h"
#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

// The IP total length / payload length field is 16 bits.
constexpr size_t kMaxIpPayload = 0xFFFF;

size_t PadFor(size_t payload_len) { return (4 - payload_len % 4) % 4; }

}  // namespace

const ParsedFrame kEmptyParsedFrame{};

size_t NetHeadersLength(const NetHeaders& net) {
  return kEthHeaderLen + (net.has_vlan ? kVlanTagLen : 0) +
         (net.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen) + kUdpHeaderLen;
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
  return Begin(NetHeaderTemplate(spec.net), spec.hdr, payload_len, out);
}

BuildError RoceFrameWriter::Begin(const NetHeaderTemplate& net,
                                  const TransportHeaders& hdr,
                                  size_t payload_len, std::span<uint8_t> out) {
  out_ = {};
  payload_ = {};
  frame_len_ = 0;
  const OpcodeInfo& info = GetOpcodeInfo(hdr.bth.opcode);
  if (!info.defined) return BuildError::kUnknownOpcode;
  if (payload_len > 0 && !info.payload) return BuildError::kPayloadNotAllowed;
  const size_t pad = PadFor(payload_len);
  const size_t udp_len =
      kUdpHeaderLen + info.header_len + payload_len + pad + kIcrcLen;
  const size_t ip_payload =
      udp_len + (net.ipv6() ? 0 : kIpv4HeaderLen);  // what the field holds
  if (payload_len > kMaxIpPayload || ip_payload > kMaxIpPayload) {
    return BuildError::kPayloadTooLarge;
  }
  const size_t headers = net.length();
  const size_t frame_len = headers + udp_len - kUdpHeaderLen;
  if (out.size() < frame_len) return BuildError::kBufferTooSmall;

  uint8_t* p = out.data();
  net.Write(udp_len, out);
  // The pad count is the payload's, whatever hdr says: set in the encoded
  // BTH (byte 1, bits 5:4) rather than in a copy of the headers.
  EncodeTransportHeaders(hdr, info, p + headers);
  p[headers + 1] =
      static_cast<uint8_t>((p[headers + 1] & ~0x30) | (pad & 0x3) << 4);

  out_ = out.first(frame_len);
  payload_ = out.subspan(headers + info.header_len, payload_len);
  l3_offset_ = net.l3_offset();
  frame_len_ = frame_len;
  ipv6_ = net.ipv6();
  udp_checksum_ = net.udp_checksum();
  return BuildError::kOk;
}

size_t RoceFrameWriter::Finish() {
  if (frame_len_ == 0) return 0;
  // 0-3 pad bytes, then the ICRC: one 4-byte store zeroes the pad, and the
  // ICRC is written over the rest in FinishWith.
  std::memset(payload_.data() + payload_.size(), 0, kIcrcLen);
  const std::span<uint8_t> l3 =
      out_.subspan(l3_offset_, frame_len_ - l3_offset_ - kIcrcLen);
  return FinishWith(ComputeIcrc(l3, ipv6_));
}

void RoceFrameWriter::StartIcrc(IcrcAccumulator& acc) const {
  // Begin made the headers, so l3 holds at least the masked ones.
  acc.Begin(out_.subspan(l3_offset_,
                         static_cast<size_t>(payload_.data() - out_.data()) -
                             l3_offset_),
            ipv6_);
}

size_t RoceFrameWriter::Finish(IcrcAccumulator& acc) {
  if (frame_len_ == 0) return 0;
  uint8_t* pad = payload_.data() + payload_.size();
  std::memset(pad, 0, kIcrcLen);
  acc.Update({pad, PadFor(payload_.size())});
  return FinishWith(acc.value());
}

size_t RoceFrameWriter::FinishWith(uint32_t icrc) {
  StoreIcrc(icrc, out_.data() + frame_len_ - kIcrcLen);
  // The UDP checksum covers the ICRC, while the ICRC masks the UDP checksum:
  // so the ICRC comes first.
  if (udp_checksum_) {
    const std::span<uint8_t> l3 =
        out_.subspan(l3_offset_, frame_len_ - l3_offset_);
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
