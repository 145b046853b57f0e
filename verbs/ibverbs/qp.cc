// Queue pairs (ibv_create_qp, create_qp_ex, modify/query/destroy), the
// post_send/post_recv slots, and address handles (incl. the ones built
// from a received UD completion's GRH area).
#include <arpa/inet.h>
#include <netinet/ip.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "verbs/client/client_control.h"
#include "verbs/client/client_datapath.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/ibverbs/qp_ex.h"
#include "verbs/ibverbs/send_traits.h"
#include "verbs/wire/attr_copy.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::ibverbs {
namespace {

int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  QpImpl* q = Qp(qp);
  if (Dead(q->ctx)) {
    *bad_wr = wr;
    return EIO;
  }
  if (qp->qp_type == IBV_QPT_XRC_RECV) {  // the TGT QP has no send queue
    *bad_wr = wr;
    return EINVAL;
  }
  return verbs::client::PostSendChain<IbvSendTraits>(q->rq, wr, bad_wr);
}

int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  QpImpl* q = Qp(qp);
  rocemu_qp* r = q->rq;
  if (Dead(q->ctx)) {
    *bad_wr = wr;
    return EIO;
  }
  // XRC QPs have no receive queue (the TGT QP's are its XRC SRQs').
  if (r->state.load(std::memory_order_relaxed) == ROCEMU_QPS_RESET ||
      r->srq != nullptr || qp->qp_type == IBV_QPT_XRC_SEND ||
      qp->qp_type == IBV_QPT_XRC_RECV) {
    *bad_wr = wr;
    return EINVAL;
  }
  return verbs::client::PostRecvChain(r->ctx, verbs::DoorbellKind::kRq, r->qpn,
                                      r->rq, r->rq_lock, r->cap.max_recv_sge,
                                      r->cap.max_recv_wr, wr, bad_wr);
}

ibv_qp* CreateQp(ibv_context* context, ibv_pd* pd, ibv_qp_init_attr_ex* attr,
                 uint16_t wire_flags = 0) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_qp>(EIO);
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
      attr->qp_type != IBV_QPT_UD && attr->qp_type != IBV_QPT_XRC_SEND &&
      attr->qp_type != IBV_QPT_RAW_PACKET) {
    return FailNull<ibv_qp>(EOPNOTSUPP);  // no DC QPs
  }
  // The XRC INI QP receives nothing: no receive CQ needed, no SRQ taken.
  const bool ini = attr->qp_type == IBV_QPT_XRC_SEND;
  if (attr->send_cq == nullptr || (attr->recv_cq == nullptr && !ini) ||
      (ini && attr->srq != nullptr)) {
    return FailNull<ibv_qp>(EINVAL);
  }
  if (ini) attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0;
  rocemu_qp_init_attr ra{};
  ra.send_cq = Cq(attr->send_cq)->rc;
  ra.recv_cq = attr->recv_cq != nullptr ? Cq(attr->recv_cq)->rc : nullptr;
  ra.srq = attr->srq != nullptr ? Srq(attr->srq)->rs : nullptr;
  rocemu::verbs::CopyQpCap(attr->cap, &ra.cap);
  ra.qp_type = attr->qp_type;
  ra.sq_sig_all = attr->sq_sig_all;
  rocemu_qp* r = verbs::client::CreateQp(Pd(pd)->rp, &ra, wire_flags);
  if (r == nullptr) return nullptr;
  auto* q = new QpImpl{};
  q->rq = r;
  q->ctx = ctx;
  r->owner = q;
  q->sq_sig_all = attr->sq_sig_all != 0;
  rocemu::verbs::CopyQpCap(ra.cap, &attr->cap);
  ibv_qp& b = q->qpx.qp_base;
  b.context = context;
  b.qp_context = attr->qp_context;
  b.pd = pd;
  b.send_cq = attr->send_cq;
  b.recv_cq = attr->recv_cq;
  b.srq = attr->srq;
  b.handle = r->qpn;
  b.qp_num = r->qpn;
  b.state = (wire_flags & verbs::wire::kCreateQpToInit) != 0 ? IBV_QPS_INIT
                                                             : IBV_QPS_RESET;
  b.qp_type = attr->qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0) {
    q->extended = true;
    q->send_ops_flags = attr->send_ops_flags;
    FillQpEx(q);
  }
  return &b;
}

