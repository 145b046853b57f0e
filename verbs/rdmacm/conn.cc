// Connections: the id's QP (created on the id's device and moved through
// INIT, RTR and RTS with the attributes the CM computes, as rdma_cm does),
// connect / accept / reject / establish / disconnect, and UD service
// resolution (SIDR) for RDMA_PS_UDP ids.
#include <endian.h>
#include <rdma/rdma_verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/client/client_control.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/rdmacm/cma.h"
#include "verbs/wire/attr_copy.h"

namespace rocemu::rdmacm {
namespace {

using verbs::wire::MsgType;

void FromWire(const verbs::wire::WireQpAttr& w, ibv_qp_attr* a) {
  *a = ibv_qp_attr{};
  rocemu::verbs::CopyQpAttrScalars(w, a);
  a->path_mtu = static_cast<ibv_mtu>(w.path_mtu);
  ibv_ah_attr& ah = a->ah_attr;
  ah.is_global = 1;
  std::memcpy(&ah.grh.dgid, w.ah_attr.dgid, 16);
  ah.grh.sgid_index = w.ah_attr.sgid_index;
  ah.grh.traffic_class = w.ah_attr.traffic_class;
  ah.grh.flow_label = w.ah_attr.flow_label;
  ah.grh.hop_limit = w.ah_attr.hop_limit;
  ah.sl = w.ah_attr.sl;
  ah.port_num = w.ah_attr.port_num != 0 ? w.ah_attr.port_num : 1;
}

// INIT at rdma_create_qp: what the kernel's rdma_cm gives for a QP not yet
// connected (a passive id's QP gets the CM's INIT at rdma_accept).
void LocalInitAttr(const IdPriv* p, ibv_qp_attr* a, int* mask) {
  *a = ibv_qp_attr{};
  a->qp_state = IBV_QPS_INIT;
  a->pkey_index = 0;
  a->port_num = p->id.port_num != 0 ? p->id.port_num : 1;
  *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (p->id.qp_type == IBV_QPT_UD) {
    a->qkey = kUdpQkey;
    *mask |= IBV_QP_QKEY;
  } else {
    a->qp_access_flags = 0;
    *mask |= IBV_QP_ACCESS_FLAGS;
  }
}

int InitQpAttr(IdPriv* p, ibv_qp_attr* a, int* mask) {
  const ibv_qp_state want = a->qp_state;
  // A UD QP's attributes are rdma_cm's own (partition, port, Q_Key); SIDR
  // has nothing to add.
  if (p->handle == 0 || p->id.qp_type == IBV_QPT_UD) {
    if (want == IBV_QPS_INIT) {
      LocalInitAttr(p, a, mask);
      return 0;
    }
    if (p->id.qp_type != IBV_QPT_UD ||
        (want != IBV_QPS_RTR && want != IBV_QPS_RTS)) {
      return EINVAL;
    }
    *a = ibv_qp_attr{};
    a->qp_state = want;
    *mask = IBV_QP_STATE;
    if (want == IBV_QPS_RTS) *mask |= IBV_QP_SQ_PSN;
    return 0;
  }
  verbs::wire::CmInitQpAttrReq req{};
  req.id = p->handle;
  req.qp_state = static_cast<uint8_t>(want);
  verbs::wire::CmInitQpAttrResp resp{};
  const int err =
      verbs::client::Call(p->dev->rc, MsgType::kCmInitQpAttr, req, &resp);
  if (err != 0) return err;
  FromWire(resp.attr, a);
  *mask = static_cast<int>(resp.attr_mask);
  if (want == IBV_QPS_RTR || want == IBV_QPS_RTS) {
    if (p->tos_set) a->ah_attr.grh.traffic_class = p->tos;
    if (p->ack_timeout_set && (*mask & IBV_QP_TIMEOUT) != 0) {
      a->timeout = p->ack_timeout;
    }
  }
  return 0;
}

int InitQp(IdPriv* p, ibv_qp* qp) {
  ibv_qp_attr a{};
  int mask = 0;
  // rdma_cm's own INIT attributes, without asking the CM: a connected QP
  // goes through INIT again with the CM's (cm_modify_qp) before RTR, and
  // nothing reaches a QP in INIT, so the CM's answer would change nothing
  // but the cost of a round trip per accepted connection.
  LocalInitAttr(p, &a, &mask);
  int err = ibv_modify_qp(qp, &a, mask);
  if (err != 0 || p->id.qp_type != IBV_QPT_UD) return err;
  // UD: straight on to RTS, as rdma_cm does.
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
  if (err != 0) return err;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

void FillPath(const IdPriv* p, verbs::wire::WireCmPath* w) {
  std::memcpy(w->dgid, &p->id.route.addr.addr.ibaddr.dgid, 16);
  std::memcpy(w->dmac, p->dmac, 6);
  w->sgid_index = p->sgid_index;
  w->traffic_class = p->tos;
  w->pkey = 0xFFFF;
  w->mtu = static_cast<uint8_t>(p->dev->port.active_mtu);
  w->hop_limit = p->hop_limit;
  w->flow_label = 0;
}

// rdma_cm's IP header: who connects from where, to which address.
void FillIp(const IdPriv* p, verbs::wire::WireCmIp* w) {
  const sockaddr* src = &p->id.route.addr.src_addr;
  const sockaddr* dst = &p->id.route.addr.dst_addr;
  ibv_gid g;
  w->present = 1;
  w->ip_version = src->sa_family == AF_INET6 ? 6 : 4;
  w->src_port = PortOf(src);
  SockaddrToGid(src, &g);
  std::memcpy(w->src_addr, g.raw, 16);
  SockaddrToGid(dst, &g);
  std::memcpy(w->dst_addr, g.raw, 16);
}

uint8_t ClampRetry(uint8_t v) { return std::min<uint8_t>(v, 7); }

// The application's private data into a request's field: at most `max`
// bytes (what the message leaves beside rdma_cm's own header); EINVAL for
// more, or for a length without data.
template <size_t N>
int PutPrivateData(const void* data, uint8_t len, size_t max,
                   uint8_t (&field)[N], uint8_t* field_len) {
  if (len == 0) return 0;
  if (data == nullptr || len > std::min(max, N)) return EINVAL;
  std::memcpy(field, data, len);
  *field_len = len;
  return 0;
}

// The same from an rdma_conn_param, which may be absent.
template <size_t N>
int PutPrivateData(const rdma_conn_param* cp, size_t max, uint8_t (&field)[N],
                   uint8_t* field_len) {
  if (cp == nullptr) return 0;
  return PutPrivateData(cp->private_data, cp->private_data_len, max, field,
                        field_len);
}

// Sends the request that makes the id's connection (REQ or SIDR_REQ) and
// takes the daemon's id for it.
template <typename Req>
int Start(IdPriv* p, MsgType type, const Req& req) {
  verbs::wire::CmIdResp resp{};
  const int err = verbs::client::Call(p->dev->rc, type, req, &resp);
  if (err != 0) return err;
  p->handle = resp.id;
  RegisterId(p->dev, p->handle, p);
  return 0;
}

int ConnectRc(IdPriv* p, const rdma_conn_param* cp) {
  const CmDevice* d = p->dev;
  verbs::wire::CmConnectReq req{};
  req.service_id = ServiceId(p->id.ps, PortOf(&p->id.route.addr.dst_addr));
  req.qpn =
      p->id.qp != nullptr ? p->id.qp->qp_num : (cp != nullptr ? cp->qp_num : 0);
  req.srq = p->id.qp != nullptr ? (p->id.qp->srq != nullptr)
                                : (cp != nullptr ? cp->srq : 0);
  req.qp_type = static_cast<uint8_t>(p->id.qp != nullptr ? p->id.qp->qp_type
                                                         : p->id.qp_type);
  p->initiator_depth =
      (cp != nullptr && cp->initiator_depth != RDMA_MAX_INIT_DEPTH)
          ? cp->initiator_depth
          : static_cast<uint8_t>(d->attr.max_qp_init_rd_atom);
  p->responder_resources =
      (cp != nullptr && cp->responder_resources != RDMA_MAX_RESP_RES)
          ? cp->responder_resources
          : static_cast<uint8_t>(d->attr.max_qp_rd_atom);
  req.initiator_depth = p->initiator_depth;
  req.responder_resources = p->responder_resources;
  req.retry_count = cp != nullptr ? ClampRetry(cp->retry_count) : 7;
  req.rnr_retry_count = cp != nullptr ? ClampRetry(cp->rnr_retry_count) : 7;
  req.flow_control = cp != nullptr ? cp->flow_control : 0;
  FillPath(p, &req.path);
  FillIp(p, &req.ip);
  // 92 bytes of REQ private data less the 36 of the IP header.
  if (const int err =
          PutPrivateData(cp, 56, req.private_data, &req.private_data_len);
      err != 0) {
    return err;
  }
  return Start(p, MsgType::kCmConnect, req);
}

int ConnectUd(IdPriv* p, const rdma_conn_param* cp) {
  verbs::wire::CmSidrQueryReq req{};
  req.service_id = ServiceId(p->id.ps, PortOf(&p->id.route.addr.dst_addr));
  FillPath(p, &req.path);
  FillIp(p, &req.ip);
  // 216 bytes of SIDR_REQ private data less the IP header.
  if (const int err =
          PutPrivateData(cp, 180, req.private_data, &req.private_data_len);
      err != 0) {
    return err;
  }
  return Start(p, MsgType::kCmSidrQuery, req);
}

}  // namespace

void DestroyCqs(rdma_cm_id* id) {
  if (id->recv_cq != nullptr) {
    ibv_destroy_cq(id->recv_cq);
    if (id->recv_cq == id->send_cq) id->send_cq = nullptr;
    id->recv_cq = nullptr;
  }
  if (id->recv_cq_channel != nullptr) {
    ibv_destroy_comp_channel(id->recv_cq_channel);
    if (id->recv_cq_channel == id->send_cq_channel) {
      id->send_cq_channel = nullptr;
    }
    id->recv_cq_channel = nullptr;
  }
  if (id->send_cq != nullptr) {
    ibv_destroy_cq(id->send_cq);
    id->send_cq = nullptr;
  }
  if (id->send_cq_channel != nullptr) {
    ibv_destroy_comp_channel(id->send_cq_channel);
    id->send_cq_channel = nullptr;
  }
}

// CQs (with completion channels) for a QP the caller gave none: librdmacm
// makes them so that rdma_get_send_comp / rdma_get_recv_comp work.
int CreateCqs(rdma_cm_id* id, uint32_t send_size, uint32_t recv_size) {
  if (recv_size != 0) {
    id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
    if (id->recv_cq_channel == nullptr) goto err;
    id->recv_cq = ibv_create_cq(id->verbs, static_cast<int>(recv_size), id,
                                id->recv_cq_channel, 0);
    if (id->recv_cq == nullptr) goto err;
  }
  if (send_size != 0) {
    id->send_cq_channel = ibv_create_comp_channel(id->verbs);
    if (id->send_cq_channel == nullptr) goto err;
    id->send_cq = ibv_create_cq(id->verbs, static_cast<int>(send_size), id,
                                id->send_cq_channel, 0);
    if (id->send_cq == nullptr) goto err;
  }
  return 0;
err:
  DestroyCqs(id);
  return ENOMEM;
}

int ModifyQpTo(IdPriv* p, ibv_qp_state state, uint8_t resp_res,
               uint8_t init_depth, bool establish) {
  if (p->id.qp == nullptr) {
    return establish ? CmCall(p, MsgType::kCmEstablish, p->handle) : 0;
  }
  if (p->handle == 0 || p->id.qp_type == IBV_QPT_UD) {
    int err = ModifyQpRtr(p, resp_res);
    if (err == 0 && state == IBV_QPS_RTS) err = ModifyQpRts(p, init_depth);
    if (err == 0 && establish) {
      err = CmCall(p, MsgType::kCmEstablish, p->handle);
    }
    return err;
  }
  verbs::wire::CmModifyQpReq req{};
  req.id = p->handle;
  req.qpn = p->id.qp->qp_num;
  req.qp_state = static_cast<uint8_t>(state);
  req.responder_resources = resp_res;
  req.initiator_depth = init_depth;
  if (p->tos_set) {
    req.flags |= verbs::wire::kCmModifyTos;
    req.tos = p->tos;
  }
  if (p->ack_timeout_set) {
    req.flags |= verbs::wire::kCmModifyTimeout;
    req.timeout = p->ack_timeout;
  }
  if (establish) req.flags |= verbs::wire::kCmModifyEstablish;
  const int err = verbs::client::RetryWhileResolving([&] {
    return verbs::client::Call<verbs::wire::CmModifyQpReq, verbs::wire::Empty>(
        p->dev->rc, MsgType::kCmModifyQp, req, nullptr);
  });
  if (err != 0) return err;
  NoteQpState(p, state);
  return 0;
}

void NoteQpState(IdPriv* p, ibv_qp_state state) {
  // What ibv_modify_qp would have left: the state the program reads in
  // ibv_qp and the library's own record of it.
  p->id.qp->state = state;
  ibverbs::Qp(p->id.qp)->rq->state = static_cast<int>(state);
}

int ModifyQpRtr(IdPriv* p, uint8_t resp_res) {
  if (p->id.qp == nullptr) return 0;
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  int err = InitQpAttr(p, &a, &mask);
  if (err == 0) err = ibv_modify_qp(p->id.qp, &a, mask);
  if (err != 0) return err;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  err = InitQpAttr(p, &a, &mask);
  if (err != 0) return err;
  if (resp_res != RDMA_MAX_RESP_RES) a.max_dest_rd_atomic = resp_res;
  return ibv_modify_qp(p->id.qp, &a, mask);
}

int ModifyQpRts(IdPriv* p, uint8_t init_depth) {
  if (p->id.qp == nullptr) return 0;
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_RTS;
  const int err = InitQpAttr(p, &a, &mask);
  if (err != 0) return err;
  if (init_depth != RDMA_MAX_INIT_DEPTH) a.max_rd_atomic = init_depth;
  return ibv_modify_qp(p->id.qp, &a, mask);
}

int ModifyQpErr(IdPriv* p) {
  if (p->id.qp == nullptr) return 0;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);
}

}  // namespace rocemu::rdmacm

