// Link and network addresses as the daemon's net stack handles them. The
// aliases are the same types as config:: and protocol:: use, so values pass
// between them unchanged.
#ifndef ROCEMU_EMULATOR_NET_NET_TYPES_H_
#define ROCEMU_EMULATOR_NET_NET_TYPES_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "protocol/frame.h"
#include "protocol/wire.h"

namespace rocemu::emulator {

using MacAddr = std::array<uint8_t, 6>;
// IPv6, or IPv4 as ::ffff:a.b.c.d (the RoCEv2 GID form).
using IpAddr = std::array<uint8_t, 16>;

inline constexpr MacAddr kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint8_t kIpProtoIgmp = 2;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr size_t kIpv6HeaderLen = 40;

inline IpAddr Ipv4Mapped(const uint8_t v4[4]) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, v4[0], v4[1], v4[2], v4[3]};
}
using protocol::IsIpv4Mapped;

// One big-endian load and store for the whole project: protocol/wire.h's.
using protocol::LoadBe16;
using protocol::StoreBe16;

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_NET_NET_TYPES_H_
