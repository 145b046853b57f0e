// rdma_cm ids and their addresses: create/destroy, bind, resolve_addr
// (the device holding our side, the peer's next-hop MAC from the daemon's
// neighbour cache), resolve_route (a path record built locally: RoCE has no
// subnet administrator), listen, options.
#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>

#include "verbs/client/client_control.h"
#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

using verbs::wire::MsgType;

// rdma_resolve_addr while the daemon's neighbour resolution runs: retried
// by one thread of the library until the caller's timeout.
struct PendingResolve {
  IdPriv* id;
  int64_t deadline_ms;
};
std::vector<PendingResolve>& Pending() {
  static auto* v = new std::vector<PendingResolve>;
  return *v;
}
std::condition_variable& PendingCv() {
  static auto* cv = new std::condition_variable;
  return *cv;
}

// 0, EAGAIN while resolving, or an errno value (under Mu()).
int TryResolve(IdPriv* id) {
  verbs::wire::CmResolveReq req{};
  std::memcpy(req.dgid, &id->id.route.addr.addr.ibaddr.dgid, 16);
  verbs::wire::CmResolveResp resp{};
  const int err =
      verbs::client::Call(id->dev->rc, MsgType::kCmResolve, req, &resp);
  if (err != 0) return err;
  std::memcpy(id->dmac, resp.dmac, 6);
  id->hop_limit = resp.hop_limit;
  id->addr_resolved = true;
  return 0;
}

void ResolveDone(IdPriv* id, int err) {
  Event* e = NewEvent(
      id, err == 0 ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR,
      -err);
  if (e != nullptr) Queue(e);
}

void ResolverLoop() {
  std::unique_lock<std::mutex> lock(Mu());
  for (;;) {
    PendingCv().wait(lock, [] { return !Pending().empty(); });
    auto& v = Pending();
    const int64_t now = verbs::client::MonotonicMs();
    for (auto it = v.begin(); it != v.end();) {
      int err = TryResolve(it->id);
      if (err == EAGAIN && now < it->deadline_ms) {
        ++it;
        continue;
      }
      if (err == EAGAIN) err = ETIMEDOUT;
      ResolveDone(it->id, err);
      it = v.erase(it);
    }
    if (!v.empty()) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      lock.lock();
    }
  }
}

void StartResolver() {
  static std::once_flag once;
  std::call_once(once, [] { std::thread(ResolverLoop).detach(); });
}

int BindTo(IdPriv* p, const sockaddr* addr) {
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) {
    return EAFNOSUPPORT;
  }
  if (p->id.route.addr.src_addr.sa_family != 0) return EINVAL;  // bound
  CmDevice* dev = nullptr;
  uint8_t gid_index = 0;
  // A loopback address binds as the wildcard does (the kernel's rdma_cm:
  // no device until a connection picks one; rdma_listen on all devices),
  // and the id keeps reporting the address it was given.
  if (!IsAnyAddr(addr)) {
    dev = DeviceOfAddr(addr, &gid_index);
    if (dev == nullptr) return ENODEV;
  }
  uint16_t port = 0;
  if (const int err = ReservePort(p->id.ps, PortOf(addr), &port); err != 0) {
    return err;
  }
  p->reserved_port = port;
  std::memcpy(&p->id.route.addr.src_storage, addr, SockaddrLen(addr));
  SetPort(&p->id.route.addr.src_addr, port);
  if (dev != nullptr) AttachDevice(p, dev, gid_index);
  return 0;
}

}  // namespace

IdPriv* AllocId(Channel* chan, void* context, rdma_port_space ps,
                ibv_qp_type qp_type) {
  auto* p = new (std::nothrow) IdPriv;
  if (p == nullptr) return nullptr;
  std::memset(&p->id, 0, sizeof(p->id));
  p->id.context = context;
  p->id.ps = ps;
  p->id.qp_type = qp_type;
  if (chan == nullptr) {
    chan = NewChannel();
    if (chan == nullptr) {
      delete p;
      return nullptr;
    }
    p->sync = true;
  }
  p->chan = chan;
  p->id.channel = &chan->channel;
  return p;
}

