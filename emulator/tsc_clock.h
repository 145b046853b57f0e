// nic::Clock backed by the TSC: a few cycles per read, no syscall, so the
// poll loop can stamp every burst.
#ifndef ROCEMU_EMULATOR_TSC_CLOCK_H_
#define ROCEMU_EMULATOR_TSC_CLOCK_H_

#include <rte_cycles.h>

#include "nic/clock.h"

namespace rocemu::emulator {

class TscClock final : public nic::Clock {
 public:
  // Call after rte_eal_init (which calibrates the TSC frequency).
  TscClock() : base_(rte_rdtsc()) {
    uint64_t hz = rte_get_tsc_hz();
    // ns = ticks * mult >> 32, exact enough for hours of uptime per rebase.
    mult_ = (static_cast<unsigned __int128>(1'000'000'000) << 32) / hz;
  }
  nic::TimeNs Now() const override {
    unsigned __int128 ticks = rte_rdtsc() - base_;
    return static_cast<nic::TimeNs>((ticks * mult_) >> 32);
  }

 private:
  uint64_t base_;
  unsigned __int128 mult_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_TSC_CLOCK_H_
