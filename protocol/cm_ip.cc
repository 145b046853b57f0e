#include "protocol/cm_ip.h"

#include <cstring>

#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

constexpr uint64_t kPortSpaceMask = 0xFFFFFFFFFFFF0000ull;

void PutAddr(uint8_t ip_version, const IpAddr& a, uint8_t* p) {
  std::memset(p, 0, 16);
  if (ip_version == 4) {
    std::memcpy(p + 12, a.data() + 12, 4);
  } else {
    std::memcpy(p, a.data(), 16);
  }
}

IpAddr GetAddr(uint8_t ip_version, const uint8_t* p) {
  IpAddr a{};
  if (ip_version == 4) {
    a[10] = 0xFF;
    a[11] = 0xFF;
    std::memcpy(a.data() + 12, p + 12, 4);
  } else {
    std::memcpy(a.data(), p, 16);
  }
  return a;
}

}  // namespace

std::optional<IpService> ParseIpServiceId(uint64_t service_id) {
  const uint64_t ps = (service_id & kPortSpaceMask) >> 16;
  if (ps > 0xFFFF) return std::nullopt;  // the upper 32 bits are zero
  switch (static_cast<RdmaPortSpace>(ps)) {
    case RdmaPortSpace::kTcp:
    case RdmaPortSpace::kUdp:
    case RdmaPortSpace::kIpoib:
    case RdmaPortSpace::kIb:
      return IpService{static_cast<RdmaPortSpace>(ps),
                       static_cast<uint16_t>(service_id & 0xFFFF)};
    default:
      return std::nullopt;
  }
}

void EncodeCmIpHeader(const CmIpHeader& h, std::span<uint8_t> out) {
  uint8_t* p = out.data();
  p[0] = static_cast<uint8_t>((h.major_version & 0xF) << 4 |
                              (h.minor_version & 0xF));
  p[1] = static_cast<uint8_t>((h.ip_version & 0xF) << 4);
  StoreBe16(p + 2, h.src_port);
  PutAddr(h.ip_version, h.src_addr, p + 4);
  PutAddr(h.ip_version, h.dst_addr, p + 20);
}

std::optional<CmIpHeader> ParseCmIpHeader(std::span<const uint8_t> in) {
  if (in.size() < kCmIpHeaderSize) return std::nullopt;
  const uint8_t* p = in.data();
  CmIpHeader h;
  h.major_version = p[0] >> 4;
  h.minor_version = p[0] & 0xF;
  h.ip_version = p[1] >> 4;
  if (p[0] != 0 || (h.ip_version != 4 && h.ip_version != 6)) {
    return std::nullopt;
  }
  h.src_port = LoadBe16(p + 2);
  h.src_addr = GetAddr(h.ip_version, p + 4);
  h.dst_addr = GetAddr(h.ip_version, p + 20);
  return h;
}

}  // namespace rocemu::protocol
