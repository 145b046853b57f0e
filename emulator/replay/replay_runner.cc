#include "emulator/replay/replay_runner.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/status_macros.h"
#include "emulator/capture/frame_notes.h"
#include "emulator/capture/pcapng_writer.h"
#include "emulator/replay/pcap_io.h"
#include "nic/cm/cm_agent.h"
#include "nic/rnic.h"
#include "verbs/server/json_writer.h"

namespace rocemu::replay {
namespace {

using Json = nlohmann::ordered_json;
using nic::TimeNs;

// A frame the RNIC received or sent, kept for the summary's counts.
struct InputFrame {
  uint32_t number = 0;  // 1-based, as tshark numbers them
  uint64_t time_ns = 0;
  std::vector<uint8_t> bytes;
};

struct Completion {
  std::string cq;
  TimeNs time_ns = 0;
  nic::WorkCompletion wc;
};

struct Mr {
  const MrSpec* spec = nullptr;
  std::vector<uint8_t> buf;
  uint32_t key = 0;
};

bool Selected(const ReplayCase& c, std::span<const uint8_t> frame) {
  switch (c.select) {
    case Select::kAll:
      return true;
    case Select::kDstMac: {
      if (frame.size() < 6) return false;
      const bool bcast = std::all_of(frame.begin(), frame.begin() + 6,
                                     [](uint8_t b) { return b == 0xFF; });
      return bcast || std::equal(c.mac.begin(), c.mac.end(), frame.begin());
    }
    case Select::kDstIp: {
      // Checks off: a frame with a broken ICRC or checksum is still the
      // RNIC's to receive (and count).
      protocol::ParseOptions o;
      o.verify_icrc = false;
      o.verify_ip_checksum = false;
      o.verify_udp_checksum = false;
      protocol::ParsedFrame p;
      (void)protocol::ParseFrame(frame, &p, o);
      const bool ip = p.ethertype == 0x0800 || p.ethertype == 0x86DD;
      return ip && p.l3_offset != 0 && p.net.dst_ip == c.ip;
    }
  }
  return false;
}

void FillMemory(const MrSpec& s, std::vector<uint8_t>* buf) {
  buf->assign(s.length, 0);
  for (size_t i = 0; i < buf->size(); ++i) {
    switch (s.fill) {
      case FillPattern::kZero:
        break;
      case FillPattern::kByte:
        (*buf)[i] = s.fill_byte;
        break;
      case FillPattern::kRamp:
        (*buf)[i] = static_cast<uint8_t>(i + s.fill_byte);
        break;
      case FillPattern::kText:
        if (i < s.fill_text.size()) {
          (*buf)[i] = static_cast<uint8_t>(s.fill_text[i]);
        }
        break;
    }
  }
}

class Runner {
 public:
  Runner(const ReplayCase& c, const nic::RnicConfig& cfg) : c_(c), nic_(cfg) {}

  absl::Status Setup();
  absl::StatusOr<std::string> Run(const std::vector<InputFrame>& frames,
                                  size_t total_read, const std::string& out);

 private:
  absl::Status RegisterMrs();
  absl::Status CreateQps();
  absl::Status ConnectQp(const QpSpec& q);
  absl::Status PostWrs(const QpSpec& q);
  absl::StatusOr<nic::SgList> SgList(const std::vector<SgeSpec>& sges) const;
  absl::Status Drain();
  absl::Status AdvanceTo(TimeNs target);
  // Collects completions and CM events, and does what the case's
  // application does on them (deferred sends, accepting connections).
  // True when it posted or accepted something.
  bool PollCqs();
  absl::Status PostSend(uint32_t qpn, const SendSpec& s);
  bool HandleCmEvents();
  std::string Summary(size_t total_read, size_t fed) const;

