// Containment of DPDK 22.11's net_memif teardown race.
//
// When a memif peer goes away (it stops, or is killed), the PMD handles the
// disconnect on the EAL interrupt thread: it clears the connected flag,
// unmaps the shared regions and frees the region table, with nothing that
// waits for a queue burst running on the lcore at that moment. A burst
// caught in between reads an unmapped ring or a freed region and takes
// SIGSEGV: the surviving daemon died with its peer (seen about once in 85
// stops under traffic). The PMD cannot be changed here, so the fault is
// contained: each memif burst runs under a per-thread recovery point, a
// SIGSEGV or SIGBUS inside one returns to it, and the burst reports that it
// moved nothing. By then the PMD has marked the link down, so the port is
// handled as after any peer loss (it reconnects when the peer is back).
// A fault anywhere else stays fatal: the handler puts the previous action
// back and lets the instruction fault again, core dump included.
//
// The other half of the race, the port's own stop or start on the lcore
// while the interrupt thread disconnects, is avoided by doing those on the
// interrupt thread (RunOnInterruptThread, intr_thread.h).
#ifndef ROCEMU_EMULATOR_PORT_MEMIF_GUARD_H_
#define ROCEMU_EMULATOR_PORT_MEMIF_GUARD_H_

#include <setjmp.h>
#include <signal.h>

#include <cstdint>

namespace rocemu::emulator {

class MemifGuard {
 public:
  // Installs the SIGSEGV/SIGBUS handler (once per process; later calls do
  // nothing). Called before the first guarded burst.
  static void Install();

  // Runs burst() (a PMD queue burst) under this thread's recovery point:
  // its result, or 0 with *faulted set after a contained fault.
  template <typename Burst>
  static uint16_t Run(Burst&& burst, bool* faulted) {
    sigjmp_buf env;
    Armed() = &env;
    // No signal mask saved (no syscall per burst): the handler is installed
    // with SA_NODEFER, so nothing stays blocked after a jump.
    if (sigsetjmp(env, 0) != 0) {
      Armed() = nullptr;
      *faulted = true;
      return 0;
    }
    if (TakeInjected()) Fault();
    const uint16_t n = burst();
    Armed() = nullptr;
    return n;
  }

  // Test hook: the next guarded burst on any thread faults on purpose
  // (reads an unmapped page), as the race does.
  static void InjectFault();

  // Faults contained since the process started (all threads).
  static uint64_t contained();

 private:
  // The recovery point of a burst running on this thread, else null. Read
  // by the signal handler: a thread_local of this executable (or module)
  // set before any signal can arrive.
  static sigjmp_buf*& Armed();
  static bool TakeInjected();
  [[noreturn]] static void Fault();
  static void OnFault(int sig, siginfo_t* info, void* ucontext);
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_MEMIF_GUARD_H_
