// A topology made into ns-3 nodes: an RnicHost per host (a small nic::Rnic:
// few preallocated MAD, event and CNP slots), a RoceSwitch per switch, a
// RoceChannel and two RoceNetDevices per link, and every switch's routes:
// shortest paths in hops to each host, with all equal-cost next hops in
// one ECMP group.
#ifndef ROCEMU_NS3_FABRIC_H_
#define ROCEMU_NS3_FABRIC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nic/device_attr.h"
#include "nic/rnic.h"
#include "ns3/ptr.h"
#include "ns3/rnic_host.h"
#include "ns3/roce_switch.h"
#include "ns3/topology.h"
#include "pfc_ecn/dcqcn_params.h"

namespace rocemu::ns3sim {

enum class DcqcnPreset : uint8_t {
  kNvidia,  // ConnectX firmware defaults (pfc_ecn::DcqcnParams::Nvidia)
  kPaper,   // SIGCOMM'15 constants (DcqcnParams::Paper)
  kHpcc,    // the HPCC paper's DCQCN runs: 1/4/300 us timers, g 1/256,
            // F 1, AI 5 and HAI 50 Mb/s per 25 Gb/s, min rate 1 Gb/s
};
std::optional<DcqcnPreset> DcqcnPresetFromName(absl::string_view name);
pfc_ecn::DcqcnParams DcqcnFor(DcqcnPreset preset, uint32_t line_rate_mbps);

struct HostOptions {
  bool dcqcn = true;  // reaction point (the NP is always on)
  DcqcnPreset preset = DcqcnPreset::kNvidia;
  uint32_t np_min_time_between_cnps_us = 4;
  nic::Mtu active_mtu = nic::Mtu::k4096;
  uint32_t cnp_queue_len = 64;
};

struct PathInfo {
  uint32_t links = 0;
  nic::TimeNs delay_ns = 0;  // propagation, one way
  uint64_t min_rate_bps = 0;
};

class Fabric {
 public:
  static absl::StatusOr<std::unique_ptr<Fabric>> Build(
      const TopologySpec& topology, const SwitchConfig& switch_config,
      const HostOptions& host_options);

  const TopologySpec& topology() const { return topology_; }
  const std::vector<ns3::Ptr<RnicHost>>& hosts() const { return hosts_; }
  const std::vector<ns3::Ptr<RoceSwitch>>& switches() const {
    return switches_;
  }
  uint64_t host_rate_bps(uint32_t host) const { return host_rate_[host]; }
  // The route a frame from `src` to `dst` takes (any of the equal-cost
  // ones: they have the same number of links in these topologies).
  PathInfo Path(uint32_t src, uint32_t dst) const;

 private:
  Fabric() = default;
  absl::Status Wire(const SwitchConfig& sc, const HostOptions& ho);
  void Route();

  TopologySpec topology_;
  std::vector<ns3::Ptr<RnicHost>> hosts_;
  std::vector<ns3::Ptr<RoceSwitch>> switches_;
  std::vector<uint64_t> host_rate_;
  std::vector<nic::TimeNs> host_delay_;
  std::vector<int64_t> host_switch_;  // switch a host hangs off, or -1
  std::vector<uint16_t> host_port_;   // that switch's port to the host
  // Per switch: (port -> neighbour node, link rate, delay).
  struct Adj {
    uint32_t node;
    uint16_t port;
    uint64_t rate_bps;
    nic::TimeNs delay_ns;
  };
  std::vector<std::vector<Adj>> adj_;
  // Per switch with hosts (a ToR): distance, delay and slowest link from
  // every switch to it.
  std::vector<int32_t> tor_index_;
  std::vector<std::vector<uint32_t>> tor_hops_;
  std::vector<std::vector<nic::TimeNs>> tor_delay_;
  std::vector<std::vector<uint64_t>> tor_rate_;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FABRIC_H_
