// Per-port, per-direction fault decisions (drop, reorder, duplicate,
// corrupt, delay) from a seeded generator, so that a run with the same seed
// and the same frames makes the same decisions. The carrier applies them to
// its buffers; this class holds no frames and never allocates.
#ifndef ROCEMU_EMULATOR_CAPTURE_FAULT_INJECTOR_H_
#define ROCEMU_EMULATOR_CAPTURE_FAULT_INJECTOR_H_

#include <cstdint>
#include <random>

#include "config/config.h"

namespace rocemu::emulator {

struct FaultCounters {
  uint64_t fault_dropped = 0;
  uint64_t fault_reordered = 0;
  uint64_t fault_duplicated = 0;
  uint64_t fault_corrupted = 0;
  uint64_t fault_delayed = 0;
};

enum class FaultAction : uint8_t {
  kPass,
  kDrop,
  kReorder,    // hold it; release after the next frame
  kDuplicate,  // send it twice
  kCorrupt,    // flip the bit CorruptBit() names, then send
  kDelay,      // hold it for delay_ns()
};

class FaultInjector {
 public:
  FaultInjector(const config::FaultConfig& config, uint64_t stream);

  // One decision per frame; at most one fault per frame, tried in the order
  // drop, corrupt, duplicate, reorder, delay. Counts what it decides.
  FaultAction Decide();
  // A bit index past the Ethernet header (14 bytes) of a frame of `len`
  // bytes, so the frame still reaches the stack and fails its checksum.
  uint32_t CorruptBit(uint32_t len);
  uint64_t delay_ns() const { return delay_ns_; }
  // The configured probability of `a` (a capture names the rule).
  double probability(FaultAction a) const {
    switch (a) {
      case FaultAction::kDrop:
        return drop_;
      case FaultAction::kCorrupt:
        return corrupt_;
      case FaultAction::kDuplicate:
        return duplicate_;
      case FaultAction::kReorder:
        return reorder_;
      case FaultAction::kDelay:
        return delay_;
      default:
        return 0;
    }
  }
  bool enabled() const { return enabled_; }
  const FaultCounters& counters() const { return counters_; }

 private:
  double Uniform() {
    return static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0);
  }

  bool enabled_;
  double drop_, corrupt_, duplicate_, reorder_, delay_;
  uint64_t delay_ns_;
  std::mt19937_64 rng_;
  FaultCounters counters_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CAPTURE_FAULT_INJECTOR_H_
