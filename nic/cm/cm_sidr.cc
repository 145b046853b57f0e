// Service ID resolution for UD (SIDR_REQ / SIDR_REP): what rdma_cm's UDP
// port space uses to learn a remote UD QP's number and Q_Key.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/rnic.h"
#include "protocol/cm_ip.h"

namespace rocemu::nic {

namespace sidr_status = protocol::cm_sidr_status;

absl::StatusOr<CmId> CmAgent::SidrQuery(const CmSidrQueryParams& p,
                                        TimeNs now) {
  const size_t room = protocol::CmConsumerRoom(
      protocol::kCmSidrReqPrivateDataSize, p.ip.has_value());
  if (p.private_data.size() > room) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SIDR_REQ private data above %u bytes", room));
  }
  if (p.max_cm_retries > 15 || p.timeout_ns == 0) {
    return absl::InvalidArgumentError("SIDR retries above 15 or no timeout");
  }
  uint16_t pkey_index = 0;
  absl::Status s = CheckPath(p.path, &pkey_index);
  if (!s.ok()) return s;
  CmConnection& c = NewId(p.client);
  c.active = true;
  c.state = CmState::kSidrReqSent;
  c.service_id = p.service_id;
  c.path = p.path;
  c.pkey_index = pkey_index;
  c.max_cm_retries = p.max_cm_retries;
  c.tid = OwnTid(c);
  c.peer = PeerOnPath(p.path, pkey_index);
  protocol::CmSidrReq m;
  m.request_id = c.local_comm_id;
  m.pkey = p.path.pkey;
  m.service_id = p.service_id;
  protocol::PutCmPrivateData(p.ip, p.private_data, m.private_data);
  SendRequest(c, Encode(c.tid, m), p.timeout_ns, now);
  return c.id;
}

void CmAgent::SendSidrRep(const MadAddress& to, uint64_t tid,
                          uint32_t request_id, uint64_t service_id,
                          const CmSidrReplyParams& p) {
  protocol::CmSidrRep m;
  m.request_id = request_id;
  m.status = p.status;
  m.qpn = p.qpn;
  m.service_id = service_id;
  m.qkey = p.qkey;
  m.additional_info_length =
      static_cast<uint8_t>(std::min(p.info.size(), m.additional_info.size()));
  std::copy_n(p.info.begin(), m.additional_info_length,
              m.additional_info.begin());
  std::copy_n(p.private_data.begin(),
              std::min(p.private_data.size(), m.private_data.size()),
              m.private_data.begin());
  SendMad(to, Encode(tid, m));
}

void CmAgent::OnSidrReq(const ReceivedMad& m, TimeNs now) {
  (void)now;
  protocol::CmSidrReq req;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &req);
  if (sidr_by_remote_.contains({req.request_id, m.from.gid})) {
    // Still being answered by the consumer: the retransmission is dropped.
    ++counters_.cm_dup_sidr_req_rcvd;
    return;
  }
  std::optional<protocol::CmIpHeader> ip;
  bool ip_service = false, service_matched = false;
  const CmConnection* listener = MatchRequest(
      req.service_id, req.private_data, &ip, &ip_service, &service_matched);
  if (listener == nullptr || (ip_service && !ip.has_value())) {
    CmSidrReplyParams p;
    p.status = listener == nullptr && !service_matched
                   ? sidr_status::kServiceIdNotSupported
                   : sidr_status::kRejected;
    SendSidrRep(m.from, m.hdr.tid, req.request_id, req.service_id, p);
    return;
  }
  CmConnection& c = NewId(listener->client);
  c.state = CmState::kSidrReqRcvd;
  c.listen_id = listener->id;
  c.service_id = req.service_id;
  c.remote_comm_id = req.request_id;
  c.tid = m.hdr.tid;
  c.peer = m.from;
  c.path.sgid_index = m.from.sgid_index;
  c.path.dgid = m.from.gid;
  c.path.dmac = m.from.mac;
  c.path.pkey = req.pkey;
  c.path.traffic_class = m.from.traffic_class;
  sidr_by_remote_[{req.request_id, m.from.gid}] = c.id;
  CmEvent ev;
  ev.type = CmEventType::kSidrReqReceived;
  ev.listen_id = listener->id;
  ev.service_id = req.service_id;
  ev.qp_type = QpType::kUd;
  ev.path = c.path;
  ev.ip = ip;
  const std::span<const uint8_t> consumer =
      protocol::CmConsumerData(ip, req.private_data);
  ev.private_data.assign(consumer.begin(), consumer.end());
  Emit(std::move(ev), c);
}

absl::Status CmAgent::SidrReply(CmId id, const CmSidrReplyParams& p) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan || cp->listener) {
    return absl::NotFoundError(absl::StrFormat("no CM id %u", id));
  }
  CmConnection& c = *cp;
  if (c.state != CmState::kSidrReqRcvd) {
    return absl::FailedPreconditionError(
        absl::StrFormat("SIDR reply in CM state %s", CmStateName(c.state)));
  }
  if (p.info.size() > protocol::kCmSidrRepInfoSize ||
      p.private_data.size() > protocol::kCmSidrRepPrivateDataSize ||
      p.qpn > protocol::kQpnMask) {
    return absl::InvalidArgumentError(
        "SIDR_REP info above 72 bytes, private data above 136 or bad QPN");
  }
  SendSidrRep(c.peer, c.tid, c.remote_comm_id, c.service_id, p);
  c.local_qpn = p.qpn;
  ResetToIdle(c);
  return absl::OkStatus();
}

void CmAgent::OnSidrRep(const ReceivedMad& m, TimeNs now) {
  (void)now;
  protocol::CmSidrRep rep;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &rep);
  CmConnection* c = FindByLocal(rep.request_id);
  if (c == nullptr || c->listener) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  if (c->state != CmState::kSidrReqSent) {
    ++counters_.cm_rx_wrong_state;
    return;
  }
  ResetToIdle(*c);
  c->remote_qpn = rep.qpn;
  CmEvent ev;
  ev.type = CmEventType::kSidrRepReceived;
  ev.sidr_status = rep.status;
  ev.sidr_qpn = rep.qpn;
  ev.sidr_qkey = rep.qkey;
  ev.remote_qpn = rep.qpn;
  ev.remote_qkey = rep.qkey;
  ev.sidr_info.assign(rep.additional_info.begin(),
                      rep.additional_info.begin() +
                          std::min<size_t>(rep.additional_info_length,
                                           rep.additional_info.size()));
  ev.private_data.assign(rep.private_data.begin(), rep.private_data.end());
  Emit(std::move(ev), *c);
  if (c->orphan) Erase(*c);
}

}  // namespace rocemu::nic
