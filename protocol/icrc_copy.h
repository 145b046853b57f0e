// The payload copied and its CRC taken in one walk over the bytes, for a
// sender's gather of a payload into a frame. ISA-L has no fused CRC-32 copy
// (only crc16_t10dif_copy), so the copy goes in chunks small enough that
// each is CRC'd from L1 right after it was written.
//
// The sender's path (nic/requester.cc) does not use it: measured against
// the copy followed by the ICRC (tests/bench/codec_bench.cc, Send* rows;
// docs/performance.md, issue 37) it is no faster at 4 KiB and slower at
// 64 B, since a frame's payload is still in L1 when the second pass reads
// it, and one walk makes more ISA-L calls per frame.
//
// A receiver must not use it to place a payload into a memory region: the
// ICRC is verified over the whole frame before any byte is placed, since a
// RETH corrupted on the wire can still pass the R_Key and bounds checks and
// would then write somewhere else.
#ifndef ROCEMU_PROTOCOL_ICRC_COPY_H_
#define ROCEMU_PROTOCOL_ICRC_COPY_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/icrc.h"

namespace rocemu::protocol {

// Bytes copied before the CRC catches up with them: a quarter of the
// smallest L1 data cache these hosts have (32 KiB), so source, destination
// and ISA-L's tables stay in L1 together.
inline constexpr size_t kIcrcCopyChunk = 2048;

// Copies src to dst (same size, not overlapping) and extends `acc` over the
// bytes, as memcpy then acc.Update(dst) would.
void CopyAndUpdateIcrc(IcrcAccumulator& acc, std::span<uint8_t> dst,
                       std::span<const uint8_t> src);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_ICRC_COPY_H_
