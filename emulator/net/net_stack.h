// The daemon's own link/network layer for one port: answers ARP, IPv6
// neighbour solicitation and ICMP/ICMPv6 echo for the port's addresses,
// resolves peers' MACs, and sorts every received frame into "answered",
// "for the RNIC" (RoCEv2 UDP 4791, MAC control/PFC) or a counted drop. It
// works over byte spans, so it is tested without DPDK; replies are written
// into a buffer the caller lends (an mbuf's data room in the daemon).
#ifndef ROCEMU_EMULATOR_NET_NET_STACK_H_
#define ROCEMU_EMULATOR_NET_NET_STACK_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "emulator/net/neighbour_cache.h"
#include "emulator/net/net_types.h"
#include "nic/clock.h"

namespace rocemu::emulator {

struct NetAddress {
  IpAddr ip{};
  bool ipv6 = false;
  uint8_t prefix_len = 0;
};

struct NetCounters {
  uint64_t rx_arp_requests = 0;
  uint64_t rx_arp_replies = 0;
  uint64_t tx_arp_requests = 0;
  uint64_t tx_arp_replies = 0;
  uint64_t rx_nd_solicits = 0;
  uint64_t rx_nd_adverts = 0;
  uint64_t tx_nd_solicits = 0;
  uint64_t tx_nd_adverts = 0;
  uint64_t rx_icmp_echo = 0;
  uint64_t rx_icmpv6_echo = 0;
  uint64_t tx_icmp_echo_reply = 0;
  uint64_t tx_icmpv6_echo_reply = 0;
  uint64_t rx_nic = 0;            // handed to the RNIC model
  uint64_t rx_not_for_us = 0;     // other MAC or IP: dropped
  uint64_t rx_unhandled = 0;      // for us, but no protocol here takes it
  uint64_t rx_malformed = 0;      // truncated or inconsistent headers
  uint64_t rx_bad_checksum = 0;   // IPv4 header, ICMP or ICMPv6 checksum
  uint64_t reply_too_big = 0;     // reply did not fit the lent buffer
  uint64_t tx_igmp_reports = 0;   // IGMPv3 / MLDv2 membership reports of
  uint64_t tx_mld_reports = 0;    // the RNIC's multicast groups
  uint64_t rx_group_queries = 0;  // IGMP / MLD queries answered
  // Netdev ports: frames to us that the kernel answers (ARP, ND, ICMP,
  // IGMP/MLD queries, other protocols), left to it. With af_packet the
  // daemon sees a copy of every frame of the interface.
  uint64_t rx_kernel = 0;
};

// IGMPv3 / MLDv2 group record types (RFC 3376 4.2.12, RFC 3810 5.2.12).
enum class GroupRecord : uint8_t {
  kIsExclude = 2,  // current state: joined (a query's answer)
  kToInclude = 3,  // left (include no source)
  kToExclude = 4,  // joined (exclude no source)
};

enum class RxVerdict : uint8_t {
  kReply,     // *reply_len bytes of reply were written: send them
  kConsumed,  // handled (e.g. a learned ARP reply), nothing to send
  kNic,       // belongs to the RNIC model (RoCEv2, PFC/PAUSE)
  kDropped,   // counted in one of the rx_* drop counters
};

class NetStack {
 public:
  // Frames shorter than this are padded (Ethernet minimum without FCS).
  static constexpr size_t kMinFrame = 60;

  NetStack(const MacAddr& mac, std::span<const NetAddress> addresses,
           NeighbourCache* cache);

  // A netdev port's stack (port/netdev_port.h): the kernel owns ARP, ND,
  // ICMP and IGMP/MLD on the interface and answers them once; this stack
  // then only picks out the RNIC's frames (RoCEv2 to its addresses, MAC
  // Control), learns nothing and answers nothing.
  void set_kernel_owned(bool owned) { kernel_owned_ = owned; }
  bool kernel_owned() const { return kernel_owned_; }
  // The interface's addresses and MAC as they change (netdev ports): the
  // list is used as is, without the MAC's link-local address the
  // constructor adds (the kernel's own link-local address is in it, if
  // any). Only from the port's lcore: Lookup's callers on other lcores
  // (shards) do not exist for netdev ports.
  void SetAddresses(std::span<const NetAddress> addresses) {
    addresses_.assign(addresses.begin(), addresses.end());
  }
  void set_mac(const MacAddr& mac) { mac_ = mac; }

