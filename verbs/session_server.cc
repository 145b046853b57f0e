#include "verbs/session_server.h"

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
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/session_objects.h"

namespace rocemu::verbs {
namespace {

constexpr int kMaxFds = 4;
constexpr int kMessagesPerPoll = 16;  // per client, for fairness
constexpr uint64_t kListenTag = 0;
// Async events a client may leave unread before further ones are dropped
// (and counted): they are rare, a slow reader must not stall the daemon.
constexpr uint32_t kAsyncEvents = 256;
// The TTL / hop limit of the daemon's routes (Linux's default), given to
// address vectors whose next hop the daemon resolves.
constexpr uint8_t kRouteHopLimit = 64;

int ErrnoOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return EINVAL;
    case absl::StatusCode::kNotFound:
      return ENOENT;
    case absl::StatusCode::kResourceExhausted:
      return ENOMEM;
    case absl::StatusCode::kUnavailable:
      return EBUSY;
    case absl::StatusCode::kPermissionDenied:
      return EACCES;
    case absl::StatusCode::kUnimplemented:
      return EOPNOTSUPP;
    case absl::StatusCode::kOutOfRange:
      return EPROTONOSUPPORT;
    case absl::StatusCode::kDataLoss:
      return EPROTO;
    case absl::StatusCode::kAborted:  // only ResolveDmac: try again
      return EAGAIN;
    default:
      return EIO;
  }
}

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// ibv_qp_type values <-> the RNIC's.
bool QpTypeFromWire(uint8_t t, nic::QpType* out) {
  switch (t) {
    case 2:
      *out = nic::QpType::kRc;
      return true;
    case 3:
      *out = nic::QpType::kUc;
      return true;
    case 4:
      *out = nic::QpType::kUd;
      return true;
    default:
      return false;
  }
}

nic::QpCap CapFromWire(const wire::WireQpCap& c) {
  return {c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge,
          c.max_inline_data};
}
wire::WireQpCap CapToWire(const nic::QpCap& c) {
  return {c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge,
          c.max_inline_data};
}

void PathFromWire(const wire::WireAhAttr& w, nic::QpPath* p) {
  std::memcpy(p->dgid.data(), w.dgid, sizeof(w.dgid));
  std::memcpy(p->dmac.data(), w.dmac, sizeof(w.dmac));
  p->sgid_index = w.sgid_index;
  p->traffic_class = w.traffic_class;
  p->flow_label = w.flow_label;
  p->hop_limit = w.hop_limit;
  p->sl = w.sl;
  p->port_num = w.port_num;
}
void PathToWire(const nic::QpPath& p, wire::WireAhAttr* w) {
  std::memcpy(w->dgid, p.dgid.data(), sizeof(w->dgid));
  std::memcpy(w->dmac, p.dmac.data(), sizeof(w->dmac));
  w->sgid_index = p.sgid_index;
  w->traffic_class = p.traffic_class;
  w->flow_label = p.flow_label;
  w->hop_limit = p.hop_limit;
  w->sl = p.sl;
  w->port_num = p.port_num;
}

// Values outside the RNIC's enums are refused before they are cast.
absl::Status QpAttrFromWire(const wire::WireQpAttr& w, uint32_t mask,
                            nic::QpAttr* a) {
  if (w.qp_state >= nic::kNumQpStates || w.cur_qp_state >= nic::kNumQpStates) {
    return absl::InvalidArgumentError("QP state out of range");
  }
  if ((mask & nic::qp_attr::kPathMtu) != 0 &&
      (w.path_mtu < 1 || w.path_mtu > 5)) {
    return absl::InvalidArgumentError("path MTU out of range");
  }
  if ((mask & ~nic::qp_attr::kAll) != 0) {
    return absl::InvalidArgumentError("unknown attribute mask bits");
  }
  a->qp_state = static_cast<nic::QpState>(w.qp_state);
  a->cur_qp_state = static_cast<nic::QpState>(w.cur_qp_state);
  if ((mask & nic::qp_attr::kPathMtu) != 0) {
    a->path_mtu = static_cast<nic::PathMtu>(w.path_mtu);
  }
  a->qkey = w.qkey;
  a->rq_psn = w.rq_psn;
  a->sq_psn = w.sq_psn;
  a->dest_qp_num = w.dest_qp_num;
  a->qp_access_flags = w.qp_access_flags;
  a->cap = CapFromWire(w.cap);
  PathFromWire(w.ah_attr, &a->ah_attr);
  a->pkey_index = w.pkey_index;
  a->en_sqd_async_notify = w.en_sqd_async_notify;
  a->sq_draining = w.sq_draining;
  a->max_rd_atomic = w.max_rd_atomic;
  a->max_dest_rd_atomic = w.max_dest_rd_atomic;
  a->min_rnr_timer = w.min_rnr_timer;
  a->port_num = w.port_num;
  a->timeout = w.timeout;
  a->retry_cnt = w.retry_cnt;
  a->rnr_retry = w.rnr_retry;
  return absl::OkStatus();
}