void FreeId(IdPriv* p) {
  {
    std::lock_guard<std::mutex> lock(Mu());
    ReleasePort(p->id.ps, p->reserved_port);
  }
  if (p->sync) DeleteChannel(p->chan);
  delete p->ep_qp_init_attr;
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->mu);
  delete p;
}

void AttachDevice(IdPriv* p, CmDevice* dev, uint8_t gid_index) {
  p->dev = dev;
  p->id.verbs = dev->verbs;
  if (p->id.pd == nullptr) p->id.pd = dev->pd;
  p->id.port_num = 1;
  p->sgid_index = gid_index;
  rdma_ib_addr& ib = p->id.route.addr.addr.ibaddr;
  if (gid_index < dev->gids.size()) {
    std::memcpy(&ib.sgid, &dev->gids[gid_index], sizeof(ib.sgid));
  }
  ib.pkey = htobe16(0xFFFF);
}

void BuildPath(IdPriv* p) {
  ibv_sa_path_rec& r = p->path;
  r = ibv_sa_path_rec{};
  const rdma_ib_addr& ib = p->id.route.addr.addr.ibaddr;
  r.dgid = ib.dgid;
  r.sgid = ib.sgid;
  r.hop_limit = p->hop_limit;
  r.traffic_class = p->tos;
  r.reversible = 1;
  r.numb_path = 1;
  r.pkey = htobe16(0xFFFF);
  r.mtu_selector = 2;  // exactly
  r.mtu = static_cast<uint8_t>(p->dev->port.active_mtu);
  r.rate_selector = 2;
  r.rate = IBV_RATE_100_GBPS;
  r.packet_life_time_selector = 2;
  r.packet_life_time = kRocePacketLifetime;
  p->id.route.path_rec = &p->path;
  p->id.route.num_paths = 1;
}

int CmCall(IdPriv* p, MsgType type, uint32_t handle) {
  if (p->dev == nullptr) return ENODEV;
  return CmIdCall(p->dev, type, handle);
}

}  // namespace rocemu::rdmacm

namespace verbs = rocemu::verbs;

extern "C" {

using namespace rocemu::rdmacm;

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
                   rdma_port_space ps) {
  if (id == nullptr) return Err(EINVAL);
  if (const int err = Init(); err != 0) return Err(err);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB &&
      ps != RDMA_PS_IB) {
    return Err(EPROTONOSUPPORT);
  }
  const ibv_qp_type qp_type =
      (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
  IdPriv* p = AllocId(channel == nullptr ? nullptr : Chan(channel), context, ps,
                      qp_type);
  if (p == nullptr) return Err(ENOMEM);
  *id = &p->id;
  return 0;
}

