// Work queues, receive WQ indirection tables and RSS QPs (ibv_create_wq,
// ibv_create_rwq_ind_table, ibv_create_qp_ex with rx_hash_conf), for raw
// packet QPs. A WQ is a receive-only raw packet QP of the daemon (its
// number is the QP's, its receives go through the same ring); a table is
// the library's list of WQs; an RSS QP is a raw packet QP with neither
// queue whose flow rules spread frames over its table's WQs by a Toeplitz
// hash in the RNIC (nic/rss.h).
#include <atomic>
#include <cerrno>
#include <new>
#include <vector>

#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/dropin.h"

extern "C" int rocemu_ibv_destroy_qp(ibv_qp* qp);  // qp.cc

namespace rocemu::ibverbs {
namespace {

struct WqImpl {
  ibv_wq wq;  // what applications hold
  rocemu_qp* rq;
  CtxImpl* ctx;
};
WqImpl* Wq(ibv_wq* w) { return reinterpret_cast<WqImpl*>(w); }

struct IndTableImpl {
  ibv_rwq_ind_table table;  // what applications hold
  uint32_t log_size;
  std::vector<ibv_wq*> wqs;
};
IndTableImpl* IndTable(ibv_rwq_ind_table* t) {
  return reinterpret_cast<IndTableImpl*>(t);
}

int PostWqRecv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  WqImpl* w = Wq(wq);
  rocemu_qp* r = w->rq;
  if (Dead(w->ctx)) {
    *bad_wr = wr;
    return EIO;
  }
  return verbs::client::PostRecvChain(r->ctx, verbs::DoorbellKind::kRq, r->qpn,
                                      r->rq, r->rq_lock, r->cap.max_recv_sge,
                                      r->cap.max_recv_wr, wr, bad_wr);
}

ibv_wq* CreateWq(ibv_context* context, ibv_wq_init_attr* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_wq>(EIO);
  if (attr->wq_type != IBV_WQT_RQ || attr->pd == nullptr ||
      attr->cq == nullptr) {
    return FailNull<ibv_wq>(EINVAL);
  }
  // Scatter-FCS, VLAN stripping, padding, delay drop: not offered.
  if ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) != 0 &&
      attr->create_flags != 0) {
    return FailNull<ibv_wq>(EOPNOTSUPP);
  }
  rocemu_qp_init_attr ra{};
  ra.send_cq = ra.recv_cq = Cq(attr->cq)->rc;
  ra.cap.max_recv_wr = attr->max_wr;
  ra.cap.max_recv_sge = attr->max_sge;
  ra.qp_type = ROCEMU_QPT_RAW_PACKET;
  rocemu_qp* r = rocemu_create_qp(Pd(attr->pd)->rp, &ra);
  if (r == nullptr) return nullptr;
  auto* w = new (std::nothrow) WqImpl{};
  if (w == nullptr) {
    (void)rocemu_destroy_qp(r);
    return FailNull<ibv_wq>(ENOMEM);
  }
  w->rq = r;
  w->ctx = ctx;
  attr->max_wr = ra.cap.max_recv_wr;
  attr->max_sge = ra.cap.max_recv_sge;
  ibv_wq& q = w->wq;
  q.context = context;
  q.pd = attr->pd;
  q.cq = attr->cq;
  q.wq_num = r->qpn;
  q.handle = r->qpn;
  q.state = IBV_WQS_RESET;
  q.wq_type = IBV_WQT_RQ;
  q.post_recv = PostWqRecv;
  return &q;
}

// RESET, RDY (the QP in RTR: it takes frames) and ERR.
int ModifyWq(ibv_wq* wq, ibv_wq_attr* attr) {
  WqImpl* w = Wq(wq);
  if (Dead(w->ctx)) return EIO;
  if ((attr->attr_mask & IBV_WQ_ATTR_FLAGS) != 0 && attr->flags_mask != 0) {
    return EOPNOTSUPP;
  }
  if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) != 0 &&
      attr->curr_wq_state != wq->state) {
    return EINVAL;
  }
  if ((attr->attr_mask & IBV_WQ_ATTR_STATE) == 0) return 0;
  rocemu_qp_attr a{};
  a.port_num = 1;
  int err = 0;
  switch (attr->wq_state) {
    case IBV_WQS_RESET:
      a.qp_state = ROCEMU_QPS_RESET;
      err = rocemu_modify_qp(w->rq, &a, ROCEMU_QP_STATE);
      break;
    case IBV_WQS_RDY:
      if (wq->state == IBV_WQS_RDY) return 0;
      if (wq->state != IBV_WQS_RESET) return EINVAL;
      a.qp_state = ROCEMU_QPS_INIT;
      err = rocemu_modify_qp(w->rq, &a, ROCEMU_QP_STATE | ROCEMU_QP_PORT);
      if (err == 0) {
        a.qp_state = ROCEMU_QPS_RTR;
        err = rocemu_modify_qp(w->rq, &a, ROCEMU_QP_STATE);
      }
      break;
    case IBV_WQS_ERR:
      a.qp_state = ROCEMU_QPS_ERR;
      err = rocemu_modify_qp(w->rq, &a, ROCEMU_QP_STATE);
      break;
    default:
      return EINVAL;
  }
  if (err == 0) wq->state = attr->wq_state;
  return err;
}

