// A queue pair: its attributes and state (IBTA vol. 1 ch. 10.2-10.3), its
// send and receive queues, and the per-QP state of the three transport
// engines (requester, responder, completer; vol. 1 ch. 9.7-9.9). Everything
// is sized at creation so the data path never allocates.
#ifndef ROCEMU_NIC_QP_H_
#define ROCEMU_NIC_QP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "nic/clock.h"
#include "nic/completion.h"
#include "nic/congestion_qp.h"
#include "nic/counters.h"
#include "nic/drop_reason.h"
#include "nic/flight_recorder.h"
#include "nic/handles.h"
#include "nic/posted_wr.h"
#include "nic/qp_attr.h"
#include "nic/recv_queue.h"
#include "nic/work_request.h"
#include "protocol/net_header_template.h"
#include "protocol/tag_matching_header.h"

namespace rocemu::nic {

// A send WQE: the posted request plus where the requester and completer are
// with it.
struct SendWqe {
  PostedSendWr wr;
  uint64_t length = 0;     // message bytes
  uint32_t first_psn = 0;  // assigned when the first packet goes out
  uint32_t last_psn = 0;
  uint32_t npkts = 1;  // packets (for READ: response packets)
  bool read_or_atomic = false;
  // A local or remote error found for this WQE; the flush that follows
  // reports it instead of WR_FLUSH_ERR, with why and the packet id of the
  // frame behind it (0: none).
  WcStatus status = WcStatus::kSuccess;
  DropReason cause = DropReason::kNone;
  uint64_t cause_id = 0;
};

// Fixed-capacity ring indexed by monotonically increasing 64-bit positions.
// The slots are a power of two (as mlx5 sizes its work queues) so that a
// position maps to its slot with a mask, not a 64-bit division per access;
// capacity() is what the owner asked for and enforces.
template <typename T>
class Ring {
 public:
  void Init(uint32_t capacity) {
    size_t n = 1;
    while (n < capacity) n <<= 1;
    slots_.assign(n, T{});
    mask_ = static_cast<uint32_t>(n - 1);
    capacity_ = capacity;
  }
  uint32_t capacity() const { return capacity_; }
  T& at(uint64_t pos) { return slots_[slot(pos)]; }
  const T& at(uint64_t pos) const { return slots_[slot(pos)]; }
  // Index of pos's slot in [0, slots()): where per-slot side storage goes.
  size_t slot(uint64_t pos) const { return pos & mask_; }
  size_t slots() const { return slots_.size(); }

