// The CM agent's frame: id tables, MAD dispatch, sending, timers, events,
// listeners and destruction. The exchanges themselves are in cm_active.cc,
// cm_passive.cc, cm_reject.cc, cm_disconnect.cc and cm_sidr.cc.
#include "nic/cm/cm_agent.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_timing.h"
#include "nic/rnic.h"

namespace rocemu::nic {

using protocol::cm_attr::kApr;
using protocol::cm_attr::kDrep;
using protocol::cm_attr::kDreq;
using protocol::cm_attr::kLap;
using protocol::cm_attr::kMra;
using protocol::cm_attr::kRej;
using protocol::cm_attr::kRep;
using protocol::cm_attr::kReq;
using protocol::cm_attr::kRtu;
using protocol::cm_attr::kSidrRep;
using protocol::cm_attr::kSidrReq;

CmAgent::CmAgent(Rnic& rnic, Gsi& gsi, DeviceCounters& counters, uint64_t seed,
                 uint32_t max_events)
    : rnic_(rnic),
      gsi_(gsi),
      counters_(counters),
      guid_(rnic.device_attr().node_guid != 0 ? rnic.device_attr().node_guid
                                              : GuidFromMac(rnic.config().mac)),
      rng_(seed != 0 ? seed : guid_ ^ 0x5DEECE66Dull),
      max_events_(max_events) {}

CmAgent::~CmAgent() = default;

// --- generator --------------------------------------------------------------

uint64_t CmAgent::Next() {
  // splitmix64: cheap, and every bit of the seed matters.
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t CmAgent::NewCommId() {
  // Random like Linux's, so that a restarted daemon does not reuse the IDs
  // a peer may still hold in TimeWait; never 0 (REJ's "unknown").
  // With several agents on one port (RnicConfig::shard), the ID is in this
  // agent's residue class: the peer's answers name it, and that is how
  // they find their way here.
  const uint64_t shards = rnic_.config().shards;
  const uint64_t shard = rnic_.config().shard;
  for (;;) {
    const uint64_t r = static_cast<uint32_t>(Next());
    const uint64_t id = r - r % shards + shard;
    if (id != 0 && id <= UINT32_MAX &&
        !by_local_.contains(static_cast<uint32_t>(id))) {
      return static_cast<uint32_t>(id);
    }
  }
}

// --- tables -----------------------------------------------------------------

CmConnection* CmAgent::Find(CmId id) const {
  auto it = ids_.find(id);
  return it == ids_.end() ? nullptr : it->second.get();
}

CmConnection* CmAgent::FindByLocal(uint32_t local_comm_id) const {
  auto it = by_local_.find(local_comm_id);
  return it == by_local_.end() ? nullptr : Find(it->second);
}

CmConnection* CmAgent::FindByRemoteId(uint32_t remote_comm_id,
                                      uint64_t guid) const {
  auto it = by_remote_id_.find(RemoteKey{remote_comm_id, guid});
  return it == by_remote_id_.end() ? nullptr : Find(it->second);
}

CmConnection& CmAgent::NewId(ClientId client) {
  while (next_id_ == kInvalidCmId || ids_.contains(next_id_)) ++next_id_;
  auto c = std::make_unique<CmConnection>();
  c->id = next_id_++;
  c->client = client;
  c->local_comm_id = NewCommId();
  by_local_[c->local_comm_id] = c->id;
  CmConnection& ref = *c;
  ids_.emplace(ref.id, std::move(c));
  return ref;
}

void CmAgent::IndexRemote(CmConnection& c) {
  by_remote_id_[RemoteKey{c.remote_comm_id, c.remote_ca_guid}] = c.id;
  by_remote_qpn_[RemoteKey{c.remote_qpn, c.remote_ca_guid}] = c.id;
}

void CmAgent::UnindexRemoteQpn(CmConnection& c) {
  auto it = by_remote_qpn_.find(RemoteKey{c.remote_qpn, c.remote_ca_guid});
  if (it != by_remote_qpn_.end() && it->second == c.id) {
    by_remote_qpn_.erase(it);
  }
}

void CmAgent::UnindexRemote(CmConnection& c) {
  UnindexRemoteQpn(c);
  auto it = by_remote_id_.find(RemoteKey{c.remote_comm_id, c.remote_ca_guid});
  if (it != by_remote_id_.end() && it->second == c.id) by_remote_id_.erase(it);
  auto s = sidr_by_remote_.find({c.remote_comm_id, c.peer.gid});
  if (s != sidr_by_remote_.end() && s->second == c.id) {
    sidr_by_remote_.erase(s);
  }
}

void CmAgent::BindQp(CmConnection& c, uint32_t qpn, bool manage) {
  c.local_qpn = qpn;
  c.manage_qp = manage;
  // Indexed either way: the first data packet establishes the connection
  // (COMM_EST) whoever moves the QP.
  by_qpn_[qpn] = c.id;
}

bool CmAgent::ListensOn(uint64_t service, uint64_t mask) const {
  for (CmId id : listeners_) {
    const CmConnection* l = ids_.at(id).get();
    if (l->service_id == service && l->service_mask == mask) {
      return true;
    }
  }
  return false;
}

void CmAgent::Erase(CmConnection& c) {
  const bool listener = c.listener;
  const uint64_t service = c.service_id, mask = c.service_mask;
  Disarm(c);
  UnindexRemote(c);
  auto q = by_qpn_.find(c.local_qpn);
  if (q != by_qpn_.end() && q->second == c.id) by_qpn_.erase(q);
  by_local_.erase(c.local_comm_id);
  if (listener) listeners_.erase(c.id);
  ids_.erase(c.id);  // c is gone
  // The last listener of this agent on the service: other agents may have
  // it now.
  if (listener && registry_ != nullptr && !ListensOn(service, mask)) {
    registry_->Release(service, mask, rnic_.config().shard);
  }
}

CmIdInfo CmAgent::Info(const CmConnection& c) const {
  CmIdInfo i;
  i.id = c.id;
  i.client = c.client;
  i.state = c.state;
  i.listener = c.listener;
  i.active = c.active;
  i.service_id = c.service_id;
  if (!c.listener) {
    i.local_comm_id = c.local_comm_id;
    i.remote_comm_id = c.remote_comm_id;
    i.local_qpn = c.local_qpn;
    i.remote_qpn = c.remote_qpn;
    i.remote_gid = c.peer.gid;
  }
  i.bound_addr = c.bound_addr;
  return i;
}

absl::StatusOr<CmIdInfo> CmAgent::Query(CmId id) const {
  const CmConnection* c = Find(id);
  if (c == nullptr || c->orphan) {
    return absl::NotFoundError(absl::StrFormat("no CM id %u", id));
  }
  return Info(*c);
}

// --- listeners --------------------------------------------------------------

absl::StatusOr<CmId> CmAgent::Listen(const CmListenParams& p) {
  const uint64_t mask = p.service_mask == 0 ? ~uint64_t{0} : p.service_mask;
  const uint64_t service = p.service_id & mask;
  for (CmId id : listeners_) {
    const CmConnection* l = ids_.at(id).get();
    if (l->service_id == service && l->service_mask == mask &&
        l->bound_addr == p.bound_addr) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "service ID 0x%016x is already listened on (CM id %u)", service, id));
    }
  }
  if (registry_ != nullptr && !ListensOn(service, mask)) {
    absl::Status s = registry_->Claim(service, mask, rnic_.config().shard);
    if (!s.ok()) return s;
  }
  CmConnection& c = NewId(p.client);
  c.listener = true;
  listeners_.insert(c.id);
  c.state = CmState::kListen;
  c.service_id = service;
  c.service_mask = mask;
  c.bound_addr = p.bound_addr;
  c.listen_qp_type = p.qp_type;
  return c.id;
}