void QpAttrToWire(const nic::QpAttr& a, wire::WireQpAttr* w) {
  *w = wire::WireQpAttr{};
  w->qp_state = static_cast<uint8_t>(a.qp_state);
  w->cur_qp_state = static_cast<uint8_t>(a.cur_qp_state);
  w->path_mtu = static_cast<uint8_t>(a.path_mtu);
  w->en_sqd_async_notify = a.en_sqd_async_notify;
  w->qkey = a.qkey;
  w->rq_psn = a.rq_psn;
  w->sq_psn = a.sq_psn;
  w->dest_qp_num = a.dest_qp_num;
  w->qp_access_flags = a.qp_access_flags;
  w->cap = CapToWire(a.cap);
  PathToWire(a.ah_attr, &w->ah_attr);
  w->pkey_index = a.pkey_index;
  w->sq_draining = a.sq_draining;
  w->max_rd_atomic = a.max_rd_atomic;
  w->max_dest_rd_atomic = a.max_dest_rd_atomic;
  w->min_rnr_timer = a.min_rnr_timer;
  w->port_num = a.port_num;
  w->timeout = a.timeout;
  w->retry_cnt = a.retry_cnt;
  w->rnr_retry = a.rnr_retry;
}

// A completion-channel fd must be an eventfd: anything else (a pipe, a
// socket) could block the daemon's write.
bool IsEventFd(int fd) {
  char path[64];
  char target[64] = {};
  absl::SNPrintF(path, sizeof(path), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, target, sizeof(target) - 1);
  return n > 0 && std::string_view(target, static_cast<size_t>(n)) ==
                      "anon_inode:[eventfd]";
}

}  // namespace

struct SessionServer::Fds {
  int fd[kMaxFds] = {-1, -1, -1, -1};
  int n = 0;
  ~Fds() {
    for (int i = 0; i < n; ++i) {
      if (fd[i] >= 0) close(fd[i]);
    }
  }
  // Hands fd i over to the caller (it will not be closed here).
  int Take(int i) { return i < n ? std::exchange(fd[i], -1) : -1; }
};

SessionServer::SessionServer(nic::Rnic& rnic,
                             const SessionServerOptions& options)
    : rnic_(rnic), options_(options) {}

absl::StatusOr<std::unique_ptr<SessionServer>> SessionServer::Create(
    nic::Rnic& rnic, const SessionServerOptions& options) {
  std::unique_ptr<SessionServer> s(new SessionServer(rnic, options));
  absl::Status st = s->Listen();
  if (!st.ok()) return st;
  return s;
}

absl::Status SessionServer::Listen() {
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
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return absl::ErrnoToStatus(errno, "epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl");
  }
  return absl::OkStatus();
}

SessionServer::~SessionServer() {
  std::vector<nic::ClientId> ids;
  for (const auto& [id, c] : clients_) ids.push_back(id);
  for (nic::ClientId id : ids) Disconnect(id);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(options_.socket_path.c_str());
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

// --- the loop ------------------------------------------------------------

void SessionServer::Poll() {
  PollControl();
  PollData();
}

void SessionServer::PollControl() {
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
}

void SessionServer::PollData() {
  for (auto& [qpn, qp] : qps_) {
    DrainSq(*qp);
    DrainRq(*qp);
  }
  for (auto& [h, srq] : srqs_) DrainSrq(*srq);
  for (auto& [h, cq] : cqs_) DrainCq(*cq);
  DeliverAsyncEvents();
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
        continue;
      }
    }
    auto c = std::make_unique<Client>();
    c->refusal = refusal;
    c->id = next_client_++;
    if (next_client_ == nic::kKernelClient) next_client_ = 1;
    c->fd = fd;
    c->cred = {cred.pid, cred.uid, cred.gid};
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      continue;
    }
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
  // than stall the polling thread.
  if (sendmsg(c.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) !=
      static_cast<ssize_t>(len)) {
    c.dead = true;
  }
}

