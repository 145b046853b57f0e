// The matching list of a tag-matching SRQ (IBV_SRQT_TM): the tagged buffers
// the application added with ibv_post_srq_ops, and the phase counter that
// keeps hardware and software matching in order.
//
// Why the phase: a message no tagged buffer matches is "unexpected" and goes
// whole to an ordinary SRQ buffer for software to match. A buffer software
// adds before it has seen that message must not match a later one, or two
// messages of one tag would complete out of order. So the list counts the
// unexpected messages it produced, each operation may tell it how many
// software has handled (IBV_OPS_TM_SYNC), and a buffer added while the two
// counts differ is never matched (its ADD completes with TM_SYNC_REQ); one
// added in step stays eligible. This is the rule of rdma-core's
// Documentation/tag_matching.md; the buffers are matched oldest first.
#ifndef ROCEMU_NIC_TAG_LIST_H_
#define ROCEMU_NIC_TAG_LIST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "nic/work_request.h"

namespace rocemu::nic {

// One tagged buffer: matched when (message tag & mask) == tag.
struct TaggedBuffer {
  uint64_t recv_wr_id = 0;
  uint64_t tag = 0;
  uint64_t mask = 0;
  Sge sge{};
  bool has_sge = false;
};

// ibv_ops_wr: IBV_WR_TAG_ADD, _DEL, _SYNC and the IBV_OPS_* flags.
enum class TmOpcode : uint8_t { kAdd = 0, kDel = 1, kSync = 2 };
namespace tm_op_flags {
inline constexpr uint32_t kSignaled = 1u << 0;
inline constexpr uint32_t kSync = 1u << 1;
}  // namespace tm_op_flags
struct TmOp {
  uint64_t wr_id = 0;
  TmOpcode opcode = TmOpcode::kAdd;
  uint32_t flags = 0;
  uint32_t unexpected_cnt = 0;
  uint32_t handle = 0;  // kDel
  TaggedBuffer add;     // kAdd
};

class TagList {
 public:
  TagList(uint32_t max_num_tags, uint32_t max_ops)
      : entries_(max_num_tags), max_ops_(max_ops) {}

  // IBV_OPS_TM_SYNC: software has handled `count` unexpected messages.
  void Sync(uint32_t count) { sw_unexpected_ = count; }
  bool in_sync() const { return sw_unexpected_ == hw_unexpected_; }

  // IBV_WR_TAG_ADD: the entry's handle (ibv_ops_wr.tm.handle).
  // ResourceExhausted (ENOMEM) when max_num_tags buffers are posted.
  absl::StatusOr<uint32_t> Add(const TaggedBuffer& b);
  // IBV_WR_TAG_DEL: false if `handle` names no posted buffer (consumed by a
  // message meanwhile, or never added): the WC's IBV_WC_TM_ERR.
  bool Del(uint32_t handle);

  // Whether an eligible buffer matches `tag`.
  bool HasMatch(uint64_t tag) const { return Find(tag) >= 0; }
  // The oldest eligible buffer `tag` matches, removed from the list; false
  // if none does.
  bool Match(uint64_t tag, TaggedBuffer* out);
  // A tagged message went to an ordinary buffer: matching of buffers added
  // from now on waits for software to count it (Sync).
  void CountUnexpected() { ++hw_unexpected_; }

  uint32_t hw_unexpected() const { return hw_unexpected_; }
  uint32_t size() const { return size_; }
  uint32_t max_num_tags() const {
    return static_cast<uint32_t>(entries_.size());
  }
  uint32_t max_ops() const { return max_ops_; }

 private:
  struct Entry {
    TaggedBuffer buf;
    uint64_t seq = 0;  // the order of ADDs: oldest matches first
    bool valid = false;
    bool eligible = false;
  };
  // The index of the oldest eligible entry `tag` matches, or -1.
  int Find(uint64_t tag) const;

  std::vector<Entry> entries_;
  uint32_t max_ops_;
  uint32_t size_ = 0;
  uint64_t next_seq_ = 0;
  uint32_t sw_unexpected_ = 0;
  uint32_t hw_unexpected_ = 0;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_TAG_LIST_H_
