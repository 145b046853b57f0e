// Work requests as the queues hold them once posted. A posted request keeps
// its fixed-size fields in the queue's slot and its SG entries (and inline
// bytes) in storage the queue sized from its max_sge / max_inline_data at
// creation, so a slot costs what the QP asked for rather than the 32-entry,
// 512-byte worst case of the posting types (work_request.h), and posting
// copies only what the request uses.
#ifndef ROCEMU_NIC_POSTED_WR_H_
#define ROCEMU_NIC_POSTED_WR_H_

#include <cstdint>
#include <span>

#include "nic/work_request.h"

namespace rocemu::nic {

// A read-only view of SG entries stored by a queue; the read interface of
// SgList.
class SgView {
 public:
  SgView() = default;
  SgView(const Sge* sges, uint32_t n) : sges_(sges), size_(n) {}
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Sge& operator[](uint32_t i) const { return sges_[i]; }
  std::span<const Sge> span() const { return {sges_, size_}; }
  const Sge* begin() const { return sges_; }
  const Sge* end() const { return sges_ + size_; }
  uint64_t TotalLength() const { return SgTotalLength(span()); }

 private:
  const Sge* sges_ = nullptr;
  uint32_t size_ = 0;
};

// A send request in its send queue slot. sg_list and the inline bytes point
// into the queue's storage for that slot: valid until the slot is reused,
// i.e. while the WQE is outstanding.
struct PostedSendWr : SendWrHeader {
  SgView sg_list;
  const uint8_t* inline_bytes = nullptr;
  uint32_t inline_len = 0;

  std::span<const uint8_t> InlinePayload() const {
    return {inline_bytes, inline_len};
  }
  uint64_t PayloadLength() const {
    return is_inline() ? inline_len : sg_list.TotalLength();
  }
};

// A receive request in its receive queue (or in the responder, which copies
// the one it consumes into storage of its own).
struct PostedRecvWr {
  uint64_t wr_id = 0;
  SgView sg_list;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_POSTED_WR_H_
