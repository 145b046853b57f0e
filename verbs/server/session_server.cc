// The session server: listening, accepting and serving clients, the poll
// loop, disconnection and the queries the daemon makes of it.
#include "verbs/server/session_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"

namespace rocemu::verbs {

SessionServer::SessionServer(nic::Rnic& rnic,
                             const SessionServerOptions& options)
    : rnic_(rnic), options_(options) {
  rnic_.set_recv_wqe_fetcher(this);
}

absl::StatusOr<std::unique_ptr<SessionServer>> SessionServer::Create(
    nic::Rnic& rnic, const SessionServerOptions& options) {
  std::unique_ptr<SessionServer> s(new SessionServer(rnic, options));
  absl::Status st = s->Listen();
  if (!st.ok()) return st;
  return s;
}

absl::Status SessionServer::Listen() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return absl::ErrnoToStatus(errno, "epoll_create1");
  if (options_.listen) {
    absl::Status s = Bind();
    if (!s.ok()) return s;
  }
  return MakeWakePage();
}

absl::Status SessionServer::Bind() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.socket_path.empty() ||
      options_.socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("socket path '%s' is empty or longer than %u bytes",
                        options_.socket_path, sizeof(addr.sun_path) - 1));
  }
  std::memcpy(addr.sun_path, options_.socket_path.data(),
              options_.socket_path.size());
  struct stat st;
  if (lstat(options_.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "%s exists and is not a socket", options_.socket_path));
    }
    unlink(options_.socket_path.c_str());  // stale, from a previous run
  }
  listen_fd_ =
      socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return absl::ErrnoToStatus(errno, "socket");
  // The umask would otherwise widen or narrow the window before chmod.
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::ErrnoToStatus(errno, "bind " + options_.socket_path);
  }
  if (chmod(options_.socket_path.c_str(), options_.socket_mode) != 0) {
    return absl::ErrnoToStatus(errno, "chmod " + options_.socket_path);
  }
  if (listen(listen_fd_, 64) != 0) return absl::ErrnoToStatus(errno, "listen");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl");
  }
  return absl::OkStatus();
}

absl::Status SessionServer::MakeWakePage() {
  // The wake page: writable here, sealed so that clients can only map it
  // read-only (F_SEAL_FUTURE_WRITE keeps this mapping writable).
  wake_page_fd_ = memfd_create("rocemu-wake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (wake_page_fd_ < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  const size_t page = PageSize();
  if (ftruncate(wake_page_fd_, static_cast<off_t>(page)) != 0) {
    return absl::ErrnoToStatus(errno, "ftruncate wake page");
  }
  void* map =
      mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, wake_page_fd_, 0);
  if (map == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap wake page");
  wake_page_ = new (map) WakePage{};
  if (fcntl(wake_page_fd_, F_ADD_SEALS,
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) !=
      0) {
    return absl::ErrnoToStatus(errno, "seal wake page");
  }
  wake_epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (wake_epoll_fd_ < 0) return absl::ErrnoToStatus(errno, "epoll_create1");
  return absl::OkStatus();
}

SessionServer::~SessionServer() {
  rnic_.set_recv_wqe_fetcher(nullptr);
  std::vector<nic::ClientId> ids;
  for (const auto& [id, c] : clients_) ids.push_back(id);
  for (nic::ClientId id : ids) Disconnect(id);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(options_.socket_path.c_str());
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_page_ != nullptr) munmap(wake_page_, PageSize());
  if (wake_page_fd_ >= 0) close(wake_page_fd_);
  if (wake_epoll_fd_ >= 0) close(wake_epoll_fd_);
}

// --- the loop ------------------------------------------------------------

void SessionServer::Poll() {
  PollControl();
  PollData();
}

