// The daemon side of the application library: accepts verbs clients on a
// Unix socket, maps their requests onto one nic::Rnic and moves their work
// requests and completions through shared-memory rings.
//
// The daemon embeds it and calls it from its polling thread, the same
// thread that drives the Rnic, so nothing here takes a lock. The work is
// split so that the daemon can run the control plane less often than the
// data plane:
//   PollControl(): one epoll_wait(0): accept clients, serve control
//      messages, notice disconnections (EOF, including a SIGKILLed client)
//      and free the resources of clients that went away;
//   PollData(): for every QP, drain its send and receive rings into
//      Rnic::PostSend/PostRecv; for every CQ, move completions from
//      Rnic::PollCq into its ring and write the client's eventfd when the
//      ring is armed. No syscall but those eventfd writes, no allocation.
// Poll() does both.
//
// Isolation: every PD, MR, CQ, QP and AH is tagged with the client that
// created it; a request naming another client's object is refused
// (ENOENT), and a posted work request whose SGE names an L_Key that is not
// one of the poster's own MRs completes with IBV_WC_LOC_PROT_ERR and moves
// the QP to the error state (what a real RNIC does on a local protection
// fault). A client that goes away has its QPs moved to ERR and destroyed,
// its MRs deregistered and unmapped and its CQs and PDs released within
// the same Poll.
#ifndef ROCEMU_VERBS_SERVER_SESSION_SERVER_H_
#define ROCEMU_VERBS_SERVER_SESSION_SERVER_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/cm/cm_types.h"
#include "nic/gid_table.h"
#include "nic/handles.h"
#include "nic/recv_wqe_fetcher.h"
#include "nic/rnic.h"
#include "protocol/ethernet.h"
#include "verbs/server/resource_limits.h"
#include "verbs/server/ring_pool.h"
#include "verbs/wire/doorbell.h"
#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct SessionServerOptions {
  std::string socket_path;
  // Owner and group only by default: the socket's permissions are the first
  // gate, SO_PEERCRED the second.
  mode_t socket_mode = 0660;
  // Peer uids allowed to attach; empty: anyone who can open the socket.
  std::vector<uid_t> allowed_uids;
  uint32_t max_clients = 256;
  // Work requests taken from one QP's rings per Poll (fairness between QPs).
  uint32_t post_budget = 64;
  // The device name applications see (Hello reply, rocemu_device_name()).
  std::string device_name = "rocemu0";
  // Neighbour resolution for address vectors whose destination MAC is all
  // zero (modify_qp to RTR with IBV_QP_AV, create_ah): nullopt while the
  // neighbour is unresolved, and the request is answered EAGAIN (the library
  // retries). Unset: the MAC is used as given. Called on the control path.
  std::function<std::optional<protocol::MacAddr>(const nic::Gid&)> resolve_dmac;
  // false: no socket; clients come through AdoptClient() (the daemon's
  // shards other than the first, emulator/shard.h).
  bool listen = true;
  // Called for every connection accepted, with its credentials: true when
  // it took the fd (to hand it to another server's AdoptClient), false to
  // serve it here. Unset: served here.
  std::function<bool(int fd, const PeerCredentials& peer)> route_client;
  // Per-uid caps and RLIMIT_MEMLOCK accounting, shared by every server of
  // the daemon (resource_limits.h). Unset: no limits.
  std::shared_ptr<ResourceLimits> limits;
};