void SessionServer::Handle(Client& c, std::span<const uint8_t> msg, Fds& fds) {
  ++counters_.requests;
  uint32_t seq = 0;
  uint16_t type = 0;
  absl::StatusOr<wire::DecodedRequest> d =
      wire::DecodeRequest(msg, &seq, &type);
  if (!d.ok()) {
    ++counters_.bad_requests;
    const uint16_t rt =
        (type & wire::kReplyFlag) == 0 && type <= wire::kMaxMsgType ? type : 0;
    Reply(c, rt, seq, absl::DataLossError(d.status().message()), nullptr, 0,
          {});
    return;
  }
  const wire::MsgLayout layout = wire::LayoutOf(d->type);
  if (fds.n < layout.request_fds_min || fds.n > layout.request_fds_max) {
    ++counters_.bad_requests;
    Reply(c, type, seq,
          absl::DataLossError(
              absl::StrFormat("%s carries %d descriptors, expected %u to %u",
                              wire::MsgTypeName(d->type), fds.n,
                              layout.request_fds_min, layout.request_fds_max)),
          nullptr, 0, {});
    return;
  }
  if (!c.refusal.ok()) {
    Reply(c, type, seq, c.refusal, nullptr, 0, {});
    c.dead = true;
    return;
  }
  if (!c.hello && d->type != wire::MsgType::kHello) {
    ++counters_.bad_requests;
    Reply(c, type, seq, absl::FailedPreconditionError("hello first"), nullptr,
          0, {});
    return;
  }
  absl::Status st;
  const auto body = d->body;
  switch (d->type) {
    case wire::MsgType::kHello: {
      wire::HelloResp r{};
      st = OnHello(c, wire::BodyAs<wire::HelloReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryDevice: {
      wire::QueryDeviceResp r{};
      st = OnQueryDevice(&r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryPort: {
      wire::QueryPortResp r{};
      st = OnQueryPort(wire::BodyAs<wire::QueryPortReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryGid: {
      wire::QueryGidResp r{};
      st = OnQueryGid(wire::BodyAs<wire::TableQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryPkey: {
      wire::QueryPkeyResp r{};
      st = OnQueryPkey(wire::BodyAs<wire::TableQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCreateSrq: {
      wire::CreateSrqResp r{};
      int ring_fd = -1;
      st = OnCreateSrq(c, wire::BodyAs<wire::CreateSrqReq>(body), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) srqs_.at(r.srq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kModifySrq:
      st = OnModifySrq(c, wire::BodyAs<wire::ModifySrqReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kQuerySrq: {
      wire::QuerySrqResp r{};
      st = OnQuerySrq(c, wire::BodyAs<wire::HandleReq>(body).handle, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroySrq:
      st = OnDestroySrq(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kOpenAsync: {
      wire::OpenAsyncResp r{};
      int ring_fd = -1;
      st = OnOpenAsync(c, fds.Take(0), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) c.async_ring.CloseFd();
      break;
    }
    case wire::MsgType::kAllocPd: {
      wire::HandleResp r{};
      st = OnAllocPd(c, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDeallocPd:
      st = OnDeallocPd(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kRegMr: {
      wire::RegMrResp r{};
      st = OnRegMr(c, wire::BodyAs<wire::RegMrReq>(body),
                   fds.n == 1 ? fds.fd[0] : -1, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDeregMr:
      st = OnDeregMr(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateCq: {
      wire::CreateCqResp r{};
      int ring_fd = -1;
      const auto req = wire::BodyAs<wire::CreateCqReq>(body);
      if (((req.flags & wire::kCreateCqWithChannel) != 0) != (fds.n == 1)) {
        st = absl::InvalidArgumentError(
            "create_cq: the channel flag and the eventfd go together");
      } else {
        st = OnCreateCq(c, req, fds.Take(0), &r, &ring_fd);
      }
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) cqs_.at(r.cq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kDestroyCq:
      st = OnDestroyCq(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateQp: {
      wire::CreateQpResp r{};
      int ring_fds[2] = {-1, -1};
      st = OnCreateQp(c, wire::BodyAs<wire::CreateQpReq>(body), &r, ring_fds);
      Reply(c, type, seq, st, &r, sizeof(r), {ring_fds, st.ok() ? 2u : 0u});
      if (st.ok()) {
        Qp& qp = *qps_.at(r.qpn);
        qp.sq.CloseFd();
        qp.rq.CloseFd();
      }
      break;
    }
    case wire::MsgType::kModifyQp:
      st = OnModifyQp(c, wire::BodyAs<wire::ModifyQpReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kQueryQp: {
      wire::QueryQpResp r{};
      st = OnQueryQp(c, wire::BodyAs<wire::HandleReq>(body).handle, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroyQp:
      st = OnDestroyQp(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateAh: {
      wire::HandleResp r{};
      st = OnCreateAh(c, wire::BodyAs<wire::CreateAhReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroyAh:
      st = OnDestroyAh(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kInvalid:
      break;
  }
  if (!st.ok()) ++counters_.failed_requests;
}

// --- control requests ----------------------------------------------------

absl::Status SessionServer::OnHello(Client& c, const wire::HelloReq& r,
                                    wire::HelloResp* out) {
  if (c.hello) return absl::FailedPreconditionError("hello sent twice");
  if (r.min_version > wire::kVersion || r.max_version < wire::kVersion) {
    return absl::OutOfRangeError(
        absl::StrFormat("client speaks versions %u..%u, the daemon speaks %u",
                        r.min_version, r.max_version, wire::kVersion));
  }
  c.hello = true;
  c.name.assign(r.client_name, strnlen(r.client_name, sizeof(r.client_name)));
  out->version = wire::kVersion;
  out->client_id = c.id;
  out->capabilities = wire::kCapShmBuffers | wire::kCapCompChannel |
                      wire::kCapProcessMemory | wire::kCapSrq |
                      wire::kCapAsyncEvents;
  out->pid = static_cast<uint32_t>(c.cred.pid);
  out->uid = c.cred.uid;
  out->gid = c.cred.gid;
  out->sq_slot_size = sizeof(SqSlot);
  out->rq_slot_size = sizeof(RqSlot);
  out->cqe_slot_size = sizeof(CqeSlot);
  std::strncpy(out->device_name, options_.device_name.c_str(),
               sizeof(out->device_name) - 1);
  return absl::OkStatus();
}

absl::Status SessionServer::OnAllocPd(Client& c, wire::HandleResp* out) {
  absl::StatusOr<nic::PdHandle> pd = rnic_.AllocPd();
  if (!pd.ok()) return pd.status();
  pds_[*pd] = c.id;
  out->handle = *pd;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDeallocPd(Client& c, uint32_t pd) {
  auto it = pds_.find(pd);
  if (it == pds_.end() || it->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  for (const auto& [k, mr] : mrs_) {
    if (mr->pd == pd) return absl::UnavailableError("PD has memory regions");
  }
  for (const auto& [k, qp] : qps_) {
    if (qp->pd == pd) return absl::UnavailableError("PD has queue pairs");
  }
  for (const auto& [k, srq] : srqs_) {
    if (srq->pd == pd) return absl::UnavailableError("PD has SRQs");
  }
  for (const auto& [k, ah] : ahs_) {
    if (ah.pd == pd) return absl::UnavailableError("PD has address handles");
  }
  pds_.erase(it);
  ReleaseNicPd(pd);
  return absl::OkStatus();
}

absl::Status SessionServer::OnRegMr(Client& c, const wire::RegMrReq& r, int fd,
                                    wire::RegMrResp* out) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  if (!nic::AccessFlagsConsistent(r.access)) {
    return absl::InvalidArgumentError("inconsistent access flags");
  }
  if (fd < 0) {
    // Arbitrary memory of the client process itself: the pid is the one
    // the kernel vouched for at accept (SO_PEERCRED), never one the client
    // names.
    if (r.offset != 0 || r.length == 0) {
      return absl::InvalidArgumentError("process region: offset 0, length > 0");
    }
    absl::StatusOr<uint32_t> key = rnic_.mr_table().RegisterProcess(
        nic::kKernelClient, r.pd, c.cred.pid, r.iova, r.length, r.access);
    if (!key.ok()) return key.status();
    auto mr = std::make_unique<Mr>();
    mr->owner = c.id;
    mr->pd = r.pd;
    mr->iova = r.iova;
    mr->length = r.length;
    mr->access = r.access;
    mr->process = true;
    mrs_[*key] = std::move(mr);
    out->lkey = out->rkey = *key;
    return absl::OkStatus();
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError("MR buffer is not a memory file");
  }
  // Without this seal the client could truncate the file under the
  // daemon's mapping and crash it with SIGBUS.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::InvalidArgumentError(
        "MR buffer must be sealed against shrinking (rocemu_alloc_buf)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (r.length == 0 || r.offset > size || r.length > size - r.offset) {
    return absl::InvalidArgumentError(
        absl::StrFormat("range [%u, +%u) outside the %u-byte buffer", r.offset,
                        r.length, size));
  }
  const size_t page = PageSize();
  const uint64_t start = r.offset / page * page;
  const uint64_t end = (r.offset + r.length + page - 1) / page * page;
  void* map = mmap(nullptr, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   static_cast<off_t>(start));
  if (map == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap MR buffer");
  const nic::HostChunk chunk{static_cast<uint8_t*>(map) + (r.offset - start),
                             r.length};
  absl::StatusOr<uint32_t> key = rnic_.mr_table().Register(
      nic::kKernelClient, r.pd, r.iova, r.length, r.access, {&chunk, 1});
  if (!key.ok()) {
    munmap(map, end - start);
    return key.status();
  }
  auto mr = std::make_unique<Mr>();
  mr->owner = c.id;
  mr->pd = r.pd;
  mr->map = map;
  mr->map_len = end - start;
  mr->iova = r.iova;
  mr->length = r.length;
  mr->access = r.access;
  mrs_[*key] = std::move(mr);
  out->lkey = out->rkey = *key;
  return absl::OkStatus();
}

absl::Status SessionServer::OnDeregMr(Client& c, uint32_t key) {
  auto it = mrs_.find(key);
  if (it == mrs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such memory region");
  }
  ReleaseMr(key, *it->second);
  mrs_.erase(it);
  return absl::OkStatus();
}

void SessionServer::ReleaseMr(uint32_t key, Mr& mr) {
  (void)rnic_.mr_table().Deregister(nic::kKernelClient, key);
  if (mr.map != nullptr) munmap(mr.map, mr.map_len);
}

// The RNIC's destroy calls cannot fail here: the server checks ownership
// and use counts first, so an error would be a server bug, not the
// client's; it is not reported to the client.
void SessionServer::ReleaseNicCq(nic::CqHandle cq) {
  (void)rnic_.DestroyCq(cq);
}

void SessionServer::ReleaseNicPd(nic::PdHandle pd) {
  (void)rnic_.DeallocPd(pd);
}

void SessionServer::ReleaseNicAh(nic::AhHandle ah) {
  (void)rnic_.DestroyAh(ah);
}

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
      ShmRing::Create("rocemu-cq", sizeof(CqeSlot), r.cqe);
  if (!ring.ok()) return ring.status();
  absl::StatusOr<nic::CqHandle> h = rnic_.CreateCq(r.cqe);
  if (!h.ok()) return h.status();
  auto cq = std::make_unique<Cq>();
  cq->owner = c.id;
  cq->handle = *h;
  cq->cqe = r.cqe;
  cq->ring = *std::move(ring);
  cq->channel = std::move(channel);
  *ring_fd = cq->ring.fd();
  out->cq = *h;
  out->cqe = r.cqe;
  cqs_[*h] = std::move(cq);
  return absl::OkStatus();
}

absl::Status SessionServer::OnDestroyCq(Client& c, uint32_t h) {
  auto it = cqs_.find(h);
  if (it == cqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  if (it->second->users != 0) return absl::UnavailableError("CQ in use");
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
  auto scq = cqs_.find(r.send_cq);
  auto rcq = cqs_.find(r.recv_cq);
  if (scq == cqs_.end() || scq->second->owner != c.id || rcq == cqs_.end() ||
      rcq->second->owner != c.id) {
    return absl::NotFoundError("no such CQ");
  }
  nic::QpInitAttr init;
  if (!QpTypeFromWire(r.qp_type, &init.qp_type)) {
    return absl::InvalidArgumentError("QP type not supported");
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
  } else if (r.flags != 0) {
    return absl::InvalidArgumentError("unknown create_qp flags");
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
  // failure must not leave a QP behind.
  const uint32_t max_wr = rnic_.device_attr().max_qp_wr;
  if (init.cap.max_send_wr == 0 || init.cap.max_send_wr > max_wr ||
      (srq == nullptr &&
       (init.cap.max_recv_wr == 0 || init.cap.max_recv_wr > max_wr))) {
    return absl::InvalidArgumentError("QP capabilities outside the device's");
  }
  absl::StatusOr<ShmRing> sq =
      ShmRing::Create("rocemu-sq", sizeof(SqSlot), init.cap.max_send_wr);
  if (!sq.ok()) return sq.status();
  absl::StatusOr<ShmRing> rq = ShmRing::Create(
      "rocemu-rq", sizeof(RqSlot), std::max(init.cap.max_recv_wr, 1u));
  if (!rq.ok()) return rq.status();
  absl::StatusOr<uint32_t> qpn = rnic_.CreateQp(r.pd, init);
  if (!qpn.ok()) return qpn.status();
  auto qp = std::make_unique<Qp>();
  qp->owner = c.id;
  qp->qpn = *qpn;
  qp->pd = r.pd;
  qp->sq = *std::move(sq);
  qp->rq = *std::move(rq);
  qp->send_cq = scq->second.get();
  qp->recv_cq = rcq->second.get();
  qp->srq = srq;
  ++qp->send_cq->users;
  ++qp->recv_cq->users;
  if (srq != nullptr) ++srq->users;
  ring_fds[0] = qp->sq.fd();
  ring_fds[1] = qp->rq.fd();
  out->qpn = *qpn;
  out->cap = CapToWire(init.cap);
  qps_[*qpn] = std::move(qp);
  return absl::OkStatus();
}

absl::Status SessionServer::OnModifyQp(Client& c, const wire::ModifyQpReq& r) {
  auto it = qps_.find(r.qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
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
  return rnic_.ModifyQp(r.qpn, attr, r.attr_mask);
}

absl::Status SessionServer::OnQueryQp(Client& c, uint32_t qpn,
                                      wire::QueryQpResp* out) {
  auto it = qps_.find(qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such QP");
  }
  absl::StatusOr<nic::QpAttr> a = rnic_.QueryQp(qpn);
  if (!a.ok()) return a.status();
  QpAttrToWire(*a, &out->attr);
  return absl::OkStatus();
}

void SessionServer::ReleaseQp(Qp& qp) {
  --qp.send_cq->users;
  --qp.recv_cq->users;
  if (qp.srq != nullptr) --qp.srq->users;
  (void)rnic_.DestroyQp(qp.qpn);
}

absl::Status SessionServer::OnDestroyQp(Client& c, uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such QP");
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
  if (*dmac != protocol::MacAddr{} || !options_.resolve_dmac) {
    return absl::OkStatus();
  }
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

absl::Status SessionServer::OnQueryDevice(wire::QueryDeviceResp* out) {
  const nic::DeviceAttr& a = rnic_.device_attr();
  std::strncpy(out->fw_ver, a.fw_ver.c_str(), sizeof(out->fw_ver) - 1);
  out->node_guid = a.node_guid;
  out->sys_image_guid = a.sys_image_guid;
  out->max_mr_size = a.max_mr_size;
  out->page_size_cap = a.page_size_cap;
  out->vendor_id = a.vendor_id;
  out->vendor_part_id = a.vendor_part_id;
  out->hw_ver = a.hw_ver;
  out->max_qp = a.max_qp;
  out->max_qp_wr = a.max_qp_wr;
  out->device_cap_flags = a.device_cap_flags;
  out->max_sge = a.max_sge;
  out->max_sge_rd = a.max_sge_rd;
  out->max_cq = a.max_cq;
  out->max_cqe = a.max_cqe;
  out->max_mr = a.max_mr;
  out->max_pd = a.max_pd;
  out->max_qp_rd_atom = a.max_qp_rd_atom;
  out->max_res_rd_atom = a.max_res_rd_atom;
  out->max_qp_init_rd_atom = a.max_qp_init_rd_atom;
  out->atomic_cap = static_cast<uint32_t>(a.atomic_cap);
  out->max_ah = a.max_ah;
  out->max_srq = a.max_srq;
  out->max_srq_wr = a.max_srq_wr;
  out->max_srq_sge = a.max_srq_sge;
  out->max_inline_data = a.max_inline_data;
  out->max_msg_sz = a.max_msg_sz;
  out->max_pkeys = static_cast<uint16_t>(a.max_pkeys);
  out->local_ca_ack_delay = a.local_ca_ack_delay;
  out->phys_port_cnt = a.phys_port_cnt;
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryPort(const wire::QueryPortReq& r,
                                        wire::QueryPortResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  const nic::PortAttr& p = rnic_.port_attr();
  const nic::DeviceCounters k = rnic_.QueryCounters();
  std::memcpy(out->gid, rnic_.config().gid.data(), sizeof(out->gid));
  std::memcpy(out->mac, rnic_.config().mac.data(), sizeof(out->mac));
  out->active_mtu = static_cast<uint8_t>(p.active_mtu);
  out->state = static_cast<uint8_t>(p.state);
  out->max_mtu = static_cast<uint8_t>(p.max_mtu);
  out->link_layer = p.link_layer;
  out->active_width = p.active_width;
  out->active_speed = p.active_speed;
  out->phys_state = p.phys_state;
  out->max_vl_num = p.max_vl_num;
  out->pkey_tbl_len = rnic_.pkey_table().capacity();
  out->gid_tbl_len = static_cast<int32_t>(rnic_.gid_table().capacity());
  out->port_cap_flags = p.port_cap_flags;
  out->max_msg_sz = p.max_msg_sz;
  out->bad_pkey_cntr =
      static_cast<uint32_t>(std::min<uint64_t>(k.bad_pkey_cntr, UINT32_MAX));
  out->qkey_viol_cntr =
      static_cast<uint32_t>(std::min<uint64_t>(k.qkey_viol_cntr, UINT32_MAX));
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryGid(const wire::TableQueryReq& r,
                                       wire::QueryGidResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  if (r.index >= rnic_.gid_table().capacity()) {
    return absl::InvalidArgumentError("GID index beyond the table");
  }
  // An empty entry reads as the zero GID, as ibv_query_gid reports it.
  const std::optional<nic::Gid> g = rnic_.gid_table().Get(r.index);
  if (g.has_value()) std::memcpy(out->gid, g->data(), sizeof(out->gid));
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryPkey(const wire::TableQueryReq& r,
                                        wire::QueryPkeyResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  if (r.index >= rnic_.pkey_table().capacity()) {
    return absl::InvalidArgumentError("P_Key index beyond the table");
  }
  out->pkey = rnic_.pkey_table().Get(static_cast<uint16_t>(r.index));
  return absl::OkStatus();
}

absl::Status SessionServer::OnCreateSrq(Client& c, const wire::CreateSrqReq& r,
                                        wire::CreateSrqResp* out,
                                        int* ring_fd) {
  auto pd = pds_.find(r.pd);
  if (pd == pds_.end() || pd->second != c.id) {
    return absl::NotFoundError("no such PD");
  }
  const nic::DeviceAttr& dev = rnic_.device_attr();
  if (r.attr.max_wr == 0 || r.attr.max_wr > dev.max_srq_wr ||
      r.attr.max_sge == 0 || r.attr.max_sge > dev.max_srq_sge) {
    return absl::InvalidArgumentError("SRQ sizes outside the device's");
  }
  // The ring first: an SRQ the RNIC made must not outlive a ring failure.
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-srq", sizeof(RqSlot), r.attr.max_wr);
  if (!ring.ok()) return ring.status();
  const nic::SrqAttr attr{r.attr.max_wr, r.attr.max_sge, r.attr.srq_limit};
  absl::StatusOr<nic::SrqHandle> h = rnic_.CreateSrq(r.pd, attr);
  if (!h.ok()) return h.status();
  auto srq = std::make_unique<Srq>();
  srq->owner = c.id;
  srq->handle = *h;
  srq->pd = r.pd;
  srq->ring = *std::move(ring);
  *ring_fd = srq->ring.fd();
  out->srq = *h;
  out->attr = r.attr;
  srqs_[*h] = std::move(srq);
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

void SessionServer::ReleaseSrq(Srq& srq) { (void)rnic_.DestroySrq(srq.handle); }

absl::Status SessionServer::OnDestroySrq(Client& c, uint32_t h) {
  auto it = srqs_.find(h);
  if (it == srqs_.end() || it->second->owner != c.id) {
    return absl::NotFoundError("no such SRQ");
  }
  if (it->second->users != 0) return absl::UnavailableError("SRQ in use");
  ReleaseSrq(*it->second);
  srqs_.erase(it);
  return absl::OkStatus();
}

absl::Status SessionServer::OnOpenAsync(Client& c, int fd,
                                        wire::OpenAsyncResp* out,
                                        int* ring_fd) {
  EventFd channel(fd);
  if (c.async_ring.valid()) {
    return absl::FailedPreconditionError("async events already open");
  }
  if (!IsEventFd(fd)) {
    return absl::InvalidArgumentError("async event fd is not an eventfd");
  }
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, "async event fd flags");
  }
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-async", sizeof(AsyncEventSlot), kAsyncEvents);
  if (!ring.ok()) return ring.status();
  c.async_ring = *std::move(ring);
  c.async_fd = std::move(channel);
  *ring_fd = c.async_ring.fd();
  out->capacity = c.async_ring.capacity();
  return absl::OkStatus();
}

// --- disconnection -------------------------------------------------------

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
  // QPs first (to ERR, which flushes their queues, then destroyed), so no
  // engine touches the MRs unmapped next.
  for (auto it = qps_.begin(); it != qps_.end();) {
    auto cur = it++;
    Qp& qp = *cur->second;
    if (qp.owner != id) continue;
    nic::QpAttr err;
    err.qp_state = nic::QpState::kErr;
    (void)rnic_.ModifyQp(qp.qpn, err, nic::qp_attr::kState);
    ++counters_.qps_flushed;
    ReleaseQp(qp);
    qps_.erase(cur);
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
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, cit->second->fd, nullptr);
  close(cit->second->fd);
  if (cit->second->refusal.ok()) {
    ++counters_.clients_closed;
  } else {
    --refused_pending_;
  }
  clients_.erase(cit);
}

// --- data path -----------------------------------------------------------

bool SessionServer::OwnsKeys(nic::ClientId client,
                             const nic::SgList& sgl) const {
  for (const nic::Sge& s : sgl) {
    if (s.length == 0) continue;
    auto it = mrs_.find(s.lkey);
    if (it == mrs_.end() || it->second->owner != client) return false;
  }
  return true;
}

namespace {
// An L_Key the RNIC never issues (slot index 0 is reserved): a request
// carrying it fails in the engine with IBV_WC_LOC_PROT_ERR, in order with
// the QP's other requests, and the QP goes to ERR.
constexpr uint32_t kRefusedKey = 0;
}  // namespace

void SessionServer::DrainSq(Qp& qp) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = qp.sq.ConsumerSlot();
    if (s == nullptr) {
      if (qp.sq.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(qp.owner)->dead = true;
      }
      return;
    }
    std::memcpy(&sq_slot_, s, sizeof(sq_slot_));
    if (!SqSlotToSendWr(sq_slot_, &send_wr_)) {
      qp.sq.Release();
      ++counters_.bad_wqes;
      FailWqe(qp, true, sq_slot_.wr_id, nic::WcStatus::kLocQpOpErr);
      continue;
    }
    if (!send_wr_.is_inline()) RefuseForeignKeys(qp.owner, &send_wr_.sg_list);
    const absl::Status st = rnic_.PostSend(qp.qpn, send_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted) return;  // retry
    qp.sq.Release();
    ++counters_.sq_wqes;
    if (!st.ok()) {
      ++counters_.bad_wqes;
      FailWqe(qp, true, send_wr_.wr_id, nic::WcStatus::kLocQpOpErr);
    }
  }
}

void SessionServer::DrainRq(Qp& qp) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = qp.rq.ConsumerSlot();
    if (s == nullptr) {
      if (qp.rq.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(qp.owner)->dead = true;
      }
      return;
    }
    std::memcpy(&rq_slot_, s, sizeof(rq_slot_));
    if (!RqSlotToRecvWr(rq_slot_, &recv_wr_)) {
      qp.rq.Release();
      ++counters_.bad_wqes;
      FailWqe(qp, false, rq_slot_.wr_id, nic::WcStatus::kLocQpOpErr);
      continue;
    }
    RefuseForeignKeys(qp.owner, &recv_wr_.sg_list);
    const absl::Status st = rnic_.PostRecv(qp.qpn, recv_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted) return;
    qp.rq.Release();
    ++counters_.rq_wqes;
    if (!st.ok()) {
      ++counters_.bad_wqes;
      FailWqe(qp, false, recv_wr_.wr_id, nic::WcStatus::kLocQpOpErr);
    }
  }
}

bool SessionServer::RefuseForeignKeys(nic::ClientId client, nic::SgList* sgl) {
  if (OwnsKeys(client, *sgl)) return false;
  ++counters_.lkey_violations;
  for (uint32_t k = 0; k < sgl->size(); ++k) {
    nic::Sge& g = (*sgl)[k];
    auto it = mrs_.find(g.lkey);
    if (it == mrs_.end() || it->second->owner != client) g.lkey = kRefusedKey;
  }
  return true;
}

void SessionServer::DrainSrq(Srq& srq) {
  for (uint32_t i = 0; i < options_.post_budget; ++i) {
    const void* s = srq.ring.ConsumerSlot();
    if (s == nullptr) {
      if (srq.ring.last_result() == RingResult::kCorrupt) {
        ++counters_.ring_corruptions;
        clients_.at(srq.owner)->dead = true;
      }
      return;
    }
    std::memcpy(&rq_slot_, s, sizeof(rq_slot_));
    if (!RqSlotToRecvWr(rq_slot_, &recv_wr_)) {
      // No QP to fail: an SRQ entry belongs to whichever QP takes it. The
      // entry is dropped and counted (ibv_post_srq_recv checked it first).
      srq.ring.Release();
      ++counters_.bad_wqes;
      continue;
    }
    RefuseForeignKeys(srq.owner, &recv_wr_.sg_list);
    const absl::Status st = rnic_.PostSrqRecv(srq.handle, recv_wr_);
    if (st.code() == absl::StatusCode::kResourceExhausted) return;
    srq.ring.Release();
    ++counters_.srq_wqes;
    if (!st.ok()) ++counters_.bad_wqes;
  }
}

void SessionServer::DeliverAsyncEvents() {
  nic::AsyncEvent e;
  while (rnic_.async_events().Pop(&e)) {
    nic::ClientId owner = 0;
    switch (e.type) {
      case nic::AsyncEventType::kCqErr: {
        auto it = cqs_.find(e.element);
        if (it != cqs_.end()) owner = it->second->owner;
        break;
      }
      case nic::AsyncEventType::kSrqErr:
      case nic::AsyncEventType::kSrqLimitReached: {
        auto it = srqs_.find(e.element);
        if (it != srqs_.end()) owner = it->second->owner;
        break;
      }
      case nic::AsyncEventType::kDeviceFatal:
      case nic::AsyncEventType::kPortActive:
      case nic::AsyncEventType::kPortErr:
      case nic::AsyncEventType::kLidChange:
      case nic::AsyncEventType::kPkeyChange:
      case nic::AsyncEventType::kSmChange:
      case nic::AsyncEventType::kClientReregister:
      case nic::AsyncEventType::kGidChange:
        // Unaffiliated: every client hears it.
        for (auto& [id, c] : clients_) PushAsyncEvent(*c, e);
        continue;
      default: {  // QP events
        auto it = qps_.find(e.element);
        if (it != qps_.end()) owner = it->second->owner;
        break;
      }
    }
    if (owner == 0) continue;  // an object no client holds (any more)
    auto c = clients_.find(owner);
    if (c != clients_.end()) PushAsyncEvent(*c->second, e);
  }
}

void SessionServer::PushAsyncEvent(Client& c, const nic::AsyncEvent& e) {
  if (!c.async_ring.valid()) return;
  async_slot_ = {static_cast<uint32_t>(e.type), e.element};
  if (c.async_ring.Push(async_slot_) != RingResult::kOk) {
    ++counters_.async_events_dropped;
    return;
  }
  ++counters_.async_events;
  c.async_fd.Signal();
}

void SessionServer::DrainCq(Cq& cq) {
  std::span<nic::WorkCompletion> wc(wc_);
  bool pushed = false;
  bool wake_solicited = false;
  for (;;) {
    const uint32_t free = cq.ring.FreeSlots();
    if (free == 0) break;
    const size_t n =
        rnic_.PollCq(cq.handle, wc.first(std::min<size_t>(free, wc.size())));
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      void* slot = cq.ring.ProducerSlot();
      if (slot == nullptr) break;  // cannot happen: FreeSlots said so
      CqeFromCompletion(wc[i], static_cast<CqeSlot*>(slot));
      cq.ring.Publish();
      // A solicited-only arm fires on a solicited receive or an error
      // completion (IBTA 11.4.2.2).
      wake_solicited |=
          wc[i].status != nic::WcStatus::kSuccess || wc[i].solicited;
    }
    counters_.cqes += n;
    pushed = true;
  }
  if (pushed && cq.channel.valid() && cq.ring.TakeArm(wake_solicited)) {
    cq.channel.Signal();
    ++counters_.cq_events;
  }
}

void SessionServer::FailWqe(Qp& qp, bool send, uint64_t wr_id,
                            nic::WcStatus status) {
  Cq& cq = send ? *qp.send_cq : *qp.recv_cq;
  DrainCq(cq);  // what the RNIC completed before comes first
  nic::WorkCompletion wc;
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = send ? nic::WcOpcode::kSend : nic::WcOpcode::kRecv;
  wc.qp_num = qp.qpn;
  void* slot = cq.ring.ProducerSlot();
  if (slot != nullptr) {
    CqeFromCompletion(wc, static_cast<CqeSlot*>(slot));
    cq.ring.Publish();
    ++counters_.cqes;
    if (cq.channel.valid() && cq.ring.TakeArm(true)) {
      cq.channel.Signal();
      ++counters_.cq_events;
    }
  }
  nic::QpAttr err;
  err.qp_state = nic::QpState::kErr;
  (void)rnic_.ModifyQp(qp.qpn, err, nic::qp_attr::kState);
}

// --- introspection -------------------------------------------------------

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
