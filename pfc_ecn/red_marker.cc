#include "pfc_ecn/red_marker.h"

namespace rocemu::pfc_ecn {

absl::Status RedProfile::Validate() const {
  if (kmax_bytes < kmin_bytes) {
    return absl::InvalidArgumentError("RED: Kmax must be >= Kmin");
  }
  if (!(pmax >= 0.0 && pmax <= 1.0)) {
    return absl::InvalidArgumentError("RED: Pmax must be in [0, 1]");
  }
  return absl::OkStatus();
}

}  // namespace rocemu::pfc_ecn
