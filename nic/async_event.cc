#include "nic/async_event.h"

namespace rocemu::nic {

const char* AsyncEventName(AsyncEventType t) {
  switch (t) {
    case AsyncEventType::kCqErr:
      return "IBV_EVENT_CQ_ERR";
    case AsyncEventType::kQpFatal:
      return "IBV_EVENT_QP_FATAL";
    case AsyncEventType::kQpReqErr:
      return "IBV_EVENT_QP_REQ_ERR";
    case AsyncEventType::kQpAccessErr:
      return "IBV_EVENT_QP_ACCESS_ERR";
    case AsyncEventType::kCommEst:
      return "IBV_EVENT_COMM_EST";
    case AsyncEventType::kSqDrained:
      return "IBV_EVENT_SQ_DRAINED";
    case AsyncEventType::kPathMig:
      return "IBV_EVENT_PATH_MIG";
    case AsyncEventType::kPathMigErr:
      return "IBV_EVENT_PATH_MIG_ERR";
    case AsyncEventType::kDeviceFatal:
      return "IBV_EVENT_DEVICE_FATAL";
    case AsyncEventType::kPortActive:
      return "IBV_EVENT_PORT_ACTIVE";
    case AsyncEventType::kPortErr:
      return "IBV_EVENT_PORT_ERR";
    case AsyncEventType::kLidChange:
      return "IBV_EVENT_LID_CHANGE";
    case AsyncEventType::kPkeyChange:
      return "IBV_EVENT_PKEY_CHANGE";
    case AsyncEventType::kSmChange:
      return "IBV_EVENT_SM_CHANGE";
    case AsyncEventType::kSrqErr:
      return "IBV_EVENT_SRQ_ERR";
    case AsyncEventType::kSrqLimitReached:
      return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case AsyncEventType::kQpLastWqeReached:
      return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case AsyncEventType::kClientReregister:
      return "IBV_EVENT_CLIENT_REREGISTER";
    case AsyncEventType::kGidChange:
      return "IBV_EVENT_GID_CHANGE";
    case AsyncEventType::kWqFatal:
      return "IBV_EVENT_WQ_FATAL";
  }
  return "IBV_EVENT_UNKNOWN";
}

AsyncEventQueue::AsyncEventQueue(uint32_t capacity)
    : ring_(capacity == 0 ? 1 : capacity) {}

bool AsyncEventQueue::Push(const AsyncEvent& e) {
  if (count_ == ring_.size()) {
    ++dropped_;
    return false;
  }
  ring_[(head_ + count_) % ring_.size()] = e;
  ++count_;
  if (notify_ != nullptr) notify_(notify_ctx_);
  return true;
}

bool AsyncEventQueue::Pop(AsyncEvent* out) {
  if (count_ == 0) return false;
  *out = ring_[head_];
  head_ = static_cast<uint32_t>((head_ + 1) % ring_.size());
  --count_;
  return true;
}

}  // namespace rocemu::nic
