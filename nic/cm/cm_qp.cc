// The connection's QP: the attributes each step of the exchange gives it
// (ib_cm_init_qp_attr) and, for ids that manage their QP, the transitions
// themselves.
#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/rnic.h"

namespace rocemu::nic {

absl::Status CmAgent::CheckQp(uint32_t qpn, QpType* type) const {
  const Qp* qp = rnic_.GetQp(qpn);
  if (qp == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no QP 0x%x", qpn));
  }
  if (qp->type() == QpType::kUd || qp->type() == QpType::kRawPacket) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a %s QP is not connected by the CM", QpTypeName(qp->type())));
  }
  // The CM takes the QP from RESET or INIT; anything further along belongs
  // to a connection already.
  if (qp->state() != QpState::kReset && qp->state() != QpState::kInit) {
    return absl::FailedPreconditionError(
        absl::StrFormat("QP 0x%x is in %s", qpn, QpStateName(qp->state())));
  }
  *type = qp->type();
  return absl::OkStatus();
}

absl::StatusOr<std::pair<QpAttr, QpAttrMask>> CmAgent::InitQpAttr(
    CmId id, QpState target) const {
  const CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  const CmConnection& c = *cp;
  QpAttr a;
  QpAttrMask mask = qp_attr::kState;
  a.qp_state = target;
  // Which halves of a reliable connection the QP has: an XRC INI QP only
  // the requester, an XRC TGT QP only the responder (ib_cm's RTR and RTS
  // attributes per QP type; UC has neither's reliability attributes).
  const bool responder =
      c.qp_type == QpType::kRc || c.qp_type == QpType::kXrcTgt;
  const bool requester =
      c.qp_type == QpType::kRc || c.qp_type == QpType::kXrcIni;
  // Whether the remote side's parameters are known: the passive side from
  // the REQ, the active side from the REP.
  const bool remote_known =
      c.active
          ? (c.state == CmState::kRepRcvd || c.state == CmState::kMraRepSent ||
             c.state == CmState::kEstablished)
          : (c.state == CmState::kReqRcvd || c.state == CmState::kMraReqSent ||
             c.state == CmState::kRepSent || c.state == CmState::kMraRepRcvd ||
             c.state == CmState::kEstablished);
  switch (target) {
    case QpState::kInit:
      if (c.state == CmState::kIdle || c.state == CmState::kTimewait) {
        return absl::FailedPreconditionError("no connection in progress");
      }
      a.pkey_index = c.pkey_index;
      a.port_num = 1;
      // As Linux's CM: remote writes always; reads and atomics only when the
      // peer may have any outstanding (responder resources).
      a.qp_access_flags = access::kLocalWrite | access::kRemoteWrite;
      if (c.responder_resources > 0) {
        a.qp_access_flags |= access::kRemoteRead | access::kRemoteAtomic;
      }
      mask |= qp_attr::kPkeyIndex | qp_attr::kPort | qp_attr::kAccessFlags;
      break;
    case QpState::kRtr:
      if (!remote_known) {
        return absl::FailedPreconditionError(
            absl::StrFormat("RTR needs the peer's parameters (CM state %s)",
                            CmStateName(c.state)));
      }
      a.path_mtu = c.path.mtu;
      a.dest_qp_num = c.remote_qpn;
      a.rq_psn = c.rq_psn;
      a.ah_attr.dgid = c.path.dgid;
      a.ah_attr.sgid_index = c.path.sgid_index;
      a.ah_attr.dmac = c.path.dmac;
      a.ah_attr.traffic_class = c.path.traffic_class;
      a.ah_attr.flow_label = c.path.flow_label;
      a.ah_attr.hop_limit = c.path.hop_limit;
      a.ah_attr.sl = c.path.sl;
      a.ah_attr.port_num = 1;
      mask |= qp_attr::kAv | qp_attr::kPathMtu | qp_attr::kDestQpn |
              qp_attr::kRqPsn;
      if (responder) {
        a.max_dest_rd_atomic = c.responder_resources;
        a.min_rnr_timer = c.min_rnr_timer;
        mask |= qp_attr::kMaxDestRdAtomic | qp_attr::kMinRnrTimer;
      }
      break;
    case QpState::kRts:
      // The passive side may go to RTS before its REP leaves (rdma_cm
      // does), as Linux's ib_cm allows.
      if (!remote_known) {
        return absl::FailedPreconditionError(
            absl::StrFormat("RTS in CM state %s", CmStateName(c.state)));
      }
      a.sq_psn = c.sq_psn;
      mask |= qp_attr::kSqPsn;
      if (requester) {
        a.retry_cnt = c.retry_count;
        a.rnr_retry = c.rnr_retry_count;
        a.max_rd_atomic = c.initiator_depth;
        mask |=
            qp_attr::kRetryCnt | qp_attr::kRnrRetry | qp_attr::kMaxQpRdAtomic;
      }
      if (requester || responder) {
        // The TGT QP too: the table requires its ACK timeout at RTS.
        a.timeout = c.ack_timeout;
        mask |= qp_attr::kTimeout;
      }
      break;
    default:
      return absl::InvalidArgumentError(absl::StrFormat(
          "the CM gives no attributes for %s", QpStateName(target)));
  }
  return std::make_pair(a, mask);
}

absl::Status CmAgent::DriveQp(CmConnection& c, QpState target) {
  if (!c.manage_qp) return absl::OkStatus();
  const Qp* qp = rnic_.GetQp(c.local_qpn);
  if (qp == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no QP 0x%x", c.local_qpn));
  }
  // RTR and RTS are reached once; INIT may be applied again (INIT -> INIT
  // updates the partition and access rights).
  if (target != QpState::kInit && qp->state() == target) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::pair<QpAttr, QpAttrMask>> a = InitQpAttr(c.id, target);
  if (!a.ok()) return a.status();
  return rnic_.ModifyQp(c.local_qpn, a->first, a->second);
}

void CmAgent::QpToError(CmConnection& c) {
  if (!c.manage_qp) return;
  const Qp* qp = rnic_.GetQp(c.local_qpn);
  if (qp == nullptr || qp->state() == QpState::kErr ||
      qp->state() == QpState::kReset) {
    return;
  }
  QpAttr a;
  a.qp_state = QpState::kErr;
  (void)rnic_.ModifyQp(c.local_qpn, a, qp_attr::kState);
}

}  // namespace rocemu::nic
