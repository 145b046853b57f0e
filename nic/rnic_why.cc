// The Rnic's side of issue 36: the verdicts the engines report on frames
// (counted per reason, kept by packet id, marked in the QP's flight
// recorder), the notes of frames sent for a reason, the error notes the
// daemon logs, and the causes QPs go to ERR or SQE with. Rare paths only:
// the normal path costs an id per frame and a recorder entry.
#include <algorithm>
#include <iterator>

#include "nic/gsi.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {

void Rnic::CqOverflow(Qp& qp, CqHandle handle, const CompletionQueue& cq) {
  if (qp.attr_.qp_state == QpState::kErr) return;
  FrameVerdict& v =
      Verdict(&qp, DropReason::kCqOverflow, VerdictAction::kQpError);
  v.args[0] = handle;
  v.args[1] = cq.capacity();
  MoveToError(qp, AsyncEventType::kQpFatal, DropReason::kCqOverflow, rx_id_);
}

void Rnic::NoteCompletion(Qp& qp, const WorkCompletion& wc, bool recv,
                          DropReason cause, uint64_t cause_id) {
  if (qp.recorder_ != nullptr) {
    RecorderEvent e;
    e.time = last_now_;
    e.kind = RecorderEventKind::kCompletion;
    e.id = wc.wr_id;
    e.cause = cause_id;
    e.psn = static_cast<uint32_t>(wc.status);
    e.reason = cause;
    e.opcode = recv ? 1 : 0;
    qp.recorder_->Add(e);
  }
  PushNote({.time = last_now_,
            .wr_id = wc.wr_id,
            .cause_id = cause_id,
            .qpn = qp.qpn_,
            .reason = cause,
            .status = wc.status,
            .recv = recv});
}

void Rnic::PushNote(const ErrorNote& n) {
  if (notes_tail_ - notes_head_ == notes_.size()) {
    ++notes_lost_;
    return;
  }
  notes_[notes_tail_++ % notes_.size()] = n;
}

void Rnic::NoteQpError(Qp& qp, QpState from, DropReason why,
                       uint64_t cause_id) {
  // An ERR that follows an SQE, or that the application asks for once the
  // QP failed, keeps the first cause: it is the one that explains.
  if (qp.error_cause_.reason == DropReason::kNone ||
      why != DropReason::kModifyToErr) {
    if (qp.error_cause_.reason == DropReason::kNone || from != QpState::kSqe) {
      qp.error_cause_ = {why, cause_id, last_now_, from, {}};
      // The verdict that led here was just recorded, with its arguments.
      const FrameVerdict* v =
          no_frame_.reason == why ? &no_frame_ : log_.Find(rx_id_);
      if (v != nullptr && v->reason == why) {
        std::copy(std::begin(v->args), std::end(v->args), qp.error_cause_.args);
      }
    }
  }
  if (qp.recorder_ != nullptr) {
    RecorderEvent e;
    e.time = last_now_;
    e.kind = RecorderEventKind::kState;
    e.cause = cause_id;
    e.psn = static_cast<uint32_t>(qp.attr_.qp_state);
    e.opcode = static_cast<uint8_t>(from);
    e.reason = why;
    qp.recorder_->Add(e);
  }
  PushNote({.time = last_now_,
            .cause_id = cause_id,
            .qpn = qp.qpn_,
            .reason = why,
            .qp_error = true,
            .state = qp.attr_.qp_state});
}

FrameVerdict& Rnic::Verdict(Qp* qp, DropReason reason, VerdictAction action) {
  reasons_.Add(reason);
  no_frame_ = FrameVerdict{};
  no_frame_.reason = reason;
  no_frame_.action = action;
  if (rx_id_ == 0) return no_frame_;
  FrameVerdict& v = log_.At(rx_id_);
  if (qp != nullptr && qp->recorder_ != nullptr) {
    if (RecorderEvent* e = qp->recorder_->FindFrame(rx_id_)) {
      if (e->reason == DropReason::kNone) e->reason = reason;
    }
  }
  // The first verdict on a frame is the one that says why (a multicast
  // copy dropped by a second QP, a retry limit reached on a NAK, say
  // nothing new about the frame): later ones get the scratch record.
  if (v.reason != DropReason::kNone) return no_frame_;
  v.reason = reason;
  v.action = action;
  if (qp != nullptr) v.qpn = qp->qpn_;
  no_frame_.reason = DropReason::kNone;
  return v;
}

