// XRC (IBTA annex A14) in the drop-in libibverbs: ibv_open_xrcd and
// ibv_close_xrcd, XRC SRQs (ibv_create_srq_ex with IBV_SRQT_XRC,
// ibv_get_srq_num) and XRC TGT QPs (ibv_create_qp_ex with
// IBV_QPT_XRC_RECV, ibv_open_qp). The XRC INI QP is an ordinary QP of
// qp.cc; its requests name their SRQ in qp_type.xrc.remote_srqn or
// ibv_wr_set_xrc_srqn.
#include <cerrno>
#include <cstring>

#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {
namespace {

ibv_xrcd* OpenXrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_xrcd>(EIO);
  constexpr uint32_t kKnown = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  if ((attr->comp_mask & ~kKnown) != 0) return FailNull<ibv_xrcd>(EINVAL);
  // As the kernel reads them: no fd in the mask is fd -1, no oflags 0.
  const int fd = (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) != 0 ? attr->fd : -1;
  const int oflags =
      (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) != 0 ? attr->oflags : 0;
  rocemu_xrcd* rx = rocemu_open_xrcd(ctx->rc, fd, oflags);
  if (rx == nullptr) return nullptr;
  auto* x = new XrcdImpl{};
  x->xrcd.context = context;
  x->rx = rx;
  x->ctx = ctx;
  return &x->xrcd;
}

int CloseXrcd(ibv_xrcd* xrcd) {
  XrcdImpl* x = Xrcd(xrcd);
  const int err = rocemu_close_xrcd(x->rx);
  if (err != 0) return err;
  delete x;
  return 0;
}

int GetSrqNum(ibv_srq* srq, uint32_t* srq_num) {
  return rocemu_get_srq_num(Srq(srq)->rs, srq_num);
}

// The ibv_qp of a TGT QP: no PD, CQs or SRQ; modify, query and destroy
// work as for any QP (qp.cc), posting fails.
ibv_qp* WrapTgtQp(ibv_context* context, CtxImpl* ctx, rocemu_qp* r,
                  void* qp_context) {
  auto* q = new QpImpl{};
  q->rq = r;
  q->ctx = ctx;
  r->owner = q;
  ibv_qp& b = q->qpx.qp_base;
  b.context = context;
  b.qp_context = qp_context;
  b.handle = r->qpn;
  b.qp_num = r->qpn;
  b.state = IBV_QPS_RESET;
  b.qp_type = IBV_QPT_XRC_RECV;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  return &b;
}

ibv_qp* OpenQp(ibv_context* context, ibv_qp_open_attr* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_qp>(EIO);
  constexpr uint32_t kNeeded =
      IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
  if ((attr->comp_mask & kNeeded) != kNeeded ||
      (attr->comp_mask & ~(kNeeded | IBV_QP_OPEN_ATTR_CONTEXT)) != 0 ||
      attr->xrcd == nullptr || attr->qp_type != IBV_QPT_XRC_RECV ||
      attr->qp_num == 0) {
    return FailNull<ibv_qp>(EINVAL);
  }
  rocemu_qp* r = rocemu_open_xrc_tgt_qp(Xrcd(attr->xrcd)->rx, attr->qp_num);
  if (r == nullptr) return nullptr;
  const bool with_context = (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) != 0;
  return WrapTgtQp(context, ctx, r, with_context ? attr->qp_context : nullptr);
}

}  // namespace

ibv_srq* CreateXrcSrq(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_srq>(EIO);
  constexpr uint32_t kNeeded = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                               IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if ((attr->comp_mask & kNeeded) != kNeeded ||
      (attr->comp_mask & ~kNeeded) != 0 || attr->pd == nullptr ||
      attr->xrcd == nullptr || attr->cq == nullptr ||
      attr->pd->context != context) {
    return FailNull<ibv_srq>(EINVAL);
  }
  rocemu_srq_init_attr ra{};
  auto* s = new SrqImpl{};
  ra.srq_context = s;
  ra.attr = {attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  s->rs = rocemu_create_xrc_srq(Pd(attr->pd)->rp, Xrcd(attr->xrcd)->rx,
                                Cq(attr->cq)->rc, &ra);
  if (s->rs == nullptr) {
    delete s;
    return nullptr;
  }
  attr->attr.max_wr = ra.attr.max_wr;
  attr->attr.max_sge = ra.attr.max_sge;
  s->ctx = ctx;
  ibv_srq& b = s->srq;
  b.context = context;
  b.srq_context = attr->srq_context;
  b.pd = attr->pd;
  b.handle = s->rs->handle;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  return &b;
}

ibv_qp* CreateXrcTgtQp(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_qp>(EIO);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) == 0 || attr->xrcd == nullptr) {
    return FailNull<ibv_qp>(EINVAL);
  }
  rocemu_qp* r = rocemu_open_xrc_tgt_qp(Xrcd(attr->xrcd)->rx, 0);
  if (r == nullptr) return nullptr;
  attr->cap = ibv_qp_cap{};  // no queues
  return WrapTgtQp(context, ctx, r, attr->qp_context);
}

void FillXrcOps(CtxImpl* ctx) {
  ctx->vctx.open_xrcd = OpenXrcd;
  ctx->vctx.close_xrcd = CloseXrcd;
  ctx->vctx.get_srq_num = GetSrqNum;
  ctx->vctx.open_qp = OpenQp;
}

}  // namespace rocemu::ibverbs
