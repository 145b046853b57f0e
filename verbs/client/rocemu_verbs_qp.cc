// The rocemu C API: queue pairs, address handles and shared receive queues.
#include <arpa/inet.h>
#include <errno.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>

#include "verbs/client/client_control.h"
#include "verbs/client/client_datapath.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/attr_copy.h"
#include "verbs/wire/ring_slots.h"

namespace wire = rocemu::verbs::wire;
using namespace rocemu::verbs::client;  // NOLINT: the library's own internals
using rocemu::verbs::RqSlot;
using rocemu::verbs::ShmRing;
using rocemu::verbs::SqSlot;

namespace rocemu::verbs::client {

rocemu_srq* AttachSrq(rocemu_pd* pd, uint32_t handle,
                      const wire::WireSrqAttr& attr, int ring_fd,
                      rocemu_srq_init_attr* init) {
  absl::StatusOr<ShmRing> ring =
      ShmRing::Attach(ring_fd, sizeof(RqSlot), std::bit_ceil(attr.max_wr));
  if (!ring.ok()) {
    Handle(pd->ctx, wire::MsgType::kDestroySrq, handle);
    return Fail<rocemu_srq>(EPROTO);
  }
  ring->CloseFd();
  init->attr = {attr.max_wr, attr.max_sge, attr.srq_limit};
  auto* srq = new rocemu_srq{};
  srq->ctx = pd->ctx;
  srq->pd = pd;
  srq->handle = handle;
  srq->srq_context = init->srq_context;
  srq->max_sge = attr.max_sge;
  srq->max_wr = attr.max_wr;
  srq->ring = *std::move(ring);
  std::lock_guard<std::mutex> lock(pd->ctx->mu);
  pd->ctx->srqs[srq->handle] = srq;
  return srq;
}

rocemu_qp* CreateQp(rocemu_pd* pd, rocemu_qp_init_attr* attr,
                    uint16_t wire_flags) {
  // An XRC INI QP receives nothing: its receive CQ may be missing.
  const bool ini = attr->qp_type == ROCEMU_QPT_XRC_SEND;
  if (attr->send_cq == nullptr || (attr->recv_cq == nullptr && !ini)) {
    return Fail<rocemu_qp>(EINVAL);
  }
  wire::CreateQpReq req{};
  req.flags = wire_flags;
  req.pd = pd->handle;
  req.qp_type = static_cast<uint8_t>(attr->qp_type);
  req.sq_sig_all = attr->sq_sig_all != 0;
  req.send_cq = attr->send_cq->handle;
  req.recv_cq = attr->recv_cq != nullptr ? attr->recv_cq->handle : 0;
  if (attr->srq != nullptr) {
    req.flags |= wire::kCreateQpWithSrq;
    req.srq = attr->srq->handle;
  }
  rocemu::verbs::CopyQpCap(attr->cap, &req.cap);
  wire::CreateQpResp resp{};
  int fds[2] = {-1, -1};
  const int err =
      Call(pd->ctx, wire::MsgType::kCreateQp, req, &resp, {}, {fds, 2});
  if (err != 0) return Fail<rocemu_qp>(err);
  // The capabilities granted (ibv_create_qp writes them back).
  rocemu::verbs::CopyQpCap(resp.cap, &attr->cap);
  absl::StatusOr<ShmRing> sq =
      ShmRing::Attach(fds[0], sizeof(SqSlot),
                      std::bit_ceil(std::max(attr->cap.max_send_wr, 1u)));
  absl::StatusOr<ShmRing> rq =
      ShmRing::Attach(fds[1], sizeof(RqSlot),
                      std::bit_ceil(std::max(attr->cap.max_recv_wr, 1u)));
  if (!sq.ok() || !rq.ok()) {
    Handle(pd->ctx, wire::MsgType::kDestroyQp, resp.qpn);
    return Fail<rocemu_qp>(EPROTO);
  }
  sq->CloseFd();
  rq->CloseFd();
  auto* qp = new rocemu_qp{};
  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->qpn = resp.qpn;
  qp->qp_type = attr->qp_type;
  qp->state.store((wire_flags & wire::kCreateQpToInit) != 0 ? ROCEMU_QPS_INIT
                                                            : ROCEMU_QPS_RESET,
                  std::memory_order_relaxed);
  qp->cap = attr->cap;
  qp->sq = *std::move(sq);
  qp->rq = *std::move(rq);
  // The ring plus the RNIC's own queue (max_send_wr, at most the ring's
  // capacity) bound what may be outstanding (client_flush.h).
  qp->sq_wr_mask = 2 * uint64_t{qp->sq.capacity()} - 1;
  qp->sq_wr_ids = std::make_unique<uint64_t[]>(qp->sq_wr_mask + 1);
  qp->srq = attr->srq;
  qp->send_cq = attr->send_cq;
  qp->recv_cq = attr->recv_cq;
  std::lock_guard<std::mutex> lock(pd->ctx->mu);
  pd->ctx->qps[qp->qpn] = qp;
  return qp;
}

}  // namespace rocemu::verbs::client

