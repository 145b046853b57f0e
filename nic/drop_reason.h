// Why a frame was dropped, NAKed or ignored, why a retransmission or an
// error completion happened, why a QP left RTS: one enumerated list for the
// RNIC and the daemon around it. Like Linux's skb drop reasons, the enum,
// the operator-facing name (the per-reason counter and the `reason` label
// of rocemu-ctl counters --drops and Prometheus) and the short text all
// come from the one table below, so they cannot drift apart. A reason's
// code is its position in the table: it is what a capture's epb_verdict
// carries, so new reasons go at the end of their group only if the order
// of the codes already shipped in captures is kept (append, never reorder).
//
// Several reasons move an existing mlx5/rxe-named counter too; the table's
// comments name it. docs/debugging.md lists the reasons with what to do.
#ifndef ROCEMU_NIC_DROP_REASON_H_
#define ROCEMU_NIC_DROP_REASON_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rocemu::nic {

// X(enumerator, name, text)
#define ROCEMU_DROP_REASONS(X)                                                 \
  X(kNone, none, "no reason")                                                  \
  /* --- frames the RNIC parses (rnic.cc) --- */                               \
  X(kBadIcrc, bad_icrc, "ICRC mismatch") /* rx_icrc_encapsulated */            \
  X(kIpChecksum, ip_checksum, "bad IPv4 header checksum") /* rx_malformed */   \
  X(kMalformed, malformed, "malformed header")            /* rx_malformed */   \
  X(kBadOpcode, bad_opcode,                                                    \
    "opcode unknown, unsupported or not of the QP's type") /* rx_bad_opcode */ \
  X(kNotRoce, not_roce, "not a RoCEv2 frame")                                  \
  X(kUnknownQpn, unknown_qpn, "no QP with this number") /* rx_unknown_qp */    \
  X(kMcastNoGroup, mcast_no_group,                                             \
    "multicast group no local QP joined") /* rx_mcast_no_group */              \
  X(kBadPkey, bad_pkey, "P_Key mismatch") /* bad_pkey_cntr */                  \
  X(kBadQkey, bad_qkey, "Q_Key mismatch") /* qkey_viol_cntr */                 \
  X(kQpState, qp_state,                                                        \
    "the QP's state does not take this frame") /* rx_wrong_state */            \
  /* --- responder (responder.cc) --- */                                       \
  X(kRespQueueFull, resp_queue_full, "responder's response queue full")        \
  X(kPsnSequence, psn_sequence, "PSN out of sequence") /* out_of_sequence */   \
  X(kDuplicate, duplicate, "duplicate request")        /* duplicate_request */ \
  X(kDuplicateUnmatched, duplicate_unmatched,                                  \
    "duplicate request no responder resource can answer")                      \
  /* duplicate_request */                                                      \
  X(kRnr, rnr,                                                                 \
    "no receive WQE (receiver not ready)") /* send_rnr_err, out_of_buffer */   \
  X(kOpcodeSequence, opcode_sequence,                                          \
    "invalid request: opcode out of sequence")                                 \
  X(kQpAccess, qp_access,                                                      \
    "invalid request: the QP does not grant this remote access")               \
  X(kNoRdAtomicResources, no_rd_atomic_resources,                              \
    "invalid request: READ/atomic with max_dest_rd_atomic 0")                  \
  X(kMtuExceeded, mtu_exceeded, "payload larger than the path MTU")            \
  X(kLengthError, length_error, "length error")                                \
  X(kRecvTooShort, recv_too_short,                                             \
    "receive buffers shorter than the message") /* resp_local_length_error */  \
  X(kRkeyInvalid, rkey_invalid, "R_Key invalid")                               \
  X(kRkeyPd, rkey_pd, "R_Key of another protection domain")                    \
  X(kRkeyAccess, rkey_access, "R_Key lacks the access right")                  \
  X(kRkeyBounds, rkey_bounds, "remote access outside the MR")                  \
  X(kAtomicMisaligned, atomic_misaligned, "atomic target not 8-byte aligned")  \
  X(kLkeyInvalid, lkey_invalid, "L_Key invalid")                               \
  X(kLkeyPd, lkey_pd, "L_Key of another protection domain")                    \
  X(kLkeyAccess, lkey_access, "L_Key lacks the access right")                  \
  X(kLkeyBounds, lkey_bounds, "local access outside the MR")                   \
  X(kMemoryFault, memory_fault,                                                \
    "the memory behind the MR is unreachable") /* mr_access_faults */          \
  X(kInvalidateFailed, invalidate_failed,                                      \
    "SEND with invalidate: the R_Key cannot be invalidated")                   \
  X(kUcDropped, uc_dropped, "UC: rest of a message abandoned")                 \
  X(kCqOverflow, cq_overflow, "completion queue overflow")                     \
  /* --- requester and completer (requester.cc, completer.cc) --- */           \
  X(kGhostResponse, ghost_response,                                            \
    "response for no outstanding PSN") /* ghost_ack */                         \
  X(kDuplicateResponse, duplicate_response, "response already processed")      \
  X(kAckTimeout, ack_timeout, "local ACK timeout") /* local_ack_timeout_err */ \
  X(kNakPsnSequence, nak_psn_sequence,                                         \
    "NAK: PSN sequence error") /* rcvd_seq_err */                              \
  X(kNakRnr, nak_rnr, "RNR NAK: the peer had no receive WQE")                  \
  /* rcvd_rnr_err */                                                           \
  X(kImpliedNak, implied_nak,                                                  \
    "implied NAK: a response skipped a READ/atomic response")                  \
  /* implied_nak_seq_err */                                                    \
  X(kRetryExceeded, retry_exceeded,                                            \
    "transport retry counter exceeded") /* retry_exceeded_err */               \
  X(kRnrRetryExceeded, rnr_retry_exceeded,                                     \
    "RNR retry counter exceeded") /* retry_rnr_exceeded_err */                 \
  X(kNakInvalidRequest, nak_invalid_request, "NAK: invalid request")           \
  X(kNakRemoteAccess, nak_remote_access, "NAK: remote access error")           \
  X(kNakRemoteOp, nak_remote_op, "NAK: remote operational error")              \
  X(kNakInvalidRdRequest, nak_invalid_rd_request, "NAK: invalid RD request")   \
  X(kNakReserved, nak_reserved, "AETH with a reserved syndrome")               \
  X(kBadResponse, bad_response, "response of the wrong length or position")    \
  X(kMsgTooLong, msg_too_long, "message longer than max_msg_sz")               \
  X(kLocalQpOp, local_qp_op, "work request the QP cannot execute")             \
  X(kAhUnusable, ah_unusable, "address handle unusable")                       \
  X(kBindMwFailed, bind_mw_failed, "memory window bind failed")                \
  X(kLocalInvFailed, local_inv_failed, "local invalidate failed")              \
  X(kTxBuildFailed, tx_build_failed,                                           \
    "frame larger than the transmit buffer") /* send_err */                    \
  X(kModifyToErr, modify_to_err, "moved to ERR by ibv_modify_qp")              \
  /* --- QP1 (gsi.cc) --- */                                                   \
  X(kMadMalformed, mad_malformed, "malformed MAD") /* mad_rx_drop_malformed */ \
  X(kMadBadVersion, mad_bad_version,                                           \
    "MAD of an unsupported version") /* mad_rx_drop_bad_version */             \
  X(kMadUnsupported, mad_unsupported,                                          \
    "MAD class or method not supported") /* mad_rx_drop_unsupported */         \
  /* --- the daemon around the RNIC (emulator/) --- */                         \
  X(kTxBacklogFull, tx_backlog_full, "TX backlog full") /* tx_dropped */       \
  X(kCpTailDrop, cp_tail_drop, "congestion point: tail drop")                  \
  X(kCpEcnMark, cp_ecn_mark, "congestion point: ECN CE marked")                \
  X(kPfcPaused, pfc_paused, "held: the peer paused this priority (PFC)")       \
  X(kFaultDrop, fault_drop, "fault injector: dropped")                         \
  X(kFaultCorrupt, fault_corrupt, "fault injector: one bit flipped")           \
  X(kFaultDuplicate, fault_duplicate, "fault injector: duplicated")            \
  X(kFaultReorder, fault_reorder, "fault injector: held behind the next")      \
  X(kFaultDelay, fault_delay, "fault injector: delayed")                       \
  X(kStackDropped, stack_dropped, "dropped by the net stack")                  \
  X(kRxSegmented, rx_segmented,                                                \
    "multi-segment frame the RNIC cannot take") /* rx_segmented */             \
  X(kNoRnic, no_rnic, "no RNIC attached to the port")                          \
  /* rx_nic_no_endpoint */                                                     \
  X(kShardRingFull, shard_ring_full,                                           \
    "the RNIC shard's receive ring was full") /* rx_shard_ring_full */         \
  /* --- appended: the responder (request_execution.cc) --- */                 \
  X(kFlushInvalid, flush_invalid,                                              \
    "invalid request: FLUSH of no or an unknown placement type, or of a "      \
    "reserved selectivity level")                                              \
  /* --- appended: XRC TGT QPs (annex A14) --- */                              \
  X(kXrcSrqInvalid, xrc_srq_invalid,                                           \
    "invalid request: the XRCETH names no XRC SRQ")                            \
  X(kXrcSrqXrcd, xrc_srq_xrcd,                                                 \
    "invalid request: the XRCETH names an XRC SRQ of another XRC domain")

