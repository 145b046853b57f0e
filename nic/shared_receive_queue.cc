#include "nic/shared_receive_queue.h"

#include <memory>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

void SharedReceiveQueue::Pop() {
  queue_.Pop();
  if (limit_ != 0 && queue_.size() < limit_) {
    limit_ = 0;
    if (events_ != nullptr) {
      events_->Push({AsyncEventType::kSrqLimitReached, handle_, owner_});
    }
  }
}

absl::Status SharedReceiveQueue::Modify(const SrqAttr& attr, uint32_t mask) {
  if (mask == 0 || (mask & ~(srq_attr_mask::kMaxWr | srq_attr_mask::kLimit))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SRQ attribute mask 0x%x invalid", mask));
  }
  const uint32_t max_wr =
      (mask & srq_attr_mask::kMaxWr) ? attr.max_wr : queue_.capacity();
  if ((mask & srq_attr_mask::kLimit) && attr.srq_limit > max_wr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SRQ limit %u above max_wr %u", attr.srq_limit, max_wr));
  }
  if (mask & srq_attr_mask::kMaxWr) {
    if (absl::Status s = queue_.Resize(attr.max_wr); !s.ok()) return s;
  }
  if (mask & srq_attr_mask::kLimit) limit_ = attr.srq_limit;
  return absl::OkStatus();
}

void SharedReceiveQueue::SetError() {
  if (error_) return;
  error_ = true;
  if (events_ != nullptr) {
    events_->Push({AsyncEventType::kSrqErr, handle_, owner_});
  }
}

absl::StatusOr<SrqHandle> SrqTable::Create(ClientId client, PdHandle pd,
                                           const SrqAttr& attr) {
  if (!pds_.OwnedBy(pd, client)) {
    return absl::NotFoundError(absl::StrFormat("no PD 0x%08x", pd));
  }
  if (attr.max_wr == 0 || attr.max_wr > max_srq_wr_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SRQ max_wr %u outside [1, %u]", attr.max_wr, max_srq_wr_));
  }
  if (attr.max_sge == 0 || attr.max_sge > max_srq_sge_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SRQ max_sge %u outside [1, %u]", attr.max_sge, max_srq_sge_));
  }
  if (attr.srq_limit > attr.max_wr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SRQ limit %u above max_wr %u", attr.srq_limit, attr.max_wr));
  }
  auto srq = std::make_unique<SharedReceiveQueue>(pd, attr, client, events_);
  SharedReceiveQueue* raw = srq.get();
  absl::StatusOr<SrqHandle> h = srqs_.Insert(client, std::move(srq));
  if (!h.ok()) return h.status();
  raw->handle_ = *h;
  (void)pds_.Retain(pd);
  return *h;
}

absl::StatusOr<SrqHandle> SrqTable::CreateXrc(ClientId client, PdHandle pd,
                                              uint32_t xrcd, CqHandle cq,
                                              const SrqAttr& attr) {
  absl::StatusOr<SrqHandle> h = Create(client, pd, attr);
  if (!h.ok()) return h;
  SharedReceiveQueue* s = srqs_.Get(*h);
  s->xrcd_ = xrcd;
  s->cq_ = cq;
  return h;
}

absl::StatusOr<SrqHandle> SrqTable::CreateTm(ClientId client, PdHandle pd,
                                             CqHandle cq, const SrqAttr& attr,
                                             const TmCaps& caps) {
  absl::StatusOr<SrqHandle> h = Create(client, pd, attr);
  if (!h.ok()) return h;
  SharedReceiveQueue* s = srqs_.Get(*h);
  s->cq_ = cq;
  s->tm_ = std::make_unique<TagList>(caps.max_num_tags, caps.max_ops);
  return h;
}

absl::Status SrqTable::Destroy(ClientId client, SrqHandle srq) {
  SharedReceiveQueue* s = srqs_.Get(srq, client);
  if (s == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  if (s->use_count() != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "SRQ 0x%08x still used by %u QPs", srq, s->use_count()));
  }
  const PdHandle pd = s->pd();
  absl::Status st = srqs_.Erase(srq);
  if (st.ok()) pds_.Release(pd);
  return st;
}

}  // namespace rocemu::nic
