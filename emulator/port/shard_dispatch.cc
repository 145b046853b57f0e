#include "emulator/port/shard_dispatch.h"

#include "emulator/net/net_types.h"
#include "protocol/cm_messages.h"
#include "protocol/ethernet.h"
#include "protocol/headers.h"
#include "protocol/mad.h"
#include "protocol/multicast.h"
#include "protocol/opcode.h"
#include "protocol/wire.h"

namespace rocemu::emulator {
namespace {

using protocol::LoadBe24;
using protocol::LoadBe32;
using protocol::LoadBe64;

// A CM message to QP1: the shard from its comm ID or service ID.
uint32_t CmShard(const uint8_t* mad, size_t avail, uint32_t shards,
                 const nic::CmServiceRegistry* services) {
  using namespace protocol::cm_attr;  // NOLINT
  constexpr size_t kHdr = protocol::kMadHeaderSize;
  if (avail < kHdr + 16 || mad[1] != protocol::mgmt_class::kCm) return 0;
  const uint16_t attr = LoadBe16(mad + 16);
  const uint8_t* data = mad + kHdr;
  switch (attr) {
    case kReq:
    case kSidrReq: {
      if (services == nullptr) return 0;
      std::optional<uint32_t> s = services->Lookup(LoadBe64(data + 8));
      return s.has_value() && *s < shards ? *s : 0;
    }
    case kSidrRep:  // its request ID is the one our SIDR_REQ carried
      return LoadBe32(data) % shards;
    case kMra:
    case kRej:
    case kRep:
    case kRtu:
    case kDreq:
    case kDrep:
    case kLap:
    case kApr:
      return LoadBe32(data + 4) % shards;
    default:  // ClassPortInfo and the like
      return 0;
  }
}

}  // namespace

size_t RoceBthOffset(const uint8_t* d, size_t len) {
  using namespace protocol;  // NOLINT
  if (len < kEthHeaderLen + 20 + kUdpHeaderLen) return 0;
  size_t l3 = kEthHeaderLen;
  uint16_t type = LoadBe16(d + 12);
  if (type == kEtherTypeVlan) {
    type = LoadBe16(d + 16);
    l3 += kVlanTagLen;
  }
  size_t l4;
  if (type == kEtherTypeIpv4) {
    if (len < l3 + 20 || d[l3 + 9] != kIpProtoUdp) return 0;
    l4 = l3 + static_cast<size_t>(d[l3] & 0x0F) * 4;
  } else if (type == kEtherTypeIpv6) {
    if (len < l3 + kIpv6HeaderLen || d[l3 + 6] != kIpProtoUdp) return 0;
    l4 = l3 + kIpv6HeaderLen;
  } else {
    return 0;
  }
  if (l4 + kUdpHeaderLen > len || LoadBe16(d + l4 + 2) != kRoceV2UdpPort) {
    return 0;
  }
  return l4 + kUdpHeaderLen;
}

uint32_t ShardOf(const uint8_t* d, size_t len, uint32_t shards,
                 const nic::CmServiceRegistry* services) {
  if (shards <= 1) return 0;
  const size_t bth = RoceBthOffset(d, len);
  if (bth == 0) {
    // PFC and PAUSE (MAC Control): every shard's QPs obey them. Nothing
    // else that is not RoCE reaches the RNIC.
    return len >= 14 && LoadBe16(d + 12) == protocol::kEtherTypeMacControl
               ? kAllShards
               : 0;
  }
  if (bth + protocol::kBthLen > len) return 0;
  const uint32_t dest_qp = LoadBe24(d + bth + 5);
  if (dest_qp == protocol::kMulticastQpn) return kAllShards;
  if (dest_qp == protocol::kGsiQpn) {
    const size_t mad = bth + protocol::kBthLen + protocol::kDethLen;
    return mad < len ? CmShard(d + mad, len - mad, shards, services) : 0;
  }
  return dest_qp % shards;
}

}  // namespace rocemu::emulator
