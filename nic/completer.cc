#include "nic/completer.h"

#include <algorithm>

#include "nic/psn.h"
#include "nic/requester.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {

namespace {

using protocol::AethType;
using protocol::NakCode;
using protocol::Operation;

WcOpcode SendWcOpcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp:
      return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd:
      return WcOpcode::kFetchAdd;
    case WrOpcode::kLocalInv:
      return WcOpcode::kLocalInv;
    case WrOpcode::kBindMw:
      return WcOpcode::kBindMw;
    default:
      return WcOpcode::kSend;
  }
}

WcStatus NakStatus(uint8_t code) {
  switch (static_cast<NakCode>(code)) {
    case NakCode::kInvalidRequest:
      return WcStatus::kRemInvReqErr;
    case NakCode::kRemoteAccessError:
      return WcStatus::kRemAccessErr;
    case NakCode::kRemoteOperationalError:
      return WcStatus::kRemOpErr;
    case NakCode::kInvalidRdRequest:
      return WcStatus::kRemInvRdReqErr;
    default:
      return WcStatus::kBadRespErr;
  }
}

// Retires the WQE at comp_idx successfully.
void CompleteHead(Rnic& nic, Qp& qp) {
  CompleterState& c = qp.comp_;
  SendWqe& w = qp.sq_.at(c.comp_idx);
  ++c.comp_idx;
  if (w.read_or_atomic && qp.req_.rd_atomic_outstanding > 0) {
    --qp.req_.rd_atomic_outstanding;
  }
  // rxe's rdma_sends: SENDs done, signaled or not (rdma_recvs counts the
  // receives they consumed on the other side).
  if (w.wr.opcode == WrOpcode::kSend || w.wr.opcode == WrOpcode::kSendWithImm ||
      w.wr.opcode == WrOpcode::kSendWithInv) {
    ++nic.engine_counters().rdma_sends;
  }
  if (w.wr.signaled() || qp.init_.sq_sig_all) {
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.wqe_index = w.wr.wqe_index;
    wc.status = WcStatus::kSuccess;
    wc.opcode = SendWcOpcode(w.wr.opcode);
    wc.qp_num = qp.qpn();
    wc.byte_len = static_cast<uint32_t>(w.length);
    nic.CompleteSend(qp, wc);
  }
}

bool Outstanding(const Qp& qp) {
  return qp.comp_.comp_idx < qp.req_.req_idx ||
         (qp.comp_.comp_idx == qp.req_.req_idx && qp.req_.pkt != 0);
}

void Rearm(Qp& qp, TimeNs now) {
  const uint64_t t = LocalAckTimeoutNs(qp.attr().timeout);
  qp.comp_.timer_deadline = (t != 0 && Outstanding(qp)) ? now + t : kNever;
}

// Go-back-N from `psn` after a timeout, a PSN sequence error NAK or an
// implied NAK; each costs one of retry_cnt.
void Retry(Rnic& nic, Qp& qp, uint32_t psn) {
  CompleterState& c = qp.comp_;
  c.timer_deadline = kNever;
  if (c.retry_left == 0) {
    ++qp.counters_.retry_exceeded_err;
    qp.sq_.at(c.comp_idx).status = WcStatus::kRetryExcErr;
    nic.MoveToError(qp);
    return;
  }
  --c.retry_left;
  ++qp.counters_.completer_retry_err;
  Requester::RewindTo(qp, psn);
  nic.Schedule(qp);
}

// An implied NAK: a response skipped the PSN of a READ/atomic response still
// due. Once a retry has started since the last progress (retry_left below
// retry_cnt), every response the responder sent before it saw the resent
// request skips that PSN too: those are ignored, as rxe ignores them while
// comp.started_retry is set, and the ACK timer covers a loss of the resent
// request's responses. Retrying on each of them would use up retry_cnt on
// one loss. Returns true when the QP was rewound (or failed).
bool ImpliedNak(Rnic& nic, Qp& qp) {
  if (qp.comp_.retry_left != qp.attr_.retry_cnt) return false;
  ++qp.counters_.implied_nak_seq_err;
  Retry(nic, qp, qp.comp_.psn);
  return true;
}

