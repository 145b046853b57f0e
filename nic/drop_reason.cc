#include "nic/drop_reason.h"

namespace rocemu::nic {

std::optional<DropReason> DropReasonByName(std::string_view name) {
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    if (name == kDropReasonNames[i]) return static_cast<DropReason>(i);
  }
  return std::nullopt;
}

std::optional<DropReason> DropReasonByCode(uint32_t code) {
  if (code >= kDropReasonCount) return std::nullopt;
  return static_cast<DropReason>(code);
}

}  // namespace rocemu::nic
