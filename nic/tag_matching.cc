#include "nic/tag_matching.h"

#include <limits>

#include "nic/psn.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {
namespace {

using protocol::TmhOp;

// The FIN's WQE names no rendezvous: its slot is free once it is posted.
constexpr uint64_t kFinWrId = std::numeric_limits<uint64_t>::max();

WorkCompletion TaggedWc(const Qp& qp, uint64_t wr_id, uint32_t flags,
                        uint32_t byte_len) {
  WorkCompletion wc;
  wc.wr_id = wr_id;
  wc.opcode = WcOpcode::kTmRecv;
  wc.wc_flags = flags;
  wc.byte_len = byte_len;
  wc.qp_num = qp.qpn();
  wc.src_qp = qp.attr().dest_qp_num;
  wc.pkey_index = qp.attr().pkey_index;
  wc.tagged = true;
  return wc;
}

// An SRQ WQE for a message the list does not take (resp_.rwqe).
bool TakeSrqWqe(Rnic& nic, Qp& qp) {
  ResponderState& r = qp.resp_;
  if (r.have_rwqe) return true;
  if (!nic.PopRecvWqe(qp)) return false;
  r.have_rwqe = true;
  r.recv_offset = 0;
  return true;
}

TmStart ToSrq(Rnic& nic, Qp& qp, TmKind kind) {
  if (!TakeSrqWqe(nic, qp)) return TmStart::kNotReady;
  qp.resp_.tm_kind = static_cast<uint8_t>(kind);
  return TmStart::kContinue;
}

// A matched rendezvous request: report the match, then READ the sender's
// buffer into the tagged one (or hand both headers to software when it
// cannot take the data).
void StartRendezvous(Rnic& nic, Qp& qp, const TaggedBuffer& b,
                     const protocol::Tmh& tmh, const protocol::Rvh& rvh,
                     std::span<const uint8_t> payload, TmRendezvous* slot) {
  WorkCompletion wc = TaggedWc(qp, b.recv_wr_id, wc_flags::kTmMatch, rvh.len);
  wc.tm_tag = tmh.tag;
  wc.tm_priv = tmh.app_ctx;
  if (slot == nullptr || !b.has_sge || b.sge.length < rvh.len) {
    // IBV_WC_TM_RNDV_INCOMPLETE: the TMH and RVH go to the buffer, as far
    // as it holds them, and software performs the transfer.
    const std::span<const uint8_t> hdrs =
        payload.first(protocol::kTmhLen + protocol::kRvhLen);
    const uint32_t n =
        b.has_sge ? std::min<uint32_t>(b.sge.length, hdrs.size()) : 0;
    if (n != 0) {
      Sge sge = b.sge;
      sge.length = n;
      SgCursor cur;
      (void)Scatter(nic.mrs(), qp.pd(), {&sge, 1}, cur, hdrs.first(n));
    }
    wc.status = WcStatus::kTmRndvIncomplete;
    wc.byte_len = n;
    nic.CompleteTagged(qp, wc);
    return;
  }
  nic.CompleteTagged(qp, wc);
  *slot = TmRendezvous{b.recv_wr_id, tmh, rvh, true};
  SendWr read;
  read.wr_id = static_cast<uint64_t>(slot - qp.tm_rndv_.data());
  read.opcode = WrOpcode::kRdmaRead;
  read.send_flags = send_flags::kSignaled | send_flags::kTmInternal;
  read.rdma = {rvh.va, rvh.rkey};
  Sge sge = b.sge;
  sge.length = rvh.len;
  read.sg_list = {sge};
  nic.PostInternal(qp, read);
}

TmRendezvous* FreeRendezvousSlot(Qp& qp) {
  for (TmRendezvous& s : qp.tm_rndv_) {
    if (!s.busy) return &s;
  }
  return nullptr;
}

}  // namespace

