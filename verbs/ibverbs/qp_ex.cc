#include "verbs/ibverbs/qp_ex.h"

#include <arpa/inet.h>

#include <cstring>

#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/send_traits.h"

namespace rocemu::ibverbs {
namespace {

using verbs::SqSlot;

// Starts the next WR of the batch in the slot after the last one built;
// nullptr (and the batch's error set) when the ring is full, the opcode is
// not allowed or an earlier WR failed.
SqSlot* Begin(ibv_qp_ex* qpx, int opcode) {
  QpImpl* q = Qp(qpx);
  q->wr_cur = nullptr;
  if (q->wr_err != 0) return nullptr;
  if (!verbs::client::SendOpcodeAllowed(q->rq->qp_type, opcode)) {
    q->wr_err = EINVAL;
    return nullptr;
  }
  // A send queue of no entries (max_send_wr 0) has a ring slot it never
  // fills.
  auto* s =
      q->rq->cap.max_send_wr == 0
          ? nullptr
          : static_cast<SqSlot*>(q->rq->sq.ProducerSlotAhead(q->wr_count));
  if (s == nullptr) {
    q->wr_err = ENOMEM;
    return nullptr;
  }
  rocemu_qp* r = q->rq;
  r->sq_wr_ids[(r->sq.produced() + q->wr_count) & r->sq_wr_mask] = qpx->wr_id;
  ++q->wr_count;
  s->wr_id = qpx->wr_id;
  s->opcode = static_cast<uint8_t>(opcode);
  s->send_flags = qpx->wr_flags;
  s->imm_data = 0;
  s->invalidate_rkey = 0;
  s->remote_srqn = 0;
  s->num_sge = 0;
  s->inline_len = 0;
  if ((s->send_flags & IBV_SEND_INLINE) != 0) {
    s->send_flags &= ~static_cast<uint32_t>(IBV_SEND_INLINE);
  }
  q->wr_cur = s;
  return s;
}

void Fail(ibv_qp_ex* qpx, int err) {
  QpImpl* q = Qp(qpx);
  if (q->wr_err == 0) q->wr_err = err;
}

void WrStart(ibv_qp_ex* qpx) {
  QpImpl* q = Qp(qpx);
  q->rq->sq_lock.lock();
  q->wr_count = 0;
  q->wr_cur = nullptr;
  q->wr_err = 0;
  if (!verbs::client::PostSendStateOk(q->rq)) q->wr_err = EINVAL;
  if (Dead(q->ctx)) q->wr_err = EIO;
}

int WrComplete(ibv_qp_ex* qpx) {
  QpImpl* q = Qp(qpx);
  const int err = q->wr_err;
  if (err == 0) q->rq->sq.PublishN(q->wr_count);
  if (err == 0 && q->wr_count > 0) {
    verbs::client::RingDoorbell(q->rq->ctx, q->rq->sq, verbs::DoorbellKind::kSq,
                                q->rq->qpn);
  }
  q->wr_count = 0;
  q->wr_cur = nullptr;
  q->rq->sq_lock.unlock();
  return err;
}

void WrAbort(ibv_qp_ex* qpx) {
  QpImpl* q = Qp(qpx);
  q->wr_count = 0;
  q->wr_cur = nullptr;
  q->rq->sq_lock.unlock();
}

void Rdma(ibv_qp_ex* qpx, int op, uint32_t rkey, uint64_t remote_addr) {
  if (SqSlot* s = Begin(qpx, op)) {
    s->rkey = rkey;
    s->remote_addr = remote_addr;
  }
}

void WrRdmaWrite(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  Rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr);
}

void WrRdmaWriteImm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr,
                    __be32 imm_data) {
  Rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr);
  if (SqSlot* s = Qp(qpx)->wr_cur) s->imm_data = ntohl(imm_data);
}

void WrRdmaRead(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  Rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr);
}

