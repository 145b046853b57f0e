// The Communication Manager's consumer calls as clients (the drop-in
// librdmacm) make them, and the CM's events back to the client owning each
// id. The CM never drives these clients' QPs on its own (manage_qp off):
// librdmacm moves its QP when rdma-core's would, either with the
// attributes cm_init_qp_attr gives (a program asking rdma_init_qp_attr) or
// in one cm_modify_qp (its own transitions), and asks for the RTU
// (cm_establish) once its QP is in RTS.
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {
namespace {

constexpr uint8_t kIbvQptRc = 2;
constexpr uint8_t kIbvQptUc = 3;
constexpr uint8_t kIbvQptUd = 4;
constexpr uint8_t kIbvQptXrcSend = 9;
constexpr uint8_t kIbvQptXrcRecv = 10;

nic::Gid GidOf(const uint8_t b[16]) {
  nic::Gid g;
  std::memcpy(g.data(), b, 16);
  return g;
}

std::optional<protocol::CmIpHeader> IpFromWire(const wire::WireCmIp& w) {
  if (!w.present) return std::nullopt;
  protocol::CmIpHeader h;
  h.ip_version = w.ip_version == 6 ? 6 : 4;
  h.src_port = w.src_port;
  h.src_addr = GidOf(w.src_addr);
  h.dst_addr = GidOf(w.dst_addr);
  return h;
}

void IpToWire(const std::optional<protocol::CmIpHeader>& h, wire::WireCmIp* w) {
  *w = {};
  if (!h.has_value()) return;
  w->present = 1;
  w->ip_version = h->ip_version;
  w->src_port = h->src_port;
  std::memcpy(w->src_addr, h->src_addr.data(), 16);
  std::memcpy(w->dst_addr, h->dst_addr.data(), 16);
}

void PathToWire(const nic::CmPath& p, wire::WireCmPath* w) {
  std::memcpy(w->dgid, p.dgid.data(), 16);
  std::memcpy(w->dmac, p.dmac.data(), 6);
  w->sgid_index = p.sgid_index;
  w->traffic_class = p.traffic_class;
  w->pkey = p.pkey;
  w->mtu = static_cast<uint8_t>(p.mtu);
  w->hop_limit = p.hop_limit;
  w->flow_label = p.flow_label;
}

std::optional<nic::QpType> QpTypeOfQpt(uint8_t qpt) {
  switch (qpt) {
    case kIbvQptRc:
      return nic::QpType::kRc;
    case kIbvQptUc:
      return nic::QpType::kUc;
    case kIbvQptUd:
      return nic::QpType::kUd;
    case kIbvQptXrcSend:
      return nic::QpType::kXrcIni;
    case kIbvQptXrcRecv:
      return nic::QpType::kXrcTgt;
    default:
      return std::nullopt;
  }
}

uint8_t QptOf(nic::QpType t) {
  switch (t) {
    case nic::QpType::kRc:
      return kIbvQptRc;
    case nic::QpType::kUc:
      return kIbvQptUc;
    case nic::QpType::kUd:
      return kIbvQptUd;
    case nic::QpType::kXrcIni:
      return kIbvQptXrcSend;
    case nic::QpType::kXrcTgt:
      return kIbvQptXrcRecv;
    case nic::QpType::kRawPacket:  // the CM connects no raw QP
      break;
  }
  return 0;
}

}  // namespace

absl::Status SessionServer::OnCmOpen(Client& c, int fd, wire::CmOpenResp* out,
                                     int* ring_fd) {
  EventFd channel(fd);
  if (c.cm_ring.valid()) {
    return absl::FailedPreconditionError("CM events already open");
  }
  if (!IsEventFd(fd)) {
    return absl::InvalidArgumentError("CM event fd is not an eventfd");
  }
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, "CM event fd flags");
  }
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-cm", sizeof(CmEventSlot), kCmEvents);
  if (!ring.ok()) return ring.status();
  c.cm_ring = *std::move(ring);
  c.cm_fd = std::move(channel);
  *ring_fd = c.cm_ring.fd();
  out->capacity = c.cm_ring.capacity();
  return absl::OkStatus();
}