// Named as an operator would look for them (rdma statistic style).
struct SessionCounters {
  uint64_t clients_accepted = 0;
  uint64_t clients_refused = 0;  // uid not allowed, too many clients
  uint64_t clients_closed = 0;
  uint64_t requests = 0;
  uint64_t bad_requests = 0;     // malformed: error reply sent
  uint64_t failed_requests = 0;  // well-formed, refused by the RNIC or
                                 // by ownership checks
  uint64_t sq_wqes = 0;          // taken from send rings
  uint64_t rq_wqes = 0;          // taken from receive rings
  uint64_t srq_wqes = 0;         // taken from shared receive rings
  // Times a message found its receive queue empty in the RNIC and the
  // ring held WQEs the loop had not drained yet (RecvWqeFetcher).
  uint64_t rq_fetches = 0;
  uint64_t lkey_violations = 0;  // SGE named a key the poster does not own
  uint64_t bad_wqes = 0;         // invalid slot contents or post errors
  uint64_t cqes = 0;             // written to CQ rings
  // What became of the WQEs taken (sq_wqes + rq_wqes + srq_wqes): each
  // ends in exactly one of these four. A send WQE without a completion
  // of its own retires, successful, with the next one that has one.
  uint64_t wqes_completed = 0;        // successful completion
  uint64_t wqes_completed_error = 0;  // completion in error (not a flush)
  uint64_t wqes_flushed = 0;          // IBV_WC_WR_FLUSH_ERR
  // Still outstanding when the QP (or SRQ) was destroyed or reset: the
  // receives an application leaves posted at exit, no completion due.
  uint64_t wqes_discarded = 0;
  uint64_t cq_events = 0;             // eventfd wake-ups
  uint64_t async_events = 0;          // delivered to clients
  uint64_t async_events_dropped = 0;  // a client's event ring was full
  uint64_t cm_events = 0;             // CM events delivered to clients
  uint64_t cm_events_dropped = 0;     // no CM ring, or kCmBacklog reached
  uint64_t cm_events_deferred = 0;    // waited for room in a CM ring
  uint64_t ring_corruptions = 0;      // client broke a ring: disconnected
  uint64_t reply_overflows = 0;       // client left its replies unread:
                                      // disconnected
  uint64_t qps_flushed = 0;           // moved to ERR because their client left
  uint64_t dmac_pending = 0;          // address vectors answered EAGAIN
  uint64_t doorbells = 0;             // queues a client rang
  uint64_t bad_doorbells = 0;         // naming no queue of the client
  uint64_t doorbell_overflows = 0;    // a full doorbell ring: full scan
  uint64_t sleeps = 0;                // PrepareToSleep() said yes
  uint64_t limit_refusals = 0;        // a per-uid cap (ENOMEM)
  uint64_t memlock_refusals = 0;      // RLIMIT_MEMLOCK (ENOMEM)
  uint64_t rings_premade = 0;         // QP and CQ rings from the RingPool
};

// Every session counter with its exported name, in one place for the
// state JSON and Prometheus.
template <typename F>
void ForEachSessionCounter(const SessionCounters& k, F f) {
  f("clients_accepted", k.clients_accepted);
  f("clients_refused", k.clients_refused);
  f("clients_closed", k.clients_closed);
  f("requests", k.requests);
  f("bad_requests", k.bad_requests);
  f("failed_requests", k.failed_requests);
  f("sq_wqes", k.sq_wqes);
  f("rq_wqes", k.rq_wqes);
  f("srq_wqes", k.srq_wqes);
  f("rq_fetches", k.rq_fetches);
  f("lkey_violations", k.lkey_violations);
  f("bad_wqes", k.bad_wqes);
  f("cqes", k.cqes);
  f("wqes_completed", k.wqes_completed);
  f("wqes_completed_error", k.wqes_completed_error);
  f("wqes_flushed", k.wqes_flushed);
  f("wqes_discarded", k.wqes_discarded);
  f("cq_events", k.cq_events);
  f("async_events", k.async_events);
  f("async_events_dropped", k.async_events_dropped);
  f("cm_events", k.cm_events);
  f("cm_events_dropped", k.cm_events_dropped);
  f("cm_events_deferred", k.cm_events_deferred);
  f("ring_corruptions", k.ring_corruptions);
  f("reply_overflows", k.reply_overflows);
  f("qps_flushed", k.qps_flushed);
  f("dmac_pending", k.dmac_pending);
  f("doorbells", k.doorbells);
  f("bad_doorbells", k.bad_doorbells);
  f("doorbell_overflows", k.doorbell_overflows);
  f("sleeps", k.sleeps);
  f("limit_refusals", k.limit_refusals);
  f("memlock_refusals", k.memlock_refusals);
  f("rings_premade", k.rings_premade);
}

