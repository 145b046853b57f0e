#include "pfc_ecn/pacer.h"

#include <algorithm>

namespace rocemu::pfc_ecn {

void Pacer::OnSent(TimeNs now, uint64_t bytes) {
  if (rate_bps_ == 0) {
    next_send_ = kNever;
    return;
  }
  // GCRA: the theoretical start time never lags `now`, so idle time banks
  // nothing beyond the burst tolerance CanSend() grants.
  const TimeNs start = std::max(next_send_, now);
  carry_ += bytes * 8 * kNsPerSec;
  const TimeNs ns = carry_ / rate_bps_;
  carry_ %= rate_bps_;
  next_send_ = AddSat(start, ns);
}

}  // namespace rocemu::pfc_ecn