absl::Status SessionServer::CheckCmId(const Client& c, uint32_t id) const {
  absl::StatusOr<nic::CmIdInfo> info = rnic_.cm().Query(id);
  if (!info.ok() || info->client != c.id) {
    return absl::NotFoundError(absl::StrFormat("no CM id %u", id));
  }
  return absl::OkStatus();
}

absl::Status SessionServer::CheckQpOfProcess(const Client& c,
                                             uint32_t qpn) const {
  auto q = qps_.find(qpn);
  if (q == qps_.end()) {
    return absl::NotFoundError(absl::StrFormat("no QP 0x%x of yours", qpn));
  }
  auto owner = clients_.find(q->second->owner);
  if (owner == clients_.end() || owner->second->cred.pid != c.cred.pid) {
    return absl::NotFoundError(absl::StrFormat("no QP 0x%x of yours", qpn));
  }
  return absl::OkStatus();
}

absl::Status SessionServer::PathFromWire(const wire::WireCmPath& w,
                                         nic::CmPath* p) {
  p->dgid = GidOf(w.dgid);
  std::memcpy(p->dmac.data(), w.dmac, 6);
  uint8_t hop_limit = w.hop_limit;
  if (absl::Status s = ResolveDmac(p->dgid, &p->dmac, &hop_limit); !s.ok()) {
    return s;
  }
  p->sgid_index = w.sgid_index;
  p->traffic_class = w.traffic_class;
  p->pkey = w.pkey;
  p->mtu = static_cast<nic::PathMtu>(std::clamp<uint8_t>(w.mtu, 1, 5));
  p->hop_limit = hop_limit;
  p->flow_label = w.flow_label & 0xFFFFF;
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmListen(Client& c, const wire::CmListenReq& r,
                                       wire::CmIdResp* out) {
  if (!c.cm_ring.valid()) {
    return absl::FailedPreconditionError("cm_open first");
  }
  nic::CmListenParams p;
  p.client = c.id;
  p.service_id = r.service_id;
  if (r.bound) p.bound_addr = GidOf(r.bound_gid);
  if (r.qp_type != 0) {
    p.qp_type = QpTypeOfQpt(r.qp_type);
    if (!p.qp_type.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("listen: no QP type %u", r.qp_type));
    }
  }
  absl::StatusOr<nic::CmId> id = rnic_.cm().Listen(p);
  if (!id.ok()) return id.status();
  out->id = *id;
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmConnect(Client& c, const wire::CmConnectReq& r,
                                        wire::CmIdResp* out) {
  if (!c.cm_ring.valid()) {
    return absl::FailedPreconditionError("cm_open first");
  }
  if (absl::Status s = CheckQpOfProcess(c, r.qpn); !s.ok()) return s;
  if (r.qp_type != kIbvQptRc && r.qp_type != kIbvQptUc &&
      r.qp_type != kIbvQptXrcSend) {
    return absl::InvalidArgumentError("connect needs an RC, UC or XRC INI QP");
  }
  if (r.private_data_len > sizeof(r.private_data)) {
    return absl::InvalidArgumentError("private data too long");
  }
  nic::CmConnectParams p;
  p.client = c.id;
  p.service_id = r.service_id;
  p.qpn = r.qpn;
  p.qp_type = *QpTypeOfQpt(r.qp_type);
  p.manage_qp = false;
  p.auto_rtu = false;
  if (absl::Status s = PathFromWire(r.path, &p.path); !s.ok()) return s;
  p.responder_resources = r.responder_resources;
  p.initiator_depth = r.initiator_depth;
  p.retry_count = r.retry_count;
  p.rnr_retry_count = r.rnr_retry_count;
  p.flow_control = r.flow_control != 0;
  p.srq = r.srq != 0;
  if (r.starting_psn != 0) p.starting_psn = r.starting_psn & 0xFFFFFF;
  p.ip = IpFromWire(r.ip);
  p.private_data.assign(r.private_data, r.private_data + r.private_data_len);
  absl::StatusOr<nic::CmId> id = rnic_.cm().Connect(p, rnic_.last_now());
  if (!id.ok()) return id.status();
  out->id = *id;
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmAccept(Client& c, const wire::CmAcceptReq& r) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  if (absl::Status s = CheckQpOfProcess(c, r.qpn); !s.ok()) return s;
  if (r.private_data_len > sizeof(r.private_data)) {
    return absl::InvalidArgumentError("private data too long");
  }
  if ((r.flags & ~wire::kCmAcceptToRts) != 0) {
    return absl::InvalidArgumentError("unknown cm_accept flags");
  }
  if ((r.flags & wire::kCmAcceptToRts) != 0) {
    wire::CmModifyQpReq m{};
    m.id = r.id;
    m.qpn = r.qpn;
    m.qp_state = static_cast<uint8_t>(nic::QpState::kRts);
    m.responder_resources = r.responder_resources;
    m.initiator_depth = r.initiator_depth;
    if (absl::Status s = OnCmModifyQp(c, m); !s.ok()) return s;
  }
  nic::CmAcceptParams p;
  p.qpn = r.qpn;
  p.manage_qp = false;
  p.responder_resources = r.responder_resources;
  p.initiator_depth = r.initiator_depth;
  p.rnr_retry_count = r.rnr_retry_count;
  p.flow_control = r.flow_control != 0;
  p.srq = r.srq != 0;
  p.private_data.assign(r.private_data, r.private_data + r.private_data_len);
  return rnic_.cm().Accept(r.id, p, rnic_.last_now());
}

absl::Status SessionServer::OnCmReject(Client& c, const wire::CmRejectReq& r) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  if (r.private_data_len > sizeof(r.private_data)) {
    return absl::InvalidArgumentError("private data too long");
  }
  return rnic_.cm().Reject(
      r.id, r.reason,
      std::span<const uint8_t>(r.private_data, r.private_data_len),
      rnic_.last_now());
}

