#include "emulator/idle_wait.h"

#include <errno.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "emulator/port/is_eventfd.h"
#include "emulator/port/quiet_dpdk_log.h"

namespace rocemu::emulator {
namespace {

// epoll_event.data: small numbers are RX queue indexes; memif ports and
// plain fds are tagged.
constexpr uint64_t kPlainFd = uint64_t{1} << 32;
constexpr uint64_t kMemif = uint64_t{1} << 33;

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

// The queue's interrupt fd, asked quietly: for a PMD without one (memif,
// af_packet) ethdev logs "Rx Intr handle unset" at error level, which in
// the embedded mode lands in the program's own output. The caller says it
// in its words.
int QuietRxInterruptFd(uint16_t port_id) {
  QuietDpdkLog quiet("lib.ethdev");
  return rte_eth_dev_rx_intr_ctl_q_get_fd(port_id, 0);
}

}  // namespace

IdleWait::~IdleWait() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

absl::Status IdleWait::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("epoll_create1: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status IdleWait::Watch(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kPlainFd | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    return absl::InternalError(
        absl::StrCat("epoll_ctl(", fd, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

bool IdleWait::WatchRxQueue(uint16_t port_id) {
  const int fd = QuietRxInterruptFd(port_id);
  if (fd < 0) {
    ++ports_without_interrupt_;
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = rx_queues_.size();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ++ports_without_interrupt_;
    return false;
  }
  rx_queues_.push_back({port_id, fd, IsEventFd(fd)});
  return true;
}

void IdleWait::RegisterMemif(size_t index) {
  MemifPort& m = memif_ports_[index];
  const uint64_t generation = m.port->rx_interrupt_generation();
  if (m.generation == generation) return;
  // A closed eventfd left the set by itself; one still open (same file,
  // same number) is modified instead.
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kMemif | index;
  const int fd = m.port->rx_interrupt_fd();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0 &&
      (errno != EEXIST || epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0)) {
    return;  // left on the timer, as a port without one
  }
  m.generation = generation;
}

void IdleWait::ArmPorts() {
  for (const RxQueue& q : rx_queues_) rte_eth_dev_rx_intr_enable(q.port_id, 0);
  for (size_t i = 0; i < memif_ports_.size(); ++i) {
    if (!memif_ports_[i].port->rx_interrupt_ready()) continue;
    RegisterMemif(i);
    memif_ports_[i].port->ArmRxInterrupt();
  }
}

void IdleWait::DisarmPorts() {
  for (const RxQueue& q : rx_queues_) {
    rte_eth_dev_rx_intr_disable(q.port_id, 0);
  }
  for (MemifPort& m : memif_ports_) m.port->DisarmRxInterrupt();
}

bool IdleWait::Wait(int64_t timeout_ns) {
  if (timeout_ns <= 0) return false;
  ++counters_.idle_sleeps;
  const uint64_t start = MonotonicNs();
  epoll_event ev[16];
  timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
              static_cast<long>(timeout_ns % 1'000'000'000)};
  int n = epoll_pwait2(epoll_fd_, ev, 16, &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {  // kernels before 5.11: whole ms
    n = epoll_wait(epoll_fd_, ev, 16,
                   static_cast<int>((timeout_ns + 999'999) / 1'000'000));
  }
  counters_.idle_sleep_ns += MonotonicNs() - start;
  if (n <= 0) {
    ++counters_.idle_wakeups_timer;
    return false;
  }
  ++counters_.idle_wakeups_fd;
  bool rx = false;
  for (int i = 0; i < n; ++i) {
    if ((ev[i].data.u64 & kPlainFd) != 0) continue;
    rx = true;
    if ((ev[i].data.u64 & kMemif) != 0) {
      // Disarmed after this returns, the PMD no longer reads it: we do.
      const DpdkPort* port = memif_ports_[ev[i].data.u64 & ~kMemif].port;
      if (port->rx_interrupt_ready()) {
        uint64_t v;
        (void)!read(port->rx_interrupt_fd(), &v, sizeof(v));
      }
      continue;
    }
    const RxQueue& q = rx_queues_[ev[i].data.u64];
    // An eventfd stays readable until read; a tun fd is the queue itself
    // and is drained by rx_burst. Read only what epoll reported ready, so
    // the read never blocks.
    if (q.eventfd) {
      uint64_t v;
      (void)!read(q.fd, &v, sizeof(v));
    }
  }
  counters_.idle_wakeups_rx += rx;
  return true;
}

void IdleWait::Yield() {
  ++counters_.idle_yields;
  sched_yield();
}

}  // namespace rocemu::emulator
