// Completion channels, completion queues (ibv_cq and ibv_cq_ex with its
// start/next/end_poll iterator) and completion events.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "verbs/client/client_control.h"
#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {
namespace {

using verbs::CqeSlot;

// Work-completion flags a rocemu CQ can report through ibv_cq_ex: the
// standard ones, the completion timestamps, raw and wall-clock, and tag
// matching's tag (no VLANs or flow tags).
constexpr uint64_t kTimestampFlags =
    static_cast<uint64_t>(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) |
    static_cast<uint64_t>(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
constexpr uint64_t kSupportedWcFlags =
    static_cast<uint64_t>(IBV_WC_STANDARD_FLAGS) | kTimestampFlags |
    static_cast<uint64_t>(IBV_WC_EX_WITH_TM_INFO);

// CLOCK_REALTIME minus the completion clock (CLOCK_MONOTONIC_RAW), read
// now. The daemon stamps with the raw clock only; a wall-clock stamp is the
// raw one moved by this offset when the program reads the batch, as mlx5's
// library converts its free-running counter with the kernel's clock info.
// Between the stamp and the read the two clocks drift by NTP's slew (parts
// per million of microseconds); a step of the wall clock (settime) lands
// whole on the stamps read after it, as it would on mlx5's.
int64_t WallClockOffsetNs() {
  timespec real{};
  clock_gettime(CLOCK_REALTIME, &real);
  const uint64_t raw = rocemu_clock_ns();
  return static_cast<int64_t>(real.tv_sec) * 1000000000 + real.tv_nsec -
         static_cast<int64_t>(raw);
}

void FillIbvWc(const CqeSlot& e, ibv_wc* w) {
  verbs::client::FillWc(e, IBV_WC_WITH_INV, w);
}

int PollCq(ibv_cq* cq, int num, ibv_wc* wc) {
  return verbs::client::PollCqInto(Cq(cq)->rc, num, wc, FillIbvWc);
}

int ReqNotifyCq(ibv_cq* cq, int solicited_only) {
  CqImpl* c = Cq(cq);
  if (c->rc->channel == nullptr) return 0;  // nothing would be woken
  return rocemu_req_notify_cq(c->rc, solicited_only);
}

// --- ibv_cq_ex iterator: the completion read is c->cur; the ring slots
// taken since start_poll are released by end_poll in one store. ---

bool Take(CqImpl* c) {
  do {
    const void* s = c->rc->ring.ConsumerSlotAhead(c->taken);
    if (s == nullptr) {
      // The daemon died: the completions the library made for what it
      // left outstanding come after the ring's.
      const CqeSlot* f = verbs::client::NextFlush(c->rc);
      if (f == nullptr) return false;
      c->cur = *f;
      break;
    }
    std::memcpy(&c->cur, s, sizeof(c->cur));
    ++c->taken;
  } while ((c->cur.flags & verbs::kCqeSkip) != 0);
  c->cqx.status = static_cast<ibv_wc_status>(c->cur.status);
  c->cqx.wr_id = c->cur.wr_id;
  return true;
}

int StartPoll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  CqImpl* c = Cq(cq);
  c->rc->lock.lock();
  c->taken = 0;
  if ((c->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) != 0) {
    c->wall_offset_ns = WallClockOffsetNs();
  }
  if (Take(c)) {
    c->rc->empty_polls = 0;
    return 0;
  }
  c->rc->ring.ReleaseN(c->taken);  // withdrawn completions stepped over
  c->taken = 0;
  // An empty start_poll does what an empty ibv_poll_cq does (pumps an
  // embedded RNIC, gives the core away now and then, notices a dead
  // daemon): a program spinning on start_poll must not starve what would
  // complete its work.
  const bool alive = verbs::client::EmptyPoll(c->rc);
  if (!alive && verbs::client::FlushedOnDeath(c->rc) && Take(c)) {
    c->rc->empty_polls = 0;
    return 0;
  }
  c->rc->lock.unlock();  // the caller must not call end_poll after ENOENT
  return alive ? ENOENT : EIO;
}

int NextPoll(ibv_cq_ex* cq) { return Take(Cq(cq)) ? 0 : ENOENT; }

void EndPoll(ibv_cq_ex* cq) {
  CqImpl* c = Cq(cq);
  c->rc->ring.ReleaseN(c->taken);
  c->taken = 0;
  c->rc->lock.unlock();
}

enum ibv_wc_opcode ReadOpcode(ibv_cq_ex* cq) {
  return static_cast<ibv_wc_opcode>(Cq(cq)->cur.opcode);
}
uint32_t ReadVendorErr(ibv_cq_ex* cq) { return Cq(cq)->cur.vendor_err; }
uint32_t ReadByteLen(ibv_cq_ex* cq) { return Cq(cq)->cur.byte_len; }
__be32 ReadImmData(ibv_cq_ex* cq) {
  const CqeSlot& e = Cq(cq)->cur;
  return (e.wc_flags & IBV_WC_WITH_INV) != 0 ? e.invalidated_rkey
                                             : htonl(e.imm_data);
}
uint32_t ReadQpNum(ibv_cq_ex* cq) { return Cq(cq)->cur.qp_num; }
uint32_t ReadSrcQp(ibv_cq_ex* cq) { return Cq(cq)->cur.src_qp; }
unsigned int ReadWcFlags(ibv_cq_ex* cq) { return Cq(cq)->cur.wc_flags; }
uint32_t ReadSlid(ibv_cq_ex* cq) { return Cq(cq)->cur.slid; }
uint8_t ReadSl(ibv_cq_ex* cq) { return Cq(cq)->cur.sl; }
uint8_t ReadDlidPathBits(ibv_cq_ex* cq) { return Cq(cq)->cur.dlid_path_bits; }
uint64_t ReadCompletionTs(ibv_cq_ex* cq) { return Cq(cq)->cur.timestamp; }
void ReadTmInfo(ibv_cq_ex* cq, ibv_wc_tm_info* info) {
  info->tag = Cq(cq)->cur.tm_tag;
  info->priv = Cq(cq)->cur.tm_priv;
}
uint64_t ReadCompletionWallclockNs(ibv_cq_ex* cq) {
  const CqImpl* c = Cq(cq);
  return c->cur.timestamp + static_cast<uint64_t>(c->wall_offset_ns);
}

int MakeChannelEpoll(int event_fd, int socket_fd) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = event_fd;
  epoll_event hup{};
  hup.events = EPOLLRDHUP;
  hup.data.fd = socket_fd;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, event_fd, &ev) != 0 ||
      epoll_ctl(ep, EPOLL_CTL_ADD, socket_fd, &hup) != 0) {
    close(ep);
    return -1;
  }
  return ep;
}

