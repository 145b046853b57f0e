#include "nic/rnic.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/cm/cm_agent.h"
#include "nic/completer.h"
#include "nic/qp_state.h"
#include "nic/raw_packet.h"
#include "nic/requester.h"
#include "nic/responder.h"
#include "nic/tag_matching.h"
#include "protocol/multicast.h"

namespace rocemu::nic {

namespace {

using protocol::Engine;
using protocol::ServiceType;

// Shards of one port number their frames in disjoint ranges, so that a
// capture of the port never shows one id twice.
uint64_t FirstPacketId(const RnicConfig& c) {
  const uint64_t shard = c.shards != 0 && c.shard < c.shards ? c.shard : 0;
  return (shard << 48) + 1;
}

DropReason ParseReason(protocol::ParseError e) {
  switch (e) {
    case protocol::ParseError::kBadIcrc:
      return DropReason::kBadIcrc;
    case protocol::ParseError::kBadIpChecksum:
      return DropReason::kIpChecksum;
    case protocol::ParseError::kUnknownOpcode:
    case protocol::ParseError::kUnsupportedOpcode:
      return DropReason::kBadOpcode;
    default:
      return DropReason::kMalformed;
  }
}

// XRC splits RC in two: the TGT QP takes only requests, the INI QP only
// responses.
bool ServiceMatches(const protocol::OpcodeInfo& op, QpType t) {
  const ServiceType s = op.service;
  return (s == ServiceType::kRc && t == QpType::kRc) ||
         (s == ServiceType::kUc && t == QpType::kUc) ||
         (s == ServiceType::kUd && t == QpType::kUd) ||
         (s == ServiceType::kXrc &&
          (op.kind == protocol::OpKind::kRequest ? t == QpType::kXrcTgt
                                                 : t == QpType::kXrcIni));
}

}  // namespace

Rnic::Rnic(const RnicConfig& config)
    : config_(config),
      events_(std::max<uint32_t>(1, config.async_event_queue_len)),
      pds_(config.device.max_pd),
      mrs_(pds_, config.device.max_mr, config.device.max_mr_size),
      cqs_(config.device.max_cq, config.device.max_cqe, &events_),
      srqs_(pds_, config.device.max_srq, config.device.max_srq_wr,
            config.device.max_srq_sge, &events_),
      xrcds_(config.device.max_xrcds),
      gids_(static_cast<uint32_t>(config.port.gid_tbl_len)),
      pkeys_(config.port.pkey_tbl_len),
      ahs_(pds_, gids_, config.device.max_ah),
      mcast_(config.device.max_mcast_grp, config.device.max_mcast_qp_attach,
             config.device.max_total_mcast_qp_attach),
      flows_(config.device.max_flow_rules),
      cc_(config.congestion),
      gsi_(std::make_unique<Gsi>(config_.mac, pkeys_, gids_, counters_,
                                 config.mad_queue_len)),
      cm_(std::make_unique<CmAgent>(*this, *gsi_, counters_, 0)),
      log_(FirstPacketId(config)) {
  if (config_.shards == 0 || config_.shard >= config_.shards) {
    config_.shard = 0;
    config_.shards = 1;
  }
  while (next_qpn_ % config_.shards != config_.shard) ++next_qpn_;
  (void)gids_.Set(0, config.gid);
  gsi_->set_cm(cm_.get());
  gsi_->set_vlan(config_.vlan_id);
}

Rnic::~Rnic() = default;

// --- resources --------------------------------------------------------------

absl::StatusOr<PdHandle> Rnic::AllocPd() { return pds_.Alloc(kKernelClient); }

absl::StatusOr<uint32_t> Rnic::RegMr(PdHandle pd, void* addr, uint64_t length,
                                     AccessFlags access) {
  const HostChunk chunk{static_cast<uint8_t*>(addr), length};
  return mrs_.Register(kKernelClient, pd, reinterpret_cast<uint64_t>(addr),
                       length, access, {&chunk, 1});
}

absl::StatusOr<uint32_t> Rnic::RegMrProcess(PdHandle pd, pid_t pid,
                                            uint64_t iova, uint64_t length,
                                            AccessFlags access) {
  return mrs_.RegisterProcess(kKernelClient, pd, pid, iova, length, access);
}

absl::Status Rnic::DeregMr(uint32_t key) {
  return mrs_.Deregister(kKernelClient, key);
}

absl::StatusOr<CqHandle> Rnic::CreateCq(uint32_t cqe) {
  return cqs_.Create(kKernelClient, cqe);
}

size_t Rnic::PollCq(CqHandle cq, std::span<WorkCompletion> out) {
  CompletionQueue* q = cqs_.Get(cq);
  return q == nullptr ? 0 : q->Poll(out);
}

absl::StatusOr<AhHandle> Rnic::CreateAh(PdHandle pd, const AhAttr& attr,
                                        const protocol::MacAddr& dmac) {
  absl::StatusOr<AhHandle> ah = ahs_.Create(kKernelClient, pd, attr);
  if (!ah.ok()) return ah;
  absl::Status s = ahs_.SetDmac(*ah, dmac);
  if (!s.ok()) return s;
  return ah;
}

absl::StatusOr<SrqHandle> Rnic::CreateSrq(PdHandle pd, const SrqAttr& attr) {
  return srqs_.Create(kKernelClient, pd, attr);
}

absl::Status Rnic::PostSrqRecv(SrqHandle srq, const RecvWr& wr) {
  SharedReceiveQueue* q = srqs_.Get(srq);
  if (q == nullptr) return absl::NotFoundError("no such SRQ");
  switch (q->Post(wr)) {
    case PostResult::kOk:
      return absl::OkStatus();
    case PostResult::kFull:
      return absl::ResourceExhaustedError("SRQ full");
    case PostResult::kTooManySge:
      return absl::InvalidArgumentError("too many SGEs for the SRQ");
    case PostResult::kInError:
      return absl::FailedPreconditionError("SRQ in error");
  }
  return absl::InternalError("unreachable");
}

absl::Status Rnic::DestroyCq(CqHandle cq) {
  return cqs_.Destroy(kKernelClient, cq);
}

absl::Status Rnic::ResizeCq(CqHandle cq, uint32_t cqe) {
  CompletionQueue* q = cqs_.Get(cq);
  if (q == nullptr) return absl::NotFoundError("no such CQ");
  if (cqe > config_.device.max_cqe) {
    return absl::InvalidArgumentError("cqe above max_cqe");
  }
  return q->Resize(cqe);
}

absl::Status Rnic::DeallocPd(PdHandle pd) {
  return pds_.Dealloc(kKernelClient, pd);
}

absl::Status Rnic::DestroyAh(AhHandle ah) {
  return ahs_.Destroy(kKernelClient, ah);
}

absl::Status Rnic::ModifySrq(SrqHandle srq, const SrqAttr& attr,
                             uint32_t mask) {
  SharedReceiveQueue* q = srqs_.Get(srq, kKernelClient);
  if (q == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  if ((mask & srq_attr_mask::kMaxWr) &&
      (attr.max_wr == 0 || attr.max_wr > config_.device.max_srq_wr)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SRQ max_wr %u outside [1, %u]", attr.max_wr,
                        config_.device.max_srq_wr));
  }
  return q->Modify(attr, mask);
}

