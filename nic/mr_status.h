// Outcome of a memory-key check or copy, as an enum for the hot path, with
// its mapping to what the verbs and the wire report: a local (L_Key) failure
// completes the WR with a local error; a remote (R_Key) failure makes the
// responder NAK and the requester complete with a remote error.
#ifndef ROCEMU_NIC_MR_STATUS_H_
#define ROCEMU_NIC_MR_STATUS_H_

#include <cstdint>

#include "nic/completion.h"
#include "nic/drop_reason.h"
#include "protocol/headers.h"

namespace rocemu::nic {

enum class MrStatus : uint8_t {
  kOk = 0,
  kInvalidKey,      // no region with this key (never, freed, or re-keyed)
  kInvalidated,     // the region was invalidated (IETH / LOCAL_INV)
  kPdMismatch,      // the region is in another protection domain
  kAccessDenied,    // the region lacks a needed access right
  kOutOfBounds,     // [va, va+len) not inside the region, or wraps
  kMisaligned,      // atomic target not 8-byte aligned
  kLengthExceeded,  // an SG list is shorter than the data to place in it
  // The memory behind a valid key could not be reached: the process owning
  // a process region unmapped the pages, made them read-only, or exited.
  // An RNIC with on-demand paging reports the same way a page fault it
  // cannot resolve (local: IBV_WC_LOC_PROT_ERR; remote: NAK remote access
  // error).
  kFault,
};
const char* MrStatusName(MrStatus s);

// Status of the local WR whose SGE failed the check. A receive buffer too
// small is a length error; everything else is a protection error
// (IBV_WC_LOC_PROT_ERR), as rxe and ConnectX report it.
constexpr WcStatus LocalWcStatus(MrStatus s) {
  switch (s) {
    case MrStatus::kOk:
      return WcStatus::kSuccess;
    case MrStatus::kLengthExceeded:
      return WcStatus::kLocLenErr;
    default:
      return WcStatus::kLocProtErr;
  }
}

// NAK code the responder sends for a failed R_Key check: a misaligned atomic
// is an invalid request, every other failure a remote access error.
constexpr protocol::NakCode RemoteNakCode(MrStatus s) {
  return s == MrStatus::kMisaligned ? protocol::NakCode::kInvalidRequest
                                    : protocol::NakCode::kRemoteAccessError;
}

// Status the requester completes with when the responder rejected the
// access for reason `s`.
constexpr WcStatus RemoteWcStatus(MrStatus s) {
  return s == MrStatus::kOk           ? WcStatus::kSuccess
         : s == MrStatus::kMisaligned ? WcStatus::kRemInvReqErr
                                      : WcStatus::kRemAccessErr;
}

// The reason behind a failed R_Key check or remote access (drop_reason.h).
constexpr DropReason RemoteReason(MrStatus s) {
  switch (s) {
    case MrStatus::kOk:
      return DropReason::kNone;
    case MrStatus::kInvalidKey:
    case MrStatus::kInvalidated:
      return DropReason::kRkeyInvalid;
    case MrStatus::kPdMismatch:
      return DropReason::kRkeyPd;
    case MrStatus::kAccessDenied:
      return DropReason::kRkeyAccess;
    case MrStatus::kMisaligned:
      return DropReason::kAtomicMisaligned;
    case MrStatus::kFault:
      return DropReason::kMemoryFault;
    case MrStatus::kOutOfBounds:
    case MrStatus::kLengthExceeded:
      return DropReason::kRkeyBounds;
  }
  return DropReason::kRkeyInvalid;
}

// The same for an L_Key check or a local copy: a receive buffer too small
// is recv_too_short.
constexpr DropReason LocalReason(MrStatus s) {
  switch (s) {
    case MrStatus::kOk:
      return DropReason::kNone;
    case MrStatus::kInvalidKey:
    case MrStatus::kInvalidated:
      return DropReason::kLkeyInvalid;
    case MrStatus::kPdMismatch:
      return DropReason::kLkeyPd;
    case MrStatus::kAccessDenied:
      return DropReason::kLkeyAccess;
    case MrStatus::kOutOfBounds:
    case MrStatus::kMisaligned:
      return DropReason::kLkeyBounds;
    case MrStatus::kLengthExceeded:
      return DropReason::kRecvTooShort;
    case MrStatus::kFault:
      return DropReason::kMemoryFault;
  }
  return DropReason::kLkeyInvalid;
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_MR_STATUS_H_