int rdma_destroy_id(rdma_cm_id* id) {
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  std::vector<IdPriv*> orphans;
  {
    std::lock_guard<std::mutex> lock(Mu());
    LeaveAll(p);
    if (p->handle != 0 && p->dev != nullptr) {
      UnregisterId(p->dev, p->handle);
      (void)CmCall(p, MsgType::kCmDestroy, p->handle);
    }
    for (auto [dev, h] : p->listens) {
      UnregisterId(dev, h);
      (void)CmIdCall(dev, MsgType::kCmDestroy, h);
    }
    p->listens.clear();
    auto& v = Pending();
    v.erase(std::remove_if(v.begin(), v.end(),
                           [p](const PendingResolve& r) { return r.id == p; }),
            v.end());
    DropQueued(p, &orphans);
  }
  if (id->event != nullptr) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  pthread_mutex_lock(&p->mu);
  while (p->events_completed < p->events_reported) {
    pthread_cond_wait(&p->cond, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  FreeId(p);
  for (IdPriv* o : orphans) rdma_destroy_id(&o->id);
  return 0;
}

int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
  if (id == nullptr || addr == nullptr) return Err(EINVAL);
  std::lock_guard<std::mutex> lock(Mu());
  return Err(BindTo(Priv(id), addr));
}

int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr,
                      int timeout_ms) {
  if (id == nullptr || dst_addr == nullptr) return Err(EINVAL);
  if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6) {
    return Err(EAFNOSUPPORT);
  }
  IdPriv* p = Priv(id);
  {
    std::lock_guard<std::mutex> lock(Mu());
    if (p->id.route.addr.src_addr.sa_family == 0) {
      sockaddr_storage any{};
      if (src_addr != nullptr) {
        std::memcpy(&any, src_addr, SockaddrLen(src_addr));
      } else {
        any.ss_family = dst_addr->sa_family;
      }
      if (const int err = BindTo(p, reinterpret_cast<sockaddr*>(&any));
          err != 0) {
        return Err(err);
      }
    }
    if (IsAnyAddr(dst_addr)) {
      // This host itself, as the kernel's rdma_cm resolves it (its
      // cma_resolve_loopback): the id's device, else the first active
      // one, no neighbour to ask; the addresses, and the GIDs reported
      // from them, are the loopback ones. A RoCE port has no route to
      // them: rdma_resolve_route then fails with ENODEV, as there.
      if (p->dev == nullptr) {
        CmDevice* dev = LoopbackDevice();
        if (dev == nullptr) return Err(ENODEV);
        AttachDevice(p, dev, 0);
        SetLoopback(&p->id.route.addr.src_storage);
      }
      std::memcpy(&p->id.route.addr.dst_storage, dst_addr,
                  SockaddrLen(dst_addr));
      rdma_ib_addr& ib = p->id.route.addr.addr.ibaddr;
      SockaddrToGid(&p->id.route.addr.src_addr, &ib.sgid);
      SockaddrToGid(dst_addr, &ib.dgid);
      p->addr_resolved = true;
      p->route_resolved = false;
      ResolveDone(p, 0);
    } else {
      if (p->dev == nullptr) {
        // Bound to any address: the device towards dst gives ours.
        uint8_t gid_index = 0;
        CmDevice* dev = PickDevice(dst_addr, &gid_index);
        if (dev == nullptr) return Err(ENODEV);
        AttachDevice(p, dev, gid_index);
        GidToSockaddr(dev->gids[gid_index].raw, p->reserved_port,
                      &p->id.route.addr.src_storage);
      }
      std::memcpy(&p->id.route.addr.dst_storage, dst_addr,
                  SockaddrLen(dst_addr));
      ibv_gid dgid;
      SockaddrToGid(dst_addr, &dgid);
      std::memcpy(&p->id.route.addr.addr.ibaddr.dgid, &dgid, sizeof(dgid));
      p->addr_resolved = false;
      p->route_resolved = false;
      const int err = TryResolve(p);
      if (err == EAGAIN) {
        const int wait = timeout_ms > 0 ? timeout_ms : 2000;
        Pending().push_back({p, verbs::client::MonotonicMs() + wait});
        StartResolver();
        PendingCv().notify_one();
      } else {
        ResolveDone(p, err);
      }
    }
  }
  return Complete(p);
}

int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  (void)timeout_ms;  // the route is known at once
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  {
    std::lock_guard<std::mutex> lock(Mu());
    if (!p->addr_resolved || p->dev == nullptr) return Err(EINVAL);
    if (IsAnyAddr(&p->id.route.addr.dst_addr)) return Err(ENODEV);
    BuildPath(p);
    p->route_resolved = true;
    Event* e = NewEvent(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    if (e == nullptr) return Err(ENOMEM);
    Queue(e);
  }
  return Complete(p);
}

