#include "nic/raw_packet.h"

#include <cstring>

#include "nic/completer.h"
#include "nic/rnic.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {

namespace {

// The WQE at the head fails: its error completion, and the QP goes to ERR
// (a ConnectX's send queue stops on an error CQE; the flush that follows
// reports this WQE's status).
void Fail(Rnic& nic, Qp& qp, SendWqe& w, WcStatus err, DropReason why,
          uint64_t arg0, uint64_t arg1) {
  FrameVerdict& v = nic.Verdict(&qp, why, VerdictAction::kFailedWr);
  v.args[0] = arg0;
  v.args[1] = arg1;
  w.status = err;
  w.cause = why;
  w.cause_id = 0;
  nic.MoveToError(qp, why);
}

// 802.1p priority of a tagged frame (PFC class), else 0.
uint8_t PriorityOf(std::span<const uint8_t> f) {
  if (f.size() >= 16 && f[12] == 0x81 && f[13] == 0x00) return f[14] >> 5;
  return 0;
}

}  // namespace

bool RawPacket::BuildNext(Rnic& nic, Qp& qp, TxFrame& out) {
  RequesterState& r = qp.req_;
  SendWqe& w = qp.sq_.at(r.req_idx);
  if (w.length < kMinFrame) {
    Fail(nic, qp, w, WcStatus::kLocLenErr, DropReason::kLengthError, w.length,
         kMinFrame);
    return false;
  }
  if (w.length > out.capacity) {
    Fail(nic, qp, w, WcStatus::kLocLenErr, DropReason::kMtuExceeded, w.length,
         out.capacity);
    return false;
  }
  const uint32_t len = static_cast<uint32_t>(w.length);
  std::span<uint8_t> dst(out.data, len);
  if (w.wr.is_inline()) {
    std::memcpy(dst.data(), w.wr.inline_bytes, len);
  } else {
    SgCursor cur;
    const MrStatus ms =
        Gather(nic.mrs(), qp.pd_, w.wr.sg_list.span(), cur, dst);
    if (ms != MrStatus::kOk) {
      nic.CountMrFault(ms);
      uint64_t args[6] = {};
      nic.SgArgs(args, w.wr.sg_list.span(), access::kNone, qp.pd_);
      Fail(nic, qp, w, WcStatus::kLocProtErr, LocalReason(ms), args[0],
           args[1]);
      return false;
    }
  }
  ++qp.counters_.sent_pkts;
  qp.counters_.sent_bytes += len;
  const protocol::MacAddr& own = nic.config().mac;
  const bool group = (dst[0] & 1) != 0;
  const bool to_self = std::memcmp(dst.data(), own.data(), own.size()) == 0;
  if ((group && !nic.config().medium_loops_back) || to_self) {
    nic.SteerRaw(dst, qp.qpn_);
  }
  out.len = to_self ? 0 : len;
  if (out.len != 0) {
    out.priority = PriorityOf(dst);
    nic.FrameBuilt(qp, out, 0, 0);
  }
  ++r.req_idx;
  Completer::CompleteUnreliable(nic, qp);
  return true;
}

void RawPacket::Receive(Rnic& nic, Qp& qp, std::span<const uint8_t> frame) {
  const QpState s = qp.state();
  if (s != QpState::kRtr && s != QpState::kRts && s != QpState::kSqd &&
      s != QpState::kSqe) {
    ++nic.engine_counters().rx_wrong_state;
    ++qp.counters_.rx_dropped;
    nic.Verdict(&qp, DropReason::kQpState, VerdictAction::kDropped).args[0] =
        static_cast<uint64_t>(s);
    return;
  }
  if (!nic.PopRecvWqe(qp)) {
    ++qp.counters_.out_of_buffer;
    nic.Verdict(&qp, DropReason::kRnr, VerdictAction::kDropped);
    return;
  }
  ++qp.counters_.rcvd_pkts;
  qp.counters_.rcvd_bytes += frame.size();
  const PostedRecvWr& wqe = qp.resp_.rwqe;
  WorkCompletion wc;
  wc.wr_id = wqe.wr_id;
  wc.qp_num = qp.qpn();
  wc.opcode = WcOpcode::kRecv;
  wc.byte_len = static_cast<uint32_t>(frame.size());
  wc.sl = PriorityOf(frame);
  const auto sges = wqe.sg_list.span();
  SgCursor cur;
  const MrStatus ms = Scatter(nic.mrs(), qp.pd(), sges, cur, frame);
  // As a UD receive: the WQE completes in error, the QP stays.
  const DropReason why = ms == MrStatus::kOk
                             ? DropReason::kNone
                             : nic.FailReceiveScatter(qp, ms, sges, &wc);
  nic.CompleteRecv(qp, wc, false, why, nic.rx_packet_id());
}

}  // namespace rocemu::nic
