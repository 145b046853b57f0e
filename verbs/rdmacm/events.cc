// Event channels and the CM events on them.
//
// A channel's fd (what applications poll) is an epoll set over the
// channel's own eventfd, readable while events wait in its queue, and the
// event fd of every device, which the daemon signals when it puts a CM
// event in that device's ring. Whoever waits on a channel drains the
// devices' rings and sorts each event onto the channel of the id it names,
// doing on the way what the kernel's rdma_cm does before an application
// sees the event (a new id for a connection request; the QP to RTR and RTS
// and the RTU on a REP).
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "nic/cm/cm_types.h"
#include "verbs/client/client_control.h"
#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

using nic::CmEventType;
using verbs::CmEventSlot;
using verbs::wire::MsgType;

absl::flat_hash_set<Channel*>& Channels() {
  static auto* s = new absl::flat_hash_set<Channel*>;
  return *s;
}

absl::flat_hash_map<std::pair<const CmDevice*, uint32_t>, IdPriv*>& Ids() {
  static auto* m =
      new absl::flat_hash_map<std::pair<const CmDevice*, uint32_t>, IdPriv*>;
  return *m;
}

// In a storm of connections the next event follows within microseconds;
// a thread that sleeps in poll(2) for it must be woken from the daemon's
// CPU, which on a VM costs ~20 us (see AwaitReply in client_control.cc).
// So a blocking rdma_get_cm_event first looks for a while without
// sleeping, yielding the CPU between looks.
constexpr int64_t kEventSpinNs = 50'000;

void SignalOwn(Channel* ch) {
  const uint64_t one = 1;
  (void)!write(ch->own_fd, &one, sizeof(one));
}

void DrainFd(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) == sizeof(v)) {
  }
}

IdPriv* Lookup(const CmDevice* dev, uint32_t handle) {
  auto it = Ids().find({dev, handle});
  return it == Ids().end() ? nullptr : it->second;
}

void CopyConn(Event* e, const CmEventSlot& s, uint32_t qp_num) {
  rdma_conn_param& c = e->event.param.conn;
  const size_t n =
      std::min<size_t>(s.private_data_len, sizeof(e->private_data));
  std::memcpy(e->private_data, s.private_data, n);
  c.private_data = n != 0 ? e->private_data : nullptr;
  c.private_data_len = static_cast<uint8_t>(n);
  c.responder_resources = s.responder_resources;
  c.initiator_depth = s.initiator_depth;
  c.flow_control = s.flow_control;
  c.retry_count = s.retry_count;
  c.rnr_retry_count = s.rnr_retry_count;
  c.srq = s.srq;
  c.qp_num = qp_num;
}

// The address vector towards the peer of `id` (ud event parameters).
void AhOf(const IdPriv* id, ibv_ah_attr* ah) {
  *ah = ibv_ah_attr{};
  ah->is_global = 1;
  ah->port_num = id->id.port_num != 0 ? id->id.port_num : 1;
  std::memcpy(&ah->grh.dgid, &id->id.route.addr.addr.ibaddr.dgid, 16);
  ah->grh.sgid_index = id->sgid_index;
  ah->grh.hop_limit = id->hop_limit;
  ah->grh.traffic_class = id->tos;
  ah->sl = 0;
}

void CopyUd(Event* e, const CmEventSlot& s, const IdPriv* id, uint32_t qpn,
            uint32_t qkey) {
  rdma_ud_param& u = e->event.param.ud;
  const size_t n =
      std::min<size_t>(s.private_data_len, sizeof(e->private_data));
  std::memcpy(e->private_data, s.private_data, n);
  u.private_data = n != 0 ? e->private_data : nullptr;
  u.private_data_len = static_cast<uint8_t>(n);
  AhOf(id, &u.ah_attr);
  u.qp_num = qpn;
  u.qkey = qkey;
}

