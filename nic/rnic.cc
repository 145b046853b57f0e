#include "nic/rnic.h"

#include <algorithm>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/completer.h"
#include "nic/psn.h"
#include "nic/qp_state.h"
#include "nic/requester.h"
#include "nic/responder.h"

namespace rocemu::nic {

namespace {

void AddQpCounters(const QpCounters& q, DeviceCounters& c) {
  c.sent_bytes += q.sent_bytes;
  c.rcvd_bytes += q.rcvd_bytes;
  c.duplicate_request += q.duplicate_request;
  c.out_of_sequence += q.out_of_sequence;
  c.rcvd_rnr_err += q.rcvd_rnr_err;
  c.send_rnr_err += q.send_rnr_err;
  c.rcvd_seq_err += q.rcvd_seq_err;
  c.retry_exceeded_err += q.retry_exceeded_err;
  c.retry_rnr_exceeded_err += q.retry_rnr_exceeded_err;
  c.rnr_nak_retry_err += q.retry_rnr_exceeded_err;
  c.completer_retry_err += q.completer_retry_err;
  c.local_ack_timeout_err += q.local_ack_timeout_err;
  c.implied_nak_seq_err += q.implied_nak_seq_err;
  c.packet_seq_err += q.rcvd_seq_err;
  c.out_of_buffer += q.out_of_buffer + q.send_rnr_err;
}

using protocol::Engine;
using protocol::ServiceType;

bool ServiceMatches(ServiceType s, QpType t) {
  return (s == ServiceType::kRc && t == QpType::kRc) ||
         (s == ServiceType::kUc && t == QpType::kUc) ||
         (s == ServiceType::kUd && t == QpType::kUd);
}

bool WrAllowed(QpType t, WrOpcode op) {
  switch (op) {
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
      return true;
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return t != QpType::kUd;
    case WrOpcode::kRdmaRead:
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
    case WrOpcode::kSendWithInv:
      return t == QpType::kRc;
    case WrOpcode::kLocalInv:
    case WrOpcode::kBindMw:
      return t != QpType::kUd;
  }
  return false;
}

}  // namespace

Rnic::Rnic(const RnicConfig& config)
    : config_(config),
      events_(1024),
      pds_(config.device.max_pd),
      mrs_(pds_, config.device.max_mr, config.device.max_mr_size),
      cqs_(config.device.max_cq, config.device.max_cqe, &events_),
      srqs_(pds_, config.device.max_srq, config.device.max_srq_wr,
            config.device.max_srq_sge, &events_),
      gids_(static_cast<uint32_t>(config.port.gid_tbl_len)),
      pkeys_(config.port.pkey_tbl_len),
      ahs_(pds_, gids_, config.device.max_ah),
      cc_(config.congestion),
      gsi_(std::make_unique<Gsi>(config_.mac, pkeys_, gids_, counters_)),
      cm_(std::make_unique<CmAgent>(*this, *gsi_, counters_, 0)) {
  (void)gids_.Set(0, config.gid);
  gsi_->set_cm(cm_.get());
  gsi_->set_vlan(config_.vlan_id);
}

Rnic::~Rnic() = default;

// --- resources --------------------------------------------------------------

absl::StatusOr<PdHandle> Rnic::AllocPd() { return pds_.Alloc(kKernelClient); }

absl::StatusOr<uint32_t> Rnic::RegMr(PdHandle pd, void* addr, uint64_t length,
                                     AccessFlags access) {
  const HostChunk chunk{static_cast<uint8_t*>(addr), length};
  return mrs_.Register(kKernelClient, pd, reinterpret_cast<uint64_t>(addr),
                       length, access, {&chunk, 1});
}

absl::StatusOr<uint32_t> Rnic::RegMrProcess(PdHandle pd, pid_t pid,
                                            uint64_t iova, uint64_t length,
                                            AccessFlags access) {
  return mrs_.RegisterProcess(kKernelClient, pd, pid, iova, length, access);
}

absl::Status Rnic::DeregMr(uint32_t key) {
  return mrs_.Deregister(kKernelClient, key);
}

absl::StatusOr<CqHandle> Rnic::CreateCq(uint32_t cqe) {
  return cqs_.Create(kKernelClient, cqe);
}

size_t Rnic::PollCq(CqHandle cq, std::span<WorkCompletion> out) {
  CompletionQueue* q = cqs_.Get(cq);
  return q == nullptr ? 0 : q->Poll(out);
}

absl::StatusOr<AhHandle> Rnic::CreateAh(PdHandle pd, const AhAttr& attr,
                                        const protocol::MacAddr& dmac) {
  absl::StatusOr<AhHandle> ah = ahs_.Create(kKernelClient, pd, attr);
  if (!ah.ok()) return ah;
  absl::Status s = ahs_.SetDmac(*ah, dmac);
  if (!s.ok()) return s;
  return ah;
}

absl::StatusOr<SrqHandle> Rnic::CreateSrq(PdHandle pd, const SrqAttr& attr) {
  return srqs_.Create(kKernelClient, pd, attr);
}

absl::Status Rnic::PostSrqRecv(SrqHandle srq, const RecvWr& wr) {
  SharedReceiveQueue* q = srqs_.Get(srq);
  if (q == nullptr) return absl::NotFoundError("no such SRQ");
  switch (q->Post(wr)) {
    case PostResult::kOk:
      return absl::OkStatus();
    case PostResult::kFull:
      return absl::ResourceExhaustedError("SRQ full");
    case PostResult::kTooManySge:
      return absl::InvalidArgumentError("too many SGEs for the SRQ");
    case PostResult::kInError:
      return absl::FailedPreconditionError("SRQ in error");
  }
  return absl::InternalError("unreachable");
}

absl::Status Rnic::DestroyCq(CqHandle cq) {
  return cqs_.Destroy(kKernelClient, cq);
}

absl::Status Rnic::ResizeCq(CqHandle cq, uint32_t cqe) {
  CompletionQueue* q = cqs_.Get(cq);
  if (q == nullptr) return absl::NotFoundError("no such CQ");
  if (cqe > config_.device.max_cqe) {
    return absl::InvalidArgumentError("cqe above max_cqe");
  }
  return q->Resize(cqe);
}

absl::Status Rnic::DeallocPd(PdHandle pd) {
  return pds_.Dealloc(kKernelClient, pd);
}

absl::Status Rnic::DestroyAh(AhHandle ah) {
  return ahs_.Destroy(kKernelClient, ah);
}

absl::Status Rnic::ModifySrq(SrqHandle srq, const SrqAttr& attr,
                             uint32_t mask) {
  SharedReceiveQueue* q = srqs_.Get(srq, kKernelClient);
  if (q == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  if ((mask & srq_attr_mask::kMaxWr) &&
      (attr.max_wr == 0 || attr.max_wr > config_.device.max_srq_wr)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SRQ max_wr %u outside [1, %u]", attr.max_wr,
                        config_.device.max_srq_wr));
  }
  return q->Modify(attr, mask);
}

