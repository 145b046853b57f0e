// Payload checks of rocemu-pingpong. Both sides echo: each message a side
// sends is the last one it received (ibv_rc_pingpong sends from the buffer
// its receives land in), so after the client's first message every message
// in both directions carries the same bytes. --verify turns that into a
// byte-exact check: the client seeds its first message with a pattern that
// depends on the byte offset (a misplaced segment shows), and each side
// compares every message it receives with the one it last sent.
#ifndef ROCEMU_VERBS_TOOLS_PINGPONG_PAYLOAD_H_
#define ROCEMU_VERBS_TOOLS_PINGPONG_PAYLOAD_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "verbs/tools/pingpong_dest.h"

namespace rocemu::pingpong {

// The bytes rdma-core's tools fill their buffers with.
inline constexpr uint8_t kFillByte = 0x7b;
// A UD receive starts with the 40-byte GRH area.
inline constexpr size_t kGrhSize = 40;

// Little-endian splitmix64 words of `seed + offset / 8`.
void FillPattern(std::span<uint8_t> buf, uint64_t seed);
// The client's pattern seed: its QPN and PSN (random per run).
inline uint64_t PatternSeed(uint32_t qpn, uint32_t psn) {
  return (uint64_t{qpn} << 24) | psn;
}

// The offset of the first byte that differs (sizes must be equal; a size
// difference reports the shorter size).
std::optional<size_t> FirstMismatch(std::span<const uint8_t> got,
                                    std::span<const uint8_t> want);

// -c of the rdma-core tools: the client zeroes the first byte of every page
// of its message, and checks at the end that they came back zero.
void MarkPages(std::span<uint8_t> buf, size_t page_size);
std::vector<size_t> BadPages(std::span<const uint8_t> buf, size_t page_size);

// The GRH area of a UD receive names `peer` as its source: for an
// IPv4-mapped GID bytes 20..39 hold the IPv4 header (version 4, source
// address at 32), otherwise the IPv6 header's source GID is at 8.
bool GrhFromPeer(std::span<const uint8_t> grh, const Gid& peer);

// The echo check: message k (1-based) must equal what this side last sent,
// except the server's first message, which is the client's choice.
class EchoVerifier {
 public:
  explicit EchoVerifier(bool client) : client_(client) {}
  // Returns the first bad offset, or nullopt when the message is right.
  std::optional<size_t> Check(std::span<const uint8_t> received,
                              std::span<const uint8_t> last_sent) {
    ++messages_;
    if (!client_ && messages_ == 1) return std::nullopt;
    return FirstMismatch(received, last_sent);
  }
  uint32_t messages() const { return messages_; }

 private:
  bool client_;
  uint32_t messages_ = 0;
};

}  // namespace rocemu::pingpong

#endif  // ROCEMU_VERBS_TOOLS_PINGPONG_PAYLOAD_H_
