// The RNIC's queue pair verbs: create, destroy, modify (the IBTA state
// machine and what each transition sets up), query, and posting work
// requests, with every check ibv_post_send/ibv_post_recv make.
#include <algorithm>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/completer.h"
#include "nic/psn.h"
#include "nic/qp_state.h"
#include "nic/rnic.h"
#include "nic/tag_matching.h"

namespace rocemu::nic {
namespace {

bool WrAllowed(QpType t, WrOpcode op) {
  // The TGT QP has no send queue; XRC has no FLUSH or ATOMIC WRITE opcode.
  if (t == QpType::kXrcTgt) return false;
  if (t == QpType::kXrcIni &&
      (op == WrOpcode::kFlush || op == WrOpcode::kAtomicWrite)) {
    return false;
  }
  switch (op) {
    case WrOpcode::kSend:
      return true;
    case WrOpcode::kSendWithImm:
      return t != QpType::kRawPacket;  // a raw frame has no immediate
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return t == QpType::kRc || t == QpType::kUc || t == QpType::kXrcIni;
    case WrOpcode::kRdmaRead:
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
    case WrOpcode::kSendWithInv:
    case WrOpcode::kFlush:
    case WrOpcode::kAtomicWrite:
      return IsReliable(t);
    case WrOpcode::kLocalInv:
    case WrOpcode::kBindMw:
      return t == QpType::kRc || t == QpType::kUc || t == QpType::kXrcIni;
  }
  return false;
}

}  // namespace

// --- queue pairs ------------------------------------------------------------

Qp* Rnic::FindQp(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.get();
}

const Qp* Rnic::GetQp(uint32_t qpn) const { return FindQp(qpn); }

const QpStory* Rnic::FindFailedQp(uint32_t qpn) const {
  const uint64_t n = std::min<uint64_t>(failed_next_, kFailedQps);
  for (uint64_t i = failed_next_; i > failed_next_ - n; --i) {
    const FailedQp& f = failed_[(i - 1) % kFailedQps];
    if (f.story.qpn == qpn) return &f.story;
  }
  return nullptr;
}

uint32_t Rnic::NextQpn(uint32_t qpn) const {
  qpn += config_.shards;
  if (qpn >= protocol::kQpnMask) {  // 0xFFFFFF is the multicast QPN
    qpn = config_.shard;
    while (qpn < 2) qpn += config_.shards;
  }
  return qpn;
}

namespace {

// What a send queue slot holds, granted as rxe grants it: one WQE has room
// for max_send_sge SGEs of 16 bytes (ib_sge) or for max_inline_data bytes,
// whichever is larger, and both limits are raised to fill it. A QP asked
// for no inline data can so still post as many bytes inline as its SGEs
// would take (rdma_xclient posts 16 bytes inline on a QP of max_inline_data
// 0 and one SGE), and the caps returned say so.
QpCap GrantSendSlot(QpCap c, const DeviceAttr& d) {
  constexpr uint32_t kSgeBytes = 16;
  const uint32_t slot = std::max(c.max_send_sge * kSgeBytes, c.max_inline_data);
  c.max_send_sge = std::min(slot / kSgeBytes, d.max_sge);
  c.max_inline_data = std::min(slot, d.max_inline_data);
  return c;
}

}  // namespace

absl::StatusOr<uint32_t> Rnic::CreateXrcTgtQp(const QpInitAttr& asked) {
  if (!xrcds_.Valid(asked.xrcd)) return absl::NotFoundError("no such XRCD");
  if (qps_.size() >= config_.device.max_qp) {
    return absl::ResourceExhaustedError("QP limit reached");
  }
  // Nothing of its own: the PD, CQ and SRQ are the XRC SRQ's of each
  // request (Responder), its receive WQEs as large as any SRQ's.
  QpInitAttr init;
  init.qp_type = QpType::kXrcTgt;
  init.xrcd = asked.xrcd;
  uint32_t qpn;
  do {
    qpn = next_qpn_;
    next_qpn_ = NextQpn(next_qpn_);
  } while (qps_.contains(qpn));
  (void)xrcds_.Retain(init.xrcd);
  qps_.emplace(qpn, std::make_unique<Qp>(qpn, kInvalidHandle, init,
                                         config_.device.max_srq_sge));
  return qpn;
}

absl::StatusOr<uint32_t> Rnic::CreateQp(PdHandle pd, const QpInitAttr& asked) {
  const DeviceAttr& d = config_.device;
  if (asked.qp_type == QpType::kXrcTgt) return CreateXrcTgtQp(asked);
  if (!pds_.Valid(pd)) return absl::NotFoundError("no such PD");
  const bool ini = asked.qp_type == QpType::kXrcIni;
  if (ini && (asked.has_srq || asked.cap.max_recv_wr != 0)) {
    return absl::InvalidArgumentError("an XRC INI QP has no receive queue");
  }
  CompletionQueue* scq = cqs_.Get(asked.send_cq);
  // The INI QP receives nothing: its receive CQ is optional.
  CompletionQueue* rcq = ini && asked.recv_cq == kInvalidHandle
                             ? nullptr
                             : cqs_.Get(asked.recv_cq);
  if (scq == nullptr || (rcq == nullptr && !(ini && asked.recv_cq == 0))) {
    return absl::NotFoundError("no such CQ");
  }
  if (asked.has_srq && srqs_.Get(asked.srq) == nullptr) {
    return absl::NotFoundError("no such SRQ");
  }
  // Tag matching is defined for RC (IBV_TM_CAP_RC).
  const bool tm = asked.has_srq && srqs_.Get(asked.srq)->is_tm();
  if (tm && asked.qp_type != QpType::kRc) {
    return absl::InvalidArgumentError("a tag-matching SRQ takes RC QPs only");
  }
  // A send queue or receive queue of no entries is allowed (as mlx5 and
  // rxe allow it): a receive-only or send-only QP, whose posts to the
  // empty queue fail with ENOMEM.
  const QpCap& c = asked.cap;
  if (c.max_send_wr > d.max_qp_wr || c.max_recv_wr > d.max_qp_wr ||
      c.max_send_sge > d.max_sge || c.max_recv_sge > d.max_sge ||
      c.max_inline_data > d.max_inline_data) {
    return absl::InvalidArgumentError("QP capabilities outside the device's");
  }
  QpInitAttr init = asked;
  init.cap = GrantSendSlot(c, d);
  if (qps_.size() >= d.max_qp) {
    return absl::ResourceExhaustedError("QP limit reached");
  }
  uint32_t qpn;
  do {
    qpn = next_qpn_;
    next_qpn_ = NextQpn(next_qpn_);
  } while (qps_.contains(qpn));
  const uint32_t recv_max_sge =
      init.has_srq ? srqs_.Get(init.srq)->Query().max_sge : c.max_recv_sge;
  auto qp = std::make_unique<Qp>(qpn, pd, init, recv_max_sge,
                                 tm ? kTmInternalSendWr : 0);
  absl::Status s = pds_.Retain(pd);
  if (!s.ok()) return s;
  scq->Retain();
  if (rcq != nullptr) rcq->Retain();
  if (init.has_srq) srqs_.Get(init.srq)->Retain();
  qps_.emplace(qpn, std::move(qp));
  return qpn;
}

absl::Status Rnic::DestroyQp(uint32_t qpn) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  // A flow rule holds its QP, as the kernel's uverbs flow object does.
  if (qp->type() == QpType::kRawPacket && flows_.RulesOf(qpn) > 0) {
    return absl::FailedPreconditionError("QP has flow rules");
  }
  if (InRssTable(qpn)) {
    return absl::FailedPreconditionError("WQ in an indirection table");
  }
  rss_.erase(qpn);
  auto it = std::find(active_.begin(), active_.end(), qp);
  if (it != active_.end()) active_.erase(it);
  if (qp->type() == QpType::kXrcTgt) {
    // Its PD, CQ and SRQ were only borrowed, request by request.
    xrcds_.Release(qp->init_.xrcd);
  } else {
    if (CompletionQueue* q = cqs_.Get(qp->init_.send_cq)) q->Release();
    if (CompletionQueue* q = cqs_.Get(qp->init_.recv_cq)) q->Release();
    if (qp->init_.has_srq) {
      if (SharedReceiveQueue* q = srqs_.Get(qp->init_.srq)) q->Release();
    }
    pds_.Release(qp->pd_);
  }
  qp->counters_.AddTo(retired_);
  // A QP that failed is destroyed by its program soon after (it exits):
  // what explains the failure stays for rocemu-ctl why.
  const DropReason why = qp->error_cause_.reason;
  if (why != DropReason::kNone && why != DropReason::kModifyToErr) {
    FailedQp& f = failed_[failed_next_++ % kFailedQps];
    f.recorder = std::move(qp->recorder_);
    f.story = StoryOf(*qp);
    f.story.recorder = f.recorder.get();
    f.story.destroyed = true;
  }
  cm_->OnQpDestroyed(qpn);
  mcast_.DetachAll(qpn);
  if (QpCacheEntry& e = qp_cache_[qpn % kQpCacheSize]; e.qpn == qpn) e = {};
  qps_.erase(qpn);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Rnic::CreateFlow(const FlowRule& rule) {
  const Qp* qp = FindQp(rule.qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  if (qp->type() != QpType::kRawPacket) {
    return absl::InvalidArgumentError(
        "create_flow: only raw packet QPs take flow rules");
  }
  return flows_.Add(rule);
}

bool Rnic::InRssTable(uint32_t qpn) const {
  for (const auto& [rss_qpn, rss] : rss_) {
    if (std::find(rss.table.begin(), rss.table.end(), qpn) != rss.table.end()) {
      return true;
    }
  }
  return false;
}

absl::Status Rnic::SetRss(uint32_t qpn, RssConfig rss) {
  const Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  if (qp->type() != QpType::kRawPacket) {
    return absl::InvalidArgumentError("RSS: only raw packet QPs");
  }
  const size_t n = rss.table.size();
  if (n == 0 || (n & (n - 1)) != 0 || n > (1u << kRssLogTableMax)) {
    return absl::InvalidArgumentError("RSS: indirection table size");
  }
  if (rss.key.size() < 4 || rss.key.size() > kRssKeyMax) {
    return absl::InvalidArgumentError("RSS: hash key length");
  }
  if ((rss.fields & ~rx_hash::kSupported) != 0) {
    return absl::InvalidArgumentError("RSS: unsupported hash fields");
  }
  for (uint32_t wq : rss.table) {
    const Qp* w = FindQp(wq);
    if (w == nullptr || w->type() != QpType::kRawPacket ||
        w->pd() != qp->pd()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RSS: 0x%06x is not a WQ of the QP's PD", wq));
    }
  }
  rss_[qpn] = std::move(rss);
  return absl::OkStatus();
}

absl::Status Rnic::DestroyFlow(uint32_t handle) {
  return flows_.Remove(handle);
}

absl::Status Rnic::AttachMcast(uint32_t qpn, const Gid& mgid) {
  const Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  if (qp->type() != QpType::kUd) {
    return absl::InvalidArgumentError("attach_mcast: only UD QPs join groups");
  }
  return mcast_.Attach(mgid, qpn);
}

absl::Status Rnic::DetachMcast(uint32_t qpn, const Gid& mgid) {
  if (FindQp(qpn) == nullptr) return absl::NotFoundError("no such QP");
  return mcast_.Detach(mgid, qpn);
}

absl::Status Rnic::ModifyQp(uint32_t qpn, const QpAttr& a, QpAttrMask mask) {
  using namespace qp_attr;  // NOLINT
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  const QpState cur = qp->attr_.qp_state;
  const QpState next = (mask & kState) ? a.qp_state : cur;
  absl::Status s =
      CheckQpTransition(qp->type(), cur, next, mask, a.cur_qp_state);
  if (!s.ok()) return s;
  // Value ranges (ibv_modify_qp returns EINVAL and changes nothing).
  auto bad = [](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("modify QP: invalid %s", what));
  };
  if ((mask & kPkeyIndex) && (a.pkey_index >= pkeys_.capacity() ||
                              !PKeyIsValid(pkeys_.Get(a.pkey_index)))) {
    return bad("pkey_index");
  }
  if ((mask & kPort) && (a.port_num < 1 || a.port_num > 1)) {
    return bad("port_num");
  }
  if ((mask & kPathMtu) && (static_cast<uint8_t>(a.path_mtu) < 1 ||
                            static_cast<uint8_t>(a.path_mtu) >
                                static_cast<uint8_t>(config_.port.max_mtu))) {
    return bad("path_mtu");
  }
  if ((mask & kTimeout) && a.timeout > 31) return bad("timeout");
  if ((mask & kRetryCnt) && a.retry_cnt > 7) return bad("retry_cnt");
  if ((mask & kRnrRetry) && a.rnr_retry > 7) return bad("rnr_retry");
  if ((mask & kMinRnrTimer) && a.min_rnr_timer > 31) {
    return bad("min_rnr_timer");
  }
  if ((mask & kMaxQpRdAtomic) &&
      a.max_rd_atomic > config_.device.max_qp_init_rd_atom) {
    return bad("max_rd_atomic");
  }
  if ((mask & kMaxDestRdAtomic) &&
      a.max_dest_rd_atomic > config_.device.max_qp_rd_atom) {
    return bad("max_dest_rd_atomic");
  }
  if ((mask & kDestQpn) && a.dest_qp_num > protocol::kQpnMask) {
    return bad("dest_qp_num");
  }
  if ((mask & kRqPsn) && a.rq_psn > kPsnMask) return bad("rq_psn");
  if ((mask & kSqPsn) && a.sq_psn > kPsnMask) return bad("sq_psn");
  // ON_DEMAND means nothing for a QP; ConnectX and rxe take it there
  // (pyverbs' ODP tests pass the MR's flags to the QP) and so do we.
  if ((mask & kAccessFlags) &&
      (a.qp_access_flags &
       ~(access::kLocalWrite | access::kRemoteAny | access::kMwBind |
         access::kOnDemand | access::kFlush)) != 0) {
    return bad("qp_access_flags");
  }
  if (mask & kAv) {
    if (!gids_.Get(a.ah_attr.sgid_index).has_value()) return bad("sgid_index");
    if (a.ah_attr.flow_label > 0xFFFFF) return bad("flow_label");
    if (a.ah_attr.port_num != 1) return bad("ah port_num");
  }

  QpAttr& q = qp->attr_;
  if (mask & kPkeyIndex) q.pkey_index = a.pkey_index;
  if (mask & kPort) q.port_num = a.port_num;
  if (mask & kQkey) q.qkey = a.qkey;
  if (mask & kAccessFlags) q.qp_access_flags = a.qp_access_flags;
  if (mask & kAv) {
    q.ah_attr = a.ah_attr;
    if (qp->path_headers_ != nullptr) qp->path_headers_->gid_generation = 0;
  }
  if (mask & kPathMtu) q.path_mtu = a.path_mtu;
  if (mask & kDestQpn) q.dest_qp_num = a.dest_qp_num;
  if (mask & kRqPsn) q.rq_psn = a.rq_psn;
  if (mask & kSqPsn) q.sq_psn = a.sq_psn;
  if (mask & kTimeout) q.timeout = a.timeout;
  if (mask & kRetryCnt) q.retry_cnt = a.retry_cnt;
  if (mask & kRnrRetry) q.rnr_retry = a.rnr_retry;
  if (mask & kMinRnrTimer) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & kMaxQpRdAtomic) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & kMaxDestRdAtomic) q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kEnSqdAsyncNotify) q.en_sqd_async_notify = a.en_sqd_async_notify;

  if (next == cur && !(mask & kState)) return absl::OkStatus();
  switch (next) {
    case QpState::kReset: {
      // Back to RESET drops every WR without a completion (IBTA 10.3.1).
      const uint32_t n = qp->qpn_;
      const PdHandle pd = qp->pd_;
      const QpInitAttr init = qp->init_;
      const QpAttr keep = q;
      const uint32_t recv_max_sge = qp->rwqe_sges_.size();
      const bool tm = qp->tm_;
      auto it = std::find(active_.begin(), active_.end(), qp);
      if (it != active_.end()) active_.erase(it);
      // The recorder keeps its history (and its memory) across the reset.
      std::unique_ptr<FlightRecorder> recorder = std::move(qp->recorder_);
      qp->~Qp();
      // A QP of a TM SRQ keeps its own send slots; its rendezvous in
      // flight are dropped with every WR.
      new (qp) Qp(n, pd, init, recv_max_sge, tm ? kTmInternalSendWr : 0);
      qp->attr_.cap = keep.cap;
      qp->recorder_ = std::move(recorder);
      return absl::OkStatus();
    }
    case QpState::kRtr:
      if (cur == QpState::kInit) {
        qp->resp_ = ResponderState{};
        qp->resp_.epsn = q.rq_psn;
        qp->resources_.assign(q.max_dest_rd_atomic, ResponderResource{});
        qp->resp_queue_.Init(2 * std::max<uint32_t>(1, q.max_dest_rd_atomic) +
                             8);
        const bool connected =
            qp->type() != QpType::kUd && qp->type() != QpType::kRawPacket;
        if (connected) {
          qp->path_headers_ = std::make_unique<ConnectedPathHeaders>();
        }
        // A raw QP's frames are the application's: nothing to record.
        if (qp->recorder_ == nullptr && config_.flight_recorder_events != 0 &&
            qp->type() != QpType::kRawPacket) {
          qp->recorder_ =
              std::make_unique<FlightRecorder>(config_.flight_recorder_events);
        }
        qp->error_cause_ = QpErrorCause{};
        cc_.InitQp(*qp);
      }
      break;
    case QpState::kRts:
      if (cur == QpState::kRtr) {
        qp->req_ = RequesterState{};
        qp->req_.psn = q.sq_psn;
        qp->req_.req_idx = qp->comp_.comp_idx;
        qp->comp_.psn = q.sq_psn;
        qp->comp_.timer_deadline = kNever;
        Completer::ResetRetries(*qp);
      }
      Schedule(*qp);
      break;
    case QpState::kErr:
      q.qp_state = cur;  // MoveToError acts on a change of state
      if (cur != QpState::kErr) reasons_.Add(DropReason::kModifyToErr);
      MoveToError(*qp, DropReason::kModifyToErr);
      return absl::OkStatus();
    default:
      break;
  }
  q.qp_state = next;
  q.sq_draining = next == QpState::kSqd;
  if (next == QpState::kSqd) CheckSqDrained(*qp);
  return absl::OkStatus();
}

