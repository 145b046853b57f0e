// The data path shared by the rocemu C API and the drop-in libibverbs:
// work requests go straight from the caller's structs into ring slots (one
// field-by-field translation, no intermediate copy), completions straight
// from ring slots into the caller's structs. No syscall, no allocation;
// one spin lock per queue.
//
// The work-request types differ only in details (ibv_send_wr shares
// imm_data with invalidate_rkey and names an ibv_ah), so the loops are
// templates over a Traits type that reads those details.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_DATAPATH_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_DATAPATH_H_

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "nic/work_request.h"
#include "verbs/client/client_control.h"
#include "verbs/client/client_embedded.h"
#include "verbs/client/client_flush.h"
#include "verbs/client/client_objects.h"
#include "verbs/wire/doorbell.h"
#include "verbs/wire/ring_slots.h"

namespace rocemu::verbs::client {

// IBV_WR_* opcodes a QP type may post (ibv_post_send: EINVAL otherwise).
inline bool SendOpcodeAllowed(int qp_type, int op) {
  switch (op) {
    case ROCEMU_WR_SEND:
      return true;
    case ROCEMU_WR_SEND_WITH_IMM:
      return qp_type != ROCEMU_QPT_RAW_PACKET;
    case ROCEMU_WR_RDMA_WRITE:
    case ROCEMU_WR_RDMA_WRITE_WITH_IMM:
      return qp_type == ROCEMU_QPT_RC || qp_type == ROCEMU_QPT_UC;
    case ROCEMU_WR_RDMA_READ:
    case ROCEMU_WR_ATOMIC_CMP_AND_SWP:
    case ROCEMU_WR_ATOMIC_FETCH_AND_ADD:
    case ROCEMU_WR_SEND_WITH_INV:
      return qp_type == ROCEMU_QPT_RC || qp_type == ROCEMU_QPT_XRC_SEND;
    case ROCEMU_WR_FLUSH:  // XRC has neither
    case ROCEMU_WR_ATOMIC_WRITE:
      return qp_type == ROCEMU_QPT_RC;
    case ROCEMU_WR_LOCAL_INV:
    case ROCEMU_WR_BIND_MW:
      return qp_type == ROCEMU_QPT_RC || qp_type == ROCEMU_QPT_UC;
    default:
      return false;
  }
}

// Tells the daemon that `ring` (a queue of this client) got work: a
// doorbell when the queue had none outstanding, and a wake-up when the
// daemon sleeps (verbs/wire/doorbell.h). No syscall while the daemon is busy.
// A queue the daemon keeps polling (its doorbell still rung) costs one
// fence and two loads.
inline void RingDoorbell(rocemu_context* ctx, ShmRing& ring, DoorbellKind kind,
                         uint32_t handle) {
  if (!ctx->doorbells.valid()) return;  // a daemon that scans every queue
  // The entries are published; the fence orders that before reading the
  // doorbell (and `sleeping`), against the daemon's clear-then-drain: a
  // doorbell seen rung was cleared after the entries were visible.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!ring.doorbell_rung() && ring.RingDoorbell()) {
    std::lock_guard<SpinLock> lock(ctx->doorbell_lock);
    if (ctx->doorbells.Push(DoorbellSlot{static_cast<uint32_t>(kind),
                                         handle}) != RingResult::kOk) {
      // Full: flag the doorbell ring itself (the daemon then looks at
      // every queue of this client).
      ctx->doorbells.RingDoorbell();
    }
    // The doorbell before `sleeping`, against the daemon's PrepareToSleep.
    // Without a new doorbell the queue is still active: no sleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  if (ctx->wake->sleeping.load(std::memory_order_relaxed) != 0) {
    const uint64_t one = 1;
    (void)!write(ctx->wake_fd, &one, sizeof(one));
  }
}

inline bool PostSendStateOk(const rocemu_qp* qp) {
  const int s = qp->state.load(std::memory_order_relaxed);
  return s != ROCEMU_QPS_RESET && s != ROCEMU_QPS_INIT && s != ROCEMU_QPS_RTR;
}

