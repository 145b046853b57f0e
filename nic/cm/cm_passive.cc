// The passive side: a REQ matched to a listener, the consumer's Accept
// (REP), and the RTU or the first data packet that establishes the
// connection.
#include <cstring>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/cm/cm_timing.h"
#include "nic/rnic.h"
#include "protocol/cm_ip.h"

namespace rocemu::nic {

using protocol::CmReq;
namespace rej = protocol::cm_rej_reason;
namespace msg_response = protocol::cm_msg_response;

namespace {

// Our GID as the ARI of an "invalid GID" REJ (Linux sends the GID the
// REQ should have named).
std::array<uint8_t, 16> GidAri(const GidTable& gids) {
  std::array<uint8_t, 16> a{};
  if (std::optional<Gid> g = gids.Get(0)) std::memcpy(a.data(), g->data(), 16);
  return a;
}

// The table entry of a REQ's partition: the same partition base, the full
// member preferred (a limited one cannot talk to a limited peer).
std::optional<uint16_t> PKeyIndexFor(const PKeyTable& t, uint16_t pkey) {
  std::optional<uint16_t> limited;
  for (uint16_t i = 0; i < t.capacity(); ++i) {
    const uint16_t k = t.Get(i);
    if (!PKeyIsValid(k) || (k & kPKeyBaseMask) != (pkey & kPKeyBaseMask)) {
      continue;
    }
    if (PKeyIsFullMember(k)) return i;
    if (!limited) limited = i;
  }
  return limited;
}

}  // namespace

void CmAgent::OnReq(const ReceivedMad& m, TimeNs now) {
  (void)now;
  CmReq req;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &req);
  if (CmConnection* dup =
          FindByRemoteId(req.local_comm_id, req.local_ca_guid)) {
    OnDuplicateReq(*dup, m);
    return;
  }
  auto reject = [&](uint16_t reason, std::span<const uint8_t> ari = {}) {
    SendRejTo(m, 0, req.local_comm_id, msg_response::kReq, reason, ari);
  };
  // The same remote QP still has a connection here: that one is stale (the
  // peer lost it). Refuse the new one and end the old (as Linux's
  // cm_match_req does).
  auto stale = by_remote_qpn_.find(RemoteKey{req.local_qpn, req.local_ca_guid});
  if (stale != by_remote_qpn_.end()) {
    ++counters_.cm_stale_conn;
    reject(rej::kStaleConnection);
    if (CmConnection* old = Find(stale->second)) {
      if (old->state == CmState::kEstablished) {
        QpToError(*old);
        SendDreq(*old, {}, now);
      }
    }
    return;
  }
  QpType type;
  if (req.transport == protocol::cm_transport::kRc) {
    type = QpType::kRc;
  } else if (req.transport == protocol::cm_transport::kUc) {
    type = QpType::kUc;
  } else if (req.transport == protocol::cm_transport::kExtended &&
             req.extended_transport == protocol::cm_extended_transport::kXrc) {
    type = QpType::kXrcTgt;  // an INI QP asks for a TGT QP here
  } else {
    reject(rej::kInvalidTransportType);
    return;
  }
  std::optional<protocol::CmIpHeader> ip;
  bool ip_service = false, service_matched = false;
  const CmConnection* listener = MatchRequest(
      req.service_id, req.private_data, &ip, &ip_service, &service_matched);
  if (listener == nullptr) {
    // Nobody listens on the service ID: "invalid service ID". Someone does
    // but not on that address, or the rdma_cm header is unusable: the
    // rdma_cm layer refuses it (consumer defined), as Linux's does.
    reject(service_matched ? rej::kConsumerDefined : rej::kInvalidServiceId);
    return;
  }
  if (ip_service && !ip.has_value()) {
    reject(rej::kConsumerDefined);
    return;
  }
  if (listener->listen_qp_type.has_value() &&
      *listener->listen_qp_type != type) {
    // The service's id takes another transport (rdma_cm checks a REQ's
    // QP type against its id's; the spec's reason for it is this one).
    reject(rej::kInvalidTransportType);
    return;
  }
  const std::optional<uint32_t> sgid =
      rnic_.gid_table().Find(req.primary.remote_gid);
  const std::optional<uint16_t> pkey_index =
      PKeyIndexFor(rnic_.pkey_table(), req.pkey);
  if (!sgid.has_value() || !pkey_index.has_value()) {
    // Linux answers both a GID and a partition it does not have with
    // "invalid GID" (the path cannot be set up on any of its ports).
    const std::array<uint8_t, 16> ari = GidAri(rnic_.gid_table());
    reject(rej::kInvalidGid, ari);
    return;
  }
  if (req.path_mtu < static_cast<uint8_t>(PathMtu::kMtu256) ||
      req.path_mtu > static_cast<uint8_t>(rnic_.port_attr().active_mtu)) {
    reject(rej::kInvalidMtu);
    return;
  }