  // Solicitations go out tagged with `vid` (PCP 0); replies keep the
  // request's tag whatever this says.
  void set_vlan(std::optional<uint16_t> vid) {
    own_vlan_tci_ = vid.has_value() ? *vid : 0xFFFF'FFFF;
  }

  RxVerdict Receive(std::span<const uint8_t> frame, nic::TimeNs now,
                    std::span<uint8_t> reply, size_t* reply_len);

  // Resolve without soliciting: our own address or a cache entry. Safe
  // from any thread (the cache locks; the addresses do not change).
  std::optional<MacAddr> Lookup(const IpAddr& ip, nic::TimeNs now) const;
  // The MAC for ip (IPv4-mapped or IPv6) if known. On a miss, when a
  // solicitation is due, writes an ARP request or neighbour solicitation
  // into `out` and sets *out_len (else 0).
  std::optional<MacAddr> Resolve(const IpAddr& ip, nic::TimeNs now,
                                 std::span<uint8_t> out, size_t* out_len);
  size_t BuildArpRequest(const IpAddr& target, std::span<uint8_t> out);
  size_t BuildNeighbourSolicit(const IpAddr& target, std::span<uint8_t> out);
  // One IGMPv3 (IPv4) or MLDv2 (`ipv6`) membership report with a `record`
  // for each group of that family in `groups`; 0 when there is none
  // (net_stack_groups.cc). The groups a query is answered with are the
  // last set_groups().
  size_t BuildGroupReport(std::span<const IpAddr> groups, bool ipv6,
                          GroupRecord record, std::span<uint8_t> out);
  void set_groups(std::vector<IpAddr> groups) { groups_ = std::move(groups); }

  bool IsOurAddress(const IpAddr& ip) const;
  const MacAddr& mac() const { return mac_; }
  const IpAddr& link_local() const { return link_local_; }
  const NetCounters& counters() const { return counters_; }
  NeighbourCache& neighbours() { return *cache_; }

 private:
  RxVerdict HandleArp(std::span<const uint8_t> frame, size_t l3,
                      nic::TimeNs now, std::span<uint8_t> reply,
                      size_t* reply_len);
  RxVerdict HandleIpv4(std::span<const uint8_t> frame, size_t l3,
                       std::span<uint8_t> reply, size_t* reply_len);
  RxVerdict HandleIpv6(std::span<const uint8_t> frame, size_t l3,
                       nic::TimeNs now, std::span<uint8_t> reply,
                       size_t* reply_len);
  RxVerdict HandleNeighbourSolicit(std::span<const uint8_t> frame, size_t l3,
                                   const uint8_t* icmp, size_t icmp_len,
                                   nic::TimeNs now, std::span<uint8_t> reply,
                                   size_t* reply_len);
  bool AcceptsIpv6Dst(const IpAddr& dst) const;
  // BuildGroupReport with the VLAN tag of the frame being answered.
  size_t WriteGroupReport(std::span<const IpAddr> groups, bool ipv6,
                          GroupRecord record, std::span<uint8_t> out);
  // An IGMP or MLD query: the report of every group joined, if any.
  RxVerdict AnswerGroupQuery(bool ipv6, std::span<uint8_t> reply,
                             size_t* reply_len);
  // Our address to send from towards `peer` (same prefix first).
  const IpAddr* SourceFor(const IpAddr& peer, bool ipv6) const;
  // Writes an Ethernet header (with the received VLAN tag, if any) and
  // returns its length, or 0 if `out` is too small for `l3_len` more bytes.
  size_t WriteEth(std::span<uint8_t> out, const uint8_t* dst,
                  uint16_t ethertype, size_t l3_len) const;
  static size_t Pad(std::span<uint8_t> out, size_t len);

  MacAddr mac_;
  IpAddr link_local_{};
  std::vector<NetAddress> addresses_;
  NeighbourCache* cache_;
  NetCounters counters_;
  std::vector<IpAddr> groups_;  // the RNIC's multicast groups
  // VLAN TCI of the frame being answered (0xFFFF: untagged).
  uint32_t rx_vlan_tci_ = 0xFFFF'FFFF;
  // The tag of what the stack originates (solicitations): the port's VLAN.
  uint32_t own_vlan_tci_ = 0xFFFF'FFFF;
  bool kernel_owned_ = false;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_NET_NET_STACK_H_
