// Ethernet II and 802.1Q constants shared by the RoCE and MAC Control codecs.
#ifndef ROCEMU_PROTOCOL_ETHERNET_H_
#define ROCEMU_PROTOCOL_ETHERNET_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace rocemu::protocol {

using MacAddr = std::array<uint8_t, 6>;

struct VlanTag {
  uint8_t pcp = 0;  // 3 bits
  bool dei = false;
  uint16_t vid = 0;  // 12 bits

  friend bool operator==(const VlanTag&, const VlanTag&) = default;
};

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
// Shortest frame on the wire without its FCS; shorter frames get zero padding.
inline constexpr size_t kEthMinFrameLen = 60;
inline constexpr size_t kEthFcsLen = 4;

inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIcmpV6 = 58;
inline constexpr size_t kIpv4HeaderLen = 20;
inline constexpr size_t kIpv6HeaderLen = 40;
inline constexpr size_t kUdpHeaderLen = 8;

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_ETHERNET_H_
