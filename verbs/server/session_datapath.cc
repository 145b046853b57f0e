// The session data path: work requests from the rings into the RNIC,
// completions and async events back.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

// --- data path -----------------------------------------------------------

bool SessionServer::OwnsKeys(nic::ClientId client, const nic::SgList& sgl,
                             OwnedKey* last) const {
  for (const nic::Sge& s : sgl) {
    if (s.length == 0) continue;
    if (s.lkey == last->lkey && last->releases == mr_releases_) continue;
    auto it = mrs_.find(s.lkey);
    if (it == mrs_.end() || it->second->owner != client) return false;
    *last = {s.lkey, mr_releases_};
  }
  return true;
}

namespace {
// An L_Key the RNIC never issues (slot index 0 is reserved): a request
// carrying it fails in the engine with IBV_WC_LOC_PROT_ERR, in order with
// the QP's other requests, and the QP goes to ERR.
constexpr uint32_t kRefusedKey = 0;
}  // namespace

bool SessionServer::DrainSq(Qp& qp) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = qp.sq.ConsumerSlot();
    if (s == nullptr) {
      if (qp.sq.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(qp.owner)->dead = true;
      }
      return false;
    }
    CopySqSlot(s, &sq_slot_);
    // The ring index goes with the request and comes back in its
    // completion, which retires every request up to it (Retire).
    const auto index = static_cast<uint32_t>(qp.sq.consumed());
    if (!SqSlotToSendWr(sq_slot_, &send_wr_)) {
      qp.sq.Release();
      ++counters_.bad_wqes;
      FailWqe(qp, true, sq_slot_.wr_id, index, nic::WcStatus::kLocQpOpErr);
      continue;
    }
    send_wr_.wqe_index = index;
    if (send_wr_.local()) {
      RefuseForeignWindowKeys(qp.owner, &send_wr_);
    } else if (!send_wr_.is_inline()) {
      RefuseForeignKeys(qp.owner, &send_wr_.sg_list, &qp.owned_key);
    }
    const absl::Status st = rnic_.PostSend(qp.qpn, send_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted)
      return true;  // retry
    qp.sq.Release();
    ++counters_.sq_wqes;
    if (!st.ok()) {
      ++counters_.bad_wqes;
      FailWqe(qp, true, send_wr_.wr_id, index, nic::WcStatus::kLocQpOpErr);
    }
  }
  return true;  // budget spent: more may wait
}

uint64_t SessionServer::PendingSignaledSends(Qp& qp) {
  const nic::Qp* nq = rnic_.GetQp(qp.qpn);
  if (nq == nullptr) return 0;
  const bool all = nq->init_attr().sq_sig_all;
  uint64_t n = nq->sq_signaled_outstanding();
  for (uint32_t i = 0;; ++i) {
    const void* s = qp.sq.ConsumerSlotAhead(i);
    if (s == nullptr) break;
    uint32_t flags;
    std::memcpy(&flags,
                static_cast<const uint8_t*>(s) + offsetof(SqSlot, send_flags),
                sizeof(flags));
    if (all || (flags & nic::send_flags::kSignaled) != 0) ++n;
  }
  return n;
}

bool SessionServer::DrainRq(Qp& qp, bool on_miss) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = qp.rq.ConsumerSlot();
    if (s == nullptr) {
      if (qp.rq.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(qp.owner)->dead = true;
      }
      return false;
    }
    CopyRqSlot(s, &rq_slot_);
    if (!RqSlotToRecvWr(rq_slot_, &recv_wr_)) {
      if (on_miss) return true;
      qp.rq.Release();
      ++counters_.bad_wqes;
      FailWqe(qp, false, rq_slot_.wr_id, 0, nic::WcStatus::kLocQpOpErr);
      continue;
    }
    RefuseForeignKeys(qp.owner, &recv_wr_.sg_list, &qp.owned_key);
    const absl::Status st = rnic_.PostRecv(qp.qpn, recv_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted) return true;
    // A WQE the RNIC refuses fails the QP: not mid-receive (see on_miss).
    if (!st.ok() && on_miss) return true;
    qp.rq.Release();
    ++counters_.rq_wqes;
    if (!st.ok()) {
      ++counters_.bad_wqes;
      FailWqe(qp, false, recv_wr_.wr_id, 0, nic::WcStatus::kLocQpOpErr);
    }
  }
  return true;  // budget spent: more may wait
}

void SessionServer::FetchRecv(uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end() || it->second->srq != nullptr) return;
  Qp& qp = *it->second;
  auto c = clients_.find(qp.owner);
  if (c == clients_.end() || c->second->dead) return;
  const uint64_t before = counters_.rq_wqes;
  DrainRq(qp, /*on_miss=*/true);
  if (counters_.rq_wqes != before) ++counters_.rq_fetches;
}