class SessionServer final : private nic::RecvWqeFetcher {
 public:
  // Binds and listens on options.socket_path (a stale socket there is
  // replaced; any other file is an error).
  static absl::StatusOr<std::unique_ptr<SessionServer>> Create(
      nic::Rnic& rnic, const SessionServerOptions& options);
  ~SessionServer();
  SessionServer(const SessionServer&) = delete;
  SessionServer& operator=(const SessionServer&) = delete;

  // One iteration of the daemon's loop: PollControl() then PollData().
  void Poll();
  // Serves a connection another server accepted (route_client), as if it
  // had been accepted here: the uid and client-count checks included.
  // Takes the fd.
  void AdoptClient(int fd, const PeerCredentials& peer);
  // The control plane (see the file comment): makes syscalls, may allocate.
  // Returns how many clients' sockets (or the listener) had something.
  size_t PollControl();
  // The data plane: rings only, allocation-free, no syscall but eventfd
  // writes. PollData() is PollPosts() then PollCompletions(); the daemon
  // calls them around its ports, so that what a pass completes reaches the
  // CQ rings in that pass.
  void PollData();
  // Work requests from the SQ, RQ and SRQ rings into the RNIC.
  void PollPosts();
  // Completions, async events and CM events out to the rings.
  void PollCompletions();
  // The server as one JSON object (socket, device, counters, clients and
  // their objects), for the daemon's views to nest.
  nlohmann::ordered_json StateJson() const;
  // StateJson() printed on one line, appended to *out.
  void AppendStateJson(std::string* out) const;

  // An fd that becomes readable when a control message or connection
  // waits (the daemon may sleep on it when idle).
  int wait_fd() const { return epoll_fd_; }
  // Sleeping (verbs/wire/doorbell.h): readable when a client rang while the
  // daemon said it sleeps. The daemon calls PrepareToSleep() after a pass
  // that found nothing to do: false means work came meanwhile (do not
  // sleep). If it was true, the daemon may wait on wake_fd() (and
  // wait_fd(), its ports, its timers) and calls Awake() when it wakes, in
  // every case, before the next PollData().
  int wake_fd() const { return wake_epoll_fd_; }
  bool PrepareToSleep();
  void Awake();
  const SessionServerOptions& options() const { return options_; }
  const std::string& socket_path() const { return options_.socket_path; }
  const std::string& device_name() const { return options_.device_name; }
  const SessionCounters& counters() const { return counters_; }
  size_t num_clients() const { return clients_.size() - refused_pending_; }
  // The client owning QP `qpn`, if any (ctl tools, tests).
  std::optional<nic::ClientId> QpOwner(uint32_t qpn) const;
  std::optional<PeerCredentials> Credentials(nic::ClientId client) const;
  // Objects a client holds: PDs, MRs, CQs, QPs.
  struct Holdings {
    size_t pds = 0, mrs = 0, cqs = 0, qps = 0, ahs = 0, srqs = 0;
  };
  Holdings HoldingsOf(nic::ClientId client) const;

 private:
  struct Client;
  struct Cq;
  struct Qp;
  struct Mr;
  struct OwnedKey;
  struct Srq;
  struct Xrcd;
  // A request's fds, owned until the handler keeps them.
  struct Fds;

