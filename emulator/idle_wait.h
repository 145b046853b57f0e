// How the polling lcore sleeps when there is nothing to do, so that the
// daemon and the applications can share two cores.
//
// The loop polls without pause while work flows. A pass that moved nothing
// yields the core (`idle_yield`): on two shared cores the task that would
// bring the next work (the daemon at the other end of a memif, the
// application that posts) is often waiting behind this one, and without a
// yield it would wait for the end of the scheduler's slice (milliseconds).
// After `idle_spin_us`
// without work it sleeps in one epoll_wait over everything that can bring
// work: the session servers' wake and control fds (an application that
// posts rings a doorbell, see verbs/wire/doorbell.h), and each port's RX
// interrupt fd where the PMD has one (net_tap, virtio_user; memif's own,
// port/memif_rx_interrupt.h). It
// wakes at the next RNIC timer at the latest. A port without RX interrupts
// (af_packet, net_ring) is looked at every `idle_sleep_us` instead.
//
// Nothing here runs per packet: the syscalls happen once per sleep or per
// pass without work.
#ifndef ROCEMU_EMULATOR_IDLE_WAIT_H_
#define ROCEMU_EMULATOR_IDLE_WAIT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "emulator/port/dpdk_port.h"

namespace rocemu::emulator {

struct IdleWaitCounters {
  uint64_t idle_sleeps = 0;      // epoll_wait entered
  uint64_t idle_wakeups_fd = 0;  // ended by an fd (doorbell, frame, socket)
  uint64_t idle_wakeups_timer = 0;
  uint64_t idle_wakeups_rx = 0;  // of the fd wakeups: a port's RX interrupt
  uint64_t idle_sleep_ns = 0;    // total time asleep
  uint64_t idle_yields = 0;      // passes without work that yielded
};

template <typename F>
void ForEachIdleCounter(const IdleWaitCounters& c, F f) {
  f("idle_sleeps", c.idle_sleeps);
  f("idle_wakeups_fd", c.idle_wakeups_fd);
  f("idle_wakeups_timer", c.idle_wakeups_timer);
  f("idle_wakeups_rx", c.idle_wakeups_rx);
  f("idle_sleep_ns", c.idle_sleep_ns);
  f("idle_yields", c.idle_yields);
}

class IdleWait {
 public:
  IdleWait() = default;
  IdleWait(const IdleWait&) = delete;
  IdleWait& operator=(const IdleWait&) = delete;
  ~IdleWait();

  absl::Status Init();
  // An fd whose readiness means "poll again" (level-triggered; the owner
  // consumes it when it polls).
  absl::Status Watch(int fd);
  // Watches RX queue 0 of `port_id` if its PMD has an RX interrupt fd
  // (the port was configured with intr_conf.rxq); returns whether it does.
  bool WatchRxQueue(uint16_t port_id);
  // A memif port, whose interrupt comes and goes with its connection
  // (port/memif_rx_interrupt.h). The port outlives this.
  void WatchMemif(DpdkPort* port) { memif_ports_.push_back({port, 0}); }
  // Whether every watched port wakes the loop by itself now.
  bool ports_interrupt() const {
    if (ports_without_interrupt_ != 0) return false;
    for (const MemifPort& m : memif_ports_) {
      if (!m.port->rx_interrupt_ready()) return false;
    }
    return true;
  }
  void PortWithoutInterrupt() { ++ports_without_interrupt_; }

  // Arm before the last look at the ports: a frame that arrives after
  // the look raises the interrupt.
  void ArmPorts();
  void DisarmPorts();
  // Sleeps until an fd is ready or `timeout_ns` passed; returns whether an
  // fd woke it.
  bool Wait(int64_t timeout_ns);
  // A pass without work: whatever else is runnable on this core runs now.
  void Yield();

  const IdleWaitCounters& counters() const { return counters_; }

 private:
  struct RxQueue {
    uint16_t port_id;
    int fd;
    bool eventfd;  // consumed by a read (memif); a tun fd is not
  };
  struct MemifPort {
    DpdkPort* port;
    uint64_t generation;  // of the eventfd in the epoll set; 0: none
  };
  void RegisterMemif(size_t index);

  int epoll_fd_ = -1;
  std::vector<RxQueue> rx_queues_;
  std::vector<MemifPort> memif_ports_;
  unsigned ports_without_interrupt_ = 0;
  IdleWaitCounters counters_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_IDLE_WAIT_H_
