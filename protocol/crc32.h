// CRC-32 (IEEE 802.3, reflected, zlib-compatible, seedable) through ISA-L,
// for the ICRC and the Ethernet FCS. Every call goes through here for what
// ISA-L's AVX-512 kernels leave behind.
//
// Debian's ISA-L (2.30) dispatches crc32_gzip_refl to a VPCLMULQDQ kernel
// on AVX-512 cores, and on some lengths (a 256-byte RDMA WRITE's frame is
// one) it returns with the upper halves of the vector registers still
// dirty: no VZEROUPPER. On Intel cores every legacy-SSE instruction the
// process runs after that (ours and DPDK's, built for SSE4.2) carries a
// dependency on those upper bits and runs slower, until the process exits.
// Measured on a Xeon: a daemon's 64 B WRITE rate fell from 2.3 to 1.0 Mpps
// for good after one 256-byte WRITE, and stayed at 2.3 with this
// (docs/performance.md, 2026-11-29). VZEROUPPER costs next to nothing
// where the dirty state costs nothing, so it is issued on every AVX CPU.
#ifndef ROCEMU_PROTOCOL_CRC32_H_
#define ROCEMU_PROTOCOL_CRC32_H_

#include <isa-l/crc.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocemu::protocol {

// Whether this CPU and OS run AVX (VZEROUPPER exists); set at load time.
extern const bool kCpuHasAvx;

// Zeroes the upper halves of ymm/zmm0-15. Safe between calls: the SysV ABI
// keeps no vector register live across one, and the lower 128 bits stay.
inline void ClearUpperVectorState() {
#if defined(__x86_64__)
  if (kCpuHasAvx) __asm__ volatile("vzeroupper");
#endif
}

inline uint32_t Crc32(uint32_t seed, const uint8_t* data, size_t len) {
  const uint32_t crc = crc32_gzip_refl(seed, data, len);
  ClearUpperVectorState();
  return crc;
}

inline uint32_t Crc32(uint32_t seed, std::span<const uint8_t> bytes) {
  return Crc32(seed, bytes.data(), bytes.size());
}

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_CRC32_H_