  SessionServer(nic::Rnic& rnic, const SessionServerOptions& options);
  absl::Status Listen();
  // The Unix socket (options_.listen).
  absl::Status Bind();
  absl::Status MakeWakePage();
  void Accept();
  // Reads and serves messages of one client; false when it must go.
  bool ServeClient(Client& c, bool hup);
  void Handle(Client& c, std::span<const uint8_t> msg, Fds& fds);
  void Reply(Client& c, uint16_t type, uint32_t seq, const absl::Status& st,
             const void* body, size_t body_len, std::span<const int> fds);
  void Disconnect(nic::ClientId id);
  // Fills an all-zero destination MAC through options_.resolve_dmac;
  // Aborted (EAGAIN) while unresolved. When it resolves the route it also
  // sets *hop_limit to the route's, as the kernel does for every RoCE
  // address vector (ibv_rc_pingpong asks for 1; rxe and ConnectX send 64).
  absl::Status ResolveDmac(const nic::Gid& dgid, protocol::MacAddr* dmac,
                           uint8_t* hop_limit);
  void ReleaseQp(Qp& qp);
  // Charges `more` to the client's uid (ENOMEM past a cap, counted) and
  // records it on the client; Uncharge gives it back.
  absl::Status Charge(Client& c, const ResourceUse& more);
  void Uncharge(Client& c, const ResourceUse& less);
  // Pages a new region pins against its process's RLIMIT_MEMLOCK.
  absl::Status PinPages(Client& c, uint64_t pages);
  void UnpinPages(Client& c, uint64_t pages);

