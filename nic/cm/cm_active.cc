// The active side: the consumer's Connect (REQ), the REP that moves the QP
// to RTR and RTS, and the RTU.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/cm/cm_timing.h"
#include "nic/rnic.h"

namespace rocemu::nic {

namespace rej = protocol::cm_rej_reason;
namespace msg_response = protocol::cm_msg_response;

absl::Status CmAgent::CheckPath(const CmPath& path,
                                uint16_t* pkey_index) const {
  Rnic& rnic = rnic_;
  if (!rnic.gid_table().Get(path.sgid_index).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no GID at index %u", path.sgid_index));
  }
  const std::optional<uint16_t> index = rnic.pkey_table().IndexOf(path.pkey);
  if (!index.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("P_Key 0x%04x is not in the table", path.pkey));
  }
  *pkey_index = *index;
  if (path.flow_label > 0xFFFFF || path.packet_life_time > 31 || path.sl > 15 ||
      path.packet_rate > 63) {
    return absl::InvalidArgumentError("path field out of range");
  }
  return absl::OkStatus();
}

MadAddress CmAgent::PeerOnPath(const CmPath& path, uint16_t pkey_index) {
  MadAddress peer;
  peer.mac = path.dmac;
  peer.gid = path.dgid;
  peer.sgid_index = path.sgid_index;
  peer.pkey = path.pkey;
  peer.pkey_index = pkey_index;
  peer.traffic_class = path.traffic_class;
  peer.flow_label = path.flow_label;
  peer.hop_limit = path.hop_limit;
  return peer;
}