absl::Status SessionServer::OnCmIdCall(Client& c, wire::MsgType type,
                                       uint32_t id) {
  if (absl::Status s = CheckCmId(c, id); !s.ok()) return s;
  const nic::TimeNs now = rnic_.last_now();
  switch (type) {
    case wire::MsgType::kCmEstablish:
      return rnic_.cm().Establish(id, now);
    case wire::MsgType::kCmDisconnect:
      return rnic_.cm().Disconnect(id, {}, now);
    case wire::MsgType::kCmDestroy:
      return rnic_.cm().Destroy(id, now);
    default:
      return absl::InternalError("not a CM id call");
  }
}

absl::Status SessionServer::OnCmDisconnect(Client& c, const wire::CmIdReq& r) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  if (r.qpn != 0) {
    auto it = qps_.find(r.qpn);
    if (it == qps_.end() || it->second->owner != c.id) {
      return absl::NotFoundError("no such QP");
    }
    wire::ModifyQpReq m{};
    m.qpn = r.qpn;
    m.attr_mask = nic::qp_attr::kState;
    m.attr.qp_state = static_cast<uint8_t>(nic::QpState::kErr);
    if (absl::Status s = OnModifyQp(c, m); !s.ok()) return s;
  }
  return OnCmIdCall(c, wire::MsgType::kCmDisconnect, r.id);
}

