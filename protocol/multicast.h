// RoCEv2 multicast addressing: a multicast GID is an IP multicast address
// (IPv4 224.0.0.0/4, stored IPv4-mapped, or IPv6 ff00::/8), its frames go
// to the Ethernet group MAC that address maps to (RFC 1112 section 6.4,
// RFC 2464 section 7) and carry BTH.DestQP 0xFFFFFF (IBTA 10.5.2.2, the
// "permissive" QPN that only a multicast UD SEND may carry).
#ifndef ROCEMU_PROTOCOL_MULTICAST_H_
#define ROCEMU_PROTOCOL_MULTICAST_H_

#include <cstdint>

#include "protocol/ethernet.h"
#include "protocol/frame.h"

namespace rocemu::protocol {

inline constexpr uint32_t kMulticastQpn = 0xFFFFFF;

// True for IPv4-mapped 224.0.0.0/4 and for IPv6 ff00::/8.
constexpr bool IsMulticastIp(const IpAddr& ip) {
  return IsIpv4Mapped(ip) ? (ip[12] & 0xF0) == 0xE0 : ip[0] == 0xFF;
}

// 01:00:5e + the low 23 bits of an IPv4 group; 33:33 + the low 32 bits of
// an IPv6 one. Only meaningful when IsMulticastIp(ip).
constexpr MacAddr MulticastMac(const IpAddr& ip) {
  if (IsIpv4Mapped(ip)) {
    return {0x01,   0x00,  0x5E, static_cast<uint8_t>(ip[13] & 0x7F),
            ip[14], ip[15]};
  }
  return {0x33, 0x33, ip[12], ip[13], ip[14], ip[15]};
}

// The group MACs MulticastMac produces (not broadcast, not the 802.1
// slow-protocol and PFC addresses 01:80:c2:...).
constexpr bool IsIpMulticastMac(const uint8_t* mac) {
  return (mac[0] == 0x01 && mac[1] == 0x00 && mac[2] == 0x5E &&
          (mac[3] & 0x80) == 0) ||
         (mac[0] == 0x33 && mac[1] == 0x33);
}

static_assert(IsMulticastIp(Ipv4Mapped(239, 1, 2, 3)));
static_assert(!IsMulticastIp(Ipv4Mapped(10, 0, 0, 1)));
static_assert(MulticastMac(Ipv4Mapped(239, 129, 2, 3)) ==
              MacAddr{0x01, 0x00, 0x5E, 0x01, 0x02, 0x03});

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_MULTICAST_H_
