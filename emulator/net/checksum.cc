#include "emulator/net/checksum.h"

#include "protocol/checksum.h"

namespace rocemu::emulator {

// The codec's sum: word-parallel, with an unrolled 20-byte IPv4 header
// (every received frame's header is summed here).
uint32_t ChecksumPartial(std::span<const uint8_t> data, uint32_t sum) {
  return protocol::OnesComplementSum(data, sum);
}

uint16_t ChecksumFinish(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint16_t Icmpv6Checksum(const IpAddr& src, const IpAddr& dst,
                        std::span<const uint8_t> message) {
  uint32_t sum = ChecksumPartial(src);
  sum = ChecksumPartial(dst, sum);
  uint32_t len = static_cast<uint32_t>(message.size());
  sum += (len >> 16) + (len & 0xFFFF);
  sum += 58;  // next header: ICMPv6
  return ChecksumFinish(ChecksumPartial(message, sum));
}

}  // namespace rocemu::emulator
