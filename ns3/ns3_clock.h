// Time as the core sees it (nic/clock.h), read from ns-3's simulator: the
// RNICs and switches of a fabric run in ns-3's virtual time, in
// nanoseconds (ns-3's default resolution, which the binding requires).
#ifndef ROCEMU_NS3_NS3_CLOCK_H_
#define ROCEMU_NS3_NS3_CLOCK_H_

#include "nic/clock.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"

namespace rocemu::ns3sim {

inline nic::TimeNs NowNs() {
  return static_cast<nic::TimeNs>(ns3::Simulator::Now().GetNanoSeconds());
}

inline ns3::Time NsToTime(nic::TimeNs ns) {
  return ns3::NanoSeconds(static_cast<int64_t>(ns));
}

class Ns3Clock final : public nic::Clock {
 public:
  nic::TimeNs Now() const override { return NowNs(); }
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_NS3_CLOCK_H_
