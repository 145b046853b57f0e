// rdma_getaddrinfo (names through the C library's resolver; RoCE needs no
// path service) and the synchronous endpoint calls built on it.
#include <netdb.h>
#include <rdma/rdma_verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

sockaddr* CopyAddr(const sockaddr* sa, socklen_t len) {
  auto* out = static_cast<sockaddr*>(std::malloc(len));
  if (out != nullptr) std::memcpy(out, sa, len);
  return out;
}

}  // namespace
}  // namespace rocemu::rdmacm

namespace verbs = rocemu::verbs;

extern "C" {

using namespace rocemu::rdmacm;

void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res != nullptr) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

int rdma_getaddrinfo(const char* node, const char* service,
                     const rdma_addrinfo* hints, rdma_addrinfo** res) {
  if (res == nullptr ||
      (node == nullptr && service == nullptr &&
       (hints == nullptr ||
        (hints->ai_src_addr == nullptr && hints->ai_dst_addr == nullptr)))) {
    errno = EINVAL;
    return EAI_NONAME;
  }
  const int flags = hints != nullptr ? hints->ai_flags : 0;
  const int family = hints != nullptr ? hints->ai_family : AF_UNSPEC;
  if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6) {
    return EAI_FAMILY;
  }
  auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (ai == nullptr) {
    errno = ENOMEM;
    return EAI_MEMORY;
  }
  ai->ai_flags = flags;
  ai->ai_qp_type = hints != nullptr && hints->ai_qp_type != 0
                       ? hints->ai_qp_type
                       : IBV_QPT_RC;
  ai->ai_port_space =
      hints != nullptr && hints->ai_port_space != 0
          ? hints->ai_port_space
          : (ai->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
  if (node != nullptr || service != nullptr) {
    addrinfo h{};
    h.ai_family = family;
    h.ai_socktype = ai->ai_qp_type == IBV_QPT_UD ? SOCK_DGRAM : SOCK_STREAM;
    if ((flags & RAI_NUMERICHOST) != 0) h.ai_flags |= AI_NUMERICHOST;
    if ((flags & RAI_PASSIVE) != 0) h.ai_flags |= AI_PASSIVE;
    addrinfo* found = nullptr;
    const int ret = getaddrinfo(node, service, &h, &found);
    if (ret != 0) {
      rdma_freeaddrinfo(ai);
      return ret;
    }
    ai->ai_family = found->ai_family;
    sockaddr* addr = CopyAddr(found->ai_addr, found->ai_addrlen);
    const socklen_t len = found->ai_addrlen;
    freeaddrinfo(found);
    if (addr == nullptr) {
      rdma_freeaddrinfo(ai);
      errno = ENOMEM;
      return EAI_MEMORY;
    }
    if ((flags & RAI_PASSIVE) != 0) {
      ai->ai_src_addr = addr;
      ai->ai_src_len = len;
    } else {
      ai->ai_dst_addr = addr;
      ai->ai_dst_len = len;
    }
  }
  if (hints != nullptr) {
    if (ai->ai_src_addr == nullptr && hints->ai_src_addr != nullptr) {
      ai->ai_src_len = hints->ai_src_len;
      ai->ai_src_addr = CopyAddr(hints->ai_src_addr, hints->ai_src_len);
    }
    if (ai->ai_dst_addr == nullptr && hints->ai_dst_addr != nullptr) {
      ai->ai_dst_len = hints->ai_dst_len;
      ai->ai_dst_addr = CopyAddr(hints->ai_dst_addr, hints->ai_dst_len);
    }
    if (ai->ai_family == 0) {
      const sockaddr* a =
          ai->ai_dst_addr != nullptr ? ai->ai_dst_addr : ai->ai_src_addr;
      ai->ai_family = a != nullptr ? a->sa_family : AF_INET;
    }
  }
  *res = ai;
  return 0;
}

int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
                   ibv_qp_init_attr* qp_init_attr) {
  if (id == nullptr || res == nullptr) return Err(EINVAL);
  if (const int err = Init(); err != 0) return Err(err);
  IdPriv* p = AllocId(nullptr, nullptr,
                      static_cast<rdma_port_space>(res->ai_port_space),
                      static_cast<ibv_qp_type>(res->ai_qp_type));
  if (p == nullptr) return Err(ENOMEM);
  rdma_cm_id* cm = &p->id;
  int ret = 0;
  if ((res->ai_flags & RAI_PASSIVE) != 0) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    ret = rdma_bind_addr(cm, res->ai_src_addr != nullptr
                                 ? res->ai_src_addr
                                 : reinterpret_cast<sockaddr*>(&any));
    if (ret == 0 && qp_init_attr != nullptr) {
      p->ep_qp_init_attr = new ibv_qp_init_attr(*qp_init_attr);
      p->ep_qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
    }
    cm->pd = pd;
  } else {
    ret = rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (ret == 0) ret = rdma_resolve_route(cm, 2000);
    if (ret == 0 && qp_init_attr != nullptr) {
      qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
      ret = rdma_create_qp(cm, pd, qp_init_attr);
    }
  }
  if (ret != 0) {
    const int err = errno;
    rdma_destroy_id(cm);
    errno = err;
    return -1;
  }
  *id = cm;
  return 0;
}

void rdma_destroy_ep(rdma_cm_id* id) {
  if (id == nullptr) return;
  if (id->qp != nullptr) rdma_destroy_qp(id);
  if (id->srq != nullptr) rdma_destroy_srq(id);
  rdma_destroy_id(id);
}

}  // extern "C"
