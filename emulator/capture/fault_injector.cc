#include "emulator/capture/fault_injector.h"

namespace rocemu::emulator {

FaultInjector::FaultInjector(const config::FaultConfig& config, uint64_t stream)
    : enabled_(config.enabled()),
      drop_(config.drop),
      corrupt_(config.corrupt),
      duplicate_(config.duplicate),
      reorder_(config.reorder),
      delay_(config.delay),
      delay_ns_(static_cast<uint64_t>(config.delay_us) * 1000),
      // Each port and direction gets its own stream of the same seed.
      rng_(config.seed ^ (stream * 0x9E3779B97F4A7C15ull)) {}

FaultAction FaultInjector::Decide() {
  if (!enabled_) return FaultAction::kPass;
  // One draw per frame keeps decisions independent of which faults are on.
  double u = Uniform();
  double edge = drop_;
  if (u < edge) {
    ++counters_.fault_dropped;
    return FaultAction::kDrop;
  }
  if (u < (edge += corrupt_)) {
    ++counters_.fault_corrupted;
    return FaultAction::kCorrupt;
  }
  if (u < (edge += duplicate_)) {
    ++counters_.fault_duplicated;
    return FaultAction::kDuplicate;
  }
  if (u < (edge += reorder_)) {
    ++counters_.fault_reordered;
    return FaultAction::kReorder;
  }
  if (u < (edge += delay_)) {
    ++counters_.fault_delayed;
    return FaultAction::kDelay;
  }
  return FaultAction::kPass;
}

uint32_t FaultInjector::CorruptBit(uint32_t len) {
  if (len <= 14) return 0;
  uint64_t bits = static_cast<uint64_t>(len - 14) * 8;
  return static_cast<uint32_t>(14 * 8 + rng_() % bits);
}

}  // namespace rocemu::emulator