  absl::Status OnHello(Client& c, const wire::HelloReq& r,
                       wire::HelloResp* out);
  absl::Status OnRegMr(Client& c, const wire::RegMrReq& r, int fd,
                       wire::RegMrResp* out);
  // The registration itself, once charged: a process region (fd < 0) or
  // the client's memfd mapped; the key.
  absl::StatusOr<uint32_t> RegisterMr(Client& c, const wire::RegMrReq& r,
                                      uint32_t access, int fd);
  // `wc` is about to reach its CQ ring: a receive WQE of its QP (or of
  // its SRQ) is done, and the client may post one more; a send completion
  // retires its request and every one before it (the send ring's
  // `retired`, which the library reads if the daemon dies).
  // `*last`: the QP looked up for the previous completion (nullptr: none),
  // kept so that a batch of one QP's completions costs one lookup; no QP is
  // destroyed while a batch is moved.
  void Retire(const nic::WorkCompletion& wc, Qp** last);
  absl::Status OnReregMr(Client& c, const wire::ReregMrReq& r);
  absl::Status OnDeregMr(Client& c, uint32_t key);
  absl::Status OnResizeCq(Client& c, const wire::ResizeCqReq& r,
                          wire::CreateCqResp* out, int* ring_fd);
  absl::Status OnAllocMw(Client& c, const wire::AllocMwReq& r,
                         wire::HandleResp* out);
  absl::Status OnDeallocMw(Client& c, uint32_t rkey);
  // Bind and local-invalidate WRs name only the client's own windows and
  // regions; a foreign key is replaced by one that fails in the engine.
  void RefuseForeignWindowKeys(nic::ClientId client, nic::SendWr* wr);
  absl::Status OnCreateCq(Client& c, const wire::CreateCqReq& r, int fd,
                          wire::CreateCqResp* out, int* ring_fd);
  absl::Status OnDestroyCq(Client& c, uint32_t cq);
  absl::Status OnCreateQp(Client& c, const wire::CreateQpReq& r,
                          wire::CreateQpResp* out, int ring_fds[2]);
  absl::Status OnModifyQp(Client& c, const wire::ModifyQpReq& r);
  absl::Status OnQueryQp(Client& c, uint32_t qpn, wire::QueryQpResp* out);
  absl::Status OnDestroyQp(Client& c, uint32_t qpn);
  absl::Status OnAllocPd(Client& c, wire::HandleResp* out);
  absl::Status OnDeallocPd(Client& c, uint32_t pd);
  absl::Status OnCreateAh(Client& c, const wire::CreateAhReq& r,
                          wire::HandleResp* out);
  absl::Status OnDestroyAh(Client& c, uint32_t ah);
  // attach_mcast (attach) or detach_mcast on one of the client's QPs.
  absl::Status OnMcast(Client& c, const wire::McastReq& r, bool attach);
  // ibv_create_flow / ibv_destroy_flow on the client's raw packet QPs.
  absl::Status OnCreateFlow(Client& c, const wire::CreateFlowReq& r,
                            wire::HandleResp* out);
  absl::Status OnDestroyFlow(Client& c, uint32_t handle);
  absl::Status OnSetRss(Client& c, const wire::SetRssReq& r);
  absl::Status OnQueryDevice(wire::QueryDeviceResp* out);
  absl::Status OnQueryPort(const wire::QueryPortReq& r,
                           wire::QueryPortResp* out);
  absl::Status OnQueryGid(const wire::TableQueryReq& r,
                          wire::QueryGidResp* out);
  absl::Status OnQueryPkey(const wire::TableQueryReq& r,
                           wire::QueryPkeyResp* out);
  absl::Status OnCreateSrq(Client& c, const wire::CreateSrqReq& r,
                           wire::CreateSrqResp* out, int* ring_fd);
  absl::Status OnModifySrq(Client& c, const wire::ModifySrqReq& r);
  absl::Status OnQuerySrq(Client& c, uint32_t srq, wire::QuerySrqResp* out);
  absl::Status OnDestroySrq(Client& c, uint32_t srq);
  // XRC (session_xrc.cc).
  absl::Status OnOpenXrcd(Client& c, const wire::OpenXrcdReq& r, int fd,
                          wire::HandleResp* out);
  absl::Status OnCloseXrcd(Client& c, uint32_t xrcd);
  absl::Status OnCreateXrcSrq(Client& c, const wire::CreateXrcSrqReq& r,
                              wire::CreateXrcSrqResp* out, int* ring_fd);
  absl::Status OnCreateTmSrq(Client& c, const wire::CreateTmSrqReq& r,
                             wire::CreateSrqResp* out, int* ring_fd);
  absl::Status OnPostSrqOps(Client& c, const wire::PostSrqOpsReq& r,
                            wire::HandleResp* out);
  // What every SRQ type shares: the PD and size checks, the ring, the
  // charge and the record; `make` asks the RNIC for the SRQ. `own_cq`: an
  // XRC or TM SRQ's CQ, held while the SRQ lives.
  absl::Status NewSrq(
      Client& c, uint32_t pd, const wire::WireSrqAttr& a, Cq* own_cq,
      absl::FunctionRef<absl::StatusOr<nic::SrqHandle>(const nic::SrqAttr&)>
          make,
      wire::CreateSrqResp* out, int* ring_fd);
  absl::Status OnXrcTgtQp(Client& c, const wire::XrcTgtQpReq& r,
                          wire::XrcTgtQpResp* out);
  // The domain `xrcd` if `c` holds it open, else nullptr.
  Xrcd* HeldXrcd(const Client& c, uint32_t xrcd);
  // Drops one open of `x` by `id` (all of them with `all`); the domain
  // goes with its last open unless XRC SRQs or TGT QPs still use it, when
  // it stays (with no open) until they go (ReapXrcds).
  void CloseXrcd(Xrcd& x, nic::ClientId id, bool all);
  void ReapXrcds();
  // Drops `id`'s hold of a TGT QP held by others too: true when the QP
  // stays (another holder now owns it).
  bool HandOverTgtQp(Qp& qp, Client& from);
  absl::Status OnOpenAsync(Client& c, int fd, wire::OpenAsyncResp* out,
                           int* ring_fd);
  absl::Status OnOpenDoorbells(Client& c, wire::OpenDoorbellsResp* out,
                               int fds[3]);

