// A RoCEv2 frame as the builder takes it and the parser returns it:
// Ethernet (+802.1Q) / IPv4|IPv6 / UDP 4791 / BTH / extension headers /
// payload / pad / ICRC.
//
// Parser decisions:
//  - Bytes after the IP datagram are accepted only as Ethernet padding of a
//    frame no longer than 60 bytes (kEthMinFrameLen); the builder never pads,
//    the NIC does.
//  - Only a UDP datagram to port 4791 is RoCE. IPv4 options and fragments are
//    errors for such a datagram (kIpOptions, kIpFragment); a non-first
//    fragment, whose port is unknown, is classified kOtherIpv4.
//  - IPv4 header checksum and version/IHL/length are checked for every IPv4
//    frame (the daemon answers ICMP, so a broken IP header is an error).
//  - A UDP checksum of 0 is accepted on IPv4 and IPv6 (Linux rxe sends 0 on
//    both); a non-zero one is verified.
//  - 0x80 and other reserved opcodes: kUnknownOpcode; RD, FLUSH and
//    ATOMIC_WRITE: kUnsupportedOpcode (see opcode.h).
//  - Pad bytes are not required to be zero; the BTH reserved bits are kept.
#ifndef ROCEMU_PROTOCOL_FRAME_H_
#define ROCEMU_PROTOCOL_FRAME_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include "absl/status/statusor.h"
#include "protocol/errors.h"
#include "protocol/ethernet.h"
#include "protocol/headers.h"
#include "protocol/icrc.h"
#include "protocol/opcode.h"
#include "protocol/pfc.h"

namespace rocemu::protocol {

// IPv6 address or an IPv4 address in its IPv4-mapped form ::ffff:a.b.c.d,
// which is also how a RoCEv2 GID holds it.
using IpAddr = std::array<uint8_t, 16>;

// What the builder writes in the UDP checksum field.
enum class UdpChecksumMode : uint8_t {
  kAuto,     // 0 on IPv4 (as RoCEv2 NICs send), computed on IPv6 (RFC 8200)
  kZero,     // always 0, like Linux rxe on IPv6 too
  kCompute,  // always computed, also on IPv4
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
  UdpChecksumMode udp_checksum = UdpChecksumMode::kAuto;

  friend bool operator==(const NetHeaders&, const NetHeaders&) = default;
};

// Builds an IPv4-mapped IpAddr from a.b.c.d.
constexpr IpAddr Ipv4Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d};
}
// ::ffff:a.b.c.d, the form an IPv4 address takes as a RoCEv2 GID.
constexpr bool IsIpv4Mapped(const IpAddr& ip) {
  if (std::is_constant_evaluated()) {
    for (int i = 0; i < 10; ++i) {
      if (ip[i] != 0) return false;
    }
    return ip[10] == 0xFF && ip[11] == 0xFF;
  }
  // Every frame built asks (the GID picks IPv4 or IPv6): two word compares
  // rather than a loop over twelve bytes.
  uint64_t head;
  uint32_t mid;
  std::memcpy(&head, ip.data(), 8);
  std::memcpy(&mid, ip.data() + 8, 4);
  constexpr uint32_t kMid =
      std::endian::native == std::endian::little ? 0xFFFF0000u : 0x0000FFFFu;
  return head == 0 && mid == kMid;
}

struct FrameSpec {
  NetHeaders net;
  TransportHeaders hdr;  // hdr.bth.opcode selects the extension headers
};

// Ethernet (+VLAN) + IP + UDP header bytes for these NetHeaders.
size_t NetHeadersLength(const NetHeaders& net);

// Bytes a frame needs: headers + payload + pad + ICRC. 0 for an undefined
// opcode.
size_t RoceFrameLength(const NetHeaders& net, uint8_t opcode,
                       size_t payload_len);

