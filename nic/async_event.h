// Asynchronous events (ibv_get_async_event). The RNIC queues them from the
// data path (CQ overflow, SRQ limit, QP errors); the daemon drains the queue
// and forwards each event to the client owning the object. The queue is a
// fixed ring so raising an event never allocates; if the daemon falls
// behind, further events are counted as dropped rather than lost silently.
#ifndef ROCEMU_NIC_ASYNC_EVENT_H_
#define ROCEMU_NIC_ASYNC_EVENT_H_

#include <cstdint>
#include <vector>

#include "nic/handles.h"

namespace rocemu::nic {

// ibv_event_type, same values.
enum class AsyncEventType : uint8_t {
  kCqErr = 0,
  kQpFatal = 1,
  kQpReqErr = 2,
  kQpAccessErr = 3,
  kCommEst = 4,
  kSqDrained = 5,
  kPathMig = 6,
  kPathMigErr = 7,
  kDeviceFatal = 8,
  kPortActive = 9,
  kPortErr = 10,
  kLidChange = 11,
  kPkeyChange = 12,
  kSmChange = 13,
  kSrqErr = 14,
  kSrqLimitReached = 15,
  kQpLastWqeReached = 16,
  kClientReregister = 17,
  kGidChange = 18,
  kWqFatal = 19,
};
const char* AsyncEventName(AsyncEventType t);  // "IBV_EVENT_CQ_ERR"

// What an event is about, which says what its element names (IBTA 11.6.3):
// a CQ, an SRQ, a port or the device (the unaffiliated events), else a QP.
// The session server routes by it, the client library and the drop-in
// translate the element by it.
enum class AsyncEventElement : uint8_t { kCq, kSrq, kPortOrDevice, kQp };
constexpr AsyncEventElement ElementOf(AsyncEventType t) {
  switch (t) {
    case AsyncEventType::kCqErr:
      return AsyncEventElement::kCq;
    case AsyncEventType::kSrqErr:
    case AsyncEventType::kSrqLimitReached:
      return AsyncEventElement::kSrq;
    case AsyncEventType::kDeviceFatal:
    case AsyncEventType::kPortActive:
    case AsyncEventType::kPortErr:
    case AsyncEventType::kLidChange:
    case AsyncEventType::kPkeyChange:
    case AsyncEventType::kSmChange:
    case AsyncEventType::kClientReregister:
    case AsyncEventType::kGidChange:
      return AsyncEventElement::kPortOrDevice;
    default:
      return AsyncEventElement::kQp;
  }
}

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::kCqErr;
  // What the event is about: a CQ or SRQ handle, a QP number, or a port
  // number, according to the type (as the union in ibv_async_event).
  uint32_t element = 0;
  ClientId client = kKernelClient;  // owner of the element
};

class AsyncEventQueue {
 public:
  using NotifyFn = void (*)(void* ctx);

  explicit AsyncEventQueue(uint32_t capacity = 1024);

  // Returns false (and counts a drop) when the queue is full. Calls the
  // notify hook, if set, so the daemon can wake the client's async fd.
  bool Push(const AsyncEvent& e);
  bool Pop(AsyncEvent* out);
  uint32_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t dropped() const { return dropped_; }
  void SetNotifyHook(NotifyFn fn, void* ctx) {
    notify_ = fn;
    notify_ctx_ = ctx;
  }

 private:
  std::vector<AsyncEvent> ring_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint64_t dropped_ = 0;
  NotifyFn notify_ = nullptr;
  void* notify_ctx_ = nullptr;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_ASYNC_EVENT_H_