const CmConnection* CmAgent::MatchListener(uint64_t service_id,
                                           const std::optional<Gid>& dst,
                                           bool* service_matched) const {
  *service_matched = false;
  const CmConnection* any = nullptr;
  for (CmId id : listeners_) {
    const CmConnection* l = ids_.at(id).get();
    if (l->orphan || (service_id & l->service_mask) != l->service_id) {
      continue;
    }
    *service_matched = true;
    if (!l->bound_addr.has_value()) {
      if (any == nullptr || l->id < any->id) any = l;
    } else if (dst.has_value() && *l->bound_addr == *dst) {
      return l;  // an address-bound listener wins over a wildcard one
    }
  }
  return any;
}

const CmConnection* CmAgent::MatchRequest(
    uint64_t service_id, std::span<const uint8_t> private_data,
    std::optional<protocol::CmIpHeader>* ip, bool* ip_service,
    bool* service_matched) const {
  *ip_service = protocol::ParseIpServiceId(service_id).has_value();
  *ip = *ip_service ? protocol::ParseCmIpHeader(private_data) : std::nullopt;
  return MatchListener(
      service_id,
      ip->has_value() ? std::optional<Gid>((*ip)->dst_addr) : std::nullopt,
      service_matched);
}

// --- dispatch ---------------------------------------------------------------

