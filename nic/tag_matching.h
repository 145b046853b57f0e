// Tag matching on the receive side of an RC QP whose SRQ is a
// tag-matching SRQ (rdma-core's Documentation/tag_matching.md, as
// ConnectX-5 offers it). The first packet of every SEND is read for a TMH
// (protocol/tag_matching_header.h):
//   - EAGER whose tag a listed buffer matches: the payload after the TMH
//     goes to that buffer, completing IBV_WC_TM_RECV with TM_MATCH and
//     TM_DATA_VALID (a multi-packet message: TM_MATCH at its first packet,
//     TM_DATA_VALID at its last);
//   - RNDV whose tag matches: TM_RECV with TM_MATCH at once; the QP then
//     READs the sender's buffer (the RVH) into the tagged buffer itself, on
//     send queue slots of its own, and on the READ's completion reports
//     TM_RECV with TM_DATA_VALID and SENDs the FIN (TMH | RVH, operation
//     FIN) back. A buffer too short for the RVH's length completes with
//     IBV_WC_TM_RNDV_INCOMPLETE, the TMH and RVH in it, for software;
//   - EAGER or RNDV that matches nothing: unexpected, counted by the list,
//     whole to an ordinary SRQ buffer as TM_RECV without flags;
//   - NO_TAG: whole to an ordinary buffer as IBV_WC_TM_NO_TAG;
//   - anything else (a FIN, a SEND shorter than a TMH): an ordinary
//     IBV_WC_RECV.
// Every receive and list-operation completion goes to the SRQ's CQ.
#ifndef ROCEMU_NIC_TAG_MATCHING_H_
#define ROCEMU_NIC_TAG_MATCHING_H_

#include <cstdint>

#include "nic/qp.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class Rnic;

// ResponderState::tm_kind: what the SEND in progress is to the list.
enum class TmKind : uint8_t {
  kNone = 0,     // not classified (no SEND in progress)
  kPlain,        // an ordinary SRQ buffer, IBV_WC_RECV
  kNoTag,        // an ordinary buffer, IBV_WC_TM_NO_TAG
  kUnexpected,   // an ordinary buffer, IBV_WC_TM_RECV without flags
  kEager,        // a tagged buffer, one packet
  kEagerLonger,  // a tagged buffer, TM_MATCH already reported
};

// Send queue slots a QP of a TM SRQ has beyond the application's, and the
// rendezvous it may have in flight (each takes a READ and a FIN slot; the
// Qp sizes Qp::tm_rndv_ so).
inline constexpr uint32_t kTmRendezvousSlots = 8;
inline constexpr uint32_t kTmInternalSendWr = 2 * kTmRendezvousSlots;

// What the first packet of a SEND comes to.
enum class TmStart : uint8_t {
  kContinue,  // place it as a SEND (resp_.rwqe is set: a tagged buffer or
              // an SRQ WQE; `*skip` bytes of TMH are not placed)
  kDone,      // a rendezvous request, consumed (acknowledge it)
  kNotReady,  // no SRQ WQE or no rendezvous slot: RNR
};
TmStart TmFirstPacket(Rnic& nic, Qp& qp, const protocol::ParsedFrame& pkt,
                      uint32_t* skip);

// Gives a receive completion of the SEND in progress its tag-matching
// opcode, flags and tag (ResponderState::tm_kind), and ends the SEND's
// classification.
void TmDecorate(ResponderState& r, WorkCompletion* wc);

// One of the QP's own send WQEs (send_flags::kTmInternal) completed with
// `status` (success, its error, or a flush).
void TmInternalDone(Rnic& nic, Qp& qp, const SendWqe& w, WcStatus status);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_TAG_MATCHING_H_
