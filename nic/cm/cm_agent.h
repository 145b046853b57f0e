// The RNIC's Communication Manager (IBTA vol. 1 ch. 12): one deterministic
// state machine per connection, driven by the CM MADs the GSI hands over,
// by the RNIC's clock (response timeouts, MRA service times, TimeWait) and
// by the consumer's calls. It drives the connection's QP through
// Rnic::ModifyQp as the exchange goes (INIT -> RTR -> RTS, ERR when the
// connection fails or ends) and queues CmEvents for the consumer.
//
// Behaviour follows the spec and Linux's ib_cm where the spec leaves room:
// REQ/REP/DREQ/SIDR_REQ are retransmitted after their response timeout up
// to Max CM Retries times; a duplicate REQ gets the MRA or REP again (REJ
// "stale connection" once the connection is in TimeWait), a duplicate REP
// the RTU (or MRA), a duplicate DREQ the DREP; a REQ from a remote QP that
// still has a live connection is rejected as stale and the old connection
// is disconnected; a DREQ is answered with a DREP at once (as rdma_cm
// does); the first data packet on a QP waiting for the RTU establishes the
// connection (IBV_EVENT_COMM_EST) and moves the QP to RTS.
//
// No threads, no syscalls: everything runs on the RNIC's thread.
#ifndef ROCEMU_NIC_CM_CM_AGENT_H_
#define ROCEMU_NIC_CM_CM_AGENT_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/clock.h"
#include "nic/cm/cm_connection.h"
#include "nic/cm/cm_service_registry.h"
#include "nic/cm/cm_types.h"
#include "nic/counters.h"
#include "nic/gsi.h"
#include "protocol/cm_ip.h"
#include "protocol/cm_messages.h"

namespace rocemu::nic {

class Rnic;

class CmAgent {
 public:
  using NotifyFn = void (*)(void* ctx);

  // `seed` feeds the generator of local communication IDs and starting
  // PSNs (0: derived from the port's GUID). At most `max_events` events
  // wait; more are counted in cm_event_drop.
  CmAgent(Rnic& rnic, Gsi& gsi, DeviceCounters& counters, uint64_t seed,
          uint32_t max_events = 4096);
  ~CmAgent();
  CmAgent(const CmAgent&) = delete;
  CmAgent& operator=(const CmAgent&) = delete;

  // --- the consumer's calls (ib_cm) ---
  // ib_cm_listen. AlreadyExists when a listener of the same client or
  // another client already covers the same service ID and address.
  absl::StatusOr<CmId> Listen(const CmListenParams& p);
  // ib_send_cm_req.
  absl::StatusOr<CmId> Connect(const CmConnectParams& p, TimeNs now);
  // ib_send_cm_rep, in REQ_RCVD or MRA_REQ_SENT.
  absl::Status Accept(CmId id, const CmAcceptParams& p, TimeNs now);
  // ib_send_cm_rej; `reason` from protocol::cm_rej_reason (rdma_reject
  // uses kConsumerDefined).
  absl::Status Reject(CmId id, uint16_t reason,
                      std::span<const uint8_t> private_data, TimeNs now,
                      std::span<const uint8_t> ari = {});
  // ib_send_cm_mra, in REQ_RCVD or REP_RCVD: asks the peer to wait
  // 4.096 us * 2^service_timeout more.
  absl::Status Mra(CmId id, uint8_t service_timeout,
                   std::span<const uint8_t> private_data);
  // Active side without auto_rtu, in REP_RCVD or MRA_REP_SENT: sends the
  // RTU. Passive side in REP_SENT: the consumer saw the connection work
  // (ib_cm_notify(IB_EVENT_COMM_EST)).
  absl::Status Establish(CmId id, TimeNs now);
  // ib_send_cm_dreq in ESTABLISHED (the QP goes to ERR first, as
  // rdma_disconnect does); ib_send_cm_drep in DREQ_RCVD.
  absl::Status Disconnect(CmId id, std::span<const uint8_t> private_data,
                          TimeNs now);
  // ib_send_cm_sidr_req.
  absl::StatusOr<CmId> SidrQuery(const CmSidrQueryParams& p, TimeNs now);
  // ib_send_cm_sidr_rep, in SIDR_REQ_RCVD.
  absl::Status SidrReply(CmId id, const CmSidrReplyParams& p);
  // ib_destroy_cm_id: cancels a listener; a connection in progress is
  // rejected, an established one disconnected (the DREQ is still
  // retransmitted and TimeWait still kept, without events).
  absl::Status Destroy(CmId id, TimeNs now);
  // ib_cm_init_qp_attr: the attributes (and mask) that move the
  // connection's QP to INIT, RTR or RTS, for consumers that drive the QP
  // themselves (librdmacm does so in the application).
  absl::StatusOr<std::pair<QpAttr, QpAttrMask>> InitQpAttr(
      CmId id, QpState target) const;