// Gathers an inline payload into the slot (the daemon never sees the
// application's addresses for it). `sges` has addr/length members.
template <typename Sge>
bool GatherInline(const rocemu_qp* qp, const Sge* sges, int num_sge,
                  SqSlot* s) {
  uint64_t total = 0;
  for (int i = 0; i < num_sge; ++i) total += sges[i].length;
  if (total > qp->cap.max_inline_data || total > nic::kMaxInlineData) {
    return false;
  }
  uint32_t off = 0;
  for (int i = 0; i < num_sge; ++i) {
    std::memcpy(s->inline_data + off,
                reinterpret_cast<const void*>(sges[i].addr), sges[i].length);
    off += sges[i].length;
  }
  s->inline_len = off;
  s->num_sge = 0;
  return true;
}

// Posts a chain of send WRs. Traits provides
//   static uint32_t InvalidateRkey(const WR&);
//   static uint32_t AhHandle(const WR&);   // 0: none
//   static uint32_t RemoteSrqn(const WR&); // XRC INI: the remote XRC SRQ
// Returns 0 or EINVAL/ENOMEM with *bad_wr at the first WR not posted; WRs
// before it are posted (visible to the daemon with one release store).
// EIO once the daemon has gone (checked under the lock, which
// client_flush.cc takes before it reads what is outstanding).
template <typename Traits, typename WR>
int PostSendChain(rocemu_qp* qp, WR* wr, WR** bad_wr) {
  // An XRC TGT QP has no send queue (nor a ring).
  if (!PostSendStateOk(qp) || qp->qp_type == ROCEMU_QPT_XRC_RECV) {
    *bad_wr = wr;
    return EINVAL;
  }
  std::lock_guard<SpinLock> lock(qp->sq_lock);
  if (qp->ctx->dead.load(std::memory_order_relaxed)) {
    *bad_wr = wr;
    return EIO;
  }
  uint32_t n = 0;
  int err = 0;
  for (; wr != nullptr; wr = wr->next, ++n) {
    const int op = static_cast<int>(wr->opcode);
    if (!SendOpcodeAllowed(qp->qp_type, op) || wr->num_sge < 0 ||
        static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge) {
      err = EINVAL;
      break;
    }
    // A send queue of no entries (max_send_wr 0) has a ring slot it never
    // fills.
    auto* s = qp->cap.max_send_wr == 0
                  ? nullptr
                  : static_cast<SqSlot*>(qp->sq.ProducerSlotAhead(n));
    if (s == nullptr) {
      err = ENOMEM;
      break;
    }
    s->wr_id = wr->wr_id;
    qp->sq_wr_ids[(qp->sq.produced() + n) & qp->sq_wr_mask] = wr->wr_id;
    s->opcode = static_cast<uint8_t>(op);
    s->send_flags = wr->send_flags;
    s->imm_data = ntohl(wr->imm_data);
    s->invalidate_rkey = Traits::InvalidateRkey(*wr);
    s->remote_srqn = Traits::RemoteSrqn(*wr);
    if (op == ROCEMU_WR_BIND_MW) {
      if (!Traits::FillBind(*wr, s)) {
        err = EINVAL;
        break;
      }
      continue;
    }
    if (op == ROCEMU_WR_ATOMIC_WRITE) {
      // ibv_send_wr has no field for the value: the one 8-byte entry of
      // the gather list holds it, read now (as ibv_wr_atomic_write copies
      // its argument at post time).
      if (wr->num_sge != 1 || wr->sg_list[0].length != 8) {
        err = EINVAL;
        break;
      }
      s->remote_addr = wr->wr.rdma.remote_addr;
      s->rkey = wr->wr.rdma.rkey;
      std::memcpy(&s->swap, reinterpret_cast<const void*>(wr->sg_list[0].addr),
                  8);
      s->num_sge = 0;
      s->inline_len = 0;
      s->send_flags &= ~static_cast<uint32_t>(ROCEMU_SEND_INLINE);
      continue;
    }
    if (op == ROCEMU_WR_FLUSH) {  // ibv_send_wr cannot say what to flush
      err = EINVAL;
      break;
    }
    if (op == ROCEMU_WR_ATOMIC_CMP_AND_SWP ||
        op == ROCEMU_WR_ATOMIC_FETCH_AND_ADD) {
      s->remote_addr = wr->wr.atomic.remote_addr;
      s->rkey = wr->wr.atomic.rkey;
      s->compare_add = wr->wr.atomic.compare_add;
      s->swap = wr->wr.atomic.swap;
    } else if (qp->qp_type == ROCEMU_QPT_UD) {
      s->ah = Traits::AhHandle(*wr);
      s->remote_qpn = wr->wr.ud.remote_qpn;
      s->remote_qkey = wr->wr.ud.remote_qkey;
    } else {
      s->remote_addr = wr->wr.rdma.remote_addr;
      s->rkey = wr->wr.rdma.rkey;
    }
    if ((wr->send_flags & ROCEMU_SEND_INLINE) != 0) {
      if (!GatherInline(qp, wr->sg_list, wr->num_sge, s)) {
        err = EINVAL;
        break;
      }
    } else {
      s->inline_len = 0;
      s->num_sge = static_cast<uint8_t>(wr->num_sge);
      for (int i = 0; i < wr->num_sge; ++i) {
        s->sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length,
                     wr->sg_list[i].lkey};
      }
    }
  }
  qp->sq.PublishN(n);
  if (n > 0) RingDoorbell(qp->ctx, qp->sq, DoorbellKind::kSq, qp->qpn);
  if (err != 0) *bad_wr = wr;
  return err;
}