// Everything up to and including PSN `a` is acknowledged. Returns false when
// the ACK implied a NAK (the QP was rewound or failed).
bool ProcessAck(Rnic& nic, Qp& qp, uint32_t a, TimeNs now) {
  CompleterState& c = qp.comp_;
  bool progress = false;
  while (c.comp_idx < qp.req_.req_idx) {
    const SendWqe& w = qp.sq_.at(c.comp_idx);
    if (w.read_or_atomic) {
      if (PsnLessEq(w.first_psn, a)) {
        // An ACK past a READ/atomic whose response never came.
        ImpliedNak(nic, qp);
        return false;
      }
      break;
    }
    if (!PsnLessEq(w.last_psn, a)) break;
    c.psn = PsnAdd(w.last_psn, 1);
    CompleteHead(nic, qp);
    progress = true;
  }
  // After a rewind (a stale NAK, a timeout) an ACK may cover PSNs the
  // requester is about to send again: the responder had them all along. The
  // WQEs there are sent again and acknowledged then; c.psn never passes the
  // requester's PSN, or a later rewind to c.psn would land past the end of
  // the WQE being sent.
  uint32_t acked = PsnAdd(a, 1);
  if (PsnLess(qp.req_.psn, acked)) acked = qp.req_.psn;
  if (PsnLess(c.psn, acked)) {
    c.psn = acked;
    progress = true;
  }
  if (progress) {
    Completer::ResetRetries(qp);
    Rearm(qp, now);
  }
  return true;
}

void ProcessResponse(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                     TimeNs now) {
  CompleterState& c = qp.comp_;
  const uint32_t r = pkt.hdr.bth.psn;
  // Implied ACK of the SEND/WRITE messages before the response's PSN.
  while (c.comp_idx < qp.req_.req_idx) {
    const SendWqe& w = qp.sq_.at(c.comp_idx);
    if (PsnLessEq(w.first_psn, r) && PsnLessEq(r, w.last_psn)) break;
    if (!PsnLess(w.last_psn, r)) return;  // before the oldest WQE: stale
    if (w.read_or_atomic) {
      ImpliedNak(nic, qp);
      return;
    }
    c.psn = PsnAdd(w.last_psn, 1);
    CompleteHead(nic, qp);
    Completer::ResetRetries(qp);
  }
  if (c.comp_idx >= qp.req_.req_idx) {
    Rearm(qp, now);
    return;
  }
  SendWqe& w = qp.sq_.at(c.comp_idx);
  const bool atomic_ack = pkt.op->operation == Operation::kAtomicAcknowledge;
  const bool is_read = w.wr.opcode == WrOpcode::kRdmaRead;
  if (!w.read_or_atomic || atomic_ack == is_read) {
    // A response that does not answer this WQE's operation.
    ++qp.counters_.ghost_ack;
    return;
  }
  if (PsnLess(r, c.psn)) return;  // duplicate response
  if (PsnLess(c.psn, r)) {
    // Responses skipped PSNs: retry the READ from the first missing one.
    ImpliedNak(nic, qp);
    return;
  }
  if (atomic_ack) {
    const uint64_t orig = pkt.hdr.atomic_ack.orig;
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<uint8_t>(orig >> (8 * i));
    SgCursor cur;
    const MrStatus ms =
        Scatter(nic.mrs(), qp.pd(), w.wr.sg_list.span(), cur, bytes);
    if (ms != MrStatus::kOk) {
      nic.CountMrFault(ms);
      w.status = WcStatus::kLocProtErr;
      nic.MoveToError(qp);
      return;
    }
  } else {
    const uint32_t mtu = qp.mtu();
    const uint64_t offset =
        static_cast<uint64_t>(PsnDiff(r, w.first_psn)) * mtu;
    const uint64_t expect = std::min<uint64_t>(mtu, w.length - offset);
    const bool last = r == w.last_psn;
    if (pkt.payload.size() != expect || last != pkt.op->IsLast()) {
      w.status = WcStatus::kBadRespErr;
      nic.MoveToError(qp);
      return;
    }
    if (expect > 0) {
      const auto sges = w.wr.sg_list.span();
      SgCursor cur = SeekSg(sges, offset);
      const MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, pkt.payload);
      if (ms != MrStatus::kOk) {
        nic.CountMrFault(ms);
        w.status = WcStatus::kLocProtErr;
        nic.MoveToError(qp);
        return;
      }
    }
  }
  c.psn = PsnAdd(r, 1);
  if (r == w.last_psn) CompleteHead(nic, qp);
  Completer::ResetRetries(qp);
  Rearm(qp, now);
}

}  // namespace