enum class DropReason : uint8_t {
#define ROCEMU_DROP_REASON_ENUM(e, name, text) e,
  ROCEMU_DROP_REASONS(ROCEMU_DROP_REASON_ENUM)
#undef ROCEMU_DROP_REASON_ENUM
};

inline constexpr size_t kDropReasonCount = 0
#define ROCEMU_DROP_REASON_COUNT(e, name, text) +1
    ROCEMU_DROP_REASONS(ROCEMU_DROP_REASON_COUNT)
#undef ROCEMU_DROP_REASON_COUNT
    ;
static_assert(kDropReasonCount <= 256, "codes are one octet");

// const char*, not string_view: Abseil's string_view here is its own type
// and StrCat/StrFormat take these as they are.
inline constexpr std::array<const char*, kDropReasonCount> kDropReasonNames = {
#define ROCEMU_DROP_REASON_NAME(e, name, text) #name,
    ROCEMU_DROP_REASONS(ROCEMU_DROP_REASON_NAME)
#undef ROCEMU_DROP_REASON_NAME
};

inline constexpr std::array<const char*, kDropReasonCount> kDropReasonTexts = {
#define ROCEMU_DROP_REASON_TEXT(e, name, text) text,
    ROCEMU_DROP_REASONS(ROCEMU_DROP_REASON_TEXT)
#undef ROCEMU_DROP_REASON_TEXT
};

constexpr uint8_t DropReasonCode(DropReason r) {
  return static_cast<uint8_t>(r);
}
constexpr const char* DropReasonName(DropReason r) {
  return kDropReasonNames[DropReasonCode(r)];
}
constexpr const char* DropReasonText(DropReason r) {
  return kDropReasonTexts[DropReasonCode(r)];
}
// The reason with that name or code, if any (captures, rocemu-ctl).
std::optional<DropReason> DropReasonByName(std::string_view name);
std::optional<DropReason> DropReasonByCode(uint32_t code);

// One counter per reason: how many frames (or events, for the reasons
// that are not about a frame: ack_timeout, retry_exceeded, cq_overflow,
// modify_to_err) met it. Plain integers: one thread owns them.
struct DropReasonCounters {
  std::array<uint64_t, kDropReasonCount> count{};
  void Add(DropReason r) { ++count[DropReasonCode(r)]; }
  uint64_t operator[](DropReason r) const { return count[DropReasonCode(r)]; }
  void AddTo(DropReasonCounters& c) const {
    for (size_t i = 0; i < kDropReasonCount; ++i) c.count[i] += count[i];
  }
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_DROP_REASON_H_
