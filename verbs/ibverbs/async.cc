// Asynchronous events: the daemon's affiliated and port events, and
// IBV_EVENT_DEVICE_FATAL once the daemon has gone.
#include <fcntl.h>
#include <poll.h>

#include "nic/async_event.h"
#include "verbs/client/client_control.h"
#include "verbs/client/client_flush.h"
#include "verbs/ibverbs/dropin.h"

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

namespace {

using rocemu::nic::AsyncEventElement;
using rocemu::nic::AsyncEventType;
using rocemu::nic::ElementOf;

template <typename T>
void CountReported(pthread_mutex_t* mu, T* counter) {
  pthread_mutex_lock(mu);
  ++*counter;
  pthread_mutex_unlock(mu);
}

// Maps an event about a rocemu object onto the application's object;
// false when the object was destroyed meanwhile (the event is dropped).
bool Translate(const rocemu_async_event& r, ibv_async_event* event) {
  event->event_type = static_cast<ibv_event_type>(r.event_type);
  switch (ElementOf(static_cast<AsyncEventType>(r.event_type))) {
    case AsyncEventElement::kCq: {
      auto* c = static_cast<CqImpl*>(r.element.cq->cq_context);
      CountReported(&c->cqx.mutex, &c->async_events_reported);
      event->element.cq = ibv_cq_ex_to_cq(&c->cqx);
      return true;
    }
    case AsyncEventElement::kQp: {
      auto* q = static_cast<QpImpl*>(r.element.qp->owner);
      if (q == nullptr) return false;
      CountReported(&q->qpx.qp_base.mutex, &q->events_reported);
      event->element.qp = &q->qpx.qp_base;
      return true;
    }
    case AsyncEventElement::kSrq: {
      auto* s = static_cast<SrqImpl*>(r.element.srq->srq_context);
      CountReported(&s->srq.mutex, &s->events_reported);
      event->element.srq = &s->srq;
      return true;
    }
    case AsyncEventElement::kPortOrDevice:
      event->element.port_num = r.element.port_num;
      return true;
  }
  return false;
}

// The destroy verbs wait until every event handed out for the object was
// acknowledged: one more acknowledged, and a waiter wakes.
template <typename Obj>
void CountAck(Obj* obj, uint32_t Obj::*completed) {
  pthread_mutex_lock(&obj->mutex);
  ++(obj->*completed);
  pthread_cond_signal(&obj->cond);
  pthread_mutex_unlock(&obj->mutex);
}

}  // namespace

extern "C" {

int rocemu_ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  CtxImpl* ctx = Ctx(context);
  for (;;) {
    if (!Dead(ctx)) {
      rocemu_async_event r{};
      const int err = rocemu_get_async_event(ctx->rc, &r, 0);
      if (err == 0) {
        if (Translate(r, event)) return 0;
        continue;
      }
      if (err != ETIMEDOUT) {
        errno = err;
        return -1;
      }
    }
    if (Dead(ctx) || rocemu::verbs::client::DaemonGone(ctx->rc)) {
      // The outstanding work is flushed before the program hears of it.
      rocemu::verbs::client::MarkDead(ctx->rc);
      if (!ctx->fatal_reported.exchange(true)) {
        event->event_type = IBV_EVENT_DEVICE_FATAL;
        event->element.port_num = 0;
        return 0;
      }
      errno = EIO;
      return -1;
    }
    if ((fcntl(context->async_fd, F_GETFL) & O_NONBLOCK) != 0) {
      errno = EAGAIN;
      return -1;
    }
    // A signal ends the wait with -1/EINTR, as read(2) on the kernel's
    // async fd does.
    pollfd p{context->async_fd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) return -1;
  }
}

void rocemu_ibv_ack_async_event(ibv_async_event* event) {
  switch (ElementOf(static_cast<AsyncEventType>(event->event_type))) {
    case AsyncEventElement::kCq:
      CountAck(event->element.cq, &ibv_cq::async_events_completed);
      return;
    case AsyncEventElement::kQp:
      CountAck(event->element.qp, &ibv_qp::events_completed);
      return;
    case AsyncEventElement::kSrq:
      CountAck(event->element.srq, &ibv_srq::events_completed);
      return;
    case AsyncEventElement::kPortOrDevice:
      return;
  }
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_get_async_event);
ROCEMU_IBV_1_1(ibv_ack_async_event);
