#include "nic/request_execution.h"

#include <algorithm>
#include <cstring>

#include "nic/psn.h"
#include "nic/response_queue.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"
#include "nic/tag_matching.h"

namespace rocemu::nic {
namespace {

using protocol::Aeth;
using protocol::NakCode;
using protocol::Operation;

// Why a request cannot be executed: RC NAKs it (`nak`) and takes the QP to
// ERR, the receive WQE in use completing with `status`; UC drops the rest
// of the message. `args` as frame_verdict.h gives them for `why`.
struct Rejection {
  DropReason why = DropReason::kNone;
  NakCode nak = NakCode::kInvalidRequest;
  WcStatus status = WcStatus::kRemInvReqErr;
  uint64_t args[6] = {};
};

Rejection Reject(DropReason why, NakCode nak, WcStatus status, uint64_t a0 = 0,
                 uint64_t a1 = 0, uint64_t a2 = 0) {
  Rejection j{why, nak, status, {}};
  j.args[0] = a0;
  j.args[1] = a1;
  j.args[2] = a2;
  return j;
}

// A failed R_Key check or remote copy of [va, va + len).
Rejection RemoteAccess(const Rnic& nic, const Qp& qp, MrStatus ms,
                       uint32_t rkey, uint64_t va, uint64_t len,
                       AccessFlags need) {
  Rejection j{RemoteReason(ms), RemoteNakCode(ms), RemoteWcStatus(ms), {}};
  nic.MrArgs(j.args, rkey, va, len, need, qp.pd());
  return j;
}

// Class C/A errors (IBTA 9.9.3): NAK the request and take the responder's QP
// to ERR once the NAK is out; the receive WQE in use completes in error.
void FatalNak(Rnic& nic, Qp& qp, const Rejection& j, uint32_t psn) {
  ResponderState& r = qp.resp_;
  const uint64_t id = nic.rx_packet_id();
  FrameVerdict& v = nic.Verdict(&qp, j.why, VerdictAction::kNaked);
  std::copy(std::begin(j.args), std::end(j.args), v.args);
  QueueNak(nic, qp, Aeth::Nak(j.nak), psn, j.why, id);
  if (j.nak == NakCode::kRemoteAccessError) {
    ++nic.engine_counters().resp_remote_access_errors;
  }
  if (r.have_rwqe) {
    WorkCompletion wc;
    wc.wr_id = r.rwqe.wr_id;
    wc.status = j.status;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qp.qpn();
    nic.CompleteRecv(qp, wc, false, j.why, id);
    r.have_rwqe = false;
  }
  r.in_progress = Operation::kNone;
  r.goto_error = true;
  // The responder's own affiliated error (IBTA 11.6.3.1, as mlx5 raises
  // it): invalid request, local access violation, or catastrophic.
  nic.MoveToError(qp,
                  j.nak == NakCode::kInvalidRequest ? AsyncEventType::kQpReqErr
                  : j.nak == NakCode::kRemoteAccessError
                      ? AsyncEventType::kQpAccessErr
                      : AsyncEventType::kQpFatal,
                  j.why, id);
}

// UC: a failed message is dropped to its end, counted.
void DropUc(Rnic& nic, Qp& qp, const Rejection& j) {
  ResponderState& r = qp.resp_;
  FrameVerdict& v = nic.Verdict(&qp, j.why, VerdictAction::kDropped);
  std::copy(std::begin(j.args), std::end(j.args), v.args);
  ++qp.counters_.rx_dropped;
  r.in_progress = Operation::kNone;
  r.uc_drop = true;
  r.recv_offset = 0;
}

// No receive WQE for a SEND or a WRITE with immediate: RC answers
// receiver-not-ready with our RNR timer (the requester resends this PSN
// later; silence until then, as after a sequence NAK); UC drops.
void NotReady(Rnic& nic, Qp& qp, uint32_t psn, bool reliable) {
  if (!reliable) {
    ++qp.counters_.out_of_buffer;
    DropUc(nic, qp,
           Reject(DropReason::kRnr, NakCode::kInvalidRequest,
                  WcStatus::kSuccess, psn, qp.attr().min_rnr_timer));
    return;
  }
  ++qp.counters_.send_rnr_err;
  FrameVerdict& v = nic.Verdict(&qp, DropReason::kRnr, VerdictAction::kNaked);
  v.args[0] = psn;
  v.args[1] = qp.attr().min_rnr_timer;
  QueueNak(nic, qp, Aeth::RnrNak(qp.attr().min_rnr_timer), psn,
           DropReason::kRnr, nic.rx_packet_id());
  qp.resp_.nak_sent = true;
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

// The rights a FLUSH needs: one per placement type it asks for.
AccessFlags FlushNeeds(const protocol::Feth& f) {
  AccessFlags need = 0;
  if (f.placement_type & protocol::feth::kGlobal) need |= access::kFlushGlobal;
  if (f.placement_type & protocol::feth::kPersistent) {
    need |= access::kFlushPersistent;
  }
  return need;
}

// What executing a request came to.
enum class Step : uint8_t {
  kDone,       // executed: acknowledge if asked, expect the next PSN
  kResponded,  // a READ/atomic: its response is queued, epsn moved past it
  kNotReady,   // no receive WQE
  kRejected,   // *rejection says why
};

// The checks every new request passes first: the opcode sequence (IBTA
// 9.7.5.1.2 / C9-30: a FIRST/ONLY may not arrive inside a message, nor
// MIDDLE/LAST or another operation outside one), the QP-level rights
// (ibv_qp_attr.qp_access_flags) and the payload size for the packet's
// position (FIRST and MIDDLE exactly one MTU, LAST 1..MTU, ONLY 0..MTU).
bool Admit(const Qp& qp, const protocol::ParsedFrame& pkt, Rejection* j) {
  const ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  const bool in_msg = r.in_progress != Operation::kNone;
  if ((in_msg && (op.IsFirst() || op.operation != r.in_progress)) ||
      (!in_msg && !op.IsFirst())) {
    *j = Reject(DropReason::kOpcodeSequence, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr, pkt.hdr.bth.opcode,
                static_cast<uint64_t>(r.in_progress));
    return false;
  }
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
    case Operation::kAtomicWrite:
      // A store, not a read-modify-write: the write right (as rxe asks, and
      // pyverbs' test registers its regions with REMOTE_WRITE only).
      need = access::kRemoteWrite;
      break;
    case Operation::kFlush:
      need = FlushNeeds(pkt.hdr.feth);
      break;
    default:
      break;
  }
  if (need != 0 && (qp.attr().qp_access_flags & need) != need) {
    *j = Reject(DropReason::kQpAccess, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr, need, qp.attr().qp_access_flags);
    return false;
  }
  if (!op.payload) return true;
  const size_t len = pkt.payload.size();
  const uint32_t mtu = qp.mtu();
  if (len > mtu) {
    *j = Reject(DropReason::kMtuExceeded, NakCode::kInvalidRequest,
                WcStatus::kLocLenErr, len, mtu);
    return false;
  }
  const bool full = op.position == protocol::OpPosition::kFirst ||
                    op.position == protocol::OpPosition::kMiddle;
  if ((full && len != mtu) ||
      (op.position == protocol::OpPosition::kLast && len == 0)) {
    *j = Reject(DropReason::kLengthError, NakCode::kInvalidRequest,
                WcStatus::kLocLenErr, len, full ? mtu : 1, kLenPosition);
    return false;
  }
  return true;
}

Step ExecuteSend(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                 Rejection* j) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  std::span<const uint8_t> payload = pkt.payload;
  if (qp.tm_ && op.IsFirst()) {
    uint32_t skip = 0;
    switch (TmFirstPacket(nic, qp, pkt, &skip)) {
      case TmStart::kNotReady:
        return Step::kNotReady;
      case TmStart::kDone:  // a rendezvous request: the QP READs the data
        r.msn = PsnAdd(r.msn, 1);
        return Step::kDone;
      case TmStart::kContinue:
        break;
    }
    payload = payload.subspan(skip);
  }
  if (!AcquireRwqe(nic, qp)) return Step::kNotReady;
  const auto sges = r.rwqe.sg_list.span();
  SgCursor cur = SeekSg(sges, r.recv_offset);
  const MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, payload);
  if (ms != MrStatus::kOk) {
    nic.CountMrFault(ms);
    if (ms == MrStatus::kLengthExceeded) {
      *j = Reject(DropReason::kRecvTooShort, NakCode::kInvalidRequest,
                  WcStatus::kLocLenErr, r.recv_offset + payload.size(),
                  SgRemaining(sges, SgCursor{}), op.IsLast() ? 1 : 0);
    } else {
      *j = Rejection{LocalReason(ms),
                     NakCode::kRemoteOperationalError,
                     WcStatus::kLocProtErr,
                     {}};
      nic.SgArgs(j->args, sges, access::kLocalWrite, qp.pd());
    }
    return Step::kRejected;
  }
  r.recv_offset += payload.size();
  if (op.HasInvalidate()) {
    // IBTA class J (rxe: RESPST_ERR_INVALIDATE_RKEY): an R_Key that is
    // unknown, of another PD or not invalidatable fails the receive WQE
    // with an invalid-request status and takes the QP to ERR; the NAK
    // tells the requester instead of leaving it to time out.
    const MrStatus inv =
        nic.mrs().Invalidate(pkt.hdr.ieth_rkey, qp.pd(), qp.qpn());
    if (inv != MrStatus::kOk) {
      *j = Reject(DropReason::kInvalidateFailed, NakCode::kInvalidRequest,
                  WcStatus::kRemInvReqErr, pkt.hdr.ieth_rkey);
      return Step::kRejected;
    }
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
  return Step::kDone;
}

Step ExecuteWrite(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                  Rejection* j) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  // The region the RETH's check found: it covers the whole DMA length, so
  // the first packet's payload needs no second look-up.
  const MemoryRegion* first_mr = nullptr;
  if (op.IsFirst()) {
    r.write_rkey = pkt.hdr.reth.rkey;
    r.write_va = pkt.hdr.reth.va;
    r.write_remaining = pkt.hdr.reth.dma_len;
    r.write_length = pkt.hdr.reth.dma_len;
    const MrStatus ms = nic.mrs().CheckRemote(r.write_rkey, qp.pd(), qp.qpn(),
                                              r.write_va, r.write_remaining,
                                              access::kRemoteWrite, &first_mr);
    if (ms != MrStatus::kOk) {
      *j = RemoteAccess(nic, qp, ms, r.write_rkey, r.write_va,
                        r.write_remaining, access::kRemoteWrite);
      return Step::kRejected;
    }
  }
  const size_t len = pkt.payload.size();
  if (len > r.write_remaining || (op.IsLast() && len != r.write_remaining)) {
    *j = Reject(DropReason::kLengthError, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr, len, r.write_remaining,
                len > r.write_remaining ? kLenWriteRemaining : kLenWriteLast);
    return Step::kRejected;
  }
  if (op.HasImmediate() && !AcquireRwqe(nic, qp)) return Step::kNotReady;
  if (len > 0) {
    // Later packets are re-checked: the region may be deregistered
    // mid-message.
    const MemoryRegion* mr = first_mr;
    MrStatus ms =
        mr != nullptr
            ? MrStatus::kOk
            : nic.mrs().CheckRemote(r.write_rkey, qp.pd(), qp.qpn(), r.write_va,
                                    len, access::kRemoteWrite, &mr);
    if (ms == MrStatus::kOk) {
      ms = mr->CopyIn(r.write_va, pkt.payload);
      nic.CountMrFault(ms);
    }
    if (ms != MrStatus::kOk) {
      *j = RemoteAccess(nic, qp, ms, r.write_rkey, r.write_va, len,
                        access::kRemoteWrite);
      return Step::kRejected;
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
  return Step::kDone;
}

// A READ or atomic request: its R_Key must cover [va, va + len) with `need`
// and the QP must have responder resources (max_dest_rd_atomic > 0). *mr
// is the region (none for a zero-length READ).
bool AdmitReadOrAtomic(Rnic& nic, Qp& qp, uint32_t rkey, uint64_t va,
                       uint64_t len, AccessFlags need, const MemoryRegion** mr,
                       Rejection* j) {
  const MrStatus ms =
      nic.mrs().CheckRemote(rkey, qp.pd(), qp.qpn(), va, len, need, mr);
  if (ms != MrStatus::kOk) {
    *j = RemoteAccess(nic, qp, ms, rkey, va, len, need);
    return false;
  }
  if (qp.resources_.empty()) {
    *j = Reject(DropReason::kNoRdAtomicResources, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr);
    return false;
  }
  return true;
}

Step ExecuteRead(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                 Rejection* j) {
  ResponderState& r = qp.resp_;
  const protocol::Reth& reth = pkt.hdr.reth;
  const uint32_t psn = pkt.hdr.bth.psn;
  const MemoryRegion* mr = nullptr;
  if (!AdmitReadOrAtomic(nic, qp, reth.rkey, reth.va, reth.dma_len,
                         access::kRemoteRead, &mr, j)) {
    return Step::kRejected;
  }
  const uint32_t n = Npkts(reth.dma_len, qp.mtu());
  // Taking the resource advances the MSN the resource records.
  ResponderResource& res = TakeResource(qp);
  res = ResponderResource{true, false, psn, PsnAdd(psn, n - 1), 0, r.msn};
  QueueReadResponse(nic, qp, reth, psn, r.msn, DropReason::kNone);
  r.epsn = PsnAdd(psn, n);
  r.nak_sent = false;
  ++nic.engine_counters().rx_read_requests;
  return Step::kResponded;
}

Step ExecuteAtomic(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                   Rejection* j) {
  ResponderState& r = qp.resp_;
  const protocol::AtomicEth& a = pkt.hdr.atomic;
  const uint32_t psn = pkt.hdr.bth.psn;
  const MemoryRegion* mr = nullptr;
  if (!AdmitReadOrAtomic(nic, qp, a.rkey, a.va, 8, access::kRemoteAtomic, &mr,
                         j)) {
    return Step::kRejected;
  }
  // Read-modify-write. One polling thread executes every atomic of this
  // RNIC, so it is atomic with respect to the RNIC's other atomics
  // (IBV_ATOMIC_HCA), not to the CPU: for a process region the load
  // and the store are two process_vm calls, and the application's own
  // stores in between are not seen (as with any HCA-atomic device).
  uint64_t orig = 0;
  MrStatus am = mr->Load64(a.va, &orig);
  if (am == MrStatus::kOk) {
    if (pkt.op->operation == Operation::kCompareSwap) {
      if (orig == a.compare) am = mr->Store64(a.va, a.swap_add);
    } else {
      am = mr->Store64(a.va, orig + a.swap_add);
    }
  }
  if (am != MrStatus::kOk) {
    nic.CountMrFault(am);
    *j = RemoteAccess(nic, qp, am, a.rkey, a.va, 8, access::kRemoteAtomic);
    return Step::kRejected;
  }
  ResponderResource& res = TakeResource(qp);
  res = ResponderResource{true, true, psn, psn, orig, r.msn};
  QueueAtomicAck(nic, qp, psn, r.msn, orig, DropReason::kNone);
  r.epsn = PsnAdd(psn, 1);
  r.nak_sent = false;
  ++nic.engine_counters().rx_atomic_requests;
  return Step::kResponded;
}

// ATOMIC WRITE and FLUSH are answered with a READ response without
// payload (as rxe answers them), from a responder resource that also
// answers their duplicates.
Step RespondEmptyRead(Rnic& nic, Qp& qp, const protocol::Reth& reth,
                      uint32_t psn) {
  ResponderState& r = qp.resp_;
  ResponderResource& res = TakeResource(qp);
  res = ResponderResource{.valid = true,
                          .first_psn = psn,
                          .last_psn = psn,
                          .msn = r.msn,
                          .empty_read = true};
  QueueReadResponse(nic, qp, protocol::Reth{reth.va, reth.rkey, 0}, psn, r.msn,
                    DropReason::kNone);
  r.epsn = PsnAdd(psn, 1);
  r.nak_sent = false;
  return Step::kResponded;
}

// RDMA ATOMIC WRITE (IBTA 1.5): the 8 payload bytes stored at an 8-byte
// aligned target with one 8-byte store, after everything before it (the
// responder executes in PSN order). It takes a responder resource, so a
// duplicate is answered again without storing again: by then a later
// WRITE may have changed the target, and storing the old value again
// would undo it.
Step ExecuteAtomicWrite(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                        Rejection* j) {
  const protocol::Reth& reth = pkt.hdr.reth;
  const uint32_t psn = pkt.hdr.bth.psn;
  if (reth.dma_len != 8 || pkt.payload.size() != 8) {
    *j = Reject(DropReason::kLengthError, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr, pkt.payload.size(), reth.dma_len,
                kLenAtomicWrite);
    return Step::kRejected;
  }
  const MemoryRegion* mr = nullptr;
  const MrStatus ms = nic.mrs().CheckRemote8(
      reth.rkey, qp.pd(), qp.qpn(), reth.va, access::kRemoteWrite, &mr);
  if (ms != MrStatus::kOk) {
    *j = RemoteAccess(nic, qp, ms, reth.rkey, reth.va, 8, access::kRemoteWrite);
    return Step::kRejected;
  }
  if (qp.resources_.empty()) {
    *j = Reject(DropReason::kNoRdAtomicResources, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr);
    return Step::kRejected;
  }
  uint64_t value;
  std::memcpy(&value, pkt.payload.data(), 8);
  const MrStatus sm = mr->AtomicStore64(reth.va, value);
  if (sm != MrStatus::kOk) {
    nic.CountMrFault(sm);
    *j = RemoteAccess(nic, qp, sm, reth.rkey, reth.va, 8, access::kRemoteWrite);
    return Step::kRejected;
  }
  qp.counters_.rcvd_bytes += 8;
  ++nic.engine_counters().rx_atomic_write_requests;
  return RespondEmptyRead(nic, qp, reth, psn);
}

// RDMA FLUSH (IBTA 1.5): makes what earlier requests placed in the range (or
// the whole region) visible at the placement type asked for. The responder
// places every WRITE in memory as it executes it, in PSN order, so by the
// time a FLUSH executes there is nothing left to push: it checks the R_Key,
// the rights and the range, and answers. Persistent placement is refused
// by the R_Key (no region may be registered with FLUSH_PERSISTENT).
Step ExecuteFlush(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                  Rejection* j) {
  const protocol::Reth& reth = pkt.hdr.reth;
  const protocol::Feth& feth = pkt.hdr.feth;
  const uint32_t psn = pkt.hdr.bth.psn;
  const bool whole = feth.selectivity_level == protocol::feth::kMemoryRegion;
  const AccessFlags need = FlushNeeds(feth);
  if (need == 0 || (feth.placement_type & ~uint8_t{3}) != 0 ||
      feth.selectivity_level > protocol::feth::kMemoryRegion) {
    *j = Reject(DropReason::kFlushInvalid, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr, feth.placement_type,
                feth.selectivity_level);
    return Step::kRejected;
  }
  const MemoryRegion* mr = nullptr;
  const MrStatus ms = nic.mrs().CheckRemoteFlush(
      reth.rkey, qp.pd(), qp.qpn(), reth.va, reth.dma_len, whole, need, &mr);
  if (ms != MrStatus::kOk) {
    *j = RemoteAccess(nic, qp, ms, reth.rkey, reth.va, reth.dma_len, need);
    return Step::kRejected;
  }
  if (qp.resources_.empty()) {
    *j = Reject(DropReason::kNoRdAtomicResources, NakCode::kInvalidRequest,
                WcStatus::kRemInvReqErr);
    return Step::kRejected;
  }
  ++nic.engine_counters().rx_flush_requests;
  return RespondEmptyRead(nic, qp, reth, psn);
}

}  // namespace

void ExecuteRequest(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                    bool reliable) {
  ResponderState& r = qp.resp_;
  const protocol::OpcodeInfo& op = *pkt.op;
  const uint32_t psn = pkt.hdr.bth.psn;
  Rejection j;
  Step step = Step::kRejected;
  if (qp.type() == QpType::kXrcTgt && !qp.init_attr().has_srq) {
    // The responder bound the TGT QP to no SRQ: the XRCETH names none of
    // its domain (annex A14: NAK invalid request).
    const uint32_t srqn = pkt.hdr.xrceth.srqn;
    const SharedReceiveQueue* srq = nic.FindXrcSrq(srqn);
    j = Reject(
        srq == nullptr ? DropReason::kXrcSrqInvalid : DropReason::kXrcSrqXrcd,
        NakCode::kInvalidRequest, WcStatus::kRemInvReqErr, srqn,
        qp.init_attr().xrcd, srq == nullptr ? 0 : srq->xrcd());
  } else if (Admit(qp, pkt, &j)) {
    switch (op.operation) {
      case Operation::kSend:
        step = ExecuteSend(nic, qp, pkt, &j);
        break;
      case Operation::kWrite:
        step = ExecuteWrite(nic, qp, pkt, &j);
        break;
      case Operation::kReadRequest:
        step = ExecuteRead(nic, qp, pkt, &j);
        break;
      case Operation::kCompareSwap:
      case Operation::kFetchAdd:
        step = ExecuteAtomic(nic, qp, pkt, &j);
        break;
      case Operation::kAtomicWrite:
        step = ExecuteAtomicWrite(nic, qp, pkt, &j);
        break;
      case Operation::kFlush:
        step = ExecuteFlush(nic, qp, pkt, &j);
        break;
      default:
        step = Step::kDone;
        break;
    }
  }
  switch (step) {
    case Step::kRejected:
      if (reliable) {
        FatalNak(nic, qp, j, psn);
      } else {
        DropUc(nic, qp, j);
      }
      return;
    case Step::kNotReady:
      NotReady(nic, qp, psn, reliable);
      return;
    case Step::kResponded:
      return;  // epsn already advanced past the response PSNs
    case Step::kDone:
      break;
  }
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

}  // namespace rocemu::nic
