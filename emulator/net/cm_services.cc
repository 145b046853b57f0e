#include "emulator/net/cm_services.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace rocemu::emulator {
namespace {

// Some service ID matches both: each one's fixed bits agree where both
// masks fix them.
bool Overlap(uint64_t a, uint64_t a_mask, uint64_t b, uint64_t b_mask) {
  return ((a ^ b) & a_mask & b_mask) == 0;
}

}  // namespace

absl::Status PortCmServices::Claim(uint64_t service_id, uint64_t mask,
                                   uint32_t shard) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Claimed& c : claims_) {
    if (c.shard != shard && Overlap(c.service_id, c.mask, service_id, mask)) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "service ID 0x%016x is already listened on by another process "
          "(RNIC shard %u)",
          service_id, c.shard));
    }
  }
  claims_.push_back({service_id & mask, mask, shard});
  return absl::OkStatus();
}

void PortCmServices::Release(uint64_t service_id, uint64_t mask,
                             uint32_t shard) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(claims_.begin(), claims_.end(), [&](const Claimed& c) {
    return c.service_id == (service_id & mask) && c.mask == mask &&
           c.shard == shard;
  });
  if (it != claims_.end()) claims_.erase(it);
}

std::optional<uint32_t> PortCmServices::Lookup(uint64_t service_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Claimed& c : claims_) {
    if ((service_id & c.mask) == c.service_id) return c.shard;
  }
  return std::nullopt;
}

}  // namespace rocemu::emulator
