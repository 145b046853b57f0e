// When a poll loop looks at the verbs control sockets (one epoll_wait).
//
// A client that is idle on the control plane costs the loop one syscall
// per kSessionControlPeriod. But control requests come in chains: rdma_cm
// creates a QP, moves it through INIT, RTR and RTS and connects, each
// request waiting for the previous reply, so the next one arrives a few
// microseconds after a reply. Looked at once per period, each link of the
// chain waited half a period on average (cmtime: ~100 us per round trip,
// ~400 us per connection). So for kSessionControlHotWindow after a look
// that served a request, the sockets are looked at every pass; the
// syscall per pass is paid only while a client is mid-chain.
#ifndef ROCEMU_EMULATOR_CONTROL_CADENCE_H_
#define ROCEMU_EMULATOR_CONTROL_CADENCE_H_

#include "nic/clock.h"

namespace rocemu::emulator {

// Control messages (create_qp, modify_qp, ...) are answered within this
// much loop time when none came lately.
inline constexpr nic::TimeNs kSessionControlPeriod = 150'000;
// How long after a served request the loop keeps looking every pass.
inline constexpr nic::TimeNs kSessionControlHotWindow = 1'000'000;

class ControlCadence {
 public:
  bool Due(nic::TimeNs now) const { return now >= next_; }
  // Within the window after a served request.
  bool Hot(nic::TimeNs now) const { return now < hot_until_; }
  // After a look at `now` that served `served` requests.
  void Looked(nic::TimeNs now, bool served) {
    if (served) hot_until_ = now + kSessionControlHotWindow;
    next_ = now < hot_until_ ? now : now + kSessionControlPeriod;
  }
  // A sleeping loop was woken, perhaps by a control socket: look at once.
  void Woken() { next_ = 0; }

 private:
  nic::TimeNs next_ = 0;
  nic::TimeNs hot_until_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CONTROL_CADENCE_H_
