// Helpers shared by the protocol tests.
#ifndef ROCEMU_TESTS_PROTOCOL_TEST_UTIL_H_
#define ROCEMU_TESTS_PROTOCOL_TEST_UTIL_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "protocol/frame.h"

namespace rocemu::protocol::testing {

// Hex digits, ignoring spaces and newlines.
inline std::vector<uint8_t> FromHex(std::string_view hex) {
  std::vector<uint8_t> out;
  int nibble = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      continue;
    }
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(static_cast<uint8_t>(nibble << 4 | v));
      nibble = -1;
    }
  }
  return out;
}

inline NetHeaders TestNet(bool ipv6, bool vlan) {
  NetHeaders net;
  net.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  net.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  net.has_vlan = vlan;
  if (vlan) net.vlan = {.pcp = 3, .dei = true, .vid = 0x123};
  net.ipv6 = ipv6;
  if (ipv6) {
    net.src_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    net.dst_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    net.flow_label = 0xABCDE;
  } else {
    net.src_ip = Ipv4Mapped(192, 168, 1, 1);
    net.dst_ip = Ipv4Mapped(192, 168, 1, 2);
    net.ip_id = 0x1234;
  }
  net.dscp = 26;
  net.ecn = 2;
  net.ttl = 63;
  net.udp_src_port = 0xC123;
  return net;
}

}  // namespace rocemu::protocol::testing

#endif  // ROCEMU_TESTS_PROTOCOL_TEST_UTIL_H_
