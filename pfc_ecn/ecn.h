// The two ECN bits of the IP TOS / Traffic Class octet (RFC 3168).
#ifndef ROCEMU_PFC_ECN_ECN_H_
#define ROCEMU_PFC_ECN_ECN_H_

#include <cstdint>

namespace rocemu::pfc_ecn {

enum class Ecn : uint8_t {
  kNotEct = 0b00,
  kEct1 = 0b01,
  kEct0 = 0b10,  // what RoCE senders use by default
  kCe = 0b11,
};

constexpr bool IsEct(Ecn e) { return e == Ecn::kEct0 || e == Ecn::kEct1; }

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_ECN_H_
