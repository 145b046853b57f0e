// A datacenter switch for RoCE fabrics: output queues per (port, 802.1p
// priority) in one shared buffer, strict priority, IPv4 routing on the
// destination address with ECMP over equal-cost ports (hash of the 5-tuple,
// so the RoCEv2 UDP source port of each QP picks its path), ECN marking on
// dequeue by pfc_ecn's RedMarker, and PFC on the lossless priorities:
// pfc_ecn's PfcTransmitter per ingress port decides XOFF/XON from the bytes
// that port has buffered, against a static threshold or a dynamic one
// (a share of the free buffer); frames that keep arriving after an XOFF
// land in the port's headroom, and only a full headroom drops. Received
// PAUSE/PFC frames hold the egress priority for the time they ask.
//
// Switches route on IP and leave the MAC header alone (the RNICs address
// frames to their peer's MAC as on one segment). Frames move as
// ns3::Packets: enqueued as received, sent as is unless marked.
#ifndef ROCEMU_NS3_ROCE_SWITCH_H_
#define ROCEMU_NS3_ROCE_SWITCH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ns3/frame_fields.h"
#include "ns3/frame_node.h"
#include "ns3/packet_ring.h"
#include "pfc_ecn/pfc_transmitter.h"
#include "pfc_ecn/red_marker.h"
#include "protocol/ethernet.h"

namespace rocemu::ns3sim {

inline constexpr int kPriorities = 8;

struct SwitchConfig {
  uint64_t buffer_bytes = 32u << 20;  // shared by every queue of the switch
  // Per (egress port, priority); 0: only the shared buffer limits a queue.
  uint64_t queue_capacity_bytes = 0;
  uint8_t lossless_priorities = 1u << 3;
  bool pfc = true;
  // Static XOFF/XON per ingress port and lossless priority...
  uint64_t pfc_xoff_bytes = 96'000;
  uint64_t pfc_xon_bytes = 96'000 - 9216;
  // ... or, when > 0, dynamic: XOFF at (free shared buffer) >> shift, XON
  // pfc_xon_delta_bytes below it (the HPCC model's switch uses shift 3).
  uint32_t pfc_dynamic_shift = 0;
  uint64_t pfc_xon_delta_bytes = 3 * 1024;
  // Per ingress port and lossless priority; 0: derived from the port's rate
  // and cable (pfc_ecn::Mlx5XoffHeadroomBytes, 5 ns/m of propagation).
  uint64_t headroom_bytes = 0;
  uint32_t mtu_bytes = 1100;  // for the derived headroom
  uint16_t pause_quanta = 0xFFFF;
  bool ecn = true;
  pfc_ecn::RedProfile red{
      .kmin_bytes = 10'000, .kmax_bytes = 100'000, .pmax = 0.2};
  // When > 0, Kmin and Kmax scale with each port's rate over this one (as
  // the HPCC runs scale them with bandwidth).
  uint64_t red_reference_rate_bps = 0;
  uint64_t seed = 1;
};

struct SwitchPortCounters {
  std::array<uint64_t, kPriorities> tx_frames{};
  std::array<uint64_t, kPriorities> tx_bytes{};
  std::array<uint64_t, kPriorities> ecn_marked{};
  std::array<uint64_t, kPriorities> tail_drop{};      // queue or buffer full
  std::array<uint64_t, kPriorities> headroom_drop{};  // ingress, lossless
  std::array<uint64_t, kPriorities> tx_prio_pause{};  // PFC frames sent
  std::array<uint64_t, kPriorities> rx_prio_pause{};  // PFC frames obeyed
  std::array<uint64_t, kPriorities> max_queue_bytes{};
  uint64_t rx_pause = 0;  // 802.3x PAUSE
  uint64_t rx_no_route = 0;
  uint64_t rx_bad_mac_control = 0;
};

class RoceSwitch : public FrameNode {
 public:
  static ns3::TypeId GetTypeId();
  // `switch_index` numbers the fabric's switches from 0: it seeds the
  // switch's ECMP hash and RED markers and makes its port MACs.
  RoceSwitch(const SwitchConfig& config, uint32_t switch_index);
  ~RoceSwitch() override;

  // Per-port settings, after the port was added (AddPort) and before the
  // run: the port's link rate and propagation delay (pause quanta, derived
  // headroom and RED scaling).
  void ConfigurePort(uint16_t port, uint64_t rate_bps, uint64_t delay_ns);
  // Routes: host h (IPv4 10.0.0.0 + h + 1, see HostIpv4) is reached through
  // any port of group route[h]; groups[g] lists equal-cost ports.
  void SetRoutes(std::vector<uint32_t> host_group,
                 std::vector<std::vector<uint16_t>> groups);