absl::Status SessionServer::OnCmInitQpAttr(Client& c,
                                           const wire::CmInitQpAttrReq& r,
                                           wire::CmInitQpAttrResp* out) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  nic::QpState target;
  switch (r.qp_state) {
    case 1:
      target = nic::QpState::kInit;
      break;
    case 2:
      target = nic::QpState::kRtr;
      break;
    case 3:
      target = nic::QpState::kRts;
      break;
    default:
      return absl::InvalidArgumentError("INIT, RTR or RTS only");
  }
  absl::StatusOr<std::pair<nic::QpAttr, nic::QpAttrMask>> a =
      rnic_.cm().InitQpAttr(r.id, target);
  if (!a.ok()) return a.status();
  QpAttrToWire(a->first, &out->attr);
  out->attr_mask = a->second;
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmModifyQp(Client& c,
                                         const wire::CmModifyQpReq& r) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  if (r.qp_state != 2 && r.qp_state != 3) {
    return absl::InvalidArgumentError("RTR or RTS only");
  }
  auto it = qps_.find(r.qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such QP");
  }
  absl::StatusOr<nic::QpAttr> now = rnic_.QueryQp(r.qpn);
  if (!now.ok()) return now.status();
  const nic::QpState last =
      r.qp_state == 3 ? nic::QpState::kRts : nic::QpState::kRtr;
  // Steps still to take: INIT again only on the way to RTR, as librdmacm
  // re-applies the CM's INIT attributes before RTR.
  nic::QpState steps[3];
  size_t n = 0;
  // From any state but RTR and RTS the QP goes through INIT (whose modify
  // fails where ibv_modify_qp's would, e.g. from ERR).
  if (now->qp_state != nic::QpState::kRtr &&
      now->qp_state != nic::QpState::kRts) {
    steps[n++] = nic::QpState::kInit;
    steps[n++] = nic::QpState::kRtr;
  }
  if (last == nic::QpState::kRts && now->qp_state != nic::QpState::kRts) {
    steps[n++] = nic::QpState::kRts;
  }
  for (const nic::QpState step : std::span(steps, n)) {
    absl::StatusOr<std::pair<nic::QpAttr, nic::QpAttrMask>> a =
        rnic_.cm().InitQpAttr(r.id, step);
    if (!a.ok()) return a.status();
    wire::ModifyQpReq m{};
    m.qpn = r.qpn;
    m.attr_mask = a->second;
    QpAttrToWire(a->first, &m.attr);
    // What librdmacm's application set on the id or passed to connect and
    // accept, over the CM's values.
    if (step == nic::QpState::kRtr && r.responder_resources != 0xff) {
      m.attr.max_dest_rd_atomic = r.responder_resources;
    }
    if (step == nic::QpState::kRts && r.initiator_depth != 0xff) {
      m.attr.max_rd_atomic = r.initiator_depth;
    }
    if (step != nic::QpState::kInit) {
      if ((r.flags & wire::kCmModifyTos) != 0) {
        m.attr.ah_attr.traffic_class = r.tos;
      }
      if ((r.flags & wire::kCmModifyTimeout) != 0 &&
          (m.attr_mask & nic::qp_attr::kTimeout) != 0) {
        m.attr.timeout = r.timeout;
      }
    }
    if (absl::Status s = OnModifyQp(c, m); !s.ok()) return s;
  }
  if ((r.flags & wire::kCmModifyEstablish) != 0) {
    return OnCmIdCall(c, wire::MsgType::kCmEstablish, r.id);
  }
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmSidrQuery(Client& c,
                                          const wire::CmSidrQueryReq& r,
                                          wire::CmIdResp* out) {
  if (!c.cm_ring.valid()) {
    return absl::FailedPreconditionError("cm_open first");
  }
  if (r.private_data_len > sizeof(r.private_data)) {
    return absl::InvalidArgumentError("private data too long");
  }
  nic::CmSidrQueryParams p;
  p.client = c.id;
  p.service_id = r.service_id;
  if (absl::Status s = PathFromWire(r.path, &p.path); !s.ok()) return s;
  p.ip = IpFromWire(r.ip);
  p.private_data.assign(r.private_data, r.private_data + r.private_data_len);
  absl::StatusOr<nic::CmId> id = rnic_.cm().SidrQuery(p, rnic_.last_now());
  if (!id.ok()) return id.status();
  out->id = *id;
  return absl::OkStatus();
}

absl::Status SessionServer::OnCmSidrReply(Client& c,
                                          const wire::CmSidrReplyReq& r) {
  if (absl::Status s = CheckCmId(c, r.id); !s.ok()) return s;
  if (r.private_data_len > sizeof(r.private_data)) {
    return absl::InvalidArgumentError("private data too long");
  }
  nic::CmSidrReplyParams p;
  p.status = r.status;
  p.qpn = r.qpn;
  p.qkey = r.qkey;
  p.private_data.assign(r.private_data, r.private_data + r.private_data_len);
  return rnic_.cm().SidrReply(r.id, p);
}