absl::StatusOr<QpAttr> Rnic::QueryQp(uint32_t qpn) const {
  const Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  QpAttr a = qp->attr_;
  a.cur_qp_state = a.qp_state;
  a.cap = qp->init_.cap;
  // The send PSN the requester will use next, as hardware reports it.
  if (a.qp_state == QpState::kRts || a.qp_state == QpState::kSqd) {
    a.sq_psn = qp->req_.psn;
  }
  if (a.qp_state >= QpState::kRtr && a.qp_state != QpState::kErr) {
    a.rq_psn = qp->resp_.epsn;
  }
  return a;
}

absl::Status Rnic::PostSend(uint32_t qpn, const SendWr& wr) {
  Qp* qp = LookupQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  const QpState st = qp->attr_.qp_state;
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kRtr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("post_send on a QP in state %s", QpStateName(st)));
  }
  if ((wr.send_flags & send_flags::kTmInternal) != 0) {
    return absl::InvalidArgumentError("send flag 0x80000000 is the RNIC's");
  }
  if (!WrAllowed(qp->type(), wr.opcode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not valid on this QP type", WrOpcodeName(wr.opcode)));
  }
  if (wr.sg_list.size() > qp->init_.cap.max_send_sge) {
    return absl::InvalidArgumentError("more SGEs than max_send_sge");
  }
  if (wr.is_inline() && wr.inline_data.size() > qp->init_.cap.max_inline_data) {
    return absl::InvalidArgumentError("inline data above max_inline_data");
  }
  // A TM SRQ's own requests share the ring (its slots beyond max_send_wr).
  if (qp->sq_outstanding() >= qp->init_.cap.max_send_wr ||
      qp->sq_outstanding() >= qp->sq_.capacity()) {
    return absl::ResourceExhaustedError("send queue full");
  }
  if (st == QpState::kErr || st == QpState::kSqe) {
    EnqueueSend(*qp, wr);
    FlushSendQueue(*qp);
    return absl::OkStatus();
  }
  EnqueueSend(*qp, wr);
  Schedule(*qp);
  return absl::OkStatus();
}

