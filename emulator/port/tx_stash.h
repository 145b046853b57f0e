// The empty buffers an RNIC builds its next burst of frames into, kept from
// one pass to the next. The RNIC is offered a whole burst of room every
// time it has work, and most passes fill one frame or none: allocating a
// burst and freeing the unused part each time put ~60 mbuf-header touches
// between building a frame and sending it (7 % of a 64 B write_lat's
// time, rte_pktmbuf_free_bulk). Here only the buffers the RNIC filled
// are replaced.
#ifndef ROCEMU_EMULATOR_PORT_TX_STASH_H_
#define ROCEMU_EMULATOR_PORT_TX_STASH_H_

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "nic/frame_io.h"

namespace rocemu::emulator {

template <uint16_t N>
class TxStash {
 public:
  TxStash() = default;
  TxStash(const TxStash&) = delete;
  TxStash& operator=(const TxStash&) = delete;
  // The pool outlives no stash on its own: Release() before it is freed.
  ~TxStash() = default;

  // Tops the stash up from `pool` (frames at most `max_frame` bytes);
  // returns false if the pool could not refill it. Whatever the stash
  // still holds is offered either way.
  bool Fill(rte_mempool* pool, uint32_t max_frame) {
    if (first_ == 0) return true;
    // Built frames leave from the front, so the empty slots are always
    // the front ones and the room stays contiguous.
    if (rte_pktmbuf_alloc_bulk(pool, bufs_, first_) != 0) return false;
    for (uint16_t i = 0; i < first_; ++i) {
      frames_[i].data = rte_pktmbuf_mtod(bufs_[i], uint8_t*);
      frames_[i].capacity =
          std::min<uint32_t>(rte_pktmbuf_tailroom(bufs_[i]), max_frame);
    }
    first_ = 0;
    return true;
  }

  // The room to offer the RNIC, in order.
  std::span<nic::TxFrame> room() { return {frames_ + first_, size()}; }
  uint16_t size() const { return static_cast<uint16_t>(N - first_); }

  // The first `n` frames of room() were built: their buffers, lengths
  // set, go to `out`, and `priorities` (if given) gets their 802.1p
  // priorities, `packet_ids` (if given) their ids in the RNIC's
  // VerdictLog.
  void Take(size_t n, rte_mbuf** out, uint8_t* priorities = nullptr,
            uint64_t* packet_ids = nullptr) {
    for (size_t i = 0; i < n; ++i) {
      rte_mbuf* m = bufs_[first_ + i];
      const nic::TxFrame& f = frames_[first_ + i];
      m->data_len = static_cast<uint16_t>(f.len);
      m->pkt_len = f.len;
      out[i] = m;
      if (priorities != nullptr) priorities[i] = f.priority;
      if (packet_ids != nullptr) packet_ids[i] = f.packet_id;
    }
    first_ = static_cast<uint16_t>(first_ + n);
  }

  // Frees what the stash holds (at shutdown, while the pool exists).
  void Release() {
    if (first_ < N) rte_pktmbuf_free_bulk(bufs_ + first_, N - first_);
    first_ = N;
  }

 private:
  rte_mbuf* bufs_[N];
  nic::TxFrame frames_[N];
  uint16_t first_ = N;  // bufs_[first_ .. N) hold empty buffers
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_TX_STASH_H_