void SessionServer::FetchSrqRecv(nic::SrqHandle handle) {
  auto it = srqs_.find(handle);
  if (it == srqs_.end()) return;
  Srq& srq = *it->second;
  auto c = clients_.find(srq.owner);
  if (c == clients_.end() || c->second->dead) return;
  const uint64_t before = counters_.srq_wqes;
  DrainSrq(srq);
  if (counters_.srq_wqes != before) ++counters_.rq_fetches;
}

bool SessionServer::RefuseForeignKeys(nic::ClientId client, nic::SgList* sgl,
                                      OwnedKey* last) {
  if (OwnsKeys(client, *sgl, last)) return false;
  ++counters_.lkey_violations;
  for (uint32_t k = 0; k < sgl->size(); ++k) {
    nic::Sge& g = (*sgl)[k];
    auto it = mrs_.find(g.lkey);
    if (it == mrs_.end() || it->second->owner != client) g.lkey = kRefusedKey;
  }
  return true;
}

void SessionServer::RefuseForeignWindowKeys(nic::ClientId client,
                                            nic::SendWr* wr) {
  auto own_mw = [&](uint32_t key) {
    auto it = mws_.find(key >> 8);
    return it != mws_.end() && it->second.owner == client;
  };
  auto own_mr = [&](uint32_t key) {
    auto it = mrs_.find(key);
    return it != mrs_.end() && it->second->owner == client;
  };
  if (wr->opcode == nic::WrOpcode::kBindMw) {
    if (!own_mw(wr->bind.mw_rkey) ||
        (wr->bind.length != 0 && !own_mr(wr->bind.mr_lkey))) {
      ++counters_.lkey_violations;
      wr->bind.mw_rkey = kRefusedKey;
    }
  } else if (!own_mw(wr->invalidate_rkey) && !own_mr(wr->invalidate_rkey)) {
    ++counters_.lkey_violations;
    wr->invalidate_rkey = kRefusedKey;
  }
}

bool SessionServer::DrainSrq(Srq& srq) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = srq.ring.ConsumerSlot();
    if (s == nullptr) {
      if (srq.ring.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(srq.owner)->dead = true;
      }
      return false;
    }
    CopyRqSlot(s, &rq_slot_);
    if (!RqSlotToRecvWr(rq_slot_, &recv_wr_)) {
      // No QP to fail: an SRQ entry belongs to whichever QP takes it. The
      // entry is dropped and counted (ibv_post_srq_recv checked it first).
      srq.ring.Release();
      ++counters_.bad_wqes;
      continue;
    }
    RefuseForeignKeys(srq.owner, &recv_wr_.sg_list, &srq.owned_key);
    const absl::Status st = rnic_.PostSrqRecv(srq.handle, recv_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted) return true;
    srq.ring.Release();
    ++counters_.srq_wqes;
    if (!st.ok()) ++counters_.bad_wqes;
  }
  return true;  // budget spent: more may wait
}

void SessionServer::DeliverAsyncEvents() {
  nic::AsyncEvent e;
  while (rnic_.async_events().Pop(&e)) {
    nic::ClientId owner = 0;
    switch (nic::ElementOf(e.type)) {
      case nic::AsyncEventElement::kCq: {
        auto it = cqs_.find(e.element);
        if (it != cqs_.end()) owner = it->second->owner;
        break;
      }
      case nic::AsyncEventElement::kSrq: {
        auto it = srqs_.find(e.element);
        if (it != srqs_.end()) owner = it->second->owner;
        break;
      }
      case nic::AsyncEventElement::kPortOrDevice:
        // Unaffiliated: every client hears it.
        for (auto& [id, c] : clients_) PushAsyncEvent(*c, e);
        continue;
      case nic::AsyncEventElement::kQp: {
        auto it = qps_.find(e.element);
        if (it != qps_.end()) owner = it->second->owner;
        break;
      }
    }
    if (owner == 0) continue;  // an object no client holds (any more)
    auto c = clients_.find(owner);
    if (c != clients_.end()) PushAsyncEvent(*c->second, e);
  }
}

void SessionServer::PushAsyncEvent(Client& c, const nic::AsyncEvent& e) {
  if (!c.async_ring.valid()) return;
  async_slot_ = {static_cast<uint32_t>(e.type), e.element};
  if (c.async_ring.Push(async_slot_) != RingResult::kOk) {
    ++counters_.async_events_dropped;
    return;
  }
  ++counters_.async_events;
  c.async_fd.Signal();
}