void CmAgent::OnMad(const ReceivedMad& m, TimeNs now) {
  switch (m.hdr.attr_id) {
    case kReq:
      ++counters_.cm_req_rcvd;
      OnReq(m, now);
      return;
    case kMra:
      ++counters_.cm_mra_rcvd;
      OnMraMsg(m, now);
      return;
    case kRej:
      ++counters_.cm_rej_rcvd;
      OnRej(m, now);
      return;
    case kRep:
      ++counters_.cm_rep_rcvd;
      OnRep(m, now);
      return;
    case kRtu:
      ++counters_.cm_rtu_rcvd;
      OnRtu(m, now);
      return;
    case kDreq:
      ++counters_.cm_dreq_rcvd;
      OnDreq(m, now);
      return;
    case kDrep:
      ++counters_.cm_drep_rcvd;
      OnDrep(m, now);
      return;
    case kSidrReq:
      ++counters_.cm_sidr_req_rcvd;
      OnSidrReq(m, now);
      return;
    case kSidrRep:
      ++counters_.cm_sidr_rep_rcvd;
      OnSidrRep(m, now);
      return;
    default:
      // LAP/APR (Linux refuses path migration on RoCE too), ClassPortInfo
      // and unassigned attributes.
      ++counters_.cm_rx_unsupported;
      return;
  }
}

// --- sending ----------------------------------------------------------------

void CmAgent::CountSent(uint16_t attr_id) {
  switch (attr_id) {
    case kReq:
      ++counters_.cm_req_sent;
      break;
    case kMra:
      ++counters_.cm_mra_sent;
      break;
    case kRej:
      ++counters_.cm_rej_sent;
      break;
    case kRep:
      ++counters_.cm_rep_sent;
      break;
    case kRtu:
      ++counters_.cm_rtu_sent;
      break;
    case kDreq:
      ++counters_.cm_dreq_sent;
      break;
    case kDrep:
      ++counters_.cm_drep_sent;
      break;
    case kSidrReq:
      ++counters_.cm_sidr_req_sent;
      break;
    case kSidrRep:
      ++counters_.cm_sidr_rep_sent;
      break;
    default:
      break;
  }
}

void CmAgent::SendMad(const MadAddress& to, const Mad& mad) {
  protocol::MadHeader h;
  protocol::ParseMadHeader(mad, &h);
  if (gsi_.Send(to, mad)) CountSent(h.attr_id);
}

void CmAgent::SendRequest(CmConnection& c, const Mad& mad, TimeNs timeout,
                          TimeNs now) {
  c.msg = mad;
  c.msg_valid = true;
  c.retries_left = c.max_cm_retries;
  c.retry_timeout_ns = timeout;
  SendMad(c.peer, mad);
  Arm(c, CmConnection::Timer::kResend, now + timeout);
}

void CmAgent::SendReply(CmConnection& c, const Mad& mad) {
  c.last_reply = mad;
  c.last_reply_valid = true;
  SendMad(c.peer, mad);
}

void CmAgent::SendRejTo(const ReceivedMad& m, uint32_t local_comm_id,
                        uint32_t remote_comm_id, uint8_t msg_rejected,
                        uint16_t reason, std::span<const uint8_t> ari) {
  protocol::CmRej rej;
  rej.local_comm_id = local_comm_id;
  rej.remote_comm_id = remote_comm_id;
  rej.message_rejected = msg_rejected;
  rej.reason = reason;
  const size_t n = std::min(ari.size(), rej.ari.size());
  std::copy_n(ari.begin(), n, rej.ari.begin());  // ari may be empty (null)
  rej.rejected_info_length = static_cast<uint8_t>(n);
  SendMad(m.from, Encode(m.hdr.tid, rej));
}

// --- timers -----------------------------------------------------------------

void CmAgent::Arm(CmConnection& c, CmConnection::Timer kind, TimeNs deadline) {
  Disarm(c);
  c.timer = kind;
  c.deadline = deadline;
  timers_.emplace(deadline, c.id);
}

void CmAgent::Disarm(CmConnection& c) {
  if (c.timer == CmConnection::Timer::kNone) return;
  timers_.erase({c.deadline, c.id});
  c.timer = CmConnection::Timer::kNone;
  c.deadline = kNever;
}

void CmAgent::OnTimer(TimeNs now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    const CmId id = timers_.begin()->second;
    timers_.erase(timers_.begin());
    CmConnection* c = Find(id);
    if (c == nullptr) continue;
    c->timer = CmConnection::Timer::kNone;
    c->deadline = kNever;
    OnExpired(*c, now);
  }
}