namespace verbs = rocemu::verbs;

extern "C" {

using namespace rocemu::rdmacm;

int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  if (id == nullptr || attr == nullptr) return Err(EINVAL);
  if (id->qp != nullptr || id->verbs == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || attr->pd == nullptr) {
    attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    attr->pd = id->pd;
  } else if (attr->pd->context != id->verbs) {
    return Err(EINVAL);
  }
  if (attr->pd == nullptr) return Err(EINVAL);
  if ((id->recv_cq != nullptr && attr->recv_cq != nullptr &&
       id->recv_cq != attr->recv_cq) ||
      (id->send_cq != nullptr && attr->send_cq != nullptr &&
       id->send_cq != attr->send_cq)) {
    return Err(EINVAL);
  }
  // An XRC_RECV id's TGT QP lives in an XRC domain: librdmacm's own for
  // the device when the caller gives none.
  bool dev_xrcd = false;
  if (id->qp_type == IBV_QPT_XRC_RECV &&
      ((attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) == 0 ||
       attr->xrcd == nullptr)) {
    attr->xrcd = HoldDevXrcd(p);
    if (attr->xrcd == nullptr) return -1;
    attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
    dev_xrcd = true;
  }
  int err = CreateCqs(id,
                      (attr->send_cq != nullptr || id->send_cq != nullptr)
                          ? 0
                          : attr->cap.max_send_wr,
                      (attr->recv_cq != nullptr || id->recv_cq != nullptr)
                          ? 0
                          : attr->cap.max_recv_wr);
  if (err != 0) {
    if (dev_xrcd) ReleaseDevXrcd(p);
    return Err(err);
  }
  if (attr->send_cq == nullptr) attr->send_cq = id->send_cq;
  if (attr->recv_cq == nullptr) attr->recv_cq = id->recv_cq;
  if (id->srq != nullptr && attr->srq == nullptr) attr->srq = id->srq;
  // rdma_cm's INIT in the create itself where it is the daemon's
  // default one (port 1): one round trip per QP fewer.
  const bool at_init =
      (id->qp_type == IBV_QPT_RC || id->qp_type == IBV_QPT_UC ||
       id->qp_type == IBV_QPT_XRC_SEND) &&
      attr->qp_type == id->qp_type && id->port_num <= 1 &&
      (attr->comp_mask &
       (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE)) == 0;
  ibv_qp* qp = at_init ? rocemu_rdmacm_create_qp_at_init(id->verbs, attr)
                       : ibv_create_qp_ex(id->verbs, attr);
  if (qp == nullptr) {
    err = errno;
    DestroyCqs(id);
    if (dev_xrcd) ReleaseDevXrcd(p);
    return Err(err);
  }
  if (!at_init) {
    std::lock_guard<std::mutex> lock(Mu());
    err = InitQp(p, qp);
  }
  if (err != 0) {
    ibv_destroy_qp(qp);
    DestroyCqs(id);
    if (dev_xrcd) ReleaseDevXrcd(p);
    return Err(err);
  }
  // A TGT QP has no PD of its own: the id keeps the one it had.
  if (qp->pd != nullptr) id->pd = qp->pd;
  id->qp = qp;
  p->qp_in_dev_xrcd = dev_xrcd;
  return 0;
}

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (id == nullptr || qp_init_attr == nullptr) return Err(EINVAL);
  ibv_qp_init_attr_ex ex{};
  std::memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd != nullptr ? pd : id->pd;
  const int ret = rdma_create_qp_ex(id, &ex);
  std::memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
  return ret;
}

