#include "nic/requester.h"

#include <algorithm>
#include <cstring>

#include "nic/completer.h"
#include "nic/psn.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {

namespace {

using protocol::Opcode;

// RC, UC and XRC share the layout of the SEND/WRITE opcodes; UC is RC +
// 0x20, XRC RC + 0xA0.
uint8_t SendWriteOpcode(QpType type, WrOpcode wr, bool first, bool last) {
  uint8_t op;
  const bool write =
      wr == WrOpcode::kRdmaWrite || wr == WrOpcode::kRdmaWriteWithImm;
  const bool imm =
      wr == WrOpcode::kSendWithImm || wr == WrOpcode::kRdmaWriteWithImm;
  const bool inv = wr == WrOpcode::kSendWithInv;
  if (write) {
    if (first && last) {
      op = imm ? Opcode::kRcRdmaWriteOnlyWithImmediate
               : Opcode::kRcRdmaWriteOnly;
    } else if (first) {
      op = Opcode::kRcRdmaWriteFirst;
    } else if (last) {
      op = imm ? Opcode::kRcRdmaWriteLastWithImmediate
               : Opcode::kRcRdmaWriteLast;
    } else {
      op = Opcode::kRcRdmaWriteMiddle;
    }
  } else {
    if (first && last) {
      op = imm   ? Opcode::kRcSendOnlyWithImmediate
           : inv ? Opcode::kRcSendOnlyWithInvalidate
                 : Opcode::kRcSendOnly;
    } else if (first) {
      op = Opcode::kRcSendFirst;
    } else if (last) {
      op = imm   ? Opcode::kRcSendLastWithImmediate
           : inv ? Opcode::kRcSendLastWithInvalidate
                 : Opcode::kRcSendLast;
    } else {
      op = Opcode::kRcSendMiddle;
    }
  }
  if (type == QpType::kUc) op += Opcode::kUcSendFirst;
  if (type == QpType::kXrcIni) op += Opcode::kXrcSendFirst;
  return op;
}
static_assert(Opcode::kUcRdmaWriteOnlyWithImmediate ==
              Opcode::kRcRdmaWriteOnlyWithImmediate + Opcode::kUcSendFirst);
static_assert(Opcode::kXrcSendOnlyWithInvalidate ==
              Opcode::kRcSendOnlyWithInvalidate + Opcode::kXrcSendFirst);

// ATOMIC WRITE and FLUSH take a responder resource (the responder keeps
// them to answer a duplicate without executing it again) and are answered
// by a READ response: they count against max_rd_atomic like READs.
bool IsReadOrAtomic(WrOpcode op) {
  return op == WrOpcode::kRdmaRead || op == WrOpcode::kAtomicCmpAndSwp ||
         op == WrOpcode::kAtomicFetchAndAdd || op == WrOpcode::kAtomicWrite ||
         op == WrOpcode::kFlush;
}

// One packet whatever the length: no SG list, nothing gathered from it.
bool IsOnePacketNoSg(WrOpcode op) {
  return op == WrOpcode::kAtomicWrite || op == WrOpcode::kFlush;
}

// A FLUSH names at least one placement type rocemu knows and a defined
// selectivity level (ibv_wr_flush's type and level).
bool FlushValid(const SendWrHeader::Flush& f) {
  constexpr uint8_t kTypes =
      protocol::feth::kGlobal | protocol::feth::kPersistent;
  return f.type != 0 && (f.type & ~kTypes) == 0 &&
         (f.level == protocol::feth::kRange ||
          f.level == protocol::feth::kMemoryRegion);
}

bool IsAtomic(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
}

}  // namespace

