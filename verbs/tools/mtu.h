// Path MTU in bytes <-> enum rocemu_mtu, for the tools' -m options.
#ifndef ROCEMU_VERBS_TOOLS_MTU_H_
#define ROCEMU_VERBS_TOOLS_MTU_H_

#include <cstdint>

#include "verbs/rocemu_verbs.h"

namespace rocemu::tools {

// `fallback` for a size that is not one of the five IBTA MTUs: each tool
// keeps the default of the stock tool it mirrors (ibv_*_pingpong: 1024,
// perftest: the port's, at most 4096).
inline int MtuEnum(uint32_t bytes, int fallback) {
  switch (bytes) {
    case 256:
      return ROCEMU_MTU_256;
    case 512:
      return ROCEMU_MTU_512;
    case 1024:
      return ROCEMU_MTU_1024;
    case 2048:
      return ROCEMU_MTU_2048;
    case 4096:
      return ROCEMU_MTU_4096;
    default:
      return fallback;
  }
}

inline uint32_t MtuBytes(int e) {
  return e >= ROCEMU_MTU_256 && e <= ROCEMU_MTU_4096 ? 128u << e : 1024;
}

}  // namespace rocemu::tools

#endif  // ROCEMU_VERBS_TOOLS_MTU_H_
