// 24-bit packet sequence numbers (IBTA vol. 1 9.7.1). PSNs wrap at 2^24, so
// order is only defined within half the space: a is "before" b when b - a,
// taken modulo 2^24, lies in (0, 2^23).
#ifndef ROCEMU_NIC_PSN_H_
#define ROCEMU_NIC_PSN_H_

#include <cstdint>

namespace rocemu::nic {

inline constexpr uint32_t kPsnModulus = 1u << 24;
inline constexpr uint32_t kPsnMask = kPsnModulus - 1;
inline constexpr uint32_t kPsnHalfWindow = 1u << 23;

constexpr uint32_t PsnAdd(uint32_t psn, uint32_t n) {
  return (psn + n) & kPsnMask;
}

// Signed distance from a to b in (-2^23, 2^23]: positive when b is after a.
constexpr int32_t PsnDiff(uint32_t b, uint32_t a) {
  const int32_t d = static_cast<int32_t>(((b - a) & kPsnMask) << 8) >> 8;
  return d;
}

constexpr bool PsnLess(uint32_t a, uint32_t b) { return PsnDiff(b, a) > 0; }
constexpr bool PsnLessEq(uint32_t a, uint32_t b) { return PsnDiff(b, a) >= 0; }

static_assert(PsnAdd(kPsnMask, 1) == 0);
static_assert(PsnLess(kPsnMask, 0));
static_assert(!PsnLess(0, kPsnMask));
static_assert(PsnDiff(2, kPsnMask - 1) == 4);
static_assert(PsnDiff(kPsnMask - 1, 2) == -4);
static_assert(PsnLess(0, kPsnHalfWindow - 1));

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_PSN_H_
