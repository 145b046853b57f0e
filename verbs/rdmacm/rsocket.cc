// Stream rsockets: the socket's life (create, bind, listen, accept,
// connect, shutdown, close), its options and the CM events that move it.
// The data path is in rsocket_data.cc, rpoll/rselect in rsocket_poll.cc.
#include "verbs/rdmacm/rsocket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <unordered_map>

namespace rocemu::rdmacm::rs {
namespace {

// How long rdma_cm may take to resolve an address or a route.
constexpr int kResolveTimeoutMs = 2000;
// rshutdown and raccept wait at most this long for the peer: a peer that
// has gone must not hang the caller.
constexpr int kHandshakeTimeoutMs = 5000;

std::mutex& RegistryMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

std::unordered_map<int, RSocket*>& Registry() {
  static auto* m = new std::unordered_map<int, RSocket*>;
  return *m;
}

int SetNonblock(int fd) {
  const int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

bool Connecting(State s) {
  return s == State::kResolvingAddr || s == State::kResolvingRoute ||
         s == State::kConnecting;
}

void ConnectFailed(RSocket* rs, int err) {
  rs->state = State::kConnectError;
  rs->err = err;
}

// An event's status as an errno value (rdma_cm gives -errno or a CM
// reason).
int StatusErr(const rdma_cm_event* e, int fallback) {
  if (e->status < 0) return -e->status;
  return fallback;
}

// Creates the socket's own event channel and id; its fd numbers it.
RSocket* NewSocket() {
  auto* rs = new RSocket;
  rs->channel = rdma_create_event_channel();
  if (rs->channel == nullptr) {
    delete rs;
    return nullptr;
  }
  if (SetNonblock(rs->channel->fd) != 0) {
    const int err = errno;
    rdma_destroy_event_channel(rs->channel);
    delete rs;
    errno = err;
    return nullptr;
  }
  rs->fd = rs->channel->fd;
  return rs;
}

void Register(RSocket* rs) {
  std::lock_guard<std::mutex> lock(RegistryMu());
  Registry()[rs->fd] = rs;
}

void DestroySocket(RSocket* rs) {
  for (rdma_cm_event* e : rs->requests) {
    rdma_cm_id* id = e->id;
    rdma_ack_cm_event(e);
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
  }
  rs->requests.clear();
  if (rs->id != nullptr && rs->id->qp != nullptr) {
    rdma_destroy_qp(rs->id);
  }
  FreeIomaps(rs);
  rs->sbuf.Reset();
  rs->rbuf.Reset();
  rs->target.Reset();
  DestroyEndpoint(rs);
  if (rs->id != nullptr) rdma_destroy_id(rs->id);
  if (rs->channel != nullptr) rdma_destroy_event_channel(rs->channel);
  delete rs;
}

void HandleEvent(RSocket* rs, rdma_cm_event* e) {
  if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    if (rs->state == State::kListening) {
      rs->requests.push_back(e);  // acknowledged by raccept
      return;
    }
    rdma_cm_id* id = e->id;
    rdma_ack_cm_event(e);
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return;
  }
  const rdma_cm_event_type type = e->event;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      rdma_ack_cm_event(e);
      if (rs->state != State::kResolvingAddr) return;
      if (rdma_resolve_route(rs->id, kResolveTimeoutMs) != 0) {
        ConnectFailed(rs, errno);
      } else {
        rs->state = State::kResolvingRoute;
      }
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      rdma_ack_cm_event(e);
      if (rs->state != State::kResolvingRoute) return;
      if (CreateEndpoint(rs) != 0) {
        ConnectFailed(rs, errno);
        return;
      }
      ConnData c;
      FormatConnData(rs, &c);
      rdma_conn_param p{};
      p.private_data = &c;
      p.private_data_len = sizeof(c);
      p.flow_control = 1;
      p.retry_count = 7;
      p.rnr_retry_count = 7;
      if (rdma_connect(rs->id, &p) != 0) {
        ConnectFailed(rs, errno);
      } else {
        rs->state = State::kConnecting;
      }
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      if (rs->state == State::kConnecting) {
        const bool ok = SaveConnData(rs, e->param.conn.private_data,
                                     e->param.conn.private_data_len);
        rdma_ack_cm_event(e);
        if (!ok) {
          // Not an rsocket (or another version) on the other side.
          rdma_disconnect(rs->id);
          ConnectFailed(rs, ECONNREFUSED);
          return;
        }
        rs->state = State::kConnected;
        rs->readable = rs->writable = true;
        return;
      }
      rs->established = true;
      rdma_ack_cm_event(e);
      return;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_REJECTED: {
      const int err =
          type == RDMA_CM_EVENT_REJECTED
              ? ECONNREFUSED
              : StatusErr(e, type == RDMA_CM_EVENT_ADDR_ERROR ? EHOSTUNREACH
                                                              : ETIMEDOUT);
      rdma_ack_cm_event(e);
      if (Connecting(rs->state)) {
        ConnectFailed(rs, err);
      } else if (rs->Connected()) {
        Fail(rs, ECONNRESET);
      }
      return;
    }
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      rdma_ack_cm_event(e);
      rs->cm_disconnected = true;
      if (rs->cq != nullptr) PollCq(rs);  // what the peer sent before
      if (rs->Connected()) {
        // The peer went without rsockets' goodbye: a reset.
        Fail(rs, ECONNRESET);
      }
      return;
    default:
      rdma_ack_cm_event(e);
      return;
  }
}

void Unlink(int fd) {
  std::lock_guard<std::mutex> lock(RegistryMu());
  Registry().erase(fd);
}

// A connection request on `l`: a socket of its own, accepted with our
// connection data; nullptr (errno set) when refused.
RSocket* AcceptOne(RSocket* l, rdma_cm_event* e) {
  rdma_cm_id* id = e->id;
  rdma_conn_param param = e->param.conn;
  uint8_t creq[sizeof(ConnData)] = {};
  const bool have = param.private_data != nullptr &&
                    param.private_data_len >= sizeof(ConnData);
  if (have) std::memcpy(creq, param.private_data, sizeof(creq));
  rdma_ack_cm_event(e);
  if (!have || creq[0] != kConnVersion) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    errno = ECONNABORTED;
    return nullptr;
  }
  RSocket* n = NewSocket();
  if (n == nullptr) {
    const int err = errno;
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    errno = err;
    return nullptr;
  }
  n->sbuf_size = l->sbuf_size;
  n->rbuf_size = l->rbuf_size;
  n->sq_size = l->sq_size;
  n->rq_size = l->rq_size;
  n->sq_inline = l->sq_inline;
  n->target_iomap_size = l->target_iomap_size;
  if (rdma_migrate_id(id, n->channel) != 0) {
    const int err = errno;
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    DestroySocket(n);
    errno = err;
    return nullptr;
  }
  n->id = id;
  id->context = n;
  ConnData resp;
  if (CreateEndpoint(n) != 0 || !SaveConnData(n, creq, sizeof(creq))) {
    const int err = errno != 0 ? errno : ECONNABORTED;
    rdma_reject(id, nullptr, 0);
    DestroySocket(n);
    errno = err;
    return nullptr;
  }
  FormatConnData(n, &resp);
  param.private_data = &resp;
  param.private_data_len = sizeof(resp);
  if (rdma_accept(id, &param) != 0) {
    const int err = errno;
    rdma_reject(id, nullptr, 0);
    DestroySocket(n);
    errno = err;
    return nullptr;
  }
  n->state = State::kConnected;
  n->readable = n->writable = true;
  // The peer sends once it has our REP; wait for its RTU so that our
  // first writes do not race its QP's way to RTR.
  std::unique_lock<std::mutex> lock(n->mu);
  (void)WaitFor(n, lock, false, kHandshakeTimeoutMs,
                [](RSocket* s) { return s->established || !s->Connected(); });
  return n;
}

}  // namespace

