// rdma_join_multicast and rdma_leave_multicast over RoCE. As the kernel's
// rdma_cm does on a RoCE port, a join sends nothing: the group's GID is the
// multicast IP address (IPv4-mapped for AF_INET), its MAC follows from it,
// and the join completes at once with RDMA_CM_EVENT_MULTICAST_JOIN, whose
// ud parameters (an AH towards the group, QPN 0xFFFFFF, the id's Q_Key)
// are what a sender needs. Like librdmacm, the id's QP (if it has one) is
// attached to the group, except for a send-only join.
#include "protocol/multicast.h"

#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

// rdma_cm's default hop limit for RoCEv2 groups (IPV6_DEFAULT_HOPLIMIT).
constexpr uint8_t kGroupHopLimit = 64;

bool SameGid(const ibv_gid& a, const ibv_gid& b) {
  return std::memcmp(a.raw, b.raw, sizeof(a.raw)) == 0;
}

int Join(rdma_cm_id* cm_id, const sockaddr* addr, uint32_t flags,
         void* context) {
  if (cm_id == nullptr || addr == nullptr) return Err(EINVAL);
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) {
    return Err(EAFNOSUPPORT);
  }
  IdPriv* id = Priv(cm_id);
  std::lock_guard<std::mutex> lock(Mu());
  // Bound or resolved first (the device the group is joined on); EINVAL
  // otherwise, as the kernel's rdma_cm answers.
  if (id->dev == nullptr) return Err(EINVAL);
  if (cm_id->qp_type != IBV_QPT_UD) return Err(EINVAL);
  ibv_gid mgid;
  protocol::IpAddr ip;
  if (!SockaddrToGid(addr, &mgid)) return Err(EINVAL);
  std::memcpy(ip.data(), mgid.raw, sizeof(mgid.raw));
  if (!protocol::IsMulticastIp(ip)) return Err(EINVAL);
  for (const IdPriv::Join& j : id->joins) {
    if (SameGid(j.mgid, mgid)) return Err(EADDRINUSE);
  }
  bool attached = false;
  int status = 0;
  if (cm_id->qp != nullptr && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
    status = ibv_attach_mcast(cm_id->qp, &mgid, 0);
    attached = status == 0;
  }
  if (status == 0) id->joins.push_back({mgid, attached});
  Event* e = NewEvent(id,
                      status == 0 ? RDMA_CM_EVENT_MULTICAST_JOIN
                                  : RDMA_CM_EVENT_MULTICAST_ERROR,
                      status == 0 ? 0 : -status);
  if (e == nullptr) return Err(ENOMEM);
  rdma_ud_param& ud = e->event.param.ud;
  ud.private_data = context;  // as librdmacm hands the join's context back
  ud.ah_attr.is_global = 1;
  ud.ah_attr.port_num = 1;
  ud.ah_attr.grh.dgid = mgid;
  ud.ah_attr.grh.sgid_index = id->sgid_index;
  ud.ah_attr.grh.hop_limit = kGroupHopLimit;
  ud.ah_attr.grh.traffic_class = id->tos;
  ud.qp_num = protocol::kMulticastQpn;
  ud.qkey = kUdpQkey;
  Queue(e);
  return 0;
}

}  // namespace

void LeaveAll(IdPriv* id) {
  for (IdPriv::Join& j : id->joins) {
    if (j.attached && id->id.qp != nullptr) {
      (void)ibv_detach_mcast(id->id.qp, &j.mgid, 0);
    }
  }
  id->joins.clear();
}

}  // namespace rocemu::rdmacm

extern "C" {

using namespace rocemu::rdmacm;  // NOLINT

int rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
  const int err = Join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
  return err != 0 ? err : Complete(Priv(id));
}

int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr,
                           void* context) {
  constexpr uint32_t kNeeded =
      RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
  if (attr == nullptr || (attr->comp_mask & kNeeded) != kNeeded ||
      (attr->comp_mask & ~kNeeded) != 0 ||
      (attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
       attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)) {
    return Err(EINVAL);
  }
  const int err = Join(id, attr->addr, attr->join_flags, context);
  return err != 0 ? err : Complete(Priv(id));
}

int rdma_leave_multicast(rdma_cm_id* cm_id, sockaddr* addr) {
  if (cm_id == nullptr || addr == nullptr) return Err(EINVAL);
  ibv_gid mgid;
  if (!SockaddrToGid(addr, &mgid)) return Err(EINVAL);
  IdPriv* id = Priv(cm_id);
  std::lock_guard<std::mutex> lock(Mu());
  auto it = std::find_if(
      id->joins.begin(), id->joins.end(),
      [&](const IdPriv::Join& j) { return SameGid(j.mgid, mgid); });
  if (it == id->joins.end()) return Err(EADDRNOTAVAIL);
  if (it->attached && cm_id->qp != nullptr) {
    (void)ibv_detach_mcast(cm_id->qp, &mgid, 0);
  }
  id->joins.erase(it);
  return 0;
}

}  // extern "C"