extern "C" {

rocemu_qp* rocemu_create_qp(rocemu_pd* pd, rocemu_qp_init_attr* attr) {
  return rocemu::verbs::client::CreateQp(pd, attr, 0);
}

int rocemu_modify_qp(rocemu_qp* qp, rocemu_qp_attr* attr, int attr_mask) {
  wire::ModifyQpReq req{};
  req.qpn = qp->qpn;
  req.attr_mask = static_cast<uint32_t>(attr_mask);
  wire::WireQpAttr& w = req.attr;
  rocemu::verbs::CopyQpAttrScalars(*attr, &w);
  w.path_mtu = static_cast<uint8_t>(attr->path_mtu);
  rocemu::verbs::CopyQpCap(attr->cap, &w.cap);
  ToWireAh(attr->ah_attr, &w.ah_attr);
  const int err = RetryWhileResolving([&] {
    return Call<wire::ModifyQpReq, wire::Empty>(
        qp->ctx, wire::MsgType::kModifyQp, req, nullptr);
  });
  if (err == 0 && (attr_mask & ROCEMU_QP_STATE) != 0) {
    qp->state = attr->qp_state;
    if (attr->qp_state == ROCEMU_QPS_RESET) {
      // The daemon moved every completion of the QP into the rings before
      // answering; withdraw them.
      // (An XRC TGT QP has no CQs, an XRC INI QP may have no receive CQ.)
      if (qp->send_cq != nullptr) WithdrawCompletions(qp->send_cq, qp->qpn);
      if (qp->recv_cq != nullptr && qp->recv_cq != qp->send_cq) {
        WithdrawCompletions(qp->recv_cq, qp->qpn);
      }
    }
  }
  return err;
}

int rocemu_query_qp(rocemu_qp* qp, rocemu_qp_attr* attr, int attr_mask) {
  (void)attr_mask;  // everything is returned
  const wire::HandleReq req{qp->qpn, 0};
  wire::QueryQpResp resp{};
  const int err = Call(qp->ctx, wire::MsgType::kQueryQp, req, &resp);
  if (err != 0) return err;
  const wire::WireQpAttr& w = resp.attr;
  *attr = rocemu_qp_attr{};
  rocemu::verbs::CopyQpAttrScalars(w, attr);
  attr->path_mtu = w.path_mtu;
  rocemu::verbs::CopyQpCap(w.cap, &attr->cap);
  FromWireAh(w.ah_attr, &attr->ah_attr);
  return 0;
}

int rocemu_destroy_qp(rocemu_qp* qp) {
  const int err =
      Released(qp->ctx, Handle(qp->ctx, wire::MsgType::kDestroyQp, qp->qpn));
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(qp->ctx->mu);
    qp->ctx->qps.erase(qp->qpn);
  }
  delete qp;
  return 0;
}

uint32_t rocemu_qp_num(const rocemu_qp* qp) { return qp->qpn; }

namespace {
int Mcast(rocemu_qp* qp, const uint8_t gid[16], wire::MsgType type) {
  wire::McastReq req{};
  req.qpn = qp->qpn;
  std::memcpy(req.gid, gid, sizeof(req.gid));
  return Call<wire::McastReq, wire::Empty>(qp->ctx, type, req, nullptr);
}
}  // namespace

int rocemu_attach_mcast(rocemu_qp* qp, const uint8_t gid[16]) {
  return Mcast(qp, gid, wire::MsgType::kAttachMcast);
}

int rocemu_detach_mcast(rocemu_qp* qp, const uint8_t gid[16]) {
  return Mcast(qp, gid, wire::MsgType::kDetachMcast);
}

