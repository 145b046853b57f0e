// Teardown: DREQ and DREP, into TimeWait.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/rnic.h"

namespace rocemu::nic {

absl::Status CmAgent::Disconnect(CmId id, std::span<const uint8_t> private_data,
                                 TimeNs now) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  if (private_data.size() > protocol::kCmDreqPrivateDataSize) {
    return absl::InvalidArgumentError("DREQ private data above 220 bytes");
  }
  CmConnection& c = *cp;
  switch (c.state) {
    case CmState::kEstablished:
      // rdma_disconnect: the QP stops first, so nothing is sent after the
      // DREQ.
      QpToError(c);
      SendDreq(c, private_data, now);
      return absl::OkStatus();
    case CmState::kDreqRcvd:
      SendDrep(c, private_data);
      EnterTimewait(c, now);
      return absl::OkStatus();
    default:
      return absl::FailedPreconditionError(
          absl::StrFormat("disconnect in CM state %s", CmStateName(c.state)));
  }
}

void CmAgent::SendDreq(CmConnection& c, std::span<const uint8_t> private_data,
                       TimeNs now) {
  protocol::CmDreq m;
  m.local_comm_id = c.local_comm_id;
  m.remote_comm_id = c.remote_comm_id;
  m.remote_qpn = c.remote_qpn;
  std::copy_n(private_data.begin(),
              std::min(private_data.size(), m.private_data.size()),
              m.private_data.begin());
  c.state = CmState::kDreqSent;
  SendRequest(c, Encode(OwnTid(c), m), c.response_timeout_ns, now);
}

void CmAgent::SendDrep(CmConnection& c, std::span<const uint8_t> private_data) {
  protocol::CmDrep m;
  m.local_comm_id = c.local_comm_id;
  m.remote_comm_id = c.remote_comm_id;
  std::copy_n(private_data.begin(),
              std::min(private_data.size(), m.private_data.size()),
              m.private_data.begin());
  // The DREP answers the DREQ's transaction.
  SendReply(c, Encode(c.tid, m));
}

void CmAgent::OnDreq(const ReceivedMad& m, TimeNs now) {
  protocol::CmDreq dreq;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &dreq);
  CmConnection* c = FindByLocal(dreq.remote_comm_id);
  if (c == nullptr || c->listener || c->remote_comm_id != dreq.local_comm_id ||
      c->state == CmState::kIdle) {
    // Gone already (our DREP was lost and TimeWait is over, whether or not
    // the consumer destroyed the id yet): answer anyway so the peer's DREQ
    // completes instead of timing out.
    ++counters_.cm_dup_dreq_rcvd;
    protocol::CmDrep drep;
    drep.local_comm_id = dreq.remote_comm_id;
    drep.remote_comm_id = dreq.local_comm_id;
    SendMad(m.from, Encode(m.hdr.tid, drep));
    return;
  }
  if (dreq.remote_qpn != c->local_qpn) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  switch (c->state) {
    case CmState::kRepSent:
    case CmState::kDreqSent:  // simultaneous disconnect
    case CmState::kEstablished:
    case CmState::kMraRepRcvd:
      break;
    case CmState::kTimewait:
      ++counters_.cm_dup_dreq_rcvd;
      if (c->last_reply_valid) SendMad(c->peer, c->last_reply);
      return;
    case CmState::kDreqRcvd:
      ++counters_.cm_dup_dreq_rcvd;
      return;
    default:
      ++counters_.cm_rx_wrong_state;
      return;
  }
  Disarm(*c);
  c->msg_valid = false;
  c->state = CmState::kDreqRcvd;
  c->tid = m.hdr.tid;
  QpToError(*c);
  // rdma_cm answers a DREQ at once and tells the consumer afterwards.
  SendDrep(*c, {});
  EnterTimewait(*c, now);
  CmEvent ev;
  ev.type = CmEventType::kDisconnected;
  ev.by_peer = true;
  ev.private_data.assign(dreq.private_data.begin(), dreq.private_data.end());
  Emit(std::move(ev), *c);
}

void CmAgent::OnDrep(const ReceivedMad& m, TimeNs now) {
  protocol::CmDrep drep;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &drep);
  CmConnection* c = FindByLocal(drep.remote_comm_id);
  if (c == nullptr || c->listener || c->remote_comm_id != drep.local_comm_id) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  if (c->state == CmState::kTimewait) {
    // A simultaneous disconnect: the peer's DREQ took us to TimeWait and
    // this answers our own.
    ++counters_.cm_dup_drep_rcvd;
    return;
  }
  if (c->state != CmState::kDreqSent && c->state != CmState::kDreqRcvd) {
    ++counters_.cm_rx_wrong_state;
    return;
  }
  Disarm(*c);
  EnterTimewait(*c, now);
  CmEvent ev;
  ev.type = CmEventType::kDisconnected;
  ev.private_data.assign(drep.private_data.begin(), drep.private_data.end());
  Emit(std::move(ev), *c);
}

}  // namespace rocemu::nic