int DestroyWq(ibv_wq* wq) {
  WqImpl* w = Wq(wq);
  const int err = rocemu_destroy_qp(w->rq);  // EBUSY while a table uses it
  if (err != 0) return err;
  pthread_mutex_destroy(&wq->mutex);
  pthread_cond_destroy(&wq->cond);
  delete w;
  return 0;
}

ibv_rwq_ind_table* CreateIndTable(ibv_context* context,
                                  ibv_rwq_ind_table_init_attr* attr) {
  if (Dead(Ctx(context))) return FailNull<ibv_rwq_ind_table>(EIO);
  if (attr->comp_mask != 0 || attr->log_ind_tbl_size > 6 ||
      attr->ind_tbl == nullptr) {
    return FailNull<ibv_rwq_ind_table>(EINVAL);
  }
  auto* t = new (std::nothrow) IndTableImpl{};
  if (t == nullptr) return FailNull<ibv_rwq_ind_table>(ENOMEM);
  t->log_size = attr->log_ind_tbl_size;
  for (uint32_t i = 0; i < (1u << t->log_size); ++i) {
    if (attr->ind_tbl[i] == nullptr) {
      delete t;
      return FailNull<ibv_rwq_ind_table>(EINVAL);
    }
    t->wqs.push_back(attr->ind_tbl[i]);
  }
  static std::atomic<int> next{1};
  t->table.context = context;
  t->table.ind_tbl_handle = t->table.ind_tbl_num = next++;
  return &t->table;
}

int DestroyIndTable(ibv_rwq_ind_table* table) {
  delete IndTable(table);
  return 0;
}

}  // namespace

ibv_qp* CreateRssQp(ibv_context* context, ibv_qp_init_attr_ex* attr,
                    ibv_qp* (*create_qp_ex)(ibv_context*,
                                            ibv_qp_init_attr_ex*)) {
  constexpr uint32_t kNeeded =
      IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE;
  if ((attr->comp_mask & kNeeded) != kNeeded ||
      attr->qp_type != IBV_QPT_RAW_PACKET || attr->rwq_ind_tbl == nullptr) {
    return FailNull<ibv_qp>(EINVAL);
  }
  const ibv_rx_hash_conf& h = attr->rx_hash_conf;
  if (h.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
      (h.rx_hash_fields_mask & ~uint64_t{0xFF}) != 0) {
    return FailNull<ibv_qp>(EOPNOTSUPP);  // IPsec SPI, inner headers
  }
  if (h.rx_hash_key_len < 4 || h.rx_hash_key_len > 40 ||
      h.rx_hash_key == nullptr) {
    return FailNull<ibv_qp>(EINVAL);
  }
  IndTableImpl* t = IndTable(attr->rwq_ind_tbl);
  // An RSS QP has neither queue; the daemon's QP borrows the first WQ's CQ,
  // which it never completes into.
  ibv_qp_init_attr_ex q = *attr;
  q.send_cq = q.recv_cq = t->wqs[0]->cq;
  q.cap = ibv_qp_cap{};
  q.srq = nullptr;
  q.comp_mask &= ~kNeeded;
  ibv_qp* qp = create_qp_ex(context, &q);
  if (qp == nullptr) return nullptr;
  std::vector<rocemu_qp*> wqs;
  for (ibv_wq* w : t->wqs) wqs.push_back(Wq(w)->rq);
  const int err =
      rocemu_set_rss(Qp(qp)->rq, h.rx_hash_fields_mask, h.rx_hash_key,
                     h.rx_hash_key_len, wqs.data(), t->log_size);
  if (err != 0) {
    (void)rocemu_ibv_destroy_qp(qp);
    return FailNull<ibv_qp>(err);
  }
  qp->send_cq = qp->recv_cq = nullptr;
  attr->cap = ibv_qp_cap{};
  return qp;
}

void FillWqOps(CtxImpl* ctx) {
  verbs_context& v = ctx->vctx;
  v.create_wq = CreateWq;
  v.modify_wq = ModifyWq;
  v.destroy_wq = DestroyWq;
  v.create_rwq_ind_table = CreateIndTable;
  v.destroy_rwq_ind_table = DestroyIndTable;
}

}  // namespace rocemu::ibverbs
