// Multicast group membership of the port: IGMPv3 (RFC 3376) and MLDv2
// (RFC 3810) reports for the groups the RNIC's QPs joined, so that a
// snooping switch forwards those groups to us. A report carries every
// group of one family in one frame, a record each: CHANGE_TO_EXCLUDE for
// groups joined, CHANGE_TO_INCLUDE (no sources) for groups left,
// MODE_IS_EXCLUDE in answer to a query -- what Linux sends for a socket's
// join, leave and query response.
#include <cstring>
#include <vector>

#include "emulator/net/checksum.h"
#include "emulator/net/net_stack.h"
#include "protocol/multicast.h"

namespace rocemu::emulator {
namespace {

constexpr uint8_t kIpProtoHopByHop = 0;
constexpr uint8_t kIgmpV3Report = 0x22;
constexpr uint8_t kMldV2Report = 143;
// 224.0.0.22 and ff02::16: where IGMPv3 and MLDv2 reports go.
constexpr IpAddr kIgmpV3Routers = {0, 0, 0,    0,    0,   0, 0, 0,
                                   0, 0, 0xFF, 0xFF, 224, 0, 0, 22};
constexpr IpAddr kMldV2Routers = {0xff, 0x02, 0, 0, 0, 0, 0, 0,
                                  0,    0,    0, 0, 0, 0, 0, 0x16};
// IGMP goes with the IP Router Alert option (RFC 2113): a 24-byte header.
constexpr size_t kIpv4RaHeaderLen = 24;
// MLD's Hop-by-Hop header: Router Alert (value 0: MLD), PadN to 8 bytes.
constexpr uint8_t kHopByHopRa[8] = {kIpProtoIcmpv6, 0, 5, 2, 0, 0, 1, 0};

}  // namespace

size_t NetStack::BuildGroupReport(std::span<const IpAddr> groups, bool ipv6,
                                  GroupRecord record, std::span<uint8_t> out) {
  // Unsolicited reports are the port's own frames, on the port's VLAN.
  rx_vlan_tci_ = own_vlan_tci_;
  return WriteGroupReport(groups, ipv6, record, out);
}

size_t NetStack::WriteGroupReport(std::span<const IpAddr> groups, bool ipv6,
                                  GroupRecord record, std::span<uint8_t> out) {
  std::vector<const IpAddr*> mine;
  for (const IpAddr& g : groups) {
    if (protocol::IsMulticastIp(g) && IsIpv4Mapped(g) != ipv6) {
      mine.push_back(&g);
    }
  }
  if (mine.empty()) return 0;
  const size_t n = mine.size();
  if (!ipv6) {
    const size_t igmp_len = 8 + 8 * n;
    const size_t l3_len = kIpv4RaHeaderLen + igmp_len;
    const protocol::MacAddr dst = protocol::MulticastMac(kIgmpV3Routers);
    const size_t hdr = WriteEth(out, dst.data(), kEtherTypeIpv4, l3_len);
    if (hdr == 0 || l3_len > 0xFFFF) return 0;
    uint8_t* ip = out.data() + hdr;
    std::memset(ip, 0, l3_len);
    ip[0] = 0x46;  // IHL 6: the Router Alert option follows
    ip[1] = 0xC0;  // DSCP CS6 (network control), as Linux sends IGMP
    StoreBe16(ip + 2, static_cast<uint16_t>(l3_len));
    StoreBe16(ip + 6, 0x4000);  // DF
    ip[8] = 1;                  // TTL: link-local
    ip[9] = kIpProtoIgmp;
    const IpAddr* src = SourceFor(*mine[0], false);
    if (src != nullptr) std::memcpy(ip + 12, src->data() + 12, 4);
    std::memcpy(ip + 16, kIgmpV3Routers.data() + 12, 4);
    ip[20] = 0x94;  // Router Alert, length 4, value 0
    ip[21] = 0x04;
    StoreBe16(ip + 10, InternetChecksum({ip, kIpv4RaHeaderLen}));
    uint8_t* igmp = ip + kIpv4RaHeaderLen;
    igmp[0] = kIgmpV3Report;
    StoreBe16(igmp + 6, static_cast<uint16_t>(n));
    for (size_t i = 0; i < n; ++i) {
      uint8_t* r = igmp + 8 + 8 * i;
      r[0] = static_cast<uint8_t>(record);
      std::memcpy(r + 4, mine[i]->data() + 12, 4);
    }
    StoreBe16(igmp + 2, InternetChecksum({igmp, igmp_len}));
    ++counters_.tx_igmp_reports;
    return Pad(out, hdr + l3_len);
  }
  const size_t mld_len = 8 + 20 * n;
  const size_t payload = sizeof(kHopByHopRa) + mld_len;
  const protocol::MacAddr dst = protocol::MulticastMac(kMldV2Routers);
  const size_t hdr =
      WriteEth(out, dst.data(), kEtherTypeIpv6, kIpv6HeaderLen + payload);
  if (hdr == 0 || payload > 0xFFFF) return 0;
  uint8_t* ip = out.data() + hdr;
  std::memset(ip, 0, kIpv6HeaderLen + payload);
  ip[0] = 0x60;
  StoreBe16(ip + 4, static_cast<uint16_t>(payload));
  ip[6] = kIpProtoHopByHop;
  ip[7] = 1;                                    // hop limit: link-local
  std::memcpy(ip + 8, link_local_.data(), 16);  // MLD speaks link-local
  std::memcpy(ip + 24, kMldV2Routers.data(), 16);
  std::memcpy(ip + kIpv6HeaderLen, kHopByHopRa, sizeof(kHopByHopRa));
  uint8_t* mld = ip + kIpv6HeaderLen + sizeof(kHopByHopRa);
  mld[0] = kMldV2Report;
  StoreBe16(mld + 6, static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) {
    uint8_t* r = mld + 8 + 20 * i;
    r[0] = static_cast<uint8_t>(record);
    std::memcpy(r + 4, mine[i]->data(), 16);
  }
  StoreBe16(mld + 2,
            Icmpv6Checksum(link_local_, kMldV2Routers, {mld, mld_len}));
  ++counters_.tx_mld_reports;
  return Pad(out, hdr + kIpv6HeaderLen + payload);
}

RxVerdict NetStack::AnswerGroupQuery(bool ipv6, std::span<uint8_t> reply,
                                     size_t* reply_len) {
  ++counters_.rx_group_queries;
  // A reply: the query's VLAN tag, as every answer of the stack.
  *reply_len = WriteGroupReport(groups_, ipv6, GroupRecord::kIsExclude, reply);
  return *reply_len > 0 ? RxVerdict::kReply : RxVerdict::kConsumed;
}

}  // namespace rocemu::emulator
