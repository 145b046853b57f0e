#include "emulator/checksum.h"

namespace rocemu::emulator {

uint32_t ChecksumPartial(std::span<const uint8_t> data, uint32_t sum) {
  size_t i = 0;
  for (; i + 1 < data.size(); i += 2) sum += Load16(&data[i]);
  if (i < data.size()) sum += static_cast<uint32_t>(data[i]) << 8;
  // Fold early so that long inputs cannot overflow 32 bits.
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum;
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
