// RED-style ECN marking as datacenter switches apply it to RoCE egress
// queues (and as the DCQCN, HPCC and MSR simulators model it): no averaging,
// the instantaneous queue depth q decides
//   p(q) = 0                                 q <= Kmin
//        = Pmax * (q - Kmin) / (Kmax - Kmin) Kmin < q <= Kmax
//        = 1                                 q >  Kmax
// WRED is one RedProfile per queue/priority.
#ifndef ROCEMU_PFC_ECN_RED_MARKER_H_
#define ROCEMU_PFC_ECN_RED_MARKER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "pfc_ecn/rng.h"

namespace rocemu::pfc_ecn {

struct RedProfile {
  uint64_t kmin_bytes = 5 * 1000;    // DCQCN paper: 5 KB
  uint64_t kmax_bytes = 200 * 1000;  // DCQCN paper: 200 KB
  double pmax = 0.01;                // DCQCN paper: 1 %

  absl::Status Validate() const;
};

class RedMarker {
 public:
  // `profile` must have passed Validate().
  RedMarker(const RedProfile& profile, uint64_t seed)
      : profile_(profile), rng_(seed) {}

  double MarkProbability(uint64_t depth_bytes) const {
    if (depth_bytes <= profile_.kmin_bytes) return 0.0;
    if (depth_bytes > profile_.kmax_bytes) return 1.0;
    return profile_.pmax *
           static_cast<double>(depth_bytes - profile_.kmin_bytes) /
           static_cast<double>(profile_.kmax_bytes - profile_.kmin_bytes);
  }

  // Draws only inside (Kmin, Kmax], so the random sequence, and with it every
  // later decision, depends only on the packets that fell in the RED band.
  bool ShouldMark(uint64_t depth_bytes) {
    if (depth_bytes <= profile_.kmin_bytes) return false;
    if (depth_bytes > profile_.kmax_bytes) return true;
    return rng_.NextUnit() < MarkProbability(depth_bytes);
  }

  const RedProfile& profile() const { return profile_; }

 private:
  RedProfile profile_;
  SplitMix64 rng_;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_RED_MARKER_H_
