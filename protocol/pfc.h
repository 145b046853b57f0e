// IEEE 802.3x PAUSE and 802.1Qbb priority flow control (PFC) frames: the MAC
// Control frames of 802.3 annexes 31B and 31D.
//
// Decisions:
//  - PFC and PAUSE frames are untagged (802.1Qbb / 802.3 annex 31B: MAC
//    Control frames are never VLAN-tagged). A tagged 0x8808 frame is rejected
//    with kBadMacControl.
//  - PFC must go to 01-80-C2-00-00-01. PAUSE may also go to the station's own
//    unicast address (802.3 31B.3.3), so any individual DA is accepted too.
//  - The reserved high octet of the PFC class-enable vector must be 0.
//  - Opcodes other than 0x0001 and 0x0101 are rejected with kBadMacControl.
#ifndef ROCEMU_PROTOCOL_PFC_H_
#define ROCEMU_PROTOCOL_PFC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/errors.h"
#include "protocol/ethernet.h"

namespace rocemu::protocol {

inline constexpr MacAddr kMacControlDa = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr uint16_t kMacControlOpcodePause = 0x0001;
inline constexpr uint16_t kMacControlOpcodePfc = 0x0101;
// Header (14) + opcode (2) + parameters + zero pad, without the FCS.
inline constexpr size_t kMacControlFrameLen = kEthMinFrameLen;

// PFC: bit n of enable_vector says quanta[n] is valid for priority n.
// PAUSE is represented as enable_vector 0xFF with its one pause time in
// quanta[0] and, so that per-priority consumers need no special case, copied
// to all eight entries.
struct PfcInfo {
  uint8_t enable_vector = 0;
  std::array<uint16_t, 8> quanta{};

  friend bool operator==(const PfcInfo&, const PfcInfo&) = default;
};

// Writes a 60-byte PFC frame (64 with append_fcs). Returns the length, or 0
// when out is too small.
size_t BuildPfcFrame(const MacAddr& src_mac, const PfcInfo& pfc,
                     std::span<uint8_t> out, bool append_fcs = false);
// Writes a 60-byte 802.3x PAUSE frame (64 with append_fcs) to
// 01-80-C2-00-00-01.
size_t BuildPauseFrame(const MacAddr& src_mac, uint16_t quanta,
                       std::span<uint8_t> out, bool append_fcs = false);

// Parses a frame whose EtherType is 0x8808. *is_pfc tells PFC from PAUSE.
// Bytes after the parameters (pad, FCS) are not inspected.
ParseError ParseMacControl(std::span<const uint8_t> frame, PfcInfo* out,
                           bool* is_pfc);

// Ethernet FCS (CRC-32) of frame, as the value to store least-significant
// byte first after the frame.
uint32_t EthernetFcs(std::span<const uint8_t> frame);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_PFC_H_
