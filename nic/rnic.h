// The RNIC device: the resource tables (PD, MR, CQ, GID, P_Key), the queue
// pairs and their transport engines, behind the FrameEndpoint interface a
// carrier (DPDK port, simulated network, test loop) drives.
//
// Control path (create/modify/post/poll) returns absl::Status; the data path
// (Receive/Transmit) never allocates and makes no virtual call per packet.
// Everything runs on the carrier's thread: no locks.
//
// Egress order per Transmit slot: responses (ACK/NAK, READ responses, atomic
// ACKs) of any QP first, then requests, each round-robin over the active
// QPs; a QP's requests go in runs of up to RnicConfig::tx_quantum packets
// within one Transmit call. Congestion hooks: Qp::pace_until_ (a per-QP "not
// before" time the DCQCN pacer sets) and PausePriority() (PFC: QPs on a paused
// priority send nothing); OnCnp() is where a received CNP is handed over.
#ifndef ROCEMU_NIC_RNIC_H_
#define ROCEMU_NIC_RNIC_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/address_handle.h"
#include "nic/async_event.h"
#include "nic/completion_queue.h"
#include "nic/congestion_control.h"
#include "nic/counters.h"
#include "nic/device_attr.h"
#include "nic/drop_reason.h"
#include "nic/flow_table.h"
#include "nic/frame_io.h"
#include "nic/frame_verdict.h"
#include "nic/gid_table.h"
#include "nic/gsi.h"
#include "nic/memory_region.h"
#include "nic/mr_table.h"
#include "nic/multicast_groups.h"
#include "nic/pd_table.h"
#include "nic/pkey_table.h"
#include "nic/qp.h"
#include "nic/qp_attr.h"
#include "nic/qp_why.h"
#include "nic/recv_wqe_fetcher.h"
#include "nic/rss.h"
#include "nic/shared_receive_queue.h"
#include "nic/xrc_domain.h"
#include "protocol/frame.h"

namespace rocemu::nic {

class CmAgent;

struct RnicConfig {
  protocol::MacAddr mac{};
  Gid gid{};  // GID index 0 (an IPv4-mapped or IPv6 address)
  DeviceAttr device;
  PortAttr port;
  // Packets between requested ACKs on long messages (rxe:
  // RXE_MAX_PKT_PER_ACK). The responder ACKs only when asked (AckReq) and on
  // duplicates, as rxe does; the requester asks on the last packet of every
  // message and every ack_req_interval packets.
  uint32_t ack_req_interval = 64;
  // Unacknowledged packets an RC requester may have in flight.
  uint32_t max_unacked_psns = 512;
  // Request packets a QP sends in a row before the next ready QP's turn
  // (round robin among QPs, this many at a time). Runs of one QP's
  // packets let the responder answer a run with one coalesced ACK where
  // one packet per QP at a time drew an ACK per packet or two, and keep
  // one QP's state in cache; 1 interleaves packet by packet.
  uint32_t tx_quantum = 8;
  // ECN/DSCP/priority of RoCE frames, DCQCN (NP, RP) and PFC receive.
  CongestionConfig congestion;
  // The port's 802.1Q VLAN: every frame the RNIC sends is tagged with it,
  // PCP = the frame's priority (QP: its SL, else roce_prio; MADs 0; CNPs
  // np_cnp_prio). Unset: untagged.
  std::optional<uint16_t> vlan_id;
  // The medium returns every frame the port sends (a looped cable, DPDK's
  // net_ring): a raw QP's frame to a group address then reaches the flow
  // rules from the wire, and the RNIC does not loop it locally as well.
  bool medium_loops_back = false;
  // One of `shards` RNICs sharing this port's MAC and GIDs, each driven by
  // its own lcore (emulator/shard.h): its QPNs and CM communication IDs
  // are those equal to `shard` modulo `shards`, so that whoever receives
  // the port's frames can tell from BTH.DestQP (or a CM message's comm ID)
  // which RNIC a frame is for.
  uint32_t shard = 0;
  uint32_t shards = 1;
  // Preallocated slots for MADs waiting for the wire (QP1) and for
  // asynchronous events. The defaults suit a daemon port serving many
  // connections; a simulated datacenter host with a few QPs (ns3/) asks
  // for fewer, since every slot is paid for by each of thousands of RNICs.
  uint32_t mad_queue_len = 512;
  uint32_t async_event_queue_len = 1024;
  // Events each connected QP's flight recorder keeps (nic/flight_recorder.h;
  // allocated at INIT->RTR); 0: no recorder.
  uint32_t flight_recorder_events = 64;
};

// An error completion, or a QP entering ERR/SQE, as the daemon logs it
// (Rnic::TakeErrorNotes).
struct ErrorNote {
  TimeNs time = 0;
  uint64_t wr_id = 0;
  uint64_t cause_id = 0;  // the frame behind it (0: none)
  uint32_t qpn = 0;
  DropReason reason = DropReason::kNone;
  WcStatus status = WcStatus::kSuccess;  // completions
  bool recv = false;                     // a receive WQE's completion
  bool qp_error = false;                 // the QP entered `state`
  QpState state = QpState::kErr;
};

class Rnic final : public FrameEndpoint {
 public:
  explicit Rnic(const RnicConfig& config);
  ~Rnic() override;
  Rnic(const Rnic&) = delete;
  Rnic& operator=(const Rnic&) = delete;

