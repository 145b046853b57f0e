// Shared receive queues of rdma_cm ids, basic and XRC. An XRC_RECV id (the
// passive side of rdma_xserver -c x) gets an XRC SRQ as librdmacm makes
// one: in the device's own XRC domain unless the caller names one (the
// domain its TGT QP uses too), and completing into the id's receive CQ,
// made here when the id has none, so that rdma_get_recv_comp finds the
// SRQ's completions.
#include <fcntl.h>

#include <cerrno>
#include <mutex>

#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {

ibv_xrcd* HoldDevXrcd(IdPriv* p) {
  std::lock_guard<std::mutex> lock(Mu());
  CmDevice* d = p->dev;
  if (d == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  if (d->xrcd == nullptr) {
    // A domain of no file: private to this process, as librdmacm's is.
    ibv_xrcd_init_attr a{};
    a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    a.fd = -1;
    a.oflags = O_CREAT;
    d->xrcd = ibv_open_xrcd(d->verbs, &a);
    if (d->xrcd == nullptr) return nullptr;
  }
  ++d->xrcd_users;
  return d->xrcd;
}

void ReleaseDevXrcd(IdPriv* p) {
  std::lock_guard<std::mutex> lock(Mu());
  CmDevice* d = p->dev;
  if (d == nullptr || d->xrcd == nullptr || --d->xrcd_users > 0) return;
  // Its TGT QPs and SRQs are gone: the daemon lets the domain go.
  (void)ibv_close_xrcd(d->xrcd);
  d->xrcd = nullptr;
  d->xrcd_users = 0;
}

}  // namespace rocemu::rdmacm

extern "C" {

using namespace rocemu::rdmacm;

int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
  if (id == nullptr || attr == nullptr || id->verbs == nullptr) {
    return Err(EINVAL);
  }
  const bool typed = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0;
  const bool xrc = typed && attr->srq_type == IBV_SRQT_XRC;
  if (typed && attr->srq_type != IBV_SRQT_BASIC && !xrc) {
    return Err(EOPNOTSUPP);
  }
  ibv_pd* pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) != 0 && attr->pd
                   ? attr->pd
                   : id->pd;
  if (pd == nullptr) return Err(EINVAL);
  if (!xrc) {
    ibv_srq_init_attr a{};
    a.srq_context = attr->srq_context;
    a.attr = attr->attr;
    ibv_srq* srq = ibv_create_srq(pd, &a);
    if (srq == nullptr) return -1;
    attr->attr = a.attr;
    id->pd = pd;
    id->srq = srq;
    return 0;
  }
  IdPriv* p = Priv(id);
  const bool dev_xrcd =
      (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) == 0 || attr->xrcd == nullptr;
  if (dev_xrcd) {
    attr->xrcd = HoldDevXrcd(p);
    if (attr->xrcd == nullptr) return -1;
  }
  // The SRQ's completions go to the id's receive CQ: the one its TGT QP
  // was given (a TGT QP itself completes nothing), else a new one.
  bool own_cq = false;
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) == 0 || attr->cq == nullptr) {
    if (id->recv_cq == nullptr) {
      if (const int err = CreateCqs(id, 0, attr->attr.max_wr); err != 0) {
        if (dev_xrcd) ReleaseDevXrcd(p);
        return Err(err);
      }
      own_cq = true;
    }
    attr->cq = id->recv_cq;
  }
  attr->pd = pd;
  attr->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  ibv_srq* srq = ibv_create_srq_ex(id->verbs, attr);
  if (srq == nullptr) {
    const int err = errno;
    if (own_cq) DestroyCqs(id);
    if (dev_xrcd) ReleaseDevXrcd(p);
    return Err(err);
  }
  if (id->pd == nullptr) id->pd = pd;
  id->srq = srq;
  p->srq_in_dev_xrcd = dev_xrcd;
  return 0;
}

int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (id == nullptr || attr == nullptr) return Err(EINVAL);
  ibv_srq_init_attr_ex ex{};
  ex.srq_context = attr->srq_context;
  ex.attr = attr->attr;
  ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
  // An XRC_RECV id's SRQ is an XRC SRQ, as librdmacm makes it.
  ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
  ex.pd = pd;
  const int ret = rdma_create_srq_ex(id, &ex);
  attr->attr = ex.attr;
  return ret;
}

void rdma_destroy_srq(rdma_cm_id* id) {
  if (id == nullptr || id->srq == nullptr) return;
  ibv_destroy_srq(id->srq);
  id->srq = nullptr;
  IdPriv* p = Priv(id);
  if (p->srq_in_dev_xrcd) {
    p->srq_in_dev_xrcd = false;
    ReleaseDevXrcd(p);
  }
  // The receive CQ an XRC_RECV id's SRQ completed into outlived its TGT QP
  // (rdma_destroy_qp left it): it goes now. A QP still there keeps its CQs
  // until rdma_destroy_qp.
  if (id->qp == nullptr) DestroyCqs(id);
}

}  // extern "C"
