// Session handlers: completion queues, queue pairs, address handles and
// shared receive queues.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "protocol/multicast.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

namespace {

// Whether process `pid` holds CAP_NET_RAW (bit 13 of its effective set):
// what the kernel asks of a program creating a raw packet QP on a ConnectX,
// since such a QP puts any frame it likes on the link.
bool HasCapNetRaw(pid_t pid) {
  constexpr uint64_t kCapNetRaw = 1ull << 13;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char line[256];
  uint64_t eff = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long v = 0;
    if (std::sscanf(line, "CapEff: %llx", &v) == 1) {
      eff = v;
      break;
    }
  }
  std::fclose(f);
  return (eff & kCapNetRaw) != 0;
}

}  // namespace

absl::Status SessionServer::OnCreateCq(Client& c, const wire::CreateCqReq& r,
                                       int fd, wire::CreateCqResp* out,
                                       int* ring_fd) {
  EventFd channel(fd);
  if (channel.valid()) {
    if (!IsEventFd(fd)) {
      return absl::InvalidArgumentError("completion channel is not an eventfd");
    }
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      return absl::ErrnoToStatus(errno, "completion channel flags");
    }
  }
  if (r.cqe == 0 || r.cqe > rnic_.device_attr().max_cqe) {
    return absl::InvalidArgumentError("cqe outside [1, max_cqe]");
  }
  absl::StatusOr<ShmRing> ring =
      ring_pool_.Take("rocemu-cq", sizeof(CqeSlot), r.cqe);
  if (!ring.ok()) return ring.status();
  const ResourceUse use{.cqs = 1, .queue_bytes = ring->map_bytes()};
  if (absl::Status st = Charge(c, use); !st.ok()) return st;
  absl::StatusOr<nic::CqHandle> h = rnic_.CreateCq(r.cqe);
  if (!h.ok()) {
    Uncharge(c, use);
    return h.status();
  }
  auto cq = std::make_unique<Cq>();
  cq->queue_bytes = use.queue_bytes;
  cq->owner = c.id;
  cq->handle = *h;
  cq->nic_cq = rnic_.cq_table().Get(*h);
  cq->cqe = r.cqe;
  cq->ring = *std::move(ring);
  cq->channel = std::move(channel);
  cq->timestamps = (r.flags & wire::kCreateCqWithTimestamps) != 0;
  *ring_fd = cq->ring.fd();
  out->cq = *h;
  out->cqe = r.cqe;
  cqs_[*h] = std::move(cq);
  return absl::OkStatus();
}

