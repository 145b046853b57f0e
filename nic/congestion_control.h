// The RNIC side of congestion signalling, between the device's receive and
// transmit paths and the pfc_ecn algorithms:
//   receive:  PFC/PAUSE frames -> PfcReceiver (time-based pause per
//             priority); a CE-marked RoCE packet for a QP -> that QP's
//             notification point -> a CNP queued back to the sender's QP;
//             a CNP -> that QP's DCQCN reaction point -> its pacer.
//   transmit: queued CNPs go first (strict priority); each request packet a
//             QP sends advances its reaction point (byte counter, timers)
//             and its pacer, whose next-send time becomes Qp::pace_until_,
//             which the requester obeys.
// Counters are the device's (np_ecn_marked_roce_packets, np_cnp_sent,
// rp_cnp_handled, rp_cnp_ignored) plus the port's PFC counters.
//
// Everything here is called from the device's one thread; nothing on the
// data path allocates or makes a virtual call.
#ifndef ROCEMU_NIC_CONGESTION_CONTROL_H_
#define ROCEMU_NIC_CONGESTION_CONTROL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "nic/clock.h"
#include "nic/congestion_config.h"
#include "nic/counters.h"
#include "nic/frame_io.h"
#include "nic/qp.h"
#include "pfc_ecn/counters.h"
#include "pfc_ecn/pfc_receiver.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class CongestionControl {
 public:
  // `config` must have passed Validate().
  explicit CongestionControl(const CongestionConfig& config);

  const CongestionConfig& config() const { return config_; }
  const pfc_ecn::DcqcnParams& dcqcn() const { return config_.dcqcn; }

  // Control path: a QP entering RTR gets fresh RP/pacer/NP state under the
  // port's parameters.
  void InitQp(Qp& qp) const;

  // The 802.1p priority a QP's frames are queued on: the address vector's
  // SL when set, else roce_prio.
  uint8_t PriorityOf(const Qp& qp) const {
    const uint8_t sl = qp.attr_.ah_attr.sl & 7;
    return sl != 0 ? sl : config_.roce_prio;
  }
  uint8_t DscpOf(uint8_t traffic_class) const {
    return traffic_class != 0 ? traffic_class >> 2 : config_.roce_dscp;
  }
  uint8_t EcnBits() const { return config_.ecn_capable ? 0b10 : 0b00; }

  // --- receive path ---
  // A parsed PFC or PAUSE frame.
  void OnMacControl(const protocol::ParsedFrame& frame, TimeNs now);
  // A RoCE packet for `qp` arrived with CE set: runs the NP and, when it
  // says so, queues a CNP to the packet's sender.
  void OnCeMarked(Qp& qp, const protocol::ParsedFrame& frame, TimeNs now,
                  DeviceCounters& counters);
  // A CNP for `qp` (the sender of the congested flow).
  void OnCnp(Qp& qp, TimeNs now, DeviceCounters& counters);

  // --- transmit path ---
  // Re-reads the pause state at `now`; returns the mask of paused
  // priorities (PFC/PAUSE received, or forced by ForcePause).
  uint8_t RefreshPause(TimeNs now);
  uint8_t paused_mask() const { return paused_mask_; }
  // Writes queued CNPs into frames (up to frames.size()) unless the CNP
  // priority is paused; returns how many.
  size_t TransmitCnps(std::span<TxFrame> frames, DeviceCounters& counters);
  bool HasCnp() const { return cnp_count_ != 0; }
  // A request packet of `frame_len` bytes left `qp` at `now`.
  void OnRequestSent(Qp& qp, uint32_t frame_len, TimeNs now);
  // When the transmit path next has something to do because of congestion
  // state alone (a pause expires, a CNP is waiting); kNever if nothing.
  TimeNs NextEventTime(TimeNs now) const;

  // Manual pause (Rnic::PausePriority), kept apart from received PFC.
  void ForcePause(uint8_t priority, bool paused);

  // rx_prioN_pause, rx_prioN_pause_duration (us), tx_prioN_pause and the
  // 802.3x global ones. The RNIC has no ingress buffer of its own, so it
  // sends no PFC frames: tx_* stay 0.
  pfc_ecn::PortCongestionCounters PortCounters(TimeNs now) const;
  const pfc_ecn::PfcReceiver& pfc_receiver() const { return pfc_rx_; }
  uint64_t cnp_dropped() const { return cnp_dropped_; }

 private:
  struct PendingCnp {
    protocol::NetHeaders net;
    uint32_t dest_qp = 0;
  };

  CongestionConfig config_;
  TimeNs np_min_gap_ns_;  // between two CNPs to one QP
  pfc_ecn::PfcReceiver pfc_rx_;
  uint8_t forced_ = 0;
  uint8_t paused_mask_ = 0;
  TimeNs pause_refreshed_at_ = 0;
  std::vector<PendingCnp> cnps_;  // ring, sized at construction
  size_t cnp_head_ = 0;
  size_t cnp_count_ = 0;
  uint64_t cnp_dropped_ = 0;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CONGESTION_CONTROL_H_