void WrAtomicCmpSwp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr,
                    uint64_t compare, uint64_t swap) {
  if (SqSlot* s = Begin(qpx, IBV_WR_ATOMIC_CMP_AND_SWP)) {
    s->rkey = rkey;
    s->remote_addr = remote_addr;
    s->compare_add = compare;
    s->swap = swap;
  }
}

void WrAtomicFetchAdd(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr,
                      uint64_t add) {
  if (SqSlot* s = Begin(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD)) {
    s->rkey = rkey;
    s->remote_addr = remote_addr;
    s->compare_add = add;
    s->swap = 0;
  }
}

void WrSend(ibv_qp_ex* qpx) { Begin(qpx, IBV_WR_SEND); }

void WrSendImm(ibv_qp_ex* qpx, __be32 imm_data) {
  if (SqSlot* s = Begin(qpx, IBV_WR_SEND_WITH_IMM)) {
    s->imm_data = ntohl(imm_data);
  }
}

void WrSendInv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  if (SqSlot* s = Begin(qpx, IBV_WR_SEND_WITH_INV)) {
    s->invalidate_rkey = invalidate_rkey;
  }
}

void WrSendTso(ibv_qp_ex* qpx, void*, uint16_t, uint16_t) {
  Fail(qpx, EOPNOTSUPP);
}
void WrBindMw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey,
              const ibv_mw_bind_info* info) {
  if (mw == nullptr || info == nullptr || mw->type != IBV_MW_TYPE_2) {
    Fail(qpx, EINVAL);
    return;
  }
  if (SqSlot* s = Begin(qpx, IBV_WR_BIND_MW)) {
    ibv_send_wr wr{};
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info = *info;
    IbvSendTraits::FillBind(wr, s);
  }
}
void WrLocalInv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  if (SqSlot* s = Begin(qpx, IBV_WR_LOCAL_INV)) {
    s->invalidate_rkey = invalidate_rkey;
  }
}
// The 8 bytes are copied now, as rdma-core documents: the caller may reuse
// `atomic_wr` once this returns.
void WrAtomicWrite(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr,
                   const void* atomic_wr) {
  if (atomic_wr == nullptr) {
    Fail(qpx, EINVAL);
    return;
  }
  if (SqSlot* s = Begin(qpx, IBV_WR_ATOMIC_WRITE)) {
    s->rkey = rkey;
    s->remote_addr = remote_addr;
    std::memcpy(&s->swap, atomic_wr, 8);
  }
}

// rdma-core 45's ibv_wr_flush (IBV_WR_FLUSH = 14): `type` the placement
// types (IB_FLUSH_GLOBAL 1, IB_FLUSH_PERSISTENT 2), `level` the selectivity
// (IB_FLUSH_RANGE 0, IB_FLUSH_MR 1). A length the RETH cannot carry is
// EINVAL; the rest is checked when the request executes.
void WrFlush(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, size_t len,
             uint8_t type, uint8_t level) {
  if (len > UINT32_MAX) {
    Fail(qpx, EINVAL);
    return;
  }
  if (SqSlot* s = Begin(qpx, ROCEMU_WR_FLUSH)) {
    s->rkey = rkey;
    s->remote_addr = remote_addr;
    s->compare_add = len;
    s->swap = type | static_cast<uint64_t>(level) << 8;
  }
}
void WrSetXrcSrqn(ibv_qp_ex* qpx, uint32_t remote_srqn) {
  SqSlot* s = Qp(qpx)->wr_cur;
  if (s == nullptr) return;
  if (qpx->qp_base.qp_type != IBV_QPT_XRC_SEND) {
    Fail(qpx, EINVAL);
    return;
  }
  s->remote_srqn = remote_srqn;
}

void WrSetUdAddr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn,
                 uint32_t remote_qkey) {
  SqSlot* s = Qp(qpx)->wr_cur;
  if (s == nullptr) return;
  if (ah == nullptr) {
    Fail(qpx, EINVAL);
    return;
  }
  s->ah = Ah(ah)->ra->handle;
  s->remote_qpn = remote_qpn;
  s->remote_qkey = remote_qkey;
}

