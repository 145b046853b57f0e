// The responder (IBTA vol. 1 9.7.5.1 and 9.9, rxe_resp.c): executes incoming
// requests. RC: checks the PSN (expected, duplicate, out of sequence with a
// single PSN sequence error NAK per gap), the opcode sequence, lengths,
// R_Key/bounds/access; places SEND data in receive WQEs (RNR NAK with
// min_rnr_timer when there is none), WRITE data in memory, serves READs and
// atomics and keeps max_dest_rd_atomic responder resources to answer
// duplicates (READ re-executed, atomic result replayed); ACKs on AckReq and
// duplicates, with the MSN. UC: same placement, no ACKs, a loss drops the
// message. UD: Q_Key check and the 40-byte GRH area ahead of the payload.
// Receiving (sequence, duplicates, UD) is here; executing a new request is
// nic/request_execution.h, the response queue nic/response_queue.h. Every
// frame dropped, NAKed or answered again gets its verdict
// (Rnic::Verdict, nic/drop_reason.h).
#ifndef ROCEMU_NIC_RESPONDER_H_
#define ROCEMU_NIC_RESPONDER_H_

#include <span>

#include "nic/clock.h"
#include "nic/frame_io.h"
#include "nic/qp.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class Rnic;

class Responder {
 public:
  static void Receive(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                      std::span<const uint8_t> raw, TimeNs now);
  static bool HasResponse(const Qp& qp) {
    return qp.resp_.resp_head != qp.resp_.resp_tail;
  }
  // Builds the next ACK/NAK/READ response/atomic ACK into `out`.
  static bool BuildNext(Rnic& nic, Qp& qp, TxFrame& out);
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RESPONDER_H_
