#include "pfc_ecn/reaction_point.h"

#include <algorithm>
#include <cmath>

namespace rocemu::pfc_ecn {

double ReactionPoint::Trunc(double x) const {
  return fixed() ? std::floor(x) : x;
}

void ReactionPoint::Reset() {
  const double max = params_->max_rate_mbps();
  rc_ = rt_ = max;
  // The paper's alpha exists from the start (alpha_0); the firmware sets it
  // on the first CNP, which comes to the same value.
  alpha_ = params_->rp_initial_alpha_value;
  stage_t_ = stage_b_ = 0;
  byte_acc_ = 0;
  active_ = alpha_cnp_ = decrease_cnp_ = false;
  alpha_next_ = decrease_next_ = increase_next_ = kNever;
}

void ReactionPoint::OnCnp(TimeNs now) {
  const DcqcnParams& p = *params_;
  if (!p.enabled) {
    ++cnp_ignored_;
    return;
  }
  ++cnp_handled_;
  AdvanceTo(now);
  const TimeNs alpha_period = TimeNs{p.rp_dce_tcp_rtt} * kNsPerUs;
  const TimeNs cut_period = TimeNs{p.rp_rate_reduce_monitor_period} * kNsPerUs;

  if (paper()) {
    active_ = true;
    Decrease(now);
    AlphaStep(/*cnp=*/true);
    alpha_next_ = AddSat(now, alpha_period);
    return;
  }

  if (!active_) {
    active_ = true;
    alpha_ = p.rp_initial_alpha_value;
    alpha_next_ = AddSat(now, alpha_period);
    decrease_next_ = AddSat(now, cut_period);
    increase_next_ = AddSat(now, TimeNs{p.rp_time_reset} * kNsPerUs);
    if (p.rp_rate_to_set_on_first_cnp != 0) {
      // The firmware's reading of the first CNP: jump to a set rate, which
      // replaces the cut this CNP would otherwise cause.
      rc_ = rt_ = p.rp_rate_to_set_on_first_cnp;
      return;
    }
  } else {
    alpha_cnp_ = true;
  }
  decrease_cnp_ = true;
  if (cut_period == 0) {
    Decrease(now);
    return;
  }
  if (decrease_next_ <= now) {
    // The monitor ticks were idle; move to the first tick after `now`.
    decrease_next_ += ((now - decrease_next_) / cut_period + 1) * cut_period;
  }
}

void ReactionPoint::OnBytesSent(uint64_t bytes, TimeNs now) {
  if (!active_) return;  // no congestion history: nothing to recover from
  AdvanceTo(now);
  const uint64_t reset = uint64_t{params_->rp_byte_reset} * 64;
  if (reset == 0) return;
  byte_acc_ += bytes;
  while (byte_acc_ >= reset) {
    byte_acc_ -= reset;
    OnIncreaseEvent(/*timer=*/false);
  }
}

TimeNs ReactionPoint::NextEventTime() const {
  const TimeNs cut = decrease_cnp_ ? decrease_next_ : kNever;
  return std::min(cut, increase_next_);
}

void ReactionPoint::AdvanceTo(TimeNs t) {
  if (!active_) return;
  const TimeNs inc_period = TimeNs{params_->rp_time_reset} * kNsPerUs;
  for (;;) {
    const TimeNs cut = decrease_cnp_ ? decrease_next_ : kNever;
    const TimeNs te = std::min(cut, increase_next_);
    if (te > t) break;
    CatchUpAlpha(te);
    if (cut == te) {
      Decrease(te);
    } else {
      increase_next_ = AddSat(te, inc_period);
      OnIncreaseEvent(/*timer=*/true);
    }
  }
  CatchUpAlpha(t);
}

void ReactionPoint::CatchUpAlpha(TimeNs t) {
  if (alpha_next_ > t) return;
  const TimeNs period = TimeNs{params_->rp_dce_tcp_rtt} * kNsPerUs;
  const uint64_t ticks = (t - alpha_next_) / period + 1;
  alpha_next_ += ticks * period;
  // Only the first tick can carry a CNP flag; the rest are plain decays.
  AlphaStep(alpha_cnp_);
  alpha_cnp_ = false;
  const uint64_t decays = ticks - 1;
  if (decays == 0) return;
  const double g = params_->rp_dce_tcp_g;
  if (!fixed()) {
    alpha_ *= std::pow(g / 1024.0, static_cast<double>(decays));
    return;
  }
  // Truncation takes at least 1 off per tick, so this ends within ~1024.
  for (uint64_t i = 0; i < decays; ++i) {
    const double next = std::floor(alpha_ * g / 1024.0);
    if (next == alpha_) break;
    alpha_ = next;
  }
}

void ReactionPoint::AlphaStep(bool cnp) {
  const double g = params_->rp_dce_tcp_g;
  alpha_ = Trunc(alpha_ * g / 1024.0) + (cnp ? 1024.0 - g : 0.0);
  // The firmware field holds at most 1023; 1024 (exactly 1.0) is only
  // reachable as the real-arithmetic initial value.
  if (fixed()) alpha_ = std::min(alpha_, 1023.0);
}

void ReactionPoint::Decrease(TimeNs now) {
  const DcqcnParams& p = *params_;
  const bool clamp = p.rp_clamp_tgt_rate || stage_b_ > 0 ||
                     (p.rp_clamp_tgt_rate_ati && stage_t_ > 0);
  if (clamp) rt_ = rc_;
  const double by_alpha = Trunc(rc_ * alpha_ / std::ldexp(1.0, p.rp_gd));
  const double max_cut = Trunc(rc_ * (100 - p.rp_min_dec_fac) / 100.0);
  rc_ = std::max(rc_ - std::min(by_alpha, max_cut),
                 static_cast<double>(p.rp_min_rate));
  decrease_cnp_ = false;
  stage_t_ = stage_b_ = 0;
  byte_acc_ = 0;
  increase_next_ = AddSat(now, TimeNs{p.rp_time_reset} * kNsPerUs);
  const TimeNs cut_period = TimeNs{p.rp_rate_reduce_monitor_period} * kNsPerUs;
  if (cut_period != 0 && decrease_next_ <= now) {
    decrease_next_ = AddSat(decrease_next_, cut_period);
  }
}

void ReactionPoint::OnIncreaseEvent(bool timer) {
  uint32_t& stage = timer ? stage_t_ : stage_b_;
  const double rc_before = rc_;
  const double rt_before = rt_;
  if (paper()) {
    if (stage != UINT32_MAX) ++stage;
    Increase();
  } else {
    Increase();
    if (stage != UINT32_MAX) ++stage;
  }
  // At the top with nothing left to gain, further ticks would only count
  // stages, which no longer matter (AI and HAI both clamp at the maximum):
  // stop the timer until the next cut so idle flows cost no events.
  if (timer && rc_ == rc_before && rt_ == rt_before &&
      rt_ == params_->max_rate_mbps()) {
    increase_next_ = kNever;
  }
}

void ReactionPoint::Increase() {
  const DcqcnParams& p = *params_;
  const uint32_t lo = std::min(stage_t_, stage_b_);
  const uint32_t hi = std::max(stage_t_, stage_b_);
  const uint32_t f = p.rp_threshold;
  double step = 0;  // fast recovery: move halfway to Rt, Rt unchanged
  if (paper()) {
    if (lo > f) {
      step = static_cast<double>(lo - f) * p.rp_hai_rate;
    } else if (hi > f) {
      step = p.rp_ai_rate;
    }
  } else {
    if (lo > f) {
      step = p.rp_hai_rate;
    } else if (hi >= f) {
      step = p.rp_ai_rate;
    }
  }
  const double max = p.max_rate_mbps();
  rt_ = std::min(rt_ + step, max);
  rc_ = std::min(Trunc((rc_ + rt_) / 2.0), max);
  // Halving in doubles can stall one ulp short of Rt; a bit per second is
  // below anything a pacer resolves.
  if (!fixed() && rt_ - rc_ < 1e-6) rc_ = rt_;
}

}  // namespace rocemu::pfc_ecn