  // Data path. The Drain* calls return true while the queue still holds
  // work (budget spent, or the RNIC's queue full).
  bool DrainSq(Qp& qp);
  // Send WQEs of `qp` that will each complete on its send CQ: signaled
  // ones still in the SQ ring plus those the RNIC holds.
  uint64_t PendingSignaledSends(Qp& qp);
  // on_miss: called by the RNIC mid-receive (FetchRecv), so a malformed
  // WQE is left for the next ordinary drain, whose failure moves the QP to
  // ERR, rather than changing QP state under the engine.
  bool DrainRq(Qp& qp, bool on_miss = false);
  void DrainCq(Cq& cq);
  // nic::RecvWqeFetcher: the RNIC found a receive queue empty; whatever the
  // client has posted to the ring by now is handed over at once.
  void FetchRecv(uint32_t qpn) override;
  void FetchSrqRecv(nic::SrqHandle srq) override;
  bool DrainSrq(Srq& srq);
  // A queue named by a doorbell, kept until drained.
  struct QueueRef {
    uint32_t kind;  // DoorbellKind
    uint32_t handle;
  };
  // Pops a client's doorbells into active_ (a full ring: all its queues).
  void TakeDoorbells(Client& c);
  void Activate(nic::ClientId owner, QueueRef ref);
  // Drains the queues in active_, keeping those not done.
  void DrainActive();
  template <typename Drain>
  bool KeepDraining(ShmRing& ring, Drain drain);
  // Scans every queue of clients that have no doorbells (older clients,
  // tests driving rings by hand).
  void DrainUnrung();
  // Moves the RNIC's async events to the rings of the clients owning
  // their elements (port events to every client).
  void DeliverAsyncEvents();
  // --- the Communication Manager (session_cm.cc) ---
  absl::Status OnCmOpen(Client& c, int fd, wire::CmOpenResp* out, int* ring_fd);
  // The id exists and belongs to `c`.
  absl::Status CheckCmId(const Client& c, uint32_t id) const;
  // QP `qpn` belongs to a client of `c`'s process (its libibverbs session
  // is another client of the same pid).
  absl::Status CheckQpOfProcess(const Client& c, uint32_t qpn) const;
  // A path as the library resolved it; a zero dmac is resolved here
  // (EAGAIN while the neighbour is unknown).
  absl::Status PathFromWire(const wire::WireCmPath& w, nic::CmPath* p);
  absl::Status OnCmListen(Client& c, const wire::CmListenReq& r,
                          wire::CmIdResp* out);
  absl::Status OnCmConnect(Client& c, const wire::CmConnectReq& r,
                           wire::CmIdResp* out);
  absl::Status OnCmAccept(Client& c, const wire::CmAcceptReq& r);
  absl::Status OnCmReject(Client& c, const wire::CmRejectReq& r);
  absl::Status OnCmIdCall(Client& c, wire::MsgType type, uint32_t id);
  // rdma_disconnect: the QP named (if any) to ERR, then the DREQ.
  absl::Status OnCmDisconnect(Client& c, const wire::CmIdReq& r);
  absl::Status OnCmModifyQp(Client& c, const wire::CmModifyQpReq& r);
  absl::Status OnQueryGidTable(const wire::TableQueryReq& r,
                               wire::QueryGidTableResp* out);
  absl::Status OnCmInitQpAttr(Client& c, const wire::CmInitQpAttrReq& r,
                              wire::CmInitQpAttrResp* out);
  absl::Status OnCmSidrQuery(Client& c, const wire::CmSidrQueryReq& r,
                             wire::CmIdResp* out);
  absl::Status OnCmSidrReply(Client& c, const wire::CmSidrReplyReq& r);
  absl::Status OnCmResolve(Client& c, const wire::CmResolveReq& r,
                           wire::CmResolveResp* out);
  // Moves the CM's events to the rings of the clients owning the ids,
  // those waiting for room first (cm_backlog).
  void DeliverCmEvents();
  // Moves what it can of each waiting backlog to its ring.
  void FlushCmBacklogs();
  // A client went: its ids are destroyed (connections rejected or
  // disconnected on the wire, as when a process holding rdma_cm ids dies).
  void ReleaseCmIds(nic::ClientId id);
  void PushAsyncEvent(Client& c, const nic::AsyncEvent& e);
  // Rewrites the L_Keys of `sgl` that `client` does not own to a key the
  // RNIC never issues; true when it had to. `last` is the posting queue's
  // memory of the key it last found owned.
  bool RefuseForeignKeys(nic::ClientId client, nic::SgList* sgl,
                         OwnedKey* last);
  // Ends `qp` with an error completion for `wr_id` (after what the RNIC
  // already completed on that CQ) and moves it to ERR.
  // `wqe_index`: the send ring index the request was taken at.
  void FailWqe(Qp& qp, bool send, uint64_t wr_id, uint32_t wqe_index,
               nic::WcStatus status);
  bool OwnsKeys(nic::ClientId client, const nic::SgList& sgl,
                OwnedKey* last) const;
  void ReleaseNicCq(nic::CqHandle cq);
  void ReleaseNicPd(nic::PdHandle pd);
  void ReleaseNicAh(nic::AhHandle ah);
  void ReleaseSrq(Srq& srq);
  void ReleaseMr(uint32_t key, Mr& mr);