// Two-phase builder so that payload can be copied straight from memory-region
// segments into the frame: Begin writes the headers, the caller fills
// payload(), Finish writes the pad, lengths, checksums and ICRC.
// bth.pad_cnt is taken from the payload length, not from the spec.
// Defined but unsupported opcodes (RD, FLUSH) can be built, for tests.
class NetHeaderTemplate;
class RoceFrameWriter {
 public:
  BuildError Begin(const FrameSpec& spec, size_t payload_len,
                   std::span<uint8_t> out);
  // The same with the headers below the BTH encoded ahead of time, as the
  // RNIC does once per connected QP (net_header_template.h).
  BuildError Begin(const NetHeaderTemplate& net, const TransportHeaders& hdr,
                   size_t payload_len, std::span<uint8_t> out);
  std::span<uint8_t> payload() const { return payload_; }
  // Returns the frame length.
  size_t Finish();

  // The same in one walk over the payload (protocol/icrc_copy.h): StartIcrc
  // takes the ICRC over the headers, the caller extends it over payload()
  // as it fills it, in order, and Finish(acc) adds the pad.
  void StartIcrc(IcrcAccumulator& acc) const;
  size_t Finish(IcrcAccumulator& acc);

 private:
  size_t FinishWith(uint32_t icrc);

  std::span<uint8_t> out_;
  std::span<uint8_t> payload_;
  size_t l3_offset_ = 0;
  size_t frame_len_ = 0;
  bool ipv6_ = false;
  bool udp_checksum_ = false;
};

// One-shot build from a contiguous payload. Returns the frame length, or 0 and
// sets *error.
size_t BuildRoceFrame(const FrameSpec& spec, std::span<const uint8_t> payload,
                      std::span<uint8_t> out, BuildError* error = nullptr);

// The RoCEv2 CNP (annex A17.9.3) that a notification point sends back to the
// sender of an ECN-marked packet: opcode 0x81, BECN=1, M=0, PSN 0, 16 zero
// bytes. `net` is used as given (callers set the CNP DSCP, e.g. 48).
FrameSpec CnpSpec(const NetHeaders& net, uint32_t dest_qp,
                  uint16_t pkey = kDefaultPKey);
size_t BuildCnp(const NetHeaders& net, uint32_t dest_qp, uint16_t pkey,
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
std::string_view FrameKindName(FrameKind k);

struct ParseOptions {
  bool verify_icrc = true;
  bool verify_ip_checksum = true;
  bool verify_udp_checksum = true;  // 0 is accepted on IPv4 and IPv6 (rxe)
};

struct ParsedFrame {
  FrameKind kind = FrameKind::kOther;
  uint16_t ethertype = 0;  // inner EtherType (after a VLAN tag)
  NetHeaders net;          // filled for IP frames (and MACs for all)
  size_t l3_offset = 0;
  uint8_t ip_protocol = 0;   // IPv4 protocol / IPv6 next header
  uint16_t ip_checksum = 0;  // IPv4 only, as read
  // RoCE only:
  size_t bth_offset = 0;
  TransportHeaders hdr;
  const OpcodeInfo* op = nullptr;
  std::span<const uint8_t> payload;  // without pad and ICRC
  uint32_t icrc = 0;                 // as read (little-endian on the wire)
  uint16_t udp_checksum = 0;
  // PFC / PAUSE only (PAUSE: enable_vector 0xFF, the time in every quanta[]):
  PfcInfo pfc;
};

// Every field at its default; ParseFrame starts from a copy of it.
extern const ParsedFrame kEmptyParsedFrame;

// Validates the frame and fills *out with a zero-copy view. Never allocates.
// On an error, *out holds what was decoded before it was found.
ParseError ParseFrame(std::span<const uint8_t> frame, ParsedFrame* out,
                      const ParseOptions& options = {});

// Control-path convenience for tools: the error as InvalidArgument with the
// ParseErrorName in the message.
absl::StatusOr<ParsedFrame> ParseFrameOrStatus(
    std::span<const uint8_t> frame, const ParseOptions& options = {});

// Rebuilds the FrameSpec a parsed RoCE frame was built from, so that
// BuildRoceFrame(SpecFromParsed(p), p.payload, ...) reproduces the frame.
FrameSpec SpecFromParsed(const ParsedFrame& parsed);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_FRAME_H_
