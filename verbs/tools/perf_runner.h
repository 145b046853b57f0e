// One side of a rocemu-perf run: the verbs objects (PD, one registered
// buffer, send and receive CQs, N RC QPs connected to the peer's), and the
// test loops. Everything a loop touches is allocated before its first post;
// the loops post and poll through the shared-memory rings only.
//
// Buffer layout (the same on both sides):
//   [tx region: L slots][rx region: R slots (atomics: one word per QP)]
// tx slots are the local ends of messages (WRITE/SEND sources, READ and
// atomic destinations); the rx region is what the peer writes into, reads
// from or receives into. Without --verify L and R are one slot per QP and
// reused, as perftest does; with --verify each message in flight has its
// own tx slot and each message of a round its own rx slot, so every byte of
// every message can be checked before its slot is reused.
#ifndef ROCEMU_VERBS_TOOLS_PERF_RUNNER_H_
#define ROCEMU_VERBS_TOOLS_PERF_RUNNER_H_

#include <sched.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "verbs/rocemu_verbs.hpp"
#include "verbs/tools/perf_exchange.h"
#include "verbs/tools/perf_options.h"
#include "verbs/tools/perf_stats.h"

namespace rocemu::verbs::perf {

class PerfRunner {
 public:
  // Server: `options` is what the client sent (see ParamsFromMsg).
  static absl::StatusOr<std::unique_ptr<PerfRunner>> Create(
      const PerfOptions& options, Channel* channel);
  ~PerfRunner();

  // Connects the QPs with the peer's, then runs every size, printing one
  // result per size (client: figures; server: with --json a line of what it
  // counted and checked). Fails on the first error or failed check.
  absl::Status Run();

 private:
  struct Layout {
    uint64_t stride = 0;  // bytes per slot
    uint64_t tx_slots = 0;
    uint64_t rx_slots = 0;
    uint32_t rx_depth = 0;  // receive WRs per QP (send tests)
    uint64_t tx_len() const { return stride * tx_slots; }
    uint64_t rx_len = 0;
    uint64_t total() const { return tx_len() + rx_len; }
  };

  PerfRunner(const PerfOptions& options, Channel* channel);
  absl::Status Setup();
  absl::Status Connect();
  absl::Status ModifyToRts(size_t q, const QpInfoMsg& peer, uint32_t mtu,
                           uint32_t sq_psn);
  absl::Status PostInitialRecvs();

  // One size.
  absl::Status RunSize(uint64_t size);
  absl::Status ClientBw(uint64_t size);
  absl::Status ClientLat(uint64_t size);
  absl::Status ServerSize(uint64_t size);
  absl::Status ServerSendBw(uint64_t size, uint64_t* received);
  absl::Status PingPongLat(uint64_t size, bool client, uint64_t* done);
  // Latency tests: waits (bounded) for the peer's message `i` (the marker
  // of a WRITE, a receive completion of a SEND) and checks it.
  absl::Status WaitArrival(uint64_t i, uint64_t size);
  // Server-side checks of what the client left in the rx region.
  absl::Status CheckRound(uint64_t size, uint64_t first, uint64_t end);
  absl::Status CheckAtomicWords();
  void FillReadSource(uint64_t size);
  void PrepareAtomicWords();

  // Posts message `i` (bandwidth and latency loops).
  int PostMessage(uint64_t i, uint64_t size);
  int PostRecv(uint32_t q, uint64_t slot);
  // Checks what completion of message `i` delivered locally (READ data,
  // atomic results). -1 when good, else the first bad offset.
  int64_t CheckLocal(uint64_t i, uint64_t size);
  // Waits (bounded) until one send completion; checks it.
  absl::Status WaitSendCompletion(uint64_t size);
  absl::Status OnSendWc(const rocemu_wc& wc, uint64_t size);
  absl::Status CompletionError(const rocemu_wc& wc, const char* what);

  uint8_t* tx_slot(uint64_t i) {
    return base_ + (i % layout_.tx_slots) * layout_.stride;
  }
  uint8_t* rx_base() { return base_ + layout_.tx_len(); }
  uint64_t peer_rx_slot_addr(uint32_t q, uint64_t i) const;
  uint64_t messages_on_qp(uint32_t q) const;
  uint64_t ops_seed() const;

  absl::Status SyncSend(SyncKind kind, uint64_t value, const absl::Status& s,
                        int64_t bad_offset = -1);
  // An empty poll: with --yield, give the core to the daemon (hosts with
  // fewer cores than polling threads); else keep spinning as perftest.
  void Idle() {
    if (options_.yield) sched_yield();
  }
  // A poll of memory (a WRITE's arrival) makes no library call, so nothing
  // runs an embedded RNIC's loop or gives the core away as rocemu_poll_cq
  // does on an empty CQ; on two shared cores the daemon that writes that
  // memory may be waiting for this one (write_lat took ~2 ms per message
  // without it).
  void IdleMemoryPoll(uint32_t spin) {
    if (rocemu_progress() != 0) return;
    if (options_.yield || spin % 64 == 63) sched_yield();
  }
  int timeout_ms() const { return static_cast<int>(options_.timeout_s) * 1000; }

  PerfOptions options_;
  Channel* channel_;
  Layout layout_;
  // Declared in the order they must be created; destroyed in reverse.
  Context ctx_;
  Pd pd_;
  Buf buf_;
  void* malloc_mem_ = nullptr;
  Mr mr_;
  Cq send_cq_;
  Cq recv_cq_;
  std::vector<Qp> qps_;
  std::vector<QpInfoMsg> peer_;
  uint8_t* base_ = nullptr;
  uint32_t port_mtu_ = 0;
  uint8_t gid_[16] = {};

  // Per-run state, sized once in Setup().
  std::vector<uint32_t> inflight_;    // per QP
  std::vector<uint8_t> busy_;         // per tx slot (verify)
  std::vector<uint64_t> recv_count_;  // per QP
  std::vector<int64_t> times_;        // completion times or latency samples
  uint64_t completed_ = 0;
  int64_t paused_ns_ = 0;
  uint64_t verified_ = 0;  // server: messages or atomics checked
  // Server: the client's end message, when it came during ServerSendBw.
  bool have_end_ = false;
  SyncMsg end_msg_;
  BwResult last_bw_;
  LatResult last_lat_;
  rocemu_wc wcs_[32];
};

// The options a server adopts from the client's parameters (its own
// connection settings -d, -p and --json stay).
absl::StatusOr<PerfOptions> ParamsFromMsg(const ParamsMsg& m,
                                          const PerfOptions& local);
ParamsMsg ParamsToMsg(const PerfOptions& o);

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_RUNNER_H_
