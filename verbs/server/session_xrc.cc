// The session server's XRC requests (IBTA annex A14): domains opened by
// file and shared between clients, XRC SRQs, and XRC TGT QPs made by one
// client and opened by others.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

SessionServer::Xrcd* SessionServer::HeldXrcd(const Client& c, uint32_t xrcd) {
  auto it = xrcds_.find(xrcd);
  if (it == xrcds_.end() || !it->second->opens.contains(c.id)) return nullptr;
  return it->second.get();
}

absl::Status SessionServer::OnOpenXrcd(Client& c, const wire::OpenXrcdReq& r,
                                       int fd, wire::HandleResp* out) {
  if ((r.oflags & ~static_cast<uint32_t>(O_CREAT | O_EXCL)) != 0) {
    return absl::InvalidArgumentError(
        "open_xrcd: oflags other than O_CREAT "
        "and O_EXCL");
  }
  std::pair<uint64_t, uint64_t> key{0, 0};
  if (fd >= 0) {
    // The fd came from the client: it could open the file, which is all
    // the kernel asks of ibv_open_xrcd too.
    struct stat st;
    if (fstat(fd, &st) != 0) {
      return absl::InvalidArgumentError("open_xrcd: fstat of the fd failed");
    }
    key = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    if (auto it = xrcd_files_.find(key); it != xrcd_files_.end()) {
      if ((r.oflags & O_EXCL) != 0) {
        return absl::InvalidArgumentError(
            "open_xrcd: the file's domain exists (O_EXCL)");
      }
      Xrcd& x = *xrcds_.at(it->second);
      ++x.opens[c.id];
      out->handle = x.handle;
      return absl::OkStatus();
    }
    if ((r.oflags & O_CREAT) == 0) {
      // EAGAIN, as the kernel answers: another process may yet create it.
      return absl::AbortedError(
          "open_xrcd: the file has no domain (and no O_CREAT)");
    }
  }
  absl::StatusOr<nic::XrcdHandle> h = rnic_.AllocXrcd();
  if (!h.ok()) return h.status();
  auto x = std::make_unique<Xrcd>();
  x->handle = *h;
  x->by_file = fd >= 0;
  x->dev = key.first;
  x->ino = key.second;
  x->opens[c.id] = 1;
  if (x->by_file) xrcd_files_[key] = *h;
  xrcds_[*h] = std::move(x);
  out->handle = *h;
  return absl::OkStatus();
}

void SessionServer::CloseXrcd(Xrcd& x, nic::ClientId id, bool all) {
  auto it = x.opens.find(id);
  if (it == x.opens.end()) return;
  if (all || --it->second == 0) x.opens.erase(it);
  if (x.opens.empty()) ReapXrcds();
}

void SessionServer::ReapXrcds() {
  for (auto it = xrcds_.begin(); it != xrcds_.end();) {
    auto cur = it++;
    Xrcd& x = *cur->second;
    if (!x.opens.empty() || !rnic_.DeallocXrcd(x.handle).ok()) continue;
    if (x.by_file) xrcd_files_.erase(std::make_pair(x.dev, x.ino));
    xrcds_.erase(cur);
  }
}

absl::Status SessionServer::OnCloseXrcd(Client& c, uint32_t xrcd) {
  Xrcd* x = HeldXrcd(c, xrcd);
  if (x == nullptr) return absl::NotFoundError("no such XRCD");
  // The last open of a domain still in use is refused, as the kernel
  // refuses it (EBUSY); any other open just goes.
  if (x->opens.size() == 1 && x->opens.begin()->second == 1 &&
      rnic_.xrcd_table().UseCount(x->handle) != 0) {
    return absl::UnavailableError("XRCD in use by XRC SRQs or TGT QPs");
  }
  CloseXrcd(*x, c.id, false);
  return absl::OkStatus();
}

