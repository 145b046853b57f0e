#include "nic/responder.h"

#include <algorithm>
#include <cstring>

#include "nic/psn.h"
#include "nic/request_execution.h"
#include "nic/response_queue.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {

namespace {

using protocol::Aeth;
using protocol::NakCode;
using protocol::Opcode;
using protocol::Operation;
using Kind = ResponseItem::Kind;

constexpr uint32_t kGrhLen = 40;
constexpr uint8_t kRoceV2Ipv6PacketType = 0x9;
constexpr uint8_t kRoceV2Ipv4PacketType = 0xA;

// A duplicate no responder resource can answer is dropped.
void Unmatched(Rnic& nic, Qp& qp, uint32_t psn) {
  ++qp.counters_.rx_dropped;
  FrameVerdict& v = nic.Verdict(&qp, DropReason::kDuplicateUnmatched,
                                VerdictAction::kDropped);
  v.args[0] = psn;
  v.args[1] = qp.resp_.epsn;
}

void Answered(Rnic& nic, Qp& qp, uint32_t psn) {
  FrameVerdict& v =
      nic.Verdict(&qp, DropReason::kDuplicate, VerdictAction::kAnswered);
  v.args[0] = psn;
  v.args[1] = qp.resp_.epsn;
}

// A request whose PSN is before the expected one (IBTA 9.9.2.2).
void Duplicate(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  ResponderState& r = qp.resp_;
  const uint32_t psn = pkt.hdr.bth.psn;
  ++qp.counters_.duplicate_request;
  switch (pkt.op->operation) {
    case Operation::kSend:
    case Operation::kWrite:
      // Already executed: acknowledge again, up to what we have.
      Answered(nic, qp, psn);
      QueueAck(nic, qp, PsnAdd(r.epsn, kPsnMask), DropReason::kDuplicate);
      return;
    case Operation::kReadRequest: {
      for (const ResponderResource& res : qp.resources_) {
        if (!res.valid || res.atomic || res.empty_read ||
            !PsnLessEq(res.first_psn, psn) || !PsnLessEq(psn, res.last_psn)) {
          continue;
        }
        // Re-execute from the duplicate's own RETH (the requester may ask
        // for the tail of the original READ only).
        const protocol::Reth& reth = pkt.hdr.reth;
        const MemoryRegion* mr = nullptr;
        if (nic.mrs().CheckRemote(reth.rkey, qp.pd(), qp.qpn(), reth.va,
                                  reth.dma_len, access::kRemoteRead,
                                  &mr) != MrStatus::kOk) {
          Unmatched(nic, qp, psn);
          return;
        }
        Answered(nic, qp, psn);
        QueueReadResponse(nic, qp, reth, psn, res.msn, DropReason::kDuplicate);
        return;
      }
      Unmatched(nic, qp, psn);
      return;
    }
    case Operation::kCompareSwap:
    case Operation::kFetchAdd:
      for (const ResponderResource& res : qp.resources_) {
        if (res.valid && res.atomic && res.first_psn == psn) {
          // Replay the saved result; executing again would apply it twice.
          Answered(nic, qp, psn);
          QueueAtomicAck(nic, qp, psn, res.msn, res.atomic_orig,
                         DropReason::kDuplicate);
          return;
        }
      }
      Unmatched(nic, qp, psn);
      return;
    case Operation::kAtomicWrite:
    case Operation::kFlush:
      for (const ResponderResource& res : qp.resources_) {
        if (res.valid && res.empty_read && res.first_psn == psn) {
          // Answer again; storing again could undo a later WRITE.
          Answered(nic, qp, psn);
          QueueReadResponse(
              nic, qp, protocol::Reth{pkt.hdr.reth.va, pkt.hdr.reth.rkey, 0},
              psn, res.msn, DropReason::kDuplicate);
          return;
        }
      }
      Unmatched(nic, qp, psn);
      return;
    default:
      Unmatched(nic, qp, psn);
      return;
  }
}

void ReceiveRc(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  ResponderState& r = qp.resp_;
  // Room for a response and a NAK; otherwise drop and let the requester
  // retransmit (the responder never blocks).
  if (ResponseQueueFree(qp) < 2) {
    ++qp.counters_.rx_dropped;
    nic.Verdict(&qp, DropReason::kRespQueueFull, VerdictAction::kDropped);
    return;
  }
  const int32_t d = PsnDiff(pkt.hdr.bth.psn, r.epsn);
  if (d > 0) {
    ++qp.counters_.out_of_sequence;
    FrameVerdict& v = nic.Verdict(
        &qp, DropReason::kPsnSequence,
        r.nak_sent ? VerdictAction::kDropped : VerdictAction::kNaked);
    v.args[0] = r.epsn;
    v.args[1] = pkt.hdr.bth.psn;
    if (!r.nak_sent) {
      QueueNak(nic, qp, Aeth::Nak(NakCode::kPsnSequenceError), r.epsn,
               DropReason::kPsnSequence, nic.rx_packet_id());
      r.nak_sent = true;
    }
    return;
  }
  if (d < 0) {
    Duplicate(nic, qp, pkt);
    return;
  }
  ExecuteRequest(nic, qp, pkt, /*reliable=*/true);
}

// XRC TGT (annex A14): RC's responder, on behalf of the XRC SRQ the
// request's XRCETH names. The TGT QP is bound to it for this request: its
// PD checks the keys, its receive WQEs take SENDs, its CQ their
// completions. An SRQ of no or another domain leaves the QP unbound, and
// a new request is then NAKed (ExecuteRequest).
void ReceiveXrcTgt(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  QpInitAttr& init = qp.init_;
  const SharedReceiveQueue* srq = nic.FindXrcSrq(pkt.hdr.xrceth.srqn);
  if (srq != nullptr && srq->xrcd() == init.xrcd) {
    qp.pd_ = srq->pd();
    init.has_srq = true;
    init.srq = srq->handle();
    init.recv_cq = srq->cq();
  } else {
    qp.pd_ = kInvalidHandle;
    init.has_srq = false;
    init.srq = kInvalidHandle;
    init.recv_cq = kInvalidHandle;
  }
  ReceiveRc(nic, qp, pkt);
}

void ReceiveUc(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  const uint32_t psn = pkt.hdr.bth.psn;
  if (psn != r.epsn || r.uc_drop) {
    if (psn != r.epsn) {
      ++qp.counters_.out_of_sequence;
      FrameVerdict& v = nic.Verdict(
          &qp, DropReason::kPsnSequence,
          op.IsFirst() ? VerdictAction::kAccepted : VerdictAction::kDropped);
      v.args[0] = r.epsn;
      v.args[1] = psn;
    }
    // A loss costs the message it hit: abandon it and resynchronise on the
    // next FIRST/ONLY (the receive WQE, if any, is reused).
    r.in_progress = Operation::kNone;
    r.recv_offset = 0;
    if (!op.IsFirst()) {
      if (psn == r.epsn) {
        nic.Verdict(&qp, DropReason::kUcDropped, VerdictAction::kDropped);
      }
      r.uc_drop = true;
      r.epsn = PsnAdd(psn, 1);
      ++qp.counters_.rx_dropped;
      return;
    }
    r.uc_drop = false;
    r.epsn = psn;
  }
  if (op.IsFirst() && r.in_progress != Operation::kNone) {
    // The previous message lost its LAST.
    r.in_progress = Operation::kNone;
    r.recv_offset = 0;
  }
  ExecuteRequest(nic, qp, pkt, /*reliable=*/false);
  if (r.uc_drop) r.epsn = PsnAdd(psn, 1);
}

void ReceiveUd(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
               std::span<const uint8_t> raw) {
  if (pkt.hdr.deth.qkey != qp.attr().qkey) {
    ++nic.engine_counters().qkey_viol_cntr;
    ++qp.counters_.rx_dropped;
    FrameVerdict& v =
        nic.Verdict(&qp, DropReason::kBadQkey, VerdictAction::kDropped);
    v.args[0] = pkt.hdr.deth.qkey;
    v.args[1] = qp.attr().qkey;
    return;
  }
  // A UD message is one packet: the WQE is consumed here, never held.
  if (!nic.PopRecvWqe(qp)) {
    ++qp.counters_.out_of_buffer;
    FrameVerdict& v =
        nic.Verdict(&qp, DropReason::kRnr, VerdictAction::kDropped);
    v.args[0] = pkt.hdr.bth.psn;
    return;
  }
  const PostedRecvWr& wqe = qp.resp_.rwqe;
  // The GRH area: IPv6 puts its 40-byte header there, IPv4 its 20-byte
  // header in the last 20 bytes (rxe, ConnectX).
  uint8_t grh[kGrhLen] = {};
  if (pkt.net.ipv6) {
    std::memcpy(grh, raw.data() + pkt.l3_offset, kGrhLen);
  } else {
    std::memcpy(grh + 20, raw.data() + pkt.l3_offset, 20);
  }
  WorkCompletion wc;
  wc.wr_id = wqe.wr_id;
  wc.qp_num = qp.qpn();
  wc.opcode = WcOpcode::kRecv;
  wc.src_qp = pkt.hdr.deth.src_qp;
  wc.pkey_index = qp.attr().pkey_index;
  // RoCE has no SL: ConnectX reports the packet's type there (bit 3: UDP,
  // i.e. RoCE v2; bits 2:0: 1 IPv6, 2 IPv4), and programs read it to find
  // the destination address in the GRH area (UCX's UD drops a packet whose
  // address it cannot find).
  wc.sl = pkt.net.ipv6 ? kRoceV2Ipv6PacketType : kRoceV2Ipv4PacketType;
  wc.wc_flags = wc_flags::kGrh;
  wc.byte_len = static_cast<uint32_t>(kGrhLen + pkt.payload.size());
  if (pkt.op->HasImmediate()) {
    wc.wc_flags |= wc_flags::kWithImm;
    wc.imm_data = pkt.hdr.imm;
  }
  const auto sges = wqe.sg_list.span();
  SgCursor cur;
  MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, grh);
  if (ms == MrStatus::kOk) {
    ms = Scatter(nic.mrs(), qp.pd(), sges, cur, pkt.payload);
  }
  const DropReason why = ms == MrStatus::kOk
                             ? DropReason::kNone
                             : nic.FailReceiveScatter(qp, ms, sges, &wc);
  qp.counters_.rcvd_bytes += pkt.payload.size();
  nic.CompleteRecv(qp, wc, pkt.hdr.bth.se, why, nic.rx_packet_id());
}

}  // namespace

