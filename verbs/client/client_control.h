// The library's control channel to the daemon: connecting with Hello, one
// request/reply exchange per call (with fds as SCM_RIGHTS), the retry while
// the daemon resolves a neighbour, and the daemon's liveness.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_CONTROL_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_CONTROL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "verbs/client/client_objects.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs::client {

// Connects and says Hello. A probe (device listing) waits at most
// kProbeTimeoutS for a daemon that does not answer and does not open async
// events. A stale socket refuses at once; the wait only bounds a live
// daemon that is slow to answer, and on a loaded host (the soak, two
// shared cores under builds) one took more than a second: ibv_devices
// must not lose a device a kernel would have listed.
inline constexpr int kProbeTimeoutS = 10;
std::unique_ptr<rocemu_context> Connect(const char* socket_path, bool probe,
                                        int* err);

// Why the last socket rocemu_get_device_list probed (in this thread) gave
// no device: an errno value (ECONNREFUSED: a stale socket; EAGAIN: no
// Hello within kProbeTimeoutS), 0 when it answered.
int LastProbeError();

// $ROCEMU_VERBS_SOCKET, else /run/rocemu/verbs.sock.
const char* DefaultSocket();

// One request/reply exchange. Returns 0 or an errno value; EIO once the
// daemon has gone (ctx->dead is then set).
int Transact(rocemu_context* ctx, wire::MsgType type, const void* body,
             size_t body_len, std::span<const int> send_fds, void* reply,
             size_t reply_len, std::span<int> recv_fds);

template <typename Req, typename Resp>
int Call(rocemu_context* ctx, wire::MsgType type, const Req& req, Resp* resp,
         std::span<const int> send_fds = {}, std::span<int> recv_fds = {}) {
  return Transact(ctx, type, &req, std::is_empty_v<Req> ? 0 : sizeof(Req),
                  send_fds, resp, resp == nullptr ? 0 : sizeof(Resp), recv_fds);
}

// Requests whose body is one handle (dealloc, dereg, destroy).
int Handle(rocemu_context* ctx, wire::MsgType type, uint32_t handle);

// The daemon answers EAGAIN while the neighbour of an address vector is
// being resolved (ARP/ND take milliseconds): retry transparently, as the
// kernel's ibv_modify_qp blocks on neighbour resolution, and give up with
// EHOSTUNREACH after 3 s.
int RetryWhileResolving(int (*call)(void*), void* arg);
template <typename F>
int RetryWhileResolving(F&& f) {
  return RetryWhileResolving(
      [](void* a) { return (*static_cast<std::remove_reference_t<F>*>(a))(); },
      &f);
}

// True once the daemon's end of the socket is closed (one poll(2) with no
// timeout; callers on the data path ask only after many empty polls). The
// first to see it marks the context dead, which flushes its outstanding
// work (client_flush.h).
bool DaemonGone(rocemu_context* ctx);

int64_t MonotonicMs();
int64_t MonotonicNs();

// Empty CQ polls between two sched_yield() calls of a spinning poller
// ($ROCEMU_POLL_YIELD, default 64; 0: never yield).
uint32_t PollYieldEvery();

// What a releasing call (dealloc, dereg, destroy) returns: once the daemon
// has gone it freed everything of this client, so the library frees its
// side too and reports success (libibverbs' "disassociated device" rule),
// leaking nothing.
inline int Released(rocemu_context* ctx, int err) {
  return err == EIO && ctx->dead.load(std::memory_order_relaxed) ? 0 : err;
}

// An SRQ the daemon made (`handle`, `attr` its sizes) with its ring's fd:
// the ring attached and the SRQ recorded in the context; nullptr (errno
// EPROTO, the SRQ destroyed) when the ring cannot be mapped.
rocemu_srq* AttachSrq(rocemu_pd* pd, uint32_t handle,
                      const wire::WireSrqAttr& attr, int ring_fd,
                      rocemu_srq_init_attr* init);

// rocemu_create_qp with create_qp's wire flags (wire::kCreateQpToInit:
// the QP comes back in INIT, as rdma_create_qp wants it).
rocemu_qp* CreateQp(rocemu_pd* pd, rocemu_qp_init_attr* attr,
                    uint16_t wire_flags);

void ToWireAh(const rocemu_ah_attr& a, wire::WireAhAttr* w);
void FromWireAh(const wire::WireAhAttr& w, rocemu_ah_attr* a);

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_CONTROL_H_
