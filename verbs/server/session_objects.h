// The session server's records of the objects its clients hold (private to
// the server: session_server.cc and session_state_json.cc).
#ifndef ROCEMU_VERBS_SERVER_SESSION_OBJECTS_H_
#define ROCEMU_VERBS_SERVER_SESSION_OBJECTS_H_

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "nic/handles.h"
#include "nic/xrc_domain.h"
#include "verbs/server/resource_limits.h"
#include "verbs/server/session_server.h"
#include "verbs/wire/shm_ring.h"

namespace rocemu::verbs {

constexpr int kMaxFds = 4;
// IBV_WC_RECV: this and the opcodes above it complete receive WQEs.
constexpr uint32_t kFirstRecvOpcode = 128;
constexpr int kMessagesPerPoll = 16;  // per client, for fairness
constexpr uint64_t kListenTag = 0;
// Async events a client may leave unread before further ones are dropped
// (and counted): they are rare, a slow reader must not stall the daemon.
constexpr uint32_t kAsyncEvents = 256;
constexpr uint32_t kCmEvents = 256;
// CM events that find a client's ring full wait in the daemon, in order,
// as the kernel's rdma_cm queues them for a slow reader: each is a step of
// a connection (a dropped ESTABLISHED leaves the peer resending its REP
// until it gives up). Past this many a client that reads none loses the
// newest, counted.
constexpr size_t kCmBacklog = 16384;
// The TTL / hop limit of the daemon's routes (Linux's default), given to
// address vectors whose next hop the daemon resolves.
constexpr uint8_t kRouteHopLimit = 64;

struct SessionServer::Fds {
  int fd[kMaxFds] = {-1, -1, -1, -1};
  int n = 0;
  ~Fds() {
    for (int i = 0; i < n; ++i) {
      if (fd[i] >= 0) close(fd[i]);
    }
  }
  // Hands fd i over to the caller (it will not be closed here).
  int Take(int i) { return i < n ? std::exchange(fd[i], -1) : -1; }
};

struct SessionServer::Client {
  nic::ClientId id = 0;
  int fd = -1;
  PeerCredentials cred;
  bool hello = false;
  bool dead = false;
  // Refused at accept (uid not allowed, too many clients): its first
  // request is answered with this error and the connection closed, so the
  // application learns why instead of seeing a reset connection.
  absl::Status refusal;
  std::string name;
  // Async events (open_async): the ring the daemon writes, the client's
  // eventfd it signals after each event.
  ShmRing async_ring;
  EventFd async_fd;
  // Doorbells (open_doorbells): the ring the client rings, and its wake
  // eventfd (in wake_epoll_fd_).
  ShmRing doorbells;
  EventFd wake;
  // CM events (cm_open): the ring the daemon writes, the event channel's
  // eventfd it signals.
  ShmRing cm_ring;
  EventFd cm_fd;
  std::deque<CmEventSlot> cm_backlog;  // waiting for room in cm_ring
  // What it holds against its uid's caps, and the pages its regions pin
  // against its process's RLIMIT_MEMLOCK (resource_limits.h): given back
  // object by object, and the rest when it goes.
  ResourceUse use;
  uint64_t pinned_pages = 0;
};

struct SessionServer::Cq {
  nic::ClientId owner = 0;
  nic::CqHandle handle = 0;
  // The RNIC's CQ behind it (destroyed only with this entry): every pass
  // looks whether it holds completions, without a lookup by handle.
  const nic::CompletionQueue* nic_cq = nullptr;
  uint32_t cqe = 0;
  ShmRing ring;
  EventFd channel;           // the client's eventfd, when it asked for one
  uint32_t users = 0;        // QPs bound to it
  bool timestamps = false;   // kCreateCqWithTimestamps
  uint64_t queue_bytes = 0;  // its ring, charged to the owner's uid
};

// The last L_Key a queue's owner was found to own, valid while no region
// was released since (SessionServer::mr_releases_). Programs post from one
// region or a few, so the ownership check of a WQE is mostly a compare.
struct SessionServer::OwnedKey {
  uint32_t lkey = 0;
  uint64_t releases = ~uint64_t{0};  // matches no count: nothing learnt yet
};

struct SessionServer::Srq {
  nic::ClientId owner = 0;
  nic::SrqHandle handle = 0;
  nic::PdHandle pd = 0;
  Cq* own_cq = nullptr;  // an XRC or tag-matching SRQ's CQ
  ShmRing ring;
  uint32_t users = 0;   // QPs bound to it
  bool active = false;  // in active_ (its doorbell was taken)
  OwnedKey owned_key;
  uint64_t queue_bytes = 0;  // its ring, charged to the owner's uid
};

struct SessionServer::Qp {
  nic::ClientId owner = 0;
  // An XRC TGT QP is held by whoever made it (owner) and by every client
  // that opened it since (ibv_open_qp); it goes with the last.
  std::vector<nic::ClientId> openers;
  bool charged = true;  // its queues count against the owner's uid
  bool Holds(nic::ClientId id) const {
    return owner == id ||
           std::find(openers.begin(), openers.end(), id) != openers.end();
  }
  uint32_t qpn = 0;
  nic::PdHandle pd = 0;
  ShmRing sq;
  ShmRing rq;  // unused (one slot) when the QP takes receives from an SRQ
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  bool sq_active = false;  // in active_
  bool rq_active = false;
  OwnedKey owned_key;        // of both queues (one owner)
  uint64_t queue_bytes = 0;  // its two rings, charged to the owner's uid
};

// An XRC domain: of one file (keyed by its st_dev and st_ino, shared by
// every client that opens it) or of one client (opened without a file).
struct SessionServer::Xrcd {
  nic::XrcdHandle handle = 0;
  bool by_file = false;
  uint64_t dev = 0, ino = 0;
  absl::flat_hash_map<nic::ClientId, uint32_t> opens;  // opens per client
};

struct SessionServer::Mr {
  nic::ClientId owner = 0;
  nic::PdHandle pd = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  // Shared-memory regions: the daemon's mapping of the client's memfd.
  // Process-memory regions have none (the RNIC reaches the client's
  // address space directly).
  void* map = nullptr;
  size_t map_len = 0;
  bool process = false;
  // Counted against the owner's RLIMIT_MEMLOCK (0: on-demand paging or
  // device memory, which pin nothing).
  uint64_t pinned_pages = 0;
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_SESSION_OBJECTS_H_