  const ReplayCase& c_;
  nic::Rnic nic_;
  TimeNs now_ = 0;
  absl::flat_hash_map<std::string, nic::PdHandle> pds_;
  absl::flat_hash_map<std::string, nic::CqHandle> cqs_;
  absl::flat_hash_map<std::string, Mr> mrs_;
  std::vector<Completion> completions_;
  // Sends waiting for their completion count, in case order.
  struct Deferred {
    uint32_t qpn;
    const SendSpec* spec;
  };
  std::vector<Deferred> deferred_;
  absl::flat_hash_map<nic::CmId, const CmListenSpec*> listeners_;
  struct CmEventSeen {
    TimeNs time_ns;
    nic::CmEventType type;
    nic::CmId id;
  };
  std::vector<CmEventSeen> cm_events_;
  PcapFileWriter out_;
  // An output named *.pcapng: both directions, with the RNIC's verdicts
  // (emulator/capture/frame_notes.h), instead of out_.
  bool pcapng_ = false;
  capture::PcapngWriter ng_;
  std::string note_;
  uint32_t out_frames_ = 0;
  TimeNs last_out_ns_ = 0;
  std::array<std::array<uint8_t, 9216>, 16> tx_bufs_{};
};

absl::Status Runner::Setup() {
  for (size_t i = 0; i < c_.pkeys.size(); ++i) {
    RETURN_IF_ERROR(
        nic_.pkey_table().Set(static_cast<uint16_t>(i), c_.pkeys[i]));
  }
  for (const std::string& name : c_.pds) {
    absl::StatusOr<nic::PdHandle> pd = nic_.AllocPd();
    if (!pd.ok()) return pd.status();
    pds_[name] = *pd;
  }
  RETURN_IF_ERROR(RegisterMrs());
  for (const CqSpec& cq : c_.cqs) {
    absl::StatusOr<nic::CqHandle> h = nic_.CreateCq(cq.cqe);
    if (!h.ok()) return h.status();
    cqs_[cq.name] = *h;
  }
  RETURN_IF_ERROR(CreateQps());
  for (const CmListenSpec& l : c_.cm_listens) {
    nic::CmListenParams p;
    p.service_id = l.service_id;
    absl::StatusOr<nic::CmId> id = nic_.cm().Listen(p);
    if (!id.ok()) return id.status();
    listeners_[*id] = &l;
  }
  return absl::OkStatus();
}

// A key is (slot index << 8) | key byte (nic/mr_table.h). The capture's
// R_Key is reproduced with the ordinary verbs: filler registrations take the
// slots below its index, then ibv_rereg_mr-style re-registrations step its
// key byte, as a long-running process would have done.
absl::Status Runner::RegisterMrs() {
  std::vector<const MrSpec*> order;
  for (const MrSpec& s : c_.mrs) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(),
                   [](const MrSpec* a, const MrSpec* b) {
                     // Keyed ones in index order first, then the rest.
                     const uint32_t ka = a->rkey == 0 ? ~0u : a->rkey >> 8;
                     const uint32_t kb = b->rkey == 0 ? ~0u : b->rkey >> 8;
                     return ka < kb;
                   });
  static uint8_t filler_byte = 0;
  std::vector<uint32_t> fillers;
  uint32_t next_index = 1;  // slot 0 is never used
  const nic::PdHandle filler_pd = pds_.begin()->second;
  for (const MrSpec* s : order) {
    Mr mr;
    mr.spec = s;
    FillMemory(*s, &mr.buf);
    const nic::PdHandle pd = pds_.at(s->pd);
    if (s->rkey != 0) {
      while (next_index < (s->rkey >> 8)) {
        const nic::HostChunk chunk{&filler_byte, 1};
        absl::StatusOr<uint32_t> k = nic_.mr_table().Register(
            nic::kKernelClient, filler_pd, 0x1000, 1, 0, {&chunk, 1});
        if (!k.ok()) return k.status();
        fillers.push_back(*k);
        ++next_index;
      }
    }
    const nic::HostChunk chunk{mr.buf.data(), mr.buf.size()};
    absl::StatusOr<uint32_t> key = nic_.mr_table().Register(
        nic::kKernelClient, pd, s->va, s->length, s->access, {&chunk, 1});
    if (!key.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("MR '", s->name, "': ", key.status().message()));
    }
    ++next_index;
    if (s->rkey != 0) {
      for (int i = 0; i < 256 && (*key & 0xFF) != (s->rkey & 0xFF); ++i) {
        key = nic_.mr_table().Reregister(nic::kKernelClient, *key,
                                         nic::rereg::kChangeAccess, pd, 0, 0,
                                         s->access, {});
        if (!key.ok()) return key.status();
      }
      if (*key != s->rkey) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "MR '%s': the RNIC handed out key 0x%x, not the requested 0x%x",
            s->name, *key, s->rkey));
      }
    }
    mr.key = *key;
    mrs_[s->name] = std::move(mr);
  }
  for (uint32_t k : fillers) {
    RETURN_IF_ERROR(nic_.mr_table().Deregister(nic::kKernelClient, k));
  }
  return absl::OkStatus();
}