void CmAgent::OnExpired(CmConnection& c, TimeNs now) {
  if (c.state == CmState::kTimewait) {
    ResetToIdle(c);
    CmEvent ev;
    ev.type = CmEventType::kTimewaitExit;
    Emit(std::move(ev), c);
    if (c.orphan) Erase(c);
    return;
  }
  if (!c.msg_valid) return;
  if (c.retries_left > 0) {
    --c.retries_left;
    ++counters_.cm_retries;
    SendMad(c.peer, c.msg);
    Arm(c, CmConnection::Timer::kResend, now + c.retry_timeout_ns);
    return;
  }
  ++counters_.cm_timeouts;
  c.msg_valid = false;
  CmEvent ev;
  switch (c.state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      // As Linux: no REJ; the consumer sees the peer unreachable.
      ResetToIdle(c);
      QpToError(c);
      ev.type = CmEventType::kUnreachable;
      break;
    case CmState::kDreqSent:
      EnterTimewait(c, now);
      ev.type = CmEventType::kDisconnected;
      ev.timed_out = true;
      break;
    case CmState::kSidrReqSent:
      ResetToIdle(c);
      ev.type = CmEventType::kSidrUnreachable;
      break;
    default:
      return;
  }
  Emit(std::move(ev), c);
  if (c.orphan && c.state == CmState::kIdle) Erase(c);
}

void CmAgent::EnterTimewait(CmConnection& c, TimeNs now) {
  c.state = CmState::kTimewait;
  c.msg_valid = false;
  // A new connection from the same remote QP is not stale any more; the
  // old communication IDs stay known (a late duplicate REQ gets REJ stale).
  UnindexRemoteQpn(c);
  const uint8_t t = c.ack_timeout != 0
                        ? c.ack_timeout
                        : CmAckTimeout(rnic_.device_attr().local_ca_ack_delay,
                                       c.path.packet_life_time);
  Arm(c, CmConnection::Timer::kTimewait, now + IbTimeNs(t));
}

void CmAgent::ResetToIdle(CmConnection& c) {
  c.state = CmState::kIdle;
  c.msg_valid = false;
  Disarm(c);
  UnindexRemote(c);
}

// --- events -----------------------------------------------------------------

void CmAgent::Emit(CmEvent ev, const CmConnection& c) {
  if (c.orphan) return;
  if (events_.size() >= max_events_) {
    ++counters_.cm_event_drop;
    return;
  }
  ev.id = c.id;
  ev.client = c.client;
  if (ev.service_id == 0) ev.service_id = c.service_id;
  events_.push_back(std::move(ev));
  if (notify_ != nullptr) notify_(notify_ctx_);
}

bool CmAgent::PollEvent(CmEvent* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

// --- destruction ------------------------------------------------------------

absl::Status CmAgent::Destroy(CmId id, TimeNs now) {
  CmConnection* cp = Find(id);
  if (cp == nullptr || cp->orphan) {
    return absl::NotFoundError(absl::StrFormat("no CM id %u", id));
  }
  CmConnection& c = *cp;
  static constexpr uint8_t kNoData[1] = {0};
  const std::span<const uint8_t> none(kNoData, 0);
  switch (c.state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd: {
      // The passive side may hold the REQ: a REJ "timeout" whose ARI is our
      // CA GUID lets it find the connection (as Linux does).
      std::array<uint8_t, 8> ari;
      for (int i = 0; i < 8; ++i)
        ari[i] = static_cast<uint8_t>(guid_ >> (56 - 8 * i));
      (void)Reject(c.id, protocol::cm_rej_reason::kTimeout, none, now, ari);
      break;
    }
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      (void)Reject(c.id, protocol::cm_rej_reason::kConsumerDefined, none, now);
      break;
    case CmState::kEstablished:
      QpToError(c);
      SendDreq(c, none, now);
      break;
    case CmState::kDreqRcvd:
      SendDrep(c, none);
      EnterTimewait(c, now);
      break;
    case CmState::kSidrReqRcvd: {
      CmSidrReplyParams p;
      p.status = protocol::cm_sidr_status::kRejected;
      (void)SidrReply(c.id, p);
      break;
    }
    default:
      break;
  }
  QpToError(c);
  if (c.state == CmState::kTimewait || c.state == CmState::kDreqSent) {
    // The protocol still has work: finish it quietly.
    c.orphan = true;
    auto q = by_qpn_.find(c.local_qpn);
    if (q != by_qpn_.end() && q->second == c.id) by_qpn_.erase(q);
    c.manage_qp = false;
    return absl::OkStatus();
  }
  Erase(c);
  return absl::OkStatus();
}

void CmAgent::OnQpDestroyed(uint32_t qpn) {
  auto q = by_qpn_.find(qpn);
  if (q == by_qpn_.end()) return;
  if (CmConnection* c = Find(q->second)) c->manage_qp = false;
  by_qpn_.erase(q);
}

}  // namespace rocemu::nic