void rdma_destroy_qp(rdma_cm_id* id) {
  if (id == nullptr) return;
  if (id->qp != nullptr) ibv_destroy_qp(id->qp);
  id->qp = nullptr;
  IdPriv* p = Priv(id);
  if (p->qp_in_dev_xrcd) {
    p->qp_in_dev_xrcd = false;
    ReleaseDevXrcd(p);
  }
  // An XRC_RECV id's receive CQ is its XRC SRQ's: rdma_destroy_srq takes
  // it with the SRQ.
  if (id->qp_type == IBV_QPT_XRC_RECV && id->srq != nullptr) return;
  DestroyCqs(id);
}

int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
  if (id == nullptr || qp_attr == nullptr || qp_attr_mask == nullptr) {
    return Err(EINVAL);
  }
  std::lock_guard<std::mutex> lock(Mu());
  return Err(InitQpAttr(Priv(id), qp_attr, qp_attr_mask));
}

int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  {
    std::lock_guard<std::mutex> lock(Mu());
    if (!p->route_resolved || p->dev == nullptr || p->handle != 0) {
      return Err(EINVAL);
    }
    if (p->id.ps == RDMA_PS_TCP && p->id.qp == nullptr &&
        conn_param == nullptr) {
      return Err(EINVAL);
    }
    const int err = p->id.qp_type == IBV_QPT_UD ? ConnectUd(p, conn_param)
                                                : ConnectRc(p, conn_param);
    if (err != 0) return Err(err);
  }
  return Complete(p);
}

