// Doorbells: how a client tells the daemon which of its queues got work,
// so the daemon's poll loop visits only those (not every queue of every
// client) and may sleep while nothing is posted.
//
// Each send, receive and shared receive ring has a doorbell flag in its
// header. After publishing work requests the library reads the flag (after
// a full fence); if it was clear, it sets it and pushes a DoorbellSlot
// naming the queue into the client's doorbell ring. The daemon pops
// doorbells and makes the queues active. An active queue is drained every
// pass with its flag left set, so further posts ring nothing, for as long
// as each pass finds new work; a pass that finds it empty clears the flag
// and then drains once more (in that order, so a post racing with the
// clear either is seen by that drain or rings again), and the queue
// leaves the active set. A set flag therefore always means the daemon
// will look at the queue. A doorbell ring that was full sets the ring's
// own flag: the daemon then looks at every queue of the client.
//
// Sleeping: the daemon raises WakePage::sleeping before it waits, then
// looks at its active queues and every doorbell ring once more; a client
// that rang a doorbell looks at `sleeping` afterwards (a full fence
// between, on both sides) and writes its own wake eventfd when set. So
// either the daemon sees the doorbell or the client sees the sleeper: no
// wake-up is lost, and a busy daemon costs the client no syscall.
#ifndef ROCEMU_VERBS_WIRE_DOORBELL_H_
#define ROCEMU_VERBS_WIRE_DOORBELL_H_

#include <atomic>
#include <cstdint>

namespace rocemu::verbs {

enum class DoorbellKind : uint32_t { kSq = 1, kRq = 2, kSrq = 3 };

struct DoorbellSlot {
  uint32_t kind;    // DoorbellKind
  uint32_t handle;  // QPN for kSq/kRq, SRQ handle for kSrq
};
static_assert(sizeof(DoorbellSlot) == 8);

// Entries of a client's doorbell ring. A queue has at most one doorbell
// outstanding, so this bounds how many queues can ring between two daemon
// passes before the ring overflows into "look at everything".
inline constexpr uint32_t kDoorbellEntries = 4096;

// The daemon's page every client maps read-only.
struct WakePage {
  alignas(64) std::atomic<uint32_t> sleeping;
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_WIRE_DOORBELL_H_
