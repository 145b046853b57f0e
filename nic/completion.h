// Work completions as ibv_poll_cq returns them. Enum values are those of
// <infiniband/verbs.h> so the verbs library hands them through unchanged.
#ifndef ROCEMU_NIC_COMPLETION_H_
#define ROCEMU_NIC_COMPLETION_H_

#include <cstdint>

namespace rocemu::nic {

// ibv_wc_status.
enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocEecOpErr = 3,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kMwBindErr = 6,
  kBadRespErr = 7,
  kLocAccessErr = 8,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kLocRddViolErr = 14,
  kRemInvRdReqErr = 15,
  kRemAbortErr = 16,
  kInvEecnErr = 17,
  kInvEecStateErr = 18,
  kFatalErr = 19,
  kRespTimeoutErr = 20,
  kGeneralErr = 21,
  // Tag matching: a TAG_DEL of a buffer no longer in the list; a
  // rendezvous whose data does not fit the tagged buffer.
  kTmErr = 22,
  kTmRndvIncomplete = 23,
};
// "IBV_WC_LOC_PROT_ERR"; "IBV_WC_UNKNOWN" for values outside the enum.
const char* WcStatusName(WcStatus s);
// The text ibv_wc_status_str() prints ("local protection error").
const char* WcStatusString(WcStatus s);

// ibv_wc_opcode. Receive completions have bit 7 set.
enum class WcOpcode : uint8_t {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kBindMw = 5,
  kLocalInv = 6,
  kFlush = 8,
  kAtomicWrite = 9,
  kRecv = 128,
  kRecvRdmaWithImm = 129,
  // Tag matching (nic/tag_list.h): list operations, then receives.
  kTmAdd = 130,
  kTmDel = 131,
  kTmSync = 132,
  kTmRecv = 133,
  kTmNoTag = 134,
};
const char* WcOpcodeName(WcOpcode op);
constexpr bool IsRecvOpcode(WcOpcode op) {
  return (static_cast<uint8_t>(op) & 0x80) != 0;
}

// ibv_wc_flags.
namespace wc_flags {
inline constexpr uint32_t kGrh = 1u << 0;
inline constexpr uint32_t kWithImm = 1u << 1;
inline constexpr uint32_t kIpCsumOk = 1u << 2;
inline constexpr uint32_t kWithInv = 1u << 3;
inline constexpr uint32_t kTmSyncReq = 1u << 4;
inline constexpr uint32_t kTmMatch = 1u << 5;
inline constexpr uint32_t kTmDataValid = 1u << 6;
}  // namespace wc_flags

// ibv_wc. ibverbs overlays imm_data and invalidated_rkey in one union; they
// are kept apart here, the flags say which one is meaningful.
struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;  // host order of the big-endian wire value
  uint32_t invalidated_rkey = 0;
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;  // UD: the sender's QPN (DETH)
  uint32_t wc_flags = 0;
  uint16_t pkey_index = 0;
  uint16_t slid = 0;  // RoCE has no LIDs: always 0
  uint8_t sl = 0;     // RoCE: the 802.1p priority the frame arrived on
  uint8_t dlid_path_bits = 0;
  // Send completions: the request's SendWrHeader::wqe_index. Every request
  // posted before it on the QP is done too (a send queue completes in
  // order).
  uint32_t wqe_index = 0;
  // A receive that consumed a SEND (or WRITE with immediate) whose last
  // packet had BTH.SE set. ibv_wc has no such flag (providers keep it in
  // their CQE); the verbs layer reads it to honour
  // ibv_req_notify_cq(solicited_only) and does not pass it to the
  // application.
  bool solicited = false;
  // Receive completions of an XRC TGT QP: the XRC SRQ whose WQE completed
  // (the QP has none of its own; the verbs server retires that SRQ's
  // ring). 0 otherwise.
  uint32_t srq = 0;
  // Tag matching: the TMH's tag and app_ctx (ibv_wc_read_tm_info) of a
  // matched receive; `tagged`: the receive used a tagged buffer (or is a
  // list operation), not a WQE of the SRQ's ring.
  uint64_t tm_tag = 0;
  uint32_t tm_priv = 0;
  bool tagged = false;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_COMPLETION_H_
