// rdma_cm over IP: the service IDs it listens and connects on, and the
// 36-byte header it puts at the start of REQ and SIDR_REQ private data
// (Annex A11, "RDMA IP CM Service"). No state.
#ifndef ROCEMU_PROTOCOL_CM_IP_H_
#define ROCEMU_PROTOCOL_CM_IP_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "protocol/frame.h"

namespace rocemu::protocol {

// enum rdma_ucm_port_space.
enum class RdmaPortSpace : uint16_t {
  kIpoib = 0x0002,
  kTcp = 0x0106,
  kUdp = 0x0111,
  kIb = 0x013F,
};

// ServiceID = port space << 16 | port (0x0000000001061C06: TCP port 7174).
constexpr uint64_t IpServiceId(RdmaPortSpace ps, uint16_t port) {
  return uint64_t{static_cast<uint16_t>(ps)} << 16 | port;
}

struct IpService {
  RdmaPortSpace port_space = RdmaPortSpace::kTcp;
  uint16_t port = 0;
};
// The port space and port of an rdma_cm service ID (TCP, UDP, IPoIB, IB);
// nullopt for any other service ID. Whether the REQ carries the IP header
// depends on the address family, not the port space: only AF_IB ids leave
// it out, and AF_IB does not exist on RoCE, so every rdma_cm REQ seen here
// carries it.
std::optional<IpService> ParseIpServiceId(uint64_t service_id);

// The REQ / SIDR_REQ private data rdma_cm reserves for its header, and what
// is left for the application.
inline constexpr size_t kCmIpHeaderSize = 36;
inline constexpr size_t kRdmaCmReqPrivateDataSize = 92 - kCmIpHeaderSize;
inline constexpr size_t kRdmaCmSidrReqPrivateDataSize = 216 - kCmIpHeaderSize;

// The header: byte 0 version (major.minor nibbles, 0.0), byte 1 IP version
// in the high nibble, 2 the source port, 4 and 20 the source and
// destination addresses (16 bytes each; an IPv4 address in the last 4 with
// zeros before it, not the ::ffff: mapping).
struct CmIpHeader {
  uint8_t major_version = 0;
  uint8_t minor_version = 0;
  uint8_t ip_version = 4;  // 4 or 6
  uint16_t src_port = 0;
  // As IpAddr: IPv4 addresses in their mapped form ::ffff:a.b.c.d, whatever
  // the wire layout.
  IpAddr src_addr{};
  IpAddr dst_addr{};

  friend bool operator==(const CmIpHeader&, const CmIpHeader&) = default;
};

// Writes the 36 bytes at out[0, 36).
void EncodeCmIpHeader(const CmIpHeader& h, std::span<uint8_t> out);
// nullopt when fewer than 36 bytes are given, the version is not 0.0 or
// the IP version is neither 4 nor 6 (Linux's rdma_cm refuses those REQs).
std::optional<CmIpHeader> ParseCmIpHeader(std::span<const uint8_t> in);

// A REQ's or SIDR_REQ's private data: the IP header when `ip` (an IP
// service), then the consumer's bytes (the caller checked they fit:
// CmConsumerRoom).
template <size_t N>
void PutCmPrivateData(const std::optional<CmIpHeader>& ip,
                      std::span<const uint8_t> consumer,
                      std::array<uint8_t, N>& out) {
  size_t at = 0;
  if (ip.has_value()) {
    EncodeCmIpHeader(*ip, out);
    at = kCmIpHeaderSize;
  }
  std::copy(consumer.begin(), consumer.end(), out.begin() + at);
}
// How many consumer bytes a message's `total` bytes of private data hold.
constexpr size_t CmConsumerRoom(size_t total, bool ip) {
  return total - (ip ? kCmIpHeaderSize : 0);
}
// The consumer's bytes of a received message's private data.
template <size_t N>
std::span<const uint8_t> CmConsumerData(const std::optional<CmIpHeader>& ip,
                                        const std::array<uint8_t, N>& in) {
  return std::span<const uint8_t>(in).subspan(ip.has_value() ? kCmIpHeaderSize
                                                             : 0);
}

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_CM_IP_H_
