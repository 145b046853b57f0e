// One of a port's RNIC shards beyond the first (eal.lcores above 1).
//
// A port's applications are split by process across `lcores` RNICs that
// share the port's MAC and GIDs: shard 0 is the port's own RNIC, run by the
// port's lcore as with one lcore; shard k runs on lcore k, here. Each
// shard has its own nic::Rnic and verbs::SessionServer, so each lcore's
// engines, rings and tables are its own and nothing on the data path is
// shared or locked. A process's objects (PDs, MRs, CQs shared by its QPs,
// SRQs, its rdma_cm ids) all live in one shard, which is why the unit is
// the process and not the QP: a CQ or SRQ of two shards would need locks.
//
// The port's lcore does all port I/O (RX, net stack, capture, faults,
// PFC hold, TX). It hands the frames for this shard (shard_dispatch.h) to
// the RX ring and takes what this shard built from the TX ring; this
// shard asks its RNIC for frames only while the TX ring has room for a
// burst, so nothing built is dropped (back-pressure, as with one lcore).
//
// Sharing two cores: like the daemon's loop, a pass without work yields,
// and after eal.idle_spin_us the lcore sleeps on its clients' doorbells and
// control sockets and on an eventfd the port's lcore writes when it hands
// over frames, a client, or a request to pause.
//
// Pausing (control views, group reports): the port's lcore asks every
// shard to stop at the end of its pass and reads their state while they
// wait; no lock is ever taken on either side's data path.
#ifndef ROCEMU_EMULATOR_SHARD_H_
#define ROCEMU_EMULATOR_SHARD_H_

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/control_cadence.h"
#include "emulator/idle_wait.h"
#include "emulator/port/rnic_port.h"
#include "emulator/port/tx_stash.h"
#include "nic/clock.h"
#include "verbs/server/session_server.h"

namespace rocemu::emulator {

// Everything a session server has moved so far; a change means its rings
// carried work since the last look.
inline uint64_t SessionWork(const verbs::SessionCounters& c) {
  return c.sq_wqes + c.rq_wqes + c.srq_wqes + c.cqes + c.bad_wqes;
}

struct ShardCounters {
  uint64_t rx_frames = 0;        // taken from the RX ring
  uint64_t tx_frames = 0;        // put on the TX ring
  uint64_t tx_backpressure = 0;  // passes the RNIC waited for ring room
  uint64_t tx_nombuf = 0;        // no mbufs for a TX burst
  uint64_t clients_adopted = 0;
};

// Entries in a single-producer single-consumer ring. rte_ring_count()
// reads the indices with plain loads (approximate by design); these loads
// are atomic, so the count is exact for the ring's two ends and the ring's
// producer/consumer ordering stays visible to ThreadSanitizer.
inline unsigned RingCount(const rte_ring* r) {
  const uint32_t prod = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
  const uint32_t cons = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
  const uint32_t count = (prod - cons) & r->mask;
  return count > r->capacity ? r->capacity : count;
}

class Shard {
 public:
  static constexpr unsigned kBurst = 32;
  static constexpr unsigned kRingSize = 1024;

  struct Options {
    uint32_t index = 1;  // 1 .. lcores - 1
    uint16_t port = 0;   // the port's index (the RNIC's port number)
    rte_mempool* pool = nullptr;
    uint32_t max_frame = 0;
    const nic::Clock* clock = nullptr;
    uint32_t idle_sleep_us = 50;  // 0: never sleep
    uint32_t idle_spin_us = 50;
    bool idle_yield = true;
    // The port's lcore sleeps while *main_sleeping; writing main_wake_fd
    // wakes it (frames on the TX ring).
    const std::atomic<bool>* main_sleeping = nullptr;
    int main_wake_fd = -1;
    // Run() returns once it is true (Wake() makes a sleeping shard see it).
    const std::atomic<bool>* stop = nullptr;
  };

