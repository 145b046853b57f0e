// DCQCN reaction point: the per-flow rate controller of the sender, in the
// ConnectX firmware form (DcqcnMode::kNvidia) or the SIGCOMM'15 paper form
// (kPaper). Both modes share the state, the cut, the increase and the
// alpha arithmetic; they differ only in when those steps run:
//
//   nvidia: a CNP sets two flags. Every rp_dce_tcp_rtt alpha is updated
//           (alpha*G/1024, plus (1024-G)/1024 if a CNP came); every
//           rp_rate_reduce_monitor_period the rate is cut once if a CNP
//           came. The first CNP only arms the timers (alpha = initial
//           value, rate = rp_rate_to_set_on_first_cnp if non-zero; with 0 it
//           also counts as a congestion signal and is cut at the next
//           monitor tick). Stages are classified before they advance:
//           FR while max(T,BC) < F, HAI when min(T,BC) > F, AI otherwise.
//   paper:  every CNP cuts at once with the current alpha, then updates
//           alpha (htsim's order), and restarts the alpha and increase
//           timers; alpha decays every K without a CNP. Stages advance
//           before they are classified: FR while max(T,BC) <= F, HAI by
//           i = min(T,BC) - F steps when min(T,BC) > F, AI otherwise.
//
// Timers are lazy: OnTime(now) replays every alpha tick, cut and increase
// due up to `now` in time order (ties: alpha, then cut, then increase; a cut
// restarts the increase timer), so a caller needs to wake only at
// NextEventTime(), when the rate can change. Everything is O(1) per call
// except catching up after long idle periods, and nothing allocates.
#ifndef ROCEMU_PFC_ECN_REACTION_POINT_H_
#define ROCEMU_PFC_ECN_REACTION_POINT_H_

#include <cstdint>

#include "pfc_ecn/dcqcn_params.h"
#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

class ReactionPoint {
 public:
  // `params` (shared by the flows of a port) must outlive this object and
  // have passed Validate().
  explicit ReactionPoint(const DcqcnParams* params) : params_(params) {
    Reset();
  }

  // Back to line rate with no congestion history (QP reset).
  void Reset();

  // A CNP for this flow arrived.
  void OnCnp(TimeNs now);
  // The flow put `bytes` on the wire (drives the byte counter).
  void OnBytesSent(uint64_t bytes, TimeNs now);
  // Runs every timer event due at or before `now`.
  void OnTime(TimeNs now) { AdvanceTo(now); }
  // When the rate may change next without a CNP; kNever if it cannot.
  TimeNs NextEventTime() const;

  double current_rate_mbps() const { return rc_; }
  double target_rate_mbps() const { return rt_; }
  RateBps current_rate_bps() const {
    return static_cast<RateBps>(rc_ * static_cast<double>(kBpsPerMbps));
  }
  // In [0, 1] (the firmware's value / 1024).
  double alpha() const { return alpha_ / 1024.0; }
  uint32_t time_stage() const { return stage_t_; }
  uint32_t byte_stage() const { return stage_b_; }
  bool active() const { return active_; }

  uint64_t rp_cnp_handled() const { return cnp_handled_; }
  uint64_t rp_cnp_ignored() const { return cnp_ignored_; }

 private:
  bool fixed() const {
    return params_->arithmetic == DcqcnArithmetic::kFixedPoint;
  }
  bool paper() const { return params_->mode == DcqcnMode::kPaper; }
  double Trunc(double x) const;

  void AdvanceTo(TimeNs t);
  void CatchUpAlpha(TimeNs t);
  void AlphaStep(bool cnp);
  void Decrease(TimeNs now);
  void OnIncreaseEvent(bool timer);
  void Increase();

  const DcqcnParams* params_;
  double rc_ = 0;     // current rate, Mb/s
  double rt_ = 0;     // target rate, Mb/s
  double alpha_ = 0;  // in 1/1024 (integral in fixed-point arithmetic)
  uint32_t stage_t_ = 0;
  uint32_t stage_b_ = 0;
  uint64_t byte_acc_ = 0;
  bool active_ = false;
  bool alpha_cnp_ = false;
  bool decrease_cnp_ = false;
  TimeNs alpha_next_ = kNever;
  TimeNs decrease_next_ = kNever;
  TimeNs increase_next_ = kNever;
  uint64_t cnp_handled_ = 0;
  uint64_t cnp_ignored_ = 0;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_REACTION_POINT_H_