  // --- resources (control path) ---
  absl::StatusOr<PdHandle> AllocPd();
  // Registers [addr, addr + length) of this process's memory with iova
  // `addr` (one chunk); returns the L_Key/R_Key.
  absl::StatusOr<uint32_t> RegMr(PdHandle pd, void* addr, uint64_t length,
                                 AccessFlags access);
  // Registers [iova, iova + length) of process `pid`'s address space
  // (MrTable::RegisterProcess): the RNIC reaches it with process_vm_*.
  absl::StatusOr<uint32_t> RegMrProcess(PdHandle pd, pid_t pid, uint64_t iova,
                                        uint64_t length, AccessFlags access);
  absl::Status DeregMr(uint32_t key);
  absl::StatusOr<CqHandle> CreateCq(uint32_t cqe);
  size_t PollCq(CqHandle cq, std::span<WorkCompletion> out);
  // Address handle for UD sends (the path of one destination).
  absl::StatusOr<AhHandle> CreateAh(PdHandle pd, const AhAttr& attr,
                                    const protocol::MacAddr& dmac);
  absl::StatusOr<SrqHandle> CreateSrq(PdHandle pd, const SrqAttr& attr);
  absl::Status PostSrqRecv(SrqHandle srq, const RecvWr& wr);

  // Destruction with ibverbs semantics: NotFound (EINVAL) for an unknown or
  // stale handle, FailedPrecondition (EBUSY) while another object uses it.
  // ibv_destroy_cq: busy while a QP uses it as send or receive CQ.
  absl::Status DestroyCq(CqHandle cq);
  // ibv_resize_cq: the queued completions are kept; FailedPrecondition
  // when they do not fit the new size.
  absl::Status ResizeCq(CqHandle cq, uint32_t cqe);
  // ibv_dealloc_pd: busy while MRs, QPs, AHs or SRQs were created in it.
  absl::Status DeallocPd(PdHandle pd);
  absl::Status DestroyAh(AhHandle ah);
  // ibv_modify_srq: IBV_SRQ_MAX_WR resizes (InvalidArgument above the
  // device's max_srq_wr or below the WQEs queued), IBV_SRQ_LIMIT arms the
  // limit: IBV_EVENT_SRQ_LIMIT_REACHED is raised once when taking a WQE
  // leaves fewer queued than the limit (0 disarms).
  absl::Status ModifySrq(SrqHandle srq, const SrqAttr& attr, uint32_t mask);
  // ibv_query_srq: max_wr, max_sge and the armed limit (0: not armed).
  absl::StatusOr<SrqAttr> QuerySrq(SrqHandle srq) const;
  // ibv_destroy_srq: busy while a QP is attached to it.
  absl::Status DestroySrq(SrqHandle srq);

