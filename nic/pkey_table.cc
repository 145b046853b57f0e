#include "nic/pkey_table.h"

#include "absl/strings/str_format.h"

namespace rocemu::nic {

PKeyTable::PKeyTable(uint16_t capacity)
    : keys_(capacity == 0 ? 1 : capacity, kInvalidPKey) {
  keys_[0] = kDefaultPKey;
}

absl::Status PKeyTable::Set(uint16_t index, uint16_t pkey) {
  if (index >= keys_.size()) {
    return absl::OutOfRangeError(absl::StrFormat(
        "P_Key index %u outside the table (%u entries)", index, capacity()));
  }
  if (!PKeyIsValid(pkey)) {
    keys_[index] = kInvalidPKey;
    return absl::OkStatus();
  }
  if (auto at = IndexOf(pkey); at && *at != index) {
    return absl::AlreadyExistsError(
        absl::StrFormat("P_Key 0x%04x already at index %u", pkey, *at));
  }
  keys_[index] = pkey;
  return absl::OkStatus();
}

absl::StatusOr<uint16_t> PKeyTable::Add(uint16_t pkey) {
  if (!PKeyIsValid(pkey)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("P_Key 0x%04x has partition base 0 (invalid)", pkey));
  }
  if (auto at = IndexOf(pkey)) return *at;
  for (uint16_t i = 0; i < keys_.size(); ++i) {
    if (!PKeyIsValid(keys_[i])) {
      keys_[i] = pkey;
      return i;
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("P_Key table full (%u entries)", capacity()));
}

std::optional<uint16_t> PKeyTable::IndexOf(uint16_t pkey) const {
  if (!PKeyIsValid(pkey)) return std::nullopt;
  for (uint16_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == pkey) return i;
  }
  return std::nullopt;
}

}  // namespace rocemu::nic