// QPNs are handed out in increasing order from 0x11 (rxe's first QPN);
// QPs created and destroyed on the way take the numbers the capture does
// not use.
absl::Status Runner::CreateQps() {
  std::vector<const QpSpec*> order;
  for (const QpSpec& q : c_.qps) order.push_back(&q);
  std::sort(order.begin(), order.end(),
            [](const QpSpec* a, const QpSpec* b) { return a->qpn < b->qpn; });
  for (const QpSpec* q : order) {
    nic::QpInitAttr init;
    init.qp_type = q->type;
    init.send_cq = cqs_.at(q->send_cq);
    init.recv_cq = cqs_.at(q->recv_cq);
    init.cap = {q->max_send_wr, q->max_recv_wr, nic::kMaxSge, nic::kMaxSge, 0};
    const nic::PdHandle pd = pds_.at(q->pd);
    for (int guard = 0;; ++guard) {
      absl::StatusOr<uint32_t> qpn = nic_.CreateQp(pd, init);
      if (!qpn.ok()) return qpn.status();
      if (*qpn == q->qpn) break;
      RETURN_IF_ERROR(nic_.DestroyQp(*qpn));
      if (*qpn > q->qpn || guard > 8192) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "QPN 0x%x cannot be created (the RNIC is at 0x%x)", q->qpn, *qpn));
      }
    }
    RETURN_IF_ERROR(ConnectQp(*q));
    RETURN_IF_ERROR(PostWrs(*q));
  }
  return absl::OkStatus();
}

absl::Status Runner::ConnectQp(const QpSpec& q) {
  using namespace nic::qp_attr;  // NOLINT
  const bool ud = q.type == nic::QpType::kUd;
  nic::QpAttr a;
  a.qp_state = nic::QpState::kInit;
  a.pkey_index = q.pkey_index;
  a.port_num = 1;
  a.qp_access_flags = q.access;
  a.qkey = q.qkey;
  nic::QpAttrMask m = kState | kPkeyIndex | kPort | (ud ? kQkey : kAccessFlags);
  RETURN_IF_ERROR(nic_.ModifyQp(q.qpn, a, m));
  if (q.state == nic::QpState::kInit) return absl::OkStatus();
  a.qp_state = nic::QpState::kRtr;
  a.path_mtu = q.path_mtu;
  a.dest_qp_num = q.dest_qpn;
  a.rq_psn = q.rq_psn;
  a.max_dest_rd_atomic = q.max_dest_rd_atomic;
  a.min_rnr_timer = q.min_rnr_timer;
  a.ah_attr.dgid = q.remote_ip;
  a.ah_attr.dmac = q.remote_mac;
  a.ah_attr.traffic_class = q.traffic_class;
  a.ah_attr.hop_limit = q.hop_limit;
  if (q.type == nic::QpType::kRc) {
    m = kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic |
        kMinRnrTimer;
  } else if (q.type == nic::QpType::kUc) {
    m = kState | kAv | kPathMtu | kDestQpn | kRqPsn;
  } else {
    m = kState;
  }
  RETURN_IF_ERROR(nic_.ModifyQp(q.qpn, a, m));
  if (q.state == nic::QpState::kRtr) return absl::OkStatus();
  a.qp_state = nic::QpState::kRts;
  a.sq_psn = q.sq_psn;
  a.timeout = q.timeout;
  a.retry_cnt = q.retry_cnt;
  a.rnr_retry = q.rnr_retry;
  a.max_rd_atomic = q.max_rd_atomic;
  m = kState | kSqPsn;
  if (q.type == nic::QpType::kRc) {
    m |= kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic;
  }
  return nic_.ModifyQp(q.qpn, a, m);
}

absl::StatusOr<nic::SgList> Runner::SgList(
    const std::vector<SgeSpec>& sges) const {
  nic::SgList out;
  for (const SgeSpec& s : sges) {
    const Mr& mr = mrs_.at(s.mr);
    if (!out.PushBack(nic::Sge{mr.spec->va + s.offset, s.length, mr.key})) {
      return absl::InvalidArgumentError("too many SGEs");
    }
  }
  return out;
}

