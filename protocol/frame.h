// A RoCEv2 frame as the builder takes it and the parser returns it:
// Ethernet (+802.1Q) / IPv4|IPv6 / UDP 4791 / BTH / extension headers /
// payload / pad / ICRC.
#ifndef ROCEMU_PROTOCOL_FRAME_H_
#define ROCEMU_PROTOCOL_FRAME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/headers.h"
#include "protocol/opcode.h"

namespace rocemu::protocol {

using MacAddr = std::array<uint8_t, 6>;
// IPv6 address or an IPv4 address in its IPv4-mapped form ::ffff:a.b.c.d,
// which is also how a RoCEv2 GID holds it.
using IpAddr = std::array<uint8_t, 16>;

struct VlanTag {
  uint8_t pcp = 0;
  bool dei = false;
  uint16_t vid = 0;
};

// Everything below the BTH that the sender chooses.
struct NetHeaders {
  MacAddr dst_mac{};
  MacAddr src_mac{};
  bool has_vlan = false;
  VlanTag vlan;
  bool ipv6 = false;
  IpAddr src_ip{};
  IpAddr dst_ip{};
  uint8_t dscp = 26;        // RoCE traffic class default
  uint8_t ecn = 0b10;       // ECT(0)
  uint8_t ttl = 64;         // hop limit on IPv6
  uint32_t flow_label = 0;  // IPv6 only, 20 bits
  uint16_t ip_id = 0;       // IPv4 only
  bool df = true;           // IPv4 only
  uint16_t udp_src_port = 0xC000;
};

struct FrameSpec {
  NetHeaders net;
  TransportHeaders hdr;  // hdr.bth.opcode selects the extension headers
};

// Bytes a frame needs: headers + payload + pad + ICRC.
size_t RoceFrameLength(const NetHeaders& net, uint8_t opcode,
                       size_t payload_len);

enum class BuildError : uint8_t {
  kOk,
  kBufferTooSmall,
  kUnknownOpcode,
  kPayloadNotAllowed,
  kPayloadTooLarge,
};
std::string_view BuildErrorName(BuildError e);

// Two-phase builder so that payload can be copied straight from memory-region
// segments into the frame: Begin writes the headers, the caller fills
// payload(), Finish writes the pad, lengths, checksums and ICRC.
class RoceFrameWriter {
 public:
  BuildError Begin(const FrameSpec& spec, size_t payload_len,
                   std::span<uint8_t> out);
  std::span<uint8_t> payload() const { return payload_; }
  // Returns the frame length.
  size_t Finish();

 private:
  std::span<uint8_t> out_;
  std::span<uint8_t> payload_;
  size_t l3_offset_ = 0;
  size_t frame_len_ = 0;
  bool ipv6_ = false;
};

// One-shot build from a contiguous payload. Returns the frame length, or 0 and
// sets *error.
size_t BuildRoceFrame(const FrameSpec& spec, std::span<const uint8_t> payload,
                      std::span<uint8_t> out, BuildError* error = nullptr);

// What the parser recognised. Non-RoCE kinds are not errors: the daemon
// answers ARP/ND/ICMP and counts the rest.
enum class FrameKind : uint8_t {
  kRoce,
  kPfc,
  kPause,
  kArp,
  kIcmpV4,
  kIcmpV6,
  kOtherIpv4,
  kOtherIpv6,
  kOther,
};

enum class ParseError : uint8_t {
  kOk,
  kTooShort,
  kBadIpVersion,
  kBadIhl,
  kIpOptions,
  kIpFragment,
  kIpLengthMismatch,
  kBadIpChecksum,
  kUdpLengthMismatch,
  kBadUdpChecksum,
  kBadTver,
  kUnknownOpcode,      // reserved opcode value
  kUnsupportedOpcode,  // defined (e.g. RD) but not implemented
  kHeadersDoNotFit,    // frame shorter than the opcode's headers + ICRC
  kPayloadNotAllowed,
  kBadPad,
  kBadIcrc,
  kBadMacControl,      // PAUSE/PFC: bad opcode, non-zero high enable octet
};
std::string_view ParseErrorName(ParseError e);

struct ParseOptions {
  bool verify_icrc = true;
  bool verify_ip_checksum = true;
  bool verify_udp_checksum = true;  // 0 is accepted on IPv4 and IPv6 (rxe)
};

struct PfcInfo {
  uint8_t enable_vector = 0;
  std::array<uint16_t, 8> quanta{};
};

struct ParsedFrame {
  FrameKind kind = FrameKind::kOther;
  uint16_t ethertype = 0;
  NetHeaders net;               // filled for IP frames (and MACs for all)
  size_t l3_offset = 0;
  // RoCE only:
  TransportHeaders hdr;
  const OpcodeInfo* op = nullptr;
  std::span<const uint8_t> payload;  // without pad and ICRC
  uint32_t icrc = 0;                 // as read (little-endian on the wire)
  uint16_t udp_checksum = 0;
  // PFC / PAUSE only (PAUSE: quanta[0], enable_vector 0xFF):
  PfcInfo pfc;
};

// Validates the frame and fills *out with a zero-copy view. Never allocates.
ParseError ParseFrame(std::span<const uint8_t> frame, ParsedFrame* out,
                      const ParseOptions& options = {});

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_FRAME_H_
