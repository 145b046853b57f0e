// Per-flow rate pacer: spaces a flow's packets so that its long-run rate
// equals the rate the reaction point allows. It keeps the time the next
// packet may start (HPCC's m_nextAvail): a packet of b bytes sent at t moves
// it to max(t, next) + 8b/rate. Idle time banks no credit; an optional
// burst tolerance (GCRA's tau) lets a packet start up to burst_bytes' worth
// of time early, so after idle a flow may send burst_bytes plus one packet
// back to back and never more. The sub-nanosecond remainder is carried, so
// the rate is exact over any run length.
#ifndef ROCEMU_PFC_ECN_PACER_H_
#define ROCEMU_PFC_ECN_PACER_H_

#include <cstdint>

#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

class Pacer {
 public:
  explicit Pacer(RateBps rate_bps, uint64_t burst_bytes = 0)
      : rate_bps_(rate_bps), burst_bytes_(burst_bytes) {
    UpdateBurst();
  }

  // Takes effect for the next packet; a packet already accounted keeps its
  // spacing.
  void SetRate(RateBps rate_bps) {
    if (rate_bps == rate_bps_) return;
    rate_bps_ = rate_bps;
    carry_ = 0;
    UpdateBurst();
  }
  RateBps rate_bps() const { return rate_bps_; }

  // Whether a packet may start at `now` (its size does not matter: the cost
  // of a packet is paid after it, as on a serializing link).
  bool CanSend(TimeNs now) const { return now >= NextSendTime(); }
  bool CanSend(TimeNs now, uint64_t /*bytes*/) const { return CanSend(now); }

  // Earliest start of the next packet.
  TimeNs NextSendTime() const {
    return next_send_ > burst_ns_ ? next_send_ - burst_ns_ : 0;
  }

  void OnSent(TimeNs now, uint64_t bytes);

 private:
  void UpdateBurst() {
    burst_ns_ = rate_bps_ == 0 ? 0 : burst_bytes_ * 8 * kNsPerSec / rate_bps_;
  }

  RateBps rate_bps_;
  uint64_t burst_bytes_;
  TimeNs burst_ns_ = 0;  // burst allowance at the current rate
  TimeNs next_send_ = 0;
  uint64_t carry_ = 0;  // remainder of bits * 1e9 not yet turned into ns
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_PACER_H_