  // --- XRC (annex A14) ---
  // ibv_open_xrcd / ibv_close_xrcd (busy while XRC SRQs or TGT QPs use it).
  absl::StatusOr<XrcdHandle> AllocXrcd();
  absl::Status DeallocXrcd(XrcdHandle xrcd);
  // ibv_create_srq_ex with IBV_SRQT_XRC: an SRQ of `pd` in XRC domain
  // `xrcd` whose receive completions go to `cq`.
  absl::StatusOr<SrqHandle> CreateXrcSrq(PdHandle pd, XrcdHandle xrcd,
                                         CqHandle cq, const SrqAttr& attr);
  // ibv_get_srq_num: the number an XRCETH names the SRQ by.
  absl::StatusOr<uint32_t> GetSrqNum(SrqHandle srq) const;
  // The XRC SRQ with SRQ number `srqn` (an XRCETH's), or nullptr.
  SharedReceiveQueue* FindXrcSrq(uint32_t srqn) const {
    return srqs_.FindXrc(srqn);
  }
  // --- tag matching (nic/tag_matching.h) ---
  // ibv_create_srq_ex with IBV_SRQT_TM: an SRQ of `pd` with a matching list
  // of max_num_tags buffers (at most the device's tm_caps), its receive and
  // list-operation completions to `cq`.
  absl::StatusOr<SrqHandle> CreateTmSrq(PdHandle pd, CqHandle cq,
                                        const SrqAttr& attr,
                                        uint32_t max_num_tags,
                                        uint32_t max_ops);
  // ibv_post_srq_ops, one operation: ADD returns the buffer's handle
  // (ResourceExhausted when the list is full, InvalidArgument for more SGEs
  // than tm_caps.max_sge); a DEL of a buffer no longer listed completes
  // with IBV_WC_TM_ERR. The completion (when signaled, or in error) goes to
  // the SRQ's CQ at once.
  absl::StatusOr<uint32_t> PostSrqOp(SrqHandle srq, const TmOp& op);
  SharedReceiveQueue* GetSrq(SrqHandle srq) const { return srqs_.Get(srq); }
  // A completion of a tagged buffer (or rendezvous) of QP `qp`, to its
  // SRQ's CQ.
  void CompleteTagged(Qp& qp, const WorkCompletion& wc);
  // Posts a request the RNIC issues itself (send_flags::kTmInternal) on the
  // QP's reserved send queue slots.
  void PostInternal(Qp& qp, const SendWr& wr);

  // Tables, for the session server's ownership checks.
  const XrcdTable& xrcd_table() const { return xrcds_; }
  const SrqTable& srq_table() const { return srqs_; }

  // --- queue pairs ---
  // ibv_create_qp. An XRC TGT QP (init.qp_type kXrcTgt) takes no PD
  // (`pd` is ignored), CQ or SRQ, only init.xrcd; an XRC INI QP no receive
  // queue (recv_cq may be 0). Either work queue may have no entries (a
  // send-only or receive-only QP). The capabilities granted (QueryQp's cap) may
  // exceed those asked: inline data and SGEs each fill the send slot the other
  // needs, as rxe sizes it.
  absl::StatusOr<uint32_t> CreateQp(PdHandle pd, const QpInitAttr& init);
  absl::Status ModifyQp(uint32_t qpn, const QpAttr& attr, QpAttrMask mask);
  absl::StatusOr<QpAttr> QueryQp(uint32_t qpn) const;
  absl::Status DestroyQp(uint32_t qpn);
  absl::Status PostSend(uint32_t qpn, const SendWr& wr);
  absl::Status PostRecv(uint32_t qpn, const RecvWr& wr);
  // ibv_attach_mcast / ibv_detach_mcast: UD QPs only (EINVAL otherwise, as
  // ConnectX and rxe answer). A UD SEND to BTH.DestQP 0xFFFFFF and a
  // multicast destination GID reaches every QP attached to that GID, but
  // not the QP that sent it (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB always on).
  absl::Status AttachMcast(uint32_t qpn, const Gid& mgid);
  absl::Status DetachMcast(uint32_t qpn, const Gid& mgid);
  const MulticastGroups& multicast_groups() const { return mcast_; }
  // ibv_create_flow / ibv_destroy_flow (nic/flow_table.h): rules steering
  // received frames to raw packet QPs (InvalidArgument for another type;
  // ibv_destroy_qp is busy while a QP has rules).
  absl::StatusOr<uint32_t> CreateFlow(const FlowRule& rule);
  absl::Status DestroyFlow(uint32_t handle);
  const FlowTable& flow_table() const { return flows_; }
  // Receive-side scaling (nic/rss.h): frames a rule steers to raw QP `qpn`
  // go to the WQ of rss.table its hash picks (each a raw QP of the same PD;
  // a WQ is destroyed only once no table names it). InvalidArgument for
  // unsupported fields, a key longer than kRssKeyMax or shorter than 4, a
  // table that is not a power of two up to 2^kRssLogTableMax.
  absl::Status SetRss(uint32_t qpn, RssConfig rss);
  // Whether an RSS QP's table names `qpn` (ibv_destroy_wq is busy then);
  // whether `qpn` is an RSS QP.
  bool InRssTable(uint32_t qpn) const;
  bool IsRssQp(uint32_t qpn) const { return rss_.contains(qpn); }
  // Offers a frame that is not the RNIC's own (received, or looped back
  // from raw QP `from_qpn`, which does not get its own frame) to the flow
  // rules; false when no QP took it.
  bool SteerRaw(std::span<const uint8_t> frame, uint32_t from_qpn);
  // Whether a flow rule would take `frame`: the daemon asks before it hands
  // over a frame its net stack does not want, so that a frame no rule
  // takes keeps the stack's drop reason.
  bool WouldSteer(std::span<const uint8_t> frame) {
    if (flows_.empty() || !ExtractFlowKey(frame, &flow_key_) ||
        IsRoceV2Key(flow_key_)) {
      return false;
    }
    return flows_.Steer(flow_key_, [](uint32_t, uint32_t) {}) > 0;
  }
  const Qp* GetQp(uint32_t qpn) const;
  // Calls f(const Qp&) for every QP, in no particular order (control path:
  // the daemon's QP listings and per-QP counters).
  template <typename F>
  void ForEachQp(F&& f) const {
    for (const auto& [qpn, qp] : qps_) f(static_cast<const Qp&>(*qp));
  }

