#include "nic/responder.h"

#include <algorithm>
#include <cstring>

#include "nic/psn.h"
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

uint32_t QueueFree(const Qp& qp) {
  return qp.resp_queue_.capacity() -
         static_cast<uint32_t>(qp.resp_.resp_tail - qp.resp_.resp_head);
}

ResponseItem& PushItem(Qp& qp) {
  ResponseItem& it = qp.resp_queue_.at(qp.resp_.resp_tail++);
  it = ResponseItem{};
  return it;
}

// Coalesces with a queued, not yet sent ACK: a later ACK covers it.
void QueueAck(Rnic& nic, Qp& qp, uint32_t psn) {
  ResponderState& r = qp.resp_;
  if (r.resp_tail != r.resp_head) {
    ResponseItem& tail = qp.resp_queue_.at(r.resp_tail - 1);
    if (tail.kind == Kind::kAck &&
        tail.syndrome == Aeth::Ack(protocol::kAethCreditInvalid) &&
        (r.resp_tail - 1 != r.resp_head || tail.next_pkt == 0)) {
      tail.psn = psn;
      tail.msn = r.msn;
      ++qp.counters_.ack_deferred;
      return;
    }
  }
  ResponseItem& it = PushItem(qp);
  it.kind = Kind::kAck;
  it.syndrome = Aeth::Ack(protocol::kAethCreditInvalid);
  it.psn = psn;
  it.msn = r.msn;
  nic.Schedule(qp);
}

void QueueNak(Rnic& nic, Qp& qp, uint8_t syndrome, uint32_t psn) {
  ResponseItem& it = PushItem(qp);
  it.kind = Kind::kAck;
  it.syndrome = syndrome;
  it.psn = psn;
  it.msn = qp.resp_.msn;
  if ((syndrome >> 5) == 1) {
    ++qp.counters_.rnr_naks_sent;
  } else {
    ++qp.counters_.naks_sent;
  }
  nic.Schedule(qp);
}

// Class C/A errors (IBTA 9.9.3): NAK the request and take the responder's QP
// to ERR once the NAK is out; the receive WQE in use completes in error.
void FatalNak(Rnic& nic, Qp& qp, NakCode code, uint32_t psn,
              WcStatus rwqe_status) {
  ResponderState& r = qp.resp_;
  QueueNak(nic, qp, Aeth::Nak(code), psn);
  if (code == NakCode::kRemoteAccessError) {
    ++nic.engine_counters().resp_remote_access_errors;
  }
  if (r.have_rwqe) {
    WorkCompletion wc;
    wc.wr_id = r.rwqe.wr_id;
    wc.status = rwqe_status;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qp.qpn();
    nic.CompleteRecv(qp, wc, false);
    r.have_rwqe = false;
  }
  r.in_progress = Operation::kNone;
  r.goto_error = true;
  // The responder's own affiliated error (IBTA 11.6.3.1, as mlx5 raises
  // it): invalid request, local access violation, or catastrophic.
  nic.MoveToError(
      qp, code == NakCode::kInvalidRequest      ? AsyncEventType::kQpReqErr
          : code == NakCode::kRemoteAccessError ? AsyncEventType::kQpAccessErr
                                                : AsyncEventType::kQpFatal);
}

// A READ or atomic request: its R_Key must cover [va, va + len) with `need`
// and the QP must have responder resources (max_dest_rd_atomic > 0), else a
// fatal NAK. *mr is the region (none for a zero-length READ).
bool AdmitReadOrAtomic(Rnic& nic, Qp& qp, uint32_t psn, uint32_t rkey,
                       uint64_t va, uint64_t len, AccessFlags need,
                       const MemoryRegion** mr) {
  const MrStatus ms =
      nic.mrs().CheckRemote(rkey, qp.pd(), qp.qpn(), va, len, need, mr);
  if (ms != MrStatus::kOk) {
    FatalNak(nic, qp, RemoteNakCode(ms), psn, WcStatus::kRemAccessErr);
    return false;
  }
  if (qp.resources_.empty()) {
    FatalNak(nic, qp, NakCode::kInvalidRequest, psn, WcStatus::kRemInvReqErr);
    return false;
  }
  return true;
}

// The responder resource a new READ or atomic takes (the oldest is reused:
// the ring holds the last max_dest_rd_atomic of them for duplicates).
ResponderResource& TakeResource(Qp& qp) {
  ResponderState& r = qp.resp_;
  ResponderResource& res = qp.resources_[r.res_next];
  r.res_next = (r.res_next + 1) % qp.resources_.size();
  r.msn = PsnAdd(r.msn, 1);
  return res;
}