size_t SessionServer::PollControl() {
  epoll_event ev[16];
  const int n = epoll_wait(epoll_fd_, ev, 16, 0);
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.u64 == kListenTag) {
      Accept();
      continue;
    }
    auto it = clients_.find(static_cast<nic::ClientId>(ev[i].data.u64));
    if (it == clients_.end()) continue;
    Client& c = *it->second;
    const bool hup = (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    if (!ServeClient(c, hup)) c.dead = true;
  }
  // Clients found dead above or by a ring check of the last PollData go
  // now, so their QPs reach ERR within this call.
  dead_.clear();
  for (const auto& [id, c] : clients_) {
    if (c->dead) dead_.push_back(id);
  }
  for (nic::ClientId id : dead_) Disconnect(id);
  // No request this time: make a ring the next create_qp or create_cq
  // will want (ring_pool.h), one per call.
  if (n <= 0) ring_pool_.Refill();
  counters_.rings_premade = ring_pool_.hits();
  return n > 0 ? static_cast<size_t>(n) : 0;
}

void SessionServer::PollData() {
  PollPosts();
  PollCompletions();
}

void SessionServer::PollPosts() {
  // Only queues whose clients rang (verbs/wire/doorbell.h), plus every queue of
  // clients that have no doorbells.
  for (auto& [id, c] : clients_) {
    if (c->doorbells.valid()) TakeDoorbells(*c);
  }
  DrainActive();
  if (unrung_clients_ > 0) DrainUnrung();
}

void SessionServer::PollCompletions() {
  // Oldest completion first (CompletionQueue::pending_since): a program
  // that waits on one channel for a send CQ and a receive CQ wakes to the
  // event of the CQ the RNIC completed first, and finds its entry in the
  // ring. perftest -e (ib_send_lat) polls the CQ it expects once per event,
  // and fell one completion behind, to hang at its last, when the receive
  // of the peer's next SEND overtook the ACK of its own in the same pass.
  ready_cqs_.clear();
  for (auto& [h, cq] : cqs_) {
    if (cq->nic_cq->size() > 0) ready_cqs_.push_back(cq.get());
  }
  if (ready_cqs_.size() > 1) {
    std::sort(ready_cqs_.begin(), ready_cqs_.end(),
              [](const Cq* a, const Cq* b) {
                return a->nic_cq->pending_since() < b->nic_cq->pending_since();
              });
  }
  for (Cq* cq : ready_cqs_) DrainCq(*cq);
  DeliverAsyncEvents();
  DeliverCmEvents();
}

bool SessionServer::PrepareToSleep() {
  wake_page_->sleeping.store(1, std::memory_order_seq_cst);
  bool work = !active_.empty();
  for (auto it = clients_.begin(); !work && it != clients_.end(); ++it) {
    const Client& c = *it->second;
    work = c.doorbells.valid() &&
           (c.doorbells.HasPending() || c.doorbells.doorbell_rung());
  }
  if (!work && unrung_clients_ > 0) {
    for (auto it = qps_.begin(); !work && it != qps_.end(); ++it) {
      const Qp& q = *it->second;
      work = q.sq.HasPending() || (q.srq == nullptr && q.rq.HasPending());
    }
    for (auto it = srqs_.begin(); !work && it != srqs_.end(); ++it) {
      work = it->second->ring.HasPending();
    }
  }
  if (work) {
    wake_page_->sleeping.store(0, std::memory_order_relaxed);
    return false;
  }
  ++counters_.sleeps;
  return true;
}

void SessionServer::Awake() {
  wake_page_->sleeping.store(0, std::memory_order_seq_cst);
  epoll_event ev[16];
  const int n = epoll_wait(wake_epoll_fd_, ev, 16, 0);
  for (int i = 0; i < n; ++i) {
    auto it = clients_.find(static_cast<nic::ClientId>(ev[i].data.u64));
    if (it != clients_.end() && it->second->wake.valid()) {
      uint64_t v;
      (void)!read(it->second->wake.fd(), &v, sizeof(v));
    }
  }
}

void SessionServer::Accept() {
  for (;;) {
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or an aborted connection
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      ++counters_.clients_refused;
      close(fd);
      continue;
    }
    const PeerCredentials peer{cred.pid, cred.uid, cred.gid};
    if (options_.route_client && options_.route_client(fd, peer)) continue;
    AdoptClient(fd, peer);
  }
}

