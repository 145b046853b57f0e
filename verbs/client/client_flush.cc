#include "verbs/client/client_flush.h"

#include <unistd.h>

#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "verbs/wire/ring_slots.h"

namespace rocemu::verbs::client {
namespace {

// [first, produced) of a queue, `first` being what the daemon retired,
// bounded to the `window` entries the library can still name (a corrupt
// or stale index names none beyond it).
uint64_t FirstOutstanding(uint64_t retired, uint64_t produced,
                          uint64_t window) {
  if (retired > produced) return produced;
  return produced - retired > window ? produced - window : retired;
}

CqeSlot Flushed(uint64_t wr_id, uint8_t opcode, uint32_t qpn) {
  CqeSlot e{};
  e.wr_id = wr_id;
  e.status = ROCEMU_WC_WR_FLUSH_ERR;
  e.opcode = opcode;
  e.qp_num = qpn;
  return e;
}

}  // namespace

void MarkDead(rocemu_context* ctx) {
  std::lock_guard<std::mutex> lock(ctx->mu);
  MarkDeadLocked(ctx);
}

void MarkDeadLocked(rocemu_context* ctx) {
  ctx->dead.store(true, std::memory_order_relaxed);
  if (ctx->flushed) return;
  ctx->flushed = true;
  // A CQ the program destroyed already (release calls succeed once the
  // daemon is gone) may still be named by a QP: only live ones get
  // completions.
  absl::flat_hash_set<rocemu_cq*> live;
  for (const auto& [handle, cq] : ctx->cqs) live.insert(cq);
  for (const auto& [qpn, qp] : ctx->qps) {
    // Posts check `dead` under these locks: nothing is posted after the
    // indices below are read.
    if (live.contains(qp->send_cq) && qp->sq_wr_ids != nullptr) {
      std::lock_guard<SpinLock> sq(qp->sq_lock);
      const uint64_t produced = qp->sq.produced();
      for (uint64_t i =
               FirstOutstanding(qp->sq.retired(), produced, qp->sq_wr_mask + 1);
           i != produced; ++i) {
        qp->send_cq->flushes.push_back(
            Flushed(qp->sq_wr_ids[i & qp->sq_wr_mask], ROCEMU_WC_SEND, qpn));
      }
    }
    if (qp->srq == nullptr && live.contains(qp->recv_cq)) {
      std::lock_guard<SpinLock> rq(qp->rq_lock);
      const uint64_t produced = qp->rq.produced();
      // At most the queue's depth is outstanding, so these slots still
      // hold the requests (PostRecvChain).
      for (uint64_t i =
               FirstOutstanding(qp->rq.retired(), produced, qp->rq.capacity());
           i != produced; ++i) {
        RqSlot s;
        std::memcpy(&s.wr_id, qp->rq.SlotAt(i), sizeof(s.wr_id));
        qp->recv_cq->flushes.push_back(Flushed(s.wr_id, ROCEMU_WC_RECV, qpn));
      }
    }
  }
  for (rocemu_cq* cq : live) {
    // Like any error completion, a flush fires an armed CQ (solicited
    // arms too). The daemon that signalled is gone; the library signals
    // its own eventfd.
    if (!cq->flushes.empty() && cq->channel != nullptr &&
        cq->ring.TakeArm(/*solicited_or_error=*/true)) {
      const uint64_t one = 1;
      (void)!write(cq->channel->fd, &one, sizeof(one));
    }
    cq->flush_ready.store(true, std::memory_order_release);
  }
}

}  // namespace rocemu::verbs::client
