// The address record ibv_rc_pingpong and ibv_ud_pingpong exchange over TCP
// before any RDMA traffic: "LLLL:QQQQQQ:PPPPPP:GGGG...G\0" (LID, QPN, PSN in
// hex, the GID as 32 hex digits of its 16 bytes in wire order), 52 bytes in
// each direction. rocemu-pingpong must produce and accept exactly this so
// that it can face rdma-core's tools.
#ifndef ROCEMU_VERBS_TOOLS_PINGPONG_DEST_H_
#define ROCEMU_VERBS_TOOLS_PINGPONG_DEST_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace rocemu::pingpong {

using Gid = std::array<uint8_t, 16>;

struct Dest {
  uint16_t lid = 0;  // 0 on Ethernet (RoCE has no LIDs)
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  Gid gid{};
  bool operator==(const Dest&) const = default;
};

// sizeof "0000:000000:000000:00000000000000000000000000000000" in the
// rdma-core examples: the terminating NUL travels too.
inline constexpr size_t kDestMessageSize = 52;
// The client's acknowledgement: sizeof "done" (with its NUL).
inline constexpr size_t kDoneMessageSize = 5;

using DestMessage = std::array<char, kDestMessageSize>;

DestMessage FormatDest(const Dest& dest);
// Strict: exactly the layout above, hex digits only, NUL at the end, QPN
// and PSN within 24 bits. The error names the first offending field.
absl::StatusOr<Dest> ParseDest(std::span<const char> message);

// The GID as inet_ntop(AF_INET6) prints it (what the tools show as "GID").
std::string GidToText(const Gid& gid);
// True when the GID's interface id (its low 8 bytes) is non-zero: the test
// the rdma-core examples use to decide that the peer needs a GRH, i.e. that
// it gave a usable RoCE GID (without -g they send an all-zero GID).
bool GidHasInterfaceId(const Gid& gid);
// The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), in network
// order as 4 bytes; false for any other GID.
bool GidIpv4(const Gid& gid, std::array<uint8_t, 4>* ipv4);

}  // namespace rocemu::pingpong

#endif  // ROCEMU_VERBS_TOOLS_PINGPONG_DEST_H_