void SessionServer::AdoptClient(int fd, const PeerCredentials& cred) {
  const bool uid_ok =
      options_.allowed_uids.empty() ||
      std::find(options_.allowed_uids.begin(), options_.allowed_uids.end(),
                cred.uid) != options_.allowed_uids.end();
  absl::Status refusal;
  if (!uid_ok) {
    refusal = absl::PermissionDeniedError(
        absl::StrFormat("uid %u is not in verbs.allowed_uids", cred.uid));
  } else if (clients_.size() - refused_pending_ >= options_.max_clients) {
    refusal = absl::ResourceExhaustedError(absl::StrFormat(
        "the daemon serves at most %u clients", options_.max_clients));
  }
  if (!refusal.ok()) {
    ++counters_.clients_refused;
    // A few refused peers wait for their answer; beyond that (a flood),
    // they are closed unanswered.
    if (refused_pending_ >= kMaxRefusedPending) {
      close(fd);
      return;
    }
  }
  auto c = std::make_unique<Client>();
  c->refusal = refusal;
  c->id = next_client_++;
  if (next_client_ == nic::kKernelClient) next_client_ = 1;
  c->fd = fd;
  c->cred = cred;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = c->id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    close(fd);
    return;
  }
  ++unrung_clients_;  // until it opens doorbells
  if (c->refusal.ok()) {
    ++counters_.clients_accepted;
  } else {
    ++refused_pending_;
  }
  Client& added = *c;
  clients_.emplace(c->id, std::move(c));
  // Its first request is usually already queued: serve it now rather
  // than one Poll later.
  if (!ServeClient(added, false)) added.dead = true;
}

bool SessionServer::ServeClient(Client& c, bool hup) {
  alignas(8) uint8_t buf[wire::kMaxMessage + 1];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  for (int m = 0; m < kMessagesPerPoll; ++m) {
    iovec iov{buf, sizeof(buf)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(c.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    Fds fds;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr;
         cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        if (fds.n < kMaxFds) {
          fds.fd[fds.n++] = fd;
        } else {
          close(fd);
        }
      }
    }
    // SOCK_SEQPACKET reads 0 both at EOF and for an empty datagram; the
    // hang-up flag tells them apart.
    if (n == 0 && fds.n == 0) {
      if (hup) return false;
      // The EOF can be read before epoll reports the hang-up (the client
      // closed between the two): ask the socket rather than count an
      // empty request.
      pollfd p{c.fd, POLLRDHUP, 0};
      if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP)) != 0) {
        return false;
      }
    }
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
        static_cast<size_t>(n) > wire::kMaxMessage) {
      ++counters_.requests;
      ++counters_.bad_requests;
      Reply(c, 0, 0,
            absl::DataLossError("message or its descriptors truncated"),
            nullptr, 0, {});
      continue;
    }
    Handle(c, {buf, static_cast<size_t>(n)}, fds);
    if (c.dead) return false;
  }
  return true;
}

void SessionServer::Reply(Client& c, uint16_t type, uint32_t seq,
                          const absl::Status& st, const void* body,
                          size_t body_len, std::span<const int> fds) {
  alignas(8) uint8_t buf[wire::kMaxMessage];
  const std::string text(st.message());
  const size_t len = wire::EncodeReply(type, seq, ErrnoOf(st), text.c_str(),
                                       body, body_len, buf);
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (st.ok() && !fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  // A client that does not read its replies is broken: it goes, rather
  // than stall the polling thread. (Any other failure is a peer already
  // gone, not a violation.)
  if (sendmsg(c.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) !=
      static_cast<ssize_t>(len)) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) ++counters_.reply_overflows;
    c.dead = true;
  }
}

