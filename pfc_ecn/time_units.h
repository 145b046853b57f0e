// Time and rate units of the congestion algorithms. Same convention as the
// NIC's clock (unsigned nanoseconds from an arbitrary origin, kNever = no
// event), restated here because pfc_ecn sits below nic/ in the layering.
#ifndef ROCEMU_PFC_ECN_TIME_UNITS_H_
#define ROCEMU_PFC_ECN_TIME_UNITS_H_

#include <cstdint>
#include <limits>

namespace rocemu::pfc_ecn {

using TimeNs = uint64_t;
inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
inline constexpr TimeNs kNsPerUs = 1000;
inline constexpr TimeNs kNsPerSec = 1000 * 1000 * 1000;

// Link and pacing rates are bits per second; DCQCN parameters keep the
// firmware's Mb/s.
using RateBps = uint64_t;
inline constexpr RateBps kBpsPerMbps = 1000 * 1000;

// 802.3 Annex 31B/31D: one pause quantum is 512 bit times.
inline constexpr uint64_t kBitsPerPauseQuantum = 512;

// Duration of `quanta` pause quanta at `rate_bps`, rounded up to whole
// nanoseconds so that a pause never ends early (at 100 Gb/s a quantum is
// 5.12 ns).
constexpr TimeNs PauseQuantaToNs(uint16_t quanta, RateBps rate_bps) {
  if (rate_bps == 0) return 0;
  // At most 65535 * 512 * 1e9 < 2^56: no overflow.
  const uint64_t bit_ns = uint64_t{quanta} * kBitsPerPauseQuantum * kNsPerSec;
  return (bit_ns + rate_bps - 1) / rate_bps;
}

// Saturating addition so that `now + delay` never wraps past kNever.
constexpr TimeNs AddSat(TimeNs t, TimeNs d) {
  return t > kNever - d ? kNever : t + d;
}

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_TIME_UNITS_H_
