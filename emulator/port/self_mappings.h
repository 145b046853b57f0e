// The process's own memory mappings by name, read from /proc/self/maps:
// how the daemon finds memif's shared regions, which DPDK maps without
// telling where (port/dpdk_port.cc faults them in, port/memif_rx_interrupt.cc
// finds a ring in them). Not for a hot path: it reads a file.
#ifndef ROCEMU_EMULATOR_PORT_SELF_MAPPINGS_H_
#define ROCEMU_EMULATOR_PORT_SELF_MAPPINGS_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace rocemu::emulator {

// Calls f(begin, end) for each mapping whose line has `tag` (its name, e.g.
// "memfd:memif_region"). False if /proc/self/maps cannot be read.
template <typename F>
bool ForEachSelfMapping(std::string_view tag, F f) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[512];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    if (std::string_view(line).find(tag) == std::string_view::npos) continue;
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &begin, &end) == 2 &&
        end > begin) {
      f(begin, end);
    }
  }
  std::fclose(maps);
  return true;
}

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_SELF_MAPPINGS_H_
