#include "nic/qp_state.h"

#include "absl/strings/str_format.h"

namespace rocemu::nic {

const char* QpStateName(QpState s) {
  switch (s) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kSqd:
      return "SQD";
    case QpState::kSqe:
      return "SQE";
    case QpState::kErr:
      return "ERR";
  }
  return "?";
}

const char* QpTypeName(QpType t) {
  switch (t) {
    case QpType::kRc:
      return "RC";
    case QpType::kUc:
      return "UC";
    case QpType::kUd:
      return "UD";
    case QpType::kXrcIni:
      return "XRC_INI";
    case QpType::kXrcTgt:
      return "XRC_TGT";
    case QpType::kRawPacket:
      return "RAW_PACKET";
  }
  return "?";
}

namespace {

using namespace qp_attr;  // NOLINT: the table below reads like the spec

// raw: IBV_QPT_RAW_PACKET, as the kernel's table has it (the port at
// RESET->INIT, nothing else).
struct PerType {
  QpAttrMask rc, uc, ud, raw = 0;
};

// XRC takes RC's attributes; the initiator has no responder, the target no
// requester, so neither is required to set the other half's (what the
// kernel's modify-QP table requires of IB_QPT_XRC_INI and _TGT), and both
// still take them.
constexpr QpAttrMask kResponderOnly = kMaxDestRdAtomic | kMinRnrTimer;
constexpr QpAttrMask kRequesterOnly = kRetryCnt | kRnrRetry | kMaxQpRdAtomic;

QpAttrMask Pick(const PerType& p, QpType t) {
  switch (t) {
    case QpType::kRc:
      return p.rc;
    case QpType::kUc:
      return p.uc;
    case QpType::kUd:
      return p.ud;
    case QpType::kXrcIni:
      return p.rc & ~kResponderOnly;
    case QpType::kXrcTgt:
      return p.rc & ~kRequesterOnly;
    case QpType::kRawPacket:
      return p.raw;
  }
  return 0;
}

}  // namespace

QpTransitionMasks GetQpTransitionMasks(QpType t, QpState cur, QpState next) {
  QpTransitionMasks m;
  // Any state may go to RESET or ERR with no attributes.
  if (next == QpState::kReset || next == QpState::kErr) {
    m.valid = true;
    return m;
  }
  auto set = [&](const PerType& req, const PerType& opt) {
    m.valid = true;
    m.required = Pick(req, t);
    m.optional = Pick(opt, t);
    if (IsXrc(t)) m.optional |= (req.rc | opt.rc) & ~m.required;
  };
  const PerType none{0, 0, 0};
  // RTR->RTS, RTS->RTS and SQD->RTS take the same optional attributes.
  const PerType to_rts_optional{
      kCurState | kAccessFlags | kAltPath | kPathMigState | kMinRnrTimer,
      kCurState | kAccessFlags | kAltPath | kPathMigState, kCurState | kQkey,
      kCurState};
  switch (cur) {
    case QpState::kReset:
      if (next == QpState::kInit) {
        set({kPkeyIndex | kPort | kAccessFlags,
             kPkeyIndex | kPort | kAccessFlags, kPkeyIndex | kPort | kQkey,
             kPort},
            none);
      }
      break;
    case QpState::kInit:
      if (next == QpState::kInit) {
        set(none, {kPkeyIndex | kPort | kAccessFlags,
                   kPkeyIndex | kPort | kAccessFlags,
                   kPkeyIndex | kPort | kQkey, kPort});
      } else if (next == QpState::kRtr) {
        set({kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic |
                 kMinRnrTimer,
             kAv | kPathMtu | kDestQpn | kRqPsn, 0},
            {kAltPath | kAccessFlags | kPkeyIndex,
             kAltPath | kAccessFlags | kPkeyIndex, kPkeyIndex | kQkey});
      }
      break;
    case QpState::kRtr:
      if (next == QpState::kRts) {
        set({kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic, kSqPsn,
             kSqPsn},
            to_rts_optional);
      }
      break;
    case QpState::kRts:
      if (next == QpState::kRts) {
        set(none, to_rts_optional);
      } else if (next == QpState::kSqd) {
        set(none, {kEnSqdAsyncNotify, kEnSqdAsyncNotify, kEnSqdAsyncNotify});
      }
      break;
    case QpState::kSqd:
      if (next == QpState::kRts) {
        set(none, to_rts_optional);
      } else if (next == QpState::kSqd) {
        set(none, {kPort | kAv | kTimeout | kRetryCnt | kRnrRetry |
                       kMaxQpRdAtomic | kMaxDestRdAtomic | kAltPath |
                       kAccessFlags | kPkeyIndex | kMinRnrTimer | kPathMigState,
                   kAv | kAltPath | kAccessFlags | kPkeyIndex | kPathMigState,
                   kPkeyIndex | kQkey});
      }
      break;
    case QpState::kSqe:
      if (next == QpState::kRts) {
        // RC QPs never enter SQE (a send error moves them to ERR).
        set(none, {0, kCurState | kAccessFlags, kCurState | kQkey});
        if (IsReliable(t)) m.valid = false;
      }
      break;
    case QpState::kErr:
      break;
  }
  return m;
}

absl::Status CheckQpTransition(QpType type, QpState cur, QpState next,
                               QpAttrMask mask, QpState claimed_cur) {
  const QpTransitionMasks m = GetQpTransitionMasks(type, cur, next);
  if (!m.valid) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "no QP transition %s -> %s", QpStateName(cur), QpStateName(next)));
  }
  if ((mask & m.required) != m.required) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "QP transition %s -> %s lacks required attributes 0x%x",
        QpStateName(cur), QpStateName(next), m.required & ~mask));
  }
  const QpAttrMask extra = mask & ~(m.required | m.optional | kState);
  if (extra != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QP transition %s -> %s does not take attributes 0x%x",
                        QpStateName(cur), QpStateName(next), extra));
  }
  if ((mask & kCurState) != 0 && claimed_cur != cur) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cur_qp_state %s does not match the QP state %s",
                        QpStateName(claimed_cur), QpStateName(cur)));
  }
  return absl::OkStatus();
}

}  // namespace rocemu::nic
