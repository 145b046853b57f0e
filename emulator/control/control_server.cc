#include "emulator/control/control_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/control/socket_path.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

constexpr size_t kMaxClients = 16;
constexpr size_t kMaxRequest = 4096;

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(
      absl::StrCat(std::string(what), ": ", std::strerror(errno)));
}

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away or is not reading
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// A client that leaves replies unread this long is dropped.
constexpr size_t kMaxPendingReply = 64u << 20;

}  // namespace

std::string JsonError(std::string_view message) {
  return verbs::DumpJson(nlohmann::json{{"error", std::string(message)}});
}

ControlServer::~ControlServer() { Close(); }

absl::Status ControlServer::Listen(const std::string& path, unsigned mode,
                                   Handler handler) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("control socket path too long");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (absl::Status s = ClaimSocketPath(path, SOCK_STREAM); !s.ok()) return s;
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Errno("socket");
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot bind ", path));
    Close();
    return s;
  }
  path_ = path;
  if (chmod(path.c_str(), mode) != 0 || listen(fd_, 8) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot set up ", path));
    Close();
    return s;
  }
  handler_ = std::move(handler);
  return absl::OkStatus();
}

void ControlServer::Poll() {
  if (fd_ < 0) return;
  while (clients_.size() < kMaxClients) {
    int c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) break;
    clients_.push_back({c, {}});
  }
  for (size_t i = 0; i < clients_.size();) {
    Client& cl = clients_[i];
    char buf[1024];
    bool closed = !Flush(cl);
    if (cl.closing || closed) {
      if (closed || cl.out.empty()) {
        close(cl.fd);
        clients_.erase(clients_.begin() + static_cast<ptrdiff_t>(i));
      } else {
        ++i;
      }
      continue;
    }
    for (;;) {
      ssize_t n = recv(cl.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        cl.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
      break;
    }
    size_t nl;
    while ((nl = cl.in.find('\n')) != std::string::npos) {
      std::string line = cl.in.substr(0, nl);
      cl.in.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      absl::StrAppend(&cl.out, handler_(line), "\n");
    }
    if (cl.in.size() > kMaxRequest) {
      absl::StrAppend(&cl.out, JsonError("request too long"), "\n");
      cl.in.clear();
      closed = true;
    }
    if (closed && !cl.in.empty()) {
      // A last request without a newline still gets its answer.
      absl::StrAppend(&cl.out, handler_(cl.in), "\n");
      cl.in.clear();
    }
    const bool gone = !Flush(cl) || cl.out.size() > kMaxPendingReply;
    if (gone || (closed && cl.out.empty())) {
      close(cl.fd);
      clients_.erase(clients_.begin() + static_cast<ptrdiff_t>(i));
    } else {
      // A client that half-closed after its request still gets the rest.
      cl.closing = closed;
      ++i;
    }
  }
}

bool ControlServer::Flush(Client& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

void ControlServer::Close() {
  for (Client& c : clients_) close(c.fd);
  clients_.clear();
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
    if (!path_.empty()) unlink(path_.c_str());
  }
  path_.clear();
}

MetricsServer::~MetricsServer() { Close(); }

absl::Status MetricsServer::Listen(uint16_t port, Handler handler) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Errno("socket");
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // never exposed off-host
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd_, 8) != 0) {
    absl::Status s = Errno(absl::StrCat("cannot listen on 127.0.0.1:", port));
    Close();
    return s;
  }
  handler_ = std::move(handler);
  return absl::OkStatus();
}

void MetricsServer::Poll() {
  if (fd_ < 0) return;
  for (int i = 0; i < 4; ++i) {
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    // Scrapers send the request at once; a short blocking read with a
    // timeout keeps a silent client from stalling the loop for long.
    timeval tv{0, 20000};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char buf[2048];
    ssize_t n = recv(c, buf, sizeof(buf), 0);
    if (n > 0) {
      std::string_view req(buf, static_cast<size_t>(n));
      bool metrics =
          req.substr(0, 13) == "GET /metrics " || req.substr(0, 6) == "GET / ";
      std::string body = metrics ? handler_() : "not found\n";
      SendAll(
          c, absl::StrCat(
                 metrics ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.0 404 Not Found\r\n",
                 "Content-Type: text/plain; version=0.0.4\r\n"
                 "Content-Length: ",
                 body.size(), "\r\nConnection: close\r\n\r\n", body));
    }
    close(c);
  }
}

void MetricsServer::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace rocemu::emulator
