// The drop-in librdmacm.so.1: rdma_cm over rocemud's Communication Manager.
//
// Real librdmacm is a thin layer over the kernel's ucma (/dev/infiniband/
// rdma_cm). Here the daemon's CM (nic/cm, reached through the verbs session
// of each device) plays the ucma's part, and this library does the rest the
// kernel's rdma_cm does: IP addresses to GIDs and next-hop MACs, local route
// records (RoCE has no subnet administrator), the rdma_cm IP header of a
// REQ, the event channel, and the QP transitions (with the attributes the
// CM computes) around REP and accept.
//
// Devices: the library opens each rocemu device once for the process (its
// ibv_context is what cm_id->verbs points at) and opens the CM on that
// session; the daemon's CM events arrive on one ring per device and are
// sorted here onto the event channel of the id they name.
#ifndef ROCEMU_VERBS_RDMACM_CMA_H_
#define ROCEMU_VERBS_RDMACM_CMA_H_

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "verbs/client/client_control.h"
#include "verbs/client/client_objects.h"
#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"

namespace rocemu::rdmacm {

// rdma_cm's well-known Q_Key of RDMA_PS_UDP / RDMA_PS_IPOIB ids.
inline constexpr uint32_t kUdpQkey = 0x01234567;
// What rdma_cm puts in a RoCE path record (CMA_IBOE_PACKET_LIFETIME).
inline constexpr uint8_t kRocePacketLifetime = 18;

// One rocemu device as the CM sees it: the library's own context and the
// daemon's CM event ring on it.
struct CmDevice {
  ibv_device* device = nullptr;
  ibv_context* verbs = nullptr;
  // The device's default PD: an id that acquires the device gets it, as
  // librdmacm gives one (rdma_create_qp with no PD uses it).
  ibv_pd* pd = nullptr;
  // The XRC domain librdmacm opens itself (fd -1, O_CREAT) for XRC_RECV
  // ids given none: their TGT QPs and XRC SRQs share it. Closed when the
  // last of those goes (`xrcd_users`).
  ibv_xrcd* xrcd = nullptr;
  int xrcd_users = 0;
  rocemu_context* rc = nullptr;
  verbs::ShmRing ring;  // CmEventSlot
  int event_fd = -1;    // the daemon signals it; in every channel's set
  ibv_device_attr attr{};
  ibv_port_attr port{};
  std::vector<ibv_gid> gids;  // index = GID index; zero = unused
  bool dead = false;
};

struct IdPriv;

// An event handed out (or queued): the ABI struct first, then the
// private data its param points at.
struct Event {
  rdma_cm_event event;  // must be first
  IdPriv* id;
  uint8_t private_data[224];
};

struct Channel {
  rdma_event_channel channel;  // channel.fd: an epoll set (see events.cc)
  int own_fd = -1;             // eventfd, readable while `queue` is not empty
  std::deque<Event*> queue;
  // Threads in rdma_get_cm_event on it, and whether it was destroyed under
  // them (then it is kept: see DeleteChannel).
  int waiters = 0;
  bool destroyed = false;
};

struct IdPriv {
  rdma_cm_id id;  // must be first
  Channel* chan = nullptr;
  bool sync = false;  // created without a channel: calls wait for events
  CmDevice* dev = nullptr;
  uint32_t handle = 0;  // the daemon's CM id (0: none yet)
  // A listener on every device has one daemon id per device.
  std::vector<std::pair<CmDevice*, uint32_t>> listens;
  bool listening = false;
  uint16_t reserved_port = 0;  // ReservePort'ed by bind / resolve_addr
  uint8_t sgid_index = 0;
  uint8_t dmac[6] = {};
  uint8_t hop_limit = 64;
  bool addr_resolved = false;
  bool route_resolved = false;
  uint8_t tos = 0;
  bool tos_set = false;
  uint8_t ack_timeout = 0;
  bool ack_timeout_set = false;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  bool connect_error = false;
  // The CM reported the connection gone (the peer's DREQ, answered already,
  // or our DREQ's DREP): rdma_disconnect has nothing left to send.
  bool disconnected = false;
  // The REP's parameters, reported with ESTABLISHED once the RTU is out;
  // or, without a QP, reported as CONNECT_RESPONSE (and the daemon's
  // ESTABLISHED after rdma_establish is not reported again).
  bool rep_reported = false;
  Event rep{};
  bool have_rep = false;
  // Events handed to the application and acknowledged (rdma_destroy_id
  // waits for the two to meet).
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  uint32_t events_reported = 0;
  uint32_t events_completed = 0;
  ibv_sa_path_rec path{};
  ibv_qp_init_attr* ep_qp_init_attr = nullptr;  // rdma_create_ep listeners
  // The id's TGT QP / XRC SRQ is in the device's own XRC domain (holds a
  // use of it).
  bool qp_in_dev_xrcd = false;
  bool srq_in_dev_xrcd = false;
  ibv_ece local_ece{};
  // Multicast groups joined (multicast.cc).
  struct Join {
    ibv_gid mgid;
    bool attached;  // the id's QP was attached to the group
  };
  std::vector<Join> joins;
};

inline IdPriv* Priv(rdma_cm_id* id) { return reinterpret_cast<IdPriv*>(id); }

// --- the process's CM state (devices.cc) ---------------------------------
// One lock over devices, channels, ids and queues. Never held while
// waiting for an event; held across the daemon calls an event's
// processing makes (the daemon never calls back).
std::mutex& Mu();
// Opens every rocemu device once (first call); 0 or an errno value.
int Init();
const std::vector<CmDevice*>& Devices();
// The device (and GID index) holding `addr` (sockaddr_in/in6); nullptr
// when none does.
CmDevice* DeviceOfAddr(const sockaddr* addr, uint8_t* gid_index);
CmDevice* DeviceOfContext(ibv_context* verbs);
// The device and GID index to reach `dst` from: the one holding dst itself,
// else the one the kernel's route picks, else the GID sharing the longest
// prefix with dst.
CmDevice* PickDevice(const sockaddr* dst, uint8_t* gid_index);
// Where a loopback destination goes, as the kernel's rdma_cm picks it: the
// first device whose port is active (else the first device); nullptr
// without devices.
CmDevice* LoopbackDevice();

// --- addresses (addr.cc) ----------------------------------------------------
bool SockaddrToGid(const sockaddr* sa, ibv_gid* gid);
// ::ffff:a.b.c.d (nic::GidIsIpv4Mapped on the raw bytes).
bool IsIpv4Mapped(const uint8_t gid[16]);
// The sockaddr form of a GID (IPv4-mapped -> AF_INET), with `port`.
void GidToSockaddr(const uint8_t gid[16], uint16_t port, sockaddr_storage* out);
socklen_t SockaddrLen(const sockaddr* sa);
bool IsWildcard(const sockaddr* sa);
// 127.0.0.0/8 or ::1.
bool IsLoopback(const sockaddr* sa);
// What the kernel's rdma_cm treats as no address in particular (its
// cma_any_addr): the wildcard or a loopback address. Bound to one, an id
// has no device and listens on all; resolved as a destination, one is the
// first active device itself.
bool IsAnyAddr(const sockaddr* sa);
// The family's loopback address into `ss` (port kept; AF_INET unless
// `ss` is AF_INET6).
void SetLoopback(sockaddr_storage* ss);
uint16_t PortOf(const sockaddr* sa);  // host order
void SetPort(sockaddr* sa, uint16_t port);
uint64_t ServiceId(rdma_port_space ps, uint16_t port);
// An unused local port for `ps` (process-wide, 32768..60999); ports taken
// by bind are recorded and released at destroy.
int ReservePort(rdma_port_space ps, uint16_t port, uint16_t* out);
void ReleasePort(rdma_port_space ps, uint16_t port);

// --- multicast (multicast.cc) -----------------------------------------------
// rdma_destroy_id: detach the id's QP from the groups it still has.
void LeaveAll(IdPriv* id);
// --- events (events.cc) -----------------------------------------------------
Channel* NewChannel();
Channel* NewChannelLocked();  // under Mu()
void DeleteChannel(Channel* ch);
Channel* Chan(rdma_event_channel* ch);
// Adds a new device's event fd to every channel's set (under Mu()).
void WatchDevice(CmDevice* dev);
Event* NewEvent(IdPriv* id, rdma_cm_event_type type, int status);
// Queues an event on its id's channel (under Mu()).
void Queue(Event* e);
// Drops the not-yet-delivered events of an id (under Mu()); the new ids of
// connection requests among them are the caller's to destroy.
void DropQueued(IdPriv* id, std::vector<IdPriv*>* orphans);
void RegisterId(CmDevice* dev, uint32_t handle, IdPriv* id);
void UnregisterId(CmDevice* dev, uint32_t handle);
// Drains the devices' CM rings onto the channels (under Mu()), and with
// `drain_fds` their eventfds first.
void Pump(bool drain_fds = true);
// ucma_complete: a synchronous id's call waits for its event.
int Complete(IdPriv* id);

// --- ids (id.cc) ------------------------------------------------------------
IdPriv* AllocId(Channel* chan, void* context, rdma_port_space ps,
                ibv_qp_type qp_type);
void FreeId(IdPriv* id);
// The id's device and its local address, once known.
void AttachDevice(IdPriv* id, CmDevice* dev, uint8_t gid_index);
// RoCE path record from the id's addresses (rdma_resolve_route).
void BuildPath(IdPriv* id);

// --- QPs (qp.cc) ------------------------------------------------------------
// QP transitions as rdma_cm makes them, with the CM's attributes.
// rdma_cm's transitions of the id's QP up to `state` (RTR, or RTS through
// RTR) with the CM's attributes, then the RTU if `establish`: one
// cm_modify_qp round trip.
int ModifyQpTo(IdPriv* id, ibv_qp_state state, uint8_t resp_res,
               uint8_t init_depth, bool establish);
int ModifyQpRtr(IdPriv* id, uint8_t resp_res);
int ModifyQpRts(IdPriv* id, uint8_t init_depth);
int ModifyQpErr(IdPriv* id);
// Records `state` in the id's ibv_qp as ibv_modify_qp would, for a
// transition the daemon made within a CM request.
void NoteQpState(IdPriv* id, ibv_qp_state state);
// CQs (with completion channels) of the sizes given (0: none) for an id
// whose QP or XRC SRQ was given none; 0 or an errno value (none left made).
int CreateCqs(rdma_cm_id* id, uint32_t send_size, uint32_t recv_size);
void DestroyCqs(rdma_cm_id* id);

// --- XRC (srq.cc) -----------------------------------------------------------
// The device's own XRC domain, opened on first use, and one more use of
// it; nullptr (errno set) when it cannot be opened.
ibv_xrcd* HoldDevXrcd(IdPriv* id);
// One use less; the domain is closed with its last.
void ReleaseDevXrcd(IdPriv* id);
// A CM request answered by status only, on a device's session; 0 or an
// errno value.
template <typename Req>
int CmRequest(const CmDevice* dev, verbs::wire::MsgType type, const Req& req) {
  return verbs::client::Call(dev->rc, type, req,
                             static_cast<verbs::wire::Empty*>(nullptr));
}
// The calls naming one daemon id (establish, disconnect, destroy).
inline int CmIdCall(const CmDevice* dev, verbs::wire::MsgType type,
                    uint32_t handle) {
  return CmRequest(dev, type, verbs::wire::CmIdReq{handle, 0});
}
// The same on the id's own device (ENODEV before it has one).
int CmCall(IdPriv* id, verbs::wire::MsgType type, uint32_t handle);

// errno = err; -1 (librdmacm's convention) or 0.
inline int Err(int err) {
  if (err == 0) return 0;
  errno = err;
  return -1;
}

}  // namespace rocemu::rdmacm

#endif  // ROCEMU_VERBS_RDMACM_CMA_H_
