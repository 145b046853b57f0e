// RoCEv2 invariant CRC (IBTA annex A17.3.3): CRC-32 over 8 bytes of 1s (in
// place of the LRH), the IP, UDP and BTH headers with their variant fields set
// to 1s, the rest of the transport headers and the payload with its pad. It
// is stored least-significant byte first after the pad.
//
// The CRC itself is ISA-L's crc32_gzip_refl (protocol/crc32.h), so a
// masked copy of the headers and then each payload segment chain without
// copying the payload.
#ifndef ROCEMU_PROTOCOL_ICRC_H_
#define ROCEMU_PROTOCOL_ICRC_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocemu::protocol {

// Bytes of the frame, from the IP header on, whose variant fields are masked:
// IP header + UDP header + BTH.
inline constexpr size_t kIcrcMaskedLenIpv4 = 20 + 8 + 12;
inline constexpr size_t kIcrcMaskedLenIpv6 = 40 + 8 + 12;

// Accumulates the ICRC over a frame that may be split into segments (e.g. a
// chain of mbufs). Feed every byte from the IP header up to, and excluding,
// the ICRC, in order.
class IcrcAccumulator {
 public:
  // `l3` starts at the IP header (no IPv4 options) and holds at least the
  // masked length; all of it is consumed. Returns false if it is too short.
  bool Begin(std::span<const uint8_t> l3, bool ipv6);
  void Update(std::span<const uint8_t> bytes);
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

// The ICRC of a contiguous frame: `l3` runs from the IP header to the byte
// before the ICRC. Returns 0 if l3 is shorter than the masked headers.
uint32_t ComputeIcrc(std::span<const uint8_t> l3, bool ipv6);

// `l3` runs from the IP header to the end of the ICRC.
bool VerifyIcrc(std::span<const uint8_t> l3, bool ipv6);

inline void StoreIcrc(uint32_t icrc, uint8_t* p) {
  p[0] = static_cast<uint8_t>(icrc);
  p[1] = static_cast<uint8_t>(icrc >> 8);
  p[2] = static_cast<uint8_t>(icrc >> 16);
  p[3] = static_cast<uint8_t>(icrc >> 24);
}
inline uint32_t LoadIcrc(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_ICRC_H_