  // --- FrameEndpoint ---
  void Receive(uint16_t port, std::span<const RxFrame> frames,
               TimeNs now) override;
  size_t Transmit(uint16_t port, std::span<TxFrame> frames,
                  TimeNs now) override;
  TimeNs NextEventTime() const override;
  uint8_t PausedPriorities(TimeNs now) override {
    return paused_priorities_ = cc_.RefreshPause(now);
  }
  VerdictLog* verdict_log() override { return &log_; }

  // --- congestion hooks ---
  // PFC: while paused, QPs whose service level maps to `priority` send
  // nothing (responses included).
  void PausePriority(uint8_t priority, bool paused);
  void SetPaceUntil(uint32_t qpn, TimeNs t);

  // --- the port's link ---
  // The carrier's link went down or came back, as rxe and mlx5 report it:
  // down, the port is DOWN (phys state Disabled), IBV_EVENT_PORT_ERR is
  // raised and link_downed counts it; up, ACTIVE/LinkUp and
  // IBV_EVENT_PORT_ACTIVE. QPs are left alone (their requests time out, as
  // on a pulled cable). No change, no event.
  void SetLinkUp(bool up);
  // The port's addresses changed (a netdev port follows its interface, as
  // rxe's GID table follows its netdev): the GID goes in the first free
  // index (an index already holding it is kept) or leaves its index, and
  // IBV_EVENT_GID_CHANGE is raised, as the kernel's GID cache raises it.
  // QPs and AHs whose source GID left keep the address they were sending
  // from, as rxe's QPs keep the GID attribute they hold: their peers'
  // answers no longer reach this port and their requests time out.
  absl::StatusOr<uint32_t> AddGid(const Gid& gid);
  absl::Status RemoveGid(const Gid& gid);
  // The port's MAC changed: frames are sourced from the new one (headers
  // encoded before are encoded again). GUIDs stay, as a ConnectX's do.
  void SetMac(const protocol::MacAddr& mac);
  // The link's MTU changed: the port's active and max MTU (what new QPs
  // may use). QPs keep their path MTU: if it no longer fits the link,
  // their larger frames are lost on the way and they time out.
  void SetPortMtu(Mtu mtu);

