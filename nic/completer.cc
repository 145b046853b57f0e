#include "nic/completer.h"

#include <algorithm>

#include "nic/psn.h"
#include "nic/requester.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"
#include "nic/tag_matching.h"

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
    case WrOpcode::kFlush:
      return WcOpcode::kFlush;
    case WrOpcode::kAtomicWrite:
      return WcOpcode::kAtomicWrite;
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

DropReason NakReason(uint8_t code) {
  switch (static_cast<NakCode>(code)) {
    case NakCode::kPsnSequenceError:
      return DropReason::kNakPsnSequence;
    case NakCode::kInvalidRequest:
      return DropReason::kNakInvalidRequest;
    case NakCode::kRemoteAccessError:
      return DropReason::kNakRemoteAccess;
    case NakCode::kRemoteOperationalError:
      return DropReason::kNakRemoteOp;
    case NakCode::kInvalidRdRequest:
      return DropReason::kNakInvalidRdRequest;
    default:
      return DropReason::kNakReserved;
  }
}

// The WQE at comp_idx fails with `status` because of `why` (the frame
// `cause_id` behind it), and the QP goes to ERR.
void FailHead(Rnic& nic, Qp& qp, WcStatus status, DropReason why,
              uint64_t cause_id) {
  SendWqe& w = qp.sq_.at(qp.comp_.comp_idx);
  w.status = status;
  w.cause = why;
  w.cause_id = cause_id;
  nic.MoveToError(qp, why, cause_id);
}