  // `session` may be null (verbs disabled). Rings and eventfd are created
  // here.
  static absl::StatusOr<std::unique_ptr<Shard>> Create(
      const Options& options, std::unique_ptr<RnicPort> rnic,
      std::unique_ptr<verbs::SessionServer> session);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // --- called by the port's lcore ---
  // A received frame for this shard, which frees it; false when the RX
  // ring is full (the caller frees and counts it).
  bool Deliver(rte_mbuf* m) { return rte_ring_sp_enqueue(rx_, m) == 0; }
  // After a burst of Deliver: wakes the shard if it sleeps.
  void Kick();
  // Wakes it whether it sleeps or is about to (stopping).
  void Wake();
  // Up to `max` frames this shard built, in order.
  unsigned TakeTx(rte_mbuf** out, unsigned max) {
    return rte_ring_sc_dequeue_burst(tx_, reinterpret_cast<void**>(out), max,
                                     nullptr);
  }
  bool HasTx() const { return RingCount(tx_) > 0; }
  // The port's link went down or came back (Daemon::UpdateLink); the
  // shard's RNIC learns it on its next pass (Rnic::SetLinkUp ignores what
  // it already knows).
  void SetLinkUp(bool up) { link_up_.store(up, std::memory_order_relaxed); }
  // A client the first shard accepted (SessionServer route_client).
  void Adopt(int fd, const verbs::PeerCredentials& peer);
  // The RNIC's multicast table generation as of the shard's last pass: a
  // change means the port's group reports may be due.
  uint64_t groups_generation() const {
    return groups_generation_.load(std::memory_order_acquire);
  }
  // Stops the shard at the end of its pass; returns once it waits. Its
  // RNIC and session may then be read (or changed) until Resume().
  void Pause();
  void Resume();
  // Around the EAL's launch of Run() and its wait for the lcore: what
  // this lcore did before the launch is visible to Run, and what Run did
  // to this lcore after the wait (the EAL's own handshake is one a race
  // detector does not see).
  void BeforeLaunch() { launched_.store(true, std::memory_order_release); }
  void AfterWait() { (void)finished_.load(std::memory_order_acquire); }

  // --- the shard's own lcore ---
  // Passes until *options.stop.
  void Run();
  // One pass: adopted clients, session rings, received frames, control
  // messages, frames out. Returns whether anything moved.
  bool Pass(nic::TimeNs now);

  // While paused, or before Run / after it returned.
  RnicPort& rnic() { return *rnic_; }
  const RnicPort& rnic() const { return *rnic_; }
  verbs::SessionServer* session() { return session_.get(); }
  const verbs::SessionServer* session() const { return session_.get(); }
  const ShardCounters& counters() const { return counters_; }
  const IdleWaitCounters& idle_counters() const { return idle_.counters(); }
  uint32_t index() const { return options_.index; }

 private:
  Shard(const Options& options, std::unique_ptr<RnicPort> rnic,
        std::unique_ptr<verbs::SessionServer> session)
      : options_(options),
        rnic_(std::move(rnic)),
        session_(std::move(session)) {}
  absl::Status Init();
  void Idle(nic::TimeNs now, nic::TimeNs* last_busy);
  bool Sleep(nic::TimeNs now);
  void WakeMain();

  Options options_;
  std::unique_ptr<RnicPort> rnic_;
  // After rnic_: destroyed first (clients' QPs flushed while it exists).
  std::unique_ptr<verbs::SessionServer> session_;
  rte_ring* rx_ = nullptr;
  rte_ring* tx_ = nullptr;
  int wake_fd_ = -1;  // eventfd: Kick
  IdleWait idle_;
  bool idle_ready_ = false;
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> pause_req_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> link_up_{true};  // SetLinkUp
  std::atomic<bool> adopt_pending_{false};
  std::mutex adopt_mu_;
  std::vector<std::pair<int, verbs::PeerCredentials>> adopt_;
  std::atomic<uint64_t> groups_generation_{0};
  std::atomic<bool> launched_{false};
  std::atomic<bool> finished_{false};
  nic::TimeNs next_event_ = 0;
  ControlCadence control_;
  uint64_t session_work_ = 0;
  ShardCounters counters_;
  TxStash<kBurst> tx_stash_;  // the RNIC's room for its next frames
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_SHARD_H_
