#include "verbs/client/client_control.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "verbs/client/client_embedded.h"
#include "verbs/client/client_flush.h"
#include "verbs/wire/ring_slots.h"

namespace rocemu::verbs::client {

namespace {

// The daemon answers most requests within microseconds, but a thread that
// sleeps in recvmsg() must then be woken from the other CPU, and on a VM
// that wake-up (an IPI to a halted vCPU) costs ~20 us: four times the round
// trip itself (an ibv_alloc_pd: 4 us with the program on the daemon's
// CPU, 27 us across). So the reply is first looked for without sleeping,
// for up to kReplySpinNs; each look yields the CPU (a daemon sharing it
// gets to answer). Chains of requests (rdma_cm's connect and accept) are
// where it counts.
constexpr int64_t kReplySpinNs = 50'000;

ssize_t AwaitReply(int fd, msghdr* msg) {
  const int64_t give_up = MonotonicNs() + kReplySpinNs;
  for (;;) {
    const ssize_t n = recvmsg(fd, msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
    if (MonotonicNs() >= give_up) break;
    sched_yield();
  }
  ssize_t n;
  do {
    n = recvmsg(fd, msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

int Transact(rocemu_context* ctx, wire::MsgType type, const void* body,
             size_t body_len, std::span<const int> send_fds, void* reply,
             size_t reply_len, std::span<int> recv_fds) {
  if (ctx->dead.load(std::memory_order_relaxed)) return EIO;
  std::lock_guard<std::mutex> lock(ctx->mu);
  alignas(8) uint8_t buf[wire::kMaxMessage];
  const uint32_t seq = ++ctx->seq;
  const size_t len = wire::EncodeRequest(type, seq, body, body_len, buf);
  if (len == 0) return EINVAL;
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  if (!send_fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * send_fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * send_fds.size());
    std::memcpy(CMSG_DATA(cm), send_fds.data(), sizeof(int) * send_fds.size());
  }
  auto gone = [&] {
    MarkDeadLocked(ctx);
    return EIO;
  };
  ssize_t n;
  do {
    n = sendmsg(ctx->fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return gone();
  if (n != static_cast<ssize_t>(len)) return n < 0 ? errno : EIO;

  alignas(8) uint8_t rbuf[wire::kMaxMessage];
  iovec riov{rbuf, sizeof(rbuf)};
  msghdr rmsg{};
  rmsg.msg_iov = &riov;
  rmsg.msg_iovlen = 1;
  alignas(cmsghdr) char rcontrol[CMSG_SPACE(sizeof(int) * 4)];
  rmsg.msg_control = rcontrol;
  rmsg.msg_controllen = sizeof(rcontrol);
  n = AwaitReply(ctx->fd, &rmsg);
  if (n == 0 || (n < 0 && errno == ECONNRESET)) return gone();
  if (n < 0) return errno;
  size_t got = 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&rmsg); cm != nullptr;
       cm = CMSG_NXTHDR(&rmsg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      if (got < recv_fds.size()) {
        recv_fds[got++] = fd;
      } else {
        close(fd);
      }
    }
  }
  auto fail = [&](int err) {
    for (size_t i = 0; i < got; ++i) close(recv_fds[i]);
    return err;
  };
  absl::StatusOr<wire::DecodedReply> r =
      wire::DecodeReply({rbuf, static_cast<size_t>(n)}, type, seq);
  if (!r.ok()) return fail(EPROTO);
  if (r->error != 0) return fail(r->error);
  if (got != recv_fds.size() || r->body.size() != reply_len) {
    return fail(EPROTO);
  }
  if (reply_len != 0) std::memcpy(reply, r->body.data(), reply_len);
  return 0;
}

int Handle(rocemu_context* ctx, wire::MsgType type, uint32_t handle) {
  const wire::HandleReq req{handle, 0};
  return Call<wire::HandleReq, wire::Empty>(ctx, type, req, nullptr);
}

void ToWireAh(const rocemu_ah_attr& a, wire::WireAhAttr* w) {
  std::memcpy(w->dgid, a.dgid, sizeof(w->dgid));
  std::memcpy(w->dmac, a.dmac, sizeof(w->dmac));
  w->sgid_index = a.sgid_index;
  w->traffic_class = a.traffic_class;
  w->flow_label = a.flow_label;
  w->hop_limit = a.hop_limit;
  w->sl = a.sl;
  w->port_num = a.port_num;
}

void FromWireAh(const wire::WireAhAttr& w, rocemu_ah_attr* a) {
  std::memcpy(a->dgid, w.dgid, sizeof(w.dgid));
  std::memcpy(a->dmac, w.dmac, sizeof(w.dmac));
  a->sgid_index = w.sgid_index;
  a->traffic_class = w.traffic_class;
  a->flow_label = w.flow_label;
  a->hop_limit = w.hop_limit;
  a->sl = w.sl;
  a->port_num = w.port_num;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t MonotonicMs() { return MonotonicNs() / 1'000'000; }

int RetryWhileResolving(int (*call)(void*), void* arg) {
  constexpr int kResolveTimeoutMs = 3000;
  const int64_t give_up = MonotonicMs() + kResolveTimeoutMs;
  for (;;) {
    const int err = call(arg);
    if (err != EAGAIN) return err;
    if (MonotonicMs() >= give_up) return EHOSTUNREACH;
    usleep(1000);
  }
}

bool DaemonGone(rocemu_context* ctx) {
  if (ctx->dead.load(std::memory_order_relaxed)) return true;
  pollfd p{ctx->fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
    MarkDead(ctx);
    return true;
  }
  return false;
}

namespace {

// Maps this client's doorbell ring and the daemon's wake page.
int OpenDoorbells(rocemu_context* ctx) {
  wire::OpenDoorbellsResp r{};
  int fds[3] = {-1, -1, -1};
  int err =
      Call(ctx, wire::MsgType::kOpenDoorbells, wire::Empty{}, &r, {}, {fds, 3});
  if (err != 0) return err;
  absl::StatusOr<ShmRing> ring =
      ShmRing::Attach(fds[0], sizeof(DoorbellSlot), kDoorbellEntries);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, page, PROT_READ, MAP_SHARED, fds[1], 0);
  close(fds[1]);
  if (!ring.ok() || map == MAP_FAILED) {
    if (map != MAP_FAILED) munmap(map, page);
    close(fds[2]);
    return EPROTO;
  }
  ring->CloseFd();
  ctx->doorbells = *std::move(ring);
  ctx->wake = static_cast<const WakePage*>(map);
  ctx->wake_len = page;
  ctx->wake_fd = fds[2];
  return 0;
}

}  // namespace

std::unique_ptr<rocemu_context> Connect(const char* socket_path, bool probe,
                                        int* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(socket_path) >= sizeof(addr.sun_path)) {
    *err = ENAMETOOLONG;
    return nullptr;
  }
  std::strcpy(addr.sun_path, socket_path);
  auto ctx = std::make_unique<rocemu_context>();
  ctx->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (ctx->fd < 0) {
    *err = errno;
    return nullptr;
  }
  if (probe) {
    const timeval tv{kProbeTimeoutS, 0};
    setsockopt(ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(ctx->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  if (connect(ctx->fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *err = errno;
    close(ctx->fd);
    return nullptr;
  }
  wire::HelloReq req{};
  req.min_version = wire::kVersion;
  req.max_version = wire::kVersion;
  req.capabilities = wire::kCapShmBuffers | wire::kCapCompChannel |
                     wire::kCapProcessMemory | wire::kCapSrq |
                     wire::kCapAsyncEvents;
  std::strncpy(req.client_name, program_invocation_short_name,
               sizeof(req.client_name) - 1);
  wire::HelloResp resp{};
  *err = Call(ctx.get(), wire::MsgType::kHello, req, &resp);
  if (*err == 0 && (resp.sq_slot_size != sizeof(SqSlot) ||
                    resp.rq_slot_size != sizeof(RqSlot) ||
                    resp.cqe_slot_size != sizeof(CqeSlot))) {
    *err = EPROTO;
  }
  if (*err == 0 && !probe) {
    // Async events are always on: the ring costs the daemon nothing until
    // an event comes, and an application may ask for them at any time.
    ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ctx->async_fd < 0) {
      *err = errno;
    } else {
      wire::OpenAsyncResp ar{};
      int ring_fd = -1;
      *err = Call(ctx.get(), wire::MsgType::kOpenAsync, wire::Empty{}, &ar,
                  std::span<const int>(&ctx->async_fd, 1), {&ring_fd, 1});
      if (*err == 0) {
        absl::StatusOr<ShmRing> ring =
            ShmRing::Attach(ring_fd, sizeof(AsyncEventSlot), ar.capacity);
        if (ring.ok()) {
          ring->CloseFd();
          ctx->async_ring = *std::move(ring);
        } else {
          *err = EPROTO;
        }
      }
    }
  }
  if (*err == 0 && !probe) *err = OpenDoorbells(ctx.get());
  if (*err != 0) {
    close(ctx->fd);
    if (ctx->async_fd >= 0) close(ctx->async_fd);
    return nullptr;
  }
  ctx->client_id = resp.client_id;
  std::memcpy(ctx->device_name, resp.device_name, sizeof(ctx->device_name));
  ctx->device_name[sizeof(ctx->device_name) - 1] = '\0';
  return ctx;
}

uint32_t PollYieldEvery() {
  static const uint32_t every = [] {
    const char* v = std::getenv("ROCEMU_POLL_YIELD");
    if (v == nullptr || *v == '\0') return 64u;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    return *end == '\0' && n <= (1u << 20) ? static_cast<uint32_t>(n) : 64u;
  }();
  return every;
}

const char* DefaultSocket() {
  if (const std::vector<std::string>& own = EmbeddedSockets(); !own.empty()) {
    return own.front().c_str();
  }
  const char* p = std::getenv("ROCEMU_VERBS_SOCKET");
  return p != nullptr ? p : "/run/rocemu/verbs.sock";
}

}  // namespace rocemu::verbs::client