bool Requester::Ready(const Rnic& nic, const Qp& qp, TimeNs now) {
  const RequesterState& r = qp.req_;
  if (r.req_idx >= qp.sq_tail_) return false;
  const QpState s = qp.attr_.qp_state;
  // SQD finishes the message in progress and starts no new one; packets
  // already sent once (a go-back-N resend) are not new.
  if (s != QpState::kRts &&
      !(s == QpState::kSqd &&
        (r.pkt != 0 || (r.sent_any && PsnLessEq(r.psn, r.max_sent_psn))))) {
    return false;
  }
  if (now < r.rnr_until || now < qp.pace_until_) return false;
  if (nic.Paused(qp)) return false;
  // A local operation (bind, invalidate) runs once everything before it
  // completed: its completion keeps the send queue's order, and a window
  // is not re-bound under a request still in flight.
  if (r.pkt == 0 && qp.sq_.at(r.req_idx).wr.local() &&
      qp.comp_.comp_idx != r.req_idx) {
    return false;
  }
  if (!IsReliable(qp.type())) return true;
  if (static_cast<uint32_t>(PsnDiff(r.psn, qp.comp_.psn)) >=
      nic.config().max_unacked_psns) {
    return false;
  }
  const SendWqe& w = qp.sq_.at(r.req_idx);
  if (r.pkt == 0) {
    if (w.wr.fence() && r.rd_atomic_outstanding > 0) return false;
    if (IsReadOrAtomic(w.wr.opcode) &&
        r.rd_atomic_outstanding >=
            std::max<uint32_t>(1, qp.attr_.max_rd_atomic)) {
      return false;
    }
  }
  return true;
}

TimeNs Requester::WakeTime(const Qp& qp) {
  if (qp.req_.req_idx >= qp.sq_tail_) return kNever;
  return std::max(qp.req_.rnr_until, qp.pace_until_);
}

void Requester::ExecuteLocal(Rnic& nic, Qp& qp, SendWqe& w) {
  RequesterState& r = qp.req_;
  w.first_psn = r.psn;
  w.npkts = 0;
  w.last_psn = PsnAdd(r.psn, -1);
  w.read_or_atomic = false;
  MrStatus ms;
  if (w.wr.opcode == WrOpcode::kBindMw) {
    const SendWr::Bind& b = w.wr.bind;
    ms = nic.mrs().BindMw({.mw_rkey = b.mw_rkey,
                           .new_rkey = b.new_rkey,
                           .mr_lkey = b.mr_lkey,
                           .addr = b.addr,
                           .length = b.length,
                           .access = b.access,
                           .type = b.type},
                          qp.pd_, qp.qpn_);
  } else {
    ms = nic.mrs().LocalInvalidate(w.wr.invalidate_rkey, qp.pd_, qp.qpn_);
  }
  if (ms != MrStatus::kOk) {
    // IBTA 10.6.7.2.3: a failed bind completes in error and the QP goes to
    // ERR (rxe and mlx5 do the same for a failed local invalidate).
    const bool bind = w.wr.opcode == WrOpcode::kBindMw;
    const DropReason why =
        bind ? DropReason::kBindMwFailed : DropReason::kLocalInvFailed;
    nic.Verdict(&qp, why, VerdictAction::kFailedWr).args[0] =
        bind ? w.wr.bind.mw_rkey : w.wr.invalidate_rkey;
    w.status = bind ? WcStatus::kMwBindErr : WcStatus::kLocQpOpErr;
    w.cause = why;
    w.cause_id = 0;
    nic.MoveToError(qp, why);
    return;
  }
  ++r.req_idx;
  ++qp.comp_.comp_idx;
  if (w.wr.signaled() || qp.init_.sq_sig_all) {
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.wqe_index = w.wr.wqe_index;
    wc.status = WcStatus::kSuccess;
    wc.opcode = w.wr.opcode == WrOpcode::kBindMw ? WcOpcode::kBindMw
                                                 : WcOpcode::kLocalInv;
    wc.qp_num = qp.qpn_;
    nic.CompleteSend(qp, wc);
  }
}

void Requester::FailLocally(Rnic& nic, Qp& qp, SendWqe& w, WcStatus err,
                            DropReason why, const uint64_t* args) {
  FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kFailedWr);
  if (args != nullptr) std::copy(args, args + 6, v.args);
  // Everything before this WQE must still complete; UC/UD finished them
  // already, RC ends here in ERR and flushes the rest.
  if (IsReliable(qp.type())) {
    w.status = err;
    w.cause = why;
    w.cause_id = 0;
    nic.MoveToError(qp, why);
    return;
  }
  WorkCompletion wc;
  wc.wr_id = w.wr.wr_id;
  wc.wqe_index = w.wr.wqe_index;
  wc.status = err;
  wc.qp_num = qp.qpn_;
  ++qp.req_.req_idx;
  ++qp.comp_.comp_idx;
  nic.CompleteSend(qp, wc, why);
  nic.MoveToSqe(qp, why);
}

