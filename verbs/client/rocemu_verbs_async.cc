// The rocemu C API: asynchronous events and names.
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <mutex>

#include "nic/async_event.h"
#include "nic/completion.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/ring_slots.h"

using namespace rocemu::verbs::client;  // NOLINT: the library's own internals
using rocemu::nic::AsyncEventElement;
using rocemu::nic::AsyncEventType;
using rocemu::verbs::AsyncEventSlot;
using rocemu::verbs::RingResult;

extern "C" {

int rocemu_async_fd(const rocemu_context* ctx) { return ctx->async_fd; }

int rocemu_get_async_event(rocemu_context* ctx, rocemu_async_event* event,
                           int timeout_ms) {
  for (;;) {
    // Clear the eventfd before looking at the ring: an event published
    // after the look signals again, so the poll below cannot miss it.
    uint64_t v;
    (void)!read(ctx->async_fd, &v, sizeof(v));
    {
      std::lock_guard<std::mutex> alock(ctx->async_mu);
      AsyncEventSlot e;
      while (ctx->async_ring.Pop(&e) == RingResult::kOk) {
        rocemu_async_event out{};
        out.event_type = static_cast<int>(e.event_type);
        bool known = true;
        {
          std::lock_guard<std::mutex> lock(ctx->mu);
          switch (rocemu::nic::ElementOf(
              static_cast<AsyncEventType>(e.event_type))) {
            case AsyncEventElement::kCq: {
              auto it = ctx->cqs.find(e.element);
              known = it != ctx->cqs.end();
              if (known) out.element.cq = it->second;
              break;
            }
            case AsyncEventElement::kSrq: {
              auto it = ctx->srqs.find(e.element);
              known = it != ctx->srqs.end();
              if (known) out.element.srq = it->second;
              break;
            }
            case AsyncEventElement::kPortOrDevice:
              out.element.port_num = static_cast<int>(e.element);
              break;
            case AsyncEventElement::kQp: {
              auto it = ctx->qps.find(e.element);
              known = it != ctx->qps.end();
              if (known) out.element.qp = it->second;
              break;
            }
          }
        }
        if (!known) continue;  // its object was destroyed meanwhile
        // More waiting: keep the fd readable for an application that
        // polls it before each call.
        if (ctx->async_ring.ConsumerSlot() != nullptr) {
          const uint64_t one = 1;
          (void)!write(ctx->async_fd, &one, sizeof(one));
        }
        *event = out;
        return 0;
      }
      if (ctx->async_ring.last_result() == RingResult::kCorrupt) return EIO;
    }
    pollfd p{ctx->async_fd, POLLIN, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n == 0) return ETIMEDOUT;
    if (n < 0 && errno != EINTR) return errno;
  }
}

void rocemu_ack_async_event(rocemu_async_event* event) {
  // Destroy calls do not wait for acknowledgements (events about a
  // destroyed object are skipped instead), so there is nothing to count.
  (void)event;
}

const char* rocemu_event_type_str(int event_type) {
  if (event_type < 0 || event_type > ROCEMU_EVENT_GID_CHANGE) return "unknown";
  return rocemu::nic::AsyncEventName(
      static_cast<rocemu::nic::AsyncEventType>(event_type));
}

const char* rocemu_wc_status_str(int status) {
  return rocemu::nic::WcStatusString(
      static_cast<rocemu::nic::WcStatus>(status));
}

}  // extern "C"