RSocket* Find(int fd) {
  std::lock_guard<std::mutex> lock(RegistryMu());
  auto it = Registry().find(fd);
  if (it == Registry().end()) {
    errno = EBADF;
    return nullptr;
  }
  return it->second;
}

void ProcessCmEvents(RSocket* rs) {
  // The channel's EAGAIN at the end is no news for the caller.
  const int saved = errno;
  rdma_cm_event* e = nullptr;
  while (rdma_get_cm_event(rs->channel, &e) == 0) HandleEvent(rs, e);
  errno = saved;
}

int DriveConnect(RSocket* rs, bool block) {
  for (;;) {
    ProcessCmEvents(rs);
    if (rs->Connected()) return 0;
    if (rs->state == State::kConnectError) {
      return SetErrno(rs->err != 0 ? rs->err : ECONNREFUSED);
    }
    if (!Connecting(rs->state)) return SetErrno(ENOTCONN);
    if (!block) return SetErrno(EINPROGRESS);
    pollfd p{rs->channel->fd, POLLIN, 0};
    (void)poll(&p, 1, 1000);
  }
}

// C linkage: these are librdmacm's exports (<rdma/rsocket.h>).
extern "C" {

int rsocket(int domain, int type, int protocol) {
  if (domain != AF_INET && domain != AF_INET6) return SetErrno(EAFNOSUPPORT);
  // Datagram rsockets (rdma-core's UD service with its UDP side channel)
  // are not offered.
  if (type != SOCK_STREAM) return SetErrno(ESOCKTNOSUPPORT);
  if (protocol != 0 && protocol != IPPROTO_TCP) {
    return SetErrno(EPROTONOSUPPORT);
  }
  RSocket* rs = NewSocket();
  if (rs == nullptr) return -1;
  if (rdma_create_id(rs->channel, &rs->id, rs, RDMA_PS_TCP) != 0) {
    const int err = errno;
    DestroySocket(rs);
    return SetErrno(err);
  }
  Register(rs);
  return rs->fd;
}

int rbind(int socket, const sockaddr* addr, socklen_t addrlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (addr == nullptr || addrlen < sizeof(sockaddr_in)) {
    return SetErrno(EINVAL);
  }
  std::lock_guard<std::mutex> lock(rs->mu);
  if (rs->state != State::kInit) return SetErrno(EINVAL);
  sockaddr_storage ss{};
  std::memcpy(&ss, addr, std::min<size_t>(addrlen, sizeof(ss)));
  if (rdma_bind_addr(rs->id, reinterpret_cast<sockaddr*>(&ss)) != 0) {
    return -1;
  }
  rs->state = State::kBound;
  return 0;
}

int rlisten(int socket, int backlog) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::lock_guard<std::mutex> lock(rs->mu);
  if (rs->state == State::kListening) return 0;
  if (rs->state != State::kBound && rs->state != State::kInit) {
    return SetErrno(EINVAL);
  }
  if (rdma_listen(rs->id, backlog) != 0) return -1;
  rs->state = State::kListening;
  return 0;
}

