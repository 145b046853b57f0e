// The Internet checksum (RFC 1071) for IPv4 headers, ICMP and ICMPv6.
#ifndef ROCEMU_EMULATOR_NET_CHECKSUM_H_
#define ROCEMU_EMULATOR_NET_CHECKSUM_H_

#include <cstdint>
#include <span>

#include "emulator/net/net_types.h"

namespace rocemu::emulator {

// One's-complement sum of 16-bit big-endian words, not folded or inverted,
// so that partial sums (pseudo-header + payload) can be added.
uint32_t ChecksumPartial(std::span<const uint8_t> data, uint32_t sum = 0);
// Folds and inverts: the value to store in the checksum field. Verifying a
// region that includes its checksum field yields 0.
uint16_t ChecksumFinish(uint32_t sum);
inline uint16_t InternetChecksum(std::span<const uint8_t> data) {
  return ChecksumFinish(ChecksumPartial(data));
}
// ICMPv6 checksum over the IPv6 pseudo-header (src, dst, length, next
// header 58) and the ICMPv6 message.
uint16_t Icmpv6Checksum(const IpAddr& src, const IpAddr& dst,
                        std::span<const uint8_t> message);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_NET_CHECKSUM_H_