// A chain of receive WRs into a QP's or an SRQ's receive ring, as
// ibv_post_recv and ibv_post_srq_recv do: EINVAL for too many SGEs, ENOMEM
// for a full ring, *bad_wr naming the first WR not posted.
// At most `depth` WQEs are outstanding (posted and not completed), the
// queue's granted max_recv_wr / SRQ max_wr: one more is ENOMEM, as a
// hardware queue of that depth refuses it. EIO once the daemon has gone.
template <typename WR>
int PostRecvChain(rocemu_context* ctx, DoorbellKind kind, uint32_t handle,
                  ShmRing& ring, SpinLock& lock_, uint32_t max_sge,
                  uint32_t depth, WR* wr, WR** bad_wr) {
  std::lock_guard<SpinLock> lock(lock_);
  if (ctx->dead.load(std::memory_order_relaxed)) {
    *bad_wr = wr;
    return EIO;
  }
  uint32_t n = 0;
  int err = 0;
  const uint64_t outstanding = ring.produced() - ring.retired();
  for (; wr != nullptr; wr = wr->next, ++n) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge) {
      err = EINVAL;
      break;
    }
    if (outstanding + n >= depth) {
      err = ENOMEM;
      break;
    }
    auto* s = static_cast<RqSlot*>(ring.ProducerSlotAhead(n));
    if (s == nullptr) {
      err = ENOMEM;
      break;
    }
    s->wr_id = wr->wr_id;
    s->num_sge = static_cast<uint32_t>(wr->num_sge);
    for (int i = 0; i < wr->num_sge; ++i) {
      s->sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length,
                   wr->sg_list[i].lkey};
    }
  }
  ring.PublishN(n);
  if (n > 0) RingDoorbell(ctx, ring, kind, handle);
  if (err != 0) *bad_wr = wr;
  return err;
}

// After this many consecutive empty polls a CQ asks whether the daemon is
// still there (one poll(2)), so a program spinning on an empty CQ of a
// dead daemon gets an error instead of spinning for ever.
inline constexpr uint32_t kEmptyPollsPerLivenessCheck = 1u << 16;

// One CQE into a work completion of either API: rocemu_wc and ibv_wc have
// the same field names (their enums differ); `with_inv` is the API's
// WITH_INV flag, whose completions carry the invalidated R_Key in imm_data.
template <typename WC>
inline void FillWc(const CqeSlot& e, uint32_t with_inv, WC* w) {
  w->wr_id = e.wr_id;
  w->status = static_cast<decltype(w->status)>(e.status);
  w->opcode = static_cast<decltype(w->opcode)>(e.opcode);
  w->vendor_err = e.vendor_err;
  w->byte_len = e.byte_len;
  w->imm_data =
      (e.wc_flags & with_inv) != 0 ? e.invalidated_rkey : htonl(e.imm_data);
  w->qp_num = e.qp_num;
  w->src_qp = e.src_qp;
  w->wc_flags = e.wc_flags;
  w->pkey_index = e.pkey_index;
  w->slid = e.slid;
  w->sl = e.sl;
  w->dlid_path_bits = e.dlid_path_bits;
}

