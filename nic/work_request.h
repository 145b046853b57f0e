// Work requests as the application posts them (ibv_send_wr / ibv_recv_wr).
// They are plain values of fixed size: a queue of them is allocated once when
// the queue is created and posting copies a request in, so the data path
// never allocates.
#ifndef ROCEMU_NIC_WORK_REQUEST_H_
#define ROCEMU_NIC_WORK_REQUEST_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "nic/handles.h"

namespace rocemu::nic {

// Capacity of a work request's scatter/gather list (rxe's RXE_MAX_SGE).
inline constexpr uint32_t kMaxSge = 32;
// Bytes a send request can carry inline (rxe: 400).
inline constexpr uint32_t kMaxInlineData = 512;

// ibv_sge.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// A scatter/gather list of at most kMaxSge entries, stored in place.
class SgList {
 public:
  SgList() = default;
  SgList(std::initializer_list<Sge> sges) {
    for (const Sge& s : sges) PushBack(s);
  }
  // Returns false (and leaves the list unchanged) when full.
  bool PushBack(const Sge& s) {
    if (num_sge_ >= kMaxSge) return false;
    sge_[num_sge_++] = s;
    return true;
  }
  void Clear() { num_sge_ = 0; }
  uint32_t size() const { return num_sge_; }
  bool empty() const { return num_sge_ == 0; }
  const Sge& operator[](uint32_t i) const { return sge_[i]; }
  Sge& operator[](uint32_t i) { return sge_[i]; }
  std::span<const Sge> span() const { return {sge_.data(), num_sge_}; }
  const Sge* begin() const { return sge_.data(); }
  const Sge* end() const { return sge_.data() + num_sge_; }
  // Sum of the entries' lengths (64-bit: 32 entries of 4 GiB do not fit 32).
  uint64_t TotalLength() const {
    uint64_t n = 0;
    for (uint32_t i = 0; i < num_sge_; ++i) n += sge_[i].length;
    return n;
  }

 private:
  uint32_t num_sge_ = 0;
  std::array<Sge, kMaxSge> sge_{};
};

// ibv_wr_opcode, same values.
enum class WrOpcode : uint8_t {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,
  kAtomicFetchAndAdd = 6,
  kLocalInv = 7,
  kBindMw = 8,
  kSendWithInv = 9,
};
const char* WrOpcodeName(WrOpcode op);

// ibv_send_flags, same values.
namespace send_flags {
inline constexpr uint32_t kFence = 1u << 0;
inline constexpr uint32_t kSignaled = 1u << 1;
inline constexpr uint32_t kSolicited = 1u << 2;
inline constexpr uint32_t kInline = 1u << 3;
inline constexpr uint32_t kIpCsum = 1u << 4;
}  // namespace send_flags

// ibv_send_wr. Immediate data is held as the 32-bit value that goes big-endian
// on the wire (ImmDt); the verbs library converts from the application's
// __be32. With send_flags::kInline the payload is inline_data[0, inline_len)
// and sg_list is not used by the engines (the post path gathers it in).
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;
  SgList sg_list;
  uint32_t imm_data = 0;
  uint32_t invalidate_rkey = 0;  // kSendWithInv, kLocalInv
  struct Rdma {
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  } rdma;
  struct Atomic {
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t rkey = 0;
  } atomic;
  struct Ud {
    AhHandle ah = kInvalidHandle;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  } ud;
  // kBindMw: the window's current key and the bind (mr_table.h MwBind).
  struct Bind {
    uint32_t mw_rkey = 0;
    uint32_t new_rkey = 0;
    uint32_t mr_lkey = 0;
    uint32_t access = 0;
    uint64_t addr = 0;
    uint64_t length = 0;
    uint8_t type = 2;
  } bind;
  uint32_t inline_len = 0;
  std::array<uint8_t, kMaxInlineData> inline_data{};

  bool signaled() const { return send_flags & send_flags::kSignaled; }
  bool solicited() const { return send_flags & send_flags::kSolicited; }
  bool is_inline() const { return send_flags & send_flags::kInline; }
  bool fence() const { return send_flags & send_flags::kFence; }
  // Processed by the RNIC itself, nothing on the wire.
  bool local() const {
    return opcode == WrOpcode::kLocalInv || opcode == WrOpcode::kBindMw;
  }
  std::span<const uint8_t> InlinePayload() const {
    return {inline_data.data(), inline_len};
  }
  // Bytes the request moves: inline payload or the SG list's sum.
  uint64_t PayloadLength() const {
    return is_inline() ? inline_len : sg_list.TotalLength();
  }
};

// ibv_recv_wr.
struct RecvWr {
  uint64_t wr_id = 0;
  SgList sg_list;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_WORK_REQUEST_H_