 private:
  std::vector<T> slots_;
  // 32 bits, so that a ring is 32 bytes: two in every QP (queues are far
  // below 2^31 slots: max_qp_wr).
  uint32_t mask_ = 0;
  uint32_t capacity_ = 0;
};

// Requester (send queue) state: req_idx is the WQE being transmitted, pkt its
// next packet. Go-back-N rewinds req_idx/pkt/psn to the first unacknowledged
// packet.
struct RequesterState {
  uint32_t psn = 0;           // PSN of the next packet to transmit
  uint32_t max_sent_psn = 0;  // highest PSN put on the wire
  uint64_t req_idx = 0;
  uint32_t pkt = 0;         // packet index within req_idx's message
  uint32_t noack_pkts = 0;  // packets since the last AckReq
  uint32_t rd_atomic_outstanding = 0;
  bool sent_any = false;
  TimeNs rnr_until = 0;  // RNR NAK wait: no request before this time
  // Why the requester went back (a timeout, a NAK): the packets up to
  // max_sent_psn it sends again are retransmissions of that cause.
  DropReason resend_reason = DropReason::kNone;
  uint64_t resend_cause = 0;  // the NAK, or the timed-out transmission
  uint64_t resend_args[3] = {};
};

// Completer state: comp_idx is the oldest WQE not yet completed, psn the
// oldest PSN not yet acknowledged.
struct CompleterState {
  uint64_t comp_idx = 0;
  uint32_t psn = 0;
  uint8_t retry_left = 0;
  uint8_t rnr_retry_left = 0;
  TimeNs timer_deadline = kNever;  // local ACK timeout
};

// What the responder owes the requester, in PSN order (responses must not
// overtake one another: an ACK past an unanswered READ is an implied NAK).
struct ResponseItem {
  enum class Kind : uint8_t { kAck, kReadResponse, kAtomicAck };
  Kind kind = Kind::kAck;
  uint8_t syndrome = 0;
  uint32_t psn = 0;
  uint32_t msn = 0;
  // READ response: remote region in the responder's memory, and the PD
  // that checks its key (an XRC TGT QP's changes with each request's SRQ).
  uint32_t rkey = 0;
  PdHandle pd = 0;
  uint64_t va = 0;
  uint64_t length = 0;
  uint32_t npkts = 0;
  uint32_t next_pkt = 0;
  uint64_t atomic_orig = 0;
  // A NAK or a duplicate's answer: the request frame it answers and why.
  uint64_t cause_id = 0;
  DropReason cause = DropReason::kNone;
};

// Responder resources (max_dest_rd_atomic of them): the READ and atomic
// requests executed recently, kept to serve duplicates (vol. 1 9.7.5.1.3).
struct ResponderResource {
  bool valid = false;
  bool atomic = false;
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  uint64_t atomic_orig = 0;
  // The MSN the original response carried: a replay is that response sent
  // again (rxe resends the saved ATOMIC_ACKNOWLEDGE), so its AETH counts
  // the messages completed by its PSN, not those completed since.
  uint32_t msn = 0;
  // An ATOMIC WRITE or FLUSH: answered again, never executed again, by a
  // READ response without payload.
  bool empty_read = false;
};

// Responder state for the message in progress.
struct ResponderState {
  uint32_t epsn = 0;  // expected PSN
  uint32_t msn = 0;
  bool nak_sent = false;  // one PSN sequence error NAK per gap
  // Message in progress (after FIRST, before LAST).
  protocol::Operation in_progress = protocol::Operation::kNone;
  bool in_progress_imm = false;
  // SEND: the receive WQE being filled and the bytes placed so far.
  bool have_rwqe = false;
  PostedRecvWr rwqe;  // its entries live in Qp::rwqe_sges_
  uint64_t recv_offset = 0;
  // WRITE: the region and the next address.
  uint64_t write_va = 0;
  uint64_t write_remaining = 0;
  uint64_t write_length = 0;
  uint32_t write_rkey = 0;
  // Response queue.
  uint32_t res_next = 0;  // next responder resource to (re)use
  uint64_t resp_head = 0;
  uint64_t resp_tail = 0;
  // UC: drop packets until the next FIRST/ONLY after a loss.
  bool uc_drop = false;
  bool goto_error = false;
  // Tag matching (a QP of a TM SRQ): what the SEND in progress is to the
  // matching list (nic/tag_matching.h), and a matched one's TMH.
  uint8_t tm_kind = 0;
  uint64_t tm_tag = 0;
  uint32_t tm_priv = 0;
};

// Per-QP counters (rxe/mlx5 names).
struct QpCounters {
  uint64_t sent_pkts = 0;
  uint64_t rcvd_pkts = 0;
  uint64_t sent_bytes = 0;
  uint64_t rcvd_bytes = 0;
  uint64_t duplicate_request = 0;
  uint64_t out_of_sequence = 0;
  uint64_t rcvd_rnr_err = 0;
  uint64_t send_rnr_err = 0;
  uint64_t rcvd_seq_err = 0;
  uint64_t retry_exceeded_err = 0;
  uint64_t retry_rnr_exceeded_err = 0;
  uint64_t completer_retry_err = 0;  // go-back-N restarts (timeout, NAK)
  uint64_t local_ack_timeout_err = 0;
  uint64_t implied_nak_seq_err = 0;
  uint64_t ghost_ack = 0;      // responses for PSNs never sent
  uint64_t rx_dropped = 0;     // any other dropped packet
  uint64_t out_of_buffer = 0;  // UD/UC SEND with no receive WQE
  uint64_t rnr_naks_sent = 0;
  uint64_t naks_sent = 0;
  uint64_t acks_sent = 0;
  uint64_t ack_deferred = 0;  // ACKs folded into a later, still queued one
  uint64_t cnp_received = 0;

  // Adds what the device's counters sum over QPs (rxe/mlx5 hw_counters).
  void AddTo(DeviceCounters& c) const;
};

// Why the QP left RTS for ERR or SQE (the first cause; later errors of an
// ERR QP change nothing), for rocemu-ctl why and the daemon's log.
struct QpErrorCause {
  DropReason reason = DropReason::kNone;
  uint64_t packet_id = 0;  // the frame behind it, 0: none
  TimeNs time = 0;
  QpState from = QpState::kReset;
  uint64_t args[6] = {};  // as frame_verdict.h gives them for `reason`
};

// The headers below the BTH of every frame a connected (RC/UC) QP sends,
// encoded once (Rnic::ConnectedHeaders) and again only when the path or
// the GID table changes.
struct ConnectedPathHeaders {
  protocol::NetHeaderTemplate headers;
  // Rnic::path_generation() at encoding; 0 = to be encoded.
  uint64_t gid_generation = 0;
  // The source address encoded, kept when the QP's source GID leaves the
  // table (Rnic::RemoveGid).
  protocol::IpAddr sgid{};
};

// A rendezvous a TM SRQ matched on this QP: the READ of the sender's
// buffer is in flight; the FIN after it echoes the TMH and RVH.
struct TmRendezvous {
  uint64_t recv_wr_id = 0;
  protocol::Tmh tmh;
  protocol::Rvh rvh;
  bool busy = false;
};

class Qp {
 public:
  // recv_max_sge: the SRQ's max_sge when the QP takes its receives there.
  // internal_send_wr: send queue slots beyond the application's, for the
  // requests the RNIC issues itself: a TM SRQ's QP (tm_), whose rendezvous
  // each take a READ and a FIN slot.
  Qp(uint32_t qpn, PdHandle pd, const QpInitAttr& init, uint32_t recv_max_sge,
     uint32_t internal_send_wr = 0);