void SessionServer::DrainCq(Cq& cq) {
  std::span<nic::WorkCompletion> wc(wc_);
  bool pushed = false;
  bool wake_solicited = false;
  // The QP of the last completion: a batch is mostly one QP's.
  Qp* last = nullptr;
  for (;;) {
    const uint32_t free = cq.ring.FreeSlots();
    if (free == 0) break;
    const size_t n =
        rnic_.PollCq(cq.handle, wc.first(std::min<size_t>(free, wc.size())));
    if (n == 0) break;
    // One clock read per batch, and only for CQs that asked: the
    // completions of one pass share their time.
    const uint64_t now = cq.timestamps ? CompletionClockNs() : 0;
    for (size_t i = 0; i < n; ++i) {
      void* slot = cq.ring.ProducerSlot();
      if (slot == nullptr) break;  // cannot happen: FreeSlots said so
      CqeFromCompletion(wc[i], now, static_cast<CqeSlot*>(slot));
      // Retired before the CQE is visible: an application that reposts the
      // receive as soon as it polls it must find the slot free.
      Retire(wc[i], &last);
      cq.ring.Publish();
      // A solicited-only arm fires on a solicited receive or an error
      // completion (IBTA 11.4.2.2).
      wake_solicited |=
          wc[i].status != nic::WcStatus::kSuccess || wc[i].solicited;
    }
    counters_.cqes += n;
    pushed = true;
  }
  if (pushed && cq.channel.valid() && cq.ring.TakeArm(wake_solicited)) {
    cq.channel.Signal();
    ++counters_.cq_events;
  }
}

void SessionServer::TakeDoorbells(Client& c) {
  if (c.doorbells.doorbell_rung()) {
    // The ring overflowed: some doorbells were never written. Every queue
    // of the client gets a look.
    c.doorbells.ClearDoorbell();
    ++counters_.doorbell_overflows;
    for (const auto& [qpn, q] : qps_) {
      if (q->owner != c.id) continue;
      Activate(c.id, {static_cast<uint32_t>(DoorbellKind::kSq), qpn});
      if (q->srq == nullptr) {
        Activate(c.id, {static_cast<uint32_t>(DoorbellKind::kRq), qpn});
      }
    }
    for (const auto& [h, srq] : srqs_) {
      if (srq->owner == c.id) {
        Activate(c.id, {static_cast<uint32_t>(DoorbellKind::kSrq), h});
      }
    }
  }
  DoorbellSlot d;
  for (uint32_t i = 0; i < kDoorbellEntries; ++i) {
    const RingResult r = c.doorbells.Pop(&d);
    if (r == RingResult::kEmpty) return;
    if (r == RingResult::kCorrupt) {
      ++counters_.ring_corruptions;
      c.dead = true;
      return;
    }
    ++counters_.doorbells;
    Activate(c.id, {d.kind, d.handle});
  }
}

void SessionServer::Activate(nic::ClientId owner, QueueRef ref) {
  bool* flag = nullptr;
  switch (static_cast<DoorbellKind>(ref.kind)) {
    case DoorbellKind::kSq:
    case DoorbellKind::kRq: {
      auto it = qps_.find(ref.handle);
      if (it == qps_.end() || it->second->owner != owner) break;
      Qp& q = *it->second;
      if (static_cast<DoorbellKind>(ref.kind) == DoorbellKind::kSq) {
        flag = &q.sq_active;
      } else if (q.srq == nullptr) {
        flag = &q.rq_active;
      }
      break;
    }
    case DoorbellKind::kSrq: {
      auto it = srqs_.find(ref.handle);
      if (it != srqs_.end() && it->second->owner == owner) {
        flag = &it->second->active;
      }
      break;
    }
  }
  if (flag == nullptr) {
    ++counters_.bad_doorbells;  // no such queue of this client: ignored
    return;
  }
  if (*flag) return;  // already queued
  *flag = true;
  active_.push_back(ref);
}

// A queue that had work since the last pass stays active with its
// doorbell left rung, so the client's next posts to it ring nothing (no
// doorbell slot, no spin lock): a busy queue is polled, an idle one waits
// for a doorbell (as NAPI does with interrupts). A queue found
// empty clears its doorbell, then is drained once more: a post racing with
// the clear is either seen by that drain or rings again. True while the
// queue stays active.
template <typename Drain>
bool SessionServer::KeepDraining(ShmRing& ring, Drain drain) {
  if (ring.HasPending()) {
    drain();
    return true;
  }
  ring.ClearDoorbell();
  return drain();
}

