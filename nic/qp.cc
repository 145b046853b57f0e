#include "nic/qp.h"

namespace rocemu::nic {

namespace {

// Per-QP UDP source port for ECMP entropy, in 0xC000-0xFFFF as rxe and
// ConnectX use (RoCEv2 annex A17.3.1 leaves the choice to the sender).
uint16_t SourcePortFor(uint32_t qpn) {
  const uint32_t h = (qpn * 0x9E3779B1u) >> 18;
  return static_cast<uint16_t>(0xC000 | (h & 0x3FFF));
}

}  // namespace

Qp::Qp(uint32_t qpn, PdHandle pd, const QpInitAttr& init)
    : qpn_(qpn),
      pd_(pd),
      init_(init),
      udp_sport_(SourcePortFor(qpn)),
      rq_(init.has_srq ? 1 : init.cap.max_recv_wr, init.cap.max_recv_sge) {
  attr_.cap = init.cap;
  sq_.Init(init.cap.max_send_wr);
  resp_queue_.Init(8);
}

}  // namespace rocemu::nic