  // Copies a request into the next send queue slot (the caller has checked
  // that there is one and that the request fits the QP's caps).
  SendWqe& PushSendWqe(const SendWr& wr);
  // Copies a receive WQE into resp_.rwqe (and rwqe_sges_).
  void TakeRecvWqe(const PostedRecvWr& wr);

  uint32_t qpn() const { return qpn_; }
  QpType type() const { return init_.qp_type; }
  PdHandle pd() const { return pd_; }
  const QpInitAttr& init_attr() const { return init_; }
  const QpAttr& attr() const { return attr_; }
  QpState state() const { return attr_.qp_state; }
  uint32_t mtu() const { return PathMtuBytes(attr_.path_mtu); }
  uint16_t udp_sport() const { return udp_sport_; }
  const QpCounters& counters() const { return counters_; }
  const FlightRecorder* recorder() const { return recorder_.get(); }
  const QpErrorCause& error_cause() const { return error_cause_; }

  // Send queue occupancy.
  uint64_t sq_posted() const { return sq_tail_; }
  uint32_t sq_outstanding() const {
    return static_cast<uint32_t>(sq_tail_ - comp_.comp_idx);
  }
  uint32_t rq_outstanding() const { return rq_.size(); }
  // Send WQEs posted and not completed that will each produce a CQE
  // (signaled, or every WQE under sq_sig_all): what ibv_resize_cq must
  // leave room for.
  uint32_t sq_signaled_outstanding() const {
    if (init_.sq_sig_all) return sq_outstanding();
    uint32_t n = 0;
    for (uint64_t i = comp_.comp_idx; i != sq_tail_; ++i) {
      if (sq_.at(i).wr.signaled()) ++n;
    }
    return n;
  }

  // Engine state below: read and written only by Rnic and the requester,
  // responder and completer (one thread, run to completion).
  uint32_t qpn_;
  PdHandle pd_;
  QpInitAttr init_;
  QpAttr attr_;
  uint16_t udp_sport_;
  // Scheduling: whether the QP is on the device's active list.
  bool scheduled_ = false;
  // IBV_EVENT_COMM_EST was raised (once, on the first request in RTR).
  bool comm_est_ = false;

  Ring<SendWqe> sq_;
  // Per send queue slot: max_send_sge SG entries and max_inline_data bytes
  // (at least one and 32 with internal slots: a READ's one SGE, a FIN).
  std::vector<Sge> sq_sges_;
  std::vector<uint8_t> sq_inline_;
  uint32_t sq_sge_stride_ = 0;
  uint32_t sq_inline_stride_ = 0;
  // A QP of a tag-matching SRQ, and its rendezvous in flight
  // (nic/tag_matching.h; empty otherwise).
  bool tm_ = false;
  std::vector<TmRendezvous> tm_rndv_;
  uint64_t sq_tail_ = 0;
  RecvQueue rq_;
  // The receive WQE the responder consumed (resp_.rwqe), which outlives its
  // queue slot: as many entries as the RQ's (or SRQ's) max_sge.
  std::vector<Sge> rwqe_sges_;

  RequesterState req_;
  CompleterState comp_;
  ResponderState resp_;
  Ring<ResponseItem> resp_queue_;
  std::vector<ResponderResource> resources_;
  // Allocated at INIT->RTR (RC/UC), so that an idle QP does not carry it.
  std::unique_ptr<ConnectedPathHeaders> path_headers_;

  QpCounters counters_;
  // The last events of the QP (nullptr: RnicConfig::flight_recorder_events
  // is 0).
  std::unique_ptr<FlightRecorder> recorder_;
  QpErrorCause error_cause_;
  // Congestion-control hook: the requester sends no new packet before this
  // time (the DCQCN pacer sets it; 0 = unpaced).
  TimeNs pace_until_ = 0;
  // DCQCN reaction point, pacer and notification point of this QP
  // (nic/congestion_control.h drives them).
  QpCongestion cc_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_QP_H_