ibv_qp* CreateQpEx(ibv_context* context, ibv_qp_init_attr_ex* attr);

ibv_qp* CreateQpExWith(ibv_context* context, ibv_qp_init_attr_ex* attr,
                       uint16_t wire_flags) {
  if ((attr->comp_mask &
       (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE)) != 0) {
    if (wire_flags != 0) return FailNull<ibv_qp>(EINVAL);
    return CreateRssQp(context, attr, CreateQpEx);
  }
  constexpr uint32_t kKnown =
      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
      IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
  if ((attr->comp_mask & ~kKnown) != 0) return FailNull<ibv_qp>(EOPNOTSUPP);
  if (attr->qp_type == IBV_QPT_XRC_RECV) {
    if (wire_flags != 0) return FailNull<ibv_qp>(EINVAL);
    return CreateXrcTgtQp(context, attr);
  }
  // A multicast SEND never reaches the QP that sent it (nic/rnic.h), so
  // blocking multicast loopback is already true;
  // the other creation flags (FCS scatter, VLAN stripping, source QPN,
  // padding) belong to raw packet QPs or to one vendor.
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) != 0 &&
      (attr->create_flags & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0) {
    return FailNull<ibv_qp>(EOPNOTSUPP);
  }
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || attr->pd == nullptr) {
    return FailNull<ibv_qp>(EINVAL);
  }
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0 &&
      (attr->send_ops_flags & ~SupportedSendOps(attr->qp_type)) != 0) {
    return FailNull<ibv_qp>(EOPNOTSUPP);
  }
  return CreateQp(context, attr->pd, attr, wire_flags);
}

ibv_qp* CreateQpEx(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  return CreateQpExWith(context, attr, 0);
}

// ibv_ah_attr -> the daemon's address vector. RoCE needs a GRH: the GID is
// the peer's IP address; the MAC is resolved by the daemon (zero here).
int ToRocemuAh(const ibv_ah_attr& a, rocemu_ah_attr* r) {
  if (!a.is_global) return EINVAL;
  *r = rocemu_ah_attr{};
  std::memcpy(r->dgid, a.grh.dgid.raw, sizeof(r->dgid));
  r->sgid_index = a.grh.sgid_index;
  r->traffic_class = a.grh.traffic_class;
  // The GRH carries 20 bits. The kernel and the hardware providers take
  // any value and keep those (UCX passes 0xFFFFFFFF).
  r->flow_label = a.grh.flow_label & 0xFFFFF;
  r->hop_limit = a.grh.hop_limit;
  r->sl = a.sl;
  r->port_num = a.port_num != 0 ? a.port_num : 1;
  return 0;
}

void FromRocemuAh(const rocemu_ah_attr& r, ibv_ah_attr* a) {
  *a = ibv_ah_attr{};
  std::memcpy(a->grh.dgid.raw, r.dgid, sizeof(r.dgid));
  a->grh.sgid_index = r.sgid_index;
  a->grh.traffic_class = r.traffic_class;
  a->grh.flow_label = r.flow_label;
  a->grh.hop_limit = r.hop_limit;
  a->sl = r.sl;
  a->port_num = r.port_num;
  a->is_global = 1;
}