  CmConnection& c = NewId(listener->client);
  c.state = CmState::kReqRcvd;
  c.active = false;
  c.listen_id = listener->id;
  c.service_id = req.service_id;
  c.remote_comm_id = req.local_comm_id;
  c.remote_ca_guid = req.local_ca_guid;
  c.tid = m.hdr.tid;
  c.peer = m.from;
  c.qp_type = type;
  c.remote_qpn = req.local_qpn;
  c.pkey_index = *pkey_index;
  c.path.sgid_index = static_cast<uint8_t>(*sgid);
  c.path.dgid = req.primary.local_gid;
  c.path.dmac = m.from.mac;
  c.path.pkey = req.pkey;
  c.path.mtu = static_cast<PathMtu>(req.path_mtu);
  c.path.traffic_class = req.primary.traffic_class;
  c.path.flow_label = req.primary.flow_label;
  c.path.hop_limit = req.primary.hop_limit;
  c.path.sl = req.primary.sl;
  // The REQ's ACK timeout is 2 * life time + the requester's ACK delay:
  // one step less is the life time (as Linux recovers it).
  c.path.packet_life_time =
      req.primary.local_ack_timeout > 0 ? req.primary.local_ack_timeout - 1 : 0;
  c.path.packet_rate = req.primary.packet_rate;
  c.sq_psn = req.starting_psn;
  // Our receive PSN is chosen now, so that the QP can reach RTR (through
  // InitQpAttr) before Accept sends it in the REP.
  c.rq_psn = NewPsn();
  c.responder_resources = req.initiator_depth;
  c.initiator_depth = req.responder_resources;
  c.retry_count = req.retry_count;
  c.rnr_retry_count = req.rnr_retry_count;
  c.ack_timeout = req.primary.local_ack_timeout;
  c.max_cm_retries = req.max_cm_retries;
  // The requester answers within its Local CM Response Timeout, plus the
  // round trip.
  c.response_timeout_ns = IbTimeNs(req.local_cm_response_timeout) +
                          2 * IbTimeNs(c.path.packet_life_time);
  IndexRemote(c);

  CmEvent ev;
  ev.type = CmEventType::kReqReceived;
  ev.listen_id = listener->id;
  ev.service_id = req.service_id;
  ev.remote_ca_guid = req.local_ca_guid;
  ev.remote_qpn = req.local_qpn;
  ev.remote_qkey = req.local_qkey;
  ev.starting_psn = req.starting_psn;
  ev.responder_resources = c.responder_resources;
  ev.initiator_depth = c.initiator_depth;
  ev.retry_count = req.retry_count;
  ev.rnr_retry_count = req.rnr_retry_count;
  ev.flow_control = req.end_to_end_flow_control;
  ev.srq = req.srq;
  ev.qp_type = type;
  ev.path = c.path;
  ev.ip = ip;
  const std::span<const uint8_t> consumer =
      protocol::CmConsumerData(ip, req.private_data);
  ev.private_data.assign(consumer.begin(), consumer.end());
  Emit(std::move(ev), c);
}

void CmAgent::OnDuplicateReq(CmConnection& c, const ReceivedMad& m) {
  ++counters_.cm_dup_req_rcvd;
  switch (c.state) {
    case CmState::kMraReqSent:
      if (c.last_reply_valid) SendMad(c.peer, c.last_reply);
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      // The REP crossed the retransmitted REQ or was lost: send it again
      // rather than wait for its own timer.
      if (c.msg_valid) SendMad(c.peer, c.msg);
      break;
    case CmState::kTimewait:
      ++counters_.cm_stale_conn;
      SendRejTo(m, c.local_comm_id, c.remote_comm_id, msg_response::kOther,
                rej::kStaleConnection);
      break;
    default:
      // REQ_RCVD: the consumer has not answered yet; ESTABLISHED and later:
      // a late copy.
      break;
  }
}

