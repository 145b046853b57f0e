// The message flow of ibv_rc_pingpong / ibv_ud_pingpong, apart from the
// verbs calls so that it can be tested on its own. Both sides keep
// `rx_depth` receives posted (refilling when at most one is left); the
// client sends first; a side posts its next SEND only when its previous
// SEND has completed AND the peer's message has arrived (the "pending"
// bits), until it has sent `iters` messages; it stops when it has both sent
// and received `iters`. The work request ids are the tools' own (1 for
// receives, 2 for sends), so completions are told apart the same way.
#ifndef ROCEMU_VERBS_TOOLS_PINGPONG_FLOW_H_
#define ROCEMU_VERBS_TOOLS_PINGPONG_FLOW_H_

#include <cstdint>

namespace rocemu::pingpong {

inline constexpr uint64_t kRecvWrId = 1;
inline constexpr uint64_t kSendWrId = 2;

enum class FlowError : uint8_t {
  kNone,
  kBadStatus,    // "Failed status %s (%d) for wr_id %d"
  kUnknownWrId,  // "Completion for unknown wr_id %d"
};

class PingpongFlow {
 public:
  PingpongFlow(uint32_t iters, uint32_t rx_depth, bool client)
      : iters_(iters), rx_depth_(rx_depth), client_(client) {}

  // The initial receives were posted (`posted` of rx_depth).
  bool InitialRecvsPosted(uint32_t posted) {
    routs_ = posted;
    return posted >= rx_depth_;
  }
  // After connecting: true when this side must post the first SEND (the
  // client). Sets the pending bits accordingly.
  bool Start() {
    pending_ = kRecvWrId;
    if (client_) pending_ |= kSendWrId;
    return client_;
  }

  struct Step {
    FlowError error = FlowError::kNone;
    uint32_t recvs_to_post = 0;  // post these, then call RecvsPosted()
    bool post_send = false;      // after the receives
  };
  // One completion. On success the caller posts `recvs_to_post` receives
  // (reporting how many went in with RecvsPosted) and then, if
  // `post_send`, the next SEND.
  Step OnCompletion(uint64_t wr_id, bool success);
  // Receives posted for the refill asked by the last step; false when the
  // queue could not be brought back to rx_depth.
  bool RecvsPosted(uint32_t posted) {
    routs_ += posted;
    return routs_ >= rx_depth_;
  }

  bool Done() const { return rcnt_ >= iters_ && scnt_ >= iters_; }
  uint32_t sent() const { return scnt_; }
  uint32_t received() const { return rcnt_; }
  uint32_t posted_recvs() const { return routs_; }

 private:
  uint32_t iters_;
  uint32_t rx_depth_;
  bool client_;
  uint32_t routs_ = 0;  // receives posted and not yet completed
  uint32_t scnt_ = 0;
  uint32_t rcnt_ = 0;
  uint64_t pending_ = 0;
};

}  // namespace rocemu::pingpong

#endif  // ROCEMU_VERBS_TOOLS_PINGPONG_FLOW_H_
