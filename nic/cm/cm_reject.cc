// Refusals and delays: REJ sent and received, MRA sent and received.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/cm/cm_timing.h"
#include "nic/rnic.h"

namespace rocemu::nic {

namespace rej = protocol::cm_rej_reason;
namespace msg_response = protocol::cm_msg_response;

absl::Status CmAgent::Reject(CmId id, uint16_t reason,
                             std::span<const uint8_t> private_data, TimeNs now,
                             std::span<const uint8_t> ari) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  if (private_data.size() > protocol::kCmRejPrivateDataSize ||
      ari.size() > protocol::kCmRejAriSize) {
    return absl::InvalidArgumentError(
        "REJ private data above 148 bytes or ARI above 72");
  }
  CmConnection& c = *cp;
  protocol::CmRej m;
  m.local_comm_id = c.local_comm_id;
  m.remote_comm_id = c.remote_comm_id;
  m.message_rejected = msg_response::kOther;
  bool timewait = false;
  switch (c.state) {
    case CmState::kReqRcvd:
      // Not yet known to the peer: Linux leaves the REJ's local ID 0.
      m.local_comm_id = 0;
      m.message_rejected = msg_response::kReq;
      break;
    case CmState::kMraReqSent:
      m.message_rejected = msg_response::kReq;
      break;
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      m.message_rejected = msg_response::kRep;
      break;
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      // The peer may already use the QP: the connection sits out TimeWait.
      timewait = true;
      break;
    default:
      return absl::FailedPreconditionError(
          absl::StrFormat("reject in CM state %s", CmStateName(c.state)));
  }
  m.reason = reason;
  m.rejected_info_length = static_cast<uint8_t>(ari.size());
  std::copy(ari.begin(), ari.end(), m.ari.begin());
  std::copy(private_data.begin(), private_data.end(), m.private_data.begin());
  SendMad(c.peer, Encode(c.tid, m));
  QpToError(c);
  if (timewait) {
    EnterTimewait(c, now);
  } else {
    ResetToIdle(c);
  }
  return absl::OkStatus();
}

void CmAgent::OnRej(const ReceivedMad& m, TimeNs now) {
  protocol::CmRej r;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &r);
  CmConnection* c = nullptr;
  if (r.reason == rej::kTimeout) {
    // The requester gave up before learning our ID: its ARI names its CA.
    uint64_t guid = 0;
    for (int i = 0; i < 8; ++i) guid = guid << 8 | r.ari[i];
    c = FindByRemoteId(r.local_comm_id, guid);
  }
  if (c == nullptr) {
    c = FindByLocal(r.remote_comm_id);
    // A REJ of our REQ may not know the passive side's ID (0); any other
    // must name both ends.
    if (c != nullptr && r.message_rejected != msg_response::kReq &&
        c->remote_comm_id != r.local_comm_id) {
      c = nullptr;
    }
  }
  if (c == nullptr || c->listener) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
      if (r.reason == rej::kStaleConnection) {
        EnterTimewait(*c, now);
      } else {
        ResetToIdle(*c);
      }
      break;
    case CmState::kDreqSent:
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
    case CmState::kEstablished:
      EnterTimewait(*c, now);
      break;
    default:
      ++counters_.cm_rx_wrong_state;
      return;
  }
  QpToError(*c);
  CmEvent ev;
  ev.type = CmEventType::kRejected;
  ev.reason = r.reason;
  const size_t ari_len = std::min<size_t>(r.rejected_info_length, r.ari.size());
  ev.ari.assign(r.ari.begin(), r.ari.begin() + ari_len);
  ev.private_data.assign(r.private_data.begin(), r.private_data.end());
  Emit(std::move(ev), *c);
  if (c->orphan && c->state == CmState::kIdle) Erase(*c);
}

absl::Status CmAgent::Mra(CmId id, uint8_t service_timeout,
                          std::span<const uint8_t> private_data) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  if (private_data.size() > protocol::kCmMraPrivateDataSize ||
      service_timeout > 31) {
    return absl::InvalidArgumentError(
        "MRA private data above 222 bytes or service timeout above 31");
  }
  CmConnection& c = *cp;
  protocol::CmMra m;
  if (c.state == CmState::kReqRcvd) {
    m.message_mraed = msg_response::kReq;
    c.state = CmState::kMraReqSent;
  } else if (c.state == CmState::kRepRcvd) {
    m.message_mraed = msg_response::kRep;
    c.state = CmState::kMraRepSent;
  } else {
    return absl::FailedPreconditionError(
        absl::StrFormat("MRA in CM state %s", CmStateName(c.state)));
  }
  m.local_comm_id = c.local_comm_id;
  m.remote_comm_id = c.remote_comm_id;
  m.service_timeout = service_timeout;
  std::copy(private_data.begin(), private_data.end(), m.private_data.begin());
  c.service_timeout = service_timeout;
  SendReply(c, Encode(c.tid, m));
  return absl::OkStatus();
}

void CmAgent::OnMraMsg(const ReceivedMad& m, TimeNs now) {
  protocol::CmMra mra;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &mra);
  CmConnection* c = FindByLocal(mra.remote_comm_id);
  // An MRA of our REQ may come before we know the peer's ID.
  if (c == nullptr || c->listener ||
      (mra.message_mraed != msg_response::kReq &&
       c->remote_comm_id != mra.local_comm_id)) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  CmState next;
  if (c->state == CmState::kReqSent &&
      mra.message_mraed == msg_response::kReq) {
    next = CmState::kMraReqRcvd;
  } else if (c->state == CmState::kRepSent &&
             mra.message_mraed == msg_response::kRep) {
    next = CmState::kMraRepRcvd;
  } else {
    if (c->state == CmState::kMraReqRcvd || c->state == CmState::kMraRepRcvd) {
      ++counters_.cm_dup_mra_rcvd;
    } else {
      ++counters_.cm_rx_wrong_state;
    }
    return;
  }
  c->state = next;
  // The peer needs its service time, then the answer's way back; the
  // request is retried after that (retries left unchanged).
  c->retry_timeout_ns =
      IbTimeNs(mra.service_timeout) + 2 * IbTimeNs(c->path.packet_life_time);
  Arm(*c, CmConnection::Timer::kResend, now + c->retry_timeout_ns);
  CmEvent ev;
  ev.type = CmEventType::kMraReceived;
  ev.service_timeout = mra.service_timeout;
  ev.private_data.assign(mra.private_data.begin(), mra.private_data.end());
  Emit(std::move(ev), *c);
}

}  // namespace rocemu::nic
