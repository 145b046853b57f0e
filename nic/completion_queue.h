// Completion queues. A CQ is a fixed ring of work completions sized at
// creation; the engines push, the application polls. Overflow is an error
// as on real hardware: the completion that did not fit is lost, the CQ
// enters the error state, IBV_EVENT_CQ_ERR is raised and the engine moves the
// QPs feeding it to the error state (the push result tells it to).
#ifndef ROCEMU_NIC_COMPLETION_QUEUE_H_
#define ROCEMU_NIC_COMPLETION_QUEUE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/async_event.h"
#include "nic/completion.h"
#include "nic/handle_table.h"
#include "nic/handles.h"

namespace rocemu::nic {

enum class CqPushResult : uint8_t {
  kOk,
  kOverflow,  // this push overflowed the CQ: it is now in error
  kInError,   // the CQ was already in error: completion dropped
};

class CompletionQueue {
 public:
  // Called (at most once per ibv_req_notify_cq) when an armed CQ gets a
  // completion that satisfies the arm: the daemon signals the client's
  // completion channel.
  using NotifyFn = void (*)(void* ctx, CqHandle cq);

  CompletionQueue(uint32_t cqe, ClientId owner, AsyncEventQueue* events);

  // Hot path. `solicited` is the completion's solicited-event flag (a
  // received SEND with BTH.SE set).
  CqPushResult Push(const WorkCompletion& wc, bool solicited = false);
  // ibv_poll_cq: moves up to out.size() completions out, oldest first.
  // Completions queued before an overflow are still returned.
  size_t Poll(std::span<WorkCompletion> out);

  // ibv_req_notify_cq: the next completion (or, with solicited_only, the
  // next solicited or unsuccessful one) fires the notify hook once.
  void RequestNotify(bool solicited_only);
  void SetNotifyHook(NotifyFn fn, void* ctx) {
    notify_ = fn;
    notify_ctx_ = ctx;
  }
  bool armed() const { return arm_ != Arm::kNone; }

  // ibv_resize_cq: FailedPrecondition when the queued completions do not fit.
  absl::Status Resize(uint32_t cqe);

  CqHandle handle() const { return handle_; }
  ClientId owner() const { return owner_; }
  // When the CQ last went from empty to holding a completion, in the order
  // of its table (CqTable): of two non-empty CQs, the one with the smaller
  // value holds the older completion. The daemon moves CQs out to the
  // applications' rings in that order, so that their events fire in the
  // order the RNIC completed the work, as a NIC's event queue has them.
  uint64_t pending_since() const { return pending_since_; }
  uint32_t capacity() const { return static_cast<uint32_t>(ring_.size()); }
  uint32_t size() const { return count_; }
  bool in_error() const { return error_; }
  uint64_t overflows() const { return overflows_; }
  // Bound QPs and SRQs keep the CQ from being destroyed.
  uint32_t use_count() const { return use_count_; }
  void Retain() { ++use_count_; }
  void Release() {
    if (use_count_ > 0) --use_count_;
  }

 private:
  friend class CqTable;
  enum class Arm : uint8_t { kNone, kNext, kSolicited };

  std::vector<WorkCompletion> ring_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  bool error_ = false;
  Arm arm_ = Arm::kNone;
  uint32_t use_count_ = 0;
  uint64_t overflows_ = 0;
  CqHandle handle_ = kInvalidHandle;
  ClientId owner_;
  AsyncEventQueue* events_;
  NotifyFn notify_ = nullptr;
  void* notify_ctx_ = nullptr;
  uint64_t* order_ = nullptr;  // the table's count of empty -> non-empty
  uint64_t pending_since_ = 0;
};

class CqTable {
 public:
  // `events` (may be null) receives CQ_ERR events; it must outlive the table.
  CqTable(uint32_t max_cq, uint32_t max_cqe, AsyncEventQueue* events)
      : max_cqe_(max_cqe), events_(events), cqs_("CQ", max_cq) {}

  // ibv_create_cq: InvalidArgument for cqe outside [1, max_cqe].
  absl::StatusOr<CqHandle> Create(ClientId client, uint32_t cqe);
  // ibv_destroy_cq: FailedPrecondition (EBUSY) while QPs use it.
  absl::Status Destroy(ClientId client, CqHandle cq);
  CompletionQueue* Get(CqHandle cq) const { return cqs_.Get(cq); }
  CompletionQueue* Get(CqHandle cq, ClientId client) const {
    return cqs_.Get(cq, client);
  }
  uint32_t size() const { return cqs_.size(); }

 private:
  uint32_t max_cqe_;
  AsyncEventQueue* events_;
  HandleTable<CompletionQueue> cqs_;
  uint64_t order_ = 0;  // CompletionQueue::pending_since()
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_COMPLETION_QUEUE_H_
