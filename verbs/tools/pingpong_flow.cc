#include "verbs/tools/pingpong_flow.h"

namespace rocemu::pingpong {

PingpongFlow::Step PingpongFlow::OnCompletion(uint64_t wr_id, bool success) {
  Step step;
  if (!success) {
    step.error = FlowError::kBadStatus;
    return step;
  }
  if (wr_id == kSendWrId) {
    ++scnt_;
  } else if (wr_id == kRecvWrId) {
    // Refill only when nearly empty: one post_recv burst per rx_depth
    // messages, as the rdma-core tools do.
    if (routs_ > 0) --routs_;
    if (routs_ <= 1) step.recvs_to_post = rx_depth_ - routs_;
    ++rcnt_;
  } else {
    step.error = FlowError::kUnknownWrId;
    return step;
  }
  pending_ &= ~wr_id;
  if (scnt_ < iters_ && pending_ == 0) {
    step.post_send = true;
    pending_ = kRecvWrId | kSendWrId;
  }
  return step;
}

}  // namespace rocemu::pingpong