int rdma_establish(rdma_cm_id* id) {
  if (id == nullptr || id->qp != nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  std::lock_guard<std::mutex> lock(Mu());
  return Err(CmCall(p, verbs::wire::MsgType::kCmEstablish, p->handle));
}

int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  if (id->qp == nullptr && conn_param == nullptr) return Err(EINVAL);
  {
    std::lock_guard<std::mutex> lock(Mu());
    if (p->handle == 0 || p->dev == nullptr) return Err(EINVAL);
    const CmDevice* d = p->dev;
    if (conn_param == nullptr ||
        conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
      p->initiator_depth =
          std::min<uint8_t>(p->initiator_depth,
                            static_cast<uint8_t>(d->attr.max_qp_init_rd_atom));
    } else {
      p->initiator_depth = conn_param->initiator_depth;
    }
    if (conn_param == nullptr ||
        conn_param->responder_resources == RDMA_MAX_RESP_RES) {
      p->responder_resources = std::min<uint8_t>(
          p->responder_resources, static_cast<uint8_t>(d->attr.max_qp_rd_atom));
    } else {
      p->responder_resources = conn_param->responder_resources;
    }
    const uint32_t qpn =
        id->qp != nullptr ? id->qp->qp_num : conn_param->qp_num;
    if (id->qp_type == IBV_QPT_UD) {
      verbs::wire::CmSidrReplyReq r{};
      r.id = p->handle;
      r.qpn = qpn;
      r.qkey = kUdpQkey;
      r.status = 0;
      int err = PutPrivateData(conn_param, sizeof(r.private_data),
                               r.private_data, &r.private_data_len);
      if (err == 0) err = CmRequest(d, verbs::wire::MsgType::kCmSidrReply, r);
      if (err != 0) return Err(err);
      if (p->sync && id->event != nullptr) {
        rdma_ack_cm_event(id->event);
        id->event = nullptr;
      }
      return 0;
    }
    // The daemon moves the QP to RTS itself before the REP (one request
    // where there were two), unless the program set a TOS or an ACK
    // timeout on the id: cm_modify_qp carries those.
    const bool to_rts = id->qp != nullptr && !p->tos_set && !p->ack_timeout_set;
    int err = 0;
    if (!to_rts) {
      err = ModifyQpTo(p, IBV_QPS_RTS, p->responder_resources,
                       p->initiator_depth, /*establish=*/false);
    }
    if (err != 0) return Err(err);
    verbs::wire::CmAcceptReq r{};
    if (to_rts) r.flags = verbs::wire::kCmAcceptToRts;
    r.id = p->handle;
    r.qpn = qpn;
    r.responder_resources = p->responder_resources;
    r.initiator_depth = p->initiator_depth;
    r.rnr_retry_count =
        conn_param != nullptr ? ClampRetry(conn_param->rnr_retry_count) : 7;
    r.flow_control = conn_param != nullptr ? conn_param->flow_control : 0;
    r.srq = id->qp != nullptr ? (id->qp->srq != nullptr)
                              : (conn_param != nullptr ? conn_param->srq : 0);
    err = PutPrivateData(conn_param, sizeof(r.private_data), r.private_data,
                         &r.private_data_len);
    if (err != 0) return Err(err);
    err = verbs::client::RetryWhileResolving(
        [&] { return CmRequest(d, verbs::wire::MsgType::kCmAccept, r); });
    if (err != 0) {
      ModifyQpErr(p);
      return Err(err);
    }
    if (to_rts) NoteQpState(p, IBV_QPS_RTS);
  }
  return Complete(p);
}

