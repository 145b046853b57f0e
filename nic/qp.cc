#include "nic/qp.h"

#include <algorithm>
#include <cstring>

namespace rocemu::nic {

namespace {

// Per-QP UDP source port for ECMP entropy, in 0xC000-0xFFFF as rxe and
// ConnectX use (RoCEv2 annex A17.3.1 leaves the choice to the sender).
uint16_t SourcePortFor(uint32_t qpn) {
  const uint32_t h = (qpn * 0x9E3779B1u) >> 18;
  return static_cast<uint16_t>(0xC000 | (h & 0x3FFF));
}

}  // namespace

Qp::Qp(uint32_t qpn, PdHandle pd, const QpInitAttr& init, uint32_t recv_max_sge,
       uint32_t internal_send_wr)
    : qpn_(qpn),
      pd_(pd),
      init_(init),
      udp_sport_(SourcePortFor(qpn)),
      rq_(init.has_srq ? 0 : init.cap.max_recv_wr,
          init.has_srq ? 0 : init.cap.max_recv_sge),
      rwqe_sges_(recv_max_sge) {
  attr_.cap = init.cap;
  sq_.Init(init.cap.max_send_wr + internal_send_wr);
  sq_sge_stride_ = internal_send_wr != 0
                       ? std::max<uint32_t>(init.cap.max_send_sge, 1)
                       : init.cap.max_send_sge;
  sq_inline_stride_ = internal_send_wr != 0
                          ? std::max<uint32_t>(init.cap.max_inline_data, 32)
                          : init.cap.max_inline_data;
  sq_sges_.resize(sq_.slots() * sq_sge_stride_);
  sq_inline_.resize(sq_.slots() * sq_inline_stride_);
  if (internal_send_wr != 0) {
    tm_ = true;
    tm_rndv_.resize(internal_send_wr / 2);
  }
  // resp_queue_ is sized at INIT->RTR from max_dest_rd_atomic: until then
  // it has no slot, and the responder (which needs two free ones) drops.
}

SendWqe& Qp::PushSendWqe(const SendWr& wr) {
  const size_t slot = sq_.slot(sq_tail_);
  SendWqe& w = sq_.at(sq_tail_++);
  static_cast<SendWrHeader&>(w.wr) = wr;
  if (wr.is_inline()) {
    uint8_t* dst = sq_inline_.data() + slot * sq_inline_stride_;
    std::memcpy(dst, wr.inline_data.data(), wr.inline_data.size());
    w.wr.inline_bytes = dst;
    w.wr.inline_len = wr.inline_data.size();
    w.wr.sg_list = SgView();
  } else {
    Sge* dst = sq_sges_.data() + slot * sq_sge_stride_;
    std::copy(wr.sg_list.begin(), wr.sg_list.end(), dst);
    w.wr.sg_list = SgView(dst, wr.sg_list.size());
    w.wr.inline_bytes = nullptr;
    w.wr.inline_len = 0;
  }
  return w;
}

void Qp::TakeRecvWqe(const PostedRecvWr& wr) {
  std::copy(wr.sg_list.begin(), wr.sg_list.end(), rwqe_sges_.begin());
  resp_.rwqe =
      PostedRecvWr{wr.wr_id, SgView(rwqe_sges_.data(), wr.sg_list.size())};
}

void QpCounters::AddTo(DeviceCounters& c) const {
  c.sent_bytes += sent_bytes;
  c.rcvd_bytes += rcvd_bytes;
  c.duplicate_request += duplicate_request;
  c.out_of_sequence += out_of_sequence;
  c.rcvd_rnr_err += rcvd_rnr_err;
  c.send_rnr_err += send_rnr_err;
  c.rcvd_seq_err += rcvd_seq_err;
  c.retry_exceeded_err += retry_exceeded_err;
  c.retry_rnr_exceeded_err += retry_rnr_exceeded_err;
  c.rnr_nak_retry_err += retry_rnr_exceeded_err;
  c.completer_retry_err += completer_retry_err;
  c.local_ack_timeout_err += local_ack_timeout_err;
  c.implied_nak_seq_err += implied_nak_seq_err;
  c.packet_seq_err += rcvd_seq_err;
  c.out_of_buffer += out_of_buffer + send_rnr_err;
  c.ack_deferred += ack_deferred;
}

}  // namespace rocemu::nic
