// A memif port's receive interrupt, which the memif protocol has and DPDK
// 22.11's net_memif does not offer through ethdev.
//
// Each memif queue has an eventfd, exchanged when the peers connect. After
// a burst, the sender writes it unless the receiver has set
// MEMIF_RING_FLAG_MASK_INT in the ring's flags; the receiver reads it on
// its next burst while the flag is clear. net_memif sets the flag on its
// receive rings when it connects (polling mode) and has no
// rx_queue_intr_enable, so a sleeping daemon could only look at the ring
// on a timer (50 us, backing off to 800 us). Here the daemon clears the
// flag of its own receive ring just before it sleeps and sets it again as
// soon as it wakes: the peer pays one write(2) per burst only while we
// sleep, never on a busy link.
//
// Reaching the ring and the eventfd means reading the PMD's queue, whose
// layout is private to DPDK. It is read as 22.11 lays it out (the version
// this project builds against) and checked against independent facts
// before any use: the queue's port is ours, its fd is an eventfd, and the
// ring it names, in the one mapped memif region 0, carries the memif cookie.
// Anything else leaves the port on the timer, with the reason logged.
#ifndef ROCEMU_EMULATOR_PORT_MEMIF_RX_INTERRUPT_H_
#define ROCEMU_EMULATOR_PORT_MEMIF_RX_INTERRUPT_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace rocemu::emulator {

class MemifRxInterrupt {
 public:
  static constexpr uint32_t kCookie = 0x3E31F20;  // memif protocol
  static constexpr uint16_t kMaskInt = 1;         // MEMIF_RING_FLAG_MASK_INT

  // Finds RX queue 0's ring and eventfd. Each connection maps new rings
  // and makes new eventfds: call once the link is up, and Reset() when it
  // goes down.
  absl::Status Resolve(uint16_t port_id);
  void Reset() {
    ring_ = nullptr;
    fd_ = -1;
  }
  bool ready() const { return ring_ != nullptr; }
  int fd() const { return fd_; }

  // Interrupts on: the peer's next burst writes fd(). The fence orders the
  // store before the caller's last look at the ring, so a frame is either
  // seen by that look or raises the interrupt (save a peer that read the
  // flag before our store became visible: its frame waits for our timer,
  // which the daemon keeps at a millisecond at most). Either touches
  // shared memory the PMD may unmap on a disconnect: the caller runs them
  // under MemifGuard.
  void Arm() {
    if (!CookieOk()) return;
    __atomic_store_n(Flags(), uint16_t{0}, __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void Disarm() {
    if (CookieOk()) __atomic_store_n(Flags(), kMaskInt, __ATOMIC_RELAXED);
  }

 private:
  // The ring starts with the cookie (u32) and the flags (u16).
  bool CookieOk() const {
    return ring_ != nullptr &&
           __atomic_load_n(reinterpret_cast<const uint32_t*>(ring_),
                           __ATOMIC_RELAXED) == kCookie;
  }
  uint16_t* Flags() { return reinterpret_cast<uint16_t*>(ring_ + 4); }

  uint8_t* ring_ = nullptr;
  int fd_ = -1;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_MEMIF_RX_INTERRUPT_H_
