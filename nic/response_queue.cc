#include "nic/response_queue.h"

#include "nic/rnic.h"

namespace rocemu::nic {

using protocol::Aeth;
using Kind = ResponseItem::Kind;

void QueueAck(Rnic& nic, Qp& qp, uint32_t psn, DropReason why) {
  ResponderState& r = qp.resp_;
  if (r.resp_tail != r.resp_head) {
    ResponseItem& tail = qp.resp_queue_.at(r.resp_tail - 1);
    if (tail.kind == Kind::kAck &&
        tail.syndrome == Aeth::Ack(protocol::kAethCreditInvalid) &&
        (r.resp_tail - 1 != r.resp_head || tail.next_pkt == 0)) {
      tail.psn = psn;
      tail.msn = r.msn;
      if (why != DropReason::kNone) {
        tail.cause = why;
        tail.cause_id = nic.rx_packet_id();
      }
      ++qp.counters_.ack_deferred;
      return;
    }
  }
  ResponseItem& it = PushResponse(qp);
  it.kind = Kind::kAck;
  it.syndrome = Aeth::Ack(protocol::kAethCreditInvalid);
  it.psn = psn;
  it.msn = r.msn;
  if (why != DropReason::kNone) {
    it.cause = why;
    it.cause_id = nic.rx_packet_id();
  }
  nic.Schedule(qp);
}

void QueueNak(Rnic& nic, Qp& qp, uint8_t syndrome, uint32_t psn, DropReason why,
              uint64_t cause_id) {
  ResponseItem& it = PushResponse(qp);
  it.kind = Kind::kAck;
  it.syndrome = syndrome;
  it.psn = psn;
  it.msn = qp.resp_.msn;
  it.cause = why;
  it.cause_id = cause_id;
  if ((syndrome >> 5) == 1) {
    ++qp.counters_.rnr_naks_sent;
  } else {
    ++qp.counters_.naks_sent;
  }
  nic.Schedule(qp);
}

void QueueReadResponse(Rnic& nic, Qp& qp, const protocol::Reth& reth,
                       uint32_t psn, uint32_t msn, DropReason why) {
  ResponseItem& it = PushResponse(qp);
  it.kind = Kind::kReadResponse;
  it.pd = qp.pd();
  it.psn = psn;
  it.msn = msn;
  it.rkey = reth.rkey;
  it.va = reth.va;
  it.length = reth.dma_len;
  it.npkts = Npkts(reth.dma_len, qp.mtu());
  it.cause = why;
  it.cause_id = nic.rx_packet_id();
  nic.Schedule(qp);
}

void QueueAtomicAck(Rnic& nic, Qp& qp, uint32_t psn, uint32_t msn,
                    uint64_t orig, DropReason why) {
  ResponseItem& it = PushResponse(qp);
  it.kind = Kind::kAtomicAck;
  it.psn = psn;
  it.msn = msn;
  it.atomic_orig = orig;
  it.cause = why;
  it.cause_id = nic.rx_packet_id();
  nic.Schedule(qp);
}

}  // namespace rocemu::nic
