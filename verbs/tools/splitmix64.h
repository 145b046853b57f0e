// SplitMix64 (Steele, Lea, Flood 2014): the mixer behind the payload
// patterns of rocemu-perf and rocemu-pingpong, so that a byte pattern is a
// cheap function of (seed, index) that either side can recompute.
#ifndef ROCEMU_VERBS_TOOLS_SPLITMIX64_H_
#define ROCEMU_VERBS_TOOLS_SPLITMIX64_H_

#include <cstdint>

namespace rocemu {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace rocemu

#endif  // ROCEMU_VERBS_TOOLS_SPLITMIX64_H_
