// Memory access rights as ibv_access_flags names them. They travel as a plain
// bit mask so that a region's rights and a request's needs combine with & and
// |; the values are those of <infiniband/verbs.h> so the verbs library can
// pass an application's mask through unchanged.
#ifndef ROCEMU_NIC_ACCESS_H_
#define ROCEMU_NIC_ACCESS_H_

#include <cstdint>

namespace rocemu::nic {

using AccessFlags = uint32_t;

namespace access {
inline constexpr AccessFlags kNone = 0;
inline constexpr AccessFlags kLocalWrite = 1u << 0;   // IBV_ACCESS_LOCAL_WRITE
inline constexpr AccessFlags kRemoteWrite = 1u << 1;  // IBV_ACCESS_REMOTE_WRITE
inline constexpr AccessFlags kRemoteRead = 1u << 2;   // IBV_ACCESS_REMOTE_READ
inline constexpr AccessFlags kRemoteAtomic = 1u
                                             << 3;  // IBV_ACCESS_REMOTE_ATOMIC
inline constexpr AccessFlags kMwBind = 1u << 4;     // IBV_ACCESS_MW_BIND
inline constexpr AccessFlags kZeroBased = 1u << 5;  // IBV_ACCESS_ZERO_BASED
inline constexpr AccessFlags kOnDemand = 1u << 6;   // IBV_ACCESS_ON_DEMAND
inline constexpr AccessFlags kHugetlb = 1u << 7;    // IBV_ACCESS_HUGETLB
// IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT (rdma-core 45; IBTA 1.5 FLUSH).
inline constexpr AccessFlags kFlushGlobal = 1u << 8;
inline constexpr AccessFlags kFlushPersistent = 1u << 9;
inline constexpr AccessFlags kRelaxedOrdering =
    1u << 20;  // IBV_ACCESS_RELAXED_ORDERING

inline constexpr AccessFlags kRemoteAny =
    kRemoteWrite | kRemoteRead | kRemoteAtomic;
inline constexpr AccessFlags kFlush = kFlushGlobal | kFlushPersistent;
// Every flag an MR registration accepts; anything else is EINVAL. Not
// kFlushPersistent: no rocemu region is persistent memory (rxe refuses it
// too for memory that is not pmem), so a persistent FLUSH always meets
// an R_Key that lacks the right.
inline constexpr AccessFlags kAllMr =
    kLocalWrite | kRemoteWrite | kRemoteRead | kRemoteAtomic | kMwBind |
    kZeroBased | kOnDemand | kHugetlb | kFlushGlobal | kRelaxedOrdering;
}  // namespace access

// A region writable or atomically updatable from the wire must
// also be locally writable (ibv_reg_mr fails with EINVAL otherwise).
constexpr bool AccessFlagsConsistent(AccessFlags f) {
  return (f & ~access::kAllMr) == 0 &&
         ((f & (access::kRemoteWrite | access::kRemoteAtomic)) == 0 ||
          (f & access::kLocalWrite) != 0);
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_ACCESS_H_
