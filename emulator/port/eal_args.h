// The DPDK EAL command line generated from the config: one polling lcore, no
// shared config, a per-process file prefix, hugepages only where the host
// has them free (hugepages.h; --no-huge and --in-memory are never
// combined), and the configured ports as --vdev (virtual) or -a (PCI)
// devices.
#ifndef ROCEMU_EMULATOR_PORT_EAL_ARGS_H_
#define ROCEMU_EMULATOR_PORT_EAL_ARGS_H_

#include <string>
#include <vector>

#include "config/config.h"

namespace rocemu::emulator {

// Whether devargs names a PCI device (DDDD:BB:DD.F or BB:DD.F first).
bool IsPciDevargs(const std::string& devargs);
// The ethdev name DPDK gives the port: the device part of devargs.
std::string DeviceName(const std::string& devargs);

// `hugepages`: --in-memory (ChooseHugepages decided the host has them),
// else --no-huge.
std::vector<std::string> BuildEalArgs(const config::Config& config, int pid,
                                      bool hugepages);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_EAL_ARGS_H_
