#include "pfc_ecn/pfc_transmitter.h"

#include <algorithm>

namespace rocemu::pfc_ecn {

absl::Status PfcTransmitterConfig::Validate() const {
  if (port_rate_bps == 0) {
    return absl::InvalidArgumentError("PFC: port rate must be positive");
  }
  if (pause_quanta == 0) {
    return absl::InvalidArgumentError("PFC: XOFF pause_quanta must be > 0");
  }
  for (int p = 0; p < kNumPriorities; ++p) {
    if ((pfc_enable >> p & 1) == 0) continue;
    if (thresholds[p].xon_bytes >= thresholds[p].xoff_bytes) {
      return absl::InvalidArgumentError(
          "PFC: xon threshold must be below xoff threshold");
    }
  }
  const TimeNs pause_ns = PauseQuantaToNs(pause_quanta, port_rate_bps);
  if (refresh_interval_ns >= pause_ns) {
    return absl::InvalidArgumentError(
        "PFC: refresh interval must be shorter than the pause it refreshes");
  }
  return absl::OkStatus();
}

PfcTransmitter::PfcTransmitter(const PfcTransmitterConfig& config)
    : config_(config),
      refresh_ns_(
          config.refresh_interval_ns != 0
              ? config.refresh_interval_ns
              : std::max<TimeNs>(1, PauseQuantaToNs(config.pause_quanta,
                                                    config.port_rate_bps) /
                                        2)) {}

std::optional<PfcFrameRequest> PfcTransmitter::Poll(TimeNs now) {
  PfcFrameRequest frame;
  for (int p = 0; p < kNumPriorities; ++p) {
    if ((config_.pfc_enable >> p & 1) == 0) continue;
    const uint8_t bit = static_cast<uint8_t>(1u << p);
    const bool asserted = asserted_ & bit;
    if (!asserted) {
      if (occupancy_[p] < config_.thresholds[p].xoff_bytes) continue;
      asserted_ |= bit;
    } else if (occupancy_[p] <= config_.thresholds[p].xon_bytes) {
      asserted_ &= static_cast<uint8_t>(~bit);
      if (!config_.send_xon) continue;
      frame.enable_vector |= bit;
      frame.quanta[p] = 0;
      continue;
    } else if (now < next_refresh_[p]) {
      continue;
    }
    frame.enable_vector |= bit;
    frame.quanta[p] = config_.pause_quanta;
    next_refresh_[p] = AddSat(now, refresh_ns_);
  }
  if (frame.enable_vector == 0) return std::nullopt;
  // A frame is going out anyway: refresh every other held priority in it,
  // which saves a frame later.
  for (int p = 0; p < kNumPriorities; ++p) {
    const uint8_t bit = static_cast<uint8_t>(1u << p);
    if ((asserted_ & bit) == 0 || (frame.enable_vector & bit) != 0) continue;
    frame.enable_vector |= bit;
    frame.quanta[p] = config_.pause_quanta;
    next_refresh_[p] = AddSat(now, refresh_ns_);
  }
  for (int p = 0; p < kNumPriorities; ++p) {
    if (frame.enable_vector >> p & 1) ++frames_[p];
  }
  return frame;
}

TimeNs PfcTransmitter::NextEventTime() const {
  TimeNs next = kNever;
  for (int p = 0; p < kNumPriorities; ++p) {
    if (asserted_ >> p & 1) next = std::min(next, next_refresh_[p]);
  }
  return next;
}

void PfcTransmitter::FillCounters(PortCongestionCounters& out) const {
  for (int p = 0; p < kNumPriorities; ++p) out.tx_prio_pause[p] = frames_[p];
}

}  // namespace rocemu::pfc_ecn