void Requester::RewindTo(Qp& qp, uint32_t psn) {
  RequesterState& r = qp.req_;
  uint64_t idx = qp.comp_.comp_idx;
  // The WQE holding `psn`: every WQE up to req_idx has its PSNs assigned.
  while (idx < r.req_idx && PsnLess(qp.sq_.at(idx).last_psn, psn)) ++idx;
  r.rd_atomic_outstanding = 0;
  for (uint64_t i = qp.comp_.comp_idx; i < idx; ++i) {
    if (qp.sq_.at(i).read_or_atomic) ++r.rd_atomic_outstanding;
  }
  if (idx < r.req_idx || (idx == r.req_idx && r.pkt != 0)) {
    const SendWqe& w = qp.sq_.at(idx);
    r.req_idx = idx;
    r.pkt = static_cast<uint32_t>(std::max(0, PsnDiff(psn, w.first_psn)));
    r.psn = PsnAdd(w.first_psn, r.pkt);
  } else {
    r.psn = psn;
  }
  r.noack_pkts = 0;
}

bool Requester::BuildNext(Rnic& nic, Qp& qp, TxFrame& out, TimeNs now) {
  RequesterState& r = qp.req_;
  SendWqe& w = qp.sq_.at(r.req_idx);
  // UD messages are bounded by the port MTU, connected ones segmented by
  // the path MTU.
  const uint32_t mtu = qp.type() == QpType::kUd
                           ? MtuToBytes(nic.config().port.active_mtu)
                           : qp.mtu();
  if (r.pkt == 0 && w.wr.local()) {
    ExecuteLocal(nic, qp, w);
    return false;
  }
  if (r.pkt == 0) {
    w.first_psn = r.psn;
    w.read_or_atomic = IsReadOrAtomic(w.wr.opcode);
    w.npkts =
        w.length == 0 ? 1 : static_cast<uint32_t>((w.length + mtu - 1) / mtu);
    if (IsAtomic(w.wr.opcode) || IsOnePacketNoSg(w.wr.opcode)) w.npkts = 1;
    w.last_psn = PsnAdd(w.first_psn, w.npkts - 1);
    // Local checks the verbs leave to processing time.
    WcStatus err = WcStatus::kSuccess;
    DropReason why = DropReason::kNone;
    uint64_t args[6] = {};
    if (IsAtomic(w.wr.opcode)) {
      if (!IsReliable(qp.type()) || (w.wr.atomic.remote_addr & 7) != 0 ||
          w.wr.sg_list.size() != 1 || w.wr.sg_list[0].length != 8) {
        err = WcStatus::kLocQpOpErr;
        why = DropReason::kLocalQpOp;
      }
    } else if (w.wr.opcode == WrOpcode::kFlush && !FlushValid(w.wr.flush)) {
      err = WcStatus::kLocQpOpErr;
      why = DropReason::kLocalQpOp;
      args[0] = w.wr.flush.type;
      args[1] = w.wr.flush.level;
    } else if (w.wr.opcode == WrOpcode::kRdmaRead && !IsReliable(qp.type())) {
      err = WcStatus::kLocQpOpErr;
      why = DropReason::kLocalQpOp;
    } else if (w.length > nic.config().port.max_msg_sz) {
      err = WcStatus::kLocLenErr;
      why = DropReason::kMsgTooLong;
      args[0] = w.length;
      args[1] = nic.config().port.max_msg_sz;
    } else if (qp.type() == QpType::kUd && w.length > mtu) {
      err = WcStatus::kLocLenErr;
      why = DropReason::kMtuExceeded;
      args[0] = w.length;
      args[1] = mtu;
    }
    // A message of several packets is checked whole before its first
    // packet leaves. A one-packet message is not: its gather below checks
    // the same keys over the same bytes and fails it the same way.
    const bool source =
        w.wr.opcode != WrOpcode::kRdmaRead && !IsAtomic(w.wr.opcode);
    if (err == WcStatus::kSuccess && !w.wr.is_inline() &&
        !IsOnePacketNoSg(w.wr.opcode) && (!source || w.npkts > 1)) {
      const AccessFlags need = source ? access::kNone : access::kLocalWrite;
      const MrStatus ms =
          CheckSgList(nic.mrs(), qp.pd_, w.wr.sg_list.span(), need);
      if (ms != MrStatus::kOk) {
        err = WcStatus::kLocProtErr;
        why = LocalReason(ms);
        nic.SgArgs(args, w.wr.sg_list.span(), need, qp.pd_);
      }
    }
    if (err != WcStatus::kSuccess) {
      FailLocally(nic, qp, w, err, why, args);
      return false;
    }
  }

  protocol::TransportHeaders h;
  const protocol::NetHeaderTemplate* net;
  if (qp.type() == QpType::kUd) {
    net = nic.UdHeaders(qp, w.wr.ud.ah);
    if (net == nullptr) {
      nic.Verdict(&qp, DropReason::kAhUnusable, VerdictAction::kFailedWr)
          .args[0] = w.wr.ud.ah;
      WorkCompletion wc;
      wc.wr_id = w.wr.wr_id;
      wc.wqe_index = w.wr.wqe_index;
      wc.status = WcStatus::kLocQpOpErr;
      wc.qp_num = qp.qpn_;
      ++r.req_idx;
      ++qp.comp_.comp_idx;
      nic.CompleteSend(qp, wc, DropReason::kAhUnusable);
      nic.MoveToSqe(qp, DropReason::kAhUnusable);
      return false;
    }
  } else {
    net = &nic.ConnectedHeaders(qp);
  }
  h.bth.pkey = nic.pkey_table().Get(qp.attr_.pkey_index);
  h.bth.dest_qp = qp.attr_.dest_qp_num;
  h.bth.psn = r.psn;
  // XRC: every request names the target's XRC SRQ; its opcodes are RC's
  // + 0xA0.
  const uint8_t service =
      qp.type() == QpType::kXrcIni ? Opcode::kXrcSendFirst : 0;
  h.xrceth.srqn = w.wr.remote_srqn & protocol::kQpnMask;

  const bool first = r.pkt == 0;
  const bool last = r.pkt + 1 >= w.npkts;
  uint64_t offset = static_cast<uint64_t>(r.pkt) * mtu;
  uint32_t payload_len = 0;
  uint32_t psn_advance = 1;
  bool is_request_with_payload = false;

  switch (w.wr.opcode) {
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
    case WrOpcode::kSendWithInv:
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm: {
      if (qp.type() == QpType::kUd) {
        h.bth.opcode = w.wr.opcode == WrOpcode::kSendWithImm
                           ? Opcode::kUdSendOnlyWithImmediate
                           : Opcode::kUdSendOnly;
        h.bth.dest_qp = w.wr.ud.remote_qpn;
        // A Q_Key with the high bit set means "use the QP's" (IBTA 10.2.5).
        h.deth.qkey = (w.wr.ud.remote_qkey & 0x80000000u) ? qp.attr_.qkey
                                                          : w.wr.ud.remote_qkey;
        h.deth.src_qp = qp.qpn_;
      } else {
        h.bth.opcode = SendWriteOpcode(qp.type(), w.wr.opcode, first, last);
      }
      if (first && (w.wr.opcode == WrOpcode::kRdmaWrite ||
                    w.wr.opcode == WrOpcode::kRdmaWriteWithImm)) {
        h.reth.va = w.wr.rdma.remote_addr;
        h.reth.rkey = w.wr.rdma.rkey;
        h.reth.dma_len = static_cast<uint32_t>(w.length);
      }
      h.imm = w.wr.imm_data;
      h.ieth_rkey = w.wr.invalidate_rkey;
      payload_len =
          static_cast<uint32_t>(std::min<uint64_t>(mtu, w.length - offset));
      is_request_with_payload = true;
      if (last && w.wr.solicited()) h.bth.se = true;
      break;
    }
    case WrOpcode::kRdmaRead:
      h.bth.opcode = service + Opcode::kRcRdmaReadRequest;
      h.reth.va = w.wr.rdma.remote_addr + offset;
      h.reth.rkey = w.wr.rdma.rkey;
      h.reth.dma_len = static_cast<uint32_t>(w.length - offset);
      psn_advance = w.npkts - r.pkt;
      break;
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
      h.bth.opcode = service + (w.wr.opcode == WrOpcode::kAtomicCmpAndSwp
                                    ? Opcode::kRcCmpSwap
                                    : Opcode::kRcFetchAdd);
      h.atomic.va = w.wr.atomic.remote_addr;
      h.atomic.rkey = w.wr.atomic.rkey;
      h.atomic.swap_add = w.wr.opcode == WrOpcode::kAtomicCmpAndSwp
                              ? w.wr.atomic.swap
                              : w.wr.atomic.compare_add;
      h.atomic.compare = w.wr.atomic.compare_add;
      break;
    case WrOpcode::kAtomicWrite:
      h.bth.opcode = Opcode::kRcAtomicWrite;
      h.reth.va = w.wr.rdma.remote_addr;
      h.reth.rkey = w.wr.rdma.rkey;
      h.reth.dma_len = 8;
      payload_len = 8;
      break;
    case WrOpcode::kFlush:
      h.bth.opcode = Opcode::kRcFlush;
      h.feth.placement_type = w.wr.flush.type;
      h.feth.selectivity_level = w.wr.flush.level;
      h.reth.va = w.wr.rdma.remote_addr;
      h.reth.rkey = w.wr.rdma.rkey;
      h.reth.dma_len = w.wr.flush.length;
      break;
    default:
      break;
  }

  const bool message_end = last || psn_advance > 1 || !is_request_with_payload;
  if (IsReliable(qp.type())) {
    ++r.noack_pkts;
    if (message_end || r.noack_pkts >= nic.config().ack_req_interval) {
      h.bth.ack_req = true;
      r.noack_pkts = 0;
    }
  }

  protocol::RoceFrameWriter writer;
  if (writer.Begin(*net, h, payload_len, {out.data, out.capacity}) !=
      protocol::BuildError::kOk) {
    ++nic.engine_counters().send_err;
    nic.Verdict(&qp, DropReason::kTxBuildFailed, VerdictAction::kDropped)
        .args[0] = out.capacity;
    return false;
  }
  if (payload_len > 0) {
    std::span<uint8_t> dst = writer.payload();
    if (w.wr.opcode == WrOpcode::kAtomicWrite) {
      std::memcpy(dst.data(), &w.wr.atomic.swap, 8);
    } else if (w.wr.is_inline()) {
      std::memcpy(dst.data(), w.wr.inline_bytes + offset, payload_len);
    } else {
      SgCursor cur = SeekSg(w.wr.sg_list.span(), offset);
      const MrStatus ms =
          Gather(nic.mrs(), qp.pd_, w.wr.sg_list.span(), cur, dst);
      if (ms != MrStatus::kOk) {
        // The region went away between the check and this packet, or its
        // process's pages did.
        nic.CountMrFault(ms);
        uint64_t args[6] = {};
        nic.SgArgs(args, w.wr.sg_list.span(), access::kNone, qp.pd_);
        FailLocally(nic, qp, w, WcStatus::kLocProtErr, LocalReason(ms), args);
        return false;
      }
    }
  }
  out.len = static_cast<uint32_t>(writer.Finish());
  out.priority = qp.attr_.ah_attr.sl & 7;
  nic.FrameBuilt(qp, out, h.bth.opcode, h.bth.psn);
  if (r.sent_any && PsnLessEq(r.psn, r.max_sent_psn) &&
      r.resend_reason != DropReason::kNone) [[unlikely]] {
    nic.NoteSent(qp, out, r.resend_reason, r.resend_cause, true, r.resend_args);
  }
  ++qp.counters_.sent_pkts;
  qp.counters_.sent_bytes += payload_len;

  const uint32_t sent_last = PsnAdd(r.psn, psn_advance - 1);
  if (!r.sent_any || PsnLess(r.max_sent_psn, sent_last)) {
    r.max_sent_psn = sent_last;
    r.sent_any = true;
  }
  r.psn = PsnAdd(r.psn, psn_advance);
  if (w.read_or_atomic && (first || w.wr.opcode == WrOpcode::kRdmaRead)) {
    ++r.rd_atomic_outstanding;
  }
  if (last || psn_advance > 1 || w.read_or_atomic) {
    ++r.req_idx;
    r.pkt = 0;
    if (!IsReliable(qp.type())) Completer::CompleteUnreliable(nic, qp);
  } else {
    ++r.pkt;
  }
  if (IsReliable(qp.type())) Completer::OnSent(qp, now);
  return true;
}

}  // namespace rocemu::nic