static int RejectWith(rdma_cm_id* id, const void* private_data,
                      uint8_t private_data_len, uint16_t reason) {
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  std::lock_guard<std::mutex> lock(Mu());
  if (p->handle == 0 || p->dev == nullptr) return Err(EINVAL);
  // librdmacm sends no private data when it is given no pointer.
  const uint8_t len = private_data != nullptr ? private_data_len : 0;
  if (id->qp_type == IBV_QPT_UD) {
    verbs::wire::CmSidrReplyReq r{};
    r.id = p->handle;
    r.status = 2;  // rejected
    int err = PutPrivateData(private_data, len, sizeof(r.private_data),
                             r.private_data, &r.private_data_len);
    if (err == 0)
      err = CmRequest(p->dev, verbs::wire::MsgType::kCmSidrReply, r);
    return Err(err);
  }
  verbs::wire::CmRejectReq r{};
  r.id = p->handle;
  r.reason = reason;
  int err = PutPrivateData(private_data, len, sizeof(r.private_data),
                           r.private_data, &r.private_data_len);
  if (err == 0) err = CmRequest(p->dev, verbs::wire::MsgType::kCmReject, r);
  return Err(err);
}

int rdma_reject(rdma_cm_id* id, const void* private_data,
                uint8_t private_data_len) {
  return RejectWith(id, private_data, private_data_len, 28);  // consumer
}