  // --- why (nic/drop_reason.h, nic/frame_verdict.h) ---
  // Per-reason counters, cumulative.
  const DropReasonCounters& reason_counters() const { return reasons_; }
  // Packet ids and the verdicts of the last frames (a capture, a dump).
  VerdictLog& verdicts() { return log_; }
  const VerdictLog& verdicts() const { return log_; }
  // Error completions and QPs that entered ERR/SQE since the last call,
  // oldest first: f(const ErrorNote&). Notes beyond the queue's room are
  // counted in error_notes_lost().
  template <typename F>
  void TakeErrorNotes(F&& f) {
    for (; notes_head_ != notes_tail_; ++notes_head_) {
      f(notes_[notes_head_ % notes_.size()]);
    }
  }
  uint64_t error_notes_lost() const { return notes_lost_; }
  // The last kFailedQps QPs destroyed after they failed (ERR or SQE for a
  // reason other than the application's own ibv_modify_qp), with their
  // flight recorders, newest last: f(const QpStory&).
  static constexpr size_t kFailedQps = 16;
  template <typename F>
  void ForEachFailedQp(F&& f) const {
    const uint64_t n = std::min<uint64_t>(failed_next_, kFailedQps);
    for (uint64_t i = failed_next_ - n; i < failed_next_; ++i) {
      f(static_cast<const QpStory&>(failed_[i % kFailedQps].story));
    }
  }
  // The newest of them with that number, or nullptr.
  const QpStory* FindFailedQp(uint32_t qpn) const;

  // Device counters: the receive-path drops kept here plus every QP's
  // engine counters summed.
  DeviceCounters QueryCounters() const;
  const DeviceCounters& device_counters() const { return counters_; }
  const DeviceAttr& device_attr() const { return config_.device; }
  const PortAttr& port_attr() const { return config_.port; }
  const RnicConfig& config() const { return config_; }
  // The latest time a carrier handed to Receive/Transmit: "now" for the
  // control path (the CM's consumer calls).
  TimeNs last_now() const { return last_now_; }
  MrTable& mr_table() { return mrs_; }
  const CqTable& cq_table() const { return cqs_; }
  PKeyTable& pkey_table() { return pkeys_; }
  GidTable& gid_table() { return gids_; }
  AsyncEventQueue& async_events() { return events_; }
  // QP1 and the Communication Manager behind it (nic/gsi.h,
  // nic/cm/cm_agent.h).
  Gsi& gsi() { return *gsi_; }
  CmAgent& cm() { return *cm_; }
  const CmAgent& cm() const { return *cm_; }
  // Congestion state: the PFC counters are congestion().PortCounters(now).
  const CongestionControl& congestion() const { return cc_; }