void SessionServer::DrainActive() {
  size_t keep = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    const QueueRef ref = active_[i];
    bool more = false;
    switch (static_cast<DoorbellKind>(ref.kind)) {
      case DoorbellKind::kSq:
      case DoorbellKind::kRq: {
        auto it = qps_.find(ref.handle);
        if (it == qps_.end()) break;  // destroyed since it rang
        Qp& q = *it->second;
        if (static_cast<DoorbellKind>(ref.kind) == DoorbellKind::kSq) {
          more = q.sq_active = KeepDraining(q.sq, [&] { return DrainSq(q); });
        } else {
          more = q.rq_active = KeepDraining(q.rq, [&] { return DrainRq(q); });
        }
        break;
      }
      case DoorbellKind::kSrq: {
        auto it = srqs_.find(ref.handle);
        if (it == srqs_.end()) break;
        Srq& srq = *it->second;
        more = srq.active =
            KeepDraining(srq.ring, [&] { return DrainSrq(srq); });
        break;
      }
    }
    if (more) active_[keep++] = ref;
  }
  active_.resize(keep);
}

void SessionServer::DrainUnrung() {
  for (auto& [qpn, qp] : qps_) {
    auto c = clients_.find(qp->owner);
    if (c == clients_.end() || c->second->doorbells.valid()) continue;
    DrainSq(*qp);
    if (qp->srq == nullptr) DrainRq(*qp);
  }
  for (auto& [h, srq] : srqs_) {
    auto c = clients_.find(srq->owner);
    if (c == clients_.end() || c->second->doorbells.valid()) continue;
    DrainSrq(*srq);
  }
}

void SessionServer::Retire(const nic::WorkCompletion& wc, Qp** last) {
  Qp* qp_ptr = *last;
  if (qp_ptr == nullptr || qp_ptr->qpn != wc.qp_num) {
    auto it = qps_.find(wc.qp_num);
    if (it == qps_.end()) return;  // destroyed meanwhile: its ring is gone
    *last = qp_ptr = it->second.get();
  }
  Qp& qp = *qp_ptr;
  uint32_t n = 1;
  if (wc.tagged) {
    // A tagged buffer (posted by ibv_post_srq_ops), not a ring slot.
    if (wc.status == nic::WcStatus::kSuccess) ++counters_.wqes_completed;
    return;
  }
  if (static_cast<uint32_t>(wc.opcode) < kFirstRecvOpcode) {
    // What the library flushes itself if the daemon dies starts after
    // this request (verbs/client/client_flush.cc).
    n = qp.sq.RetireThrough(wc.wqe_index);
  } else if (wc.srq != 0) {  // an XRC TGT QP's: the XRC SRQ's WQE
    if (auto it = srqs_.find(wc.srq); it != srqs_.end()) {
      it->second->ring.Retire(1);
    }
  } else if (qp.srq != nullptr) {
    qp.srq->ring.Retire(1);
  } else {
    qp.rq.Retire(1);
  }
  if (n == 0) return;  // its WQE went with a reset
  // The unsignaled sends before this one completed successfully.
  if (wc.status == nic::WcStatus::kSuccess) {
    counters_.wqes_completed += n;
    return;
  }
  counters_.wqes_completed += n - 1;
  if (wc.status == nic::WcStatus::kWrFlushErr) {
    ++counters_.wqes_flushed;
  } else {
    ++counters_.wqes_completed_error;
  }
}

void SessionServer::FailWqe(Qp& qp, bool send, uint64_t wr_id,
                            uint32_t wqe_index, nic::WcStatus status) {
  nic::QpAttr err;
  err.qp_state = nic::QpState::kErr;
  Cq* cqp = send ? qp.send_cq : qp.recv_cq;
  if (cqp == nullptr) {  // an XRC INI QP's receive queue: nowhere to tell
    (void)rnic_.ModifyQp(qp.qpn, err, nic::qp_attr::kState);
    return;
  }
  Cq& cq = *cqp;
  DrainCq(cq);  // what the RNIC completed before comes first
  nic::WorkCompletion wc;
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = send ? nic::WcOpcode::kSend : nic::WcOpcode::kRecv;
  wc.qp_num = qp.qpn;
  wc.wqe_index = wqe_index;
  void* slot = cq.ring.ProducerSlot();
  if (slot != nullptr) {
    CqeFromCompletion(wc, cq.timestamps ? CompletionClockNs() : 0,
                      static_cast<CqeSlot*>(slot));
    Qp* self = &qp;
    Retire(wc, &self);
    cq.ring.Publish();
    ++counters_.cqes;
    if (cq.channel.valid() && cq.ring.TakeArm(true)) {
      cq.channel.Signal();
      ++counters_.cq_events;
    }
  }
  (void)rnic_.ModifyQp(qp.qpn, err, nic::qp_attr::kState);
}

// --- introspection -------------------------------------------------------

}  // namespace rocemu::verbs
