// A fixed-capacity FIFO of receive work requests: the storage of a shared
// receive queue, and usable as a QP's own receive queue. Sized once at
// creation (max_wr slots of max_sge entries each); posting copies the WR's
// entries in, so the data path never allocates.
#ifndef ROCEMU_NIC_RECV_QUEUE_H_
#define ROCEMU_NIC_RECV_QUEUE_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "nic/posted_wr.h"
#include "nic/work_request.h"

namespace rocemu::nic {

enum class PostResult : uint8_t {
  kOk,
  kFull,        // ENOMEM: the queue holds max_wr requests
  kTooManySge,  // EINVAL: more SGEs than the queue's max_sge
  kInError,     // the queue's owner is in the error state
};

class RecvQueue {
 public:
  // max_wr 0 makes a queue that takes nothing (a send-only QP's); it keeps
  // one slot of storage so that the slot arithmetic needs no special case.
  RecvQueue(uint32_t max_wr, uint32_t max_sge)
      : ring_(max_wr == 0 ? 1 : max_wr),
        sges_(static_cast<size_t>(ring_.size()) * max_sge),
        max_wr_(max_wr),
        max_sge_(max_sge) {}

  PostResult Post(const RecvWr& wr) {
    if (wr.sg_list.size() > max_sge_) return PostResult::kTooManySge;
    if (count_ >= max_wr_) return PostResult::kFull;
    Store(Slot(count_), wr.wr_id, wr.sg_list.span());
    ++count_;
    return PostResult::kOk;
  }
  // The oldest request, or nullptr if empty (the responder peeks, then
  // pops once the message is accepted; an empty queue means RNR). Valid
  // until it is popped.
  const PostedRecvWr* Front() const { return count_ ? &ring_[head_] : nullptr; }
  void Pop() {
    if (count_ == 0) return;
    head_ = Slot(1);
    --count_;
  }
  // Removes every request, calling f(const PostedRecvWr&) on each in order
  // (to complete them with IBV_WC_WR_FLUSH_ERR).
  template <typename F>
  void Flush(F&& f) {
    while (const PostedRecvWr* wr = Front()) {
      f(*wr);
      Pop();
    }
  }
  // Grows (or shrinks to no less than size()) the queue, keeping its
  // contents. Control path.
  absl::Status Resize(uint32_t max_wr);

  uint32_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint32_t capacity() const { return max_wr_; }
  uint32_t max_sge() const { return max_sge_; }

 private:
  uint32_t Slot(uint32_t i) const {
    uint32_t s = head_ + i;
    return s >= ring_.size() ? s - static_cast<uint32_t>(ring_.size()) : s;
  }
  void Store(uint32_t slot, uint64_t wr_id, std::span<const Sge> sges) {
    Sge* dst = sges_.data() + static_cast<size_t>(slot) * max_sge_;
    std::copy(sges.begin(), sges.end(), dst);
    ring_[slot] =
        PostedRecvWr{wr_id, SgView(dst, static_cast<uint32_t>(sges.size()))};
  }

  std::vector<PostedRecvWr> ring_;
  std::vector<Sge> sges_;  // max_sge_ entries per slot of ring_
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t max_wr_;
  uint32_t max_sge_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RECV_QUEUE_H_
