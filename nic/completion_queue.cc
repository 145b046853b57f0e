#include "nic/completion_queue.h"

#include "absl/strings/str_format.h"

namespace rocemu::nic {

CompletionQueue::CompletionQueue(uint32_t cqe, ClientId owner,
                                 AsyncEventQueue* events)
    : ring_(cqe == 0 ? 1 : cqe), owner_(owner), events_(events) {}

CqPushResult CompletionQueue::Push(const WorkCompletion& wc, bool solicited) {
  if (error_) return CqPushResult::kInError;
  if (count_ == ring_.size()) {
    error_ = true;
    ++overflows_;
    if (events_ != nullptr) {
      events_->Push({AsyncEventType::kCqErr, handle_, owner_});
    }
    return CqPushResult::kOverflow;
  }
  const uint32_t cap = static_cast<uint32_t>(ring_.size());
  const uint32_t tail = head_ + count_;  // < 2 * cap: no division per CQE
  ring_[tail >= cap ? tail - cap : tail] = wc;
  if (count_++ == 0 && order_ != nullptr) pending_since_ = ++*order_;
  // IBTA completion notification: a solicited-only arm is also satisfied by an
  // unsuccessful completion.
  if (arm_ == Arm::kNext || (arm_ == Arm::kSolicited &&
                             (solicited || wc.status != WcStatus::kSuccess))) {
    arm_ = Arm::kNone;
    if (notify_ != nullptr) notify_(notify_ctx_, handle_);
  }
  return CqPushResult::kOk;
}

size_t CompletionQueue::Poll(std::span<WorkCompletion> out) {
  size_t n = 0;
  const uint32_t cap = static_cast<uint32_t>(ring_.size());
  while (n < out.size() && count_ > 0) {
    out[n++] = ring_[head_];
    head_ = head_ + 1 == cap ? 0 : head_ + 1;
    --count_;
  }
  return n;
}

void CompletionQueue::RequestNotify(bool solicited_only) {
  // A pending "next" arm is not weakened by a later solicited-only request.
  if (arm_ == Arm::kNext) return;
  arm_ = solicited_only ? Arm::kSolicited : Arm::kNext;
}

absl::Status CompletionQueue::Resize(uint32_t cqe) {
  if (cqe == 0) return absl::InvalidArgumentError("CQ size must be > 0");
  if (cqe < count_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "CQ holds %u completions, cannot shrink to %u", count_, cqe));
  }
  std::vector<WorkCompletion> ring(cqe);
  for (uint32_t i = 0; i < count_; ++i) {
    ring[i] = ring_[(head_ + i) % ring_.size()];
  }
  ring_ = std::move(ring);
  head_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<CqHandle> CqTable::Create(ClientId client, uint32_t cqe) {
  if (cqe == 0 || cqe > max_cqe_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CQ size %u outside [1, %u]", cqe, max_cqe_));
  }
  auto cq = std::make_unique<CompletionQueue>(cqe, client, events_);
  CompletionQueue* raw = cq.get();
  raw->order_ = &order_;
  absl::StatusOr<CqHandle> h = cqs_.Insert(client, std::move(cq));
  if (h.ok()) raw->handle_ = *h;
  return h;
}

absl::Status CqTable::Destroy(ClientId client, CqHandle cq) {
  CompletionQueue* c = cqs_.Get(cq, client);
  if (c == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no CQ 0x%08x", cq));
  }
  if (c->use_count() != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "CQ 0x%08x still used by %u queues", cq, c->use_count()));
  }
  return cqs_.Erase(cq);
}

}  // namespace rocemu::nic
