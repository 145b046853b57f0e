#include "verbs/tools/pingpong_payload.h"

#include <algorithm>
#include <array>

#include "verbs/tools/splitmix64.h"

namespace rocemu::pingpong {

void FillPattern(std::span<uint8_t> buf, uint64_t seed) {
  for (size_t i = 0; i < buf.size(); ++i) {
    const uint64_t word = SplitMix64(seed + i / 8);
    buf[i] = static_cast<uint8_t>(word >> (8 * (i % 8)));
  }
}

std::optional<size_t> FirstMismatch(std::span<const uint8_t> got,
                                    std::span<const uint8_t> want) {
  const size_t n = std::min(got.size(), want.size());
  const auto [g, w] = std::mismatch(got.begin(), got.begin() + n, want.begin());
  if (g != got.begin() + n) return static_cast<size_t>(g - got.begin());
  if (got.size() != want.size()) return n;
  return std::nullopt;
}

void MarkPages(std::span<uint8_t> buf, size_t page_size) {
  for (size_t i = 0; i < buf.size(); i += page_size) buf[i] = 0;
}

std::vector<size_t> BadPages(std::span<const uint8_t> buf, size_t page_size) {
  std::vector<size_t> bad;
  for (size_t i = 0; i < buf.size(); i += page_size)
    if (buf[i] != 0) bad.push_back(i / page_size);
  return bad;
}

bool GrhFromPeer(std::span<const uint8_t> grh, const Gid& peer) {
  if (grh.size() < kGrhSize) return false;
  std::array<uint8_t, 4> ipv4{};
  if (GidIpv4(peer, &ipv4))
    return (grh[20] >> 4) == 4 &&
           std::equal(ipv4.begin(), ipv4.end(), grh.begin() + 32);
  return (grh[0] >> 4) == 6 &&
         std::equal(peer.begin(), peer.end(), grh.begin() + 8);
}

}  // namespace rocemu::pingpong