uint32_t Npkts(uint64_t len, uint32_t mtu) {
  return len == 0 ? 1 : static_cast<uint32_t>((len + mtu - 1) / mtu);
}

bool AcquireRwqe(Rnic& nic, Qp& qp) {
  ResponderState& r = qp.resp_;
  if (!r.have_rwqe) {
    if (!nic.PopRecvWqe(qp)) return false;
    r.have_rwqe = true;
    r.recv_offset = 0;
  }
  return true;
}

// Completes the receive WQE of a SEND or WRITE with immediate.
void CompleteRwqe(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                  WcOpcode opcode, uint32_t byte_len) {
  ResponderState& r = qp.resp_;
  WorkCompletion wc;
  wc.wr_id = r.rwqe.wr_id;
  wc.status = WcStatus::kSuccess;
  wc.opcode = opcode;
  wc.byte_len = byte_len;
  wc.qp_num = qp.qpn();
  wc.src_qp = qp.attr().dest_qp_num;
  wc.pkey_index = qp.attr().pkey_index;
  wc.sl = pkt.net.has_vlan ? pkt.net.vlan.pcp : 0;
  if (pkt.op->HasImmediate()) {
    wc.wc_flags |= wc_flags::kWithImm;
    wc.imm_data = pkt.hdr.imm;
  }
  if (pkt.op->HasInvalidate()) {
    wc.wc_flags |= wc_flags::kWithInv;
    wc.invalidated_rkey = pkt.hdr.ieth_rkey;
  }
  r.have_rwqe = false;
  nic.CompleteRecv(qp, wc, pkt.hdr.bth.se);
}

// Payload size rules of a multi-packet message: FIRST and MIDDLE carry
// exactly one MTU, LAST 1..MTU, ONLY 0..MTU.
bool PayloadSizeOk(const protocol::OpcodeInfo& op, size_t len, uint32_t mtu) {
  switch (op.position) {
    case protocol::OpPosition::kFirst:
    case protocol::OpPosition::kMiddle:
      return len == mtu;
    case protocol::OpPosition::kLast:
      return len >= 1 && len <= mtu;
    default:
      return len <= mtu;
  }
}