  const SwitchConfig& config() const { return config_; }
  const SwitchPortCounters& counters(uint16_t port) const {
    return ports_[port].counters;
  }
  uint64_t queue_bytes(uint16_t port, int prio) const {
    return ports_[port].queue_bytes[prio];
  }
  uint64_t ingress_bytes(uint16_t port, int prio) const {
    return ports_[port].ingress_bytes[prio];
  }
  uint64_t headroom_bytes(uint16_t port) const { return ports_[port].headroom; }
  uint64_t buffer_used() const { return used_; }
  uint64_t max_buffer_used() const { return max_used_; }
  // Time egress (port, prio) was held by received PFC/PAUSE up to `now`.
  uint64_t paused_ns(uint16_t port, int prio, nic::TimeNs now) const;

  ns3::Ptr<ns3::Packet> PullFrame(uint16_t port, nic::TimeNs now) override;
  void ReceiveFrame(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                    nic::TimeNs now) override;
  nic::TimeNs NextEventTime() const override;

 private:
  // A queued frame holds one reference to its packet, taken at enqueue and
  // handed back at dequeue (ns-3.37's Ptr cannot move: a Ptr in a ring
  // slot would keep the packet alive until the slot is reused).
  struct Entry {
    ns3::Packet* frame = nullptr;
    uint32_t len = 0;
    uint16_t ingress = 0;
  };
  struct PauseSpan {
    nic::TimeNs start = 0;
    nic::TimeNs until = 0;
    uint64_t closed_ns = 0;
  };
  struct PortState {
    std::array<Ring<Entry>, kPriorities> queues;
    std::array<uint64_t, kPriorities> queue_bytes{};
    std::array<uint64_t, kPriorities> ingress_bytes{};
    std::array<nic::TimeNs, kPriorities> paused_until{};
    std::array<PauseSpan, kPriorities> pause_spans{};
    nic::TimeNs pause_all_until = 0;
    Ring<ns3::Packet*> control;  // PFC frames to send (never held), owned
    std::unique_ptr<pfc_ecn::PfcTransmitter> pfc;
    std::unique_ptr<pfc_ecn::RedMarker> red;
    uint64_t rate_bps = 100'000'000'000;
    uint64_t headroom = 0;
    uint8_t queued_mask = 0;            // priorities with frames queued
    uint8_t xoff_mask = 0;              // priorities this switch holds upstream
    mutable bool in_timer_set = false;  // in timer_ports_
    protocol::MacAddr mac{};
    SwitchPortCounters counters;
  };

  void OnMacControl(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                    nic::TimeNs now);
  // Checks the ingress port's PFC state after its buffered bytes changed.
  void EvaluatePfc(uint16_t port, int prio, nic::TimeNs now);
  uint64_t XoffThreshold() const;
  int PickPriority(const PortState& p, nic::TimeNs now) const;
  ns3::Ptr<ns3::Packet> Mark(ns3::Ptr<ns3::Packet> frame, uint32_t len,
                             size_t l3_offset);

  SwitchConfig config_;
  uint32_t switch_index_;
  std::vector<PortState> ports_;
  std::vector<uint32_t> host_group_;
  std::vector<uint32_t> group_start_;  // groups_flat_[start[g], start[g+1])
  std::vector<uint16_t> groups_flat_;
  uint64_t ecmp_seed_;
  uint64_t used_ = 0;
  uint64_t max_used_ = 0;
  uint64_t headroom_total_ = 0;  // reserved over all ports
  uint32_t control_pending_ = 0;
  // Ports that may have a timer (an XOFF to refresh, a received pause to
  // expire): NextEventTime() looks at these only, and drops the ones whose
  // timers are over.
  void AddTimerPort(uint16_t port);
  mutable std::vector<uint16_t> timer_ports_;
  nic::TimeNs now_ = 0;
};

// The IPv4 address of host `index` in a fabric: 10.0.0.0 + index + 1.
constexpr uint32_t HostIpv4(uint32_t index) { return 0x0A000000u + index + 1; }
// The host index of a fabric address, or -1.
constexpr int64_t HostIndexOf(uint32_t ip) {
  return (ip >> 24) == 10 && (ip & 0x00FFFFFFu) != 0
             ? static_cast<int64_t>((ip & 0x00FFFFFFu) - 1)
             : -1;
}

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_ROCE_SWITCH_H_