int rocemu_create_flow(rocemu_qp* qp, const rocemu_flow_rule* rule,
                       uint32_t* handle) {
  wire::CreateFlowReq req{};
  req.qpn = qp->qpn;
  req.type = rule->type;
  req.layers = rule->layers;
  req.priority = rule->priority;
  static_assert(sizeof(req.value) == sizeof(rule->value));
  std::memcpy(req.value, rule->value, sizeof(req.value));
  std::memcpy(req.mask, rule->mask, sizeof(req.mask));
  wire::HandleResp resp{};
  const int err = Call<wire::CreateFlowReq, wire::HandleResp>(
      qp->ctx, wire::MsgType::kCreateFlow, req, &resp);
  if (err == 0) *handle = resp.handle;
  return err;
}

int rocemu_destroy_flow(rocemu_context* ctx, uint32_t handle) {
  return Released(ctx, Handle(ctx, wire::MsgType::kDestroyFlow, handle));
}

int rocemu_set_rss(rocemu_qp* qp, uint64_t fields, const uint8_t* key,
                   uint32_t key_len, rocemu_qp* const* wqs,
                   uint32_t log_table_size) {
  wire::SetRssReq req{};
  if (key_len > sizeof(req.key) || log_table_size > 6) return EINVAL;
  req.qpn = qp->qpn;
  req.log_table_size = log_table_size;
  req.fields = fields;
  req.key_len = static_cast<uint8_t>(key_len);
  std::memcpy(req.key, key, key_len);
  for (uint32_t i = 0; i < (1u << log_table_size); ++i) {
    req.wqs[i] = wqs[i]->qpn;
  }
  return Call<wire::SetRssReq, wire::Empty>(qp->ctx, wire::MsgType::kSetRss,
                                            req, nullptr);
}

namespace {
struct RocemuSendTraits {
  static uint32_t InvalidateRkey(const rocemu_send_wr& wr) {
    return wr.invalidate_rkey;
  }
  static uint32_t RemoteSrqn(const rocemu_send_wr& wr) {
    return wr.remote_srqn;
  }
  static uint32_t AhHandle(const rocemu_send_wr& wr) {
    return wr.wr.ud.ah != nullptr ? wr.wr.ud.ah->handle : 0;
  }
  // rocemu_send_wr has no bind fields: binds come through libibverbs.
  static bool FillBind(const rocemu_send_wr&, SqSlot*) { return false; }
};
}  // namespace

int rocemu_post_send(rocemu_qp* qp, rocemu_send_wr* wr,
                     rocemu_send_wr** bad_wr) {
  return PostSendChain<RocemuSendTraits>(qp, wr, bad_wr);
}

int rocemu_post_recv(rocemu_qp* qp, rocemu_recv_wr* wr,
                     rocemu_recv_wr** bad_wr) {
  // A QP on an SRQ takes its receives from there (ibv_post_recv: EINVAL);
  // XRC QPs have no receive queue.
  if (qp->state.load(std::memory_order_relaxed) == ROCEMU_QPS_RESET ||
      qp->srq != nullptr || qp->qp_type == ROCEMU_QPT_XRC_SEND ||
      qp->qp_type == ROCEMU_QPT_XRC_RECV) {
    *bad_wr = wr;
    return EINVAL;
  }
  return PostRecvChain(qp->ctx, rocemu::verbs::DoorbellKind::kRq, qp->qpn,
                       qp->rq, qp->rq_lock, qp->cap.max_recv_sge,
                       qp->cap.max_recv_wr, wr, bad_wr);
}

rocemu_ah* rocemu_create_ah(rocemu_pd* pd, rocemu_ah_attr* attr) {
  wire::CreateAhReq req{};
  req.pd = pd->handle;
  ToWireAh(*attr, &req.attr);
  wire::HandleResp resp{};
  const int err = RetryWhileResolving(
      [&] { return Call(pd->ctx, wire::MsgType::kCreateAh, req, &resp); });
  if (err != 0) return Fail<rocemu_ah>(err);
  return new rocemu_ah{pd, resp.handle};
}

int rocemu_destroy_ah(rocemu_ah* ah) {
  const int err = Released(
      ah->pd->ctx, Handle(ah->pd->ctx, wire::MsgType::kDestroyAh, ah->handle));
  if (err == 0) delete ah;
  return err;
}