absl::Status Runner::PostWrs(const QpSpec& q) {
  for (const RecvSpec& r : q.recvs) {
    nic::RecvWr wr;
    wr.wr_id = r.wr_id;
    absl::StatusOr<nic::SgList> sg = SgList(r.sges);
    if (!sg.ok()) return sg.status();
    wr.sg_list = *sg;
    RETURN_IF_ERROR(nic_.PostRecv(q.qpn, wr));
  }
  for (const SendSpec& s : q.sends) {
    if (s.after_completions != 0) {
      deferred_.push_back({q.qpn, &s});
      continue;
    }
    RETURN_IF_ERROR(PostSend(q.qpn, s));
  }
  std::stable_sort(deferred_.begin(), deferred_.end(),
                   [](const Deferred& a, const Deferred& b) {
                     return a.spec->after_completions <
                            b.spec->after_completions;
                   });
  return absl::OkStatus();
}

absl::Status Runner::PostSend(uint32_t qpn, const SendSpec& s) {
  nic::SendWr wr;
  wr.wr_id = s.wr_id;
  wr.opcode = s.opcode;
  wr.send_flags = (s.signaled ? nic::send_flags::kSignaled : 0) |
                  (s.solicited ? nic::send_flags::kSolicited : 0);
  absl::StatusOr<nic::SgList> sg = SgList(s.sges);
  if (!sg.ok()) return sg.status();
  wr.sg_list = *sg;
  wr.imm_data = s.imm_data;
  wr.rdma = {s.remote_va, s.rkey};
  wr.atomic = {s.remote_va, s.compare_add, s.swap, s.rkey};
  return nic_.PostSend(qpn, wr);
}

// A connection request to a listener of the case is accepted on its QP at
// once (the CM takes the QP to RTR, sends the REP, and to RTS on the RTU).
bool Runner::HandleCmEvents() {
  bool acted = false;
  nic::CmEvent ev;
  while (nic_.cm().PollEvent(&ev)) {
    cm_events_.push_back({now_, ev.type, ev.id});
    if (ev.type != nic::CmEventType::kReqReceived) continue;
    auto it = listeners_.find(ev.listen_id);
    if (it == listeners_.end()) continue;
    nic::CmAcceptParams p;
    p.qpn = it->second->qpn;
    p.responder_resources = it->second->responder_resources;
    p.initiator_depth = it->second->initiator_depth;
    p.rnr_retry_count = it->second->rnr_retry_count;
    // A failed accept is the summary's to show (no REP, counters).
    (void)nic_.cm().Accept(ev.id, p, now_);
    acted = true;
  }
  return acted;
}

absl::Status Runner::Drain() {
  for (;;) {
    std::array<nic::TxFrame, 16> tx;
    for (size_t i = 0; i < tx.size(); ++i) {
      tx[i].data = tx_bufs_[i].data();
      tx[i].capacity = static_cast<uint32_t>(tx_bufs_[i].size());
    }
    const size_t n = nic_.Transmit(0, tx, now_);
    for (size_t i = 0; i < n; ++i) {
      if (pcapng_) {
        ng_.Write({tx[i].data, tx[i].len}, now_,
                  capture::DescribeFrame(capture::Direction::kOutbound,
                                         tx[i].packet_id, &nic_.verdicts(),
                                         nullptr, &note_));
      } else {
        out_.Write({tx[i].data, tx[i].len}, now_);
      }
      last_out_ns_ = now_;
      if (++out_frames_ > c_.max_output_frames) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "the RNIC sent more than max_output_frames (%u) frames",
            c_.max_output_frames));
      }
    }
    const bool acted = PollCqs();
    if (n == 0 && !acted) return absl::OkStatus();
  }
}

// Fires the RNIC's timers due before `target`, then moves the clock there.
absl::Status Runner::AdvanceTo(TimeNs target) {
  for (int guard = 0;; ++guard) {
    RETURN_IF_ERROR(Drain());
    const TimeNs next = nic_.NextEventTime();
    if (next == nic::kNever || next >= target) break;
    if (guard > 1'000'000) {
      return absl::InternalError(absl::StrFormat(
          "the RNIC keeps reporting events due (next at %u ns) without "
          "settling",
          next));
    }
    // An event reported due now that sent nothing: move one tick on.
    now_ = next > now_ ? next : now_ + 1;
  }
  now_ = std::max(now_, target);
  return absl::OkStatus();
}

