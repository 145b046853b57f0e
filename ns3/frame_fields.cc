#include "ns3/frame_fields.h"

#include "protocol/checksum.h"
#include "protocol/ethernet.h"
#include "protocol/wire.h"

namespace rocemu::ns3sim {

using protocol::LoadBe16;
using protocol::LoadBe32;

FrameFields ParseFields(std::span<const uint8_t> head) {
  FrameFields f;
  if (head.size() < protocol::kEthHeaderLen) return f;
  uint16_t type = LoadBe16(head.data() + 12);
  size_t off = protocol::kEthHeaderLen;
  if (type == protocol::kEtherTypeVlan) {
    if (head.size() < off + protocol::kVlanTagLen) return f;
    f.has_vlan = true;
    f.pcp = static_cast<uint8_t>(head[14] >> 5);
    type = LoadBe16(head.data() + 16);
    off += protocol::kVlanTagLen;
  }
  if (type == protocol::kEtherTypeMacControl) {
    f.mac_control = true;
    return f;
  }
  if (type != protocol::kEtherTypeIpv4 ||
      head.size() < off + protocol::kIpv4HeaderLen) {
    return f;
  }
  const uint8_t* ip = head.data() + off;
  const size_t ihl = size_t{ip[0] & 0x0Fu} * 4;
  if ((ip[0] >> 4) != 4 || ihl < protocol::kIpv4HeaderLen) return f;
  f.ipv4 = true;
  f.l3_offset = off;
  f.dscp = static_cast<uint8_t>(ip[1] >> 2);
  f.ecn = static_cast<uint8_t>(ip[1] & 0x3);
  f.protocol = ip[9];
  f.src_ip = LoadBe32(ip + 12);
  f.dst_ip = LoadBe32(ip + 16);
  if (f.protocol == protocol::kIpProtoUdp && head.size() >= off + ihl + 4) {
    f.src_port = LoadBe16(ip + ihl);
    f.dst_port = LoadBe16(ip + ihl + 2);
  }
  return f;
}

void MarkCeIpv4(uint8_t* l3) {
  l3[1] |= 0x3;
  l3[10] = 0;
  l3[11] = 0;
  const size_t ihl = size_t{l3[0] & 0x0Fu} * 4;
  protocol::StoreBe16(l3 + 10,
                      protocol::Ipv4HeaderChecksum(std::span(l3, ihl)));
}

uint64_t EcmpHash(const FrameFields& f, uint64_t seed) {
  // MurmurHash3's 64-bit finalizer over the packed 5-tuple: deterministic
  // across runs and platforms, unlike a process-seeded hash.
  uint64_t x = (uint64_t{f.src_ip} << 32 | f.dst_ip) ^ seed;
  x ^= (uint64_t{f.src_port} << 24 | uint64_t{f.dst_port} << 8 | f.protocol) *
       0x9E3779B97F4A7C15ull;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace rocemu::ns3sim