rocemu_srq* rocemu_create_srq(rocemu_pd* pd, rocemu_srq_init_attr* attr) {
  wire::CreateSrqReq req{};
  req.pd = pd->handle;
  req.attr = {attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  wire::CreateSrqResp resp{};
  int ring_fd = -1;
  const int err =
      Call(pd->ctx, wire::MsgType::kCreateSrq, req, &resp, {}, {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_srq>(err);
  return AttachSrq(pd, resp.srq, resp.attr, ring_fd, attr);
}

rocemu_srq* rocemu_create_tm_srq(rocemu_pd* pd, rocemu_cq* cq,
                                 rocemu_srq_init_attr* attr,
                                 uint32_t max_num_tags, uint32_t max_ops) {
  if (cq == nullptr) return Fail<rocemu_srq>(EINVAL);
  wire::CreateTmSrqReq req{};
  req.pd = pd->handle;
  req.cq = cq->handle;
  req.max_num_tags = max_num_tags;
  req.max_ops = max_ops;
  req.attr = {attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  wire::CreateSrqResp resp{};
  int ring_fd = -1;
  const int err =
      Call(pd->ctx, wire::MsgType::kCreateTmSrq, req, &resp, {}, {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_srq>(err);
  rocemu_srq* srq = AttachSrq(pd, resp.srq, resp.attr, ring_fd, attr);
  if (srq != nullptr) srq->tm = true;
  return srq;
}

int rocemu_post_srq_op(rocemu_srq* srq, const rocemu_srq_op* op,
                       uint32_t* handle) {
  if (!srq->tm || op->num_sge < 0 || op->num_sge > 1) return EINVAL;
  wire::PostSrqOpsReq req{};
  req.wr_id = op->wr_id;
  req.srq = srq->handle;
  req.opcode = static_cast<uint8_t>(op->opcode);
  req.num_sge = static_cast<uint8_t>(op->num_sge);
  req.flags = static_cast<uint32_t>(op->flags);
  req.unexpected_cnt = op->unexpected_cnt;
  req.handle = op->handle;
  req.recv_wr_id = op->recv_wr_id;
  req.tag = op->tag;
  req.mask = op->mask;
  if (op->num_sge == 1) {
    req.addr = op->sg_list[0].addr;
    req.length = op->sg_list[0].length;
    req.lkey = op->sg_list[0].lkey;
  }
  wire::HandleResp resp{};
  const int err = Call(srq->ctx, wire::MsgType::kPostSrqOps, req, &resp);
  if (err == 0 && handle != nullptr) *handle = resp.handle;
  return err;
}

int rocemu_modify_srq(rocemu_srq* srq, rocemu_srq_attr* attr, int attr_mask) {
  wire::ModifySrqReq req{};
  req.srq = srq->handle;
  req.attr_mask = static_cast<uint32_t>(attr_mask);
  req.attr = {attr->max_wr, attr->max_sge, attr->srq_limit};
  return Call<wire::ModifySrqReq, wire::Empty>(
      srq->ctx, wire::MsgType::kModifySrq, req, nullptr);
}

int rocemu_query_srq(rocemu_srq* srq, rocemu_srq_attr* attr) {
  const wire::HandleReq req{srq->handle, 0};
  wire::QuerySrqResp r{};
  const int err = Call(srq->ctx, wire::MsgType::kQuerySrq, req, &r);
  if (err == 0) *attr = {r.attr.max_wr, r.attr.max_sge, r.attr.srq_limit};
  return err;
}

int rocemu_destroy_srq(rocemu_srq* srq) {
  const int err = Released(
      srq->ctx, Handle(srq->ctx, wire::MsgType::kDestroySrq, srq->handle));
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(srq->ctx->mu);
    srq->ctx->srqs.erase(srq->handle);
  }
  delete srq;
  return 0;
}

int rocemu_post_srq_recv(rocemu_srq* srq, rocemu_recv_wr* wr,
                         rocemu_recv_wr** bad_wr) {
  return PostRecvChain(srq->ctx, rocemu::verbs::DoorbellKind::kSrq, srq->handle,
                       srq->ring, srq->lock, srq->max_sge, srq->max_wr, wr,
                       bad_wr);
}

}  // extern "C"
