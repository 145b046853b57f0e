#include "nic/frame_verdict.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "protocol/errors.h"
#include "protocol/headers.h"
#include "protocol/opcode.h"

namespace rocemu::nic {
namespace {

using R = DropReason;

std::string Text(DropReason r) { return std::string(DropReasonText(r)); }

std::string OpName(uint64_t opcode) {
  const protocol::OpcodeInfo& op =
      protocol::GetOpcodeInfo(static_cast<uint8_t>(opcode));
  if (op.name.empty()) return absl::StrFormat("opcode 0x%02x", opcode);
  return std::string(op.name.data(), op.name.size());
}

const char* OperationName(uint64_t op) {
  switch (static_cast<protocol::Operation>(op)) {
    case protocol::Operation::kNone:
      return "none";
    case protocol::Operation::kSend:
      return "SEND";
    case protocol::Operation::kWrite:
      return "RDMA WRITE";
    case protocol::Operation::kReadRequest:
      return "RDMA READ";
    default:
      return "another operation";
  }
}

std::string Rights(uint64_t flags) {
  std::string s;
  auto add = [&](AccessFlags f, const char* name) {
    if (flags & f) absl::StrAppend(&s, s.empty() ? "" : "|", name);
  };
  add(access::kLocalWrite, "LOCAL_WRITE");
  add(access::kRemoteWrite, "REMOTE_WRITE");
  add(access::kRemoteRead, "REMOTE_READ");
  add(access::kRemoteAtomic, "REMOTE_ATOMIC");
  add(access::kMwBind, "MW_BIND");
  add(access::kFlushGlobal, "FLUSH_GLOBAL");
  add(access::kFlushPersistent, "FLUSH_PERSISTENT");
  return s.empty() ? "none" : s;
}

// "R_Key 0x2d5: VA 0x7f12..+4096 outside MR [0x7f12..,+2048)" and friends.
std::string MemoryDetail(R r, const uint64_t* a) {
  const bool remote = r == R::kRkeyInvalid || r == R::kRkeyPd ||
                      r == R::kRkeyAccess || r == R::kRkeyBounds ||
                      r == R::kAtomicMisaligned || r == R::kInvalidateFailed;
  const char* key = remote ? "R_Key" : "L_Key";
  const uint64_t need = a[5] & 0xFF;
  const uint64_t mr_access = (a[5] >> 8) & 0xFFFF;
  const bool found = (a[5] >> 24) & 1;
  const uint64_t qp_pd = (a[5] >> 32) & 0xFFFF;
  const uint64_t mr_pd = (a[5] >> 48) & 0xFFFF;
  std::string s = absl::StrFormat("%s 0x%x: VA 0x%x+%u", key, a[0], a[1], a[2]);
  std::string mr =
      found ? absl::StrFormat("MR [0x%x,+%u)", a[3], a[4]) : "no MR";
  switch (r) {
    case R::kRkeyInvalid:
    case R::kLkeyInvalid:
      return absl::StrCat(s,
                          ": no valid MR or MW has this key (never "
                          "registered, deregistered or invalidated)");
    case R::kRkeyPd:
    case R::kLkeyPd:
      return absl::StrFormat("%s: %s is in PD %u, the QP in PD %u", s, mr,
                             mr_pd, qp_pd);
    case R::kRkeyAccess:
    case R::kLkeyAccess:
      return absl::StrFormat("%s: needs %s, %s grants %s", s, Rights(need), mr,
                             Rights(mr_access));
    case R::kRkeyBounds:
    case R::kLkeyBounds:
      return absl::StrFormat("%s outside %s", s, mr);
    case R::kAtomicMisaligned:
      return absl::StrCat(s, ": atomic target not 8-byte aligned");
    case R::kMemoryFault:
      return absl::StrFormat(
          "%s: the pages behind %s are gone (process exited or unmapped)", s,
          mr);
    case R::kInvalidateFailed:
      return absl::StrFormat("R_Key 0x%x cannot be invalidated by this QP",
                             a[0]);
    default:
      return s;
  }
}

}  // namespace

VerdictLog::VerdictLog(uint64_t first_id, uint32_t slots) : next_id_(first_id) {
  uint32_t n = 1;
  while (n < slots) n <<= 1;
  ring_.resize(n);
  mask_ = n - 1;
}

const char* VerdictActionName(VerdictAction a) {
  switch (a) {
    case VerdictAction::kNone:
      return "";
    case VerdictAction::kDropped:
      return "dropped";
    case VerdictAction::kNaked:
      return "NAKed";
    case VerdictAction::kAnswered:
      return "answered again";
    case VerdictAction::kQpError:
      return "QP to ERR";
    case VerdictAction::kFailedWr:
      return "work request failed";
    case VerdictAction::kRetried:
      return "requester goes back";
    case VerdictAction::kMarked:
      return "marked";
    case VerdictAction::kHeld:
      return "held";
    case VerdictAction::kDuplicated:
      return "duplicated";
    case VerdictAction::kCorrupted:
      return "corrupted";
    case VerdictAction::kAccepted:
      return "accepted";
  }
  return "";
}

std::string DescribeReason(DropReason r, const uint64_t* a) {
  switch (r) {
    case R::kBadIcrc:
    case R::kIpChecksum:
      return Text(r);
    case R::kFlushInvalid:
      return absl::StrFormat("%s: placement type 0x%x, selectivity level %u",
                             Text(r), a[0], a[1]);
    case R::kXrcSrqInvalid:
      return absl::StrFormat("%s: SRQ number 0x%06x", Text(r), a[0]);
    case R::kXrcSrqXrcd:
      return absl::StrFormat("%s: SRQ 0x%06x is of XRCD 0x%x, the QP's 0x%x",
                             Text(r), a[0], a[2], a[1]);
    case R::kMalformed:
      return absl::StrCat(Text(r), " (",
                          std::string(protocol::ParseErrorName(
                              static_cast<protocol::ParseError>(a[0]))),
                          ")");
    case R::kBadOpcode:
      return absl::StrCat(Text(r), ": ", OpName(a[0]));
    case R::kUnknownQpn:
      return absl::StrFormat("no QP 0x%06x", a[0]);
    case R::kBadPkey:
      return absl::StrFormat(
          "P_Key 0x%04x does not match the QP's (index %u: 0x%04x)", a[0], a[1],
          a[2]);
    case R::kBadQkey:
      return absl::StrFormat("Q_Key 0x%08x, the QP's is 0x%08x", a[0], a[1]);
    case R::kQpState:
      return absl::StrFormat("%s in state %s", OpName(a[1]),
                             QpStateName(static_cast<QpState>(a[0])));
    case R::kPsnSequence:
      return absl::StrFormat(
          "PSN out of sequence: expected 0x%06x, received 0x%06x", a[0], a[1]);
    case R::kDuplicate:
    case R::kDuplicateUnmatched:
      return absl::StrFormat("%s: PSN 0x%06x, expected 0x%06x", Text(r), a[0],
                             a[1]);
    case R::kRnr:
      return absl::StrFormat("no receive WQE for PSN 0x%06x (RNR timer %u)",
                             a[0], a[1]);
    case R::kOpcodeSequence:
      return absl::StrFormat("%s: %s while %s is in progress", Text(r),
                             OpName(a[0]), OperationName(a[1]));
    case R::kQpAccess:
      return absl::StrFormat("%s: needs %s, qp_access_flags %s", Text(r),
                             Rights(a[0]), Rights(a[1]));
    case R::kMtuExceeded:
      return absl::StrFormat("payload %u bytes, path MTU %u", a[0], a[1]);
    case R::kLengthError:
      switch (a[2]) {
        case kLenWriteRemaining:
          return absl::StrFormat(
              "length error: WRITE payload %u bytes, %u left of the RETH "
              "length",
              a[0], a[1]);
        case kLenWriteLast:
          return absl::StrFormat(
              "length error: last WRITE packet %u bytes, %u expected", a[0],
              a[1]);
        case kLenAtomicWrite:
          return absl::StrFormat(
              "length error: ATOMIC WRITE of %u bytes, RETH length %u (8 "
              "and 8 required)",
              a[0], a[1]);
        default:
          return absl::StrFormat(
              "length error: payload %u bytes where the packet's position "
              "needs %u",
              a[0], a[1]);
      }
    case R::kRecvTooShort:
      return absl::StrFormat(
          "message of %s%u bytes, the receive WQE's buffers hold %u",
          a[2] != 0 ? "" : "at least ", a[0], a[1]);
    case R::kRkeyInvalid:
    case R::kRkeyPd:
    case R::kRkeyAccess:
    case R::kRkeyBounds:
    case R::kAtomicMisaligned:
    case R::kLkeyInvalid:
    case R::kLkeyPd:
    case R::kLkeyAccess:
    case R::kLkeyBounds:
    case R::kMemoryFault:
    case R::kInvalidateFailed:
      return MemoryDetail(r, a);
    case R::kCqOverflow:
      return absl::StrFormat("CQ 0x%x (%u entries) overflowed", a[0], a[1]);
    case R::kGhostResponse:
    case R::kDuplicateResponse:
      return absl::StrFormat("%s: PSN 0x%06x, outstanding [0x%06x, 0x%06x)",
                             Text(r), a[0], a[1], a[2]);
    case R::kAckTimeout:
      return absl::StrFormat(
          "no ACK for PSN 0x%06x in time (%u of %u retries left)", a[0], a[1],
          a[2]);
    case R::kNakPsnSequence:
    case R::kNakRnr:
    case R::kNakInvalidRequest:
    case R::kNakRemoteAccess:
    case R::kNakRemoteOp:
    case R::kNakInvalidRdRequest:
    case R::kNakReserved:
      return absl::StrFormat("%s for PSN 0x%06x (AETH 0x%02x)", Text(r), a[0],
                             a[1]);
    case R::kImpliedNak:
      return absl::StrFormat("%s (PSN 0x%06x)", Text(r), a[0]);
    case R::kRetryExceeded:
      return absl::StrFormat(
          "PSN 0x%06x sent %u times without an ACK (retry_cnt %u)", a[0],
          a[1] + 1, a[1]);
    case R::kRnrRetryExceeded:
      return absl::StrFormat("PSN 0x%06x met RNR NAKs %u times (rnr_retry %u)",
                             a[0], a[1] + 1, a[1]);
    case R::kBadResponse:
      return absl::StrFormat("%s: %u bytes, %u expected", Text(r), a[0], a[1]);
    case R::kMsgTooLong:
      return absl::StrFormat("message of %u bytes, the limit is %u", a[0],
                             a[1]);
    case R::kTxBuildFailed:
      return absl::StrFormat("%s (%u bytes)", Text(r), a[0]);
    case R::kFaultDrop:
    case R::kFaultDuplicate:
    case R::kFaultReorder:
      return absl::StrFormat("%s (faults.%s %.6g, %s)", Text(r),
                             r == R::kFaultDrop        ? "drop"
                             : r == R::kFaultDuplicate ? "duplicate"
                                                       : "reorder",
                             static_cast<double>(a[0]) / 1e6,
                             a[1] ? "tx" : "rx");
    case R::kFaultCorrupt:
      return absl::StrFormat(
          "fault injector: bit %u flipped (faults.corrupt "
          "%.6g, %s)",
          a[2], static_cast<double>(a[0]) / 1e6, a[1] ? "tx" : "rx");
    case R::kFaultDelay:
      return absl::StrFormat(
          "fault injector: delayed %u ns (faults.delay "
          "%.6g, %s)",
          a[2], static_cast<double>(a[0]) / 1e6, a[1] ? "tx" : "rx");
    case R::kCpTailDrop:
      return absl::StrFormat("%s: queue at %u bytes of %u", Text(r), a[0],
                             a[1]);
    case R::kCpEcnMark:
      return absl::StrFormat("%s: queue at %u bytes", Text(r), a[0]);
    case R::kPfcPaused:
      return absl::StrFormat("%s: priority %u", Text(r), a[0]);
    default:
      return std::string(Text(r));
  }
}

std::string DescribeVerdict(const FrameVerdict& v) {
  std::string s;
  if (v.reason != DropReason::kNone) {
    absl::StrAppend(&s, VerdictActionName(v.action), ": ",
                    DescribeReason(v.reason, v.args));
  }
  if (v.sent_reason != DropReason::kNone) {
    if (!s.empty()) s += "; ";
    if (v.resent) {
      absl::StrAppend(&s, "retransmission after ",
                      DescribeReason(v.sent_reason, v.args));
      if (v.cause_id != 0) absl::StrAppend(&s, " (packet ", v.cause_id, ")");
    } else if (v.cause_id != 0) {
      absl::StrAppend(&s, "answers packet ", v.cause_id, ": ",
                      DescribeReason(v.sent_reason, v.args));
    } else {
      absl::StrAppend(&s, DescribeReason(v.sent_reason, v.args));
    }
  }
  return s;
}

}  // namespace rocemu::nic
