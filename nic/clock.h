// Time as the core sees it. The engines never read a system clock: the daemon
// passes a TSC-backed clock, tests and the simulator a virtual one, so the
// same code is deterministic under test.
#ifndef ROCEMU_NIC_CLOCK_H_
#define ROCEMU_NIC_CLOCK_H_

#include <cstdint>
#include <limits>

namespace rocemu::nic {

using TimeNs = uint64_t;
inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeNs Now() const = 0;
};

// Virtual time, advanced explicitly (unit tests, the simulated network).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeNs start = 0) : now_(start) {}
  TimeNs Now() const override { return now_; }
  void Set(TimeNs t) { now_ = t; }
  void Advance(TimeNs d) { now_ += d; }

 private:
  TimeNs now_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CLOCK_H_
