// Shared receive queues. Several QPs take receive WRs from one SRQ. An XRC
// SRQ (IBV_SRQT_XRC, annex A14) also belongs to an XRC domain and has its
// own CQ: requests reach it through any XRC TGT QP of that domain, which
// names it by its SRQ number (the XRCETH), and its receive completions go
// to its CQ, not to a QP's. A tag-matching SRQ (IBV_SRQT_TM) also has its
// own CQ, and a matching list (nic/tag_list.h) besides its ordinary
// buffers, which then take the messages no tag matched. The
// application arms a limit (ibv_modify_srq with IBV_SRQ_LIMIT); when a take
// leaves fewer WRs queued than the limit, IBV_EVENT_SRQ_LIMIT_REACHED is
// raised once and the limit disarms (as IBTA and rxe do: the check happens
// when a WR is consumed, not when the limit is set).
#ifndef ROCEMU_NIC_SHARED_RECEIVE_QUEUE_H_
#define ROCEMU_NIC_SHARED_RECEIVE_QUEUE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/async_event.h"
#include "nic/device_attr.h"
#include "nic/handle_table.h"
#include "nic/handles.h"
#include "nic/pd_table.h"
#include "nic/recv_queue.h"
#include "nic/tag_list.h"
#include "nic/work_request.h"

namespace rocemu::nic {

// ibv_srq_attr.
struct SrqAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t srq_limit = 0;  // 0 = not armed
};

// ibv_srq_attr_mask.
namespace srq_attr_mask {
inline constexpr uint32_t kMaxWr = 1u << 0;
inline constexpr uint32_t kLimit = 1u << 1;
}  // namespace srq_attr_mask

class SharedReceiveQueue {
 public:
  SharedReceiveQueue(PdHandle pd, const SrqAttr& attr, ClientId owner,
                     AsyncEventQueue* events)
      : pd_(pd),
        queue_(attr.max_wr, attr.max_sge),
        limit_(attr.srq_limit),
        owner_(owner),
        events_(events) {}

  // ibv_post_srq_recv.
  PostResult Post(const RecvWr& wr) {
    return error_ ? PostResult::kInError : queue_.Post(wr);
  }
  // The WR the next message would use (nullptr: none, the responder
  // answers RNR).
  const PostedRecvWr* Front() const { return queue_.Front(); }
  // Consumes the front WR, raising the limit event if it drops the count
  // below an armed limit.
  void Pop();

  // ibv_modify_srq. IBV_SRQ_MAX_WR resizes (not below the WRs queued),
  // IBV_SRQ_LIMIT arms the limit (0 disarms; above max_wr is EINVAL).
  absl::Status Modify(const SrqAttr& attr, uint32_t mask);
  // ibv_query_srq.
  SrqAttr Query() const {
    return {queue_.capacity(), queue_.max_sge(), limit_};
  }
  // An SRQ error (IBV_EVENT_SRQ_ERR): posting fails from then on.
  void SetError();

  PdHandle pd() const { return pd_; }
  SrqHandle handle() const { return handle_; }
  // XRC: the domain (kInvalidHandle: an ordinary SRQ) and the CQ.
  bool is_xrc() const { return xrcd_ != kInvalidHandle; }
  uint32_t xrcd() const { return xrcd_; }
  CqHandle cq() const { return cq_; }
  // Tag matching: the matching list (nullptr: not a TM SRQ).
  bool is_tm() const { return tm_ != nullptr; }
  TagList* tm() { return tm_.get(); }
  const TagList* tm() const { return tm_.get(); }
  // The SRQ number an XRCETH names (ibv_get_srq_num): the handle's 24-bit
  // index; SrqTable::FindXrc maps it back.
  uint32_t srqn() const { return HandleIndex(handle_); }
  ClientId owner() const { return owner_; }
  uint32_t size() const { return queue_.size(); }
  bool in_error() const { return error_; }
  RecvQueue& queue() { return queue_; }
  uint32_t use_count() const { return use_count_; }
  void Retain() { ++use_count_; }
  void Release() {
    if (use_count_ > 0) --use_count_;
  }

 private:
  friend class SrqTable;
  PdHandle pd_;
  RecvQueue queue_;
  uint32_t limit_;
  bool error_ = false;
  uint32_t use_count_ = 0;
  SrqHandle handle_ = kInvalidHandle;
  uint32_t xrcd_ = kInvalidHandle;
  CqHandle cq_ = kInvalidHandle;
  std::unique_ptr<TagList> tm_;
  ClientId owner_;
  AsyncEventQueue* events_;
};

class SrqTable {
 public:
  SrqTable(PdTable& pds, uint32_t max_srq, uint32_t max_srq_wr,
           uint32_t max_srq_sge, AsyncEventQueue* events)
      : pds_(pds),
        max_srq_wr_(max_srq_wr),
        max_srq_sge_(max_srq_sge),
        events_(events),
        srqs_("SRQ", max_srq) {}

  // ibv_create_srq: attr.max_wr in [1, max_srq_wr], attr.max_sge in
  // [1, max_srq_sge], srq_limit <= max_wr.
  absl::StatusOr<SrqHandle> Create(ClientId client, PdHandle pd,
                                   const SrqAttr& attr);
  // ibv_create_srq_ex with IBV_SRQT_XRC: as Create, in XRC domain `xrcd`
  // with completions to `cq` (the caller checked both and holds them).
  absl::StatusOr<SrqHandle> CreateXrc(ClientId client, PdHandle pd,
                                      uint32_t xrcd, CqHandle cq,
                                      const SrqAttr& attr);
  // ibv_create_srq_ex with IBV_SRQT_TM: as Create, with a matching list of
  // `caps` (max_num_tags, max_ops; the caller checked them against the
  // device's) and completions to `cq` (the caller holds it).
  absl::StatusOr<SrqHandle> CreateTm(ClientId client, PdHandle pd, CqHandle cq,
                                     const SrqAttr& attr, const TmCaps& caps);
  // The XRC SRQ with SRQ number `srqn` (an XRCETH's), or nullptr.
  SharedReceiveQueue* FindXrc(uint32_t srqn) const {
    SharedReceiveQueue* s = srqs_.Get(srqs_.Current(MakeHandle(srqn, 0)));
    return s != nullptr && s->is_xrc() ? s : nullptr;
  }
  // ibv_destroy_srq: FailedPrecondition (EBUSY) while QPs use it.
  absl::Status Destroy(ClientId client, SrqHandle srq);
  SharedReceiveQueue* Get(SrqHandle srq) const { return srqs_.Get(srq); }
  SharedReceiveQueue* Get(SrqHandle srq, ClientId client) const {
    return srqs_.Get(srq, client);
  }
  uint32_t size() const { return srqs_.size(); }

 private:
  PdTable& pds_;
  uint32_t max_srq_wr_;
  uint32_t max_srq_sge_;
  AsyncEventQueue* events_;
  HandleTable<SharedReceiveQueue> srqs_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_SHARED_RECEIVE_QUEUE_H_