int raccept(int socket, sockaddr* addr, socklen_t* addrlen) {
  RSocket* l = Find(socket);
  if (l == nullptr) return -1;
  std::unique_lock<std::mutex> lock(l->mu);
  if (l->state != State::kListening) return SetErrno(EINVAL);
  for (;;) {
    ProcessCmEvents(l);
    if (!l->requests.empty()) {
      rdma_cm_event* e = l->requests.front();
      l->requests.pop_front();
      RSocket* n = AcceptOne(l, e);
      if (n == nullptr) continue;  // refused: the next one, if any
      Register(n);
      if (addr != nullptr && addrlen != nullptr) {
        (void)rgetpeername(n->fd, addr, addrlen);
      }
      return n->fd;
    }
    if (l->nonblocking) return SetErrno(EAGAIN);
    pollfd p{l->channel->fd, POLLIN, 0};
    lock.unlock();
    (void)poll(&p, 1, 1000);
    lock.lock();
  }
}

int rconnect(int socket, const sockaddr* addr, socklen_t addrlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::lock_guard<std::mutex> lock(rs->mu);
  if (Connecting(rs->state)) {
    if (rs->nonblocking) return SetErrno(EALREADY);
    return DriveConnect(rs, true);
  }
  if (rs->Connected()) return SetErrno(EISCONN);
  if (rs->state != State::kInit && rs->state != State::kBound) {
    return SetErrno(rs->state == State::kListening ? EINVAL : ENOTCONN);
  }
  if (addr == nullptr || addrlen < sizeof(sockaddr_in)) {
    return SetErrno(EINVAL);
  }
  sockaddr_storage dst{};
  std::memcpy(&dst, addr, std::min<size_t>(addrlen, sizeof(dst)));
  if (rdma_resolve_addr(rs->id, nullptr, reinterpret_cast<sockaddr*>(&dst),
                        kResolveTimeoutMs) != 0) {
    return -1;
  }
  rs->state = State::kResolvingAddr;
  return DriveConnect(rs, !rs->nonblocking);
}