bool Runner::PollCqs() {
  bool acted = HandleCmEvents();
  for (const CqSpec& cq : c_.cqs) {
    nic::WorkCompletion wc[16];
    size_t n;
    while ((n = nic_.PollCq(cqs_.at(cq.name), wc)) > 0) {
      for (size_t i = 0; i < n; ++i) {
        completions_.push_back({cq.name, now_, wc[i]});
      }
    }
  }
  size_t posted = 0;
  while (posted < deferred_.size() &&
         deferred_[posted].spec->after_completions <= completions_.size()) {
    // A post the RNIC refuses shows in the summary: the WR never completes.
    (void)PostSend(deferred_[posted].qpn, *deferred_[posted].spec);
    ++posted;
  }
  deferred_.erase(deferred_.begin(), deferred_.begin() + posted);
  return acted || posted != 0;
}

absl::StatusOr<std::string> Runner::Run(const std::vector<InputFrame>& frames,
                                        size_t total_read,
                                        const std::string& out) {
  pcapng_ = out.size() > 7 && out.compare(out.size() - 7, 7, ".pcapng") == 0;
  if (pcapng_) {
    RETURN_IF_ERROR(ng_.Open(out, 65535));
  } else {
    RETURN_IF_ERROR(out_.Open(out, PcapPrecision::kNano));
  }
  // Work posted at set-up starts at the capture's first timestamp.
  now_ = frames.empty() ? 0 : frames.front().time_ns;
  for (const InputFrame& f : frames) {
    // Timestamps going backwards (merged captures) do not rewind time.
    RETURN_IF_ERROR(AdvanceTo(f.time_ns));
    const nic::RxFrame rx{f.bytes.data(), static_cast<uint32_t>(f.bytes.size()),
                          false, nic_.verdicts().NextId()};
    nic_.Receive(0, {&rx, 1}, now_);
    if (pcapng_) {
      // Written once the RNIC took it: with what it did to it.
      ng_.Write(
          f.bytes, now_,
          capture::DescribeFrame(capture::Direction::kInbound, rx.packet_id,
                                 &nic_.verdicts(), nullptr, &note_));
    }
  }
  RETURN_IF_ERROR(AdvanceTo(now_ + c_.settle_ns));
  RETURN_IF_ERROR(Drain());
  RETURN_IF_ERROR(pcapng_ ? ng_.Close() : out_.Close());
  return Summary(total_read, frames.size());
}

// The summary laid out for diffs of golden files: one top-level field a
// line, and a list's items one a line.
std::string SummaryText(const Json& summary) {
  std::string s = "{\n";
  size_t n = 0;
  for (const auto& [key, value] : summary.items()) {
    absl::StrAppend(&s, "  ", verbs::DumpJson(Json(key)), ": ");
    if (value.is_array() && !value.empty()) {
      s += "[\n";
      for (size_t i = 0; i < value.size(); ++i) {
        absl::StrAppend(&s, "    ", verbs::DumpJson(value[i]),
                        i + 1 < value.size() ? ",\n" : "\n");
      }
      s += "  ]";
    } else {
      s += verbs::DumpJson(value);
    }
    s += ++n < summary.size() ? ",\n" : "\n";
  }
  return s + "}\n";
}