absl::StatusOr<SrqAttr> Rnic::QuerySrq(SrqHandle srq) const {
  const SharedReceiveQueue* q = srqs_.Get(srq, kKernelClient);
  if (q == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  return q->Query();
}

absl::Status Rnic::DestroySrq(SrqHandle srq) {
  return srqs_.Destroy(kKernelClient, srq);
}

// --- queue pairs ------------------------------------------------------------

Qp* Rnic::FindQp(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.get();
}

const Qp* Rnic::GetQp(uint32_t qpn) const { return FindQp(qpn); }

absl::StatusOr<uint32_t> Rnic::CreateQp(PdHandle pd, const QpInitAttr& init) {
  const DeviceAttr& d = config_.device;
  if (!pds_.Valid(pd)) return absl::NotFoundError("no such PD");
  CompletionQueue* scq = cqs_.Get(init.send_cq);
  CompletionQueue* rcq = cqs_.Get(init.recv_cq);
  if (scq == nullptr || rcq == nullptr) {
    return absl::NotFoundError("no such CQ");
  }
  if (init.has_srq && srqs_.Get(init.srq) == nullptr) {
    return absl::NotFoundError("no such SRQ");
  }
  const QpCap& c = init.cap;
  if (c.max_send_wr == 0 || c.max_send_wr > d.max_qp_wr ||
      c.max_recv_wr > d.max_qp_wr || c.max_send_sge > d.max_sge ||
      c.max_recv_sge > d.max_sge || c.max_inline_data > d.max_inline_data ||
      (!init.has_srq && c.max_recv_wr == 0)) {
    return absl::InvalidArgumentError("QP capabilities outside the device's");
  }
  if (qps_.size() >= d.max_qp) {
    return absl::ResourceExhaustedError("QP limit reached");
  }
  uint32_t qpn;
  do {
    qpn = next_qpn_;
    next_qpn_ = (next_qpn_ + 1) & protocol::kQpnMask;
    if (next_qpn_ < 2) next_qpn_ = 2;
  } while (qps_.contains(qpn));
  const uint32_t recv_max_sge = init.has_srq
                                    ? srqs_.Get(init.srq)->Query().max_sge
                                    : c.max_recv_sge;
  auto qp = std::make_unique<Qp>(qpn, pd, init, recv_max_sge);
  absl::Status s = pds_.Retain(pd);
  if (!s.ok()) return s;
  scq->Retain();
  rcq->Retain();
  if (init.has_srq) srqs_.Get(init.srq)->Retain();
  qps_.emplace(qpn, std::move(qp));
  return qpn;
}

absl::Status Rnic::DestroyQp(uint32_t qpn) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  auto it = std::find(active_.begin(), active_.end(), qp);
  if (it != active_.end()) active_.erase(it);
  if (CompletionQueue* q = cqs_.Get(qp->init_.send_cq)) q->Release();
  if (CompletionQueue* q = cqs_.Get(qp->init_.recv_cq)) q->Release();
  if (qp->init_.has_srq) {
    if (SharedReceiveQueue* q = srqs_.Get(qp->init_.srq)) q->Release();
  }
  pds_.Release(qp->pd_);
  AddQpCounters(qp->counters_, retired_);
  cm_->OnQpDestroyed(qpn);
  qps_.erase(qpn);
  return absl::OkStatus();
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
  if ((mask & kAccessFlags) &&
      (a.qp_access_flags &
       ~(access::kLocalWrite | access::kRemoteAny | access::kMwBind)) != 0) {
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
  if (mask & kAv) q.ah_attr = a.ah_attr;
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
      auto it = std::find(active_.begin(), active_.end(), qp);
      if (it != active_.end()) active_.erase(it);
      qp->~Qp();
      new (qp) Qp(n, pd, init, recv_max_sge);
      qp->attr_.cap = keep.cap;
      return absl::OkStatus();
    }
    case QpState::kRtr:
      if (cur == QpState::kInit) {
        qp->resp_ = ResponderState{};
        qp->resp_.epsn = q.rq_psn;
        qp->resources_.assign(q.max_dest_rd_atomic, ResponderResource{});
        qp->resp_queue_.Init(2 * std::max<uint32_t>(1, q.max_dest_rd_atomic) +
                             8);
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
      MoveToError(*qp);
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
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  const QpState st = qp->attr_.qp_state;
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kRtr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("post_send on a QP in state %s", QpStateName(st)));
  }
  if (!WrAllowed(qp->type(), wr.opcode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not valid on this QP type", WrOpcodeName(wr.opcode)));
  }
  if (wr.sg_list.size() > qp->init_.cap.max_send_sge) {
    return absl::InvalidArgumentError("more SGEs than max_send_sge");
  }
  if (wr.is_inline() &&
      wr.inline_data.size() > qp->init_.cap.max_inline_data) {
    return absl::InvalidArgumentError("inline data above max_inline_data");
  }
  if (qp->sq_tail_ - qp->comp_.comp_idx >= qp->init_.cap.max_send_wr) {
    return absl::ResourceExhaustedError("send queue full");
  }
  SendWqe& w = qp->PushSendWqe(wr);
  w.length = (wr.opcode == WrOpcode::kAtomicCmpAndSwp ||
              wr.opcode == WrOpcode::kAtomicFetchAndAdd)
                 ? 8
             : wr.local() ? 0
                          : wr.PayloadLength();
  w.status = WcStatus::kSuccess;
  w.read_or_atomic = false;
  if (st == QpState::kErr || st == QpState::kSqe) {
    FlushSendQueue(*qp);
    return absl::OkStatus();
  }
  Schedule(*qp);
  return absl::OkStatus();
}

