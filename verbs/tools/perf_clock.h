// The one clock rocemu-perf and its tests time with: CLOCK_MONOTONIC in
// nanoseconds (a vDSO read, no syscall).
#ifndef ROCEMU_VERBS_TOOLS_PERF_CLOCK_H_
#define ROCEMU_VERBS_TOOLS_PERF_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace rocemu::verbs::perf {

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_CLOCK_H_