std::string Runner::Summary(size_t total_read, size_t fed) const {
  Json summary = {{"case", c_.name},
                  {"input_frames", total_read},
                  {"received_frames", fed},
                  {"output_frames", out_frames_},
                  {"last_output_ns", last_out_ns_},
                  {"quiet", nic_.NextEventTime() == nic::kNever}};

  Json completions = Json::array();
  for (const Completion& c : completions_) {
    Json w = {{"cq", c.cq},
              {"time_ns", uint64_t{c.time_ns}},
              {"qp_num", c.wc.qp_num},
              {"wr_id", c.wc.wr_id},
              {"status", nic::WcStatusName(c.wc.status)},
              {"opcode", nic::WcOpcodeName(c.wc.opcode)},
              {"byte_len", c.wc.byte_len},
              {"wc_flags", c.wc.wc_flags}};
    if (c.wc.wc_flags & nic::wc_flags::kWithImm) {
      w["imm_data"] = c.wc.imm_data;
    }
    if (c.wc.wc_flags & nic::wc_flags::kWithInv) {
      w["invalidated_rkey"] = c.wc.invalidated_rkey;
    }
    if (c.wc.src_qp != 0) w["src_qp"] = c.wc.src_qp;
    completions.push_back(std::move(w));
  }
  summary["completions"] = std::move(completions);

  if (!c_.cm_listens.empty()) {
    Json events = Json::array();
    for (const CmEventSeen& e : cm_events_) {
      events.push_back({{"time_ns", uint64_t{e.time_ns}},
                        {"type", nic::CmEventName(e.type)},
                        {"id", e.id}});
    }
    summary["cm_events"] = std::move(events);
  }
  if (!deferred_.empty()) summary["sends_never_posted"] = deferred_.size();

  // Non-zero counters only, so that a counter added to the RNIC later does
  // not change every golden file.
  Json counters = Json::object();
  const nic::DeviceCounters dc = nic_.QueryCounters();
  for (const nic::CounterField& f : nic::kCounterFields) {
    if (dc.*f.field != 0) counters[f.name] = dc.*f.field;
  }
  summary["counters"] = std::move(counters);

  std::vector<const QpSpec*> qps;
  for (const QpSpec& q : c_.qps) qps.push_back(&q);
  std::sort(qps.begin(), qps.end(),
            [](const QpSpec* a, const QpSpec* b) { return a->qpn < b->qpn; });
  Json qp_list = Json::array();
  for (const QpSpec* q : qps) {
    const nic::Qp* qp = nic_.GetQp(q->qpn);
    qp_list.push_back({{"qpn", q->qpn},
                       {"state", nic::QpStateName(qp->state())},
                       {"sq_outstanding", qp->sq_outstanding()},
                       {"rq_outstanding", qp->rq_outstanding()},
                       {"rcvd_pkts", qp->counters().rcvd_pkts},
                       {"sent_pkts", qp->counters().sent_pkts},
                       {"acks_sent", qp->counters().acks_sent},
                       {"naks_sent", qp->counters().naks_sent},
                       {"duplicate_request", qp->counters().duplicate_request},
                       {"out_of_sequence", qp->counters().out_of_sequence}});
  }
  summary["qps"] = std::move(qp_list);

  Json mrs = Json::array();
  for (const MrSpec& spec : c_.mrs) {
    const Mr& mr = mrs_.at(spec.name);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, mr.buf.data(), static_cast<uInt>(mr.buf.size()));
    mrs.push_back({{"name", spec.name},
                   {"rkey", absl::StrFormat("0x%x", mr.key)},
                   {"length", uint64_t{spec.length}},
                   {"crc32", absl::StrFormat("0x%08x", crc)}});
  }
  summary["mrs"] = std::move(mrs);
  return SummaryText(summary);
}

}  // namespace

absl::StatusOr<std::string> RunReplay(const ReplayCase& c,
                                      const std::string& out_pcap) {
  std::vector<InputFrame> frames;
  size_t total = 0;
  {
    PcapReader reader;
    RETURN_IF_ERROR(reader.Open(c.input_pcap));
    PcapFrame f;
    absl::Status err;
    size_t next_listed = 0;
    while (reader.Next(&f, &err)) {
      ++total;
      const uint32_t number = static_cast<uint32_t>(total);
      if (!c.frames.empty()) {
        if (next_listed >= c.frames.size() || c.frames[next_listed] != number) {
          continue;
        }
        ++next_listed;
      }
      if (!Selected(c, f.bytes)) continue;
      if (f.orig_len != f.bytes.size()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: frame %u was truncated by the capture (%u of %u bytes)",
            c.input_pcap, number, f.bytes.size(), f.orig_len));
      }
      frames.push_back({number, f.time_ns,
                        std::vector<uint8_t>(f.bytes.begin(), f.bytes.end())});
    }
    RETURN_IF_ERROR(err);
    if (!c.frames.empty() && c.frames.back() > total) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: frame %u listed but the capture has %u frames",
                          c.input_pcap, c.frames.back(), total));
    }
  }

  nic::RnicConfig cfg;
  cfg.mac = c.mac;
  cfg.gid = c.ip;
  std::optional<nic::Mtu> mtu = nic::MtuFromBytes(c.active_mtu);
  if (mtu) cfg.port.active_mtu = *mtu;
  auto runner = std::make_unique<Runner>(c, cfg);
  absl::Status s = runner->Setup();
  if (!s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(c.path, ": setting up the RNIC: ", s.message()));
  }
  return runner->Run(frames, total, out_pcap);
}

}  // namespace rocemu::replay