TmStart TmFirstPacket(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                      uint32_t* skip) {
  *skip = 0;
  SharedReceiveQueue* srq = nic.GetSrq(qp.init_attr().srq);
  TagList* list = srq != nullptr ? srq->tm() : nullptr;
  const std::optional<protocol::Tmh> tmh = protocol::ParseTmh(pkt.payload);
  if (list == nullptr || !tmh.has_value()) {
    return ToSrq(nic, qp, TmKind::kPlain);
  }
  switch (tmh->op) {
    case TmhOp::kNoTag:
      return ToSrq(nic, qp, TmKind::kNoTag);
    case TmhOp::kEager:
    case TmhOp::kRndv:
      break;
    default:  // a FIN, or an operation the list does not know
      return ToSrq(nic, qp, TmKind::kPlain);
  }
  // A rendezvous request fits one packet and max_rndv_hdr_size; one that
  // does not is the sender's error, left to software as unexpected.
  const bool rndv = tmh->op == TmhOp::kRndv;
  const std::optional<protocol::Rvh> rvh = protocol::ParseRvh(pkt.payload);
  const bool rndv_ok =
      rndv && pkt.op->IsFirst() && pkt.op->IsLast() && rvh.has_value() &&
      pkt.payload.size() <= nic.device_attr().tm_caps.max_rndv_hdr_size;
  TmRendezvous* slot = nullptr;
  if (rndv_ok) {
    // Room for its READ and FIN first: the match is not undone.
    slot = FreeRendezvousSlot(qp);
    if (slot == nullptr || qp.sq_outstanding() + 2 > qp.sq_.capacity()) {
      return TmStart::kNotReady;
    }
    // A QP that may not issue READs (max_rd_atomic 0) leaves the transfer
    // to software.
    if (qp.attr().max_rd_atomic == 0) slot = nullptr;
  }
  if ((rndv && !rndv_ok) || !list->HasMatch(tmh->tag)) {
    if (!TakeSrqWqe(nic, qp)) return TmStart::kNotReady;
    list->CountUnexpected();
    qp.resp_.tm_kind = static_cast<uint8_t>(TmKind::kUnexpected);
    return TmStart::kContinue;
  }
  TaggedBuffer b;
  list->Match(tmh->tag, &b);
  if (rndv) {
    StartRendezvous(nic, qp, b, *tmh, *rvh, pkt.payload, slot);
    return TmStart::kDone;
  }
  ResponderState& r = qp.resp_;
  const Sge* sge = b.has_sge ? &b.sge : nullptr;
  qp.TakeRecvWqe(PostedRecvWr{b.recv_wr_id, SgView(sge, b.has_sge ? 1 : 0)});
  r.have_rwqe = true;
  r.recv_offset = 0;
  r.tm_tag = tmh->tag;
  r.tm_priv = tmh->app_ctx;
  *skip = protocol::kTmhLen;
  if (pkt.op->IsLast()) {
    r.tm_kind = static_cast<uint8_t>(TmKind::kEager);
  } else {
    // The match is reported now; the data when the last packet lands.
    WorkCompletion wc = TaggedWc(qp, b.recv_wr_id, wc_flags::kTmMatch, 0);
    wc.tm_tag = tmh->tag;
    wc.tm_priv = tmh->app_ctx;
    nic.CompleteTagged(qp, wc);
    r.tm_kind = static_cast<uint8_t>(TmKind::kEagerLonger);
  }
  return TmStart::kContinue;
}

void TmDecorate(ResponderState& r, WorkCompletion* wc) {
  switch (static_cast<TmKind>(r.tm_kind)) {
    case TmKind::kNone:
    case TmKind::kPlain:
      break;
    case TmKind::kNoTag:
      wc->opcode = WcOpcode::kTmNoTag;
      break;
    case TmKind::kUnexpected:
      wc->opcode = WcOpcode::kTmRecv;
      break;
    case TmKind::kEager:
    case TmKind::kEagerLonger:
      wc->opcode = WcOpcode::kTmRecv;
      wc->tagged = true;
      if (wc->status == WcStatus::kSuccess) {
        wc->wc_flags |= wc_flags::kTmDataValid;
        if (static_cast<TmKind>(r.tm_kind) == TmKind::kEager) {
          wc->wc_flags |= wc_flags::kTmMatch;
          wc->tm_tag = r.tm_tag;
          wc->tm_priv = r.tm_priv;
        }
      }
      break;
  }
  r.tm_kind = static_cast<uint8_t>(TmKind::kNone);
}

void TmInternalDone(Rnic& nic, Qp& qp, const SendWqe& w, WcStatus status) {
  if (w.wr.wr_id >= qp.tm_rndv_.size()) return;  // a FIN
  TmRendezvous& s = qp.tm_rndv_[w.wr.wr_id];
  if (!s.busy) return;
  s.busy = false;
  WorkCompletion wc = TaggedWc(qp, s.recv_wr_id, 0, s.rvh.len);
  wc.status = status;
  if (status != WcStatus::kSuccess) {
    nic.CompleteTagged(qp, wc);
    return;
  }
  wc.wc_flags = wc_flags::kTmDataValid;
  nic.CompleteTagged(qp, wc);
  // The FIN: the request's TMH and RVH, operation FIN. It may be refused
  // only if the QP left RTS meanwhile, which flushes it anyway.
  protocol::Tmh tmh = s.tmh;
  tmh.op = TmhOp::kFin;
  SendWr send;
  protocol::WriteTmhRvh(tmh, s.rvh, send.inline_data.data());
  send.inline_data.set_size(protocol::kTmhLen + protocol::kRvhLen);
  send.wr_id = kFinWrId;
  send.opcode = WrOpcode::kSend;
  send.send_flags = send_flags::kInline | send_flags::kTmInternal;
  nic.PostInternal(qp, send);
}

}  // namespace rocemu::nic