absl::Status CmAgent::Accept(CmId id, const CmAcceptParams& p, TimeNs now) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  CmConnection& c = *cp;
  if (c.state != CmState::kReqRcvd && c.state != CmState::kMraReqSent) {
    return absl::FailedPreconditionError(
        absl::StrFormat("accept in CM state %s", CmStateName(c.state)));
  }
  if (p.private_data.size() > protocol::kCmRepPrivateDataSize) {
    return absl::InvalidArgumentError("REP private data above 196 bytes");
  }
  if (p.qpn == 0 || p.qpn > protocol::kQpnMask) {
    return absl::InvalidArgumentError("accept needs a QP number");
  }
  if (p.manage_qp) {
    QpType type;
    absl::Status s = CheckQp(p.qpn, &type);
    if (!s.ok()) return s;
    if (type != c.qp_type) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the REQ asks for %s, QP 0x%x is %s",
                          QpTypeName(c.qp_type), p.qpn, QpTypeName(type)));
    }
  }
  const DeviceAttr& d = rnic_.device_attr();
  BindQp(c, p.qpn, p.manage_qp);
  c.responder_resources = static_cast<uint8_t>(
      std::min<uint32_t>(p.responder_resources, d.max_qp_rd_atom));
  c.initiator_depth = static_cast<uint8_t>(
      std::min<uint32_t>(p.initiator_depth, d.max_qp_init_rd_atom));
  if (p.starting_psn.has_value()) c.rq_psn = *p.starting_psn & 0xFFFFFF;
  c.min_rnr_timer = p.min_rnr_timer;
  absl::Status s = DriveQp(c, QpState::kInit);
  if (s.ok()) s = DriveQp(c, QpState::kRtr);
  if (!s.ok()) {
    c.manage_qp = false;
    by_qpn_.erase(p.qpn);
    return s;
  }
  protocol::CmRep rep;
  rep.local_comm_id = c.local_comm_id;
  rep.remote_comm_id = c.remote_comm_id;
  rep.starting_psn = c.rq_psn;
  rep.responder_resources = c.responder_resources;
  rep.target_ack_delay = d.local_ca_ack_delay;
  rep.rnr_retry_count = p.rnr_retry_count & 7;
  rep.local_ca_guid = guid_;
  if (c.qp_type == QpType::kXrcTgt) {
    // The TGT QP goes in the Local EE Context Number, and it always
    // receives through XRC SRQs (Linux's cm_format_rep for XRC TGT).
    rep.local_eecn = c.local_qpn;
    rep.srq = true;
  } else {
    rep.local_qpn = c.local_qpn;
    rep.initiator_depth = c.initiator_depth;
    rep.end_to_end_flow_control = p.flow_control;
    rep.srq = p.srq;
  }
  std::copy(p.private_data.begin(), p.private_data.end(),
            rep.private_data.begin());
  c.state = CmState::kRepSent;
  SendRequest(c, Encode(c.tid, rep), c.response_timeout_ns, now);
  return absl::OkStatus();
}

void CmAgent::OnRtu(const ReceivedMad& m, TimeNs now) {
  (void)now;
  protocol::CmRtu rtu;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &rtu);
  CmConnection* c = FindByLocal(rtu.remote_comm_id);
  if (c == nullptr || c->remote_comm_id != rtu.local_comm_id) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) {
    ++counters_.cm_dup_rtu_rcvd;
    return;
  }
  Established(*c, false, rtu.private_data);
}

void CmAgent::OnCommEst(uint32_t qpn, TimeNs now) {
  (void)now;
  auto it = by_qpn_.find(qpn);
  if (it == by_qpn_.end()) return;
  CmConnection* c = Find(it->second);
  if (c == nullptr ||
      (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd)) {
    return;
  }
  ++counters_.cm_comm_est;
  Established(*c, true, {});
}

void CmAgent::Established(CmConnection& c, bool by_data,
                          std::span<const uint8_t> private_data) {
  (void)by_data;
  Disarm(c);
  c.msg_valid = false;
  c.state = CmState::kEstablished;
  if (!c.active) {
    // The passive QP waited in RTR for the RTU or the first packet.
    if (!DriveQp(c, QpState::kRts).ok()) QpToError(c);
  }
  CmEvent ev;
  ev.type = CmEventType::kEstablished;
  ev.remote_qpn = c.remote_qpn;
  ev.private_data.assign(private_data.begin(), private_data.end());
  Emit(std::move(ev), c);
}

absl::Status CmAgent::Establish(CmId id, TimeNs now) {
  (void)now;
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM connection %u", id));
  }
  CmConnection& c = *cp;
  switch (c.state) {
    case CmState::kRepRcvd:
    case CmState::kMraRepSent: {
      absl::Status s = DriveQp(c, QpState::kRtr);
      if (s.ok()) s = DriveQp(c, QpState::kRts);
      if (!s.ok()) return s;
      SendRtu(c, {});
      Established(c, false, {});
      return absl::OkStatus();
    }
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      Established(c, false, {});
      return absl::OkStatus();
    case CmState::kEstablished:
      return absl::AlreadyExistsError("already established");
    default:
      return absl::FailedPreconditionError(
          absl::StrFormat("establish in CM state %s", CmStateName(c.state)));
  }
}

}  // namespace rocemu::nic