int rdma_reject_ece(rdma_cm_id* id, const void* private_data,
                    uint8_t private_data_len) {
  // IBTA: vendor option not supported.
  return RejectWith(id, private_data, private_data_len, 35);
}

int rdma_disconnect(rdma_cm_id* id) {
  if (id == nullptr || id->verbs == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  {
    std::lock_guard<std::mutex> lock(Mu());
    Pump();  // a DISCONNECTED already in the ring says the peer went first
    // The QP to ERR and the DREQ in one request, or (the peer's DREQ
    // already in: the CM answered it with its DREP) the QP alone. Either
    // way the connection is going.
    if (p->handle != 0 && !p->disconnected && p->dev != nullptr) {
      const uint32_t qpn = p->id.qp != nullptr ? p->id.qp->qp_num : 0;
      const int err = CmRequest(p->dev, verbs::wire::MsgType::kCmDisconnect,
                                verbs::wire::CmIdReq{p->handle, qpn});
      if (err == 0 && qpn != 0) {
        // What ibv_modify_qp would have left.
        p->id.qp->state = IBV_QPS_ERR;
        rocemu::ibverbs::Qp(p->id.qp)->rq->state =
            static_cast<int>(IBV_QPS_ERR);
      } else if (err != 0) {
        // Which half failed is not said: each apart, as they were (the
        // QP's error is the call's; the CM's is not).
        if (const int e = ModifyQpErr(p); e != 0) return Err(e);
        (void)CmCall(p, verbs::wire::MsgType::kCmDisconnect, p->handle);
      }
    } else if (const int err = ModifyQpErr(p); err != 0) {
      return Err(err);
    }
  }
  return Complete(p);
}

int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  if (event != IBV_EVENT_COMM_EST) return 0;
  std::lock_guard<std::mutex> lock(Mu());
  const int err = CmCall(p, verbs::wire::MsgType::kCmEstablish, p->handle);
  return Err(err == EEXIST ? 0 : err);
}

int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
  if (id == nullptr || ece == nullptr) return Err(EINVAL);
  Priv(id)->local_ece = *ece;
  return 0;
}

int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
  if (id == nullptr || ece == nullptr) return Err(EINVAL);
  // ECE travels in vendor-specific REQ/REP fields rocemu does not carry.
  *ece = ibv_ece{};
  return 0;
}

}  // extern "C"
