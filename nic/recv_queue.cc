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
  std::vector<RecvWr> ring(max_wr);
  for (uint32_t i = 0; i < count_; ++i) ring[i] = ring_[Slot(i)];
  ring_ = std::move(ring);
  head_ = 0;
  return absl::OkStatus();
}

}  // namespace rocemu::nic
