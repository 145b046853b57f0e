// Shared receive queues: create (plain, and the basic and tag-matching
// types of ibv_create_srq_ex), modify (limit), query, destroy,
// post_srq_recv, and a TM SRQ's post_srq_ops.
#include <cstring>

#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {
namespace {

int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  SrqImpl* s = Srq(srq);
  if (Dead(s->ctx)) {
    *bad_wr = wr;
    return EIO;
  }
  return verbs::client::PostRecvChain(
      s->rs->ctx, verbs::DoorbellKind::kSrq, s->rs->handle, s->rs->ring,
      s->rs->lock, s->rs->max_sge, s->rs->max_wr, wr, bad_wr);
}

// ibv_ops_wr, one at a time: each is one request to the daemon, which
// completes it at once (so max_ops is never outstanding).
int PostSrqOps(ibv_srq* srq, ibv_ops_wr* op, ibv_ops_wr** bad_op) {
  SrqImpl* s = Srq(srq);
  for (; op != nullptr; op = op->next) {
    int err = Dead(s->ctx) ? EIO : 0;
    if (err == 0) {
      rocemu_srq_op r{};
      r.wr_id = op->wr_id;
      r.opcode = op->opcode;
      r.flags = op->flags;
      r.unexpected_cnt = op->tm.unexpected_cnt;
      r.handle = op->tm.handle;
      if (op->opcode == IBV_WR_TAG_ADD) {
        r.recv_wr_id = op->tm.add.recv_wr_id;
        r.sg_list = reinterpret_cast<rocemu_sge*>(op->tm.add.sg_list);
        r.num_sge = op->tm.add.num_sge;
        r.tag = op->tm.add.tag;
        r.mask = op->tm.add.mask;
      }
      uint32_t handle = 0;
      err = rocemu_post_srq_op(s->rs, &r, &handle);
      if (err == 0 && op->opcode == IBV_WR_TAG_ADD) op->tm.handle = handle;
    }
    if (err != 0) {
      *bad_op = op;
      return err;
    }
  }
  return 0;
}

// ibv_srq for a daemon SRQ `make` creates (nullptr: it failed, errno set).
template <typename Make>
ibv_srq* WrapSrq(ibv_pd* pd, void* srq_context, ibv_srq_attr* attr, Make make) {
  CtxImpl* ctx = Ctx(pd->context);
  if (Dead(ctx)) return FailNull<ibv_srq>(EIO);
  rocemu_srq_init_attr ra{};
  auto* s = new SrqImpl{};
  ra.srq_context = s;
  ra.attr = {attr->max_wr, attr->max_sge, attr->srq_limit};
  s->rs = make(&ra);
  if (s->rs == nullptr) {
    delete s;
    return nullptr;
  }
  attr->max_wr = ra.attr.max_wr;
  attr->max_sge = ra.attr.max_sge;
  s->ctx = ctx;
  ibv_srq& b = s->srq;
  b.context = pd->context;
  b.srq_context = srq_context;
  b.pd = pd;
  b.handle = s->rs->handle;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  return &b;
}

ibv_srq* CreateSrq(ibv_pd* pd, void* srq_context, ibv_srq_attr* attr) {
  return WrapSrq(pd, srq_context, attr, [&](rocemu_srq_init_attr* ra) {
    return rocemu_create_srq(Pd(pd)->rp, ra);
  });
}

// IBV_SRQT_TM: a PD, a CQ of this context and the matching list's sizes.
ibv_srq* CreateTmSrq(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  constexpr uint32_t kNeeded =
      IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
  if ((attr->comp_mask & kNeeded) != kNeeded || attr->pd == nullptr ||
      attr->pd->context != context || attr->cq == nullptr ||
      attr->cq->context != context) {
    return FailNull<ibv_srq>(EINVAL);
  }
  rocemu_cq* cq = Cq(attr->cq)->rc;
  return WrapSrq(attr->pd, attr->srq_context, &attr->attr,
                 [&](rocemu_srq_init_attr* ra) {
                   return rocemu_create_tm_srq(Pd(attr->pd)->rp, cq, ra,
                                               attr->tm_cap.max_num_tags,
                                               attr->tm_cap.max_ops);
                 });
}

ibv_srq* CreateSrqEx(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  constexpr uint32_t kKnown = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                              IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
                              IBV_SRQ_INIT_ATTR_TM;
  if ((attr->comp_mask & ~kKnown) != 0) return FailNull<ibv_srq>(EINVAL);
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0) {
    switch (attr->srq_type) {
      case IBV_SRQT_BASIC:
        break;
      case IBV_SRQT_XRC:
        return CreateXrcSrq(context, attr);
      case IBV_SRQT_TM:
        return CreateTmSrq(context, attr);
      default:
        return FailNull<ibv_srq>(EINVAL);
    }
  }
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) == 0 || attr->pd == nullptr ||
      attr->pd->context != context) {
    return FailNull<ibv_srq>(EINVAL);
  }
  return CreateSrq(attr->pd, attr->srq_context, &attr->attr);
}

}  // namespace

void FillSrqOps(CtxImpl* ctx) {
  ctx->vctx.context.ops.post_srq_recv = PostSrqRecv;
  ctx->vctx.create_srq_ex = CreateSrqEx;
  ctx->vctx.post_srq_ops = PostSrqOps;
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_srq* rocemu_ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* srq_init_attr) {
  return CreateSrq(pd, srq_init_attr->srq_context, &srq_init_attr->attr);
}

int rocemu_ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* srq_attr,
                          int srq_attr_mask) {
  SrqImpl* s = Srq(srq);
  if (Dead(s->ctx)) return EIO;
  rocemu_srq_attr r{srq_attr->max_wr, srq_attr->max_sge, srq_attr->srq_limit};
  return rocemu_modify_srq(s->rs, &r, srq_attr_mask);
}

int rocemu_ibv_query_srq(ibv_srq* srq, ibv_srq_attr* srq_attr) {
  SrqImpl* s = Srq(srq);
  if (Dead(s->ctx)) return EIO;
  rocemu_srq_attr r{};
  const int err = rocemu_query_srq(s->rs, &r);
  if (err != 0) return err;
  srq_attr->max_wr = r.max_wr;
  srq_attr->max_sge = r.max_sge;
  srq_attr->srq_limit = r.srq_limit;
  return 0;
}

int rocemu_ibv_destroy_srq(ibv_srq* srq) {
  SrqImpl* s = Srq(srq);
  WaitAcked(&srq->mutex, &srq->cond, &srq->events_completed,
            s->events_reported);
  const int err = rocemu_destroy_srq(s->rs);
  if (err != 0) return err;
  pthread_mutex_destroy(&srq->mutex);
  pthread_cond_destroy(&srq->cond);
  delete s;
  return 0;
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_create_srq);
ROCEMU_IBV_1_1(ibv_modify_srq);
ROCEMU_IBV_1_1(ibv_query_srq);
ROCEMU_IBV_1_1(ibv_destroy_srq);