void Completer::ResetRetries(Qp& qp) {
  qp.comp_.retry_left = qp.attr_.retry_cnt;
  qp.comp_.rnr_retry_left = qp.attr_.rnr_retry;
}

void Completer::OnSent(Qp& qp, TimeNs now) {
  if (qp.comp_.timer_deadline == kNever) {
    const uint64_t t = LocalAckTimeoutNs(qp.attr_.timeout);
    if (t != 0) qp.comp_.timer_deadline = now + t;
  }
}

void Completer::CompleteUnreliable(Rnic& nic, Qp& qp) {
  CompleteHead(nic, qp);
  qp.comp_.psn = qp.req_.psn;
}

void Completer::OnTimer(Rnic& nic, Qp& qp, TimeNs now) {
  CompleterState& c = qp.comp_;
  if (c.timer_deadline == kNever || now < c.timer_deadline) return;
  if (!Outstanding(qp)) {
    c.timer_deadline = kNever;
    return;
  }
  ++qp.counters_.local_ack_timeout_err;
  Retry(nic, qp, c.psn);
}

void Completer::Receive(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                        TimeNs now) {
  const RequesterState& r = qp.req_;
  const uint32_t psn = pkt.hdr.bth.psn;
  const bool nak = pkt.op->operation == Operation::kAcknowledge &&
                   pkt.hdr.aeth.type() != AethType::kAck;
  // A response for a PSN never sent (ghost), or arriving with nothing
  // outstanding, is ignored. A NAK names the PSN it expected, which may be
  // the next one to send.
  const uint32_t limit = nak ? r.psn : PsnAdd(r.max_sent_psn, 1);
  if (!r.sent_any || !Outstanding(qp) || !PsnLess(psn, limit) ||
      PsnLess(psn, PsnAdd(qp.comp_.psn, nak ? 0 : kPsnMask))) {
    ++qp.counters_.ghost_ack;
    return;
  }
  ++qp.counters_.rcvd_pkts;
  if (pkt.op->operation != Operation::kAcknowledge) {
    ProcessResponse(nic, qp, pkt, now);
    return;
  }
  const protocol::Aeth& aeth = pkt.hdr.aeth;
  switch (aeth.type()) {
    case AethType::kAck:
      ProcessAck(nic, qp, psn, now);
      return;
    case AethType::kRnrNak: {
      if (!ProcessAck(nic, qp, PsnAdd(psn, kPsnMask), now)) return;
      ++qp.counters_.rcvd_rnr_err;
      CompleterState& c = qp.comp_;
      if (c.comp_idx >= qp.req_.req_idx && qp.req_.pkt == 0) return;
      if (c.rnr_retry_left == 0) {
        ++qp.counters_.retry_rnr_exceeded_err;
        qp.sq_.at(c.comp_idx).status = WcStatus::kRnrRetryExcErr;
        nic.MoveToError(qp);
        return;
      }
      if (c.rnr_retry_left != 7) --c.rnr_retry_left;
      c.timer_deadline = kNever;
      Requester::RewindTo(qp, psn);
      qp.req_.rnr_until = now + RnrTimerNs(aeth.value());
      nic.Schedule(qp);
      return;
    }
    case AethType::kNak: {
      if (!ProcessAck(nic, qp, PsnAdd(psn, kPsnMask), now)) return;
      CompleterState& c = qp.comp_;
      if (c.comp_idx >= qp.req_.req_idx && qp.req_.pkt == 0) return;
      if (aeth.value() == static_cast<uint8_t>(NakCode::kPsnSequenceError)) {
        ++qp.counters_.rcvd_seq_err;
        Retry(nic, qp, psn);
        return;
      }
      qp.sq_.at(c.comp_idx).status = NakStatus(aeth.value());
      nic.MoveToError(qp);
      return;
    }
    case AethType::kReserved:
      ++qp.counters_.ghost_ack;
      return;
  }
}

}  // namespace rocemu::nic
