// A fabric's shape: hosts 0..H-1 (one link each: an RNIC has one port) and
// switches H..H+S-1, joined by full-duplex links with a rate and a
// propagation delay. Built by the generators below or read from a file:
//
//   # comment
//   fattree k=8 [hosts_per_edge=4] [rate=100G] [fabric_rate=R] [delay=1us]
//   incast senders=8 [rate=25G] [delay=1us]
//   dumbbell left=2 right=2 [rate=25G] [bottleneck_rate=R] [delay=1us]
//   edges hosts=4 switches=2 [rate=25G] [delay=1us]
//   link h0 s0 [25G] [1us]          (edges only: one line per link)
//
// The first non-comment line names the shape; key=value pairs follow.
#ifndef ROCEMU_NS3_TOPOLOGY_H_
#define ROCEMU_NS3_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nic/clock.h"

namespace rocemu::ns3sim {

struct LinkSpec {
  uint32_t a = 0;  // node numbers: hosts first, then switches
  uint32_t b = 0;
  uint64_t rate_bps = 100'000'000'000;
  nic::TimeNs delay_ns = 1000;
};

struct TopologySpec {
  std::string description;  // e.g. "fattree k=8 (128 hosts, 80 switches)"
  uint32_t hosts = 0;
  uint32_t switches = 0;
  std::vector<LinkSpec> links;

  // Every host on exactly one link, every link between existing nodes and
  // not a loop.
  absl::Status Validate() const;
};

// Fat-tree of k-port switches (k even): k pods of k/2 edge and k/2
// aggregation switches, (k/2)^2 cores; hosts_per_edge hosts under each
// edge switch (0: k/2, the non-blocking tree) on links of `rate_bps`;
// switch-to-switch links at `fabric_rate_bps` (0: rate_bps), so that more
// hosts per edge can stay non-blocking. Switch order: edges by pod,
// aggregations by pod, cores.
TopologySpec FatTree(uint32_t k, uint32_t hosts_per_edge, uint64_t rate_bps,
                     uint64_t fabric_rate_bps, nic::TimeNs delay_ns);
// N senders and one receiver on one switch: host 0 (the receiver) is on
// the switch's port 0, sender i (host i) on port i.
TopologySpec Incast(uint32_t senders, uint64_t rate_bps, nic::TimeNs delay_ns);
// `left` hosts on switch 0, `right` hosts on switch 1, one link between
// the switches.
TopologySpec Dumbbell(uint32_t left, uint32_t right, uint64_t rate_bps,
                      uint64_t bottleneck_rate_bps, nic::TimeNs delay_ns);

absl::StatusOr<TopologySpec> ParseTopology(absl::string_view text);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_TOPOLOGY_H_