absl::Status SessionServer::OnCmResolve(Client& /*c*/,
                                        const wire::CmResolveReq& r,
                                        wire::CmResolveResp* out) {
  protocol::MacAddr mac{};
  uint8_t hop_limit = 64;
  if (absl::Status s = ResolveDmac(GidOf(r.dgid), &mac, &hop_limit); !s.ok()) {
    return s;
  }
  std::memcpy(out->dmac, mac.data(), 6);
  out->hop_limit = hop_limit;
  return absl::OkStatus();
}

void SessionServer::DeliverCmEvents() {
  if (!cm_backlogged_.empty()) FlushCmBacklogs();
  if (!rnic_.cm().HasEvents()) return;
  nic::CmEvent ev;
  while (rnic_.cm().PollEvent(&ev)) {
    auto it = clients_.find(ev.client);
    if (it == clients_.end() || !it->second->cm_ring.valid()) {
      ++counters_.cm_events_dropped;
      continue;
    }
    Client& c = *it->second;
    CmEventSlot s{};
    s.type = static_cast<uint8_t>(ev.type);
    s.qp_type = QptOf(ev.qp_type);
    s.responder_resources = ev.responder_resources;
    s.initiator_depth = ev.initiator_depth;
    s.retry_count = ev.retry_count;
    s.rnr_retry_count = ev.rnr_retry_count;
    s.flow_control = ev.flow_control;
    s.srq = ev.srq;
    s.id = ev.id;
    s.listen_id = ev.listen_id;
    s.remote_qpn = ev.type == nic::CmEventType::kSidrRepReceived
                       ? ev.sidr_qpn
                       : ev.remote_qpn;
    s.remote_qkey = ev.type == nic::CmEventType::kSidrRepReceived
                        ? ev.sidr_qkey
                        : ev.remote_qkey;
    s.service_id = ev.service_id;
    s.reason = ev.reason;
    s.sidr_status = ev.sidr_status;
    s.by_peer = ev.by_peer;
    s.timed_out = ev.timed_out;
    PathToWire(ev.path, &s.path);
    IpToWire(ev.ip, &s.ip);
    const size_t n = std::min(ev.private_data.size(), sizeof(s.private_data));
    std::memcpy(s.private_data, ev.private_data.data(), n);
    s.private_data_len = static_cast<uint8_t>(n);
    // Behind the events already waiting, or the ring full: it waits too.
    if (!c.cm_backlog.empty() || c.cm_ring.Push(s) != RingResult::kOk) {
      if (c.cm_backlog.size() >= kCmBacklog) {
        ++counters_.cm_events_dropped;
        continue;
      }
      if (c.cm_backlog.empty()) cm_backlogged_.push_back(c.id);
      c.cm_backlog.push_back(s);
      ++counters_.cm_events_deferred;
      continue;
    }
    ++counters_.cm_events;
    c.cm_fd.Signal();
  }
}

void SessionServer::FlushCmBacklogs() {
  size_t keep = 0;
  for (const nic::ClientId id : cm_backlogged_) {
    auto it = clients_.find(id);
    if (it == clients_.end()) continue;  // gone, with its backlog
    Client& c = *it->second;
    size_t moved = 0;
    while (!c.cm_backlog.empty() &&
           c.cm_ring.Push(c.cm_backlog.front()) == RingResult::kOk) {
      c.cm_backlog.pop_front();
      ++moved;
    }
    if (moved > 0) {
      counters_.cm_events += moved;
      c.cm_fd.Signal();
    }
    if (!c.cm_backlog.empty()) cm_backlogged_[keep++] = id;
  }
  cm_backlogged_.resize(keep);
}

void SessionServer::ReleaseCmIds(nic::ClientId id) {
  std::vector<nic::CmId> ids;
  rnic_.cm().ForEachId([&](const nic::CmIdInfo& i) {
    if (i.client == id) ids.push_back(i.id);
  });
  for (nic::CmId cm : ids) {
    (void)rnic_.cm().Destroy(cm, rnic_.last_now());
  }
}

}  // namespace rocemu::verbs
