// What a fabric switch reads from a frame: the Ethernet type (one 802.1Q
// tag allowed), and for IPv4 the DSCP/ECN, addresses, protocol and UDP
// ports (ECMP on the RoCEv2 source port). Reads a copy of the frame's
// first bytes; knows nothing of ns-3.
#ifndef ROCEMU_NS3_FRAME_FIELDS_H_
#define ROCEMU_NS3_FRAME_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace rocemu::ns3sim {

// Bytes of a frame FrameFields needs: Ethernet, one tag, IPv4 without
// options, UDP ports.
inline constexpr size_t kFieldBytes = 14 + 4 + 20 + 4;

struct FrameFields {
  bool mac_control = false;  // EtherType 0x8808 (PAUSE/PFC)
  bool ipv4 = false;         // and the header is long enough to read
  bool has_vlan = false;
  uint8_t pcp = 0;
  size_t l3_offset = 0;
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t protocol = 0;
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;  // UDP only
  uint16_t dst_port = 0;
};

// `head` is the frame's first min(frame length, kFieldBytes) bytes.
FrameFields ParseFields(std::span<const uint8_t> head);

// Sets CE in the IPv4 header at `l3` (the frame was ECT), fixing the header
// checksum; the RoCEv2 ICRC masks the ECN bits, so it stays valid.
void MarkCeIpv4(uint8_t* l3);

// The ECMP hash of a flow's 5-tuple under `seed` (per switch, so that
// consecutive tiers do not pick the same index for every flow).
uint64_t EcmpHash(const FrameFields& f, uint64_t seed);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FRAME_FIELDS_H_