// Executes a new (in-sequence) RC or UC request. For UC `reliable` is false:
// failures drop the message silently (counted) instead of NAKing.
void Execute(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
             bool reliable) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  const uint32_t psn = pkt.hdr.bth.psn;
  const uint32_t mtu = qp.mtu();
  auto drop_uc = [&] {
    ++qp.counters_.rx_dropped;
    r.in_progress = Operation::kNone;
    r.uc_drop = true;
    r.recv_offset = 0;
  };
  // A request that cannot be executed: UC drops the rest of the message
  // (counted), RC NAKs it and takes the QP to ERR with `status`.
  auto reject = [&](NakCode nak, WcStatus status) {
    if (reliable) {
      FatalNak(nic, qp, nak, psn, status);
    } else {
      drop_uc();
    }
  };
  // No receive WQE for a SEND or a WRITE with immediate: RC answers
  // receiver-not-ready with our RNR timer (the requester resends this PSN
  // later; silence until then, as after a sequence NAK); UC drops.
  auto not_ready = [&] {
    if (!reliable) {
      ++qp.counters_.out_of_buffer;
      drop_uc();
      return;
    }
    ++qp.counters_.send_rnr_err;
    QueueNak(nic, qp, Aeth::RnrNak(qp.attr().min_rnr_timer), psn);
    r.nak_sent = true;
  };

  // Opcode sequence (IBTA 9.7.5.1.2 / C9-30): a FIRST/ONLY may not arrive
  // inside a message, nor MIDDLE/LAST (or another operation) outside one.
  const bool in_msg = r.in_progress != Operation::kNone;
  if ((in_msg && (op.IsFirst() || op.operation != r.in_progress)) ||
      (!in_msg && !op.IsFirst())) {
    reject(NakCode::kInvalidRequest, WcStatus::kRemInvReqErr);
    return;
  }
  // QP-level rights (ibv_qp_attr.qp_access_flags).
  AccessFlags need = 0;
  switch (op.operation) {
    case Operation::kWrite:
      need = access::kRemoteWrite;
      break;
    case Operation::kReadRequest:
      need = access::kRemoteRead;
      break;
    case Operation::kCompareSwap:
    case Operation::kFetchAdd:
      need = access::kRemoteAtomic;
      break;
    default:
      break;
  }
  if (need != 0 && (qp.attr().qp_access_flags & need) == 0) {
    reject(NakCode::kInvalidRequest, WcStatus::kRemInvReqErr);
    return;
  }
  if (op.payload && !PayloadSizeOk(op, pkt.payload.size(), mtu)) {
    reject(NakCode::kInvalidRequest, WcStatus::kLocLenErr);
    return;
  }

  switch (op.operation) {
    case Operation::kSend: {
      if (!AcquireRwqe(nic, qp)) {
        not_ready();
        return;
      }
      const auto sges = r.rwqe.sg_list.span();
      SgCursor cur = SeekSg(sges, r.recv_offset);
      const MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, pkt.payload);
      if (ms != MrStatus::kOk) {
        nic.CountMrFault(ms);
        if (ms == MrStatus::kLengthExceeded) {
          reject(NakCode::kInvalidRequest, WcStatus::kLocLenErr);
        } else {
          reject(NakCode::kRemoteOperationalError, WcStatus::kLocProtErr);
        }
        return;
      }
      r.recv_offset += pkt.payload.size();
      if (op.HasInvalidate() &&
          nic.mrs().Invalidate(pkt.hdr.ieth_rkey, qp.pd(), qp.qpn()) !=
              MrStatus::kOk) {
        // IBTA class J (rxe: RESPST_ERR_INVALIDATE_RKEY): an R_Key that is
        // unknown, of another PD or not invalidatable fails the receive WQE
        // with an invalid-request status and takes the QP to ERR; the NAK
        // tells the requester instead of leaving it to time out.
        FatalNak(nic, qp, NakCode::kInvalidRequest, psn,
                 WcStatus::kRemInvReqErr);
        return;
      }
      if (op.IsLast()) {
        CompleteRwqe(nic, qp, pkt, WcOpcode::kRecv,
                     static_cast<uint32_t>(r.recv_offset));
        r.recv_offset = 0;
        r.in_progress = Operation::kNone;
        r.msn = PsnAdd(r.msn, 1);
      } else {
        r.in_progress = Operation::kSend;
      }
      break;
    }
    case Operation::kWrite: {
      if (op.IsFirst()) {
        r.write_rkey = pkt.hdr.reth.rkey;
        r.write_va = pkt.hdr.reth.va;
        r.write_remaining = pkt.hdr.reth.dma_len;
        r.write_length = pkt.hdr.reth.dma_len;
        const MemoryRegion* mr = nullptr;
        const MrStatus ms =
            nic.mrs().CheckRemote(r.write_rkey, qp.pd(), qp.qpn(), r.write_va,
                                  r.write_remaining, access::kRemoteWrite, &mr);
        if (ms != MrStatus::kOk) {
          reject(RemoteNakCode(ms), WcStatus::kRemAccessErr);
          return;
        }
      }
      const size_t len = pkt.payload.size();
      if (len > r.write_remaining ||
          (op.IsLast() && len != r.write_remaining)) {
        reject(NakCode::kInvalidRequest, WcStatus::kRemInvReqErr);
        return;
      }
      if (op.HasImmediate() && !AcquireRwqe(nic, qp)) {
        not_ready();
        return;
      }
      if (len > 0) {
        // Re-checked per packet: the region may be deregistered mid-message.
        const MemoryRegion* mr = nullptr;
        const MrStatus ms =
            nic.mrs().CheckRemote(r.write_rkey, qp.pd(), qp.qpn(), r.write_va,
                                  len, access::kRemoteWrite, &mr);
        if (ms != MrStatus::kOk) {
          reject(RemoteNakCode(ms), WcStatus::kRemAccessErr);
          return;
        }
        const MrStatus copied = mr->CopyIn(r.write_va, pkt.payload);
        if (copied != MrStatus::kOk) {
          nic.CountMrFault(copied);
          reject(RemoteNakCode(copied), WcStatus::kRemAccessErr);
          return;
        }
      }
      r.write_va += len;
      r.write_remaining -= len;
      if (op.IsLast()) {
        r.in_progress = Operation::kNone;
        r.msn = PsnAdd(r.msn, 1);
        if (op.HasImmediate()) {
          CompleteRwqe(nic, qp, pkt, WcOpcode::kRecvRdmaWithImm,
                       static_cast<uint32_t>(r.write_length));
        }
      } else {
        r.in_progress = Operation::kWrite;
      }
      break;
    }
    case Operation::kReadRequest: {
      const protocol::Reth& reth = pkt.hdr.reth;
      const MemoryRegion* mr = nullptr;
      if (!AdmitReadOrAtomic(nic, qp, psn, reth.rkey, reth.va, reth.dma_len,
                             access::kRemoteRead, &mr)) {
        return;
      }
      const uint32_t n = Npkts(reth.dma_len, mtu);
      // Taking the resource advances the MSN the resource records.
      ResponderResource& res = TakeResource(qp);
      res = ResponderResource{true, false, psn, PsnAdd(psn, n - 1), 0, r.msn};
      ResponseItem& it = PushItem(qp);
      it.kind = Kind::kReadResponse;
      it.psn = psn;
      it.msn = r.msn;
      it.rkey = reth.rkey;
      it.va = reth.va;
      it.length = reth.dma_len;
      it.npkts = n;
      r.epsn = PsnAdd(psn, n);
      r.nak_sent = false;
      ++nic.engine_counters().rx_read_requests;
      nic.Schedule(qp);
      return;  // epsn already advanced past the response PSNs
    }
    case Operation::kCompareSwap:
    case Operation::kFetchAdd: {
      const protocol::AtomicEth& a = pkt.hdr.atomic;
      const MemoryRegion* mr = nullptr;
      if (!AdmitReadOrAtomic(nic, qp, psn, a.rkey, a.va, 8,
                             access::kRemoteAtomic, &mr)) {
        return;
      }
      // Read-modify-write. One polling thread executes every atomic of this
      // RNIC, so it is atomic with respect to the RNIC's other atomics
      // (IBV_ATOMIC_HCA), not to the CPU: for a process region the load
      // and the store are two process_vm calls, and the application's own
      // stores in between are not seen (as with any HCA-atomic device).
      uint64_t orig = 0;
      MrStatus am = mr->Load64(a.va, &orig);
      if (am == MrStatus::kOk) {
        if (op.operation == Operation::kCompareSwap) {
          if (orig == a.compare) am = mr->Store64(a.va, a.swap_add);
        } else {
          am = mr->Store64(a.va, orig + a.swap_add);
        }
      }
      if (am != MrStatus::kOk) {
        nic.CountMrFault(am);
        FatalNak(nic, qp, RemoteNakCode(am), psn, WcStatus::kRemAccessErr);
        return;
      }
      ResponderResource& res = TakeResource(qp);
      res = ResponderResource{true, true, psn, psn, orig, r.msn};
      ResponseItem& it = PushItem(qp);
      it.kind = Kind::kAtomicAck;
      it.psn = psn;
      it.msn = r.msn;
      it.atomic_orig = orig;
      r.epsn = PsnAdd(psn, 1);
      r.nak_sent = false;
      ++nic.engine_counters().rx_atomic_requests;
      nic.Schedule(qp);
      return;
    }
    default:
      break;
  }
  ++qp.counters_.rcvd_pkts;
  qp.counters_.rcvd_bytes += pkt.payload.size();
  // mlx5 counts requests (messages), not packets.
  if (op.operation == Operation::kWrite && op.IsFirst()) {
    ++nic.engine_counters().rx_write_requests;
  }
  r.epsn = PsnAdd(psn, 1);
  r.nak_sent = false;
  // A completion that took the QP to ERR (CQ overflow) is not acknowledged:
  // the requester must not count the message as delivered.
  if (reliable && pkt.hdr.bth.ack_req && qp.attr().qp_state != QpState::kErr) {
    QueueAck(nic, qp, psn);
  }
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
      QueueAck(nic, qp, PsnAdd(r.epsn, kPsnMask));
      return;
    case Operation::kReadRequest: {
      for (const ResponderResource& res : qp.resources_) {
        if (!res.valid || res.atomic || !PsnLessEq(res.first_psn, psn) ||
            !PsnLessEq(psn, res.last_psn)) {
          continue;
        }
        // Re-execute from the duplicate's own RETH (the requester may ask
        // for the tail of the original READ only).
        const protocol::Reth& reth = pkt.hdr.reth;
        const MemoryRegion* mr = nullptr;
        if (nic.mrs().CheckRemote(reth.rkey, qp.pd(), qp.qpn(), reth.va,
                                  reth.dma_len, access::kRemoteRead,
                                  &mr) != MrStatus::kOk) {
          ++qp.counters_.rx_dropped;
          return;
        }
        ResponseItem& it = PushItem(qp);
        it.kind = Kind::kReadResponse;
        it.psn = psn;
        it.msn = res.msn;
        it.rkey = reth.rkey;
        it.va = reth.va;
        it.length = reth.dma_len;
        it.npkts = Npkts(reth.dma_len, qp.mtu());
        nic.Schedule(qp);
        return;
      }
      ++qp.counters_.rx_dropped;
      return;
    }
    case Operation::kCompareSwap:
    case Operation::kFetchAdd:
      for (const ResponderResource& res : qp.resources_) {
        if (res.valid && res.atomic && res.first_psn == psn) {
          // Replay the saved result; executing again would apply it twice.
          ResponseItem& it = PushItem(qp);
          it.kind = Kind::kAtomicAck;
          it.psn = psn;
          it.msn = res.msn;
          it.atomic_orig = res.atomic_orig;
          nic.Schedule(qp);
          return;
        }
      }
      ++qp.counters_.rx_dropped;
      return;
    default:
      ++qp.counters_.rx_dropped;
      return;
  }
}

