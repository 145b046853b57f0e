// The application side of bench_pktio's ping-pong (--apps): one process
// per end that hands each message to its "daemon" (the ping or pong
// process) through shared memory and waits for the peer's message by
// spinning on memory, as rocemu-perf and its rocemud do. With both daemons
// on one lcore, yielding when idle, and the applications on the other core,
// the ping-pong measures what the deployment's hand-overs alone cost: the
// floor under write_lat through two daemons (scripts/bench_perf.sh).
//
// The processes are forked before the EAL starts, so they share no DPDK
// state; they stop when the daemon says so or dies.
#ifndef ROCEMU_EMULATOR_PORT_BENCH_APP_LINK_H_
#define ROCEMU_EMULATOR_PORT_BENCH_APP_LINK_H_

#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rocemu::emulator {

struct alignas(64) AppLinkWord {
  std::atomic<uint64_t> v{0};
};

// One per end, in a MAP_SHARED mapping. Counters only grow, so a reader
// compares instead of consuming.
struct AppLink {
  AppLinkWord post;  // application -> daemon: messages posted
  AppLinkWord land;  // daemon -> application: messages landed for it
  AppLinkWord stop;  // daemon -> application: exit now
  AppLinkWord done;  // initiator -> daemon: `samples` are written
  uint32_t warmup = 0;
  uint32_t iterations = 0;
  // Initiator: round trips in TSC ticks, in the mapping after the struct.
  uint64_t* samples() { return reinterpret_cast<uint64_t*>(this + 1); }
};

// A zeroed AppLink with room for `iterations` samples, shared with the
// children forked after it; nullptr on failure.
AppLink* MapAppLink(uint32_t warmup, uint32_t iterations);

// Forks the application of one end: the initiator (ping) posts, waits for
// the peer's reply to land and records the round trip, warmup + iterations
// times, then sets `done`; the responder (pong) posts once for each
// message landed. Both spin on `land`, yielding every `spin` empty reads
// (rocemu-perf's and the drop-in's wait). `cpu` < 0 leaves the placement to
// the scheduler. Returns the child's pid or -1.
pid_t ForkApplication(AppLink* link, bool initiator, int cpu, uint32_t spin);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_BENCH_APP_LINK_H_
