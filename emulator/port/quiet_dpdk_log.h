// Holds one DPDK log type at critical level for a scope: for calls whose
// failure the caller reports in its own words (or that fail by design, as
// a memif client's start while no server listens), so that DPDK's own
// error lines do not land in a daemon's or an embedding program's output.
#ifndef ROCEMU_EMULATOR_PORT_QUIET_DPDK_LOG_H_
#define ROCEMU_EMULATOR_PORT_QUIET_DPDK_LOG_H_

#include <rte_log.h>

namespace rocemu::emulator {

class QuietDpdkLog {
 public:
  // `type` is a DPDK log type name ("lib.ethdev", "pmd.net.memif");
  // nothing changes when `quiet` is false.
  explicit QuietDpdkLog(const char* type, bool quiet = true)
      : type_(quiet ? rte_log_register(type) : -1),
        level_(type_ >= 0 ? rte_log_get_level(type_) : -1) {
    if (level_ >= 0) rte_log_set_level(type_, RTE_LOG_CRIT);
  }
  ~QuietDpdkLog() {
    if (level_ >= 0) rte_log_set_level(type_, static_cast<uint32_t>(level_));
  }
  QuietDpdkLog(const QuietDpdkLog&) = delete;
  QuietDpdkLog& operator=(const QuietDpdkLog&) = delete;

 private:
  const int type_;
  const int level_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_QUIET_DPDK_LOG_H_