// ibv_resize_cq: a new ring of the new size; the completions the
// application has not polled yet move over in order (the library holds the
// CQ's lock until it has mapped the new ring, so nobody consumes the old
// one meanwhile), and so does an armed notification.
absl::Status SessionServer::OnResizeCq(Client& c, const wire::ResizeCqReq& r,
                                       wire::CreateCqResp* out, int* ring_fd) {
  auto it = cqs_.find(r.cq);
  if (it == cqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  Cq& cq = *it->second;
  if (r.cqe == 0 || r.cqe > rnic_.device_attr().max_cqe) {
    return absl::InvalidArgumentError("cqe outside [1, max_cqe]");
  }
  // Every completion this CQ will have to hold, wherever it is now: in the
  // ring, in the RNIC's CQ, or still a signaled send WQE (in the QP's ring
  // or in the engine). The daemon runs one thread, so each is counted once,
  // and the answer does not depend on how far the engine has got.
  const uint64_t in_ring = cq.ring.Unconsumed();
  uint64_t pending = cq.nic_cq->size();
  for (const auto& [qpn, qp] : qps_) {
    if (qp->send_cq != &cq) continue;
    pending += PendingSignaledSends(*qp);
  }
  if (in_ring + pending > r.cqe) {
    return absl::InvalidArgumentError(
        "resize_cq: more completions are queued than the new size holds");
  }
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-cq", sizeof(CqeSlot), r.cqe);
  if (!ring.ok()) return ring.status();
  // A larger ring is charged before anything moves; a smaller one gives
  // back once it replaced the old.
  const uint64_t bytes = ring->map_bytes();
  const ResourceUse grow{
      .queue_bytes = bytes > cq.queue_bytes ? bytes - cq.queue_bytes : 0};
  if (absl::Status st = Charge(c, grow); !st.ok()) return st;
  absl::Status st =
      cq.ring.MoveUnconsumedTo(*ring)
          ? rnic_.ResizeCq(cq.handle, r.cqe)
          : absl::InvalidArgumentError("resize_cq: the CQ ring is corrupt");
  if (!st.ok()) {
    Uncharge(c, grow);
    return st;
  }
  Uncharge(c, {.queue_bytes = cq.queue_bytes + grow.queue_bytes - bytes});
  cq.queue_bytes = bytes;
  cq.ring = *std::move(ring);
  cq.cqe = r.cqe;
  *ring_fd = cq.ring.fd();
  out->cq = cq.handle;
  out->cqe = r.cqe;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDestroyCq(Client& c, uint32_t h) {
  auto it = cqs_.find(h);
  if (it == cqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  if (it->second->users != 0) return absl::UnavailableError("CQ in use");
  Uncharge(c, {.cqs = 1, .queue_bytes = it->second->queue_bytes});
  ReleaseNicCq(h);
  cqs_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::OnCreateQp(Client& c, const wire::CreateQpReq& r,
                                       wire::CreateQpResp* out,
                                       int ring_fds[2]) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  nic::QpInitAttr init;
  if (!QpTypeFromWire(r.qp_type, &init.qp_type) ||
      init.qp_type == nic::QpType::kXrcTgt) {  // that is kXrcTgtQp's
    return absl::InvalidArgumentError("QP type not supported");
  }
  // An XRC INI QP receives nothing: its receive CQ (0) may be missing.
  const bool no_rcq = init.qp_type == nic::QpType::kXrcIni && r.recv_cq == 0;
  auto scq = cqs_.find(r.send_cq);
  auto rcq = cqs_.find(r.recv_cq);
  if (scq == cqs_.end() || scq->second->owner != c.id ||
      (!no_rcq && (rcq == cqs_.end() || rcq->second->owner != c.id))) {
    return absl::NotFoundError("no such CQ");
  }
  if (init.qp_type == nic::QpType::kRawPacket && !HasCapNetRaw(c.cred.pid)) {
    return absl::PermissionDeniedError(
        "a raw packet QP needs CAP_NET_RAW, as on a ConnectX");
  }
  Srq* srq = nullptr;
  if ((r.flags & wire::kCreateQpWithSrq) != 0) {
    auto it = srqs_.find(r.srq);
    if (it == srqs_.end() || it->second->owner != c.id) {
      return absl::NotFoundError("no such SRQ");
    }
    srq = it->second.get();
    init.srq = r.srq;
    init.has_srq = true;
  }
  if ((r.flags & ~(wire::kCreateQpWithSrq | wire::kCreateQpToInit)) != 0) {
    return absl::InvalidArgumentError("unknown create_qp flags");
  }
  const bool to_init = (r.flags & wire::kCreateQpToInit) != 0;
  if (to_init && init.qp_type != nic::QpType::kRc &&
      init.qp_type != nic::QpType::kUc &&
      init.qp_type != nic::QpType::kXrcIni) {
    return absl::InvalidArgumentError("INIT at create_qp: RC, UC, XRC INI");
  }
  init.send_cq = r.send_cq;
  init.recv_cq = r.recv_cq;
  init.cap = CapFromWire(r.cap);
  // With an SRQ the receive capabilities are the SRQ's (ibv_create_qp
  // ignores max_recv_wr/max_recv_sge then); the QP's own ring keeps one
  // slot so that the ring layout stays the same.
  if (srq != nullptr) init.cap.max_recv_wr = init.cap.max_recv_sge = 0;
  init.sq_sig_all = r.sq_sig_all != 0;
  // The rings are made first: the RNIC checks the capabilities, and a ring
  // failure must not leave a QP behind. A queue of no entries (a send-only
  // or receive-only QP) still gets a ring of one slot, which the library
  // never fills (its posts fail with ENOMEM).
  const uint32_t max_wr = rnic_.device_attr().max_qp_wr;
  if (init.cap.max_send_wr > max_wr || init.cap.max_recv_wr > max_wr) {
    return absl::InvalidArgumentError("QP capabilities outside the device's");
  }
  absl::StatusOr<ShmRing> sq = ring_pool_.Take(
      "rocemu-sq", sizeof(SqSlot), std::max(init.cap.max_send_wr, 1u));
  if (!sq.ok()) return sq.status();
  absl::StatusOr<ShmRing> rq = ring_pool_.Take(
      "rocemu-rq", sizeof(RqSlot), std::max(init.cap.max_recv_wr, 1u));
  if (!rq.ok()) return rq.status();
  const ResourceUse use{.qps = 1,
                        .queue_bytes = sq->map_bytes() + rq->map_bytes()};
  if (absl::Status st = Charge(c, use); !st.ok()) return st;
  absl::StatusOr<uint32_t> qpn = rnic_.CreateQp(r.pd, init);
  if (!qpn.ok()) {
    Uncharge(c, use);
    return qpn.status();
  }
  auto qp = std::make_unique<Qp>();
  qp->queue_bytes = use.queue_bytes;
  qp->owner = c.id;
  qp->qpn = *qpn;
  qp->pd = r.pd;
  qp->sq = *std::move(sq);
  qp->rq = *std::move(rq);
  qp->send_cq = scq->second.get();
  qp->recv_cq = no_rcq ? nullptr : rcq->second.get();
  qp->srq = srq;
  ++qp->send_cq->users;
  if (qp->recv_cq != nullptr) ++qp->recv_cq->users;
  if (srq != nullptr) ++srq->users;
  ring_fds[0] = qp->sq.fd();
  ring_fds[1] = qp->rq.fd();
  out->qpn = *qpn;
  // What the RNIC granted (inline data and SGEs fill the send slot).
  absl::StatusOr<nic::QpAttr> granted = rnic_.QueryQp(*qpn);
  out->cap = CapToWire(granted.ok() ? granted->cap : init.cap);
  qps_[*qpn] = std::move(qp);
  if (to_init) {
    wire::ModifyQpReq m{};
    m.qpn = *qpn;
    m.attr_mask = nic::qp_attr::kState | nic::qp_attr::kPkeyIndex |
                  nic::qp_attr::kPort | nic::qp_attr::kAccessFlags;
    m.attr.qp_state = static_cast<uint8_t>(nic::QpState::kInit);
    m.attr.port_num = 1;
    if (absl::Status st = OnModifyQp(c, m); !st.ok()) {
      (void)OnDestroyQp(c, *qpn);
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status SessionServer::OnModifyQp(Client& c, const wire::ModifyQpReq& r) {
  auto it = qps_.find(r.qpn);
  if (it == qps_.end() || !it->second->Holds(c.id)) {
    return absl::NotFoundError("no such QP");
  }
  nic::QpAttr attr;
  absl::Status st = QpAttrFromWire(r.attr, r.attr_mask, &attr);
  if (!st.ok()) return st;
  if ((r.attr_mask & nic::qp_attr::kAv) != 0) {
    st = ResolveDmac(attr.ah_attr.dgid, &attr.ah_attr.dmac,
                     &attr.ah_attr.hop_limit);
    if (!st.ok()) return st;
  }
  st = rnic_.ModifyQp(r.qpn, attr, r.attr_mask);
  // RESET empties the work queues without completions: what the client
  // posted and the daemon has not taken yet goes too, and the receive
  // queue's depth is free again.
  if (st.ok() && (r.attr_mask & nic::qp_attr::kState) != 0 &&
      attr.qp_state == nic::QpState::kReset) {
    Qp& qp = *it->second;
    counters_.wqes_discarded += qp.sq.Unretired();
    qp.sq.DiscardAll();
    if (qp.srq == nullptr) {
      counters_.wqes_discarded += qp.rq.Unretired();
      qp.rq.DiscardAll();
    }
    // Everything the RNIC completed for the QP goes to the rings now, so
    // the library can withdraw it (it does on a reply to RESET).
    if (qp.send_cq != nullptr) DrainCq(*qp.send_cq);
    if (qp.recv_cq != nullptr && qp.recv_cq != qp.send_cq) {
      DrainCq(*qp.recv_cq);
    }
  }
  return st;
}

absl::Status SessionServer::OnQueryQp(Client& c, uint32_t qpn,
                                      wire::QueryQpResp* out) {
  auto it = qps_.find(qpn);
  if (it == qps_.end() || !it->second->Holds(c.id)) {
    return absl::NotFoundError("no such QP");
  }
  absl::StatusOr<nic::QpAttr> a = rnic_.QueryQp(qpn);
  if (!a.ok()) return a.status();
  QpAttrToWire(*a, &out->attr);
  return absl::OkStatus();
}

absl::Status SessionServer::OnMcast(Client& c, const wire::McastReq& r,
                                    bool attach) {
  auto it = qps_.find(r.qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such QP");
  }
  nic::Gid mgid;
  std::memcpy(mgid.data(), r.gid, sizeof(r.gid));
  return attach ? rnic_.AttachMcast(r.qpn, mgid)
                : rnic_.DetachMcast(r.qpn, mgid);
}

absl::Status SessionServer::OnCreateFlow(Client& c,
                                         const wire::CreateFlowReq& r,
                                         wire::HandleResp* out) {
  auto it = qps_.find(r.qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such QP");
  }
  nic::FlowRule rule;
  rule.type = static_cast<nic::FlowType>(r.type);
  rule.priority = r.priority;
  rule.qpn = r.qpn;
  rule.layers = r.layers;
  static_assert(sizeof(r.value) == nic::flow_key::kLen);
  std::memcpy(rule.value.bytes.data(), r.value, sizeof(r.value));
  std::memcpy(rule.mask.bytes.data(), r.mask, sizeof(r.mask));
  absl::StatusOr<uint32_t> h = rnic_.CreateFlow(rule);
  if (!h.ok()) return h.status();
  flows_[*h] = {c.id, r.qpn};
  out->handle = *h;
  return absl::OkStatus();
}

absl::Status SessionServer::OnSetRss(Client& c, const wire::SetRssReq& r) {
  auto owned = [&](uint32_t qpn) {
    auto it = qps_.find(qpn);
    return it != qps_.end() && it->second->owner == c.id;
  };
  if (!owned(r.qpn)) return absl::NotFoundError("no such QP");
  if (r.log_table_size > nic::kRssLogTableMax) {
    return absl::InvalidArgumentError("RSS: indirection table too large");
  }
  if (r.key_len > sizeof(r.key)) {
    return absl::InvalidArgumentError("RSS: hash key too long");
  }
  nic::RssConfig rss;
  rss.fields = r.fields;
  rss.key.assign(r.key, r.key + r.key_len);
  for (uint32_t i = 0; i < (1u << r.log_table_size); ++i) {
    if (!owned(r.wqs[i])) return absl::NotFoundError("no such WQ");
    rss.table.push_back(r.wqs[i]);
  }
  return rnic_.SetRss(r.qpn, std::move(rss));
}

absl::Status SessionServer::OnDestroyFlow(Client& c, uint32_t handle) {
  auto it = flows_.find(handle);
  if (it == flows_.end() || it->second.owner != c.id) {
    return absl::NotFoundError("no such flow");
  }
  flows_.erase(it);
  return rnic_.DestroyFlow(handle);
}

void SessionServer::ReleaseQp(Qp& qp) {
  // A departing client's flow rules go with their QP.
  for (auto it = flows_.begin(); it != flows_.end();) {
    auto cur = it++;
    if (cur->second.qpn != qp.qpn) continue;
    (void)rnic_.DestroyFlow(cur->first);
    flows_.erase(cur);
  }
  // Completions the RNIC still holds for it are dropped with the QP.
  counters_.wqes_discarded += qp.sq.Unretired();
  if (qp.srq == nullptr) counters_.wqes_discarded += qp.rq.Unretired();
  if (qp.send_cq != nullptr) --qp.send_cq->users;
  if (qp.recv_cq != nullptr) --qp.recv_cq->users;
  if (qp.srq != nullptr) --qp.srq->users;
  (void)rnic_.DestroyQp(qp.qpn);
  // A TGT QP may have been what kept a closed XRC domain alive.
  if (!xrcds_.empty()) ReapXrcds();
}

absl::Status SessionServer::OnDestroyQp(Client& c, uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end() || !it->second->Holds(c.id)) {
    return absl::NotFoundError("no such QP");
  }
  // ibv_destroy_qp is EBUSY while flow rules hold the QP.
  if (rnic_.flow_table().RulesOf(qpn) > 0) {
    return absl::UnavailableError("QP has flow rules");
  }
  if (rnic_.InRssTable(qpn)) {
    return absl::UnavailableError("WQ in an indirection table");
  }
  // An XRC TGT QP others hold too only loses this holder.
  if (HandOverTgtQp(*it->second, c)) return absl::OkStatus();
  if (it->second->charged) {
    Uncharge(c, {.qps = 1, .queue_bytes = it->second->queue_bytes});
  }
  ReleaseQp(*it->second);
  qps_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::OnCreateAh(Client& c, const wire::CreateAhReq& r,
                                       wire::HandleResp* out) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  nic::AhAttr a;
  std::memcpy(a.dgid.data(), r.attr.dgid, sizeof(r.attr.dgid));
  a.sgid_index = r.attr.sgid_index;
  a.flow_label = r.attr.flow_label;
  a.hop_limit = r.attr.hop_limit;
  a.traffic_class = r.attr.traffic_class;
  a.sl = r.attr.sl;
  a.port_num = r.attr.port_num;
  protocol::MacAddr dmac;
  std::memcpy(dmac.data(), r.attr.dmac, sizeof(r.attr.dmac));
  absl::Status st = ResolveDmac(a.dgid, &dmac, &a.hop_limit);
  if (!st.ok()) return st;
  absl::StatusOr<nic::AhHandle> ah = rnic_.CreateAh(r.pd, a, dmac);
  if (!ah.ok()) return ah.status();
  ahs_[*ah] = {c.id, r.pd};
  out->handle = *ah;
  return absl::OkStatus();
}

absl::Status SessionServer::ResolveDmac(const nic::Gid& dgid,
                                        protocol::MacAddr* dmac,
                                        uint8_t* hop_limit) {
  if (*dmac != protocol::MacAddr{}) return absl::OkStatus();
  if (protocol::IsMulticastIp(dgid)) {  // no neighbour: the group's MAC
    *dmac = protocol::MulticastMac(dgid);
    return absl::OkStatus();
  }
  if (!options_.resolve_dmac) return absl::OkStatus();
  std::optional<protocol::MacAddr> mac = options_.resolve_dmac(dgid);
  if (!mac.has_value()) {
    ++counters_.dmac_pending;
    return absl::AbortedError("neighbour " + nic::GidToString(dgid) +
                              " not resolved yet");
  }
  *dmac = *mac;
  *hop_limit = kRouteHopLimit;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDestroyAh(Client& c, uint32_t ah) {
  auto it = ahs_.find(ah);
  if (it == ahs_.end() || it->second.owner != c.id) {
    return absl::NotFoundError("no such address handle");
  }
  ReleaseNicAh(ah);
  ahs_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::NewSrq(
    Client& c, uint32_t pd, const wire::WireSrqAttr& a, Cq* own_cq,
    absl::FunctionRef<absl::StatusOr<nic::SrqHandle>(const nic::SrqAttr&)> make,
    wire::CreateSrqResp* out, int* ring_fd) {
  auto p = pds_.find(pd);
  if (p == pds_.end() || p->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  const nic::DeviceAttr& dev = rnic_.device_attr();
  if (a.max_wr == 0 || a.max_wr > dev.max_srq_wr || a.max_sge == 0 ||
      a.max_sge > dev.max_srq_sge) {
    return absl::InvalidArgumentError("SRQ sizes outside the device's");
  }
  // The ring first: an SRQ the RNIC made must not outlive a ring failure.
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-srq", sizeof(RqSlot), a.max_wr);
  if (!ring.ok()) return ring.status();
  const ResourceUse use{.queue_bytes = ring->map_bytes()};
  if (absl::Status st = Charge(c, use); !st.ok()) return st;
  absl::StatusOr<nic::SrqHandle> h =
      make(nic::SrqAttr{a.max_wr, a.max_sge, a.srq_limit});
  if (!h.ok()) {
    Uncharge(c, use);
    return h.status();
  }
  auto srq = std::make_unique<Srq>();
  srq->queue_bytes = use.queue_bytes;
  srq->owner = c.id;
  srq->handle = *h;
  srq->pd = pd;
  srq->own_cq = own_cq;
  if (own_cq != nullptr) ++own_cq->users;
  srq->ring = *std::move(ring);
  *ring_fd = srq->ring.fd();
  out->srq = *h;
  out->attr = a;
  srqs_[*h] = std::move(srq);
  return absl::OkStatus();
}

absl::Status SessionServer::OnCreateSrq(Client& c, const wire::CreateSrqReq& r,
                                        wire::CreateSrqResp* out,
                                        int* ring_fd) {
  return NewSrq(
      c, r.pd, r.attr, nullptr,
      [&](const nic::SrqAttr& a) { return rnic_.CreateSrq(r.pd, a); }, out,
      ring_fd);
}

absl::Status SessionServer::OnCreateTmSrq(Client& c,
                                          const wire::CreateTmSrqReq& r,
                                          wire::CreateSrqResp* out,
                                          int* ring_fd) {
  auto cq = cqs_.find(r.cq);
  if (cq == cqs_.end() || cq->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  return NewSrq(
      c, r.pd, r.attr, cq->second.get(),
      [&](const nic::SrqAttr& a) {
        return rnic_.CreateTmSrq(r.pd, r.cq, a, r.max_num_tags, r.max_ops);
      },
      out, ring_fd);
}

absl::Status SessionServer::OnPostSrqOps(Client& c,
                                         const wire::PostSrqOpsReq& r,
                                         wire::HandleResp* out) {
  auto it = srqs_.find(r.srq);
  if (it == srqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such SRQ");
  }
  if (r.opcode > static_cast<uint8_t>(nic::TmOpcode::kSync) || r.num_sge > 1) {
    return absl::InvalidArgumentError("post_srq_ops: opcode or num_sge");
  }
  nic::TmOp op;
  op.wr_id = r.wr_id;
  op.opcode = static_cast<nic::TmOpcode>(r.opcode);
  op.flags = r.flags;
  op.unexpected_cnt = r.unexpected_cnt;
  op.handle = r.handle;
  op.add = {
      r.recv_wr_id, r.tag, r.mask, {r.addr, r.length, r.lkey}, r.num_sge == 1};
  absl::StatusOr<uint32_t> h = rnic_.PostSrqOp(r.srq, op);
  if (!h.ok()) return h.status();
  out->handle = *h;
  return absl::OkStatus();
}

absl::Status SessionServer::OnModifySrq(Client& c,
                                        const wire::ModifySrqReq& r) {
  auto it = srqs_.find(r.srq);
  if (it == srqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such SRQ");
  }
  // The ring was sized at creation: resizing would need a new ring under a
  // live producer (the device does not claim IBV_DEVICE_SRQ_RESIZE).
  if ((r.attr_mask & nic::srq_attr_mask::kMaxWr) != 0) {
    return absl::InvalidArgumentError("SRQ resize is not supported");
  }
  if ((r.attr_mask & ~nic::srq_attr_mask::kLimit) != 0) {
    return absl::InvalidArgumentError("unknown SRQ attribute mask bits");
  }
  // Work requests still in the ring count towards the limit once moved:
  // move them first so that the limit is armed against the real count.
  DrainSrq(*it->second);
  const nic::SrqAttr attr{0, 0, r.attr.srq_limit};
  return rnic_.ModifySrq(r.srq, attr, r.attr_mask);
}

absl::Status SessionServer::OnQuerySrq(Client& c, uint32_t h,
                                       wire::QuerySrqResp* out) {
  auto it = srqs_.find(h);
  if (it == srqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such SRQ");
  }
  absl::StatusOr<nic::SrqAttr> a = rnic_.QuerySrq(h);
  if (!a.ok()) return a.status();
  out->attr = {a->max_wr, a->max_sge, a->srq_limit};
  return absl::OkStatus();
}

void SessionServer::ReleaseSrq(Srq& srq) {
  counters_.wqes_discarded += srq.ring.Unretired();
  if (srq.own_cq != nullptr) --srq.own_cq->users;
  (void)rnic_.DestroySrq(srq.handle);
}

absl::Status SessionServer::OnDestroySrq(Client& c, uint32_t h) {
  auto it = srqs_.find(h);
  if (it == srqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such SRQ");
  }
  if (it->second->users != 0) return absl::UnavailableError("SRQ in use");
  Uncharge(c, {.queue_bytes = it->second->queue_bytes});
  ReleaseSrq(*it->second);
  srqs_.erase(it);
  return absl::OkStatus();
}

}  // namespace rocemu::verbs
