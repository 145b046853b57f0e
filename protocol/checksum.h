// The Internet checksum (RFC 1071) for the IPv4 header and the UDP datagram.
#ifndef ROCEMU_PROTOCOL_CHECKSUM_H_
#define ROCEMU_PROTOCOL_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocemu::protocol {

// One's-complement sum of big-endian 16-bit words, folded to 16 bits (an odd
// last byte is padded with zero). Not complemented.
uint16_t OnesComplementSum(std::span<const uint8_t> bytes, uint32_t initial);

// The value to store in an IPv4 header's checksum field; the field itself must
// hold 0 when computing. `header` is IHL*4 bytes.
uint16_t Ipv4HeaderChecksum(std::span<const uint8_t> header);

// UDP checksum over the pseudo-header and `udp` (header + data, checksum field
// as it is in the buffer, so set it to 0 first when computing). `l3` is the IP
// header, for the addresses. A computed 0 is sent as 0xFFFF (RFC 768).
uint16_t UdpChecksum(const uint8_t* l3, bool ipv6,
                     std::span<const uint8_t> udp);

// True if a received UDP datagram's non-zero checksum is right.
bool UdpChecksumOk(const uint8_t* l3, bool ipv6, std::span<const uint8_t> udp);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_CHECKSUM_H_