  // --- engine services: used by the requester, responder and completer ---
  MrTable& mrs() { return mrs_; }
  DeviceCounters& engine_counters() { return counters_; }
  // Counts a copy that failed because the memory was unreachable.
  void CountMrFault(MrStatus s) {
    if (s == MrStatus::kFault) ++counters_.mr_access_faults;
  }
  bool Paused(const Qp& qp) const {
    return (paused_priorities_ >> cc_.PriorityOf(qp)) & 1;
  }
  void Schedule(Qp& qp);
  // The packet id of the frame being received, 0 outside Receive.
  uint64_t rx_packet_id() const { return rx_id_; }
  // The RNIC acted on the frame being received (or on an event, outside
  // Receive): counts `reason`, records `action` for the frame's packet id
  // and marks it in `qp`'s flight recorder. The record is returned for the
  // caller's arguments (a scratch one outside Receive). Rare path.
  FrameVerdict& Verdict(Qp* qp, DropReason reason, VerdictAction action);
  // Arguments of a memory-key verdict (frame_verdict.h) from the MR table.
  void MrArgs(uint64_t* args, uint32_t key, uint64_t va, uint64_t len,
              AccessFlags need, PdHandle pd) const;
  // The same for the entry of `sges` that fails (or the first).
  // A one-packet receive (UD, raw packet) whose scatter into `sges` failed
  // with `ms`: counted, the WQE's completion `wc` (byte_len set) given the
  // error status, and the verdict with its arguments; returns why. The QP
  // stays usable, as a UD receive's does.
  DropReason FailReceiveScatter(Qp& qp, MrStatus ms, std::span<const Sge> sges,
                                WorkCompletion* wc);
  void SgArgs(uint64_t* args, std::span<const Sge> sges, AccessFlags need,
              PdHandle pd) const;
  // A frame `qp` just built into `out` (opcode and PSN of its BTH): its
  // packet id, its flight recorder entry and, with `why`, the note of why
  // it was sent (a NAK for `cause`, a retransmission).
  void FrameBuilt(Qp& qp, TxFrame& out, uint8_t opcode, uint32_t psn) {
    out.packet_id = log_.NextId();
    if (qp.recorder_ != nullptr) {
      qp.recorder_->Frame(RecorderEventKind::kTx, last_now_, out.packet_id,
                          {out.data, out.len}, opcode, psn);
    }
  }
  void NoteSent(Qp& qp, const TxFrame& out, DropReason why, uint64_t cause,
                bool resent, const uint64_t* args);
  // Completions: routed to the QP's send or receive CQ; an overflow moves
  // the QP to the error state. A receive completion records `solicited`
  // (the SEND carried BTH.SE) in WorkCompletion::solicited. An error
  // completion names its cause (logged by the daemon; flush errors take
  // the QP's).
  void CompleteSend(Qp& qp, const WorkCompletion& wc,
                    DropReason cause = DropReason::kNone,
                    uint64_t cause_id = 0);
  void CompleteRecv(Qp& qp, const WorkCompletion& wc, bool solicited,
                    DropReason cause = DropReason::kNone,
                    uint64_t cause_id = 0);
  // State changes made by the engines, with why and the frame behind it.
  void MoveToError(Qp& qp, DropReason why, uint64_t cause_id = 0);
  // Same, raising `event` (IBV_EVENT_QP_FATAL, _QP_REQ_ERR, _QP_ACCESS_ERR)
  // when the QP was not already in ERR.
  void MoveToError(Qp& qp, AsyncEventType event, DropReason why,
                   uint64_t cause_id = 0);
  // An affiliated asynchronous event about `qp`.
  void RaiseQpEvent(const Qp& qp, AsyncEventType event);
  void MoveToSqe(Qp& qp, DropReason why, uint64_t cause_id = 0);
  void FlushSendQueue(Qp& qp);
  void FlushRecvQueue(Qp& qp);
  // Appends a checked request to the QP's send queue.
  void EnqueueSend(Qp& qp, const SendWr& wr);
  // Takes the next receive WQE of the QP (or its SRQ) into qp.resp_.rwqe;
  // false when none, after asking the fetcher (if any) for WQEs posted but
  // not yet handed over.
  bool PopRecvWqe(Qp& qp);
  // The carrier's source of posted-but-unseen receive WQEs (nullptr: none;
  // everything is posted with PostRecv/PostSrqRecv directly).
  void set_recv_wqe_fetcher(RecvWqeFetcher* f) { fetcher_ = f; }
  // The headers below the BTH of an RC/UC QP's frames to its own path,
  // encoded again when the QP's path or the GID table changed since the
  // last frame.
  const protocol::NetHeaderTemplate& ConnectedHeaders(Qp& qp) const;
  // Changes whenever encoded path headers may be stale: a GID table change
  // or a new MAC.
  uint64_t path_generation() const { return gids_.generation() + mac_changes_; }
  // The encoded headers of a UD send of `qp` through `ah` (cached in the
  // AH), or nullptr when the AH is unusable (gone, another PD, no MAC yet).
  const protocol::NetHeaderTemplate* UdHeaders(const Qp& qp, AhHandle ah) const;

