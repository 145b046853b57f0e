#include "protocol/icrc_copy.h"

#include <algorithm>
#include <cstring>

namespace rocemu::protocol {

void CopyAndUpdateIcrc(IcrcAccumulator& acc, std::span<uint8_t> dst,
                       std::span<const uint8_t> src) {
  const size_t n = std::min(dst.size(), src.size());
  for (size_t at = 0; at < n; at += kIcrcCopyChunk) {
    const size_t len = std::min(kIcrcCopyChunk, n - at);
    std::memcpy(dst.data() + at, src.data() + at, len);
    acc.Update(dst.subspan(at, len));
  }
}

}  // namespace rocemu::protocol