ibv_cq_ex* CreateCq(ibv_context* context, int cqe, ibv_comp_channel* channel,
                    int comp_vector, void* cq_context, uint64_t wc_flags) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_cq_ex>(EIO);
  if (cqe <= 0 || cqe > ctx->attr.max_cqe) return FailNull<ibv_cq_ex>(EINVAL);
  if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    return FailNull<ibv_cq_ex>(EINVAL);
  }
  auto* c = new CqImpl{};
  rocemu_comp_channel* rch = channel != nullptr ? Chan(channel)->rch : nullptr;
  c->rc = rocemu_create_cq_ex(
      ctx->rc, cqe, c, rch, comp_vector,
      (wc_flags & kTimestampFlags) != 0 ? ROCEMU_CQ_TIMESTAMPS : 0);
  if (c->rc == nullptr) {
    delete c;
    return nullptr;
  }
  c->ctx = ctx;
  c->wc_flags = wc_flags;
  ibv_cq_ex& x = c->cqx;
  x.context = context;
  x.channel = channel;
  x.cq_context = cq_context;
  x.handle = c->rc->handle;
  x.cqe = static_cast<int>(c->rc->ring.capacity());
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  if (channel != nullptr) {
    pthread_mutex_lock(&context->mutex);
    ++channel->refcnt;
    pthread_mutex_unlock(&context->mutex);
  }
  x.start_poll = StartPoll;
  x.next_poll = NextPoll;
  x.end_poll = EndPoll;
  x.read_opcode = ReadOpcode;
  x.read_vendor_err = ReadVendorErr;
  x.read_byte_len = ReadByteLen;
  x.read_imm_data = ReadImmData;
  x.read_qp_num = ReadQpNum;
  x.read_src_qp = ReadSrcQp;
  x.read_wc_flags = ReadWcFlags;
  x.read_slid = ReadSlid;
  x.read_sl = ReadSl;
  x.read_dlid_path_bits = ReadDlidPathBits;
  if ((wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) != 0) {
    x.read_completion_ts = ReadCompletionTs;
  }
  if ((wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) != 0) {
    x.read_completion_wallclock_ns = ReadCompletionWallclockNs;
  }
  if ((wc_flags & IBV_WC_EX_WITH_TM_INFO) != 0) x.read_tm_info = ReadTmInfo;
  return &x;
}

