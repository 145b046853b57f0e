// The RNIC's multicast groups on the wire: IGMPv3/MLDv2 membership reports
// when the groups its QPs attached to change (and answers to queries, in
// the net stack); on a netdev port the kernel joins them instead, and
// reports them itself.
#include <algorithm>
#include <iterator>

#include "emulator/daemon.h"

namespace rocemu::emulator {
namespace {

// A group change's report is sent twice (RFC 3376's robustness variable),
// within its Unsolicited Report Interval of 1 s.
constexpr nic::TimeNs kGroupReportRepeat = 500'000'000;

}  // namespace

void Daemon::ReportGroups(unsigned index, nic::TimeNs now) {
  Port& port = *ports_.at(index);
  const nic::MulticastGroups& table = rnics_[index]->rnic().multicast_groups();
  // Every shard's table only grows its generation: the sum changes with
  // any of them.
  uint64_t generation = table.generation();
  for (const auto& s : port.shards) generation += s->groups_generation();
  if (generation == port.groups_generation) {
    if (port.groups_repeat_at != 0 && now >= port.groups_repeat_at) {
      port.groups_repeat_at = 0;
      SendGroupChanges(port);
    }
    return;
  }
  port.groups_generation = generation;
  std::vector<IpAddr> groups;
  table.ForEach([&](const nic::Gid& g, const auto&) { groups.push_back(g); });
  if (!port.shards.empty()) {
    PausedShards paused(*this);
    for (const auto& s : port.shards) {
      s->rnic().rnic().multicast_groups().ForEach(
          [&](const nic::Gid& g, const auto&) { groups.push_back(g); });
    }
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  port.groups_joined.clear();
  port.groups_left.clear();
  std::set_difference(groups.begin(), groups.end(), port.groups.begin(),
                      port.groups.end(),
                      std::back_inserter(port.groups_joined));
  std::set_difference(port.groups.begin(), port.groups.end(), groups.begin(),
                      groups.end(), std::back_inserter(port.groups_left));
  port.groups = groups;
  if (port.netdev != nullptr) {
    // The kernel reports its memberships itself.
    JoinKernelGroups(port);
    UpdateNetdevDestinations(port);
    return;
  }
  SendGroupChanges(port);
  port.groups_repeat_at = now + kGroupReportRepeat;
  port.stack->set_groups(std::move(groups));
}

void Daemon::SendGroupChanges(Port& port) {
  for (bool ipv6 : {false, true}) {
    SendGroupReport(port, port.groups_joined, ipv6, GroupRecord::kToExclude);
    SendGroupReport(port, port.groups_left, ipv6, GroupRecord::kToInclude);
  }
}

void Daemon::SendGroupReport(Port& port, std::span<const IpAddr> groups,
                             bool ipv6, GroupRecord record) {
  if (groups.empty()) return;
  rte_mbuf* m = rte_pktmbuf_alloc(port.dev->pool());
  if (m == nullptr) {
    ++port.counters.tx_nombuf;
    return;
  }
  const size_t len = port.stack->BuildGroupReport(
      groups, ipv6, record,
      {rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m)});
  if (len == 0) {  // no group of this family
    rte_pktmbuf_free(m);
    return;
  }
  m->data_len = static_cast<uint16_t>(len);
  m->pkt_len = static_cast<uint32_t>(len);
  QueueTx(port, m);
}

}  // namespace rocemu::emulator