// The packet id of the last transmission of `psn` the flight recorder
// still holds (of the newest request at or before it), 0 if none.
uint64_t LastSent(const Qp& qp, uint32_t psn) {
  if (qp.recorder_ == nullptr) return 0;
  uint64_t id = 0;
  uint32_t best = 0;
  bool exact = false;
  qp.recorder_->ForEach([&](const RecorderEvent& e, std::span<const uint8_t>) {
    if (e.kind != RecorderEventKind::kTx || !PsnLessEq(e.psn, psn)) return;
    if (e.psn == psn) {
      id = e.id;
      exact = true;
    } else if (!exact && (id == 0 || PsnLessEq(best, e.psn))) {
      id = e.id;
      best = e.psn;
    }
  });
  return id;
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
  if ((w.wr.send_flags & send_flags::kTmInternal) != 0) {
    TmInternalDone(nic, qp, w, WcStatus::kSuccess);
    return;
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
// implied NAK (`why`, the frame `cause_id`: the NAK, or the transmission
// that timed out); each costs one of retry_cnt. `a1` is the reason's
// second argument (frame_verdict.h), for the retransmissions' notes.
void Retry(Rnic& nic, Qp& qp, uint32_t psn, DropReason why, uint64_t cause_id,
           uint64_t a1) {
  CompleterState& c = qp.comp_;
  c.timer_deadline = kNever;
  if (c.retry_left == 0) {
    ++qp.counters_.retry_exceeded_err;
    FrameVerdict& v =
        nic.Verdict(&qp, DropReason::kRetryExceeded, VerdictAction::kQpError);
    v.args[0] = psn;
    v.args[1] = qp.attr_.retry_cnt;
    FailHead(nic, qp, WcStatus::kRetryExcErr, DropReason::kRetryExceeded,
             LastSent(qp, psn));
    return;
  }
  --c.retry_left;
  ++qp.counters_.completer_retry_err;
  Requester::RewindTo(qp, psn);
  RequesterState& r = qp.req_;
  r.resend_reason = why;
  r.resend_cause = cause_id;
  r.resend_args[0] = psn;
  r.resend_args[1] = a1;
  r.resend_args[2] = qp.attr_.retry_cnt;
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
  nic.Verdict(&qp, DropReason::kImpliedNak, VerdictAction::kRetried).args[0] =
      qp.comp_.psn;
  Retry(nic, qp, qp.comp_.psn, DropReason::kImpliedNak, nic.rx_packet_id(), 0);
  return true;
}

// The response's data could not be placed in the WQE's buffers.
void LocalFailure(Rnic& nic, Qp& qp, const SendWqe& w, MrStatus ms) {
  const DropReason why = LocalReason(ms);
  FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kFailedWr);
  nic.SgArgs(v.args, w.wr.sg_list.span(), access::kLocalWrite, qp.pd());
  FailHead(nic, qp, WcStatus::kLocProtErr, why, nic.rx_packet_id());
}

void Stale(Rnic& nic, Qp& qp, DropReason why, uint32_t psn) {
  FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kDropped);
  v.args[0] = psn;
  v.args[1] = qp.comp_.psn;
  v.args[2] = qp.req_.psn;
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
    if (!PsnLess(w.last_psn, r)) {  // before the oldest WQE: stale
      Stale(nic, qp, DropReason::kDuplicateResponse, r);
      return;
    }
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
  // ATOMIC WRITE and FLUSH are answered by a READ response without payload.
  const bool empty_read =
      w.wr.opcode == WrOpcode::kAtomicWrite || w.wr.opcode == WrOpcode::kFlush;
  const bool is_read = w.wr.opcode == WrOpcode::kRdmaRead || empty_read;
  if (!w.read_or_atomic || atomic_ack == is_read) {
    // A response that does not answer this WQE's operation.
    ++qp.counters_.ghost_ack;
    Stale(nic, qp, DropReason::kGhostResponse, r);
    return;
  }
  if (PsnLess(r, c.psn)) {  // duplicate response
    Stale(nic, qp, DropReason::kDuplicateResponse, r);
    return;
  }
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
      LocalFailure(nic, qp, w, ms);
      return;
    }
  } else {
    const uint32_t mtu = qp.mtu();
    const uint64_t offset =
        static_cast<uint64_t>(PsnDiff(r, w.first_psn)) * mtu;
    const uint64_t expect =
        empty_read ? 0 : std::min<uint64_t>(mtu, w.length - offset);
    const bool last = r == w.last_psn;
    if (pkt.payload.size() != expect || last != pkt.op->IsLast()) {
      FrameVerdict& v =
          nic.Verdict(&qp, DropReason::kBadResponse, VerdictAction::kFailedWr);
      v.args[0] = pkt.payload.size();
      v.args[1] = expect;
      FailHead(nic, qp, WcStatus::kBadRespErr, DropReason::kBadResponse,
               nic.rx_packet_id());
      return;
    }
    if (expect > 0) {
      const auto sges = w.wr.sg_list.span();
      SgCursor cur = SeekSg(sges, offset);
      const MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, pkt.payload);
      if (ms != MrStatus::kOk) {
        nic.CountMrFault(ms);
        LocalFailure(nic, qp, w, ms);
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
  FrameVerdict& v =
      nic.Verdict(&qp, DropReason::kAckTimeout, VerdictAction::kRetried);
  v.args[0] = c.psn;
  v.args[1] = c.retry_left;
  v.args[2] = qp.attr_.retry_cnt;
  // The transmission that went unanswered: the retransmission names it.
  const uint64_t unanswered = LastSent(qp, c.psn);
  if (qp.recorder_ != nullptr) {
    RecorderEvent e;
    e.time = now;
    e.kind = RecorderEventKind::kTimeout;
    e.psn = c.psn;
    e.opcode = c.retry_left;
    e.reason = DropReason::kAckTimeout;
    e.cause = unanswered;
    qp.recorder_->Add(e);
  }
  Retry(nic, qp, c.psn, DropReason::kAckTimeout, unanswered, c.retry_left);
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
    Stale(nic, qp, DropReason::kGhostResponse, psn);
    return;
  }
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
      FrameVerdict& v =
          nic.Verdict(&qp, DropReason::kNakRnr, VerdictAction::kRetried);
      v.args[0] = psn;
      v.args[1] = aeth.syndrome;
      CompleterState& c = qp.comp_;
      if (c.comp_idx >= qp.req_.req_idx && qp.req_.pkt == 0) return;
      if (c.rnr_retry_left == 0) {
        ++qp.counters_.retry_rnr_exceeded_err;
        FrameVerdict& x = nic.Verdict(&qp, DropReason::kRnrRetryExceeded,
                                      VerdictAction::kQpError);
        x.args[0] = psn;
        x.args[1] = qp.attr_.rnr_retry;
        FailHead(nic, qp, WcStatus::kRnrRetryExcErr,
                 DropReason::kRnrRetryExceeded, nic.rx_packet_id());
        return;
      }
      if (c.rnr_retry_left != 7) --c.rnr_retry_left;
      c.timer_deadline = kNever;
      Requester::RewindTo(qp, psn);
      RequesterState& rs = qp.req_;
      rs.resend_reason = DropReason::kNakRnr;
      rs.resend_cause = nic.rx_packet_id();
      rs.resend_args[0] = psn;
      rs.resend_args[1] = aeth.syndrome;
      rs.resend_args[2] = 0;
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
        FrameVerdict& v = nic.Verdict(&qp, DropReason::kNakPsnSequence,
                                      VerdictAction::kRetried);
        v.args[0] = psn;
        v.args[1] = aeth.syndrome;
        Retry(nic, qp, psn, DropReason::kNakPsnSequence, nic.rx_packet_id(),
              aeth.syndrome);
        return;
      }
      const DropReason why = NakReason(aeth.value());
      FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kFailedWr);
      v.args[0] = psn;
      v.args[1] = aeth.syndrome;
      v.args[2] = qp.sq_.at(c.comp_idx).wr.wr_id;
      FailHead(nic, qp, NakStatus(aeth.value()), why, nic.rx_packet_id());
      return;
    }
    case AethType::kReserved: {
      ++qp.counters_.ghost_ack;
      FrameVerdict& v =
          nic.Verdict(&qp, DropReason::kNakReserved, VerdictAction::kDropped);
      v.args[0] = psn;
      v.args[1] = aeth.syndrome;
      return;
    }
  }
}

}  // namespace rocemu::nic