int rshutdown(int socket, int how) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::unique_lock<std::mutex> lock(rs->mu);
  if (!rs->Connected()) {
    if (rs->state == State::kDisconnected || rs->state == State::kError) {
      return 0;
    }
    return SetErrno(ENOTCONN);
  }
  uint32_t ctrl;
  if (how == SHUT_RDWR) {
    ctrl = kCtrlDisconnect;
    rs->readable = rs->writable = false;
  } else if (how == SHUT_WR) {
    rs->writable = false;
    ctrl = rs->readable ? kCtrlShutdown : kCtrlDisconnect;
  } else if (how == SHUT_RD) {
    rs->readable = false;
    if (rs->writable) return 0;
    ctrl = kCtrlDisconnect;
  } else {
    return SetErrno(EINVAL);
  }
  // Our data acknowledged before the goodbye follows it: rdma-core's
  // rpoll reports POLLHUP as soon as the goodbye is in, data still unread
  // or not, and its rstream -T a then gives up on the last messages. The
  // wait narrows that window for a slow peer; it cannot close it.
  int ret = WaitFor(rs, lock, false, kHandshakeTimeoutMs, [](RSocket* s) {
    return AllSendsDone(s) || !s->Connected();
  });
  if (ret == 0 && !CtrlAvail(rs)) {
    ret = WaitFor(rs, lock, false, kHandshakeTimeoutMs,
                  [](RSocket* s) { return CtrlAvail(s) || !s->Connected(); });
  }
  if (ret == 0 && rs->Connected() && CtrlAvail(rs)) {
    ret = PostCtrl(rs, ctrl);
  }
  if (ret == 0 && rs->Connected()) {
    ret = WaitFor(rs, lock, false, kHandshakeTimeoutMs, [](RSocket* s) {
      return AllSendsDone(s) || !s->Connected();
    });
  }
  if (rs->state == State::kDisconnected && rs->id->qp != nullptr) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(rs->id->qp, &a, IBV_QP_STATE);
  }
  return ret;
}

int rclose(int socket) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (rs->Connected()) (void)rshutdown(socket, SHUT_RDWR);
  Unlink(socket);
  {
    std::lock_guard<std::mutex> lock(rs->mu);
    // The CM's goodbye (DREQ) unless the peer's came first.
    if (rs->cq != nullptr && !rs->cm_disconnected) {
      (void)rdma_disconnect(rs->id);
    }
  }
  DestroySocket(rs);
  return 0;
}

int rgetpeername(int socket, sockaddr* addr, socklen_t* addrlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (addr == nullptr || addrlen == nullptr) return SetErrno(EINVAL);
  std::lock_guard<std::mutex> lock(rs->mu);
  if (rs->cq == nullptr) return SetErrno(ENOTCONN);
  const sockaddr* sa = rdma_get_peer_addr(rs->id);
  const socklen_t len =
      sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(addr, sa, std::min(len, *addrlen));
  *addrlen = len;
  return 0;
}

int rgetsockname(int socket, sockaddr* addr, socklen_t* addrlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (addr == nullptr || addrlen == nullptr) return SetErrno(EINVAL);
  std::lock_guard<std::mutex> lock(rs->mu);
  const sockaddr* sa = rdma_get_local_addr(rs->id);
  const socklen_t len =
      sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(addr, sa, std::min(len, *addrlen));
  *addrlen = len;
  return 0;
}

int rsetsockopt(int socket, int level, int optname, const void* optval,
                socklen_t optlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (optval == nullptr || optlen < sizeof(int)) return SetErrno(EINVAL);
  std::lock_guard<std::mutex> lock(rs->mu);
  int v;
  std::memcpy(&v, optval, sizeof(v));
  const uint32_t u = uint32_t(v);
  uint64_t* opts = nullptr;
  bool on = v != 0;
  const bool have_ep = rs->cq != nullptr;
  switch (level) {
    case SOL_SOCKET:
      opts = &rs->so_opts;
      switch (optname) {
        case SO_REUSEADDR:
          (void)rdma_set_option(rs->id, RDMA_OPTION_ID,
                                RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v));
          break;
        case SO_RCVBUF:
          // As rdma-core (and Linux): the buffer is twice what is asked.
          if (!have_ep) rs->rbuf_size = std::max(u << 1, kSendLowWater << 1);
          break;
        case SO_SNDBUF:
          if (!have_ep) rs->sbuf_size = std::max(u << 1, kSendLowWater << 1);
          break;
        case SO_LINGER:
          if (optlen < sizeof(linger)) return SetErrno(EINVAL);
          on = static_cast<const linger*>(optval)->l_onoff != 0;
          break;
        case SO_OOBINLINE:
          break;
        case SO_KEEPALIVE:
          // rdma-core's keepalive is a service thread sending control
          // messages; not offered here.
          if (on) return SetErrno(ENOTSUP);
          break;
        default:
          return SetErrno(ENOTSUP);
      }
      break;
    case IPPROTO_TCP:
      opts = &rs->tcp_opts;
      switch (optname) {
        case TCP_NODELAY:  // every rsend goes out at once anyway
        case TCP_MAXSEG:
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
          break;
        default:
          return SetErrno(ENOTSUP);
      }
      break;
    case IPPROTO_IPV6:
      opts = &rs->ipv6_opts;
      if (optname != IPV6_V6ONLY) return SetErrno(ENOTSUP);
      if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v,
                          sizeof(v)) != 0) {
        return -1;
      }
      break;
    case SOL_RDMA:
      if (rs->state != State::kInit && rs->state != State::kBound &&
          rs->state != State::kListening) {
        return SetErrno(EINVAL);
      }
      switch (optname) {
        case RDMA_SQSIZE:
          rs->sq_size = uint16_t(std::min<uint32_t>(u, kQpMaxSize));
          return 0;
        case RDMA_RQSIZE:
          rs->rq_size = uint16_t(std::min<uint32_t>(u, kQpMaxSize));
          return 0;
        case RDMA_INLINE:
          rs->sq_inline = uint16_t(std::min<uint32_t>(u, kQpMaxSize));
          return 0;
        case RDMA_ROUTE:
          // Routes are built from the addresses on RoCE; a resolved one
          // (rdma_getaddrinfo's) adds nothing.
          return 0;
        case RDMA_IOMAPSIZE:
          // Rounded to what the connection data can say.
          rs->target_iomap_size = uint16_t(ScaleToValue(
              uint8_t(ValueToScale(std::min(v < 0 ? 0 : v, 0x7F00), 8)), 8));
          return 0;
        default:
          return SetErrno(ENOTSUP);
      }
    default:
      return SetErrno(ENOTSUP);
  }
  if (opts != nullptr && optname < 64) {
    if (on) {
      *opts |= uint64_t{1} << optname;
    } else {
      *opts &= ~(uint64_t{1} << optname);
    }
  }
  return 0;
}

