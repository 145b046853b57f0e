// A new request in sequence, executed (IBTA vol. 1 9.7.5.1): admitted
// first (opcode sequence, the QP's rights, payload size for its position),
// then SEND, WRITE, READ or atomic, each by its own function. What cannot
// be executed is a Rejection (why, the NAK code, the receive WQE's
// status): RC NAKs it and goes to ERR, UC drops the rest of the message;
// no receive WQE is receiver-not-ready. Split out of the responder
// (issue 34): receiving (sequence, duplicates) there, executing here.
#ifndef ROCEMU_NIC_REQUEST_EXECUTION_H_
#define ROCEMU_NIC_REQUEST_EXECUTION_H_

#include "nic/qp.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class Rnic;

// Executes `pkt`, whose PSN is the one expected. For UC `reliable` is
// false: failures drop the message (counted) instead of NAKing.
void ExecuteRequest(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                    bool reliable);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_REQUEST_EXECUTION_H_