// What a poll that found the CQ empty does besides (ibv_poll_cq and the
// extended CQs' start_poll alike). With the RNIC in this process, the
// poller runs its loop: the next poll sees what this pass received. Else a
// program spinning on an empty CQ gives its core away now and then: the
// daemon that would produce the completion may need that core (two cores,
// four spinners). One syscall per PollYieldEvery() empty polls;
// ROCEMU_POLL_YIELD=0 turns it off. false (errno EIO) when the ring is
// corrupt or the daemon is gone.
inline bool EmptyPoll(rocemu_cq* cq) {
  if (cq->ring.last_result() == RingResult::kCorrupt ||
      cq->ctx->dead.load(std::memory_order_relaxed)) {
    errno = EIO;
    return false;
  }
  if (!EmbeddedPump()) {
    const uint32_t every = PollYieldEvery();
    if (every != 0 && cq->empty_polls % every == every - 1) sched_yield();
  }
  if (++cq->empty_polls >= kEmptyPollsPerLivenessCheck) {
    cq->empty_polls = 0;
    if (DaemonGone(cq->ctx)) {
      errno = EIO;
      return false;
    }
  }
  return true;
}

// The next completion the library made when the daemon died
// (client_flush.h), or nullptr; cq->lock held.
inline const CqeSlot* NextFlush(rocemu_cq* cq) {
  if (!cq->flush_ready.load(std::memory_order_acquire) ||
      cq->flushes_taken == cq->flushes.size()) {
    return nullptr;
  }
  return &cq->flushes[cq->flushes_taken++];
}

// After EmptyPoll() said no: if that is because the daemon died, its
// outstanding work is flushed (once per context, by whichever thread
// noticed first: this waits for it) and true returned while this CQ has
// flushed completions not taken yet; cq->lock held.
inline bool FlushedOnDeath(rocemu_cq* cq) {
  if (!cq->ctx->dead.load(std::memory_order_relaxed)) return false;
  if (!cq->flush_ready.load(std::memory_order_acquire)) MarkDead(cq->ctx);
  return cq->flushes_taken < cq->flushes.size();
}

// Moves up to `num` completions from the CQ ring into wc[] with
// fill(const CqeSlot&, WC*), then, once the daemon has died, the flushed
// ones. Returns the count, or -1 (errno EIO) when the ring is corrupt or
// the daemon is gone and nothing is left.
template <typename WC, typename Fill>
int PollCqInto(rocemu_cq* cq, int num, WC* wc, Fill&& fill) {
  std::lock_guard<SpinLock> lock(cq->lock);
  for (;;) {
    int n = 0;
    uint32_t taken = 0;
    while (n < num) {
      const void* s = cq->ring.ConsumerSlotAhead(taken);
      if (s == nullptr) break;
      ++taken;
      CqeSlot e;
      std::memcpy(&e, s, sizeof(e));
      if ((e.flags & kCqeSkip) != 0) continue;
      fill(e, &wc[n++]);
    }
    cq->ring.ReleaseN(taken);
    while (n < num) {
      const CqeSlot* f = NextFlush(cq);
      if (f == nullptr) break;
      fill(*f, &wc[n++]);
    }
    if (n > 0) {
      cq->empty_polls = 0;
      return n;
    }
    if (EmptyPoll(cq)) return 0;
    if (!FlushedOnDeath(cq)) {
      errno = EIO;
      return -1;
    }
  }
}

// After a QP's RESET: its completions still in `cq`'s ring are withdrawn
// (marked kCqeSkip), as mlx5 cleans a CQ of a reset QP's entries, so an
// application restarting the QP does not poll the old flushes.
inline void WithdrawCompletions(rocemu_cq* cq, uint32_t qpn) {
  std::lock_guard<SpinLock> lock(cq->lock);
  for (uint32_t k = 0;; ++k) {
    auto* s =
        static_cast<CqeSlot*>(const_cast<void*>(cq->ring.ConsumerSlotAhead(k)));
    if (s == nullptr) break;
    if (s->qp_num == qpn) s->flags |= kCqeSkip;
  }
}

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_DATAPATH_H_