absl::Status SessionServer::OnCreateXrcSrq(Client& c,
                                           const wire::CreateXrcSrqReq& r,
                                           wire::CreateXrcSrqResp* out,
                                           int* ring_fd) {
  auto cq = cqs_.find(r.cq);
  if (cq == cqs_.end() || cq->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  if (HeldXrcd(c, r.xrcd) == nullptr) {
    return absl::NotFoundError("no such XRCD");
  }
  wire::CreateSrqResp made{};
  absl::Status st = NewSrq(
      c, r.pd, r.attr, cq->second.get(),
      [&](const nic::SrqAttr& a) {
        return rnic_.CreateXrcSrq(r.pd, r.xrcd, r.cq, a);
      },
      &made, ring_fd);
  if (!st.ok()) return st;
  // A fresh XRC SRQ always has its number.
  out->srq = made.srq;
  out->srqn = *rnic_.GetSrqNum(made.srq);
  out->attr = made.attr;
  return absl::OkStatus();
}

absl::Status SessionServer::OnXrcTgtQp(Client& c, const wire::XrcTgtQpReq& r,
                                       wire::XrcTgtQpResp* out) {
  if (HeldXrcd(c, r.xrcd) == nullptr) {
    return absl::NotFoundError("no such XRCD");
  }
  if (r.qpn != 0) {
    // ibv_open_qp: a TGT QP of this domain, whoever made it.
    auto it = qps_.find(r.qpn);
    const nic::Qp* q = rnic_.GetQp(r.qpn);
    if (it == qps_.end() || q == nullptr || q->type() != nic::QpType::kXrcTgt ||
        q->init_attr().xrcd != r.xrcd) {
      return absl::NotFoundError(
          absl::StrFormat("no XRC TGT QP 0x%06x in this XRCD", r.qpn));
    }
    Qp& qp = *it->second;
    if (!qp.Holds(c.id)) qp.openers.push_back(c.id);
    out->qpn = r.qpn;
    return absl::OkStatus();
  }
  // Rings of one slot that nobody maps: the data path treats the QP like
  // any other, and there is nothing to post to it.
  absl::StatusOr<ShmRing> sq = ShmRing::Create("rocemu-sq", sizeof(SqSlot), 1);
  if (!sq.ok()) return sq.status();
  absl::StatusOr<ShmRing> rq = ShmRing::Create("rocemu-rq", sizeof(RqSlot), 1);
  if (!rq.ok()) return rq.status();
  const ResourceUse use{.qps = 1,
                        .queue_bytes = sq->map_bytes() + rq->map_bytes()};
  if (absl::Status st = Charge(c, use); !st.ok()) return st;
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kXrcTgt;
  init.xrcd = r.xrcd;
  absl::StatusOr<uint32_t> qpn = rnic_.CreateQp(nic::kInvalidHandle, init);
  if (!qpn.ok()) {
    Uncharge(c, use);
    return qpn.status();
  }
  sq->CloseFd();
  rq->CloseFd();
  auto qp = std::make_unique<Qp>();
  qp->queue_bytes = use.queue_bytes;
  qp->owner = c.id;
  qp->qpn = *qpn;
  qp->sq = *std::move(sq);
  qp->rq = *std::move(rq);
  qps_[*qpn] = std::move(qp);
  out->qpn = *qpn;
  return absl::OkStatus();
}

bool SessionServer::HandOverTgtQp(Qp& qp, Client& from) {
  if (qp.owner != from.id) {
    qp.openers.erase(std::remove(qp.openers.begin(), qp.openers.end(), from.id),
                     qp.openers.end());
    return true;
  }
  if (qp.openers.empty()) return false;
  // Its queues are charged to whoever holds it now (if that client's uid
  // has room).
  if (qp.charged) Uncharge(from, {.qps = 1, .queue_bytes = qp.queue_bytes});
  qp.owner = qp.openers.back();
  qp.openers.pop_back();
  auto it = clients_.find(qp.owner);
  qp.charged =
      it != clients_.end() &&
      Charge(*it->second, {.qps = 1, .queue_bytes = qp.queue_bytes}).ok();
  return true;
}

}  // namespace rocemu::verbs
