#include "pfc_ecn/pfc_receiver.h"

#include <algorithm>

namespace rocemu::pfc_ecn {

void PfcReceiver::PauseTimer::Apply(TimeNs now, TimeNs duration) {
  if (open && until <= now) {
    // The previous pause expired on its own before this frame.
    closed += until - start;
    open = false;
  }
  if (duration == 0) {
    if (open) {
      closed += now - start;
      open = false;
    }
    until = std::min(until, now);
    return;
  }
  if (!open) {
    start = now;
    open = true;
  }
  until = AddSat(now, duration);
}

TimeNs PfcReceiver::PauseTimer::Duration(TimeNs now) const {
  if (!open || now <= start) return closed;
  return closed + (std::min(now, until) - start);
}

void PfcReceiver::OnPfcFrame(
    TimeNs now, uint8_t enable_vector,
    const std::array<uint16_t, kNumPriorities>& quanta) {
  const uint8_t obeyed = enable_vector & config_.pfc_enable;
  for (int p = 0; p < kNumPriorities; ++p) {
    if ((obeyed >> p & 1) == 0) continue;
    ++frames_[p];
    prio_timer_[p].Apply(now,
                         PauseQuantaToNs(quanta[p], config_.port_rate_bps));
  }
}

void PfcReceiver::OnPauseFrame(TimeNs now, uint16_t quanta) {
  if (!config_.pause_enable) return;
  ++global_frames_;
  global_.Apply(now, PauseQuantaToNs(quanta, config_.port_rate_bps));
}

uint8_t PfcReceiver::PausedMask(TimeNs now) const {
  if (global_.until > now) return 0xFF;
  uint8_t mask = 0;
  for (int p = 0; p < kNumPriorities; ++p) {
    if (prio_timer_[p].until > now) mask |= static_cast<uint8_t>(1u << p);
  }
  return mask;
}

TimeNs PfcReceiver::ResumeTime(int priority, TimeNs now) const {
  const TimeNs until = std::max(prio_timer_[priority].until, global_.until);
  return std::max(until, now);
}

TimeNs PfcReceiver::NextResumeTime(TimeNs now) const {
  TimeNs next = kNever;
  for (int p = 0; p < kNumPriorities; ++p) {
    if (IsPaused(p, now)) next = std::min(next, ResumeTime(p, now));
  }
  return next;
}

void PfcReceiver::FillCounters(TimeNs now, PortCongestionCounters& out) const {
  for (int p = 0; p < kNumPriorities; ++p) {
    out.rx_prio_pause[p] = frames_[p];
    out.rx_prio_pause_duration[p] = PauseDurationNs(p, now) / kNsPerUs;
  }
  out.rx_global_pause = global_frames_;
  out.rx_global_pause_duration = GlobalPauseDurationNs(now) / kNsPerUs;
}

}  // namespace rocemu::pfc_ecn