void Responder::Receive(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                        std::span<const uint8_t> raw, TimeNs /*now*/) {
  switch (qp.type()) {
    case QpType::kRc:
      ReceiveRc(nic, qp, pkt);
      return;
    case QpType::kUc:
      ReceiveUc(nic, qp, pkt);
      return;
    case QpType::kUd:
      ReceiveUd(nic, qp, pkt, raw);
      return;
    case QpType::kXrcTgt:
      ReceiveXrcTgt(nic, qp, pkt);
      return;
    case QpType::kXrcIni:
      return;                 // takes no request (Rnic::Deliver drops them)
    case QpType::kRawPacket:  // no RoCE opcode is of this service
      return;
  }
}

bool Responder::BuildNext(Rnic& nic, Qp& qp, TxFrame& out) {
  ResponderState& r = qp.resp_;
  ResponseItem& it = qp.resp_queue_.at(r.resp_head);
  protocol::TransportHeaders h;
  const protocol::NetHeaderTemplate& net = nic.ConnectedHeaders(qp);
  h.bth.pkey = nic.pkey_table().Get(qp.attr().pkey_index);
  h.bth.dest_qp = qp.attr().dest_qp_num;
  h.aeth.msn = it.msn;
  h.aeth.syndrome = Aeth::Ack(protocol::kAethCreditInvalid);
  uint32_t payload_len = 0;
  const MemoryRegion* mr = nullptr;
  bool done = true;
  // XRC responses are RC's opcodes + 0xA0.
  const uint8_t service =
      qp.type() == QpType::kXrcTgt ? Opcode::kXrcSendFirst : 0;
  // The region may have gone since the request was checked, or the pages
  // of its process: NAK this response's PSN.
  auto fail_read = [&](MrStatus ms, uint64_t va) {
    nic.CountMrFault(ms);
    ++nic.engine_counters().resp_remote_access_errors;
    ++r.resp_head;
    const DropReason why = RemoteReason(ms);
    FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kNaked);
    nic.MrArgs(v.args, it.rkey, va, payload_len, access::kRemoteRead, it.pd);
    QueueNak(nic, qp, Aeth::Nak(NakCode::kRemoteAccessError), h.bth.psn, why,
             it.cause_id);
  };
  switch (it.kind) {
    case Kind::kAck:
      h.bth.opcode = service + Opcode::kRcAcknowledge;
      h.bth.psn = it.psn;
      h.aeth.syndrome = it.syndrome;
      break;
    case Kind::kAtomicAck:
      h.bth.opcode = service + Opcode::kRcAtomicAcknowledge;
      h.bth.psn = it.psn;
      h.atomic_ack.orig = it.atomic_orig;
      break;
    case Kind::kReadResponse: {
      const uint32_t mtu = qp.mtu();
      const uint64_t offset = static_cast<uint64_t>(it.next_pkt) * mtu;
      payload_len =
          static_cast<uint32_t>(std::min<uint64_t>(mtu, it.length - offset));
      const bool first = it.next_pkt == 0;
      const bool last = it.next_pkt + 1 >= it.npkts;
      h.bth.opcode = service + (first && last ? Opcode::kRcRdmaReadResponseOnly
                                : first       ? Opcode::kRcRdmaReadResponseFirst
                                : last        ? Opcode::kRcRdmaReadResponseLast
                                       : Opcode::kRcRdmaReadResponseMiddle);
      h.bth.psn = PsnAdd(it.psn, it.next_pkt);
      if (payload_len > 0) {
        const MrStatus ms =
            nic.mrs().CheckRemote(it.rkey, it.pd, qp.qpn(), it.va + offset,
                                  payload_len, access::kRemoteRead, &mr);
        if (ms != MrStatus::kOk) {
          fail_read(ms, it.va + offset);
          return false;
        }
      }
      done = last;
      break;
    }
  }
  protocol::RoceFrameWriter writer;
  if (writer.Begin(net, h, payload_len, {out.data, out.capacity}) !=
      protocol::BuildError::kOk) {
    ++nic.engine_counters().send_err;
    nic.Verdict(&qp, DropReason::kTxBuildFailed, VerdictAction::kDropped)
        .args[0] = out.capacity;
    return false;
  }
  if (payload_len > 0) {
    const uint64_t va = it.va + static_cast<uint64_t>(it.next_pkt) * qp.mtu();
    const MrStatus ms = mr->CopyOut(va, writer.payload());
    if (ms != MrStatus::kOk) {
      fail_read(ms, va);
      return false;
    }
  }
  out.len = static_cast<uint32_t>(writer.Finish());
  out.priority = qp.attr().ah_attr.sl & 7;
  nic.FrameBuilt(qp, out, h.bth.opcode, h.bth.psn);
  if (it.cause != DropReason::kNone) [[unlikely]] {
    nic.NoteSent(qp, out, it.cause, it.cause_id, false, nullptr);
  }
  ++qp.counters_.sent_pkts;
  qp.counters_.sent_bytes += payload_len;
  if (it.kind == Kind::kAck && (it.syndrome >> 5) == 0) {
    ++qp.counters_.acks_sent;
  }
  if (done) {
    ++r.resp_head;
  } else {
    ++it.next_pkt;
  }
  return true;
}

}  // namespace rocemu::nic