// A connection request on listener `l`: a new id on the listener's
// channel, carrying the requester's addresses and path.
void OnRequest(CmDevice* dev, const CmEventSlot& s, IdPriv* l) {
  IdPriv* n = AllocId(l->chan, l->id.context, l->id.ps, l->id.qp_type);
  if (n == nullptr) {
    verbs::wire::CmRejectReq r{};
    r.id = s.id;
    r.reason = 3;  // no resources
    (void)CmRequest(dev, MsgType::kCmReject, r);
    return;
  }
  n->handle = s.id;
  RegisterId(dev, s.id, n);
  AttachDevice(n, dev, s.path.sgid_index);
  const uint16_t local_port = PortOf(&l->id.route.addr.src_addr);
  if (s.ip.present) {
    GidToSockaddr(s.ip.dst_addr, local_port, &n->id.route.addr.src_storage);
    GidToSockaddr(s.ip.src_addr, s.ip.src_port, &n->id.route.addr.dst_storage);
  } else {
    GidToSockaddr(dev->gids[n->sgid_index].raw, local_port,
                  &n->id.route.addr.src_storage);
    GidToSockaddr(s.path.dgid, 0, &n->id.route.addr.dst_storage);
  }
  std::memcpy(&n->id.route.addr.addr.ibaddr.dgid, s.path.dgid, 16);
  std::memcpy(n->dmac, s.path.dmac, 6);
  n->hop_limit = s.path.hop_limit;
  n->tos = s.path.traffic_class;
  n->addr_resolved = true;
  BuildPath(n);
  n->route_resolved = true;
  n->initiator_depth = s.initiator_depth;
  n->responder_resources = s.responder_resources;
  if (l->sync) {
    // rdma_get_request's ids wait on their own channel, as the listener.
    Channel* own = NewChannelLocked();
    if (own != nullptr) {
      n->chan = own;
      n->id.channel = &own->channel;
      n->sync = true;
    }
  }
  // Counted on the listener: its acknowledgement completes the listener's
  // event (the listener may not be destroyed under it).
  Event* e = NewEvent(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
  if (e == nullptr) return;
  e->event.id = &n->id;
  e->event.listen_id = &l->id;
  if (l->id.qp_type == IBV_QPT_UD) {
    CopyUd(e, s, n, s.remote_qpn, s.remote_qkey);
  } else {
    CopyConn(e, s, s.remote_qpn);
  }
  Queue(e);
}

// The REP of our REQ: with a QP, RTR and RTS and the RTU; the application
// hears ESTABLISHED once the daemon reports the RTU sent. Without one it
// hears CONNECT_RESPONSE and calls rdma_establish.
void OnReply(const CmEventSlot& s, IdPriv* id) {
  id->rep = Event{};
  id->rep.event.event = RDMA_CM_EVENT_ESTABLISHED;
  id->rep.event.id = &id->id;
  id->rep.id = id;
  CopyConn(&id->rep, s, s.remote_qpn);
  id->have_rep = true;
  if (id->id.qp == nullptr) {
    Event* e = NewEvent(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
    if (e == nullptr) return;
    CopyConn(e, s, s.remote_qpn);
    id->rep_reported = true;
    Queue(e);
    return;
  }
  // RTR, RTS and the RTU in one round trip.
  const int err = ModifyQpTo(id, IBV_QPS_RTS, RDMA_MAX_RESP_RES,
                             RDMA_MAX_INIT_DEPTH, /*establish=*/true);
  if (err == 0) return;
  ModifyQpErr(id);
  verbs::wire::CmRejectReq r{};
  r.id = id->handle;
  r.reason = 28;  // consumer: our QP could not take the REP
  (void)CmRequest(id->dev, MsgType::kCmReject, r);
  id->connect_error = true;
  Event* e = NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -err);
  if (e != nullptr) Queue(e);
}

void Translate(CmDevice* dev, const CmEventSlot& s) {
  const auto type = static_cast<CmEventType>(s.type);
  if (type == CmEventType::kReqReceived ||
      type == CmEventType::kSidrReqReceived) {
    IdPriv* l = Lookup(dev, s.listen_id);
    if (l == nullptr) {
      // The listener went while the request was on its way.
      (void)CmIdCall(dev, MsgType::kCmDestroy, s.id);
      return;
    }
    OnRequest(dev, s, l);
    return;
  }
  IdPriv* id = Lookup(dev, s.id);
  if (id == nullptr) return;  // destroyed meanwhile
  Event* e = nullptr;
  switch (type) {
    case CmEventType::kRepReceived:
      OnReply(s, id);
      return;
    case CmEventType::kEstablished:
      if (id->rep_reported) {
        id->rep_reported = false;  // CONNECT_RESPONSE said it already
        return;
      }
      e = NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0);
      if (e == nullptr) return;
      if (id->have_rep) {
        std::memcpy(e->private_data, id->rep.private_data,
                    sizeof(e->private_data));
        e->event.param = id->rep.event.param;
        if (e->event.param.conn.private_data != nullptr) {
          e->event.param.conn.private_data = e->private_data;
        }
      } else {
        CopyConn(e, s, s.remote_qpn);
      }
      break;
    case CmEventType::kRejected:
      if (id->connect_error) return;
      e = NewEvent(id, RDMA_CM_EVENT_REJECTED, s.reason);
      if (e == nullptr) return;
      CopyConn(e, s, 0);
      ModifyQpErr(id);
      break;
    case CmEventType::kUnreachable:
      e = NewEvent(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      ModifyQpErr(id);
      break;
    case CmEventType::kConnectError:
      if (id->connect_error) return;
      e = NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
      break;
    case CmEventType::kDisconnected:
      id->disconnected = true;
      if (id->connect_error) return;
      e = NewEvent(id, RDMA_CM_EVENT_DISCONNECTED, 0);
      if (e != nullptr) CopyConn(e, s, 0);
      break;
    case CmEventType::kTimewaitExit:
      e = NewEvent(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
      break;
    case CmEventType::kSidrRepReceived:
      if (s.sidr_status != 0) {
        e = NewEvent(id, RDMA_CM_EVENT_UNREACHABLE, s.sidr_status);
        if (e != nullptr) CopyUd(e, s, id, 0, 0);
      } else {
        e = NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0);
        if (e != nullptr) CopyUd(e, s, id, s.remote_qpn, s.remote_qkey);
      }
      break;
    case CmEventType::kSidrUnreachable:
      e = NewEvent(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      break;
    default:  // MRA: the CM waits longer; nothing to tell
      return;
  }
  if (e != nullptr) Queue(e);
}

}  // namespace

// Drains every device's ring (under Mu()).
void Pump(bool drain_fds) {
  for (CmDevice* dev : Devices()) {
    if (!dev->ring.valid()) continue;
    if (drain_fds) DrainFd(dev->event_fd);
    CmEventSlot s;
    while (dev->ring.Pop(&s) == verbs::RingResult::kOk) Translate(dev, s);
  }
}

namespace {

// Adds `dev`'s fds to a channel's set: its CM eventfd, and its session
// socket's hang-up (the daemon died), so that a waiter hears of a removed
// device at once, as from the kernel's rdma_cm.
void AddDevice(Channel* ch, CmDevice* dev) {
  epoll_event de{};
  de.events = EPOLLIN;
  de.data.fd = dev->event_fd;
  epoll_ctl(ch->channel.fd, EPOLL_CTL_ADD, dev->event_fd, &de);
  if (dev->dead) return;
  epoll_event hup{};
  hup.events = EPOLLRDHUP;
  hup.data.fd = dev->rc->fd;
  epoll_ctl(ch->channel.fd, EPOLL_CTL_ADD, dev->rc->fd, &hup);
}

// A daemon that went takes its ids with it: DEVICE_REMOVAL to each, once.
void CheckDevices() {
  for (CmDevice* dev : Devices()) {
    if (dev->dead || !verbs::client::DaemonGone(dev->rc)) continue;
    dev->dead = true;
    // Its hang-up stays readable: out of every set, or waits would spin.
    for (Channel* ch : Channels()) {
      epoll_ctl(ch->channel.fd, EPOLL_CTL_DEL, dev->rc->fd, nullptr);
    }
    absl::flat_hash_set<IdPriv*> seen;
    for (const auto& [key, id] : Ids()) {
      if (key.first != dev || !seen.insert(id).second) continue;
      Event* e = NewEvent(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
      if (e != nullptr) Queue(e);
    }
  }
}

}  // namespace

Channel* NewChannel() {
  std::lock_guard<std::mutex> lock(Mu());
  return NewChannelLocked();
}

Channel* NewChannelLocked() {
  auto* ch = new (std::nothrow) Channel;
  if (ch == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  ch->own_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ch->channel.fd = epoll_create1(EPOLL_CLOEXEC);
  if (ch->own_fd < 0 || ch->channel.fd < 0) {
    const int err = errno;
    if (ch->own_fd >= 0) close(ch->own_fd);
    if (ch->channel.fd >= 0) close(ch->channel.fd);
    delete ch;
    errno = err;
    return nullptr;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = ch->own_fd;
  epoll_ctl(ch->channel.fd, EPOLL_CTL_ADD, ch->own_fd, &ev);
  for (CmDevice* dev : Devices()) AddDevice(ch, dev);
  Channels().insert(ch);
  return ch;
}

void DeleteChannel(Channel* ch) {
  {
    std::lock_guard<std::mutex> lock(Mu());
    Channels().erase(ch);
    for (Event* e : ch->queue) delete e;
    ch->queue.clear();
    // A thread still waits on it (rping's CM thread when main tears
    // down): with the kernel's librdmacm it stays blocked in read(2) on
    // the closed fd until the process ends. So here: the channel and its
    // fds are left to it (rdma_get_cm_event then waits for good), instead
    // of returning EBADF from freed memory, on which rping's thread exits
    // the process with 255 while main is still finishing cleanly.
    if (ch->waiters > 0) {
      ch->destroyed = true;
      return;
    }
  }
  close(ch->channel.fd);
  close(ch->own_fd);
  delete ch;
}

Channel* Chan(rdma_event_channel* c) { return reinterpret_cast<Channel*>(c); }

void WatchDevice(CmDevice* dev) {
  for (Channel* ch : Channels()) AddDevice(ch, dev);
}

Event* NewEvent(IdPriv* id, rdma_cm_event_type type, int status) {
  auto* e = new (std::nothrow) Event{};
  if (e == nullptr) return nullptr;
  e->id = id;
  e->event.id = &id->id;
  e->event.event = type;
  e->event.status = status;
  return e;
}

void Queue(Event* e) {
  Channel* ch = e->id->chan;
  ch->queue.push_back(e);
  SignalOwn(ch);
}

void DropQueued(IdPriv* id, std::vector<IdPriv*>* orphans) {
  for (Channel* ch : Channels()) {
    auto& q = ch->queue;
    for (auto it = q.begin(); it != q.end();) {
      Event* e = *it;
      if (e->id != id) {
        ++it;
        continue;
      }
      // A connection request nobody saw: its new id goes with it.
      if (e->event.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
          e->event.id != &id->id) {
        orphans->push_back(Priv(e->event.id));
      }
      delete e;
      it = q.erase(it);
    }
    if (q.empty()) DrainFd(ch->own_fd);
  }
}

void RegisterId(CmDevice* dev, uint32_t handle, IdPriv* id) {
  Ids()[{dev, handle}] = id;
}

void UnregisterId(CmDevice* dev, uint32_t handle) {
  Ids().erase({dev, handle});
}

int Complete(IdPriv* id) {
  if (!id->sync) return 0;
  if (id->id.event != nullptr) {
    rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  if (rdma_get_cm_event(id->id.channel, &id->id.event) != 0) return -1;
  const rdma_cm_event* ev = id->id.event;
  if (ev->status == 0) return 0;
  if (ev->event == RDMA_CM_EVENT_REJECTED) return Err(ECONNREFUSED);
  return Err(ev->status < 0 ? -ev->status : ev->status);
}

}  // namespace rocemu::rdmacm

namespace verbs = rocemu::verbs;

extern "C" {

using namespace rocemu::rdmacm;

rdma_event_channel* rdma_create_event_channel() {
  if (const int err = Init(); err != 0) {
    errno = err;
    return nullptr;
  }
  Channel* ch = NewChannel();
  return ch == nullptr ? nullptr : &ch->channel;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (channel != nullptr) DeleteChannel(Chan(channel));
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (channel == nullptr || event == nullptr) return Err(EINVAL);
  if (const int err = Init(); err != 0) return Err(err);
  Channel* ch = Chan(channel);
  // O_NONBLOCK on the channel's fd is the application's own.
  const int fl = fcntl(channel->fd, F_GETFL);
  const bool nonblocking = fl >= 0 && (fl & O_NONBLOCK) != 0;
  // From here until it is counted off (leave), DeleteChannel leaves the
  // channel and its fds to this thread: the whole call, as its looks come
  // one after another while it spins.
  {
    std::lock_guard<std::mutex> lock(Mu());
    ++ch->waiters;
  }
  // Destroyed while this thread waited: nothing will ever come, and the
  // kernel's librdmacm would keep it blocked in read(2).
  auto leave = [ch](int ret) {
    bool destroyed;
    {
      std::lock_guard<std::mutex> lock(Mu());
      --ch->waiters;
      destroyed = ch->destroyed;
    }
    while (destroyed) pause();
    return ret;
  };
  const int64_t spin_until = verbs::client::MonotonicNs() + kEventSpinNs;
  bool spun = false;
  for (;;) {
    bool got = false;
    {
      std::lock_guard<std::mutex> lock(Mu());
      if (ch->destroyed) break;
      // A spin's looks read the rings alone; the eventfds (a syscall
      // each) are drained by the look after the spin's poll(2), which
      // finds them readable and returns at once. A spin's look that found
      // an event drains them and looks again before it takes one: left
      // written, they would keep channel->fd readable with nothing to
      // read, and a program that polls it would block in here.
      Pump(/*drain_fds=*/!spun);
      if (spun && !ch->queue.empty()) Pump(/*drain_fds=*/true);
      if (!ch->queue.empty()) {
        Event* e = ch->queue.front();
        ch->queue.pop_front();
        if (ch->queue.empty()) DrainFd(ch->own_fd);
        pthread_mutex_lock(&e->id->mu);
        ++e->id->events_reported;
        pthread_mutex_unlock(&e->id->mu);
        *event = &e->event;
        got = true;
      }
    }
    if (got) return leave(0);
    if (nonblocking) return leave(Err(EAGAIN));
    // While spinning, a yield stands for the wait.
    spun = verbs::client::MonotonicNs() < spin_until;
    if (spun) {
      sched_yield();
      continue;
    }
    // poll(2) first, then what is ready: after a stop and a continue
    // (Ctrl-Z, fg) poll is restarted, where epoll_wait(2) fails with EINTR
    // (signal(7)), and the kernel's librdmacm, blocked in write(2) on its
    // rdma_cm fd, carries on.
    pollfd p{channel->fd, POLLIN, 0};
    int n = poll(&p, 1, 1000);
    int err = errno;
    epoll_event ev{};
    if (n > 0) {
      n = epoll_wait(channel->fd, &ev, 1, 0);
      err = errno;
    }
    // A signal handler ends the wait with -1/EINTR, as it ends write(2) on
    // the kernel's rdma_cm fd.
    if (n < 0) return leave(Err(err));
    if (n == 0 || (n == 1 && (ev.events & (EPOLLRDHUP | EPOLLHUP)) != 0)) {
      std::lock_guard<std::mutex> lock(Mu());
      CheckDevices();
    }
  }
  return leave(0);  // destroyed: leave waits for good
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  if (event == nullptr) return Err(EINVAL);
  Event* e = reinterpret_cast<Event*>(event);
  pthread_mutex_lock(&e->id->mu);
  ++e->id->events_completed;
  pthread_cond_broadcast(&e->id->cond);
  pthread_mutex_unlock(&e->id->mu);
  delete e;
  return 0;
}

const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR:
      return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
      return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE:
      return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED:
      return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED:
      return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED:
      return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN:
      return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR:
      return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE:
      return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    default:
      return "UNKNOWN EVENT";
  }
}

int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  IdPriv* p = Priv(id);
  if (p->sync && channel == nullptr) return Err(EINVAL);
  Channel* to = nullptr;
  bool sync = false;
  if (channel == nullptr) {
    to = NewChannel();
    if (to == nullptr) return -1;
    sync = true;
  } else {
    to = Chan(channel);
  }
  Channel* from = p->chan;
  if (p->sync && id->event != nullptr) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(Mu());
    // Events not yet handed out follow the id.
    auto& q = from->queue;
    for (auto it = q.begin(); it != q.end();) {
      if ((*it)->id == p) {
        to->queue.push_back(*it);
        it = q.erase(it);
      } else {
        ++it;
      }
    }
    if (q.empty()) DrainFd(from->own_fd);
    if (!to->queue.empty()) SignalOwn(to);
    p->chan = to;
    id->channel = &to->channel;
  }
  if (p->sync) DeleteChannel(from);
  p->sync = sync;
  // Events already handed out on the old channel are acknowledged first.
  pthread_mutex_lock(&p->mu);
  while (p->events_completed < p->events_reported) {
    pthread_cond_wait(&p->cond, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return 0;
}

}  // extern "C"
