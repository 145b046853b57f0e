#include "protocol/checksum.h"

#include <bit>
#include <cstring>

#include "protocol/ethernet.h"

namespace rocemu::protocol {

namespace {

uint16_t Swap16(uint16_t v) { return static_cast<uint16_t>(v << 8 | v >> 8); }

// The one's-complement sum does not depend on byte order (RFC 1071 2(B)), so
// native 32-bit words are summed and the result is swapped once at the end.
uint16_t ToNative(uint16_t be) {
  return std::endian::native == std::endian::little ? Swap16(be) : be;
}

}  // namespace

uint16_t OnesComplementSum(std::span<const uint8_t> bytes, uint32_t initial) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  uint64_t sum = ToNative(static_cast<uint16_t>(initial)) +
                 uint64_t{ToNative(static_cast<uint16_t>(initial >> 16))};
  if (n == kIpv4HeaderLen) {
    // An IPv4 header without options, built and verified for every frame:
    // five words the compiler can unroll, not the loop below.
    uint32_t w[5];
    std::memcpy(w, p, sizeof(w));
    sum += uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4];
    n = 0;
  }
  for (; n >= 4; p += 4, n -= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    sum += w;
  }
  if (n >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    sum += w;
    p += 2;
    n -= 2;
  }
  if (n == 1) sum += ToNative(static_cast<uint16_t>(p[0] << 8));
  sum = (sum & 0xFFFFFFFF) + (sum >> 32);
  sum = (sum & 0xFFFFFFFF) + (sum >> 32);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return ToNative(static_cast<uint16_t>(sum));
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
