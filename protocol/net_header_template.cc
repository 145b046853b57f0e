#include "protocol/net_header_template.h"

#include <cstring>

#include "protocol/checksum.h"
#include "protocol/wire.h"

namespace rocemu::protocol {

NetHeaderTemplate::NetHeaderTemplate(const NetHeaders& net) {
  uint8_t* p = bytes_.data();
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
  l3_offset_ = static_cast<uint8_t>(p + 2 - bytes_.data());
  const uint8_t tos =
      static_cast<uint8_t>((net.dscp & 0x3F) << 2 | (net.ecn & 0x3));
  if (net.ipv6) {
    StoreBe16(p, kEtherTypeIpv6);
    p += 2;
    StoreBe32(p, 6u << 28 | uint32_t{tos} << 20 | (net.flow_label & 0xFFFFF));
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
    StoreBe16(p + 4, net.ip_id);
    StoreBe16(p + 6, net.df ? 0x4000 : 0);
    p[8] = net.ttl;
    p[9] = kIpProtoUdp;
    std::memcpy(p + 12, net.src_ip.data() + 12, 4);
    std::memcpy(p + 16, net.dst_ip.data() + 12, 4);
    ip_sum_ = OnesComplementSum({p, kIpv4HeaderLen}, 0);
    p += kIpv4HeaderLen;
  }
  StoreBe16(p, net.udp_src_port);
  StoreBe16(p + 2, kRoceV2UdpPort);
  p += kUdpHeaderLen;
  length_ = static_cast<uint8_t>(p - bytes_.data());
  ipv6_ = net.ipv6;
  switch (net.udp_checksum) {
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
}

void NetHeaderTemplate::Write(size_t udp_len, std::span<uint8_t> out) const {
  // One fixed-size copy per layout is a handful of moves, where a copy of
  // length_ bytes is a call.
  constexpr size_t kIpv4Len = kEthHeaderLen + kIpv4HeaderLen + kUdpHeaderLen;
  constexpr size_t kIpv6Len = kEthHeaderLen + kIpv6HeaderLen + kUdpHeaderLen;
  switch (length_) {
    case kIpv4Len:
      std::memcpy(out.data(), bytes_.data(), kIpv4Len);
      break;
    case kIpv4Len + kVlanTagLen:
      std::memcpy(out.data(), bytes_.data(), kIpv4Len + kVlanTagLen);
      break;
    case kIpv6Len:
      std::memcpy(out.data(), bytes_.data(), kIpv6Len);
      break;
    case kIpv6Len + kVlanTagLen:
      std::memcpy(out.data(), bytes_.data(), kIpv6Len + kVlanTagLen);
      break;
    default:  // not encoded from NetHeaders
      std::memcpy(out.data(), bytes_.data(), length_);
      break;
  }
  uint8_t* l3 = out.data() + l3_offset_;
  const auto len16 = static_cast<uint16_t>(udp_len);
  if (ipv6_) {
    StoreBe16(l3 + 4, len16);
    StoreBe16(l3 + kIpv6HeaderLen + 4, len16);
  } else {
    const uint32_t total = kIpv4HeaderLen + udp_len;
    StoreBe16(l3 + 2, static_cast<uint16_t>(total));
    // RFC 1624: the length adds to the stored sum; fold twice for the
    // carries.
    uint32_t sum = uint32_t{ip_sum_} + total;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    StoreBe16(l3 + 10, static_cast<uint16_t>(~sum));
    StoreBe16(l3 + kIpv4HeaderLen + 4, len16);
  }
}

}  // namespace rocemu::protocol