void WrSetSge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  SqSlot* s = Qp(qpx)->wr_cur;
  if (s == nullptr) return;
  s->num_sge = 1;
  s->sge[0] = {addr, length, lkey};
}

void WrSetSgeList(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg_list) {
  QpImpl* q = Qp(qpx);
  SqSlot* s = q->wr_cur;
  if (s == nullptr) return;
  if (num_sge > q->rq->cap.max_send_sge) {
    Fail(qpx, EINVAL);
    return;
  }
  s->num_sge = static_cast<uint8_t>(num_sge);
  for (size_t i = 0; i < num_sge; ++i) {
    s->sge[i] = {sg_list[i].addr, sg_list[i].length, sg_list[i].lkey};
  }
}

void WrSetInlineDataList(ibv_qp_ex* qpx, size_t num_buf,
                         const ibv_data_buf* buf_list) {
  QpImpl* q = Qp(qpx);
  SqSlot* s = q->wr_cur;
  if (s == nullptr) return;
  uint64_t total = 0;
  for (size_t i = 0; i < num_buf; ++i) total += buf_list[i].length;
  if (total > q->rq->cap.max_inline_data || total > nic::kMaxInlineData) {
    Fail(qpx, EINVAL);
    return;
  }
  uint32_t off = 0;
  for (size_t i = 0; i < num_buf; ++i) {
    std::memcpy(s->inline_data + off, buf_list[i].addr, buf_list[i].length);
    off += static_cast<uint32_t>(buf_list[i].length);
  }
  s->inline_len = off;
  s->num_sge = 0;
  s->send_flags |= IBV_SEND_INLINE;
}

void WrSetInlineData(ibv_qp_ex* qpx, void* addr, size_t length) {
  const ibv_data_buf b{addr, length};
  WrSetInlineDataList(qpx, 1, &b);
}

}  // namespace

uint64_t SupportedSendOps(ibv_qp_type type) {
  if (type == IBV_QPT_RAW_PACKET) return IBV_QP_EX_WITH_SEND;  // whole frames
  uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
  const bool rc = type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
  if (type == IBV_QPT_UC || rc) {
    ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
           IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
  }
  if (rc) {
    ops |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
  }
  // XRC has no ATOMIC WRITE or FLUSH opcode.
  if (type == IBV_QPT_RC) ops |= IBV_QP_EX_WITH_ATOMIC_WRITE | kQpExWithFlush;
  return ops;
}

void FillQpEx(QpImpl* q) {
  ibv_qp_ex& x = q->qpx;
  x.comp_mask = 0;
  x.wr_atomic_cmp_swp = WrAtomicCmpSwp;
  x.wr_atomic_fetch_add = WrAtomicFetchAdd;
  x.wr_bind_mw = WrBindMw;
  x.wr_local_inv = WrLocalInv;
  x.wr_rdma_read = WrRdmaRead;
  x.wr_rdma_write = WrRdmaWrite;
  x.wr_rdma_write_imm = WrRdmaWriteImm;
  x.wr_send = WrSend;
  x.wr_send_imm = WrSendImm;
  x.wr_send_inv = WrSendInv;
  x.wr_send_tso = WrSendTso;
  x.wr_set_ud_addr = WrSetUdAddr;
  x.wr_set_xrc_srqn = WrSetXrcSrqn;
  x.wr_set_inline_data = WrSetInlineData;
  x.wr_set_inline_data_list = WrSetInlineDataList;
  x.wr_set_sge = WrSetSge;
  x.wr_set_sge_list = WrSetSgeList;
  x.wr_start = WrStart;
  x.wr_complete = WrComplete;
  x.wr_abort = WrAbort;
  x.wr_atomic_write = WrAtomicWrite;
  q->wr_flush = WrFlush;
}

}  // namespace rocemu::ibverbs