  // The event queue.
  bool PollEvent(CmEvent* out);
  // Whether PollEvent has one: the carrier asks every pass, and an event
  // (with its private data) is not worth building for nothing.
  bool HasEvents() const { return !events_.empty(); }
  size_t pending_events() const { return events_.size(); }
  // Called after an event is queued (the daemon wakes its session server).
  void SetNotifyHook(NotifyFn fn, void* ctx) {
    notify_ = fn;
    notify_ctx_ = ctx;
  }

  // The listeners of the other agents on this port (nullptr: this agent
  // is the port's only one). Not owned.
  void set_service_registry(CmServiceRegistry* registry) {
    registry_ = registry;
  }

  absl::StatusOr<CmIdInfo> Query(CmId id) const;
  // Calls f(const CmIdInfo&) for every id, in id order.
  template <typename F>
  void ForEachId(F&& f) const;
  size_t num_ids() const { return ids_.size(); }
  uint64_t local_ca_guid() const { return guid_; }

  // --- driven by the RNIC ---
  void OnMad(const ReceivedMad& m, TimeNs now);
  // Retransmissions and TimeWait exits due by `now`.
  void OnTimer(TimeNs now);
  TimeNs NextEventTime() const {
    return timers_.empty() ? kNever : timers_.begin()->first;
  }
  // The QP received its first packet in RTR (IBV_EVENT_COMM_EST).
  void OnCommEst(uint32_t qpn, TimeNs now);
  // The QP is gone: the CM no longer drives it.
  void OnQpDestroyed(uint32_t qpn);

 private:
  using RemoteKey = std::pair<uint32_t, uint64_t>;  // (ID or QPN, CA GUID)

  CmIdInfo Info(const CmConnection& c) const;
  CmConnection* Find(CmId id) const;
  CmConnection* FindByLocal(uint32_t local_comm_id) const;
  CmConnection* FindByRemoteId(uint32_t remote_comm_id, uint64_t guid) const;
  CmConnection& NewId(ClientId client);
  void Erase(CmConnection& c);
  void IndexRemote(CmConnection& c);
  void UnindexRemoteQpn(CmConnection& c);
  void UnindexRemote(CmConnection& c);
  void BindQp(CmConnection& c, uint32_t qpn, bool manage);
  const CmConnection* MatchListener(uint64_t service_id,
                                    const std::optional<Gid>& dst,
                                    bool* service_matched) const;
  // A REQ's or SIDR_REQ's listener. rdma_cm: an IP service ID carries the
  // IP header in the private data (*ip, nullopt if unusable), and the
  // listener is matched on its destination address too.
  const CmConnection* MatchRequest(uint64_t service_id,
                                   std::span<const uint8_t> private_data,
                                   std::optional<protocol::CmIpHeader>* ip,
                                   bool* ip_service,
                                   bool* service_matched) const;

  // Messages received.
  void OnReq(const ReceivedMad& m, TimeNs now);
  void OnDuplicateReq(CmConnection& c, const ReceivedMad& m);
  void OnMraMsg(const ReceivedMad& m, TimeNs now);
  void OnRej(const ReceivedMad& m, TimeNs now);
  void OnRep(const ReceivedMad& m, TimeNs now);
  void OnDuplicateRep(CmConnection& c);
  void OnRtu(const ReceivedMad& m, TimeNs now);
  void OnDreq(const ReceivedMad& m, TimeNs now);
  void OnDrep(const ReceivedMad& m, TimeNs now);
  void OnSidrReq(const ReceivedMad& m, TimeNs now);
  void OnSidrRep(const ReceivedMad& m, TimeNs now);

