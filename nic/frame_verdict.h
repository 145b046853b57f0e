// What the RNIC did with a frame it received, or why it sent one, kept by
// packet id for whoever asks later (a capture writing the frame, a flight
// recorder dump, the daemon's log). Every frame an RNIC receives or sends
// gets a packet id from its VerdictLog (the carrier may hand received
// frames their id: RxFrame::packet_id); a record is written only when the
// RNIC acts on a frame (drops it, NAKs it, answers a duplicate, fails a
// work request) or sends one for a reason (a NAK, a retransmission): the
// normal path costs an increment. Records hold integers; words are made
// only when someone asks (DescribeVerdict, control path).
#ifndef ROCEMU_NIC_FRAME_VERDICT_H_
#define ROCEMU_NIC_FRAME_VERDICT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nic/drop_reason.h"

namespace rocemu::nic {

// What was done with a received frame.
enum class VerdictAction : uint8_t {
  kNone = 0,
  kDropped,     // nothing sent, nothing changed
  kNaked,       // answered with a NAK (the NAK names this frame)
  kAnswered,    // a duplicate, acknowledged or answered again
  kQpError,     // the QP went to ERR because of it
  kFailedWr,    // a work request completed in error because of it
  kRetried,     // the requester goes back to resend (a NAK, RNR NAK)
  kMarked,      // passed, marked (ECN CE by the congestion point)
  kHeld,        // held back (PFC pause, fault injector delay/reorder)
  kDuplicated,  // passed twice (fault injector)
  kCorrupted,   // passed with a bit flipped (fault injector)
  kAccepted,    // taken all the same (UC: a new message after a gap)
};
const char* VerdictActionName(VerdictAction a);

// The per-reason meaning of args (what DescribeVerdict prints):
//   malformed, ip_checksum, bad_icrc: [0] protocol::ParseError
//   bad_opcode: [0] opcode  [1] QP type + 1 (0: no QP)
//   unknown_qpn: [0] BTH.DestQP
//   bad_pkey: [0] frame's P_Key  [1] QP's P_Key index  [2] key there
//   bad_qkey: [0] frame's Q_Key  [1] QP's Q_Key
//   qp_state: [0] QpState  [1] opcode
//   psn_sequence: [0] expected PSN  [1] received PSN
//   duplicate*, rnr: [0] PSN  [1] expected PSN (rnr: min_rnr_timer)
//   opcode_sequence: [0] opcode  [1] protocol::Operation in progress
//   qp_access: [0] rights needed  [1] the QP's qp_access_flags
//   mtu_exceeded, length_error: [0] bytes  [1] limit  [2] kLen* below
//   recv_too_short: [0] message bytes (so far)  [1] receive WQE's bytes
//     [2] 1: the whole message (its last packet), 0: at least [0]
//   rkey_*, lkey_*, atomic_misaligned, memory_fault, invalidate_failed:
//     [0] key  [1] VA  [2] length  [3] MR start  [4] MR length
//     [5] PackMr(): rights needed, MR's rights, MR found, PDs
//   cq_overflow: [0] CQ handle  [1] its size
//   ghost_response, duplicate_response: [0] PSN  [1] oldest unacked PSN
//     [2] next PSN to send
//   ack_timeout: [0] PSN awaited  [1] retries left  [2] retry_cnt
//   nak_*: [0] PSN  [1] AETH syndrome  [2] wr_id
//   retry_exceeded, rnr_retry_exceeded: [0] PSN  [1] retry_cnt/rnr_retry
//   bad_response: [0] payload bytes  [1] expected
//   msg_too_long: [0] bytes  [1] max_msg_sz (or MTU for UD)
//   tx_build_failed: [0] buffer capacity
//   fault_*: [0] the fault's probability in ppm  [1] 0 rx, 1 tx
//     [2] corrupt: the bit flipped; delay: ns
//   cp_tail_drop, cp_ecn_mark: [0] queue depth bytes  [1] limit/threshold
//   pfc_paused: [0] priority
//   flush_invalid: [0] FETH placement type  [1] selectivity level
//   xrc_srq_invalid, xrc_srq_xrcd: [0] the XRCETH's SRQ number  [1] the TGT
//     QP's XRC domain  [2] the SRQ's (xrc_srq_xrcd)
enum : uint64_t {
  kLenPosition = 0,
  kLenWriteRemaining = 1,
  kLenWriteLast = 2,
  kLenAtomicWrite = 3,  // [0] payload bytes  [1] RETH length; 8 and 8 needed
};

struct FrameVerdict {
  uint64_t packet_id = 0;
  // Sent frames: the frame this one answers (a NAK: the request; a
  // retransmission: the NAK or the timed-out transmission).
  uint64_t cause_id = 0;
  uint64_t args[6] = {};
  uint32_t qpn = 0xFFFFFFFF;              // none
  DropReason reason = DropReason::kNone;  // received: why `action`
  VerdictAction action = VerdictAction::kNone;
  DropReason sent_reason = DropReason::kNone;  // sent: why
  // Sent: a retransmission (sent_reason says what started it).
  bool resent = false;
};

// args[5] of a memory-key verdict.
constexpr uint64_t PackMr(uint32_t need, uint32_t mr_access, bool mr_found,
                          uint32_t qp_pd, uint32_t mr_pd) {
  return (need & 0xFFull) | (uint64_t{mr_access & 0xFFFF} << 8) |
         (uint64_t{mr_found} << 24) | (uint64_t{qp_pd & 0xFFFF} << 32) |
         (uint64_t{mr_pd & 0xFFFF} << 48);
}

// The RNIC's packet ids and its last `slots` verdicts. One thread.
class VerdictLog {
 public:
  // Ids start at `first_id` (shards of one port use disjoint ranges).
  explicit VerdictLog(uint64_t first_id = 1, uint32_t slots = 1024);

  uint64_t NextId() { return next_id_++; }
  uint64_t next_id() const { return next_id_; }
  // The record of `id`, emptied first if it held an older frame's.
  FrameVerdict& At(uint64_t id) {
    FrameVerdict& v = ring_[id & mask_];
    if (v.packet_id != id) v = FrameVerdict{.packet_id = id};
    return v;
  }
  // The record of `id` if it is still kept.
  const FrameVerdict* Find(uint64_t id) const {
    const FrameVerdict& v = ring_[id & mask_];
    return v.packet_id == id && id != 0 ? &v : nullptr;
  }

 private:
  std::vector<FrameVerdict> ring_;
  uint64_t mask_;
  uint64_t next_id_;
};

// The record in words, for a capture comment or a dump: "dropped: R_Key
// 0x2d5: VA 0x7f..+4096 outside MR [0x7f..,+2048)", "NAK (PSN sequence
// error) for packet 57: expected PSN 0x00000a, received 0x00000c". Empty
// when the record says nothing.
std::string DescribeVerdict(const FrameVerdict& v);
// The detail of `reason` with `args` alone ("expected PSN 0x00000a,
// received 0x00000c"), or its text when it has no arguments.
std::string DescribeReason(DropReason reason, const uint64_t* args);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_FRAME_VERDICT_H_
