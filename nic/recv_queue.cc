#include "nic/recv_queue.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::Status RecvQueue::Resize(uint32_t max_wr) {
  if (max_wr == 0 || max_wr < count_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("receive queue holds %u requests, cannot size it to %u",
                        count_, max_wr));
  }
  RecvQueue grown(max_wr, max_sge_);
  for (uint32_t i = 0; i < count_; ++i) {
    const PostedRecvWr& wr = ring_[Slot(i)];
    grown.Store(i, wr.wr_id, wr.sg_list.span());
  }
  grown.count_ = count_;
  *this = std::move(grown);
  return absl::OkStatus();
}

}  // namespace rocemu::nic