  // Sending. A request (REQ, REP, DREQ, SIDR_REQ) is kept for
  // retransmission and arms the resend timer; a reply (MRA, RTU, DREP) is
  // kept to answer duplicates.
  using Mad = std::array<uint8_t, protocol::kMadSize>;
  template <typename T>
  static Mad Encode(uint64_t tid, const T& msg) {
    Mad mad;
    protocol::EncodeCmMad(tid, msg, mad);
    return mad;
  }
  void SendRequest(CmConnection& c, const Mad& mad, TimeNs timeout, TimeNs now);
  void SendReply(CmConnection& c, const Mad& mad);
  void SendMad(const MadAddress& to, const Mad& mad);
  void SendRejTo(const ReceivedMad& m, uint32_t local_comm_id,
                 uint32_t remote_comm_id, uint8_t msg_rejected, uint16_t reason,
                 std::span<const uint8_t> ari = {});
  void CountSent(uint16_t attr_id);
  void SendRtu(CmConnection& c, std::span<const uint8_t> private_data);
  void SendDreq(CmConnection& c, std::span<const uint8_t> private_data,
                TimeNs now);
  void SendDrep(CmConnection& c, std::span<const uint8_t> private_data);
  void SendSidrRep(const MadAddress& to, uint64_t tid, uint32_t request_id,
                   uint64_t service_id, const CmSidrReplyParams& p);

  // Timers and state changes.
  void Arm(CmConnection& c, CmConnection::Timer kind, TimeNs deadline);
  void Disarm(CmConnection& c);
  void OnExpired(CmConnection& c, TimeNs now);
  void EnterTimewait(CmConnection& c, TimeNs now);
  void ResetToIdle(CmConnection& c);
  void Established(CmConnection& c, bool by_data,
                   std::span<const uint8_t> private_data);

  // The QP.
  absl::Status DriveQp(CmConnection& c, QpState target);
  void QpToError(CmConnection& c);
  absl::Status CheckQp(uint32_t qpn, QpType* type) const;
  // The path's GID index and P_Key exist here; *pkey_index is the P_Key's.
  absl::Status CheckPath(const CmPath& path, uint16_t* pkey_index) const;
  // The peer's QP1 as an active id (REQ, SIDR_REQ) addresses it: along
  // `path`, whose P_Key is at `pkey_index` here.
  static MadAddress PeerOnPath(const CmPath& path, uint16_t pkey_index);

  void Emit(CmEvent ev, const CmConnection& c);
  uint32_t NewCommId();
  // Whether one of this agent's ids listens on exactly (service, mask).
  bool ListensOn(uint64_t service, uint64_t mask) const;
  // The TID of the messages an id starts (REQ, DREQ, SIDR_REQ): a fixed
  // high half and the local communication ID, as Linux forms it.
  static uint64_t OwnTid(const CmConnection& c) {
    return uint64_t{1} << 32 | c.local_comm_id;
  }
  uint32_t NewPsn() { return static_cast<uint32_t>(Next()) & 0xFFFFFF; }
  uint64_t Next();

  Rnic& rnic_;
  Gsi& gsi_;
  DeviceCounters& counters_;
  uint64_t guid_;
  uint64_t rng_;
  uint32_t max_events_;
  CmId next_id_ = 1;
  absl::flat_hash_map<CmId, std::unique_ptr<CmConnection>> ids_;
  // The listeners among ids_: a REQ is matched against these alone, not
  // against every connection (a storm of N connections would cost N^2).
  absl::flat_hash_set<CmId> listeners_;
  absl::flat_hash_map<uint32_t, CmId> by_local_;
  absl::flat_hash_map<RemoteKey, CmId> by_remote_id_;
  absl::flat_hash_map<RemoteKey, CmId> by_remote_qpn_;
  absl::flat_hash_map<std::pair<uint32_t, Gid>, CmId> sidr_by_remote_;
  absl::flat_hash_map<uint32_t, CmId> by_qpn_;
  std::set<std::pair<TimeNs, CmId>> timers_;
  std::deque<CmEvent> events_;
  NotifyFn notify_ = nullptr;
  void* notify_ctx_ = nullptr;
  CmServiceRegistry* registry_ = nullptr;
};

template <typename F>
void CmAgent::ForEachId(F&& f) const {
  std::vector<CmId> ids;
  ids.reserve(ids_.size());
  for (const auto& [id, c] : ids_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (CmId id : ids) f(Info(*ids_.at(id)));
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CM_CM_AGENT_H_
