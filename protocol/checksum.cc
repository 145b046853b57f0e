#include "protocol/checksum.h"

#include "protocol/ethernet.h"

namespace rocemu::protocol {

uint16_t OnesComplementSum(std::span<const uint8_t> bytes, uint32_t initial) {
  uint64_t sum = initial;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 2; p += 2, n -= 2) sum += uint32_t{p[0]} << 8 | p[1];
  if (n == 1) sum += uint32_t{p[0]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

uint16_t Ipv4HeaderChecksum(std::span<const uint8_t> header) {
  return static_cast<uint16_t>(~OnesComplementSum(header, 0));
}

namespace {

uint16_t PseudoHeaderSum(const uint8_t* l3, bool ipv6, size_t udp_len) {
  // Addresses, then the protocol and the UDP length.
  const uint32_t length_and_proto =
      static_cast<uint32_t>(udp_len) + kIpProtoUdp;
  const std::span<const uint8_t> addrs =
      ipv6 ? std::span<const uint8_t>(l3 + 8, 32)
           : std::span<const uint8_t>(l3 + 12, 8);
  return OnesComplementSum(
      addrs, (length_and_proto & 0xFFFF) + (length_and_proto >> 16));
}

}  // namespace

bool UdpChecksumOk(const uint8_t* l3, bool ipv6, std::span<const uint8_t> udp) {
  return OnesComplementSum(udp, PseudoHeaderSum(l3, ipv6, udp.size())) ==
         0xFFFF;
}

uint16_t UdpChecksum(const uint8_t* l3, bool ipv6,
                     std::span<const uint8_t> udp) {
  const uint16_t pseudo = PseudoHeaderSum(l3, ipv6, udp.size());
  const uint16_t sum = static_cast<uint16_t>(~OnesComplementSum(udp, pseudo));
  return sum == 0 ? 0xFFFF : sum;
}

}  // namespace rocemu::protocol