int ModifyQp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  QpImpl* q = Qp(qp);
  if (Dead(q->ctx)) return EIO;
  constexpr int kKnown =
      IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
      IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
      IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
      IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
      IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
      IBV_QP_CAP | IBV_QP_DEST_QPN;
  if ((attr_mask &
       (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_RATE_LIMIT)) != 0) {
    return EOPNOTSUPP;  // no APM on RoCE, no per-QP rate limit
  }
  if ((attr_mask & ~kKnown) != 0) return EINVAL;
  rocemu_qp_attr r{};
  rocemu::verbs::CopyQpAttrScalars(*attr, &r);
  r.path_mtu = attr->path_mtu;
  rocemu::verbs::CopyQpCap(attr->cap, &r.cap);
  if ((attr_mask & IBV_QP_AV) != 0) {
    if (const int err = ToRocemuAh(attr->ah_attr, &r.ah_attr); err != 0) {
      return err;
    }
  }
  const int err = rocemu_modify_qp(q->rq, &r, attr_mask);
  if (err == 0 && (attr_mask & IBV_QP_STATE) != 0) qp->state = attr->qp_state;
  return err;
}

}  // namespace

void FillQpOps(CtxImpl* ctx) {
  ctx->vctx.context.ops.post_send = PostSend;
  ctx->vctx.context.ops.post_recv = PostRecv;
  ctx->vctx.create_qp_ex = CreateQpEx;
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_qp* rocemu_ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  ibv_qp_init_attr_ex ex{};
  std::memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = CreateQp(pd->context, pd, &ex);
  if (qp != nullptr) qp_init_attr->cap = ex.cap;
  return qp;
}

ibv_qp* rocemu_rdmacm_create_qp_at_init(ibv_context* context,
                                        ibv_qp_init_attr_ex* attr) {
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
      attr->qp_type != IBV_QPT_XRC_SEND) {
    return FailNull<ibv_qp>(EINVAL);
  }
  return CreateQpExWith(context, attr, rocemu::verbs::wire::kCreateQpToInit);
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  QpImpl* q = Qp(qp);
  return q->extended ? &q->qpx : nullptr;
}

// A failure is also in errno, where libibverbs has it from the kernel
// command that failed: programs print it (qperf's "failed to modify QP to
// RTR: Invalid argument").
int rocemu_ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  const int err = rocemu::ibverbs::ModifyQp(qp, attr, attr_mask);
  if (err != 0) errno = err;
  return err;
}

int rocemu_ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                        ibv_qp_init_attr* init_attr) {
  QpImpl* q = Qp(qp);
  if (Dead(q->ctx)) return EIO;
  rocemu_qp_attr r{};
  const int err = rocemu_query_qp(q->rq, &r, attr_mask);
  if (err != 0) return err;
  *attr = ibv_qp_attr{};
  rocemu::verbs::CopyQpAttrScalars(r, attr);
  attr->path_mtu = static_cast<ibv_mtu>(r.path_mtu);
  rocemu::verbs::CopyQpCap(r.cap, &attr->cap);
  FromRocemuAh(r.ah_attr, &attr->ah_attr);
  qp->state = attr->qp_state;
  if (init_attr != nullptr) {
    *init_attr = ibv_qp_init_attr{};
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->srq = qp->srq;
    init_attr->cap = attr->cap;
    init_attr->qp_type = qp->qp_type;
    init_attr->sq_sig_all = static_cast<int>(q->sq_sig_all);
  }
  return 0;
}

int rocemu_ibv_destroy_qp(ibv_qp* qp) {
  QpImpl* q = Qp(qp);
  WaitAcked(&qp->mutex, &qp->cond, &qp->events_completed, q->events_reported);
  const int err = rocemu_destroy_qp(q->rq);
  if (err != 0) return err;
  pthread_mutex_destroy(&qp->mutex);
  pthread_cond_destroy(&qp->cond);
  delete q;
  return 0;
}

int ibv_query_qp_data_in_order(ibv_qp* qp, enum ibv_wr_opcode op,
                               uint32_t flags) {
  (void)qp;
  (void)op;
  (void)flags;
  return 0;  // no ordering guarantee is promised beyond the spec's
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  return EOPNOTSUPP;
}

int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  return EOPNOTSUPP;
}

// The LID means nothing on RoCE (ConnectX and rxe ignore it too).
int rocemu_ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t /*lid*/) {
  return rocemu_attach_mcast(Qp(qp)->rq, gid->raw);
}

int rocemu_ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t /*lid*/) {
  return rocemu_detach_mcast(Qp(qp)->rq, gid->raw);
}

