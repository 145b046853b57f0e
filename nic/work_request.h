// Work requests as the application posts them (ibv_send_wr / ibv_recv_wr).
// They are plain values of fixed size: a queue of them is allocated once when
// the queue is created and posting copies a request in, so the data path
// never allocates.
#ifndef ROCEMU_NIC_WORK_REQUEST_H_
#define ROCEMU_NIC_WORK_REQUEST_H_

#include <cstdint>
#include <cstring>
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

// Sum of the entries' lengths (64-bit: 32 entries of 4 GiB do not fit 32).
inline uint64_t SgTotalLength(std::span<const Sge> sges) {
  uint64_t n = 0;
  for (const Sge& s : sges) n += s.length;
  return n;
}

// A scatter/gather list of at most kMaxSge entries, stored in place. Only
// the entries in use are initialized and copied: a request is built and
// copied once per post, and 32 entries are 512 bytes.
class SgList {
 public:
  SgList() {}
  SgList(std::initializer_list<Sge> sges) {
    for (const Sge& s : sges) PushBack(s);
  }
  SgList(const SgList& o) : num_sge_(o.num_sge_) {
    std::memcpy(storage_.sge, o.storage_.sge, num_sge_ * sizeof(Sge));
  }
  SgList& operator=(const SgList& o) {
    if (this != &o) {
      num_sge_ = o.num_sge_;
      std::memcpy(storage_.sge, o.storage_.sge, num_sge_ * sizeof(Sge));
    }
    return *this;
  }
  // Returns false (and leaves the list unchanged) when full.
  bool PushBack(const Sge& s) {
    if (num_sge_ >= kMaxSge) return false;
    storage_.sge[num_sge_++] = s;
    return true;
  }
  void Clear() { num_sge_ = 0; }
  uint32_t size() const { return num_sge_; }
  bool empty() const { return num_sge_ == 0; }
  const Sge& operator[](uint32_t i) const { return storage_.sge[i]; }
  Sge& operator[](uint32_t i) { return storage_.sge[i]; }
  std::span<const Sge> span() const { return {storage_.sge, num_sge_}; }
  const Sge* begin() const { return storage_.sge; }
  const Sge* end() const { return storage_.sge + num_sge_; }
  uint64_t TotalLength() const { return SgTotalLength(span()); }

 private:
  uint32_t num_sge_ = 0;
  union Storage {
    Storage() {}  // entries past num_sge_ are never read
    Sge sge[kMaxSge];
  } storage_;
};

// The bytes of an inline send, stored in place; as SgList, only the bytes
// in use are copied.
class InlineData {
 public:
  InlineData() {}
  InlineData(const InlineData& o) : size_(o.size_) {
    std::memcpy(bytes_, o.bytes_, size_);
  }
  InlineData& operator=(const InlineData& o) {
    if (this != &o) {
      size_ = o.size_;
      std::memcpy(bytes_, o.bytes_, size_);
    }
    return *this;
  }
  static constexpr uint32_t capacity() { return kMaxInlineData; }
  uint8_t* data() { return bytes_; }
  const uint8_t* data() const { return bytes_; }
  uint32_t size() const { return size_; }
  // data()[0, n) is the payload (written there by the caller); n is clamped
  // to the capacity.
  void set_size(uint32_t n) { size_ = n < kMaxInlineData ? n : kMaxInlineData; }
  // Returns false (and leaves the data unchanged) when `b` does not fit.
  bool Assign(std::span<const uint8_t> b) {
    if (b.size() > kMaxInlineData) return false;
    size_ = static_cast<uint32_t>(b.size());
    if (size_ != 0) std::memcpy(bytes_, b.data(), size_);  // b may be null
    return true;
  }
  std::span<const uint8_t> span() const { return {bytes_, size_}; }

 private:
  uint32_t size_ = 0;
  uint8_t bytes_[kMaxInlineData];
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
  kFlush = 14,
  kAtomicWrite = 15,
};
const char* WrOpcodeName(WrOpcode op);

// ibv_send_flags, same values.
namespace send_flags {
inline constexpr uint32_t kFence = 1u << 0;
inline constexpr uint32_t kSignaled = 1u << 1;
inline constexpr uint32_t kSolicited = 1u << 2;
inline constexpr uint32_t kInline = 1u << 3;
inline constexpr uint32_t kIpCsum = 1u << 4;
// A request the RNIC issued itself (a TM SRQ's rendezvous READ or FIN,
// nic/tag_matching.h): it completes to the RNIC, never to a CQ. Refused
// from applications.
inline constexpr uint32_t kTmInternal = 1u << 31;
}  // namespace send_flags

// ibv_send_wr without its gather list and inline bytes: what a send queue
// keeps of a request at fixed size (the rest goes to storage sized by the
// QP's max_send_sge and max_inline_data). Immediate data is held as the
// 32-bit value that goes big-endian on the wire (ImmDt); the verbs library
// converts from the application's __be32.
struct SendWrHeader {
  uint64_t wr_id = 0;
  // The poster's own sequence number for this request, handed back in
  // its completion (WorkCompletion::wqe_index), as a ConnectX CQE carries
  // the WQE counter: the verbs layer learns from it which requests a
  // completion retires, signaled or not.
  uint32_t wqe_index = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;
  uint32_t imm_data = 0;
  uint32_t invalidate_rkey = 0;  // kSendWithInv, kLocalInv
  struct Rdma {
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  } rdma;
  // kAtomicWrite targets rdma.remote_addr/rkey and carries its 8 bytes in
  // atomic.swap, as they lie in the application's memory (ibv_wr_atomic_write
  // copies them at post time; they are placed at the target verbatim).
  struct Atomic {
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t rkey = 0;
  } atomic;
  // kFlush (ibv_wr_flush) targets rdma.remote_addr/rkey; `type` is the FETH
  // placement type (protocol::feth::kGlobal | kPersistent), `level` its
  // selectivity level (kRange: [remote_addr, +length), kMemoryRegion).
  struct Flush {
    uint32_t length = 0;
    uint8_t type = 0;
    uint8_t level = 0;
  } flush;
  struct Ud {
    AhHandle ah = kInvalidHandle;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  } ud;
  // XRC INI: the XRC SRQ the message is for at the target (the XRCETH;
  // ibv_send_wr.qp_type.xrc.remote_srqn, ibv_wr_set_xrc_srqn).
  uint32_t remote_srqn = 0;
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

  bool signaled() const { return send_flags & send_flags::kSignaled; }
  bool solicited() const { return send_flags & send_flags::kSolicited; }
  bool is_inline() const { return send_flags & send_flags::kInline; }
  bool fence() const { return send_flags & send_flags::kFence; }
  // Processed by the RNIC itself, nothing on the wire.
  bool local() const {
    return opcode == WrOpcode::kLocalInv || opcode == WrOpcode::kBindMw;
  }
};

// ibv_send_wr, as posted. With send_flags::kInline the payload is
// inline_data and sg_list is not used by the engines (the post path gathers
// it in).
struct SendWr : SendWrHeader {
  SgList sg_list;
  InlineData inline_data;

  std::span<const uint8_t> InlinePayload() const { return inline_data.span(); }
  // Bytes the request moves: inline payload or the SG list's sum.
  uint64_t PayloadLength() const {
    return is_inline() ? inline_data.size() : sg_list.TotalLength();
  }
};

// ibv_recv_wr.
struct RecvWr {
  uint64_t wr_id = 0;
  SgList sg_list;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_WORK_REQUEST_H_
