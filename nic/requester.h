// The requester (IBTA vol. 1 9.7.4, rxe_req.c): turns send WQEs into request
// packets. It segments messages by path MTU into FIRST/MIDDLE/LAST/ONLY,
// assigns PSNs, asks for ACKs (AckReq) on the last packet of a message and
// every ack_req_interval packets, honours max_rd_atomic, fence, the RNR
// wait, the in-flight window and the congestion pacer, and restarts from a
// given PSN when the completer asks for go-back-N.
#ifndef ROCEMU_NIC_REQUESTER_H_
#define ROCEMU_NIC_REQUESTER_H_

#include "nic/clock.h"
#include "nic/frame_io.h"
#include "nic/qp.h"

namespace rocemu::nic {

class Rnic;

class Requester {
 public:
  // Whether the QP has a request packet it may send at `now`.
  static bool Ready(const Rnic& nic, const Qp& qp, TimeNs now);
  // Earliest time a blocked requester could send again (RNR wait, pacer),
  // kNever when it waits on nothing timed.
  static TimeNs WakeTime(const Qp& qp);
  // Builds the next request packet into `out`; false if none was built.
  static bool BuildNext(Rnic& nic, Qp& qp, TxFrame& out, TimeNs now);
  // Go-back-N: the next packet sent is the one with PSN `psn` (which lies in
  // an outstanding WQE).
  static void RewindTo(Qp& qp, uint32_t psn);

 private:
  // IBV_WR_BIND_MW and IBV_WR_LOCAL_INV at the head of the send queue.
  static void ExecuteLocal(Rnic& nic, Qp& qp, SendWqe& w);
  // The WQE at the head failed locally with `err` because of `why` (checks
  // left to processing time, a region gone before a packet's gather);
  // `args` as frame_verdict.h gives them for `why` (or nullptr).
  static void FailLocally(Rnic& nic, Qp& qp, SendWqe& w, WcStatus err,
                          DropReason why, const uint64_t* args);
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_REQUESTER_H_
