// Receive side of 802.1Qbb PFC and 802.3x PAUSE on one port: which
// priorities the peer has told us to hold, and until when.
//
// A frame with time q > 0 pauses for q * 512 bit times at the port's rate,
// counted from its arrival; a later frame for the same priority replaces the
// remaining time (so a refresh extends it, and q = 0 is an XON that resumes
// at once). The pause times out by itself: unlike HPCC's simulator, a lost
// XON does not hold the priority forever. 802.3x PAUSE holds every priority.
#ifndef ROCEMU_PFC_ECN_PFC_RECEIVER_H_
#define ROCEMU_PFC_ECN_PFC_RECEIVER_H_

#include <array>
#include <cstdint>

#include "pfc_ecn/counters.h"
#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

struct PfcReceiverConfig {
  RateBps port_rate_bps = 100 * 1000 * kBpsPerMbps;
  // Priorities whose PFC frames are obeyed (dcbnl pfc_en); frames for other
  // priorities are ignored and not counted, as mlx5 only counts enabled ones.
  uint8_t pfc_enable = 0xFF;
  // Whether 802.3x PAUSE is obeyed (ethtool -A rx on).
  bool pause_enable = true;
};

class PfcReceiver {
 public:
  explicit PfcReceiver(const PfcReceiverConfig& config) : config_(config) {}

  // A PFC frame: bit n of `enable_vector` makes quanta[n] valid.
  void OnPfcFrame(TimeNs now, uint8_t enable_vector,
                  const std::array<uint16_t, kNumPriorities>& quanta);
  // An 802.3x PAUSE frame.
  void OnPauseFrame(TimeNs now, uint16_t quanta);

  bool IsPaused(int priority, TimeNs now) const {
    return prio_timer_[priority].until > now || global_.until > now;
  }
  // Bit n set when priority n may not transmit at `now` (one load for an
  // egress scheduler that walks priorities).
  uint8_t PausedMask(TimeNs now) const;
  // When `priority` may transmit again: `now` if it is not paused.
  TimeNs ResumeTime(int priority, TimeNs now) const;
  // Earliest time a currently paused priority resumes; kNever if none is
  // paused.
  TimeNs NextResumeTime(TimeNs now) const;

  // Total time `priority` was held by PFC frames up to `now` (802.3x PAUSE
  // time is accounted separately, in GlobalPauseDurationNs).
  TimeNs PauseDurationNs(int priority, TimeNs now) const {
    return prio_timer_[priority].Duration(now);
  }
  TimeNs GlobalPauseDurationNs(TimeNs now) const {
    return global_.Duration(now);
  }

  // Writes the rx_* fields of `out` (durations in microseconds).
  void FillCounters(TimeNs now, PortCongestionCounters& out) const;
  uint64_t rx_prio_pause(int priority) const { return frames_[priority]; }
  uint64_t rx_global_pause() const { return global_frames_; }

  const PfcReceiverConfig& config() const { return config_; }
  void set_port_rate_bps(RateBps rate) { config_.port_rate_bps = rate; }

 private:
  // One pause timer plus the bookkeeping for its accumulated duration.
  struct PauseTimer {
    TimeNs start = 0;   // start of the current (or last) pause interval
    TimeNs until = 0;   // the interval ends here (<= start when idle)
    TimeNs closed = 0;  // total of intervals that ended before `start`
    bool open = false;

    void Apply(TimeNs now, TimeNs duration);
    TimeNs Duration(TimeNs now) const;
  };

  PfcReceiverConfig config_;
  std::array<PauseTimer, kNumPriorities> prio_timer_{};
  PauseTimer global_{};
  std::array<uint64_t, kNumPriorities> frames_{};
  uint64_t global_frames_ = 0;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_PFC_RECEIVER_H_