ibv_ah* rocemu_ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  CtxImpl* ctx = Ctx(pd->context);
  if (Dead(ctx)) return FailNull<ibv_ah>(EIO);
  rocemu_ah_attr r{};
  if (const int err = ToRocemuAh(*attr, &r); err != 0) {
    return FailNull<ibv_ah>(err);
  }
  rocemu_ah* ra = rocemu_create_ah(Pd(pd)->rp, &r);
  if (ra == nullptr) return nullptr;
  auto* a = new AhImpl{};
  a->ra = ra;
  a->ah.context = pd->context;
  a->ah.pd = pd;
  a->ah.handle = ra->handle;
  return &a->ah;
}

int rocemu_ibv_destroy_ah(ibv_ah* ah) {
  AhImpl* a = Ah(ah);
  const int err = rocemu_destroy_ah(a->ra);
  if (err != 0) return err;
  delete a;
  return 0;
}

// The GRH area of a UD receive holds, on RoCE v2, either an IPv6 header or
// (IPv4) 20 bytes of padding then the IPv4 header. The reply goes back to
// the packet's source; the source GID index is our GID the packet was
// addressed to.
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc,
                        ibv_grh* grh, ibv_ah_attr* ah_attr) {
  *ah_attr = ibv_ah_attr{};
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->port_num = port_num;
  if ((wc->wc_flags & IBV_WC_GRH) == 0) return EINVAL;  // RoCE needs a GRH
  ibv_gid src{}, dst{};
  const auto* raw = reinterpret_cast<const uint8_t*>(grh);
  if ((raw[0] >> 4) == 6) {
    src = grh->sgid;
    dst = grh->dgid;
    const uint32_t v = ntohl(grh->version_tclass_flow);
    ah_attr->grh.traffic_class = static_cast<uint8_t>((v >> 20) & 0xff);
    ah_attr->grh.flow_label = v & 0xfffff;
  } else if ((raw[20] >> 4) == 4) {
    iphdr ip;
    std::memcpy(&ip, raw + 20, sizeof(ip));
    src.raw[10] = src.raw[11] = 0xff;
    std::memcpy(src.raw + 12, &ip.saddr, 4);
    dst.raw[10] = dst.raw[11] = 0xff;
    std::memcpy(dst.raw + 12, &ip.daddr, 4);
    ah_attr->grh.traffic_class = ip.tos;
  } else {
    return EINVAL;
  }
  ah_attr->is_global = 1;
  ah_attr->grh.dgid = src;
  ah_attr->grh.hop_limit = 0xff;
  ibv_port_attr pa{};
  if (rocemu_ibv_query_port(context, port_num,
                            reinterpret_cast<_compat_ibv_port_attr*>(&pa)) !=
      0) {
    return EINVAL;
  }
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (rocemu_ibv_query_gid(context, port_num, i, &g) != 0) break;
    if (std::memcmp(g.raw, dst.raw, sizeof(g.raw)) == 0) {
      ah_attr->grh.sgid_index = static_cast<uint8_t>(i);
      return 0;
    }
  }
  return ENOENT;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh,
                              uint8_t port_num) {
  ibv_ah_attr attr{};
  const int err = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
  if (err != 0) return FailNull<ibv_ah>(err);
  return rocemu_ibv_create_ah(pd, &attr);
}

// The daemon resolves neighbours itself (an address vector carries no MAC
// from the application), so the L2 address is not handed out.
int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr,
                                uint8_t eth_mac[6], uint16_t* vid) {
  (void)context;
  (void)attr;
  (void)eth_mac;
  (void)vid;
  return EOPNOTSUPP;
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_create_qp);
ROCEMU_IBV_1_1(ibv_modify_qp);
ROCEMU_IBV_1_1(ibv_query_qp);
ROCEMU_IBV_1_1(ibv_destroy_qp);
ROCEMU_IBV_1_1(ibv_attach_mcast);
ROCEMU_IBV_1_1(ibv_detach_mcast);
ROCEMU_IBV_1_1(ibv_create_ah);
ROCEMU_IBV_1_1(ibv_destroy_ah);