absl::StatusOr<CmId> CmAgent::Connect(const CmConnectParams& p, TimeNs now) {
  const size_t room = protocol::CmConsumerRoom(protocol::kCmReqPrivateDataSize,
                                               p.ip.has_value());
  if (p.private_data.size() > room) {
    return absl::InvalidArgumentError(
        absl::StrFormat("REQ private data above %u bytes", room));
  }
  if (p.qpn == 0 || p.qpn > protocol::kQpnMask) {
    return absl::InvalidArgumentError("connect needs a QP number");
  }
  const DeviceAttr& d = rnic_.device_attr();
  if (p.responder_resources > d.max_qp_rd_atom ||
      p.initiator_depth > d.max_qp_init_rd_atom || p.retry_count > 7 ||
      p.rnr_retry_count > 7 || p.remote_cm_response_timeout > 31 ||
      p.local_cm_response_timeout > 31 || p.max_cm_retries > 15 ||
      p.min_rnr_timer > 31) {
    return absl::InvalidArgumentError("connect parameter out of range");
  }
  if (p.path.mtu < PathMtu::kMtu256 ||
      static_cast<uint8_t>(p.path.mtu) >
          static_cast<uint8_t>(rnic_.port_attr().active_mtu)) {
    return absl::InvalidArgumentError("path MTU above the port's active MTU");
  }
  uint16_t pkey_index = 0;
  absl::Status s = CheckPath(p.path, &pkey_index);
  if (!s.ok()) return s;
  QpType type = p.qp_type;
  if (p.manage_qp) {
    s = CheckQp(p.qpn, &type);
    if (!s.ok()) return s;
  }
  if (type != QpType::kRc && type != QpType::kUc && type != QpType::kXrcIni) {
    // An XRC TGT QP is the passive side's; UD goes through SIDR.
    return absl::InvalidArgumentError(absl::StrFormat(
        "a REQ offers an RC, UC or XRC INI QP, not %s", QpTypeName(type)));
  }

  CmConnection& c = NewId(p.client);
  c.active = true;
  c.service_id = p.service_id;
  c.qp_type = type;
  c.path = p.path;
  c.pkey_index = pkey_index;
  c.rq_psn = p.starting_psn.value_or(NewPsn()) & 0xFFFFFF;
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.retry_count = p.retry_count;
  c.min_rnr_timer = p.min_rnr_timer;
  c.auto_rtu = p.auto_rtu;
  c.max_cm_retries = p.max_cm_retries;
  c.ack_timeout = CmAckTimeout(d.local_ca_ack_delay, p.path.packet_life_time);
  // The REQ's round trip plus the time the passive CM may take to answer.
  c.response_timeout_ns = 2 * IbTimeNs(p.path.packet_life_time) +
                          IbTimeNs(p.remote_cm_response_timeout);
  c.tid = OwnTid(c);
  c.peer = PeerOnPath(p.path, pkey_index);
  BindQp(c, p.qpn, p.manage_qp);
  // The REQ is as good as sent: the QP takes the connection's INIT
  // attributes first, so that it can post receives before the REP.
  c.state = CmState::kReqSent;
  s = DriveQp(c, QpState::kInit);
  if (!s.ok()) {
    Erase(c);
    return s;
  }

  protocol::CmReq req;
  req.local_comm_id = c.local_comm_id;
  req.service_id = p.service_id;
  req.local_ca_guid = guid_;
  req.local_qpn = p.qpn;
  req.initiator_depth = p.initiator_depth;
  req.remote_cm_response_timeout = p.remote_cm_response_timeout;
  req.end_to_end_flow_control = p.flow_control;
  req.starting_psn = c.rq_psn;
  req.local_cm_response_timeout = p.local_cm_response_timeout;
  req.pkey = p.path.pkey;
  req.path_mtu = static_cast<uint8_t>(p.path.mtu);
  req.max_cm_retries = p.max_cm_retries;
  if (type == QpType::kXrcIni) {
    // The INI QP has no responder and the TGT QP no requester: no
    // responder resources, retry counts or SRQ to offer (Linux leaves
    // them 0 too).
    req.transport = protocol::cm_transport::kExtended;
    req.extended_transport = protocol::cm_extended_transport::kXrc;
  } else {
    req.transport = type == QpType::kUc ? protocol::cm_transport::kUc
                                        : protocol::cm_transport::kRc;
    req.responder_resources = p.responder_resources;
    req.retry_count = p.retry_count;
    req.rnr_retry_count = p.rnr_retry_count;
    req.srq = p.srq;
  }
  protocol::CmPathInfo& pp = req.primary;
  // RoCE has no LIDs: both permissive, as Linux sends them for a routed
  // (GRH) path.
  pp.local_lid = protocol::kPermissiveLid;
  pp.remote_lid = protocol::kPermissiveLid;
  pp.local_gid = *rnic_.gid_table().Get(p.path.sgid_index);
  pp.remote_gid = p.path.dgid;
  pp.flow_label = p.path.flow_label;
  pp.packet_rate = p.path.packet_rate;
  pp.traffic_class = p.path.traffic_class;
  pp.hop_limit = p.path.hop_limit;
  pp.sl = p.path.sl;
  pp.subnet_local = p.path.hop_limit <= 1;
  pp.local_ack_timeout = c.ack_timeout;
  protocol::PutCmPrivateData(p.ip, p.private_data, req.private_data);
  SendRequest(c, Encode(c.tid, req), c.response_timeout_ns, now);
  return c.id;
}