void SessionServer::Disconnect(nic::ClientId id) {
  auto cit = clients_.find(id);
  if (cit == clients_.end()) return;
  // Fence its process-memory regions first, unless another connection of
  // the same process still uses them: once the process is gone its pid may
  // be reused, and nothing may reach the newcomer's memory.
  const pid_t pid = cit->second->cred.pid;
  bool pid_shared = false;
  for (const auto& [other, oc] : clients_) {
    pid_shared |= other != id && oc->cred.pid == pid;
  }
  if (!pid_shared) rnic_.mr_table().InvalidateProcess(pid);
  ReleaseCmIds(id);
  Client& gone = *cit->second;
  if (gone.wake.valid()) {
    // The client's copy keeps the eventfd open: leave the set explicitly.
    epoll_ctl(wake_epoll_fd_, EPOLL_CTL_DEL, gone.wake.fd(), nullptr);
  }
  if (!gone.doorbells.valid()) --unrung_clients_;
  // QPs first (to ERR, which flushes their queues, then destroyed), so no
  // engine touches the MRs unmapped next; RSS QPs before the WQs their
  // tables name.
  for (int pass = 0; pass < 2; ++pass) {
    for (auto it = qps_.begin(); it != qps_.end();) {
      auto cur = it++;
      Qp& qp = *cur->second;
      if (!qp.Holds(id) || (pass == 0 && !rnic_.IsRssQp(qp.qpn))) continue;
      // An XRC TGT QP others hold too stays with them.
      if (HandOverTgtQp(qp, gone)) continue;
      nic::QpAttr err;
      err.qp_state = nic::QpState::kErr;
      (void)rnic_.ModifyQp(qp.qpn, err, nic::qp_attr::kState);
      ++counters_.qps_flushed;
      ReleaseQp(qp);
      qps_.erase(cur);
    }
  }
  // Windows before the regions they may be bound into.
  for (auto it = mws_.begin(); it != mws_.end();) {
    auto cur = it++;
    if (cur->second.owner != id) continue;
    (void)rnic_.mr_table().DeallocMw(nic::kKernelClient, cur->first << 8);
    mws_.erase(cur);
  }
  for (auto it = mrs_.begin(); it != mrs_.end();) {
    auto cur = it++;
    if (cur->second->owner != id) continue;
    ReleaseMr(cur->first, *cur->second);
    mrs_.erase(cur);
  }
  for (auto it = srqs_.begin(); it != srqs_.end();) {
    auto cur = it++;
    if (cur->second->owner != id) continue;
    ReleaseSrq(*cur->second);
    srqs_.erase(cur);
  }
  for (auto it = cqs_.begin(); it != cqs_.end();) {
    auto cur = it++;
    if (cur->second->owner != id) continue;
    ReleaseNicCq(cur->first);
    cqs_.erase(cur);
  }
  for (auto it = ahs_.begin(); it != ahs_.end();) {
    auto cur = it++;
    if (cur->second.owner != id) continue;
    ReleaseNicAh(cur->first);
    ahs_.erase(cur);
  }
  for (auto it = pds_.begin(); it != pds_.end();) {
    auto cur = it++;
    if (cur->second != id) continue;
    ReleaseNicPd(cur->first);
    pds_.erase(cur);
  }
  // XRC domains last: its SRQs and TGT QPs are gone (or held by others).
  for (auto& [h, x] : xrcds_) x->opens.erase(id);
  if (!xrcds_.empty()) ReapXrcds();
  // What it held goes back to its uid and its process's memlock count.
  if (options_.limits != nullptr) {
    options_.limits->Give(gone.cred.uid, gone.use);
    options_.limits->Unpin(gone.cred.pid, gone.pinned_pages);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, cit->second->fd, nullptr);
  close(cit->second->fd);
  if (cit->second->refusal.ok()) {
    ++counters_.clients_closed;
  } else {
    --refused_pending_;
  }
  clients_.erase(cit);
}

std::optional<nic::ClientId> SessionServer::QpOwner(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) return std::nullopt;
  return it->second->owner;
}

std::optional<PeerCredentials> SessionServer::Credentials(
    nic::ClientId client) const {
  auto it = clients_.find(client);
  if (it == clients_.end()) return std::nullopt;
  return it->second->cred;
}

SessionServer::Holdings SessionServer::HoldingsOf(nic::ClientId client) const {
  Holdings h;
  for (const auto& [k, v] : pds_) h.pds += v == client;
  for (const auto& [k, v] : mrs_) h.mrs += v->owner == client;
  for (const auto& [k, v] : cqs_) h.cqs += v->owner == client;
  for (const auto& [k, v] : qps_) h.qps += v->owner == client;
  for (const auto& [k, v] : ahs_) h.ahs += v.owner == client;
  for (const auto& [k, v] : srqs_) h.srqs += v->owner == client;
  return h;
}

}  // namespace rocemu::verbs
