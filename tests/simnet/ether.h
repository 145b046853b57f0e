// The few Ethernet/IP facts a switch needs: where the IP header starts, the
// frame's priority, ECN CE marking, and 802.3x PAUSE / 802.1Qbb PFC frames.
// Deliberately small and independent of protocol/ so that the simulator can
// carry (and check) frames that protocol/ itself produces.
#ifndef ROCEMU_TESTS_SIMNET_ETHER_H_
#define ROCEMU_TESTS_SIMNET_ETHER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rocemu::simnet {

using MacAddr = std::array<uint8_t, 6>;

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr size_t kMinFrameLen = 60;  // without FCS
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr uint16_t kMacControlPause = 0x0001;
inline constexpr uint16_t kMacControlPfc = 0x0101;
inline constexpr MacAddr kMacControlDst = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr uint8_t kEcnNotEct = 0b00;
inline constexpr uint8_t kEcnEct1 = 0b01;
inline constexpr uint8_t kEcnEct0 = 0b10;
inline constexpr uint8_t kEcnCe = 0b11;

inline uint16_t Load16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
// A MAC address as a 48-bit integer key.
inline uint64_t MacKey(const uint8_t* p) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i) k = (k << 8) | p[i];
  return k;
}
inline uint64_t MacKey(const MacAddr& m) { return MacKey(m.data()); }

struct L2Info {
  bool valid = false;     // at least an Ethernet header (and the tag)
  bool has_vlan = false;  // one 802.1Q tag
  uint8_t pcp = 0;
  uint16_t ethertype = 0;  // inner ethertype when tagged
  size_t l3_offset = 0;
  bool ipv4 = false;  // and the IP header is long enough to read TOS/TC
  bool ipv6 = false;
};
L2Info ParseL2(std::span<const uint8_t> frame);

// IP DSCP and ECN of an IPv4/IPv6 frame; false for anything else.
bool ReadDscpEcn(std::span<const uint8_t> frame, uint8_t* dscp, uint8_t* ecn);

enum class CeMarkResult : uint8_t { kNotIp, kNotEct, kMarked, kAlreadyCe };
// Sets ECN to CE on an ECT(0)/ECT(1) frame, fixing the IPv4 header checksum.
// The RoCE ICRC masks these bits, so it stays valid.
CeMarkResult MarkCe(std::span<uint8_t> frame);

// RFC 1071 checksum of an IPv4 header (the checksum field taken as is: 0 when
// computing, the stored value when verifying, which then yields 0).
uint16_t Ipv4HeaderChecksum(std::span<const uint8_t> header);

struct MacControl {
  bool pause = false;  // 802.3x: stops every priority, time in quanta[0]
  uint8_t enable_vector = 0;
  std::array<uint16_t, 8> quanta{};
};
// True for a well-formed PAUSE or PFC frame (0x8808 with opcode 0x0001 or
// 0x0101 and the high enable octet 0).
bool ParseMacControl(std::span<const uint8_t> frame, MacControl* out);
// Both write a 60-byte frame (FCS is the carrier's business) and return 60,
// or 0 if `out` is too small.
size_t BuildPfcFrame(const MacAddr& src, uint8_t enable_vector,
                     const std::array<uint16_t, 8>& quanta,
                     std::span<uint8_t> out);
size_t BuildPauseFrame(const MacAddr& src, uint16_t quanta,
                       std::span<uint8_t> out);

// Duration of `quanta` pause quanta (512 bit times each) at `rate_bps`,
// rounded up to whole nanoseconds.
uint64_t PauseQuantaToNs(uint32_t quanta, uint64_t rate_bps);

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_ETHER_H_
