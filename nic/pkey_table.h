// The port's P_Key table. A P_Key is a 15-bit partition number plus a
// membership bit (bit 15: 1 = full member, 0 = limited member). Index 0 holds
// the default partition 0xFFFF; other entries are configured (rxe accepts
// only the default key, which is one of the things rocemu does better).
// The receive path compares a packet's BTH P_Key with the P_Key at the QP's
// pkey_index and counts bad_pkey_cntr itself on a mismatch.
#ifndef ROCEMU_NIC_PKEY_TABLE_H_
#define ROCEMU_NIC_PKEY_TABLE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rocemu::nic {

inline constexpr uint16_t kPKeyFullMember = 0x8000;
inline constexpr uint16_t kPKeyBaseMask = 0x7FFF;
inline constexpr uint16_t kDefaultPKey = 0xFFFF;
// Base 0 (0x0000 / 0x8000) is the invalid P_Key: an empty table entry,
// never matched.
inline constexpr uint16_t kInvalidPKey = 0x0000;

constexpr bool PKeyIsFullMember(uint16_t pkey) {
  return (pkey & kPKeyFullMember) != 0;
}
constexpr bool PKeyIsValid(uint16_t pkey) {
  return (pkey & kPKeyBaseMask) != 0;
}
// IBTA partition rule: two P_Keys match when their partition bases are equal
// and not both are limited members (two limited members may not talk).
constexpr bool PKeyMatch(uint16_t a, uint16_t b) {
  return PKeyIsValid(a) && (a & kPKeyBaseMask) == (b & kPKeyBaseMask) &&
         ((a | b) & kPKeyFullMember) != 0;
}

class PKeyTable {
 public:
  // Index 0 = 0xFFFF, all other entries invalid.
  explicit PKeyTable(uint16_t capacity);

  uint16_t capacity() const { return static_cast<uint16_t>(keys_.size()); }
  // Writing kInvalidPKey clears an entry. The same key may not be held
  // twice (ibv_get_pkey_index must be unambiguous).
  absl::Status Set(uint16_t index, uint16_t pkey);
  absl::StatusOr<uint16_t> Add(uint16_t pkey);
  // ibv_query_pkey: the invalid key (0) for an empty or out-of-range index.
  uint16_t Get(uint16_t index) const {
    return index < keys_.size() ? keys_[index] : kInvalidPKey;
  }
  // ibv_get_pkey_index: exact match of all 16 bits.
  std::optional<uint16_t> IndexOf(uint16_t pkey) const;
  // Whether a packet carrying `packet_pkey` may be delivered to a QP bound
  // to table entry `qp_pkey_index` (hot path: one load, a few bit ops).
  bool Accepts(uint16_t qp_pkey_index, uint16_t packet_pkey) const {
    return qp_pkey_index < keys_.size() &&
           PKeyMatch(keys_[qp_pkey_index], packet_pkey);
  }

 private:
  std::vector<uint16_t> keys_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_PKEY_TABLE_H_