absl::StatusOr<SrqAttr> Rnic::QuerySrq(SrqHandle srq) const {
  const SharedReceiveQueue* q = srqs_.Get(srq, kKernelClient);
  if (q == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  return q->Query();
}

absl::Status Rnic::DestroySrq(SrqHandle srq) {
  const SharedReceiveQueue* q = srqs_.Get(srq, kKernelClient);
  const uint32_t xrcd = q != nullptr ? q->xrcd() : kInvalidHandle;
  const CqHandle cq = q != nullptr ? q->cq() : kInvalidHandle;
  absl::Status s = srqs_.Destroy(kKernelClient, srq);
  if (s.ok() && xrcd != kInvalidHandle) xrcds_.Release(xrcd);
  // An XRC or tag-matching SRQ held its CQ.
  if (s.ok() && cq != kInvalidHandle) {
    if (CompletionQueue* c = cqs_.Get(cq)) c->Release();
  }
  return s;
}

absl::StatusOr<XrcdHandle> Rnic::AllocXrcd() {
  return xrcds_.Alloc(kKernelClient);
}

absl::Status Rnic::DeallocXrcd(XrcdHandle xrcd) {
  return xrcds_.Dealloc(kKernelClient, xrcd);
}

absl::StatusOr<SrqHandle> Rnic::CreateXrcSrq(PdHandle pd, XrcdHandle xrcd,
                                             CqHandle cq, const SrqAttr& attr) {
  if (!xrcds_.Valid(xrcd)) {
    return absl::NotFoundError(absl::StrFormat("no XRCD 0x%08x", xrcd));
  }
  CompletionQueue* c = cqs_.Get(cq);
  if (c == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no CQ 0x%08x", cq));
  }
  absl::StatusOr<SrqHandle> h =
      srqs_.CreateXrc(kKernelClient, pd, xrcd, cq, attr);
  if (!h.ok()) return h;
  (void)xrcds_.Retain(xrcd);
  c->Retain();
  return h;
}

absl::StatusOr<uint32_t> Rnic::GetSrqNum(SrqHandle srq) const {
  const SharedReceiveQueue* q = srqs_.Get(srq);
  if (q == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no SRQ 0x%08x", srq));
  }
  if (!q->is_xrc()) {
    return absl::InvalidArgumentError("only an XRC SRQ has an SRQ number");
  }
  return q->srqn();
}

// --- engine services --------------------------------------------------------

void Rnic::Schedule(Qp& qp) {
  if (qp.scheduled_) return;
  qp.scheduled_ = true;
  active_.push_back(&qp);
}

void Rnic::CompleteSend(Qp& qp, const WorkCompletion& wc, DropReason cause,
                        uint64_t cause_id) {
  if (wc.status == WcStatus::kWrFlushErr) {
    ++counters_.req_cqe_flush_error;
  } else if (wc.status != WcStatus::kSuccess) {
    ++counters_.req_cqe_error;
    if (wc.status == WcStatus::kRemAccessErr) {
      ++counters_.req_remote_access_errors;
    } else if (wc.status == WcStatus::kRemInvReqErr) {
      ++counters_.req_remote_invalid_request;
    }
    NoteCompletion(qp, wc, false, cause, cause_id);
  }
  CompletionQueue* cq = cqs_.Get(qp.init_.send_cq);
  if (cq == nullptr) return;
  // A completion the CQ cannot take (it overflowed now or before) is a
  // catastrophic error of the QP (IBTA 11.6.2): CQ_ERR came from the CQ,
  // the QP goes to ERR with QP_FATAL. QPs on other CQs are not affected.
  if (cq->Push(wc) != CqPushResult::kOk) {
    CqOverflow(qp, qp.init_.send_cq, *cq);
  }
}

void Rnic::CompleteRecv(Qp& qp, const WorkCompletion& wc, bool solicited,
                        DropReason cause, uint64_t cause_id) {
  if (wc.status == WcStatus::kWrFlushErr) {
    ++counters_.resp_cqe_flush_error;
  } else if (wc.status != WcStatus::kSuccess) {
    ++counters_.resp_cqe_error;
    if (wc.status == WcStatus::kLocLenErr) ++counters_.resp_local_length_error;
    NoteCompletion(qp, wc, true, cause, cause_id);
  } else {
    ++counters_.rdma_recvs;
  }
  WorkCompletion flagged = wc;
  CqHandle cq_handle = qp.init_.recv_cq;
  if (qp.tm_) {
    // A TM SRQ's receives complete to its CQ, with their tag-matching
    // opcode and flags.
    TmDecorate(qp.resp_, &flagged);
    if (const SharedReceiveQueue* s = srqs_.Get(qp.init_.srq)) {
      cq_handle = s->cq();
    }
  }
  CompletionQueue* cq = cqs_.Get(cq_handle);
  if (cq == nullptr) return;
  flagged.solicited = solicited;
  if (qp.type() == QpType::kXrcTgt) flagged.srq = qp.init_.srq;
  if (cq->Push(flagged, solicited) != CqPushResult::kOk) {
    CqOverflow(qp, cq_handle, *cq);
  }
}

void Rnic::FlushSendQueue(Qp& qp) {
  for (uint64_t i = qp.comp_.comp_idx; i < qp.sq_tail_; ++i) {
    SendWqe& w = qp.sq_.at(i);
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.wqe_index = w.wr.wqe_index;
    wc.status =
        w.status != WcStatus::kSuccess ? w.status : WcStatus::kWrFlushErr;
    wc.qp_num = qp.qpn_;
    const bool own = w.status != WcStatus::kSuccess;
    const DropReason cause = own ? w.cause : qp.error_cause_.reason;
    const uint64_t cause_id = own ? w.cause_id : qp.error_cause_.packet_id;
    w.status = WcStatus::kSuccess;
    qp.comp_.comp_idx = i + 1;
    if ((w.wr.send_flags & send_flags::kTmInternal) != 0) {
      TmInternalDone(*this, qp, w, wc.status);
      continue;
    }
    CompleteSend(qp, wc, cause, cause_id);
  }
  qp.comp_.comp_idx = qp.sq_tail_;
  qp.req_.req_idx = qp.sq_tail_;
  qp.req_.pkt = 0;
  qp.req_.rd_atomic_outstanding = 0;
  qp.comp_.timer_deadline = kNever;
}

void Rnic::FlushRecvQueue(Qp& qp) {
  auto flush = [&](const PostedRecvWr& wr) {
    WorkCompletion wc;
    wc.wr_id = wr.wr_id;
    wc.status = WcStatus::kWrFlushErr;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qp.qpn_;
    CompleteRecv(qp, wc, false);
  };
  if (qp.resp_.have_rwqe) {
    qp.resp_.have_rwqe = false;
    flush(qp.resp_.rwqe);
  }
  if (!qp.init_.has_srq) qp.rq_.Flush(flush);
}

void Rnic::MoveToError(Qp& qp, DropReason why, uint64_t cause_id) {
  if (qp.attr_.qp_state == QpState::kErr) return;
  const QpState from = qp.attr_.qp_state;
  qp.attr_.qp_state = QpState::kErr;
  NoteQpError(qp, from, why, cause_id);
  FlushSendQueue(qp);
  FlushRecvQueue(qp);
  // A NAK that announces the error still goes out; anything else owed to
  // the peer is dropped with the connection.
  if (!qp.resp_.goto_error) qp.resp_.resp_head = qp.resp_.resp_tail;
  // The SRQ will give this QP no further WQE (IBTA 11.6.3.1; rxe and mlx5
  // raise it on every move of an SRQ-attached QP to ERR).
  if (qp.init_.has_srq) RaiseQpEvent(qp, AsyncEventType::kQpLastWqeReached);
}

void Rnic::MoveToError(Qp& qp, AsyncEventType event, DropReason why,
                       uint64_t cause_id) {
  if (qp.attr_.qp_state == QpState::kErr) return;
  RaiseQpEvent(qp, event);
  MoveToError(qp, why, cause_id);
}

void Rnic::RaiseQpEvent(const Qp& qp, AsyncEventType event) {
  events_.Push({event, qp.qpn_, kKernelClient});
}

void Rnic::CheckSqDrained(Qp& qp) {
  QpAttr& a = qp.attr_;
  if (a.qp_state != QpState::kSqd || !a.sq_draining) return;
  if (qp.comp_.comp_idx != qp.req_.req_idx || qp.req_.pkt != 0) return;
  a.sq_draining = 0;
  if (a.en_sqd_async_notify) RaiseQpEvent(qp, AsyncEventType::kSqDrained);
}

void Rnic::MoveToSqe(Qp& qp, DropReason why, uint64_t cause_id) {
  if (qp.attr_.qp_state != QpState::kRts &&
      qp.attr_.qp_state != QpState::kSqd) {
    return;
  }
  const QpState from = qp.attr_.qp_state;
  qp.attr_.qp_state = QpState::kSqe;
  NoteQpError(qp, from, why, cause_id);
  FlushSendQueue(qp);
}

bool Rnic::PopRecvWqe(Qp& qp) {
  if (qp.init_.has_srq) {
    SharedReceiveQueue* srq = srqs_.Get(qp.init_.srq);
    if (srq == nullptr) return false;
    if (srq->Front() == nullptr && fetcher_ != nullptr) {
      fetcher_->FetchSrqRecv(qp.init_.srq);
    }
    if (srq->Front() == nullptr) return false;
    qp.TakeRecvWqe(*srq->Front());
    srq->Pop();
    return true;
  }
  if (qp.rq_.Front() == nullptr && fetcher_ != nullptr) {
    fetcher_->FetchRecv(qp.qpn());
  }
  const PostedRecvWr* wr = qp.rq_.Front();
  if (wr == nullptr) return false;
  qp.TakeRecvWqe(*wr);
  qp.rq_.Pop();
  return true;
}

const protocol::NetHeaderTemplate* Rnic::UdHeaders(const Qp& qp,
                                                   AhHandle ah) const {
  const AddressHandle* h = ahs_.Get(ah);
  if (h == nullptr || h->pd != qp.pd_ || !h->dmac_resolved) return nullptr;
  if (h->headers_gid_generation != path_generation() ||
      h->headers_udp_sport != qp.udp_sport_) {
    QpPath path;
    path.dgid = h->attr.dgid;
    path.sgid_index = h->attr.sgid_index;
    path.dmac = h->dmac;
    path.traffic_class = h->attr.traffic_class;
    path.flow_label = h->attr.flow_label;
    path.hop_limit = h->attr.hop_limit;
    path.sl = h->attr.sl;
    h->headers = EncodePath(qp, path, h->sgid);
    h->headers_gid_generation = path_generation();
    h->headers_udp_sport = qp.udp_sport_;
  }
  return &h->headers;
}

protocol::NetHeaderTemplate Rnic::EncodePath(const Qp& qp, const QpPath& path,
                                             const Gid& sgid) const {
  protocol::NetHeaders net;
  net.src_mac = config_.mac;
  net.dst_mac = path.dmac;
  net.ipv6 = !GidIsIpv4Mapped(path.dgid);
  net.src_ip = gids_.Get(path.sgid_index).value_or(sgid);
  net.dst_ip = path.dgid;
  net.dscp = cc_.DscpOf(path.traffic_class);
  net.ecn = cc_.EcnBits();  // ECT(0) by default: DCQCN needs marks
  net.ttl = path.hop_limit;
  net.flow_label = path.flow_label;
  net.udp_src_port = qp.udp_sport_;
  if (config_.vlan_id.has_value()) {
    net.has_vlan = true;
    net.vlan.vid = *config_.vlan_id;
    net.vlan.pcp = path.sl != 0 ? path.sl & 7 : cc_.config().roce_prio;
  }
  return protocol::NetHeaderTemplate(net);
}

const protocol::NetHeaderTemplate& Rnic::ConnectedHeaders(Qp& qp) const {
  if (qp.path_headers_ == nullptr) {
    // INIT->RTR, the only way into RTR, allocates it: this guard turns a
    // missed allocation into a late one rather than a null dereference.
    qp.path_headers_ = std::make_unique<ConnectedPathHeaders>();
  }
  ConnectedPathHeaders& p = *qp.path_headers_;
  if (p.gid_generation != path_generation()) {
    // First encoding: an empty index falls back to GID 0, as before.
    if (p.gid_generation == 0) {
      p.sgid = gids_.Get(qp.attr_.ah_attr.sgid_index).value_or(config_.gid);
    }
    p.headers = EncodePath(qp, qp.attr_.ah_attr, p.sgid);
    if (std::optional<Gid> g = gids_.Get(qp.attr_.ah_attr.sgid_index)) {
      p.sgid = *g;
    }
    p.gid_generation = path_generation();
  }
  return p.headers;
}

// --- data path --------------------------------------------------------------

void Rnic::Receive(uint16_t /*port*/, std::span<const RxFrame> frames,
                   TimeNs now) {
  last_now_ = std::max(last_now_, now);
  for (const RxFrame& f : frames) {
    rx_id_ = f.packet_id != 0 ? f.packet_id : log_.NextId();
    ReceiveOne(f, now);
  }
  rx_id_ = 0;
}

void Rnic::ReceiveOne(const RxFrame& frame, TimeNs now) {
  // The ICRC is verified here, over the whole frame, before any engine
  // places a byte: it cannot be folded into the copy into the memory region
  // as a sender may fold it into its gather (protocol/icrc_copy.h), because
  // a RETH corrupted on the wire can still pass the R_Key and bounds checks
  // and would then write to the wrong place.
  static constexpr protocol::ParseOptions kVerifyAll{};
  static constexpr protocol::ParseOptions kIpChecksumGood{.verify_ip_checksum =
                                                              false};
  const protocol::ParseError e = protocol::ParseFrame(
      frame.bytes(), &parsed_,
      frame.ip_checksum_good ? kIpChecksumGood : kVerifyAll);
  if (e != protocol::ParseError::kOk) {
    // A raw QP takes frames a flow rule names whatever their checksums (a
    // ConnectX reports them in the CQE); a RoCE frame is never diverted.
    if (!flows_.empty() && e != protocol::ParseError::kBadIcrc &&
        SteerRaw(frame.bytes(), 0)) {
      return;
    }
    if (e == protocol::ParseError::kBadIcrc) {
      ++counters_.rx_icrc_encapsulated;
    } else if (e == protocol::ParseError::kUnknownOpcode ||
               e == protocol::ParseError::kUnsupportedOpcode) {
      ++counters_.rx_bad_opcode;
    } else {
      ++counters_.rx_malformed;
    }
    Drop(ParseReason(e), static_cast<uint64_t>(e));
    return;
  }
  if (parsed_.kind == protocol::FrameKind::kPfc ||
      parsed_.kind == protocol::FrameKind::kPause) {
    cc_.OnMacControl(parsed_, now);
    paused_priorities_ = cc_.paused_mask();
    return;
  }
  if (parsed_.kind != protocol::FrameKind::kRoce) {
    if (!flows_.empty() && SteerRaw(frame.bytes(), 0)) return;
    ++rx_not_roce_;
    Drop(DropReason::kNotRoce);
    return;
  }
  const protocol::OpcodeInfo& op = *parsed_.op;
  if (parsed_.hdr.bth.dest_qp == protocol::kGsiQpn) {
    ++counters_.rcvd_pkts;
    ReceiveGsi(now);
    return;
  }
  if (parsed_.hdr.bth.dest_qp == protocol::kMulticastQpn) {
    ReceiveMulticast(frame, now);
    return;
  }
  Qp* qp = LookupQp(parsed_.hdr.bth.dest_qp);
  if (qp == nullptr) {
    ++counters_.rx_unknown_qp;
    Drop(DropReason::kUnknownQpn, parsed_.hdr.bth.dest_qp);
    return;
  }
  if (op.engine == Engine::kCongestion) {
    // CNP: to the QP's DCQCN reaction point. CNPs carry the default P_Key
    // 0xFFFF whatever the QP's partition (ConnectX sends them so).
    if (parsed_.hdr.bth.pkey != protocol::kDefaultPKey &&
        !pkeys_.Accepts(qp->attr_.pkey_index, parsed_.hdr.bth.pkey)) {
      ++counters_.bad_pkey_cntr;
      BadPkey(*qp);
      return;
    }
    ++qp->counters_.cnp_received;
    cc_.OnCnp(*qp, now, counters_);
    return;
  }
  Deliver(qp, frame, now);
}

bool Rnic::SteerRaw(std::span<const uint8_t> frame, uint32_t from_qpn) {
  if (flows_.empty() || !ExtractFlowKey(frame, &flow_key_)) return false;
  // The RoCEv2 port is the engines' even when the frame did not parse (a
  // bad checksum): no rule takes it.
  if (IsRoceV2Key(flow_key_)) return false;
  size_t taken = 0;
  flows_.Steer(flow_key_, [&](uint32_t qpn, uint32_t) {
    if (qpn == from_qpn) return;
    if (!rss_.empty()) {
      if (auto it = rss_.find(qpn); it != rss_.end()) {
        qpn = RssPick(it->second, flow_key_);
      }
    }
    if (Qp* qp = LookupQp(qpn)) {
      RawPacket::Receive(*this, *qp, frame);
      ++taken;
    }
  });
  return taken > 0;
}

void Rnic::ReceiveMulticast(const RxFrame& frame, TimeNs now) {
  // Only multicast GIDs are ever attached (MulticastGroups::Attach).
  const std::vector<uint32_t>* members = mcast_.Members(parsed_.net.dst_ip);
  if (members == nullptr) {
    ++counters_.rx_mcast_no_group;
    Drop(DropReason::kMcastNoGroup);
    return;
  }
  ++counters_.multicast_rcv_packets;
  // The sender's own copy (looped back by the carrier) skips the sender.
  const bool ours = parsed_.net.src_mac == config_.mac;
  for (uint32_t qpn : *members) {
    if (ours && parsed_.hdr.deth.src_qp == qpn) continue;
    if (Qp* qp = FindQp(qpn)) Deliver(qp, frame, now);
  }
}

void Rnic::Deliver(Qp* qp, const RxFrame& frame, TimeNs now) {
  const protocol::OpcodeInfo& op = *parsed_.op;
  // A QP in ERR keeps the history that explains it: what its peer keeps
  // sending is dropped (counted, captured) but not recorded.
  if (qp->recorder_ != nullptr && qp->attr_.qp_state != QpState::kErr) {
    qp->recorder_->Frame(RecorderEventKind::kRx, now, rx_id_, frame.bytes(),
                         parsed_.hdr.bth.opcode, parsed_.hdr.bth.psn);
  }
  if (!op.supported || !ServiceMatches(op, qp->type())) {
    ++counters_.rx_bad_opcode;
    FrameVerdict& v =
        Verdict(qp, DropReason::kBadOpcode, VerdictAction::kDropped);
    v.args[0] = parsed_.hdr.bth.opcode;
    v.args[1] = static_cast<uint64_t>(qp->type()) + 1;
    return;
  }
  if (!pkeys_.Accepts(qp->attr_.pkey_index, parsed_.hdr.bth.pkey)) {
    ++counters_.bad_pkey_cntr;
    BadPkey(*qp);
    return;
  }
  if (parsed_.net.ecn == 0b11) cc_.OnCeMarked(*qp, parsed_, now, counters_);
  const QpState s = qp->attr_.qp_state;
  // The QP counts what the device counts, here and nowhere else: requests
  // that complete no WQE (READ, atomic), duplicates and responses alike.
  ++counters_.rcvd_pkts;
  ++qp->counters_.rcvd_pkts;
  if (op.engine == Engine::kResponder) {
    if (s != QpState::kRtr && s != QpState::kRts && s != QpState::kSqd &&
        s != QpState::kSqe) {
      ++counters_.rx_wrong_state;
      WrongState(*qp);
      return;
    }
    // A connected QP learns that its peer is up from the first request it
    // gets in RTR (IBTA 11.6.3.1): the CM then moves it to RTS.
    if (s == QpState::kRtr && !qp->comm_est_ && qp->type() != QpType::kUd) {
      qp->comm_est_ = true;
      RaiseQpEvent(*qp, AsyncEventType::kCommEst);
      cm_->OnCommEst(qp->qpn_, now);
    }
    Responder::Receive(*this, *qp, parsed_, frame.bytes(), now);
  } else {
    if (s != QpState::kRts && s != QpState::kSqd) {
      ++counters_.rx_wrong_state;
      WrongState(*qp);
      return;
    }
    Completer::Receive(*this, *qp, parsed_, now);
    if (qp->attr_.sq_draining) CheckSqDrained(*qp);
  }
}

size_t Rnic::Transmit(uint16_t /*port*/, std::span<TxFrame> frames,
                      TimeNs now) {
  last_now_ = std::max(last_now_, now);
  for (size_t i = 0; i < active_.size(); ++i) {
    Completer::OnTimer(*this, *active_[i], now);
  }
  if (cm_->NextEventTime() <= now) cm_->OnTimer(now);
  paused_priorities_ = cc_.RefreshPause(now);
  // CNPs first (strict priority), then MADs (a handshake must not wait
  // behind bulk data), then responses, then paced requests.
  size_t n = cc_.TransmitCnps(frames, counters_);
  n += gsi_->Transmit(frames.subspan(n));
  for (size_t i = 0; i < n; ++i) frames[i].packet_id = log_.NextId();
  counters_.sent_pkts += n;
  int failures = 0;
  // The first active QP from `next` on (wrapping) that `ok` accepts; `next`
  // moves past it.
  auto pick = [this](size_t& next, auto&& ok) -> Qp* {
    const size_t count = active_.size();
    size_t i = next < count ? next : next % count;
    for (size_t k = 0; k < count; ++k, i = i + 1 == count ? 0 : i + 1) {
      if (ok(*active_[i])) {
        next = i + 1;
        return active_[i];
      }
    }
    return nullptr;
  };
  // Responses are only queued by Receive: once a scan finds none, none
  // appear during this call, and later frames skip the scan (with many
  // QPs it was a walk over all of them per frame).
  bool responses = true;
  // The QP whose run of requests is under way, and what is left of it.
  Qp* run_qp = nullptr;
  uint32_t run_left = 0;
  while (n < frames.size() && !active_.empty() && failures < 8) {
    Qp* picked = nullptr;
    if (responses) {
      picked = pick(rr_resp_, [this](const Qp& q) {
        return Responder::HasResponse(q) && !Paused(q);
      });
      responses = picked != nullptr;
    }
    const bool response = picked != nullptr;
    if (picked == nullptr) {
      if (run_left > 0 && Requester::Ready(*this, *run_qp, now)) {
        picked = run_qp;
        --run_left;
      } else {
        picked = pick(rr_req_, [this, now](const Qp& q) {
          return Requester::Ready(*this, q, now);
        });
        run_qp = picked;
        run_left = config_.tx_quantum > 0 ? config_.tx_quantum - 1 : 0;
      }
    }
    if (picked == nullptr) break;
    TxFrame& f = frames[n];
    f.len = 0;
    const bool ok = response ? Responder::BuildNext(*this, *picked, f)
                    : picked->type() == QpType::kRawPacket
                        ? RawPacket::BuildNext(*this, *picked, f)
                        : Requester::BuildNext(*this, *picked, f, now);
    // A raw QP's frame delivered locally only.
    if (ok && f.len == 0 && picked->type() == QpType::kRawPacket) continue;
    if (ok && f.len > 0) {
      const bool raw = picked->type() == QpType::kRawPacket;
      if (!raw) f.priority = cc_.PriorityOf(*picked);
      if (!response && !raw) cc_.OnRequestSent(*picked, f.len, now);
      ++n;
      ++counters_.sent_pkts;
    } else {
      ++failures;
    }
  }
  RemoveIdle();
  return n;
}

void Rnic::RemoveIdle() {
  for (size_t i = 0; i < active_.size();) {
    Qp& q = *active_[i];
    // UC/UD sends complete as they leave: the drain can end here too.
    if (q.attr_.sq_draining) CheckSqDrained(q);
    const bool busy =
        Responder::HasResponse(q) ||
        (q.req_.req_idx < q.sq_tail_ && (q.attr_.qp_state == QpState::kRts ||
                                         q.attr_.qp_state == QpState::kSqd)) ||
        q.comp_.timer_deadline != kNever;
    if (busy) {
      ++i;
      continue;
    }
    q.scheduled_ = false;
    active_[i] = active_.back();
    active_.pop_back();
  }
}

TimeNs Rnic::NextEventTime() const {
  TimeNs t = std::min(cc_.NextEventTime(last_now_), cm_->NextEventTime());
  if (t <= last_now_ || gsi_->HasPending()) return last_now_;
  for (const Qp* q : active_) {
    if (Responder::HasResponse(*q) && !Paused(*q)) return last_now_;
    if (Requester::Ready(*this, *q, last_now_)) return last_now_;
    const TimeNs wake = Requester::WakeTime(*q);
    if (wake > last_now_) t = std::min(t, wake);
    t = std::min(t, q->comp_.timer_deadline);
  }
  return t;
}

void Rnic::PausePriority(uint8_t priority, bool paused) {
  cc_.ForcePause(priority, paused);
  paused_priorities_ = cc_.paused_mask();
}

void Rnic::SetLinkUp(bool up) {
  if (up == (config_.port.state == PortState::kActive)) return;
  config_.port.state = up ? PortState::kActive : PortState::kDown;
  config_.port.phys_state = up ? kPhysLinkUp : kPhysDisabled;
  if (!up) ++counters_.link_downed;
  events_.Push({up ? AsyncEventType::kPortActive : AsyncEventType::kPortErr,
                kPortNumber, kKernelClient});
}

absl::StatusOr<uint32_t> Rnic::AddGid(const Gid& gid) {
  if (std::optional<uint32_t> at = gids_.Find(gid)) return *at;
  absl::StatusOr<uint32_t> index = gids_.Add(gid);
  if (index.ok()) {
    events_.Push({AsyncEventType::kGidChange, kPortNumber, kKernelClient});
  }
  return index;
}

absl::Status Rnic::RemoveGid(const Gid& gid) {
  std::optional<uint32_t> at = gids_.Find(gid);
  if (!at.has_value()) {
    return absl::NotFoundError(
        absl::StrFormat("GID %s is not in the table", GidToString(gid)));
  }
  if (absl::Status s = gids_.Remove(*at); !s.ok()) return s;
  events_.Push({AsyncEventType::kGidChange, kPortNumber, kKernelClient});
  return absl::OkStatus();
}

void Rnic::SetMac(const protocol::MacAddr& mac) {
  if (mac == config_.mac) return;
  config_.mac = mac;  // QP1's MADs read it through Gsi's reference
  ++mac_changes_;
}

void Rnic::SetPortMtu(Mtu mtu) {
  config_.port.active_mtu = mtu;
  config_.port.max_mtu = mtu;
}

void Rnic::SetPaceUntil(uint32_t qpn, TimeNs t) {
  if (Qp* qp = FindQp(qpn)) {
    qp->pace_until_ = t;
    Schedule(*qp);
  }
}

DeviceCounters Rnic::QueryCounters() const {
  // Device counters are cumulative, as a NIC's port counters are: what
  // destroyed QPs counted stays in retired_.
  DeviceCounters c = counters_;
  for (const CounterField& f : kCounterFields) c.*f.field += retired_.*f.field;
  for (const auto& [qpn, qp] : qps_) qp->counters_.AddTo(c);
  return c;
}

}  // namespace rocemu::nic