int rgetsockopt(int socket, int level, int optname, void* optval,
                socklen_t* optlen) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  if (optval == nullptr || optlen == nullptr || *optlen < sizeof(int)) {
    return SetErrno(EINVAL);
  }
  std::lock_guard<std::mutex> lock(rs->mu);
  int v = 0;
  auto flag = [](uint64_t opts, int name) {
    return name < 64 && (opts & (uint64_t{1} << name)) != 0 ? 1 : 0;
  };
  switch (level) {
    case SOL_SOCKET:
      switch (optname) {
        case SO_ERROR:
          if (Connecting(rs->state)) (void)DriveConnect(rs, false);
          v = rs->err;
          rs->err = 0;
          break;
        case SO_RCVBUF:
          v = int(rs->rbuf_size);
          break;
        case SO_SNDBUF:
          v = int(rs->sbuf_size);
          break;
        case SO_REUSEADDR:
        case SO_KEEPALIVE:
        case SO_OOBINLINE:
          v = flag(rs->so_opts, optname);
          break;
        case SO_LINGER:
          if (*optlen < sizeof(linger)) return SetErrno(EINVAL);
          {
            linger l{flag(rs->so_opts, optname), 0};
            std::memcpy(optval, &l, sizeof(l));
            *optlen = sizeof(l);
          }
          return 0;
        default:
          return SetErrno(ENOTSUP);
      }
      break;
    case IPPROTO_TCP:
      switch (optname) {
        case TCP_NODELAY:
          v = flag(rs->tcp_opts, optname);
          break;
        case TCP_MAXSEG:
          v = rs->id != nullptr && rs->id->route.path_rec != nullptr
                  ? 128 << rs->id->route.path_rec->mtu
                  : 2048;
          break;
        default:
          return SetErrno(ENOTSUP);
      }
      break;
    case IPPROTO_IPV6:
      if (optname != IPV6_V6ONLY) return SetErrno(ENOTSUP);
      v = flag(rs->ipv6_opts, optname);
      break;
    case SOL_RDMA:
      switch (optname) {
        case RDMA_SQSIZE:
          v = rs->sq_size;
          break;
        case RDMA_RQSIZE:
          v = rs->rq_size;
          break;
        case RDMA_INLINE:
          v = rs->sq_inline;
          break;
        case RDMA_IOMAPSIZE:
          v = rs->target_iomap_size;
          break;
        default:
          return SetErrno(ENOTSUP);
      }
      break;
    default:
      return SetErrno(ENOTSUP);
  }
  std::memcpy(optval, &v, sizeof(v));
  *optlen = sizeof(v);
  return 0;
}

int rfcntl(int socket, int cmd, ...) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::lock_guard<std::mutex> lock(rs->mu);
  switch (cmd) {
    case F_GETFL:
      return rs->fd_flags;
    case F_SETFL: {
      va_list ap;
      va_start(ap, cmd);
      const int flags = va_arg(ap, int);
      va_end(ap);
      rs->fd_flags = flags;
      rs->nonblocking = (flags & O_NONBLOCK) != 0;
      return 0;
    }
    default:
      return SetErrno(ENOTSUP);
  }
}

}  // extern "C"

}  // namespace rocemu::rdmacm::rs
