#include "verbs/tools/perf_exchange.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "verbs/tools/perf_clock.h"

namespace rocemu::verbs::perf {
namespace {

int64_t NowMs() { return MonotonicNs() / 1000000; }

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Channel::~Channel() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<Channel> Channel::Accept(uint16_t port, int timeout_ms) {
  const int one = 1, zero = 0;
  // Dual stack (IPv4 clients arrive as v4-mapped addresses); IPv4 alone
  // where IPv6 is disabled.
  int ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int bound = -1;
  if (ls >= 0) {
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    bound = bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    if (bound != 0 && errno != EADDRINUSE) {
      close(ls);
      ls = -1;
    }
  }
  if (ls < 0) {
    ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0) return absl::ErrnoToStatus(errno, "socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    bound = bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (bound != 0 || listen(ls, 1) != 0) {
    const int e = errno;
    close(ls);
    return absl::ErrnoToStatus(e, absl::StrCat("listen on TCP port ", port));
  }
  pollfd p{ls, POLLIN, 0};
  const int n = poll(&p, 1, timeout_ms);
  if (n <= 0) {
    close(ls);
    return n == 0 ? absl::DeadlineExceededError("no client connected")
                  : absl::ErrnoToStatus(errno, "poll");
  }
  const int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  const int e = errno;
  close(ls);
  if (fd < 0) return absl::ErrnoToStatus(e, "accept");
  NoDelay(fd);
  return Channel(fd);
}

absl::StatusOr<Channel> Channel::Connect(const std::string& host, uint16_t port,
                                         int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = absl::StrCat(port);
  const int gai = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", host, "': ", gai_strerror(gai)));
  }
  const int64_t deadline = NowMs() + timeout_ms;
  int last = 0;
  for (;;) {
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                            ai->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(res);
        NoDelay(fd);
        return Channel(fd);
      }
      last = errno;
      close(fd);
    }
    // The server may not listen yet (perftest clients fail at once; a
    // script starting both sides is easier to write with a retry).
    if (NowMs() >= deadline) break;
    usleep(50 * 1000);
  }
  freeaddrinfo(res);
  return absl::ErrnoToStatus(
      last, absl::StrCat("cannot connect to ", host, ":", port));
}

absl::Status Channel::SendBytes(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = send(fd_, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return absl::ErrnoToStatus(errno, "send to peer");
    c += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status Channel::RecvBytes(void* p, size_t n, int timeout_ms) {
  char* c = static_cast<char*>(p);
  const int64_t deadline = timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
  while (n > 0) {
    int wait = -1;
    if (deadline >= 0) {
      const int64_t left = deadline - NowMs();
      if (left <= 0) return absl::DeadlineExceededError("peer is silent");
      wait = static_cast<int>(left);
    }
    pollfd pf{fd_, POLLIN, 0};
    const int k = poll(&pf, 1, wait);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return absl::ErrnoToStatus(errno, "poll");
    if (k == 0) continue;
    const ssize_t r = recv(fd_, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return absl::UnavailableError("peer closed the connection");
    if (r < 0) return absl::ErrnoToStatus(errno, "recv from peer");
    c += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::StatusOr<SyncMsg> Channel::Expect(SyncKind kind, int timeout_ms) {
  SyncMsg m;
  absl::Status s = Recv(&m, timeout_ms);
  if (!s.ok()) return s;
  if (m.magic != kExchangeMagic) {
    return absl::DataLossError("bad message from peer");
  }
  m.what[sizeof(m.what) - 1] = '\0';
  if (m.ok == 0) {
    return absl::AbortedError(absl::StrCat("peer failed: ", m.what));
  }
  if (m.kind != kind) {
    return absl::DataLossError(
        absl::StrCat("peer sent message ", static_cast<uint32_t>(m.kind),
                     ", expected ", static_cast<uint32_t>(kind)));
  }
  return m;
}

}  // namespace rocemu::verbs::perf
