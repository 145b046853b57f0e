#include "emulator/port/eal_args.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rocemu::emulator {

bool IsPciDevargs(const std::string& devargs) {
  std::string dev = DeviceName(devargs);
  // BB:DD.F with an optional DDDD: domain.
  size_t dot = dev.rfind('.');
  size_t colon = dev.find(':');
  if (dot == std::string::npos || colon == std::string::npos || dot < colon) {
    return false;
  }
  for (char c : dev) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' &&
        c != '.') {
      return false;
    }
  }
  return true;
}

std::string DeviceName(const std::string& devargs) {
  return devargs.substr(0, devargs.find(','));
}

std::vector<std::string> BuildEalArgs(const config::Config& config, int pid,
                                      bool hugepages) {
  const config::EalConfig& eal = config.eal;
  std::vector<std::string> args = {"rocemud"};
  args.push_back("-l");
  args.push_back(eal.lcores <= 1 ? absl::StrCat(eal.lcore)
                                 : absl::StrCat(eal.lcore, "-",
                                                eal.lcore + eal.lcores - 1));
  args.push_back("--file-prefix");
  args.push_back(eal.file_prefix.empty() ? absl::StrCat("rocemu-", pid)
                                         : eal.file_prefix);
  args.push_back("--no-shconf");
  if (hugepages) {
    args.push_back("--in-memory");
    // One memfd per segment list rather than per page: virtio_user shares
    // them with vhost and fails with one per page ("Too many memory
    // regions"); memif's zero-copy=yes needs it too (docs/daemon.md,
    // "Hugepages", on why that is not set by default).
    args.push_back("--single-file-segments");
  } else {
    args.push_back("--no-huge");
  }
  args.push_back("-m");
  args.push_back(absl::StrCat(eal.memory_mb));
  args.push_back(absl::StrCat("--log-level=", eal.log_level));
  // rte_net_crc picks its AVX-512 path only when allowed here.
  args.push_back("--force-max-simd-bitwidth=512");
  args.push_back("--no-telemetry");
  bool any_pci = false;
  for (const config::PortConfig& port : config.ports) {
    if (IsPciDevargs(port.devargs)) {
      any_pci = true;
      args.push_back("-a");
    } else {
      args.push_back("--vdev");
    }
    args.push_back(port.devargs);
  }
  if (!any_pci) args.push_back("--no-pci");
  for (const std::string& a : eal.args) args.push_back(a);
  return args;
}

}  // namespace rocemu::emulator
