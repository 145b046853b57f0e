#include "emulator/shard.h"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "emulator/capture/mbuf_tag.h"
#include "emulator/logging.h"

namespace rocemu::emulator {
namespace {

// Shorter waits are not worth two epoll syscalls and the wake-up latency.
constexpr nic::TimeNs kMinSleep = 20'000;
// A sleeping shard looks round this often even if nothing wakes it.
constexpr nic::TimeNs kMaxSleep = 10'000'000;

void Signal(int fd) {
  const uint64_t one = 1;
  (void)!write(fd, &one, sizeof(one));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Shard>> Shard::Create(
    const Options& options, std::unique_ptr<RnicPort> rnic,
    std::unique_ptr<verbs::SessionServer> session) {
  std::unique_ptr<Shard> s(
      new Shard(options, std::move(rnic), std::move(session)));
  if (absl::Status st = s->Init(); !st.ok()) return st;
  return s;
}

absl::Status Shard::Init() {
  const std::string base =
      absl::StrCat("shard", options_.port, "_", options_.index);
  rx_ = rte_ring_create((base + "rx").c_str(), kRingSize, SOCKET_ID_ANY,
                        RING_F_SP_ENQ | RING_F_SC_DEQ);
  tx_ = rte_ring_create((base + "tx").c_str(), kRingSize, SOCKET_ID_ANY,
                        RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (rx_ == nullptr || tx_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "rte_ring_create for ", base, ": ", rte_strerror(rte_errno)));
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return absl::ErrnoToStatus(errno, "eventfd");
  if (options_.idle_sleep_us > 0) {
    absl::Status st = idle_.Init();
    if (st.ok()) st = idle_.Watch(wake_fd_);
    if (st.ok() && session_ != nullptr) st = idle_.Watch(session_->wake_fd());
    if (st.ok() && session_ != nullptr) st = idle_.Watch(session_->wait_fd());
    if (!st.ok()) {
      ROCEMU_LOG_WARNING("shard %u: idle sleeping off: %s", options_.index,
                         st.ToString());
    }
    idle_ready_ = st.ok();
  }
  return absl::OkStatus();
}

Shard::~Shard() {
  session_.reset();  // clients' QPs flushed while the RNIC exists
  tx_stash_.Release();
  for (rte_ring* r : {rx_, tx_}) {
    if (r == nullptr) continue;
    void* m;
    while (rte_ring_dequeue(r, &m) == 0) {
      rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
    }
    rte_ring_free(r);
  }
  for (auto& [fd, peer] : adopt_) close(fd);
  if (wake_fd_ >= 0) close(wake_fd_);
}

// --- the port's lcore
// ---------------------------------------------------------

void Shard::Kick() {
  // Pairs with Sleep(): it raises sleeping_ and then looks at the ring;
  // we filled the ring and then look at sleeping_.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) Signal(wake_fd_);
}

void Shard::Adopt(int fd, const verbs::PeerCredentials& peer) {
  {
    std::lock_guard<std::mutex> lock(adopt_mu_);
    adopt_.emplace_back(fd, peer);
  }
  adopt_pending_.store(true, std::memory_order_release);
  Kick();
}

void Shard::Pause() {
  pause_req_.store(true, std::memory_order_seq_cst);
  Kick();
  while (!paused_.load(std::memory_order_acquire)) sched_yield();
}

void Shard::Resume() {
  pause_req_.store(false, std::memory_order_release);
  // Back to running before the next Pause can be asked for: a stale
  // paused_ must never answer it.
  while (paused_.load(std::memory_order_acquire)) sched_yield();
}

// --- the shard's lcore -----------------------------------------------------

void Shard::Wake() { Signal(wake_fd_); }

void Shard::Run() {
  (void)launched_.load(std::memory_order_acquire);  // BeforeLaunch()
  const std::atomic<bool>& stop = *options_.stop;
  ROCEMU_LOG_INFO("port %u shard %u: running on lcore %u", options_.port,
                  options_.index, rte_lcore_id());
  nic::TimeNs last_busy = options_.clock->Now();
  while (!stop.load(std::memory_order_acquire)) {
    if (pause_req_.load(std::memory_order_acquire)) {
      paused_.store(true, std::memory_order_release);
      while (pause_req_.load(std::memory_order_acquire) &&
             !stop.load(std::memory_order_acquire)) {
        sched_yield();
      }
      paused_.store(false, std::memory_order_release);
      next_event_ = 0;  // the views may have changed state (test hooks)
      continue;
    }
    const nic::TimeNs now = options_.clock->Now();
    if (Pass(now)) {
      last_busy = now;
    } else {
      Idle(now, &last_busy);
    }
  }
  finished_.store(true, std::memory_order_release);  // AfterWait()
}

bool Shard::Pass(nic::TimeNs now) {
  bool busy = false;
  bool due = now >= next_event_;
  rnic_->rnic().SetLinkUp(link_up_.load(std::memory_order_relaxed));
  if (adopt_pending_.exchange(false, std::memory_order_acq_rel)) {
    std::vector<std::pair<int, verbs::PeerCredentials>> adopted;
    {
      std::lock_guard<std::mutex> lock(adopt_mu_);
      adopted.swap(adopt_);
    }
    for (auto& [fd, peer] : adopted) {
      if (session_ != nullptr) {
        session_->AdoptClient(fd, peer);
        ++counters_.clients_adopted;
      } else {
        close(fd);
      }
    }
    busy = due = true;
  }
  if (session_ != nullptr) {
    session_->PollData();
    const uint64_t work = SessionWork(session_->counters());
    if (work != session_work_) {
      session_work_ = work;
      busy = due = true;
    }
  }
  rte_mbuf* rx[kBurst];
  const unsigned n = rte_ring_sc_dequeue_burst(
      rx_, reinterpret_cast<void**>(rx), kBurst, nullptr);
  if (n > 0) {
    nic::RxFrame frames[kBurst];
    for (unsigned i = 0; i < n; ++i) {
      // The port's lcore numbered it if it captures (mbuf_tag.h).
      frames[i] = {rte_pktmbuf_mtod(rx[i], const uint8_t*),
                   rte_pktmbuf_data_len(rx[i]), false, Tag(rx[i]).packet_id};
    }
    rnic_->rnic().Receive(options_.port, {frames, n}, now);
    rte_pktmbuf_free_bulk(rx, n);
    counters_.rx_frames += n;
    busy = due = true;
  }
  if (session_ != nullptr && control_.Due(now)) {
    // A served request counts as work: the loop spins on, awake for the
    // next request of the chain, instead of sleeping right after it.
    const bool served = session_->PollControl() > 0;
    control_.Looked(now, served);
    busy |= served;
    due = true;  // a modify_qp may have made work due
  }
  if (due) {
    if (RingCount(tx_) + kBurst > rte_ring_get_capacity(tx_)) {
      ++counters_.tx_backpressure;
    } else {
      if (!tx_stash_.Fill(options_.pool, options_.max_frame)) {
        ++counters_.tx_nombuf;
      }
      const size_t filled =
          tx_stash_.size() == 0
              ? 0
              : rnic_->rnic().Transmit(options_.port, tx_stash_.room(), now);
      if (filled > 0) {
        rte_mbuf* bufs[kBurst];
        uint8_t priorities[kBurst];
        uint64_t ids[kBurst];
        tx_stash_.Take(filled, bufs, priorities, ids);
        // The priority rides in the user tag, as the daemon's own TX
        // queue carries it (Daemon::QueueTx), the packet id in the mbuf's
        // capture tag.
        for (size_t i = 0; i < filled; ++i) {
          bufs[i]->hash.usr = priorities[i];
          Tag(bufs[i]).packet_id = ids[i];
        }
        // Room was checked above and this lcore is the only producer.
        rte_ring_sp_enqueue_bulk(tx_, reinterpret_cast<void**>(bufs),
                                 static_cast<unsigned>(filled), nullptr);
        counters_.tx_frames += filled;
        busy = true;
        WakeMain();
      }
    }
  }
  next_event_ = rnic_->rnic().NextEventTime();
  groups_generation_.store(rnic_->rnic().multicast_groups().generation(),
                           std::memory_order_release);
  return busy;
}

void Shard::WakeMain() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (options_.main_sleeping != nullptr &&
      options_.main_sleeping->load(std::memory_order_relaxed)) {
    Signal(options_.main_wake_fd);
  }
}

void Shard::Idle(nic::TimeNs now, nic::TimeNs* last_busy) {
  const nic::TimeNs spin =
      static_cast<nic::TimeNs>(options_.idle_spin_us) * 1000;
  if (idle_ready_ && now - *last_busy >= spin && !control_.Hot(now) &&
      Sleep(now)) {
    *last_busy = options_.clock->Now();
    control_.Woken();  // a control socket may be what woke us
  } else if (options_.idle_yield) {
    idle_.Yield();
  }
}

bool Shard::Sleep(nic::TimeNs now) {
  const nic::TimeNs until = std::min(next_event_, now + kMaxSleep);
  if (until <= now + kMinSleep) return false;
  sleeping_.store(true, std::memory_order_seq_cst);
  bool prepared = false;
  bool sleep = true;
  if (session_ != nullptr) {
    prepared = session_->PrepareToSleep();
    sleep = prepared;
  }
  sleep = sleep && RingCount(rx_) == 0 &&
          !adopt_pending_.load(std::memory_order_acquire) &&
          !pause_req_.load(std::memory_order_acquire);
  bool woken = false;
  if (sleep) {
    woken = idle_.Wait(static_cast<int64_t>(until - options_.clock->Now()));
  }
  sleeping_.store(false, std::memory_order_seq_cst);
  uint64_t v;
  (void)!read(wake_fd_, &v, sizeof(v));
  if (prepared) session_->Awake();
  return sleep && woken;
}

}  // namespace rocemu::emulator