ibv_cq_ex* CreateCqEx(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  constexpr uint32_t kKnownMask =
      IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
  if ((attr->comp_mask & ~kKnownMask) != 0) return FailNull<ibv_cq_ex>(EINVAL);
  if ((attr->wc_flags & ~kSupportedWcFlags) != 0) {
    return FailNull<ibv_cq_ex>(EOPNOTSUPP);
  }
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) != 0 &&
      (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED) != 0) {
    return FailNull<ibv_cq_ex>(EOPNOTSUPP);
  }
  // A CQ's parent domain names the allocators of its buffer, which are
  // the daemon's (AllocParentDomain); it must be one of this context's.
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) != 0 &&
      (attr->parent_domain == nullptr ||
       attr->parent_domain->context != context ||
       Pd(attr->parent_domain)->protection_domain == nullptr)) {
    return FailNull<ibv_cq_ex>(EINVAL);
  }
  return CreateCq(context, static_cast<int>(attr->cqe), attr->channel,
                  static_cast<int>(attr->comp_vector), attr->cq_context,
                  attr->wc_flags);
}

// How long ibv_get_cq_event peeks before it sleeps (see there).
constexpr int64_t kEventSpinNs = 50'000;

bool FdReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

// Whether an armed CQ of the channel fired since it was last looked at.
bool SignalsPending(CtxImpl* ctx, rocemu_comp_channel* rch) {
  std::lock_guard<std::mutex> lock(ctx->rc->mu);
  for (rocemu_cq* rc : rch->cqs) {
    if (rc->ring.signals() != rc->seen_signals) return true;
  }
  return false;
}

}  // namespace

void FillCqOps(CtxImpl* ctx) {
  ctx->vctx.context.ops.poll_cq = PollCq;
  ctx->vctx.context.ops.req_notify_cq = ReqNotifyCq;
  ctx->vctx.create_cq_ex = CreateCqEx;
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_comp_channel>(EIO);
  rocemu_comp_channel* rch = rocemu_create_comp_channel(ctx->rc);
  if (rch == nullptr) return nullptr;
  const int ep = MakeChannelEpoll(rocemu_comp_channel_fd(rch), ctx->rc->fd);
  if (ep < 0) {
    const int e = errno;
    rocemu_destroy_comp_channel(rch);
    return FailNull<ibv_comp_channel>(e);
  }
  auto* ch = new ChanImpl{};
  ch->rch = rch;
  ch->ch.context = context;
  ch->ch.fd = ep;
  ch->ch.refcnt = 0;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  ibv_context* context = channel->context;
  pthread_mutex_lock(&context->mutex);
  if (channel->refcnt != 0) {
    pthread_mutex_unlock(&context->mutex);
    return EBUSY;
  }
  ChanImpl* ch = Chan(channel);
  rocemu_destroy_comp_channel(ch->rch);
  close(channel->fd);
  pthread_mutex_unlock(&context->mutex);
  delete ch;
  return 0;
}

ibv_cq* rocemu_ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                             ibv_comp_channel* channel, int comp_vector) {
  ibv_cq_ex* x = CreateCq(context, cqe, channel, comp_vector, cq_context,
                          IBV_WC_STANDARD_FLAGS);
  return x != nullptr ? ibv_cq_ex_to_cq(x) : nullptr;
}

int rocemu_ibv_resize_cq(ibv_cq* cq, int cqe) {
  CqImpl* c = Cq(cq);
  if (Dead(Ctx(cq->context))) return EIO;
  int actual = 0;
  const int err = rocemu_resize_cq(c->rc, cqe, &actual);
  if (err == 0) cq->cqe = actual;
  return err;
}

int rocemu_ibv_destroy_cq(ibv_cq* cq) {
  CqImpl* c = Cq(cq);
  ibv_comp_channel* channel = cq->channel;
  WaitAcked(&cq->mutex, &cq->cond, &cq->comp_events_completed,
            c->comp_events_reported);
  WaitAcked(&cq->mutex, &cq->cond, &cq->async_events_completed,
            c->async_events_reported);
  const int err = rocemu_destroy_cq(c->rc);
  if (err != 0) return err;
  if (channel != nullptr) {
    pthread_mutex_lock(&channel->context->mutex);
    --channel->refcnt;
    pthread_mutex_unlock(&channel->context->mutex);
  }
  pthread_mutex_destroy(&cq->mutex);
  pthread_cond_destroy(&cq->cond);
  delete c;
  return 0;
}