int rdma_listen(rdma_cm_id* id, int backlog) {
  (void)backlog;  // the daemon's CM takes every request the app accepts
  if (id == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  std::lock_guard<std::mutex> lock(Mu());
  if (p->listening) return Err(EINVAL);
  if (p->id.route.addr.src_addr.sa_family == 0) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (const int err = BindTo(p, reinterpret_cast<sockaddr*>(&any));
        err != 0) {
      return Err(err);
    }
  }
  verbs::wire::CmListenReq req{};
  req.service_id = ServiceId(p->id.ps, p->reserved_port);
  // The kernel's rdma_cm takes only REQs for its id's QP type: an XRC
  // REQ on an RC service (or the reverse) is rejected by the daemon's CM.
  req.qp_type = static_cast<uint8_t>(p->id.qp_type);
  std::vector<CmDevice*> on;
  if (p->dev != nullptr) {
    req.bound = 1;
    std::memcpy(req.bound_gid, &p->id.route.addr.addr.ibaddr.sgid, 16);
    on.push_back(p->dev);
  } else {
    for (CmDevice* d : Devices()) {
      if (!d->dead) on.push_back(d);
    }
  }
  int err = on.empty() ? ENODEV : 0;
  for (CmDevice* d : on) {
    verbs::wire::CmIdResp resp{};
    err = verbs::client::Call(d->rc, MsgType::kCmListen, req, &resp);
    if (err != 0) break;
    p->listens.emplace_back(d, resp.id);
    RegisterId(d, resp.id, p);
  }
  if (err != 0) {
    for (auto [d, h] : p->listens) {
      UnregisterId(d, h);
      (void)CmIdCall(d, MsgType::kCmDestroy, h);
    }
    p->listens.clear();
    return Err(err == EEXIST ? EADDRINUSE : err);
  }
  p->listening = true;
  return 0;
}

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  if (listen == nullptr || id == nullptr) return Err(EINVAL);
  IdPriv* l = Priv(listen);
  if (!l->sync) return Err(EINVAL);
  if (listen->event != nullptr) {
    rdma_ack_cm_event(listen->event);
    listen->event = nullptr;
  }
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(listen->channel, &event) != 0) return -1;
  int err = 0;
  if (event->event == RDMA_CM_EVENT_REJECTED) {
    err = ECONNREFUSED;
  } else if (event->status != 0) {
    err = event->status < 0 ? -event->status : event->status;
  } else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    err = EINVAL;
  }
  if (err == 0 && l->ep_qp_init_attr != nullptr) {
    ibv_qp_init_attr attr = *l->ep_qp_init_attr;
    if (rdma_create_qp(event->id, listen->pd, &attr) != 0) err = errno;
  }
  if (err != 0) {
    listen->event = event;
    return Err(err);
  }
  *id = event->id;
  (*id)->event = event;
  return 0;
}

int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval,
                    size_t optlen) {
  if (id == nullptr || optval == nullptr) return Err(EINVAL);
  IdPriv* p = Priv(id);
  if (level == RDMA_OPTION_ID) {
    switch (optname) {
      case RDMA_OPTION_ID_TOS:
        if (optlen != sizeof(uint8_t)) return Err(EINVAL);
        p->tos = *static_cast<uint8_t*>(optval);
        p->tos_set = true;
        return 0;
      case RDMA_OPTION_ID_REUSEADDR:
      case RDMA_OPTION_ID_AFONLY:
        if (optlen != sizeof(int)) return Err(EINVAL);
        return 0;
      case RDMA_OPTION_ID_ACK_TIMEOUT:
        if (optlen != sizeof(uint8_t)) return Err(EINVAL);
        p->ack_timeout = std::min<uint8_t>(*static_cast<uint8_t*>(optval), 31);
        p->ack_timeout_set = true;
        return 0;
      default:
        return Err(ENOSYS);
    }
  }
  if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
    // Path records come from the route we build; an application's own
    // (an SA's) has nothing to add on RoCE.
    return 0;
  }
  return Err(ENOSYS);
}

uint16_t rdma_get_src_port(rdma_cm_id* id) {
  return htons(PortOf(&id->route.addr.src_addr));
}

uint16_t rdma_get_dst_port(rdma_cm_id* id) {
  return htons(PortOf(&id->route.addr.dst_addr));
}

}  // extern "C"
