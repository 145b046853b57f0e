// The rocemu C API: completion channels and completion queues.
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <span>

#include "verbs/client/client_control.h"
#include "verbs/client/client_datapath.h"
#include "verbs/client/client_embedded.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/ring_slots.h"

namespace wire = rocemu::verbs::wire;
using namespace rocemu::verbs::client;  // NOLINT: the library's own internals
using rocemu::verbs::CqeSlot;
using rocemu::verbs::ShmRing;

extern "C" {

rocemu_comp_channel* rocemu_create_comp_channel(rocemu_context* ctx) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return nullptr;
  return new rocemu_comp_channel{ctx, fd, {}};
}

int rocemu_destroy_comp_channel(rocemu_comp_channel* ch) {
  if (!ch->cqs.empty()) return EBUSY;
  close(ch->fd);
  delete ch;
  return 0;
}

int rocemu_comp_channel_fd(const rocemu_comp_channel* ch) { return ch->fd; }

rocemu_cq* rocemu_create_cq(rocemu_context* ctx, int cqe, void* cq_context,
                            rocemu_comp_channel* channel, int comp_vector) {
  return rocemu_create_cq_ex(ctx, cqe, cq_context, channel, comp_vector, 0);
}

uint64_t rocemu_clock_ns(void) { return rocemu::verbs::CompletionClockNs(); }

rocemu_cq* rocemu_create_cq_ex(rocemu_context* ctx, int cqe, void* cq_context,
                               rocemu_comp_channel* channel, int comp_vector,
                               int flags) {
  (void)comp_vector;  // one polling thread in the daemon
  if (cqe <= 0 || (flags & ~ROCEMU_CQ_TIMESTAMPS) != 0) {
    return Fail<rocemu_cq>(EINVAL);
  }
  wire::CreateCqReq req{
      static_cast<uint32_t>(cqe),
      (channel != nullptr ? wire::kCreateCqWithChannel : 0u) |
          ((flags & ROCEMU_CQ_TIMESTAMPS) != 0 ? wire::kCreateCqWithTimestamps
                                               : 0u)};
  wire::CreateCqResp resp{};
  int ring_fd = -1;
  const int ch_fd = channel != nullptr ? channel->fd : -1;
  const int err =
      Call(ctx, wire::MsgType::kCreateCq, req, &resp,
           std::span<const int>(&ch_fd, channel != nullptr ? 1u : 0u),
           {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_cq>(err);
  absl::StatusOr<ShmRing> ring = ShmRing::Attach(
      ring_fd, sizeof(CqeSlot), std::bit_ceil(static_cast<uint32_t>(cqe)));
  if (!ring.ok()) {
    Handle(ctx, wire::MsgType::kDestroyCq, resp.cq);
    return Fail<rocemu_cq>(EPROTO);
  }
  ring->CloseFd();
  auto* cq = new rocemu_cq{};
  cq->ctx = ctx;
  cq->handle = resp.cq;
  cq->cq_context = cq_context;
  cq->channel = channel;
  cq->ring = *std::move(ring);
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (channel != nullptr) channel->cqs.push_back(cq);
  ctx->cqs[cq->handle] = cq;
  return cq;
}

int rocemu_resize_cq(rocemu_cq* cq, int cqe, int* actual) {
  if (cqe <= 0) return EINVAL;
  // Pollers wait while the ring is replaced: nothing may consume the old
  // ring after the daemon copied what it holds.
  std::lock_guard<rocemu::verbs::SpinLock> lock(cq->lock);
  wire::ResizeCqReq req{cq->handle, static_cast<uint32_t>(cqe)};
  wire::CreateCqResp resp{};
  int ring_fd = -1;
  const int err = Call(cq->ctx, wire::MsgType::kResizeCq, req, &resp,
                       std::span<const int>(), {&ring_fd, 1});
  if (err != 0) return err;
  absl::StatusOr<ShmRing> ring =
      ShmRing::Attach(ring_fd, sizeof(CqeSlot), std::bit_ceil(resp.cqe));
  if (!ring.ok()) return EPROTO;  // the daemon's CQ is gone with it
  ring->CloseFd();
  cq->ring = *std::move(ring);
  cq->seen_signals = cq->ring.signals();
  *actual = static_cast<int>(resp.cqe);
  return 0;
}

int rocemu_destroy_cq(rocemu_cq* cq) {
  const int err =
      Released(cq->ctx, Handle(cq->ctx, wire::MsgType::kDestroyCq, cq->handle));
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(cq->ctx->mu);
    if (cq->channel != nullptr) {
      auto& v = cq->channel->cqs;
      v.erase(std::remove(v.begin(), v.end(), cq), v.end());
    }
    cq->ctx->cqs.erase(cq->handle);
  }
  delete cq;
  return 0;
}

int rocemu_req_notify_cq(rocemu_cq* cq, int solicited_only) {
  if (cq->channel == nullptr) return EINVAL;
  cq->ring.Arm(solicited_only ? rocemu::verbs::ArmMode::kSolicited
                              : rocemu::verbs::ArmMode::kNext);
  return 0;
}

int rocemu_get_cq_event(rocemu_comp_channel* ch, rocemu_cq** out,
                        void** cq_context, int timeout_ms) {
  bool flush_seen = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(ch->ctx->mu);
      for (rocemu_cq* cq : ch->cqs) {
        const uint64_t s = cq->ring.signals();
        if (s != cq->seen_signals) {
          ++cq->seen_signals;
          ++cq->events;
          *out = cq;
          *cq_context = cq->cq_context;
          return 0;
        }
      }
    }
    if (DaemonGone(ch->ctx)) {
      // Its death flushed the outstanding work and may have fired an
      // armed CQ: that event first, then EIO.
      if (flush_seen) return EIO;
      MarkDead(ch->ctx);
      flush_seen = true;
      continue;
    }
    // The daemon's hang-up wakes the wait too.
    pollfd p[2] = {{ch->fd, POLLIN, 0}, {ch->ctx->fd, POLLRDHUP, 0}};
    const int n = poll(p, 2, timeout_ms);
    if (n == 0) return ETIMEDOUT;
    if (n < 0) return errno;
    uint64_t v;
    if (read(ch->fd, &v, sizeof(v)) < 0 && errno != EAGAIN) return errno;
  }
}

void rocemu_ack_cq_events(rocemu_cq* cq, unsigned int nevents) {
  cq->acked += nevents;
}

int rocemu_poll_cq(rocemu_cq* cq, int num, rocemu_wc* wc) {
  return PollCqInto(cq, num, wc, [](const CqeSlot& e, rocemu_wc* w) {
    FillWc(e, ROCEMU_WC_WITH_INV, w);
  });
}

int rocemu_progress(void) { return EmbeddedPump() ? 1 : 0; }

}  // extern "C"