absl::Status Rnic::PostRecv(uint32_t qpn, const RecvWr& wr) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
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

// --- engine services --------------------------------------------------------

void Rnic::Schedule(Qp& qp) {
  if (qp.scheduled_) return;
  qp.scheduled_ = true;
  active_.push_back(&qp);
}

void Rnic::CompleteSend(Qp& qp, const WorkCompletion& wc) {
  if (wc.status == WcStatus::kWrFlushErr) {
    ++counters_.req_cqe_flush_error;
  } else if (wc.status != WcStatus::kSuccess) {
    ++counters_.req_cqe_error;
    if (wc.status == WcStatus::kRemAccessErr) {
      ++counters_.req_remote_access_errors;
    } else if (wc.status == WcStatus::kRemInvReqErr) {
      ++counters_.req_remote_invalid_request;
    }
  }
  CompletionQueue* cq = cqs_.Get(qp.init_.send_cq);
  if (cq == nullptr) return;
  // A completion the CQ cannot take (it overflowed now or before) is a
  // catastrophic error of the QP (IBTA 11.6.2): CQ_ERR came from the CQ,
  // the QP goes to ERR with QP_FATAL. QPs on other CQs are not affected.
  if (cq->Push(wc) != CqPushResult::kOk) {
    MoveToError(qp, AsyncEventType::kQpFatal);
  }
}

