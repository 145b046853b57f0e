#include "protocol/icrc.h"

#include <bit>
#include <cstring>

#include "protocol/crc32.h"
#include "protocol/opcode.h"

namespace rocemu::protocol {
namespace {

// The masked prefix is built only with full 16-byte stores: ISA-L reads it
// with 16-byte loads, and a load that spans several smaller pending stores
// cannot be forwarded and stalls (measured in docs/performance.md: 51 ns ->
// 20 ns for a 122-byte frame).
using V16 = uint8_t __attribute__((vector_size(16)));
using V2x64 = uint64_t __attribute__((vector_size(16)));

constexpr size_t kLrhStandInLen = 8;
// Masked prefix: 8 bytes of 1s, then l3 up to the last masked byte rounded so
// that the prefix is whole 16-byte chunks (IPv4: 3 chunks = l3[0, 40), the
// whole BTH; IPv6: 4 chunks = l3[0, 56), BTH bytes 8-11 come from the frame).
constexpr size_t kChunksIpv4 = 3;
constexpr size_t kChunksIpv6 = 4;
// Frames up to this many bytes from the LRH stand-in on (the masked prefix
// and everything after it) are CRC'd in one call over a stack copy: ACKs,
// CNPs, small WRITEs and SENDs.
constexpr size_t kSingleCallLen = 256;

struct Masks {
  alignas(16) uint8_t ipv4[16 * kChunksIpv4] = {};
  alignas(16) uint8_t ipv6[16 * kChunksIpv6] = {};
};

// Offsets below are into the prefix, i.e. l3 offset + 8.
constexpr Masks MakeMasks() {
  Masks m;
  for (size_t i = 0; i < kLrhStandInLen; ++i) m.ipv4[i] = m.ipv6[i] = 0xFF;
  constexpr size_t o = kLrhStandInLen;
  m.ipv4[o + 1] = 0xFF;                    // TOS (DSCP + ECN)
  m.ipv4[o + 8] = 0xFF;                    // TTL
  m.ipv4[o + 10] = m.ipv4[o + 11] = 0xFF;  // header checksum
  m.ipv4[o + 26] = m.ipv4[o + 27] = 0xFF;  // UDP checksum
  m.ipv4[o + 28 + 4] = 0xFF;               // BTH F, B, resv6
  m.ipv6[o + 0] = 0x0F;                    // traffic class, high nibble
  m.ipv6[o + 1] = 0xFF;                    // traffic class + flow label
  m.ipv6[o + 2] = m.ipv6[o + 3] = 0xFF;    // flow label
  m.ipv6[o + 7] = 0xFF;                    // hop limit
  m.ipv6[o + 46] = m.ipv6[o + 47] = 0xFF;  // UDP checksum
  m.ipv6[o + 48 + 4] = 0xFF;               // BTH F, B, resv6
  return m;
}
constexpr Masks kMasks = MakeMasks();

inline V16 Load16(const uint8_t* p) {
  V16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

bool IcrcAccumulator::Begin(std::span<const uint8_t> l3, bool ipv6) {
  if (l3.size() < (ipv6 ? kIcrcMaskedLenIpv6 : kIcrcMaskedLenIpv4)) {
    return false;
  }
  const size_t chunks = ipv6 ? kChunksIpv6 : kChunksIpv4;
  const uint8_t* mask = ipv6 ? kMasks.ipv6 : kMasks.ipv4;
  alignas(16) uint8_t buf[kSingleCallLen];
  const uint8_t* p = l3.data();
  // Chunk 0: the 8 bytes of 1s (all set by the mask) and l3[0, 8).
  uint64_t first;
  std::memcpy(&first, p, sizeof(first));
  const V2x64 c0 = {0, first};
  const V16 v0 = std::bit_cast<V16>(c0) | Load16(mask);
  std::memcpy(buf, &v0, 16);
  for (size_t k = 1; k < chunks; ++k) {
    const V16 v = Load16(p + 8 + 16 * (k - 1)) | Load16(mask + 16 * k);
    std::memcpy(buf + 16 * k, &v, 16);
  }
  const size_t prefix = 16 * chunks;
  const size_t consumed = prefix - kLrhStandInLen;
  const size_t rest = l3.size() - consumed;
  if (prefix + rest <= sizeof(buf)) {
    // One call over a copy: ISA-L's fixed cost per call (and its slow path
    // for a tail under 16 bytes, an ACK's AETH) is more than the copy of a
    // small frame's remaining headers and payload.
    std::memcpy(buf + prefix, p + consumed, rest);
    crc_ = Crc32(0, buf, prefix + rest);
    return true;
  }
  crc_ = Crc32(0, buf, prefix);
  crc_ = Crc32(crc_, p + consumed, rest);
  return true;
}

void IcrcAccumulator::Update(std::span<const uint8_t> bytes) {
  crc_ = Crc32(crc_, bytes.data(), bytes.size());
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