 private:
  Qp* FindQp(uint32_t qpn) const;
  absl::StatusOr<uint32_t> CreateXrcTgtQp(const QpInitAttr& init);
  // The headers below the BTH of a frame of `qp` towards `path`, encoded.
  // `sgid`: the source address when the path's GID index is empty (its
  // GID left the table).
  protocol::NetHeaderTemplate EncodePath(const Qp& qp, const QpPath& path,
                                         const Gid& sgid) const;
  // FindQp for the data path (a received frame's DestQP, a post): a
  // direct-mapped cache in front of qps_, because a hash lookup costs ~47
  // instructions and a hit here ~10. Only the non-const data path fills
  // it, so const queries from a control thread never write it; DestroyQp
  // clears the QP's entry.
  Qp* LookupQp(uint32_t qpn) {
    QpCacheEntry& e = qp_cache_[qpn % kQpCacheSize];
    if (e.qpn == qpn && e.qp != nullptr) return e.qp;
    Qp* qp = FindQp(qpn);
    if (qp != nullptr) e = {qpn, qp};
    return qp;
  }
  // SQD: once no request is outstanding, the drain is over
  // (IBV_EVENT_SQ_DRAINED if the QP asked for it).
  void CheckSqDrained(Qp& qp);
  void ReceiveOne(const RxFrame& frame, TimeNs now);
  // A RoCE frame (not QP1's, not a CNP) for `qp`: transport checks, then
  // the responder or the completer.
  void Deliver(Qp* qp, const RxFrame& frame, TimeNs now);
  // BTH.DestQP 0xFFFFFF: a copy of the frame to each attached QP.
  void ReceiveMulticast(const RxFrame& frame, TimeNs now);
  void RemoveIdle();
  // Records that `qp` left RTS for `state` because of `why`.
  void NoteQpError(Qp& qp, QpState from, DropReason why, uint64_t cause_id);
  void NoteCompletion(Qp& qp, const WorkCompletion& wc, bool recv,
                      DropReason cause, uint64_t cause_id);
  void CqOverflow(Qp& qp, CqHandle handle, const CompletionQueue& cq);
  // Verdicts on the frame being received (parsed_).
  void BadPkey(Qp& qp);
  void WrongState(Qp& qp);
  // QP1's frame, with the reason of a drop.
  void ReceiveGsi(TimeNs now);
  void PushNote(const ErrorNote& n);
  // A frame dropped before any QP took it (no QP: no recorder entry).
  void Drop(DropReason reason, uint64_t arg0 = 0) {
    Verdict(nullptr, reason, VerdictAction::kDropped).args[0] = arg0;
  }

  RnicConfig config_;
  AsyncEventQueue events_;
  PdTable pds_;
  MrTable mrs_;
  CqTable cqs_;
  SrqTable srqs_;
  XrcdTable xrcds_;
  GidTable gids_;
  uint64_t mac_changes_ = 0;
  PKeyTable pkeys_;
  AhTable ahs_;
  MulticastGroups mcast_;
  FlowTable flows_;
  absl::flat_hash_map<uint32_t, RssConfig> rss_;  // by RSS QP
  FlowKey flow_key_;  // scratch, reused for every steered frame

  absl::flat_hash_map<uint32_t, std::unique_ptr<Qp>> qps_;
  struct QpCacheEntry {
    uint32_t qpn = 0;
    Qp* qp = nullptr;
  };
  static constexpr uint32_t kQpCacheSize = 256;
  std::array<QpCacheEntry, kQpCacheSize> qp_cache_{};
  // The QPN after `qpn` in this RNIC's residue class (RnicConfig::shard),
  // never 0, 1 (QP0, QP1) or 0xFFFFFF (multicast).
  uint32_t NextQpn(uint32_t qpn) const;
  uint32_t next_qpn_ = 0x11;  // rxe starts at 17
  std::vector<Qp*> active_;
  size_t rr_resp_ = 0;
  size_t rr_req_ = 0;
  uint8_t paused_priorities_ = 0;
  TimeNs last_now_ = 0;
  DeviceCounters counters_;
  // What destroyed QPs counted (their share of QueryCounters).
  DeviceCounters retired_;
  CongestionControl cc_;
  std::unique_ptr<Gsi> gsi_;
  std::unique_ptr<CmAgent> cm_;
  uint64_t rx_not_roce_ = 0;
  RecvWqeFetcher* fetcher_ = nullptr;
  protocol::ParsedFrame parsed_;  // scratch, reused for every frame
  DropReasonCounters reasons_;
  VerdictLog log_;
  uint64_t rx_id_ = 0;     // the frame being received
  FrameVerdict no_frame_;  // Verdict()'s record outside Receive
  std::array<ErrorNote, 256> notes_;
  struct FailedQp {
    QpStory story;
    std::unique_ptr<FlightRecorder> recorder;  // story.recorder
  };
  std::array<FailedQp, kFailedQps> failed_;
  uint64_t failed_next_ = 0;
  uint64_t notes_head_ = 0, notes_tail_ = 0, notes_lost_ = 0;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RNIC_H_
