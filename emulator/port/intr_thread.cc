#include "emulator/port/intr_thread.h"

#include <rte_alarm.h>
#include <rte_interrupts.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace rocemu::emulator {
namespace {

struct Call {
  absl::FunctionRef<void()> f;
  // Set before the alarm is: the interrupt thread's acquire of it orders
  // everything the caller wrote before (the Call, what `f` captured) before
  // the call. The alarm's own hand-off is in the EAL, which the thread
  // sanitizer does not see into.
  std::atomic<bool> posted{false};
  std::atomic<bool> done{false};
};

void RunCall(void* arg) {
  Call* c = static_cast<Call*>(arg);
  c->posted.load(std::memory_order_acquire);  // true: set before the alarm
  c->f();
  c->done.store(true, std::memory_order_release);
}

void Park(void* arg) {
  static_cast<std::atomic<bool>*>(arg)->store(true, std::memory_order_release);
  for (;;) pause();  // until exit() ends the process
}

}  // namespace

void RunOnInterruptThread(absl::FunctionRef<void()> f) {
  if (rte_thread_is_intr()) {
    f();
    return;
  }
  Call call{f};
  call.posted.store(true, std::memory_order_release);
  // 1 us: the earliest an alarm fires; the interrupt thread takes it after
  // whatever callback it is running.
  if (rte_eal_alarm_set(1, RunCall, &call) != 0) {
    f();
    return;
  }
  // A port's stop or start: rare, off the data path; sleep while waiting.
  while (!call.done.load(std::memory_order_acquire)) {
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
}

void ParkInterruptThread() {
  if (rte_thread_is_intr()) return;
  // Parked in a callback of an interrupt source of its own, not in an
  // alarm: rte_eal_cleanup waits for the alarm callback to be idle.
  static std::atomic<bool> parked{false};
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return;
  rte_intr_handle* h = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
  if (h == nullptr || rte_intr_fd_set(h, fd) != 0 ||
      rte_intr_type_set(h, RTE_INTR_HANDLE_EXT) != 0 ||
      rte_intr_callback_register(h, Park, &parked) != 0) {
    close(fd);
    return;
  }
  // Held for the life of the process: the parked thread never returns
  // from it, and a root keeps leak checkers from reporting it.
  [[maybe_unused]] static rte_intr_handle* held = nullptr;
  held = h;
  const uint64_t one = 1;
  if (write(fd, &one, sizeof(one)) != sizeof(one)) return;
  while (!parked.load(std::memory_order_acquire)) {
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace rocemu::emulator
