#include "tests/simnet/ether.h"

#include <cstring>

namespace rocemu::simnet {

L2Info ParseL2(std::span<const uint8_t> frame) {
  L2Info info;
  if (frame.size() < kEthHeaderLen) return info;
  size_t off = 12;
  uint16_t type = Load16(&frame[off]);
  if (type == kEtherTypeVlan) {
    if (frame.size() < kEthHeaderLen + kVlanTagLen) return info;
    info.has_vlan = true;
    info.pcp = static_cast<uint8_t>(frame[14] >> 5);
    off += kVlanTagLen;
    type = Load16(&frame[off]);
  }
  info.valid = true;
  info.ethertype = type;
  info.l3_offset = off + 2;
  const size_t l3_len = frame.size() - info.l3_offset;
  if (type == kEtherTypeIpv4 && l3_len >= 20 &&
      (frame[info.l3_offset] >> 4) == 4) {
    info.ipv4 = true;
  } else if (type == kEtherTypeIpv6 && l3_len >= 40 &&
             (frame[info.l3_offset] >> 4) == 6) {
    info.ipv6 = true;
  }
  return info;
}

namespace {

uint8_t TrafficClass(const L2Info& l2, std::span<const uint8_t> frame) {
  const uint8_t* ip = &frame[l2.l3_offset];
  if (l2.ipv4) return ip[1];
  return static_cast<uint8_t>(((ip[0] & 0x0F) << 4) | (ip[1] >> 4));
}

}  // namespace

bool ReadDscpEcn(std::span<const uint8_t> frame, uint8_t* dscp, uint8_t* ecn) {
  const L2Info l2 = ParseL2(frame);
  if (!l2.ipv4 && !l2.ipv6) return false;
  const uint8_t tc = TrafficClass(l2, frame);
  *dscp = static_cast<uint8_t>(tc >> 2);
  *ecn = static_cast<uint8_t>(tc & 0x3);
  return true;
}

uint16_t Ipv4HeaderChecksum(std::span<const uint8_t> header) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < header.size(); i += 2) sum += Load16(&header[i]);
  if (header.size() & 1) sum += static_cast<uint32_t>(header.back()) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

CeMarkResult MarkCe(std::span<uint8_t> frame) {
  const L2Info l2 = ParseL2(frame);
  if (!l2.ipv4 && !l2.ipv6) return CeMarkResult::kNotIp;
  uint8_t* ip = &frame[l2.l3_offset];
  const uint8_t ecn = TrafficClass(l2, frame) & 0x3;
  if (ecn == kEcnNotEct) return CeMarkResult::kNotEct;
  if (ecn == kEcnCe) return CeMarkResult::kAlreadyCe;
  if (l2.ipv6) {
    ip[1] |= 0x30;
    return CeMarkResult::kMarked;
  }
  ip[1] |= kEcnCe;
  const size_t ihl = static_cast<size_t>(ip[0] & 0x0F) * 4;
  if (ihl >= 20 && l2.l3_offset + ihl <= frame.size()) {
    Store16(&ip[10], 0);
    Store16(&ip[10], Ipv4HeaderChecksum({ip, ihl}));
  }
  return CeMarkResult::kMarked;
}

bool ParseMacControl(std::span<const uint8_t> frame, MacControl* out) {
  if (frame.size() < kEthHeaderLen + 4) return false;
  if (Load16(&frame[12]) != kEtherTypeMacControl) return false;
  const uint16_t opcode = Load16(&frame[14]);
  *out = MacControl{};
  if (opcode == kMacControlPause) {
    out->pause = true;
    out->enable_vector = 0xFF;
    out->quanta[0] = Load16(&frame[16]);
    return true;
  }
  if (opcode != kMacControlPfc || frame.size() < 34) return false;
  if (frame[16] != 0) return false;
  out->enable_vector = frame[17];
  for (int i = 0; i < 8; ++i) out->quanta[i] = Load16(&frame[18 + 2 * i]);
  return true;
}

namespace {

size_t BuildMacControlHeader(const MacAddr& src, uint16_t opcode,
                             std::span<uint8_t> out) {
  if (out.size() < kMinFrameLen) return 0;
  std::memset(out.data(), 0, kMinFrameLen);
  std::memcpy(&out[0], kMacControlDst.data(), 6);
  std::memcpy(&out[6], src.data(), 6);
  Store16(&out[12], kEtherTypeMacControl);
  Store16(&out[14], opcode);
  return kMinFrameLen;
}

}  // namespace

size_t BuildPfcFrame(const MacAddr& src, uint8_t enable_vector,
                     const std::array<uint16_t, 8>& quanta,
                     std::span<uint8_t> out) {
  if (BuildMacControlHeader(src, kMacControlPfc, out) == 0) return 0;
  out[17] = enable_vector;
  for (int i = 0; i < 8; ++i) {
    if (enable_vector & (1u << i)) Store16(&out[18 + 2 * i], quanta[i]);
  }
  return kMinFrameLen;
}

size_t BuildPauseFrame(const MacAddr& src, uint16_t quanta,
                       std::span<uint8_t> out) {
  if (BuildMacControlHeader(src, kMacControlPause, out) == 0) return 0;
  Store16(&out[16], quanta);
  return kMinFrameLen;
}

uint64_t PauseQuantaToNs(uint32_t quanta, uint64_t rate_bps) {
  if (rate_bps == 0) return 0;
  const unsigned __int128 num =
      static_cast<unsigned __int128>(quanta) * 512u * 1000000000u;
  return static_cast<uint64_t>((num + rate_bps - 1) / rate_bps);
}

}  // namespace rocemu::simnet