// Blocks (unless the application made channel->fd non-blocking) until an
// armed CQ of the channel fired; -1 with errno otherwise, as libibverbs.
int rocemu_ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq,
                            void** cq_context) {
  ChanImpl* ch = Chan(channel);
  rocemu_comp_channel* rch = ch->rch;
  CtxImpl* ctx = Ctx(channel->context);
  bool flush_seen = false;
  // A blocking call first peeks, for up to kEventSpinNs, before it looks
  // and sleeps: the daemon's signal counters are in shared memory, and a
  // thread asleep on the other CPU costs ~20 us to wake on the VMs here
  // (AwaitReply in verbs/client/client_control.cc). A peek changes
  // nothing. It lets the look go once a counter moved and the channel fd
  // is readable: the daemon counts a signal, then writes the fd (see the
  // look for why the write matters).
  // O_NONBLOCK on the channel's fd is the application's own.
  const bool nonblocking = (fcntl(channel->fd, F_GETFL) & O_NONBLOCK) != 0;
  int64_t spin_until =
      nonblocking ? 0 : rocemu::verbs::client::MonotonicNs() + kEventSpinNs;
  for (;;) {
    if (spin_until != 0 && !(SignalsPending(ctx, rch) &&
                             FdReadable(rocemu_comp_channel_fd(rch)))) {
      if (rocemu::verbs::client::MonotonicNs() < spin_until) {
        sched_yield();
        continue;
      }
    }
    spin_until = 0;  // from now on: look, then poll(2)
    // Clear the eventfd, then look: a signal published after the look
    // writes it again, so the wait below cannot miss it. A blocking call
    // takes an event only when the fd had been written: a signal counted
    // whose write is still to come is left for the wake-up that write
    // brings (taken now, the write would leave the fd readable with no
    // event waiting). A non-blocking call, or one whose daemon is gone
    // (the library's own flush writes nothing), takes what it finds.
    uint64_t v;
    const bool written =
        read(rocemu_comp_channel_fd(rch), &v, sizeof(v)) == sizeof(v);
    const bool may_take = written || nonblocking || Dead(ctx);
    CqImpl* fired = nullptr;
    bool more = false;
    if (may_take) {
      std::lock_guard<std::mutex> lock(ctx->rc->mu);
      for (rocemu_cq* rc : rch->cqs) {
        const uint64_t s = rc->ring.signals();
        if (s == rc->seen_signals) continue;
        if (fired == nullptr) {
          ++rc->seen_signals;
          fired = static_cast<CqImpl*>(rc->cq_context);
          more = more || s != rc->seen_signals;
        } else {
          more = true;
        }
      }
    }
    if (fired != nullptr) {
      if (more) {
        // Keep the fd readable while events wait, as a kernel channel is.
        const uint64_t one = 1;
        (void)!write(rocemu_comp_channel_fd(rch), &one, sizeof(one));
      }
      pthread_mutex_lock(&fired->cqx.mutex);
      ++fired->comp_events_reported;
      pthread_mutex_unlock(&fired->cqx.mutex);
      *cq = ibv_cq_ex_to_cq(&fired->cqx);
      *cq_context = fired->cqx.cq_context;
      return 0;
    }
    if (Dead(ctx) || rocemu::verbs::client::DaemonGone(ctx->rc)) {
      // The daemon's death flushed the outstanding work requests, and an
      // armed CQ that got some fired: that event first, then EIO.
      if (!flush_seen) {
        rocemu::verbs::client::MarkDead(ctx->rc);  // waits for the flush
        flush_seen = true;
        continue;
      }
      errno = EIO;
      return -1;
    }
    if (nonblocking) {
      errno = EAGAIN;
      return -1;
    }
    // A signal ends the wait with -1/EINTR, as read(2) on a kernel channel
    // does: programs (qperf) end a timed test from SIGALRM this way, and
    // waiting on would keep them blocked for a completion that never comes.
    pollfd p{channel->fd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) return -1;
  }
}

void rocemu_ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_create_cq);
ROCEMU_IBV_1_1(ibv_resize_cq);
ROCEMU_IBV_1_1(ibv_destroy_cq);
ROCEMU_IBV_1_1(ibv_get_cq_event);
ROCEMU_IBV_1_1(ibv_ack_cq_events);