void Rnic::CompleteRecv(Qp& qp, const WorkCompletion& wc, bool solicited) {
  if (wc.status == WcStatus::kWrFlushErr) {
    ++counters_.resp_cqe_flush_error;
  } else if (wc.status != WcStatus::kSuccess) {
    ++counters_.resp_cqe_error;
    if (wc.status == WcStatus::kLocLenErr) ++counters_.resp_local_length_error;
  } else {
    ++counters_.rdma_recvs;
  }
  CompletionQueue* cq = cqs_.Get(qp.init_.recv_cq);
  if (cq == nullptr) return;
  WorkCompletion flagged = wc;
  flagged.solicited = solicited;
  if (cq->Push(flagged, solicited) != CqPushResult::kOk) {
    MoveToError(qp, AsyncEventType::kQpFatal);
  }
}

void Rnic::FlushSendQueue(Qp& qp) {
  for (uint64_t i = qp.comp_.comp_idx; i < qp.sq_tail_; ++i) {
    SendWqe& w = qp.sq_.at(i);
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.status =
        w.status != WcStatus::kSuccess ? w.status : WcStatus::kWrFlushErr;
    wc.qp_num = qp.qpn_;
    w.status = WcStatus::kSuccess;
    qp.comp_.comp_idx = i + 1;
    CompleteSend(qp, wc);
  }
  qp.comp_.comp_idx = qp.sq_tail_;
  qp.req_.req_idx = qp.sq_tail_;
  qp.req_.pkt = 0;
  qp.req_.rd_atomic_outstanding = 0;
  qp.comp_.timer_deadline = kNever;
}

void Rnic::FlushRecvQueue(Qp& qp) {
  auto flush = [&](const PostedRecvWr& wr) {
    WorkCompletion wc;
    wc.wr_id = wr.wr_id;
    wc.status = WcStatus::kWrFlushErr;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qp.qpn_;
    CompleteRecv(qp, wc, false);
  };
  if (qp.resp_.have_rwqe) {
    qp.resp_.have_rwqe = false;
    flush(qp.resp_.rwqe);
  }
  if (!qp.init_.has_srq) qp.rq_.Flush(flush);
}

