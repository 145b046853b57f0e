// Memory windows: ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw reach these
// through the context's ops (the inline wrappers in verbs.h); type 2 binds
// and invalidations are ordinary send WRs (qp.cc, qp_ex.cc).
#include <infiniband/verbs.h>

#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/ibverbs/send_traits.h"

namespace rocemu::ibverbs {
namespace {

ibv_mw* AllocMw(ibv_pd* pd, ibv_mw_type type) {
  PdImpl* p = Pd(pd);
  if (Dead(Ctx(pd->context))) return FailNull<ibv_mw>(EIO);
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
    return FailNull<ibv_mw>(EINVAL);
  }
  uint32_t rkey = 0;
  if (const int err = rocemu_alloc_mw(p->rp, type, &rkey); err != 0) {
    return FailNull<ibv_mw>(err);
  }
  auto* mw = new ibv_mw{};
  mw->context = pd->context;
  mw->pd = pd;
  mw->rkey = rkey;
  mw->handle = rkey;
  mw->type = type;
  return mw;
}

int DeallocMw(ibv_mw* mw) {
  const int err = rocemu_dealloc_mw(Pd(mw->pd)->rp, mw->handle);
  if (err != 0) return err;
  delete mw;
  return 0;
}

// ibv_bind_mw (type 1): posted on the QP's send queue like any WR, with the
// window's next key, which the application sees in mw->rkey at once.
int BindMw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  QpImpl* q = Qp(qp);
  if (Dead(q->ctx)) return EIO;
  if (mw->type != IBV_MW_TYPE_1) return EINVAL;
  ibv_send_wr wr{};
  wr.wr_id = bind->wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = bind->bind_info;
  ibv_send_wr* bad = nullptr;
  const int err =
      verbs::client::PostSendChain<IbvSendTraitsT<1>>(q->rq, &wr, &bad);
  if (err == 0) mw->rkey = wr.bind_mw.rkey;
  return err;
}

}  // namespace

void FillMwOps(CtxImpl* ctx) {
  ibv_context_ops& o = ctx->vctx.context.ops;
  o.alloc_mw = AllocMw;
  o.dealloc_mw = DeallocMw;
  o.bind_mw = BindMw;
}

}  // namespace rocemu::ibverbs
