// Transmit side of PFC on one port: decides, from the occupancy of each
// priority's lossless ingress buffer, when to send XOFF and XON.
//
// Hysteresis: XOFF when occupancy reaches xoff_bytes, XON once it has fallen
// to xon_bytes. While a priority stays congested the XOFF is re-sent every
// refresh interval (by default half the pause the peer applies), so the peer
// never resumes on a timeout while our buffer is still above XON. Requests
// for several priorities that fall due together are merged into one frame.
// Frame encoding is protocol/pfc.h's job: this class only says "send a PFC
// frame with this enable vector and these quanta now".
#ifndef ROCEMU_PFC_ECN_PFC_TRANSMITTER_H_
#define ROCEMU_PFC_ECN_PFC_TRANSMITTER_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "pfc_ecn/counters.h"
#include "pfc_ecn/pfc_thresholds.h"
#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

struct PfcTransmitterConfig {
  RateBps port_rate_bps = 100 * 1000 * kBpsPerMbps;
  uint8_t pfc_enable = 1u << 3;  // RoCE on priority 3
  std::array<PfcThresholds, kNumPriorities> thresholds{};
  uint16_t pause_quanta = 0xFFFF;
  // 0: half of pause_quanta at port_rate_bps.
  TimeNs refresh_interval_ns = 0;
  // When false no XON is sent and the peer resumes when its timer expires
  // (DPDK's rte_eth_fc_conf::send_xon).
  bool send_xon = true;

  absl::Status Validate() const;
};

struct PfcFrameRequest {
  uint8_t enable_vector = 0;
  std::array<uint16_t, kNumPriorities> quanta{};
};

class PfcTransmitter {
 public:
  // `config` must have passed Validate().
  explicit PfcTransmitter(const PfcTransmitterConfig& config);

  void OnEnqueue(int priority, uint64_t bytes) {
    occupancy_[priority] += bytes;
  }
  void OnDequeue(int priority, uint64_t bytes) {
    occupancy_[priority] -=
        bytes < occupancy_[priority] ? bytes : occupancy_[priority];
  }
  void SetOccupancy(int priority, uint64_t bytes) {
    occupancy_[priority] = bytes;
  }
  uint64_t occupancy(int priority) const { return occupancy_[priority]; }
  // Moves `priority`'s XOFF/XON thresholds (xon below xoff): a switch
  // whose lossless buffers share one pool recomputes them from the free
  // pool before each Poll (dynamic thresholds, as Trident-class MMUs do).
  void SetThresholds(int priority, const PfcThresholds& t) {
    config_.thresholds[priority] = t;
  }

  // The frame to send now, if any; counts it as sent.
  std::optional<PfcFrameRequest> Poll(TimeNs now);
  // When Poll() next has something to do without an occupancy change (the
  // earliest XOFF refresh); kNever if no priority is asserted.
  TimeNs NextEventTime() const;

  // Whether we currently hold the peer's `priority` (XOFF sent, no XON yet).
  bool IsAsserted(int priority) const { return asserted_ >> priority & 1; }
  uint64_t tx_prio_pause(int priority) const { return frames_[priority]; }
  TimeNs refresh_interval_ns() const { return refresh_ns_; }
  void FillCounters(PortCongestionCounters& out) const;

 private:
  PfcTransmitterConfig config_;
  TimeNs refresh_ns_;
  uint8_t asserted_ = 0;
  std::array<uint64_t, kNumPriorities> occupancy_{};
  std::array<TimeNs, kNumPriorities> next_refresh_{};
  std::array<uint64_t, kNumPriorities> frames_{};
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_PFC_TRANSMITTER_H_
