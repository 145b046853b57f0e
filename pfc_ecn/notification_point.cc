#include "pfc_ecn/notification_point.h"

namespace rocemu::pfc_ecn {

absl::Status NpParams::Validate() const {
  if (np_cnp_dscp > 63) {
    return absl::InvalidArgumentError("np_cnp_dscp must be in 0..63");
  }
  if (np_cnp_prio > 7) {
    return absl::InvalidArgumentError("np_cnp_prio must be in 0..7");
  }
  return absl::OkStatus();
}

NotificationPoint::NotificationPoint(const NpParams& params, uint32_t num_flows)
    : params_(params), min_gap_ns_(NpMinGapNs(params)), flows_(num_flows) {}

void NotificationPoint::Resize(uint32_t num_flows) { flows_.resize(num_flows); }

}  // namespace rocemu::pfc_ecn
