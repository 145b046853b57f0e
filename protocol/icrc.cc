#include "protocol/icrc.h"

#include <isa-l/crc.h>

#include <cstring>

#include "protocol/opcode.h"

namespace rocemu::protocol {
namespace {

constexpr size_t kLrhStandInLen = 8;

uint32_t Crc(uint32_t seed, const uint8_t* p, size_t n) {
  return crc32_gzip_refl(seed, p, n);
}

}  // namespace

bool IcrcAccumulator::Begin(std::span<const uint8_t> l3, bool ipv6) {
  const size_t masked_len = ipv6 ? kIcrcMaskedLenIpv6 : kIcrcMaskedLenIpv4;
  if (l3.size() < masked_len) return false;
  // The variant fields are masked in a copy, so the frame is never written.
  uint8_t buf[kLrhStandInLen + kIcrcMaskedLenIpv6];
  std::memset(buf, 0xFF, kLrhStandInLen);
  uint8_t* h = buf + kLrhStandInLen;
  std::memcpy(h, l3.data(), masked_len);
  size_t udp;
  if (ipv6) {
    // Version stays; traffic class and flow label become 1s; hop limit too.
    h[0] |= 0x0F;
    h[1] = 0xFF;
    h[2] = 0xFF;
    h[3] = 0xFF;
    h[7] = 0xFF;
    udp = 40;
  } else {
    h[1] = 0xFF;   // TOS (DSCP + ECN)
    h[8] = 0xFF;   // TTL
    h[10] = 0xFF;  // header checksum
    h[11] = 0xFF;
    udp = 20;
  }
  h[udp + 6] = 0xFF;  // UDP checksum
  h[udp + 7] = 0xFF;
  h[udp + 8 + 4] = 0xFF;  // BTH F, B, resv6
  crc_ = Crc(0, buf, kLrhStandInLen + masked_len);
  crc_ = Crc(crc_, l3.data() + masked_len, l3.size() - masked_len);
  return true;
}

void IcrcAccumulator::Update(std::span<const uint8_t> bytes) {
  crc_ = Crc(crc_, bytes.data(), bytes.size());
}

uint32_t ComputeIcrc(std::span<const uint8_t> l3, bool ipv6) {
  IcrcAccumulator acc;
  if (!acc.Begin(l3, ipv6)) return 0;
  return acc.value();
}

bool VerifyIcrc(std::span<const uint8_t> l3, bool ipv6) {
  const size_t masked_len = ipv6 ? kIcrcMaskedLenIpv6 : kIcrcMaskedLenIpv4;
  if (l3.size() < masked_len + kIcrcLen) return false;
  const size_t body = l3.size() - kIcrcLen;
  return ComputeIcrc(l3.first(body), ipv6) == LoadIcrc(l3.data() + body);
}

}  // namespace rocemu::protocol