void Rnic::MoveToError(Qp& qp) {
  if (qp.attr_.qp_state == QpState::kErr) return;
  qp.attr_.qp_state = QpState::kErr;
  FlushSendQueue(qp);
  FlushRecvQueue(qp);
  // A NAK that announces the error still goes out; anything else owed to
  // the peer is dropped with the connection.
  if (!qp.resp_.goto_error) qp.resp_.resp_head = qp.resp_.resp_tail;
  // The SRQ will give this QP no further WQE (IBTA 11.6.3.1; rxe and mlx5
  // raise it on every move of an SRQ-attached QP to ERR).
  if (qp.init_.has_srq) RaiseQpEvent(qp, AsyncEventType::kQpLastWqeReached);
}

void Rnic::MoveToError(Qp& qp, AsyncEventType event) {
  if (qp.attr_.qp_state == QpState::kErr) return;
  RaiseQpEvent(qp, event);
  MoveToError(qp);
}

void Rnic::RaiseQpEvent(const Qp& qp, AsyncEventType event) {
  events_.Push({event, qp.qpn_, kKernelClient});
}

void Rnic::CheckSqDrained(Qp& qp) {
  QpAttr& a = qp.attr_;
  if (a.qp_state != QpState::kSqd || !a.sq_draining) return;
  if (qp.comp_.comp_idx != qp.req_.req_idx || qp.req_.pkt != 0) return;
  a.sq_draining = 0;
  if (a.en_sqd_async_notify) RaiseQpEvent(qp, AsyncEventType::kSqDrained);
}

void Rnic::MoveToSqe(Qp& qp) {
  if (qp.attr_.qp_state != QpState::kRts &&
      qp.attr_.qp_state != QpState::kSqd) {
    return;
  }
  qp.attr_.qp_state = QpState::kSqe;
  FlushSendQueue(qp);
}

bool Rnic::PopRecvWqe(Qp& qp) {
  if (qp.init_.has_srq) {
    SharedReceiveQueue* srq = srqs_.Get(qp.init_.srq);
    if (srq == nullptr) return false;
    if (srq->Front() == nullptr && fetcher_ != nullptr) {
      fetcher_->FetchSrqRecv(qp.init_.srq);
    }
    if (srq->Front() == nullptr) return false;
    qp.TakeRecvWqe(*srq->Front());
    srq->Pop();
    return true;
  }
  if (qp.rq_.Front() == nullptr && fetcher_ != nullptr) {
    fetcher_->FetchRecv(qp.qpn());
  }
  const PostedRecvWr* wr = qp.rq_.Front();
  if (wr == nullptr) return false;
  qp.TakeRecvWqe(*wr);
  qp.rq_.Pop();
  return true;
}

bool Rnic::AhPath(const Qp& qp, AhHandle ah, QpPath* path) const {
  const AddressHandle* h = ahs_.Get(ah);
  if (h == nullptr || h->pd != qp.pd_ || !h->dmac_resolved) return false;
  path->dgid = h->attr.dgid;
  path->sgid_index = h->attr.sgid_index;
  path->dmac = h->dmac;
  path->traffic_class = h->attr.traffic_class;
  path->flow_label = h->attr.flow_label;
  path->hop_limit = h->attr.hop_limit;
  path->sl = h->attr.sl;
  return true;
}

void Rnic::FillNet(const Qp& qp, const QpPath& path,
                   protocol::NetHeaders* net) const {
  net->src_mac = config_.mac;
  net->dst_mac = path.dmac;
  net->ipv6 = !GidIsIpv4Mapped(path.dgid);
  net->src_ip = gids_.Get(path.sgid_index).value_or(config_.gid);
  net->dst_ip = path.dgid;
  net->dscp = cc_.DscpOf(path.traffic_class);
  net->ecn = cc_.EcnBits();  // ECT(0) by default: DCQCN needs marks
  net->ttl = path.hop_limit;
  net->flow_label = path.flow_label;
  net->udp_src_port = qp.udp_sport_;
  if (config_.vlan_id.has_value()) {
    net->has_vlan = true;
    net->vlan.vid = *config_.vlan_id;
    net->vlan.pcp = path.sl != 0 ? path.sl & 7 : cc_.config().roce_prio;
  }
}