  nic::Rnic& rnic_;
  SessionServerOptions options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  // Sleeping: the page every client maps read-only, and an epoll set over
  // the clients' wake eventfds.
  int wake_page_fd_ = -1;
  WakePage* wake_page_ = nullptr;
  int wake_epoll_fd_ = -1;
  std::vector<QueueRef> active_;
  size_t unrung_clients_ = 0;  // clients without doorbells
  nic::ClientId next_client_ = 1;
  // Refused connections still waiting for their answer (in clients_).
  static constexpr size_t kMaxRefusedPending = 16;
  size_t refused_pending_ = 0;
  SessionCounters counters_;
  RingPool ring_pool_;
  // Well-formed requests by type (rocemu-ctl clients: "requests_by_type"):
  // what a program's control path costs, e.g. per rdma_cm connection.
  std::array<uint64_t, wire::kMaxMsgType + 1> requests_by_type_{};

  absl::flat_hash_map<nic::ClientId, std::unique_ptr<Client>> clients_;
  absl::flat_hash_map<uint32_t, std::unique_ptr<Qp>> qps_;  // by QPN
  struct FlowRec {
    nic::ClientId owner = 0;
    uint32_t qpn = 0;
  };
  absl::flat_hash_map<uint32_t, FlowRec> flows_;  // by the RNIC's handle
  absl::flat_hash_map<uint32_t, std::unique_ptr<Cq>> cqs_;  // by handle
  absl::flat_hash_map<uint32_t, std::unique_ptr<Mr>> mrs_;  // by key
  // Regions released so far: an OwnedKey learnt before the last release
  // may name a key that is gone (or issued again, to another client).
  uint64_t mr_releases_ = 0;
  absl::flat_hash_map<uint32_t, nic::ClientId> pds_;  // by handle
  struct AhRec {
    nic::ClientId owner = 0;
    nic::PdHandle pd = 0;
  };
  absl::flat_hash_map<uint32_t, AhRec> ahs_;  // by handle
  struct MwRec {
    nic::ClientId owner = 0;
    nic::PdHandle pd = 0;
  };
  // Memory windows by key index (key >> 8): a bind changes the key byte.
  absl::flat_hash_map<uint32_t, MwRec> mws_;
  absl::flat_hash_map<uint32_t, std::unique_ptr<Srq>> srqs_;    // by handle
  absl::flat_hash_map<uint32_t, std::unique_ptr<Xrcd>> xrcds_;  // by handle
  // Domains opened by file: (st_dev, st_ino) -> handle.
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, uint32_t> xrcd_files_;
  // Data-path scratch, reused so that draining allocates nothing.
  nic::SendWr send_wr_;
  nic::RecvWr recv_wr_;
  SqSlot sq_slot_;
  RqSlot rq_slot_;
  AsyncEventSlot async_slot_;
  std::array<nic::WorkCompletion, 32> wc_;
  // PollCompletions' CQs with completions, oldest first; its capacity is
  // kept from pass to pass.
  std::vector<Cq*> ready_cqs_;
  std::vector<nic::ClientId> dead_;
  // Clients whose cm_backlog is not empty.
  std::vector<nic::ClientId> cm_backlogged_;
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_SESSION_SERVER_H_
