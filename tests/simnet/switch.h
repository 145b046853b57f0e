// An output-queued Ethernet switch as a FrameEndpoint: static MAC forwarding,
// one FIFO per (egress port, 802.1p priority) with a byte capacity and tail
// drop, strict or round-robin service across priorities, PAUSE/PFC obeyed on
// egress, and the ECN and PFC hooks of switch_hooks.h.
#ifndef ROCEMU_TESTS_SIMNET_SWITCH_H_
#define ROCEMU_TESTS_SIMNET_SWITCH_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "nic/clock.h"
#include "nic/frame_io.h"
#include "tests/simnet/ether.h"
#include "tests/simnet/fifo.h"
#include "tests/simnet/frame_pool.h"
#include "tests/simnet/switch_hooks.h"

namespace rocemu::simnet {

inline constexpr int kNumPriorities = 8;

enum class Scheduling : uint8_t {
  kStrict,      // highest priority number first
  kRoundRobin,  // one frame per non-empty, unpaused priority in turn
};
// Where the priority of a frame comes from (mlx5 "trust" modes).
enum class PriorityTrust : uint8_t {
  kPcp,   // the 802.1Q PCP; untagged frames get default_priority
  kDscp,  // IP DSCP / 8; non-IP frames fall back to the PCP
};

struct SwitchConfig {
  uint16_t num_ports = 4;
  uint64_t port_rate_bps = 100'000'000'000;  // converts pause quanta to time
  uint64_t queue_capacity_bytes = 1 << 20;   // per (egress port, priority)
  Scheduling scheduling = Scheduling::kStrict;
  PriorityTrust trust = PriorityTrust::kDscp;
  uint8_t default_priority = 0;
  uint32_t max_frame_len = 9216;
  MacAddr base_mac = {0x02, 0x53, 0x57, 0x00, 0x00, 0x00};  // + port number
  bool obey_pause = true;
  bool flood_unknown = false;     // else unknown unicast is dropped and counted
  uint16_t pfc_quanta = 0xFFFF;   // in each XOFF this switch sends
  uint8_t pfc_priorities = 0xFF;  // priorities that may be paused upstream
  uint64_t seed = 1;              // for the hooks' random decisions
};

struct SwitchPortCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t rx_unknown_dst = 0;  // dropped: no route (flooding off)
  uint64_t rx_oversize = 0;     // dropped: longer than max_frame_len
  uint64_t rx_runt = 0;         // dropped: shorter than an Ethernet header
  uint64_t rx_bad_mac_control = 0;
  uint64_t rx_pause = 0;  // 802.3x PAUSE frames received
  std::array<uint64_t, kNumPriorities> rx_prio_pause{};  // PFC, per priority
  std::array<uint64_t, kNumPriorities> tx_prio_pause{};  // PFC frames sent
  std::array<uint64_t, kNumPriorities> tx_prio_frames{};
  std::array<uint64_t, kNumPriorities> tail_drop{};  // egress queue full
  std::array<uint64_t, kNumPriorities> ecn_marked{};
};

class Switch : public nic::FrameEndpoint {
 public:
  explicit Switch(const SwitchConfig& config);
  ~Switch() override;

  absl::Status AddRoute(const MacAddr& mac, uint16_t port);
  // Overrides config.port_rate_bps for one port (pause quanta to time).
  void SetPortRate(uint16_t port, uint64_t rate_bps);
  void SetEcnMarker(std::unique_ptr<EcnMarker> marker);
  void SetPfcPolicy(std::unique_ptr<PfcPolicy> policy);