void CmAgent::OnRep(const ReceivedMad& m, TimeNs now) {
  protocol::CmRep rep;
  protocol::ParseCm(m.mad.subspan(protocol::kMadHeaderSize), &rep);
  CmConnection* cp = FindByLocal(rep.remote_comm_id);
  if (cp == nullptr || cp->listener || !cp->active) {
    ++counters_.cm_rx_unmatched;
    return;
  }
  CmConnection& c = *cp;
  if (c.state != CmState::kReqSent && c.state != CmState::kMraReqRcvd) {
    if (c.remote_comm_id == rep.local_comm_id &&
        c.remote_ca_guid == rep.local_ca_guid) {
      OnDuplicateRep(c);
    } else {
      ++counters_.cm_rx_wrong_state;
    }
    return;
  }
  // An XRC TGT QP answers in the Local EE Context Number (its Local QPN
  // is left 0), as Linux's CM sends and reads it.
  const uint32_t remote_qpn =
      c.qp_type == QpType::kXrcIni ? rep.local_eecn : rep.local_qpn;
  // The remote QP still has a connection here: stale (Linux cm_rep_handler).
  auto stale = by_remote_qpn_.find(RemoteKey{remote_qpn, rep.local_ca_guid});
  if (stale != by_remote_qpn_.end()) {
    ++counters_.cm_stale_conn;
    SendRejTo(m, c.local_comm_id, rep.local_comm_id, msg_response::kRep,
              rej::kStaleConnection);
    if (CmConnection* old = Find(stale->second)) {
      if (old->state == CmState::kEstablished) {
        QpToError(*old);
        SendDreq(*old, {}, now);
      }
    }
    return;
  }
  const DeviceAttr& d = rnic_.device_attr();
  Disarm(c);
  c.msg_valid = false;
  c.remote_comm_id = rep.local_comm_id;
  c.remote_ca_guid = rep.local_ca_guid;
  c.remote_qpn = remote_qpn;
  c.sq_psn = rep.starting_psn;
  // The peer's initiator depth is how many READs/atomics it will have
  // outstanding at our responder, and the reverse.
  c.responder_resources = static_cast<uint8_t>(
      std::min<uint32_t>(rep.initiator_depth, d.max_qp_rd_atom));
  c.initiator_depth = static_cast<uint8_t>(
      std::min<uint32_t>(rep.responder_resources, d.max_qp_init_rd_atom));
  c.rnr_retry_count = rep.rnr_retry_count;
  c.ack_timeout = CmAckTimeout(rep.target_ack_delay, c.path.packet_life_time);
  c.state = CmState::kRepRcvd;
  IndexRemote(c);

  CmEvent ev;
  ev.type = CmEventType::kRepReceived;
  ev.remote_ca_guid = rep.local_ca_guid;
  ev.remote_qpn = remote_qpn;
  ev.remote_qkey = rep.local_qkey;
  ev.starting_psn = rep.starting_psn;
  ev.responder_resources = c.responder_resources;
  ev.initiator_depth = c.initiator_depth;
  ev.rnr_retry_count = rep.rnr_retry_count;
  ev.target_ack_delay = rep.target_ack_delay;
  ev.flow_control = rep.end_to_end_flow_control;
  ev.srq = rep.srq;
  ev.qp_type = c.qp_type;
  ev.private_data.assign(rep.private_data.begin(), rep.private_data.end());
  Emit(std::move(ev), c);
  if (!c.auto_rtu) return;

  absl::Status s = DriveQp(c, QpState::kRtr);
  if (s.ok()) s = DriveQp(c, QpState::kRts);
  if (!s.ok()) {
    // rdma_cm rejects a REP its QP cannot take.
    (void)Reject(c.id, rej::kConsumerDefined, {}, now);
    CmEvent err;
    err.type = CmEventType::kConnectError;
    Emit(std::move(err), c);
    return;
  }
  SendRtu(c, {});
  Established(c, false, {});
}

void CmAgent::OnDuplicateRep(CmConnection& c) {
  ++counters_.cm_dup_rep_rcvd;
  // Our RTU (or MRA) was lost: the peer retransmitted its REP.
  if ((c.state == CmState::kEstablished || c.state == CmState::kMraRepSent) &&
      c.last_reply_valid) {
    SendMad(c.peer, c.last_reply);
  }
}

void CmAgent::SendRtu(CmConnection& c, std::span<const uint8_t> private_data) {
  protocol::CmRtu rtu;
  rtu.local_comm_id = c.local_comm_id;
  rtu.remote_comm_id = c.remote_comm_id;
  std::copy_n(private_data.begin(),
              std::min(private_data.size(), rtu.private_data.size()),
              rtu.private_data.begin());
  SendReply(c, Encode(c.tid, rtu));
}

}  // namespace rocemu::nic
