// Runs port operations on DPDK's interrupt thread.
//
// PMDs handle link events there: net_memif (DPDK 22.11) connects and
// disconnects its peer on that thread, and a port stopped, closed or
// started on another thread at the same time frees what the disconnect
// still uses (the interrupt thread was seen dying in rte_intr_fd_get while
// the lcore stopped the port). Alarm callbacks run on the same thread, one
// at a time with its interrupt callbacks, so an operation handed over as
// an alarm cannot interleave with them.
#ifndef ROCEMU_EMULATOR_PORT_INTR_THREAD_H_
#define ROCEMU_EMULATOR_PORT_INTR_THREAD_H_

#include "absl/functional/function_ref.h"

namespace rocemu::emulator {

// Runs f on the EAL interrupt thread and returns once it has run (at once
// when called there, or when EAL has no such thread).
void RunOnInterruptThread(absl::FunctionRef<void()> f);

// Before rte_eal_cleanup: DPDK 22.11 never stops its interrupt thread, and
// cleanup unmaps the memory its interrupt sources live in, so an event
// arriving then (a memif peer's last message) made it die in
// rte_intr_fd_get (seen in one stop of four of a memif server). This
// parks the thread inside an interrupt callback of its own until the
// process exits; no interrupt or alarm is handled after it, and
// RunOnInterruptThread must not be called again.
void ParkInterruptThread();

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_INTR_THREAD_H_