  const SwitchConfig& config() const { return config_; }
  const SwitchPortCounters& counters(uint16_t port) const {
    return ports_[port].counters;
  }
  uint64_t queue_bytes(uint16_t port, uint8_t prio) const {
    return ports_[port].queues[prio].bytes;
  }
  uint64_t queue_frames(uint16_t port, uint8_t prio) const {
    return ports_[port].queues[prio].fifo.size();
  }
  uint64_t max_queue_bytes(uint16_t port, uint8_t prio) const {
    return ports_[port].queues[prio].max_bytes;
  }
  uint64_t ingress_bytes(uint16_t port, uint8_t prio) const {
    return ports_[port].ingress_bytes[prio];
  }
  // Whether egress on (port, prio) is held by a received PAUSE/PFC at `now`.
  bool paused(uint16_t port, uint8_t prio, nic::TimeNs now) const;
  // Time egress (port, prio) has spent paused by received PFC/PAUSE up to
  // `now` (rx_prioN_pause_duration, in ns rather than mlx5's us).
  uint64_t rx_pause_duration_ns(uint16_t port, uint8_t prio,
                                nic::TimeNs now) const;
  // Whether this switch holds an XOFF in force towards `port` for `prio`.
  bool xoff_sent(uint16_t port, uint8_t prio) const {
    return ports_[port].xoff[prio].sent;
  }
  MacAddr port_mac(uint16_t port) const;
  uint8_t Classify(std::span<const uint8_t> frame) const;

  void Receive(uint16_t port, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override;
  size_t Transmit(uint16_t port, std::span<nic::TxFrame> frames,
                  nic::TimeNs now) override;
  nic::TimeNs NextEventTime() const override;

 private:
  struct Entry {
    uint32_t buf = 0;
    uint32_t len = 0;
    uint16_t ingress = 0;
  };
  struct Queue {
    Fifo<Entry> fifo;
    uint64_t bytes = 0;
    uint64_t max_bytes = 0;
  };
  struct XoffState {
    bool sent = false;
    nic::TimeNs refresh_at = nic::kNever;
  };
  // Pause intervals of one priority (or of PAUSE), for the duration count.
  struct PauseTimer {
    nic::TimeNs start = 0;
    nic::TimeNs until = 0;
    uint64_t closed_ns = 0;  // length of the intervals that have ended
    void Set(nic::TimeNs now, nic::TimeNs new_until) {
      if (until > now) {
        closed_ns += now - start;
      } else {
        closed_ns += until - start;
      }
      start = now;
      until = new_until;
    }
    uint64_t Total(nic::TimeNs now) const {
      return closed_ns +
             (std::min(until, now) > start ? std::min(until, now) - start : 0);
    }
  };
  struct PortState {
    std::array<Queue, kNumPriorities> queues;
    uint64_t rate_bps = 0;
    nic::TimeNs pfc_refresh_ns = 1;
    std::array<PauseTimer, kNumPriorities> pause_timers;
    PauseTimer pause_all_timer;
    Fifo<Entry> control;  // PFC frames this switch sends: never paused
    std::array<nic::TimeNs, kNumPriorities> paused_until{};
    nic::TimeNs pause_all_until = 0;
    std::array<uint64_t, kNumPriorities> ingress_bytes{};
    std::array<XoffState, kNumPriorities> xoff;
    uint8_t rr_next = 0;
    SwitchPortCounters counters;
  };

  void OnMacControl(uint16_t port, std::span<const uint8_t> frame,
                    nic::TimeNs now);
  void Enqueue(uint16_t egress, uint8_t prio, uint16_t ingress,
               std::span<const uint8_t> frame);
  int PickPriority(PortState& p, nic::TimeNs now);
  void EvaluatePfc(uint16_t port, uint8_t prio, nic::TimeNs now);
  void SendPfc(uint16_t port, uint8_t prio, uint16_t quanta, nic::TimeNs now);

  SwitchConfig config_;
  FramePool pool_;
  std::vector<PortState> ports_;
  absl::flat_hash_map<uint64_t, uint16_t> routes_;
  std::unique_ptr<EcnMarker> marker_;
  Rng rng_;
  std::unique_ptr<PfcPolicy> pfc_policy_;
  bool timers_used_ = false;      // any pause received or XOFF sent, ever
  uint32_t control_pending_ = 0;  // PFC frames queued on any port
  nic::TimeNs now_ = 0;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_SWITCH_H_