// --- data path --------------------------------------------------------------

void Rnic::Receive(uint16_t /*port*/, std::span<const RxFrame> frames,
                   TimeNs now) {
  last_now_ = std::max(last_now_, now);
  for (const RxFrame& f : frames) ReceiveOne(f, now);
}

void Rnic::ReceiveOne(const RxFrame& frame, TimeNs now) {
  const protocol::ParseError e = protocol::ParseFrame(frame.bytes(), &parsed_);
  if (e != protocol::ParseError::kOk) {
    if (e == protocol::ParseError::kBadIcrc) {
      ++counters_.rx_icrc_encapsulated;
    } else if (e == protocol::ParseError::kUnknownOpcode ||
               e == protocol::ParseError::kUnsupportedOpcode) {
      ++counters_.rx_bad_opcode;
    } else {
      ++counters_.rx_malformed;
    }
    return;
  }
  if (parsed_.kind == protocol::FrameKind::kPfc ||
      parsed_.kind == protocol::FrameKind::kPause) {
    cc_.OnMacControl(parsed_, now);
    paused_priorities_ = cc_.paused_mask();
    return;
  }
  if (parsed_.kind != protocol::FrameKind::kRoce) {
    ++rx_not_roce_;
    return;
  }
  const protocol::OpcodeInfo& op = *parsed_.op;
  if (parsed_.hdr.bth.dest_qp == protocol::kGsiQpn) {
    ++counters_.rcvd_pkts;
    gsi_->Receive(parsed_, now);
    return;
  }
  Qp* qp = FindQp(parsed_.hdr.bth.dest_qp);
  if (qp == nullptr) {
    ++counters_.rx_unknown_qp;
    return;
  }
  if (op.engine == Engine::kCongestion) {
    // CNP: to the QP's DCQCN reaction point. CNPs carry the default P_Key
    // 0xFFFF whatever the QP's partition (ConnectX sends them so).
    if (parsed_.hdr.bth.pkey != protocol::kDefaultPKey &&
        !pkeys_.Accepts(qp->attr_.pkey_index, parsed_.hdr.bth.pkey)) {
      ++counters_.bad_pkey_cntr;
      return;
    }
    ++qp->counters_.cnp_received;
    cc_.OnCnp(*qp, now, counters_);
    return;
  }
  if (!op.supported || !ServiceMatches(op.service, qp->type())) {
    ++counters_.rx_bad_opcode;
    return;
  }
  if (!pkeys_.Accepts(qp->attr_.pkey_index, parsed_.hdr.bth.pkey)) {
    ++counters_.bad_pkey_cntr;
    return;
  }
  if (parsed_.net.ecn == 0b11) cc_.OnCeMarked(*qp, parsed_, now, counters_);
  const QpState s = qp->attr_.qp_state;
  ++counters_.rcvd_pkts;
  if (op.engine == Engine::kResponder) {
    if (s != QpState::kRtr && s != QpState::kRts && s != QpState::kSqd &&
        s != QpState::kSqe) {
      ++counters_.rx_wrong_state;
      return;
    }
    // A connected QP learns that its peer is up from the first request it
    // gets in RTR (IBTA 11.6.3.1): the CM then moves it to RTS.
    if (s == QpState::kRtr && !qp->comm_est_ && qp->type() != QpType::kUd) {
      qp->comm_est_ = true;
      RaiseQpEvent(*qp, AsyncEventType::kCommEst);
      cm_->OnCommEst(qp->qpn_, now);
    }
    Responder::Receive(*this, *qp, parsed_, frame.bytes(), now);
  } else {
    if (s != QpState::kRts && s != QpState::kSqd) {
      ++counters_.rx_wrong_state;
      return;
    }
    Completer::Receive(*this, *qp, parsed_, now);
    if (qp->attr_.sq_draining) CheckSqDrained(*qp);
  }
}

