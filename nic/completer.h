// The completer (IBTA vol. 1 9.7.5.2 and 9.9, rxe_comp.c): consumes ACKs,
// NAKs, READ responses and atomic ACKs; retires send WQEs in order and
// posts their completions; applies implied ACKs (a response for PSN n
// acknowledges every earlier SEND/WRITE) and implied NAKs (an ACK or
// response past an unanswered READ/atomic restarts it); ignores ghost
// (never-sent PSN) and stale responses; runs the local ACK timeout and RNR
// retry with retry_cnt / rnr_retry (7 = for ever); and ends the QP in ERR
// with RETRY_EXC_ERR, RNR_RETRY_EXC_ERR, REM_ACCESS_ERR, REM_INV_REQ_ERR or
// REM_OP_ERR.
#ifndef ROCEMU_NIC_COMPLETER_H_
#define ROCEMU_NIC_COMPLETER_H_

#include "nic/clock.h"
#include "nic/qp.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class Rnic;

class Completer {
 public:
  static void Receive(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                      TimeNs now);
  // Fires the local ACK timeout if due.
  static void OnTimer(Rnic& nic, Qp& qp, TimeNs now);
  // Called by the requester after it sent a request packet.
  static void OnSent(Qp& qp, TimeNs now);
  // UC/UD: a message left the wire and is complete.
  static void CompleteUnreliable(Rnic& nic, Qp& qp);
  static void ResetRetries(Qp& qp);
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_COMPLETER_H_
