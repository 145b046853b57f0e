#include "protocol/crc32.h"

namespace rocemu::protocol {
namespace {

bool CpuHasAvx() {
#if defined(__x86_64__)
  // Static initialisers may run before libgcc has read CPUID.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
#else
  return false;
#endif
}

}  // namespace

const bool kCpuHasAvx = CpuHasAvx();

}  // namespace rocemu::protocol