void Rnic::PostInternal(Qp& qp, const SendWr& wr) {
  if (qp.sq_outstanding() >= qp.sq_.capacity()) return;  // reserved: cannot
  EnqueueSend(qp, wr);
  const QpState st = qp.attr_.qp_state;
  if (st == QpState::kErr || st == QpState::kSqe) {
    FlushSendQueue(qp);
    return;
  }
  Schedule(qp);
}

void Rnic::EnqueueSend(Qp& qp, const SendWr& wr) {
  SendWqe& w = qp.PushSendWqe(wr);
  // A FLUSH moves no data; an ATOMIC WRITE carries its 8 bytes in the WQE.
  w.length = (wr.opcode == WrOpcode::kAtomicCmpAndSwp ||
              wr.opcode == WrOpcode::kAtomicFetchAndAdd ||
              wr.opcode == WrOpcode::kAtomicWrite)
                 ? 8
             : wr.local() || wr.opcode == WrOpcode::kFlush ? 0
                                                           : wr.PayloadLength();
  w.status = WcStatus::kSuccess;
  w.read_or_atomic = false;
}

absl::Status Rnic::PostRecv(uint32_t qpn, const RecvWr& wr) {
  Qp* qp = LookupQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  if (IsXrc(qp->type())) {
    // The INI QP receives nothing, the TGT QP receives into XRC SRQs.
    return absl::InvalidArgumentError("an XRC QP has no receive queue");
  }
  if (qp->init_.has_srq) {
    return absl::InvalidArgumentError("QP uses an SRQ");
  }
  if (qp->attr_.qp_state == QpState::kReset) {
    return absl::FailedPreconditionError("post_recv on a QP in RESET");
  }
  switch (qp->rq_.Post(wr)) {
    case PostResult::kOk:
      break;
    case PostResult::kFull:
      return absl::ResourceExhaustedError("receive queue full");
    case PostResult::kTooManySge:
      return absl::InvalidArgumentError("more SGEs than max_recv_sge");
    case PostResult::kInError:
      return absl::FailedPreconditionError("receive queue in error");
  }
  if (qp->attr_.qp_state == QpState::kErr) FlushRecvQueue(*qp);
  return absl::OkStatus();
}

}  // namespace rocemu::nic