size_t Rnic::Transmit(uint16_t /*port*/, std::span<TxFrame> frames,
                      TimeNs now) {
  last_now_ = std::max(last_now_, now);
  for (size_t i = 0; i < active_.size(); ++i) {
    Completer::OnTimer(*this, *active_[i], now);
  }
  if (cm_->NextEventTime() <= now) cm_->OnTimer(now);
  paused_priorities_ = cc_.RefreshPause(now);
  // CNPs first (strict priority), then MADs (a handshake must not wait
  // behind bulk data), then responses, then paced requests.
  size_t n = cc_.TransmitCnps(frames, counters_);
  n += gsi_->Transmit(frames.subspan(n));
  counters_.sent_pkts += n;
  int failures = 0;
  while (n < frames.size() && !active_.empty() && failures < 8) {
    const size_t count = active_.size();
    Qp* picked = nullptr;
    bool response = false;
    for (size_t k = 0; k < count; ++k) {
      const size_t i = (rr_resp_ + k) % count;
      if (Responder::HasResponse(*active_[i]) && !Paused(*active_[i])) {
        picked = active_[i];
        rr_resp_ = i + 1;
        response = true;
        break;
      }
    }
    if (picked == nullptr) {
      for (size_t k = 0; k < count; ++k) {
        const size_t i = (rr_req_ + k) % count;
        if (Requester::Ready(*this, *active_[i], now)) {
          picked = active_[i];
          rr_req_ = i + 1;
          break;
        }
      }
    }
    if (picked == nullptr) break;
    TxFrame& f = frames[n];
    f.len = 0;
    const bool ok = response ? Responder::BuildNext(*this, *picked, f)
                             : Requester::BuildNext(*this, *picked, f, now);
    if (ok && f.len > 0) {
      f.priority = cc_.PriorityOf(*picked);
      if (!response) cc_.OnRequestSent(*picked, f.len, now);
      ++n;
      ++counters_.sent_pkts;
    } else {
      ++failures;
    }
  }
  RemoveIdle();
  return n;
}

void Rnic::RemoveIdle() {
  for (size_t i = 0; i < active_.size();) {
    Qp& q = *active_[i];
    // UC/UD sends complete as they leave: the drain can end here too.
    if (q.attr_.sq_draining) CheckSqDrained(q);
    const bool busy =
        Responder::HasResponse(q) ||
        (q.req_.req_idx < q.sq_tail_ && (q.attr_.qp_state == QpState::kRts ||
                                         q.attr_.qp_state == QpState::kSqd)) ||
        q.comp_.timer_deadline != kNever;
    if (busy) {
      ++i;
      continue;
    }
    q.scheduled_ = false;
    active_[i] = active_.back();
    active_.pop_back();
  }
}

TimeNs Rnic::NextEventTime() const {
  TimeNs t = std::min(cc_.NextEventTime(last_now_), cm_->NextEventTime());
  if (t <= last_now_ || gsi_->HasPending()) return last_now_;
  for (const Qp* q : active_) {
    if (Responder::HasResponse(*q) && !Paused(*q)) return last_now_;
    if (Requester::Ready(*this, *q, last_now_)) return last_now_;
    const TimeNs wake = Requester::WakeTime(*q);
    if (wake > last_now_) t = std::min(t, wake);
    t = std::min(t, q->comp_.timer_deadline);
  }
  return t;
}

void Rnic::PausePriority(uint8_t priority, bool paused) {
  cc_.ForcePause(priority, paused);
  paused_priorities_ = cc_.paused_mask();
}

void Rnic::SetPaceUntil(uint32_t qpn, TimeNs t) {
  if (Qp* qp = FindQp(qpn)) {
    qp->pace_until_ = t;
    Schedule(*qp);
  }
}

DeviceCounters Rnic::QueryCounters() const {
  // Device counters are cumulative, as a NIC's port counters are: what
  // destroyed QPs counted stays in retired_.
  DeviceCounters c = counters_;
  for (const CounterField& f : kCounterFields) c.*f.field += retired_.*f.field;
  for (const auto& [qpn, qp] : qps_) AddQpCounters(qp->counters_, c);
  return c;
}

}  // namespace rocemu::nic
