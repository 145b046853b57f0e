// What the responder owes the requester (Qp::resp_queue_), in PSN order:
// ACKs (a later ACK coalesces with one not yet sent), NAKs, READ responses
// and atomic ACKs. An entry sent for a reason (a NAK, the answer to a
// duplicate) keeps the packet id of the request it answers, which the
// frame it becomes names (Rnic::NoteSent).
#ifndef ROCEMU_NIC_RESPONSE_QUEUE_H_
#define ROCEMU_NIC_RESPONSE_QUEUE_H_

#include <cstdint>

#include "nic/drop_reason.h"
#include "nic/qp.h"
#include "protocol/headers.h"

namespace rocemu::nic {

class Rnic;

inline uint32_t ResponseQueueFree(const Qp& qp) {
  return qp.resp_queue_.capacity() -
         static_cast<uint32_t>(qp.resp_.resp_tail - qp.resp_.resp_head);
}

inline ResponseItem& PushResponse(Qp& qp) {
  ResponseItem& it = qp.resp_queue_.at(qp.resp_.resp_tail++);
  it = ResponseItem{};
  return it;
}

// Packets of a READ response of `len` bytes.
inline uint32_t Npkts(uint64_t len, uint32_t mtu) {
  return len == 0 ? 1 : static_cast<uint32_t>((len + mtu - 1) / mtu);
}

// An ACK of `psn`; `why` (a duplicate) names the frame being received as
// what it answers.
void QueueAck(Rnic& nic, Qp& qp, uint32_t psn,
              DropReason why = DropReason::kNone);
// A NAK answering `cause_id` (the frame being received, mostly) for `why`.
void QueueNak(Rnic& nic, Qp& qp, uint8_t syndrome, uint32_t psn, DropReason why,
              uint64_t cause_id);
// The response to a READ request (new or duplicate), from its RETH.
void QueueReadResponse(Rnic& nic, Qp& qp, const protocol::Reth& reth,
                       uint32_t psn, uint32_t msn, DropReason why);
void QueueAtomicAck(Rnic& nic, Qp& qp, uint32_t psn, uint32_t msn,
                    uint64_t orig, DropReason why);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RESPONSE_QUEUE_H_
