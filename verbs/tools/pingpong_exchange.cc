#include "verbs/tools/pingpong_exchange.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rocemu::pingpong {
namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status WaitFor(int fd, short events, int timeout_ms, const char* what) {
  if (timeout_ms < 0) return absl::OkStatus();
  pollfd p{fd, events, 0};
  int n;
  do {
    n = poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return absl::ErrnoToStatus(errno, what);
  if (n == 0)
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": no answer within ", timeout_ms, " ms"));
  return absl::OkStatus();
}

absl::Status ReadFull(int fd, char* buf, size_t len, int timeout_ms,
                      const char* what) {
  size_t got = 0;
  while (got < len) {
    if (absl::Status st = WaitFor(fd, POLLIN, timeout_ms, what); !st.ok())
      return st;
    const ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, what);
    if (n == 0)
      return absl::UnavailableError(absl::StrCat(what, ": peer closed after ",
                                                 got, " of ", len, " bytes"));
    got += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status WriteFull(int fd, const char* buf, size_t len, int timeout_ms,
                       const char* what) {
  size_t put = 0;
  while (put < len) {
    if (absl::Status st = WaitFor(fd, POLLOUT, timeout_ms, what); !st.ok())
      return st;
    const ssize_t n = send(fd, buf + put, len - put, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, what);
    put += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<Dest> ReadDest(int fd, int timeout_ms, const char* what) {
  DestMessage msg{};
  if (absl::Status st = ReadFull(fd, msg.data(), msg.size(), timeout_ms, what);
      !st.ok())
    return st;
  return ParseDest(msg);
}

}  // namespace

absl::StatusOr<Dest> ClientExchange(const std::string& server, uint16_t port,
                                    const Dest& mine, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(server.c_str(), service.c_str(), &hints, &res);
      rc != 0)
    return absl::NotFoundError(
        absl::StrCat(gai_strerror(rc), " for ", server, ":", port));
  int fd = -1;
  int last_errno = 0;
  for (addrinfo* t = res; t != nullptr; t = t->ai_next) {
    fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, t->ai_addr, t->ai_addrlen) == 0) break;
    last_errno = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return absl::ErrnoToStatus(
        last_errno, absl::StrCat("Couldn't connect to ", server, ":", port));
  Fd sock(fd);
  const DestMessage msg = FormatDest(mine);
  if (absl::Status st = WriteFull(fd, msg.data(), msg.size(), timeout_ms,
                                  "Couldn't send local address");
      !st.ok())
    return st;
  absl::StatusOr<Dest> remote =
      ReadDest(fd, timeout_ms, "Couldn't read remote address");
  if (!remote.ok()) return remote.status();
  static constexpr char kDone[kDoneMessageSize] = "done";
  if (absl::Status st = WriteFull(fd, kDone, sizeof(kDone), timeout_ms,
                                  "Couldn't write \"done\"");
      !st.ok())
    return st;
  return remote;
}

absl::StatusOr<ExchangeListener> ExchangeListener::Listen(uint16_t port) {
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(nullptr, service.c_str(), &hints, &res); rc != 0)
    return absl::InternalError(
        absl::StrCat(gai_strerror(rc), " for port ", port));
  int fd = -1;
  int last_errno = 0;
  for (addrinfo* t = res; t != nullptr; t = t->ai_next) {
    fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, t->ai_addr, t->ai_addrlen) == 0 && listen(fd, 1) == 0) break;
    last_errno = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return absl::ErrnoToStatus(last_errno,
                               absl::StrCat("Couldn't listen to port ", port));
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const uint16_t bound =
      ss.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ExchangeListener(fd, bound);
}

ExchangeListener::ExchangeListener(ExchangeListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

ExchangeListener::~ExchangeListener() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<Dest> ExchangeListener::Serve(
    const Dest& mine, absl::FunctionRef<absl::Status(const Dest&)> connect,
    int timeout_ms) {
  if (absl::Status st = WaitFor(fd_, POLLIN, timeout_ms, "accept() failed");
      !st.ok())
    return st;
  const int cfd = accept(fd_, nullptr, nullptr);
  // One client per run, as the rdma-core tools: stop listening at once.
  close(fd_);
  fd_ = -1;
  if (cfd < 0) return absl::ErrnoToStatus(errno, "accept() failed");
  Fd conn(cfd);
  absl::StatusOr<Dest> remote =
      ReadDest(cfd, timeout_ms, "Couldn't read remote address");
  if (!remote.ok()) return remote.status();
  if (absl::Status st = connect(*remote); !st.ok()) return st;
  const DestMessage msg = FormatDest(mine);
  if (absl::Status st = WriteFull(cfd, msg.data(), msg.size(), timeout_ms,
                                  "Couldn't send local address");
      !st.ok())
    return st;
  char done[kDoneMessageSize] = {};
  if (absl::Status st = ReadFull(cfd, done, sizeof(done), timeout_ms,
                                 "Couldn't recv \"done\"");
      !st.ok())
    return st;
  if (std::memcmp(done, "done", kDoneMessageSize) != 0)
    return absl::InvalidArgumentError(
        "Couldn't recv \"done\": the client sent something else");
  return remote;
}

}  // namespace rocemu::pingpong