void Rnic::NoteSent(Qp& qp, const TxFrame& out, DropReason why, uint64_t cause,
                    bool resent, const uint64_t* args) {
  FrameVerdict& v = log_.At(out.packet_id);
  v.sent_reason = why;
  v.cause_id = cause;
  v.resent = resent;
  v.qpn = qp.qpn_;
  const FrameVerdict* c = args == nullptr ? log_.Find(cause) : nullptr;
  if (args != nullptr) {
    std::copy(args, args + 3, v.args);
  } else if (c != nullptr) {
    std::copy(std::begin(c->args), std::end(c->args), v.args);
  }
  if (qp.recorder_ != nullptr) {
    if (RecorderEvent* e = qp.recorder_->FindFrame(out.packet_id)) {
      e->reason = why;
      e->cause = cause;
      e->resent = resent;
    }
  }
}

void Rnic::MrArgs(uint64_t* args, uint32_t key, uint64_t va, uint64_t len,
                  AccessFlags need, PdHandle pd) const {
  args[0] = key;
  args[1] = va;
  args[2] = len;
  const MemoryRegion* mr = mrs_.Find(key);
  if (mr == nullptr) {
    args[3] = args[4] = 0;
    args[5] = PackMr(need, 0, false, HandleIndex(pd), 0);
    return;
  }
  args[3] = mr->iova();
  args[4] = mr->length();
  args[5] =
      PackMr(need, mr->access(), true, HandleIndex(pd), HandleIndex(mr->pd()));
}

void Rnic::SgArgs(uint64_t* args, std::span<const Sge> sges, AccessFlags need,
                  PdHandle pd) const {
  for (const Sge& e : sges) {
    const MemoryRegion* mr = nullptr;
    if (mrs_.CheckLocal(e.lkey, pd, e.addr, e.length, need, &mr) !=
        MrStatus::kOk) {
      MrArgs(args, e.lkey, e.addr, e.length, need, pd);
      return;
    }
  }
  if (!sges.empty()) {
    MrArgs(args, sges[0].lkey, sges[0].addr, sges[0].length, need, pd);
  }
}

void Rnic::BadPkey(Qp& qp) {
  FrameVerdict& v = Verdict(&qp, DropReason::kBadPkey, VerdictAction::kDropped);
  v.args[0] = parsed_.hdr.bth.pkey;
  v.args[1] = qp.attr_.pkey_index;
  v.args[2] = pkeys_.Get(qp.attr_.pkey_index);
}

void Rnic::WrongState(Qp& qp) {
  FrameVerdict& v = Verdict(&qp, DropReason::kQpState, VerdictAction::kDropped);
  v.args[0] = static_cast<uint64_t>(qp.attr_.qp_state);
  v.args[1] = parsed_.hdr.bth.opcode;
}

void Rnic::ReceiveGsi(TimeNs now) {
  // QP1 counts its drops in the device counters; which one moved names
  // the reason (MADs are few: the comparison costs nothing that matters).
  const DeviceCounters before = counters_;
  gsi_->Receive(parsed_, now);
  auto moved = [&](uint64_t DeviceCounters::*f) {
    return counters_.*f != before.*f;
  };
  if (moved(&DeviceCounters::mad_rx_drop_pkey)) {
    Verdict(nullptr, DropReason::kBadPkey, VerdictAction::kDropped).args[0] =
        parsed_.hdr.bth.pkey;
  } else if (moved(&DeviceCounters::mad_rx_drop_qkey)) {
    Verdict(nullptr, DropReason::kBadQkey, VerdictAction::kDropped).args[0] =
        parsed_.hdr.deth.qkey;
  } else if (moved(&DeviceCounters::mad_rx_drop_malformed)) {
    Drop(DropReason::kMadMalformed);
  } else if (moved(&DeviceCounters::mad_rx_drop_bad_version)) {
    Drop(DropReason::kMadBadVersion);
  } else if (moved(&DeviceCounters::mad_rx_drop_unsupported)) {
    Drop(DropReason::kMadUnsupported);
  }
}

DropReason Rnic::FailReceiveScatter(Qp& qp, MrStatus ms,
                                    std::span<const Sge> sges,
                                    WorkCompletion* wc) {
  CountMrFault(ms);
  wc->status = LocalWcStatus(ms);
  const DropReason why = LocalReason(ms);
  FrameVerdict& v = Verdict(&qp, why, VerdictAction::kFailedWr);
  if (why == DropReason::kRecvTooShort) {
    v.args[0] = wc->byte_len;
    v.args[1] = SgRemaining(sges, SgCursor{});
    v.args[2] = 1;  // one packet
  } else {
    SgArgs(v.args, sges, access::kLocalWrite, qp.pd());
  }
  return why;
}

}  // namespace rocemu::nic
