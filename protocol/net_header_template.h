// The Ethernet (+802.1Q) / IP / UDP headers of one path, encoded once.
// A connected QP sends every frame (requests, ACKs, read responses) to the
// same peer: only the two lengths and the IPv4 header checksum depend on
// the frame, so those are patched into a copy of the encoded bytes instead
// of encoding every field per frame.
#ifndef ROCEMU_PROTOCOL_NET_HEADER_TEMPLATE_H_
#define ROCEMU_PROTOCOL_NET_HEADER_TEMPLATE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/ethernet.h"
#include "protocol/frame.h"

namespace rocemu::protocol {

class NetHeaderTemplate {
 public:
  // Ethernet + 802.1Q tag + IPv6 + UDP.
  static constexpr size_t kMaxLen =
      kEthHeaderLen + kVlanTagLen + kIpv6HeaderLen + kUdpHeaderLen;

  NetHeaderTemplate() = default;
  explicit NetHeaderTemplate(const NetHeaders& net);

  // Bytes before the BTH.
  size_t length() const { return length_; }
  size_t l3_offset() const { return l3_offset_; }
  bool ipv6() const { return ipv6_; }
  // Whether the UDP checksum is computed (UdpChecksumMode resolved) rather
  // than left 0.
  bool udp_checksum() const { return udp_checksum_; }

  // Writes the headers of a UDP datagram of `udp_len` bytes (its header
  // included) to out[0, length()); the UDP checksum field is left 0.
  // Needs out.size() >= length(); the caller keeps udp_len within the IP
  // length field (0xFFFF, less the IPv4 header).
  void Write(size_t udp_len, std::span<uint8_t> out) const;

 private:
  std::array<uint8_t, kMaxLen> bytes_{};
  // IPv4: the one's-complement sum of the header with total length and
  // checksum 0, so that a frame's checksum is ~(sum + total length).
  uint16_t ip_sum_ = 0;
  uint8_t length_ = 0;
  uint8_t l3_offset_ = 0;
  bool ipv6_ = false;
  bool udp_checksum_ = false;
};

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_NET_HEADER_TEMPLATE_H_