void ReceiveRc(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  ResponderState& r = qp.resp_;
  // Room for a response and a NAK; otherwise drop and let the requester
  // retransmit (the responder never blocks).
  if (QueueFree(qp) < 2) {
    ++qp.counters_.rx_dropped;
    return;
  }
  const int32_t d = PsnDiff(pkt.hdr.bth.psn, r.epsn);
  if (d > 0) {
    ++qp.counters_.out_of_sequence;
    if (!r.nak_sent) {
      QueueNak(nic, qp, Aeth::Nak(NakCode::kPsnSequenceError), r.epsn);
      r.nak_sent = true;
    }
    return;
  }
  if (d < 0) {
    Duplicate(nic, qp, pkt);
    return;
  }
  Execute(nic, qp, pkt, /*reliable=*/true);
}

void ReceiveUc(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  const uint32_t psn = pkt.hdr.bth.psn;
  if (psn != r.epsn || r.uc_drop) {
    if (psn != r.epsn) ++qp.counters_.out_of_sequence;
    // A loss costs the message it hit: abandon it and resynchronise on the
    // next FIRST/ONLY (the receive WQE, if any, is reused).
    r.in_progress = Operation::kNone;
    r.recv_offset = 0;
    if (!op.IsFirst()) {
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
  Execute(nic, qp, pkt, /*reliable=*/false);
  if (r.uc_drop) r.epsn = PsnAdd(psn, 1);
}

void ReceiveUd(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
               std::span<const uint8_t> raw) {
  if (pkt.hdr.deth.qkey != qp.attr().qkey) {
    ++nic.engine_counters().qkey_viol_cntr;
    ++qp.counters_.rx_dropped;
    return;
  }
  // A UD message is one packet: the WQE is consumed here, never held.
  if (!nic.PopRecvWqe(qp)) {
    ++qp.counters_.out_of_buffer;
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
  if (ms != MrStatus::kOk) {
    nic.CountMrFault(ms);
    wc.status = LocalWcStatus(ms);
  }
  ++qp.counters_.rcvd_pkts;
  qp.counters_.rcvd_bytes += pkt.payload.size();
  nic.CompleteRecv(qp, wc, pkt.hdr.bth.se);
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
  switch (it.kind) {
    case Kind::kAck:
      h.bth.opcode = Opcode::kRcAcknowledge;
      h.bth.psn = it.psn;
      h.aeth.syndrome = it.syndrome;
      break;
    case Kind::kAtomicAck:
      h.bth.opcode = Opcode::kRcAtomicAcknowledge;
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
      h.bth.opcode = first && last ? Opcode::kRcRdmaReadResponseOnly
                     : first       ? Opcode::kRcRdmaReadResponseFirst
                     : last        ? Opcode::kRcRdmaReadResponseLast
                                   : Opcode::kRcRdmaReadResponseMiddle;
      h.bth.psn = PsnAdd(it.psn, it.next_pkt);
      if (payload_len > 0) {
        // The region may have gone since the request was checked.
        if (nic.mrs().CheckRemote(it.rkey, qp.pd(), qp.qpn(), it.va + offset,
                                  payload_len, access::kRemoteRead,
                                  &mr) != MrStatus::kOk) {
          ++r.resp_head;
          ++nic.engine_counters().resp_remote_access_errors;
          QueueNak(nic, qp, Aeth::Nak(NakCode::kRemoteAccessError), h.bth.psn);
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
    return false;
  }
  if (payload_len > 0) {
    const MrStatus ms =
        mr->CopyOut(it.va + static_cast<uint64_t>(it.next_pkt) * qp.mtu(),
                    writer.payload());
    if (ms != MrStatus::kOk) {
      // The process behind the region unmapped the pages or exited: as for
      // a region that went away, NAK this response's PSN.
      nic.CountMrFault(ms);
      ++nic.engine_counters().resp_remote_access_errors;
      ++r.resp_head;
      QueueNak(nic, qp, Aeth::Nak(NakCode::kRemoteAccessError), h.bth.psn);
      return false;
    }
  }
  out.len = static_cast<uint32_t>(writer.Finish());
  out.priority = qp.attr().ah_attr.sl & 7;
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
