#include "emulator/net/net_stack.h"

#include <algorithm>
#include <cstring>

#include "emulator/net/checksum.h"
#include "protocol/multicast.h"

namespace rocemu::emulator {
namespace {

constexpr uint16_t kEtherTypeMacControl = 0x8808;
constexpr uint16_t kRoceV2Port = 4791;
constexpr uint8_t kIpProtoIcmp = 1;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint8_t kIgmpQuery = 0x11;
constexpr uint8_t kIcmpv6MldQuery = 130;
constexpr uint8_t kIcmpEchoReply = 0;
constexpr uint8_t kIcmpEchoRequest = 8;
constexpr uint8_t kIcmpv6EchoRequest = 128;
constexpr uint8_t kIcmpv6EchoReply = 129;
constexpr uint8_t kIcmpv6NeighbourSolicit = 135;
constexpr uint8_t kIcmpv6NeighbourAdvert = 136;
constexpr uint8_t kNdOptSourceLinkAddr = 1;
constexpr uint8_t kNdOptTargetLinkAddr = 2;
constexpr size_t kArpLen = 28;

constexpr IpAddr kAllNodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                              0,    0,    0, 0, 0, 0, 0, 1};

IpAddr LoadIp6(const uint8_t* p) {
  IpAddr a;
  std::memcpy(a.data(), p, 16);
  return a;
}

bool IsUnspecified(const IpAddr& a) {
  return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

IpAddr SolicitedNode(const IpAddr& a) {
  return {0xff, 0x02, 0, 0,    0,    0,     0,     0,
          0,    0,    0, 0x01, 0xff, a[13], a[14], a[15]};
}

bool SamePrefix(const IpAddr& a, const IpAddr& b, unsigned bits) {
  for (unsigned i = 0; i < 16 && bits > 0; ++i) {
    unsigned n = std::min(bits, 8u);
    uint8_t mask = static_cast<uint8_t>(0xFF00 >> n);
    if ((a[i] & mask) != (b[i] & mask)) return false;
    bits -= n;
  }
  return true;
}

// Finds an ND option of `type` with a 6-byte link-layer address.
const uint8_t* FindLinkAddrOption(const uint8_t* opts, size_t len,
                                  uint8_t type) {
  size_t off = 0;
  while (off + 2 <= len) {
    size_t opt_len = static_cast<size_t>(opts[off + 1]) * 8;
    if (opt_len == 0 || off + opt_len > len) return nullptr;  // malformed
    if (opts[off] == type && opt_len >= 8) return opts + off + 2;
    off += opt_len;
  }
  return nullptr;
}

}  // namespace

NetStack::NetStack(const MacAddr& mac, std::span<const NetAddress> addresses,
                   NeighbourCache* cache)
    : mac_(mac), addresses_(addresses.begin(), addresses.end()), cache_(cache) {
  // Modified EUI-64 link-local address, as the kernel derives it: peers
  // solicit and ping it, and it is GID index 0 on a RoCE port.
  link_local_ = {0xfe,   0x80,   0,
                 0,      0,      0,
                 0,      0,      static_cast<uint8_t>(mac[0] ^ 0x02),
                 mac[1], mac[2], 0xff,
                 0xfe,   mac[3], mac[4],
                 mac[5]};
  addresses_.push_back({link_local_, true, 64});
}

bool NetStack::IsOurAddress(const IpAddr& ip) const {
  // Asked for every received frame: two 8-byte compares, not std::array's
  // call to memcmp.
  uint64_t want[2];
  std::memcpy(want, ip.data(), sizeof(want));
  for (const NetAddress& a : addresses_) {
    uint64_t have[2];
    std::memcpy(have, a.ip.data(), sizeof(have));
    if (((have[0] ^ want[0]) | (have[1] ^ want[1])) == 0) return true;
  }
  return false;
}

bool NetStack::AcceptsIpv6Dst(const IpAddr& dst) const {
  if (dst == kAllNodes) return true;
  for (const NetAddress& a : addresses_) {
    if (!a.ipv6) continue;
    if (a.ip == dst || SolicitedNode(a.ip) == dst) return true;
  }
  return false;
}

const IpAddr* NetStack::SourceFor(const IpAddr& peer, bool ipv6) const {
  const IpAddr* fallback = nullptr;
  for (const NetAddress& a : addresses_) {
    if (a.ipv6 != ipv6) continue;
    unsigned bits = a.prefix_len + (ipv6 ? 0u : 96u);
    if (SamePrefix(a.ip, peer, bits)) return &a.ip;
    if (fallback == nullptr) fallback = &a.ip;
  }
  return fallback;
}

size_t NetStack::WriteEth(std::span<uint8_t> out, const uint8_t* dst,
                          uint16_t ethertype, size_t l3_len) const {
  size_t hdr = rx_vlan_tci_ <= 0xFFFF ? 18 : 14;
  if (out.size() < std::max(hdr + l3_len, kMinFrame)) return 0;
  std::memcpy(out.data(), dst, 6);
  std::memcpy(out.data() + 6, mac_.data(), 6);
  if (hdr == 18) {
    StoreBe16(out.data() + 12, kEtherTypeVlan);
    StoreBe16(out.data() + 14, static_cast<uint16_t>(rx_vlan_tci_));
  }
  StoreBe16(out.data() + hdr - 2, ethertype);
  return hdr;
}

size_t NetStack::Pad(std::span<uint8_t> out, size_t len) {
  if (len < kMinFrame) {
    std::memset(out.data() + len, 0, kMinFrame - len);
    return kMinFrame;
  }
  return len;
}

RxVerdict NetStack::Receive(std::span<const uint8_t> frame, nic::TimeNs now,
                            std::span<uint8_t> reply, size_t* reply_len) {
  *reply_len = 0;
  if (frame.size() < 14) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  const uint8_t* dst = frame.data();
  size_t l3 = 14;
  uint16_t ethertype = LoadBe16(&frame[12]);
  rx_vlan_tci_ = 0xFFFF'FFFF;
  if (ethertype == kEtherTypeVlan) {
    if (frame.size() < 18) {
      ++counters_.rx_malformed;
      return RxVerdict::kDropped;
    }
    rx_vlan_tci_ = LoadBe16(&frame[14]);
    ethertype = LoadBe16(&frame[16]);
    l3 = 18;
  }
  if (ethertype == kEtherTypeMacControl) {
    // PAUSE/PFC go to slow-protocol multicast, never to our MAC.
    ++counters_.rx_nic;
    return RxVerdict::kNic;
  }
  bool to_us = std::memcmp(dst, mac_.data(), 6) == 0;
  bool broadcast = std::memcmp(dst, kBroadcastMac.data(), 6) == 0;
  bool ipv6_multicast = dst[0] == 0x33 && dst[1] == 0x33;
  // RoCE to an IPv4 group (UD multicast): the RNIC keeps what its QPs
  // joined and counts the rest (rx_mcast_no_group).
  bool ipv4_multicast = protocol::IsIpMulticastMac(dst) && !ipv6_multicast;
  if (!to_us && !broadcast && !ipv6_multicast && !ipv4_multicast) {
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  switch (ethertype) {
    case kEtherTypeArp:
      if (kernel_owned_) {
        ++counters_.rx_kernel;
        return RxVerdict::kDropped;
      }
      return HandleArp(frame, l3, now, reply, reply_len);
    case kEtherTypeIpv4:
      if (!to_us && !ipv4_multicast) break;
      return HandleIpv4(frame, l3, reply, reply_len);
    case kEtherTypeIpv6:
      return HandleIpv6(frame, l3, now, reply, reply_len);
    default:
      if (to_us) {
        ++counters_.rx_unhandled;
        return RxVerdict::kDropped;
      }
  }
  ++counters_.rx_not_for_us;
  return RxVerdict::kDropped;
}

RxVerdict NetStack::HandleArp(std::span<const uint8_t> frame, size_t l3,
                              nic::TimeNs now, std::span<uint8_t> reply,
                              size_t* reply_len) {
  if (frame.size() < l3 + kArpLen) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  const uint8_t* arp = frame.data() + l3;
  if (LoadBe16(arp) != 1 || LoadBe16(arp + 2) != kEtherTypeIpv4 ||
      arp[4] != 6 || arp[5] != 4) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  uint16_t op = LoadBe16(arp + 6);
  const uint8_t* sha = arp + 8;
  IpAddr spa = Ipv4Mapped(arp + 14);
  IpAddr tpa = Ipv4Mapped(arp + 24);
  bool target_is_us = IsOurAddress(tpa);
  static constexpr uint8_t kZero4[4] = {0, 0, 0, 0};
  if (std::memcmp(arp + 14, kZero4, 4) != 0 && (sha[0] & 1) == 0) {
    MacAddr mac;
    std::memcpy(mac.data(), sha, 6);
    // RFC 826: refresh what we know; create only when we are the target.
    cache_->Learn(spa, mac, now, /*create=*/target_is_us);
  }
  if (!target_is_us) {
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  if (op == 2) {
    ++counters_.rx_arp_replies;
    return RxVerdict::kConsumed;
  }
  if (op != 1) {
    ++counters_.rx_unhandled;
    return RxVerdict::kDropped;
  }
  ++counters_.rx_arp_requests;
  size_t hdr = WriteEth(reply, sha, kEtherTypeArp, kArpLen);
  if (hdr == 0) {
    ++counters_.reply_too_big;
    return RxVerdict::kDropped;
  }
  uint8_t* out = reply.data() + hdr;
  std::memcpy(out, arp, 6);  // htype, ptype, hlen, plen
  StoreBe16(out + 6, 2);
  std::memcpy(out + 8, mac_.data(), 6);
  std::memcpy(out + 14, arp + 24, 4);  // we are the target address
  std::memcpy(out + 18, sha, 6);
  std::memcpy(out + 24, arp + 14, 4);
  *reply_len = Pad(reply, hdr + kArpLen);
  ++counters_.tx_arp_replies;
  return RxVerdict::kReply;
}

RxVerdict NetStack::HandleIpv4(std::span<const uint8_t> frame, size_t l3,
                               std::span<uint8_t> reply, size_t* reply_len) {
  if (frame.size() < l3 + 20) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  const uint8_t* ip = frame.data() + l3;
  size_t ihl = static_cast<size_t>(ip[0] & 0x0F) * 4;
  size_t total = LoadBe16(ip + 2);
  if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl ||
      l3 + total > frame.size()) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  if (InternetChecksum({ip, ihl}) != 0) {
    ++counters_.rx_bad_checksum;
    return RxVerdict::kDropped;
  }
  const IpAddr dst_ip = Ipv4Mapped(ip + 16);
  const bool group = protocol::IsMulticastIp(dst_ip);
  if (!IsOurAddress(dst_ip) && !group) {
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  if ((LoadBe16(ip + 6) & 0x3FFF) != 0) {  // MF or fragment offset
    ++counters_.rx_unhandled;
    return RxVerdict::kDropped;
  }
  const uint8_t* l4 = ip + ihl;
  size_t l4_len = total - ihl;
  if (ip[9] == kIpProtoUdp && l4_len >= 8 && LoadBe16(l4 + 2) == kRoceV2Port) {
    ++counters_.rx_nic;
    return RxVerdict::kNic;
  }
  if (kernel_owned_) {
    ++counters_.rx_kernel;
    return RxVerdict::kDropped;
  }
  if (ip[9] == kIpProtoIgmp && l4_len >= 8 && l4[0] == kIgmpQuery &&
      InternetChecksum({l4, l4_len}) == 0) {
    return AnswerGroupQuery(false, reply, reply_len);
  }
  if (group) {  // only RoCE groups are ours (IGMP, mDNS ... are not)
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  if (ip[9] != kIpProtoIcmp || l4_len < 8 || l4[0] != kIcmpEchoRequest) {
    ++counters_.rx_unhandled;
    return RxVerdict::kDropped;
  }
  if (InternetChecksum({l4, l4_len}) != 0) {
    ++counters_.rx_bad_checksum;
    return RxVerdict::kDropped;
  }
  ++counters_.rx_icmp_echo;
  size_t hdr = WriteEth(reply, frame.data() + 6, kEtherTypeIpv4, total);
  if (hdr == 0) {
    ++counters_.reply_too_big;
    return RxVerdict::kDropped;
  }
  uint8_t* out = reply.data() + hdr;
  std::memcpy(out, ip, total);
  std::memcpy(out + 12, ip + 16, 4);
  std::memcpy(out + 16, ip + 12, 4);
  out[8] = 64;  // TTL
  StoreBe16(out + 10, 0);
  StoreBe16(out + 10, InternetChecksum({out, ihl}));
  uint8_t* icmp = out + ihl;
  icmp[0] = kIcmpEchoReply;
  StoreBe16(icmp + 2, 0);
  StoreBe16(icmp + 2, InternetChecksum({icmp, l4_len}));
  *reply_len = Pad(reply, hdr + total);
  ++counters_.tx_icmp_echo_reply;
  return RxVerdict::kReply;
}

RxVerdict NetStack::HandleIpv6(std::span<const uint8_t> frame, size_t l3,
                               nic::TimeNs now, std::span<uint8_t> reply,
                               size_t* reply_len) {
  if (frame.size() < l3 + kIpv6HeaderLen) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  const uint8_t* ip = frame.data() + l3;
  size_t payload_len = LoadBe16(ip + 4);
  if ((ip[0] >> 4) != 6 || l3 + kIpv6HeaderLen + payload_len > frame.size()) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  IpAddr src = LoadIp6(ip + 8);
  IpAddr dst = LoadIp6(ip + 24);
  const uint8_t* l4 = ip + kIpv6HeaderLen;
  bool unicast = dst[0] != 0xff;
  // RoCE to an IPv6 group: UD multicast, as for IPv4.
  const bool roce = ip[6] == kIpProtoUdp && payload_len >= 8 &&
                    LoadBe16(l4 + 2) == kRoceV2Port;
  if (!AcceptsIpv6Dst(dst) && !(roce && !unicast)) {
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  if (roce) {
    ++counters_.rx_nic;
    return RxVerdict::kNic;
  }
  if (kernel_owned_) {
    ++counters_.rx_kernel;
    return RxVerdict::kDropped;
  }
  // An MLD query comes behind a Hop-by-Hop header (Router Alert).
  if (ip[6] == 0 && payload_len >= 8 && l4[0] == kIpProtoIcmpv6) {
    const size_t hbh = (static_cast<size_t>(l4[1]) + 1) * 8;
    if (payload_len >= hbh + 24 && l4[hbh] == kIcmpv6MldQuery &&
        Icmpv6Checksum(src, dst, {l4 + hbh, payload_len - hbh}) == 0) {
      return AnswerGroupQuery(true, reply, reply_len);
    }
  }
  if (ip[6] != kIpProtoIcmpv6 || payload_len < 8) {
    ++counters_.rx_unhandled;
    return RxVerdict::kDropped;
  }
  if (Icmpv6Checksum(src, dst, {l4, payload_len}) != 0) {
    ++counters_.rx_bad_checksum;
    return RxVerdict::kDropped;
  }
  switch (l4[0]) {
    case kIcmpv6NeighbourSolicit:
      return HandleNeighbourSolicit(frame, l3, l4, payload_len, now, reply,
                                    reply_len);
    case kIcmpv6NeighbourAdvert: {
      if (ip[7] != 255 || payload_len < 24) {
        ++counters_.rx_malformed;
        return RxVerdict::kDropped;
      }
      ++counters_.rx_nd_adverts;
      IpAddr target = LoadIp6(l4 + 8);
      const uint8_t* tll =
          FindLinkAddrOption(l4 + 24, payload_len - 24, kNdOptTargetLinkAddr);
      MacAddr mac;
      std::memcpy(mac.data(), tll != nullptr ? tll : frame.data() + 6, 6);
      // Only answers to our solicitations (entries that exist) are kept.
      cache_->Learn(target, mac, now, /*create=*/false);
      return RxVerdict::kConsumed;
    }
    case kIcmpv6EchoRequest: {
      if (!unicast) {
        ++counters_.rx_unhandled;
        return RxVerdict::kDropped;
      }
      ++counters_.rx_icmpv6_echo;
      size_t len = kIpv6HeaderLen + payload_len;
      size_t hdr = WriteEth(reply, frame.data() + 6, kEtherTypeIpv6, len);
      if (hdr == 0) {
        ++counters_.reply_too_big;
        return RxVerdict::kDropped;
      }
      uint8_t* out = reply.data() + hdr;
      std::memcpy(out, ip, len);
      std::memcpy(out + 8, dst.data(), 16);
      std::memcpy(out + 24, src.data(), 16);
      out[7] = 64;  // hop limit
      uint8_t* icmp = out + kIpv6HeaderLen;
      icmp[0] = kIcmpv6EchoReply;
      StoreBe16(icmp + 2, 0);
      StoreBe16(icmp + 2, Icmpv6Checksum(dst, src, {icmp, payload_len}));
      *reply_len = Pad(reply, hdr + len);
      ++counters_.tx_icmpv6_echo_reply;
      return RxVerdict::kReply;
    }
    default:
      ++counters_.rx_unhandled;
      return RxVerdict::kDropped;
  }
}

RxVerdict NetStack::HandleNeighbourSolicit(std::span<const uint8_t> frame,
                                           size_t l3, const uint8_t* icmp,
                                           size_t icmp_len, nic::TimeNs now,
                                           std::span<uint8_t> reply,
                                           size_t* reply_len) {
  const uint8_t* ip = frame.data() + l3;
  if (ip[7] != 255 || icmp[1] != 0 || icmp_len < 24) {
    ++counters_.rx_malformed;
    return RxVerdict::kDropped;
  }
  IpAddr target = LoadIp6(icmp + 8);
  if (!IsOurAddress(target)) {
    ++counters_.rx_not_for_us;
    return RxVerdict::kDropped;
  }
  ++counters_.rx_nd_solicits;
  IpAddr src = LoadIp6(ip + 8);
  const uint8_t* sll =
      FindLinkAddrOption(icmp + 24, icmp_len - 24, kNdOptSourceLinkAddr);
  bool dad = IsUnspecified(src);
  MacAddr peer_mac;
  std::memcpy(peer_mac.data(), sll != nullptr ? sll : frame.data() + 6, 6);
  if (!dad && sll != nullptr) cache_->Learn(src, peer_mac, now);

  // A duplicate-address probe is answered to all nodes (RFC 4861 7.2.4).
  IpAddr reply_dst = dad ? kAllNodes : src;
  MacAddr dst_mac = dad ? protocol::MulticastMac(kAllNodes) : peer_mac;
  constexpr size_t kNaLen = 32;  // header + target + TLL option
  size_t hdr =
      WriteEth(reply, dst_mac.data(), kEtherTypeIpv6, kIpv6HeaderLen + kNaLen);
  if (hdr == 0) {
    ++counters_.reply_too_big;
    return RxVerdict::kDropped;
  }
  uint8_t* out = reply.data() + hdr;
  std::memset(out, 0, kIpv6HeaderLen + kNaLen);
  out[0] = 0x60;
  StoreBe16(out + 4, kNaLen);
  out[6] = kIpProtoIcmpv6;
  out[7] = 255;
  std::memcpy(out + 8, target.data(), 16);
  std::memcpy(out + 24, reply_dst.data(), 16);
  uint8_t* na = out + kIpv6HeaderLen;
  na[0] = kIcmpv6NeighbourAdvert;
  na[4] = dad ? 0x20 : 0x60;  // Solicited (unless DAD) + Override
  std::memcpy(na + 8, target.data(), 16);
  na[24] = kNdOptTargetLinkAddr;
  na[25] = 1;
  std::memcpy(na + 26, mac_.data(), 6);
  StoreBe16(na + 2, Icmpv6Checksum(target, reply_dst, {na, kNaLen}));
  *reply_len = Pad(reply, hdr + kIpv6HeaderLen + kNaLen);
  ++counters_.tx_nd_adverts;
  return RxVerdict::kReply;
}

size_t NetStack::BuildArpRequest(const IpAddr& target, std::span<uint8_t> out) {
  const IpAddr* src = SourceFor(target, false);
  rx_vlan_tci_ = own_vlan_tci_;
  size_t hdr = WriteEth(out, kBroadcastMac.data(), kEtherTypeArp, kArpLen);
  if (src == nullptr || hdr == 0) return 0;
  uint8_t* arp = out.data() + hdr;
  StoreBe16(arp, 1);
  StoreBe16(arp + 2, kEtherTypeIpv4);
  arp[4] = 6;
  arp[5] = 4;
  StoreBe16(arp + 6, 1);
  std::memcpy(arp + 8, mac_.data(), 6);
  std::memcpy(arp + 14, src->data() + 12, 4);
  std::memset(arp + 18, 0, 6);
  std::memcpy(arp + 24, target.data() + 12, 4);
  ++counters_.tx_arp_requests;
  return Pad(out, hdr + kArpLen);
}

size_t NetStack::BuildNeighbourSolicit(const IpAddr& target,
                                       std::span<uint8_t> out) {
  const IpAddr* src = SourceFor(target, true);
  IpAddr group = SolicitedNode(target);
  MacAddr dst_mac = protocol::MulticastMac(group);
  constexpr size_t kNsLen = 32;  // header + target + SLL option
  rx_vlan_tci_ = own_vlan_tci_;
  size_t hdr =
      WriteEth(out, dst_mac.data(), kEtherTypeIpv6, kIpv6HeaderLen + kNsLen);
  if (src == nullptr || hdr == 0) return 0;
  uint8_t* ip = out.data() + hdr;
  std::memset(ip, 0, kIpv6HeaderLen + kNsLen);
  ip[0] = 0x60;
  StoreBe16(ip + 4, kNsLen);
  ip[6] = kIpProtoIcmpv6;
  ip[7] = 255;
  std::memcpy(ip + 8, src->data(), 16);
  std::memcpy(ip + 24, group.data(), 16);
  uint8_t* ns = ip + kIpv6HeaderLen;
  ns[0] = kIcmpv6NeighbourSolicit;
  std::memcpy(ns + 8, target.data(), 16);
  ns[24] = kNdOptSourceLinkAddr;
  ns[25] = 1;
  std::memcpy(ns + 26, mac_.data(), 6);
  StoreBe16(ns + 2, Icmpv6Checksum(*src, group, {ns, kNsLen}));
  ++counters_.tx_nd_solicits;
  return Pad(out, hdr + kIpv6HeaderLen + kNsLen);
}

std::optional<MacAddr> NetStack::Lookup(const IpAddr& ip,
                                        nic::TimeNs now) const {
  if (IsOurAddress(ip)) return mac_;
  return cache_->Lookup(ip, now);
}

std::optional<MacAddr> NetStack::Resolve(const IpAddr& ip, nic::TimeNs now,
                                         std::span<uint8_t> out,
                                         size_t* out_len) {
  *out_len = 0;
  // One of our own addresses (two QPs of this RNIC, or a UD AH to our own
  // GID): the RNIC loops the frames back internally, as a ConnectX does.
  if (IsOurAddress(ip)) return mac_;
  if (std::optional<MacAddr> mac = cache_->Lookup(ip, now)) return mac;
  if (cache_->ShouldSolicit(ip, now)) {
    *out_len = IsIpv4Mapped(ip) ? BuildArpRequest(ip, out)
                                : BuildNeighbourSolicit(ip, out);
  }
  return std::nullopt;
}

}  // namespace rocemu::emulator
