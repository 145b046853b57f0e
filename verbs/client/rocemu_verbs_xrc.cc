// The rocemu C API: XRC domains, XRC SRQs and XRC TGT QPs (IBTA annex
// A14). The daemon holds every object; a domain opened by file is shared by
// all the processes that open that file.
#include <errno.h>

#include <bit>
#include <mutex>

#include "verbs/client/client_control.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/ring_slots.h"

namespace wire = rocemu::verbs::wire;
using namespace rocemu::verbs::client;  // NOLINT: the library's own internals
using rocemu::verbs::RqSlot;
using rocemu::verbs::ShmRing;

extern "C" {

rocemu_xrcd* rocemu_open_xrcd(rocemu_context* ctx, int fd, int oflags) {
  wire::OpenXrcdReq req{};
  req.oflags = static_cast<uint32_t>(oflags);
  wire::HandleResp resp{};
  const int err = fd >= 0 ? Call(ctx, wire::MsgType::kOpenXrcd, req, &resp,
                                 std::span<const int>(&fd, 1))
                          : Call(ctx, wire::MsgType::kOpenXrcd, req, &resp);
  if (err != 0) return Fail<rocemu_xrcd>(err);
  return new rocemu_xrcd{ctx, resp.handle};
}

int rocemu_close_xrcd(rocemu_xrcd* xrcd) {
  const int err = Released(
      xrcd->ctx, Handle(xrcd->ctx, wire::MsgType::kCloseXrcd, xrcd->handle));
  if (err != 0) return err;
  delete xrcd;
  return 0;
}

rocemu_srq* rocemu_create_xrc_srq(rocemu_pd* pd, rocemu_xrcd* xrcd,
                                  rocemu_cq* cq, rocemu_srq_init_attr* attr) {
  if (xrcd == nullptr || cq == nullptr) return Fail<rocemu_srq>(EINVAL);
  wire::CreateXrcSrqReq req{};
  req.pd = pd->handle;
  req.xrcd = xrcd->handle;
  req.cq = cq->handle;
  req.attr = {attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  wire::CreateXrcSrqResp resp{};
  int ring_fd = -1;
  const int err = Call(pd->ctx, wire::MsgType::kCreateXrcSrq, req, &resp, {},
                       {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_srq>(err);
  rocemu_srq* srq = AttachSrq(pd, resp.srq, resp.attr, ring_fd, attr);
  if (srq == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(pd->ctx->mu);
  srq->srqn = resp.srqn;
  srq->xrc = true;
  return srq;
}

int rocemu_get_srq_num(rocemu_srq* srq, uint32_t* srqn) {
  if (!srq->xrc) return EINVAL;
  *srqn = srq->srqn;
  return 0;
}

rocemu_qp* rocemu_open_xrc_tgt_qp(rocemu_xrcd* xrcd, uint32_t qpn) {
  const wire::XrcTgtQpReq req{xrcd->handle, qpn};
  wire::XrcTgtQpResp resp{};
  const int err = Call(xrcd->ctx, wire::MsgType::kXrcTgtQp, req, &resp);
  if (err != 0) return Fail<rocemu_qp>(err);
  // No rings, no CQs, no PD: the library posts nothing to it and flushes
  // nothing of it (client_flush.cc skips a QP without CQs).
  auto* qp = new rocemu_qp{};
  qp->ctx = xrcd->ctx;
  qp->qpn = resp.qpn;
  qp->qp_type = ROCEMU_QPT_XRC_RECV;
  qp->state.store(ROCEMU_QPS_RESET, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(xrcd->ctx->mu);
  xrcd->ctx->qps[qp->qpn] = qp;
  return qp;
}

}  // extern "C"
