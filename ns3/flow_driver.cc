#include "ns3/flow_driver.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/gid_table.h"
#include "ns3/ns3_clock.h"
#include "ns3/simulator.h"

namespace rocemu::ns3sim {

namespace {

// UD receives carry the 40-byte GRH before the payload.
constexpr uint32_t kGrhBytes = 40;
constexpr uint32_t kUdQkey = 0x11111111;
// wr_id: flow index << 1 | 1 for receives.
constexpr uint64_t kRecvBit = 1;

uint8_t PatternByte(uint32_t host, size_t i) {
  return static_cast<uint8_t>(host * 151 + i * 13 + (i >> 11));
}

}  // namespace

const char* FlowOpName(FlowOp op) {
  switch (op) {
    case FlowOp::kWrite:
      return "write";
    case FlowOp::kSend:
      return "send";
    case FlowOp::kRead:
      return "read";
    case FlowOp::kUdSend:
      return "ud_send";
  }
  return "?";
}

std::optional<FlowOp> FlowOpFromName(absl::string_view name) {
  for (FlowOp op :
       {FlowOp::kWrite, FlowOp::kSend, FlowOp::kRead, FlowOp::kUdSend}) {
    if (name == FlowOpName(op)) return op;
  }
  return std::nullopt;
}

struct FlowDriver::Host final : HostListener {
  FlowDriver* driver = nullptr;
  uint32_t index = 0;
  ns3::Ptr<RnicHost> node;
  nic::PdHandle pd = 0;
  nic::CqHandle cq = 0;
  uint32_t key = 0;
  std::vector<uint8_t> memory;  // per_host_memory only
  uint32_t ud_qpn = 0;
  absl::flat_hash_map<uint32_t, nic::AhHandle> ahs;  // UD: by destination
  uint32_t qps = 0;
  void OnHostEvent(nic::TimeNs now) override {
    driver->OnHostEvent(index, now);
  }
};

struct FlowDriver::Flow {
  uint32_t requester = 0;  // host that posts the work requests
  uint32_t responder = 0;
  uint32_t req_qpn = 0;
  uint32_t resp_qpn = 0;
  uint64_t posted = 0;     // payload posted
  uint64_t completed = 0;  // payload completed (UD: received)
  uint64_t msgs_completed = 0;
  uint64_t recvs_posted = 0;  // SEND: receives posted at the responder
  uint32_t in_flight = 0;
  bool active = false;
};

FlowDriver::FlowDriver(const FlowDriverConfig& config,
                       std::vector<ns3::Ptr<RnicHost>> hosts)
    : config_(config) {
  for (uint32_t i = 0; i < hosts.size(); ++i) {
    auto h = std::make_unique<Host>();
    h->driver = this;
    h->index = i;
    h->node = std::move(hosts[i]);
    h->node->set_listener(h.get());
    hosts_.push_back(std::move(h));
  }
}

FlowDriver::~FlowDriver() {
  for (auto& h : hosts_) h->node->set_listener(nullptr);
}

uint8_t* FlowDriver::Memory(uint32_t host) {
  return config_.per_host_memory ? hosts_[host]->memory.data()
                                 : shared_arena_.data();
}

absl::Status FlowDriver::Setup(bool ud) {
  const uint32_t mtu = nic::PathMtuBytes(config_.mtu);
  if (config_.message_bytes == 0 || config_.outstanding == 0) {
    return absl::InvalidArgumentError("message_bytes and outstanding > 0");
  }
  // Each host's region: one inbound slot per peer and its own outbound
  // slot (per_host_memory), or one slot shared by everyone.
  const size_t slot = std::max<size_t>(config_.message_bytes, kGrhBytes + mtu);
  const size_t bytes =
      config_.per_host_memory ? slot * (hosts_.size() + 1) : slot;
  if (!config_.per_host_memory) shared_arena_.assign(bytes, 0);
  for (auto& hp : hosts_) {
    Host& h = *hp;
    nic::Rnic& r = h.node->rnic();
    absl::StatusOr<nic::PdHandle> pd = r.AllocPd();
    if (!pd.ok()) return pd.status();
    h.pd = *pd;
    absl::StatusOr<nic::CqHandle> cq = r.CreateCq(config_.cq_depth);
    if (!cq.ok()) return cq.status();
    h.cq = *cq;
    if (config_.per_host_memory) {
      h.memory.resize(bytes);
      for (size_t i = 0; i < slot; ++i) {
        h.memory[hosts_.size() * slot + i] = PatternByte(h.index, i);
      }
    }
    absl::StatusOr<uint32_t> key =
        r.RegMr(h.pd, Memory(h.index), bytes,
                nic::access::kLocalWrite | nic::access::kRemoteWrite |
                    nic::access::kRemoteRead);
    if (!key.ok()) return key.status();
    h.key = *key;
    if (!ud) continue;
    nic::QpInitAttr init;
    init.qp_type = nic::QpType::kUd;
    init.send_cq = h.cq;
    init.recv_cq = h.cq;
    init.cap = {config_.outstanding, config_.ud_recv_depth, 1, 1, 0};
    absl::StatusOr<uint32_t> qpn = r.CreateQp(h.pd, init);
    if (!qpn.ok()) return qpn.status();
    h.ud_qpn = *qpn;
    using namespace nic::qp_attr;  // NOLINT
    nic::QpAttr a;
    a.qp_state = nic::QpState::kInit;
    a.port_num = 1;
    a.qkey = kUdQkey;
    absl::Status st =
        r.ModifyQp(h.ud_qpn, a, kState | kPkeyIndex | kPort | kQkey);
    a.qp_state = nic::QpState::kRtr;
    if (st.ok()) st = r.ModifyQp(h.ud_qpn, a, kState);
    a.qp_state = nic::QpState::kRts;
    a.sq_psn = 0;
    if (st.ok()) st = r.ModifyQp(h.ud_qpn, a, kState | kSqPsn);
    if (!st.ok()) return st;
    for (uint32_t i = 0; i < config_.ud_recv_depth; ++i) {
      st = PostRecv(h, h.ud_qpn, kRecvBit | (uint64_t{0xFFFFFFFF} << 1),
                    kGrhBytes + mtu);
      if (!st.ok()) return st;
    }
    ++h.qps;
  }
  return absl::OkStatus();
}

absl::Status FlowDriver::OpenIdleConnections(uint32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint32_t hosts = static_cast<uint32_t>(hosts_.size());
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng() % hosts);
    uint32_t b = static_cast<uint32_t>(rng() % (hosts - 1));
    if (b >= a) ++b;
    Host& ha = *hosts_[a];
    Host& hb = *hosts_[b];
    absl::StatusOr<uint32_t> qa = CreateRcQp(ha, config_.outstanding, 1);
    if (!qa.ok()) return qa.status();
    absl::StatusOr<uint32_t> qb = CreateRcQp(hb, 1, 1);
    if (!qb.ok()) return qb.status();
    absl::Status st = Connect(ha, *qa, hb, *qb);
    if (st.ok()) st = Connect(hb, *qb, ha, *qa);
    if (!st.ok()) return st;
    ++ha.qps;
    ++hb.qps;
    fabric_qps_ += 2;
    max_host_qps_ = std::max({max_host_qps_, ha.qps, hb.qps});
    max_fabric_qps_ = std::max(max_fabric_qps_, fabric_qps_);
  }
  return absl::OkStatus();
}

absl::Status FlowDriver::Schedule(std::vector<FlowSpec> flows,
                                  FlowDoneFn on_done) {
  for (const FlowSpec& f : flows) {
    if (f.src >= hosts_.size() || f.dst >= hosts_.size() || f.src == f.dst) {
      return absl::InvalidArgumentError(
          absl::StrFormat("flow %d -> %d: hosts must differ and be below %d",
                          f.src, f.dst, hosts_.size()));
    }
    if (f.op == FlowOp::kUdSend && hosts_[f.src]->ud_qpn == 0) {
      return absl::FailedPreconditionError("UD flows need Setup(ud=true)");
    }
  }
  specs_ = std::move(flows);
  flows_.assign(specs_.size(), Flow{});
  results_.assign(specs_.size(), FlowResult{});
  on_done_ = std::move(on_done);
  const nic::TimeNs now = NowNs();
  for (uint32_t i = 0; i < specs_.size(); ++i) {
    const FlowSpec& f = specs_[i];
    const uint32_t requester = f.op == FlowOp::kRead ? f.dst : f.src;
    ns3::Simulator::ScheduleWithContext(
        hosts_[requester]->node->GetId(),
        NsToTime(f.start_ns > now ? f.start_ns - now : 0), &FlowDriver::Start,
        this, i);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> FlowDriver::CreateRcQp(Host& h, uint32_t send_wr,
                                                uint32_t recv_wr) {
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kRc;
  init.send_cq = h.cq;
  init.recv_cq = h.cq;
  init.cap = {send_wr, recv_wr, 1, 1, 0};
  return h.node->rnic().CreateQp(h.pd, init);
}

absl::Status FlowDriver::Connect(Host& self, uint32_t qpn, const Host& peer,
                                 uint32_t peer_qpn) {
  using namespace nic::qp_attr;  // NOLINT
  nic::Rnic& r = self.node->rnic();
  const uint32_t rd = std::min<uint32_t>(config_.outstanding, 128);
  nic::QpAttr a;
  a.qp_state = nic::QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = nic::access::kRemoteWrite | nic::access::kRemoteRead;
  absl::Status st =
      r.ModifyQp(qpn, a, kState | kPkeyIndex | kPort | kAccessFlags);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRtr;
  a.path_mtu = config_.mtu;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = rd;
  a.min_rnr_timer = 1;
  a.ah_attr.dgid = peer.node->rnic().config().gid;
  a.ah_attr.dmac = peer.node->rnic().config().mac;
  st = r.ModifyQp(qpn, a,
                  kState | kAv | kPathMtu | kDestQpn | kRqPsn |
                      kMaxDestRdAtomic | kMinRnrTimer);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRts;
  a.sq_psn = 0;
  a.timeout = config_.timeout;
  a.retry_cnt = config_.retry_cnt;
  a.rnr_retry = config_.rnr_retry;
  a.max_rd_atomic = rd;
  return r.ModifyQp(
      qpn, a,
      kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic);
}

absl::Status FlowDriver::PostRecv(Host& h, uint32_t qpn, uint64_t wr_id,
                                  uint32_t len) {
  nic::RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = {
      nic::Sge{reinterpret_cast<uint64_t>(Memory(h.index)), len, h.key}};
  return h.node->rnic().PostRecv(qpn, wr);
}

void FlowDriver::Start(uint32_t i) {
  const FlowSpec& s = specs_[i];
  Flow& f = flows_[i];
  ++started_;
  f.requester = s.op == FlowOp::kRead ? s.dst : s.src;
  f.responder = s.op == FlowOp::kRead ? s.src : s.dst;
  f.active = true;
  const nic::TimeNs now = NowNs();
  if (s.stop_ns == 0 && s.bytes == 0) {
    Finish(i, now, false);
    return;
  }
  Host& req = *hosts_[f.requester];
  Host& resp = *hosts_[f.responder];
  if (s.op == FlowOp::kUdSend) {
    f.req_qpn = req.ud_qpn;
    f.resp_qpn = resp.ud_qpn;
    Pump(i, now);
    return;
  }
  const uint32_t depth = config_.outstanding;
  absl::StatusOr<uint32_t> a = CreateRcQp(req, depth, 1);
  absl::StatusOr<uint32_t> b =
      CreateRcQp(resp, 1, s.op == FlowOp::kSend ? depth : 1);
  if (!a.ok() || !b.ok()) {
    Finish(i, now, true);
    return;
  }
  f.req_qpn = *a;
  f.resp_qpn = *b;
  req.qps++;
  resp.qps++;
  fabric_qps_ += 2;
  max_host_qps_ = std::max({max_host_qps_, req.qps, resp.qps});
  max_fabric_qps_ = std::max(max_fabric_qps_, fabric_qps_);
  absl::Status st = Connect(req, f.req_qpn, resp, f.resp_qpn);
  if (st.ok()) st = Connect(resp, f.resp_qpn, req, f.req_qpn);
  if (st.ok() && s.op == FlowOp::kSend) {
    const uint64_t msgs =
        s.stop_ns != 0
            ? ~uint64_t{0}
            : (s.bytes + config_.message_bytes - 1) / config_.message_bytes;
    const size_t slot = config_.message_bytes;
    const uint64_t offset =
        config_.per_host_memory ? uint64_t{f.requester} * slot : 0;
    while (st.ok() && f.recvs_posted < std::min<uint64_t>(depth, msgs)) {
      nic::RecvWr wr;
      wr.wr_id = uint64_t{i} << 1 | kRecvBit;
      wr.sg_list = {
          nic::Sge{reinterpret_cast<uint64_t>(Memory(resp.index) + offset),
                   config_.message_bytes, resp.key}};
      st = resp.node->rnic().PostRecv(f.resp_qpn, wr);
      ++f.recvs_posted;
    }
  }
  if (!st.ok()) {
    Finish(i, now, true);
    return;
  }
  Pump(i, now);
}

void FlowDriver::Pump(uint32_t i, nic::TimeNs now) {
  const FlowSpec& s = specs_[i];
  Flow& f = flows_[i];
  Host& req = *hosts_[f.requester];
  Host& resp = *hosts_[f.responder];
  const bool ud = s.op == FlowOp::kUdSend;
  const uint32_t msg =
      ud ? nic::PathMtuBytes(config_.mtu) : config_.message_bytes;
  const size_t slot = std::max<size_t>(
      config_.message_bytes, kGrhBytes + nic::PathMtuBytes(config_.mtu));
  // Data goes from src's outbound slot to dst's inbound slot for src.
  const uint64_t out_off =
      config_.per_host_memory ? uint64_t{hosts_.size()} * slot : 0;
  const uint64_t in_off = config_.per_host_memory ? uint64_t{s.src} * slot : 0;
  bool posted = false;
  while (f.in_flight < config_.outstanding &&
         (s.stop_ns != 0 ? now < s.stop_ns : f.posted < s.bytes)) {
    const uint32_t len = static_cast<uint32_t>(
        s.stop_ns != 0 ? msg : std::min<uint64_t>(msg, s.bytes - f.posted));
    nic::SendWr wr;
    wr.wr_id = uint64_t{i} << 1;
    wr.send_flags = nic::send_flags::kSignaled;
    switch (s.op) {
      case FlowOp::kWrite:
        wr.opcode = nic::WrOpcode::kRdmaWrite;
        wr.sg_list = {
            nic::Sge{reinterpret_cast<uint64_t>(Memory(req.index) + out_off),
                     len, req.key}};
        wr.rdma.remote_addr =
            reinterpret_cast<uint64_t>(Memory(resp.index) + in_off);
        wr.rdma.rkey = resp.key;
        break;
      case FlowOp::kSend:
        wr.opcode = nic::WrOpcode::kSend;
        wr.sg_list = {
            nic::Sge{reinterpret_cast<uint64_t>(Memory(req.index) + out_off),
                     len, req.key}};
        break;
      case FlowOp::kRead:
        // The requester is dst: it reads src's outbound slot into its own
        // inbound slot for src.
        wr.opcode = nic::WrOpcode::kRdmaRead;
        wr.sg_list = {
            nic::Sge{reinterpret_cast<uint64_t>(Memory(req.index) + in_off),
                     len, req.key}};
        wr.rdma.remote_addr =
            reinterpret_cast<uint64_t>(Memory(resp.index) + out_off);
        wr.rdma.rkey = resp.key;
        break;
      case FlowOp::kUdSend: {
        auto it = req.ahs.find(resp.index);
        if (it == req.ahs.end()) {
          nic::AhAttr ah;
          ah.dgid = resp.node->rnic().config().gid;
          absl::StatusOr<nic::AhHandle> h = req.node->rnic().CreateAh(
              req.pd, ah, resp.node->rnic().config().mac);
          if (!h.ok()) {
            Finish(i, now, true);
            return;
          }
          it = req.ahs.emplace(resp.index, *h).first;
        }
        wr.opcode = nic::WrOpcode::kSendWithImm;
        wr.imm_data = i;
        wr.ud = {it->second, resp.ud_qpn, kUdQkey};
        wr.sg_list = {
            nic::Sge{reinterpret_cast<uint64_t>(Memory(req.index) + out_off),
                     len, req.key}};
        break;
      }
    }
    if (!req.node->rnic().PostSend(f.req_qpn, wr).ok()) {
      Finish(i, now, true);
      return;
    }
    f.posted += len;
    ++f.in_flight;
    posted = true;
  }
  if (posted) req.node->Kick();
}

void FlowDriver::OnHostEvent(uint32_t host, nic::TimeNs now) {
  Host& h = *hosts_[host];
  nic::WorkCompletion wc[32];
  size_t n;
  while ((n = h.node->rnic().PollCq(h.cq, wc)) > 0) {
    for (size_t k = 0; k < n; ++k) {
      const nic::WorkCompletion& c = wc[k];
      const bool recv = (c.wr_id & kRecvBit) != 0;
      const uint64_t index = c.wr_id >> 1;
      if (recv && c.qp_num == h.ud_qpn) {
        // A UD datagram: the flow is in the immediate data.
        if (c.status == nic::WcStatus::kSuccess ||
            c.status != nic::WcStatus::kWrFlushErr) {
          (void)PostRecv(h, h.ud_qpn, c.wr_id,
                         kGrhBytes + nic::PathMtuBytes(config_.mtu));
        }
        if (c.status != nic::WcStatus::kSuccess || c.imm_data >= flows_.size())
          continue;
        Flow& f = flows_[c.imm_data];
        if (!f.active) continue;
        f.completed += c.byte_len > kGrhBytes ? c.byte_len - kGrhBytes : 0;
        if (f.completed >= specs_[c.imm_data].bytes) {
          Finish(c.imm_data, now, false);
        }
        continue;
      }
      if (index >= flows_.size()) continue;
      Flow& f = flows_[index];
      if (!f.active) continue;
      const FlowSpec& s = specs_[index];
      const uint32_t i = static_cast<uint32_t>(index);
      if (c.status != nic::WcStatus::kSuccess) {
        Finish(i, now, true);
        continue;
      }
      if (recv) {
        // SEND: keep a receive posted for every message still to come.
        const uint64_t msgs =
            s.stop_ns != 0
                ? ~uint64_t{0}
                : (s.bytes + config_.message_bytes - 1) / config_.message_bytes;
        if (f.recvs_posted < msgs) {
          const size_t slot = config_.message_bytes;
          const uint64_t offset =
              config_.per_host_memory ? uint64_t{s.src} * slot : 0;
          nic::RecvWr wr;
          wr.wr_id = c.wr_id;
          wr.sg_list = {
              nic::Sge{reinterpret_cast<uint64_t>(Memory(host) + offset),
                       config_.message_bytes, h.key}};
          if (!h.node->rnic().PostRecv(f.resp_qpn, wr).ok()) {
            Finish(i, now, true);
            continue;
          }
          ++f.recvs_posted;
        }
        continue;
      }
      --f.in_flight;
      if (s.op == FlowOp::kUdSend) {
        Pump(i, now);  // UD completes at the receiver
        continue;
      }
      const uint32_t msg = config_.message_bytes;
      const uint64_t done = f.msgs_completed * msg;
      f.completed +=
          s.stop_ns != 0
              ? msg
              : std::min<uint64_t>(msg, s.bytes - std::min(done, s.bytes));
      ++f.msgs_completed;
      const bool more = s.stop_ns != 0 ? now < s.stop_ns : f.posted < s.bytes;
      if (!more && f.in_flight == 0) {
        Finish(i, now, false);
      } else {
        Pump(i, now);
      }
    }
  }
}

void FlowDriver::Finish(uint32_t i, nic::TimeNs now, bool failed) {
  Flow& f = flows_[i];
  if (!f.active) return;
  f.active = false;
  FlowResult& r = results_[i];
  r.done = !failed;
  r.failed = failed;
  r.finish_ns = now;
  r.bytes_done = f.completed;
  if (specs_[i].op != FlowOp::kUdSend) {
    for (auto [host, qpn] : {std::pair{f.requester, f.req_qpn},
                             std::pair{f.responder, f.resp_qpn}}) {
      if (qpn == 0) continue;
      if (hosts_[host]->node->rnic().DestroyQp(qpn).ok()) {
        --hosts_[host]->qps;
        --fabric_qps_;
      }
    }
  }
  ++finished_;
  if (on_done_) on_done_(i);
}

uint64_t FlowDriver::progress(uint32_t flow) const {
  return flows_[flow].completed;
}

uint32_t FlowDriver::requester_qpn(uint32_t flow) const {
  return flows_[flow].req_qpn;
}

bool FlowDriver::CheckPayloads() const {
  if (!config_.per_host_memory) return false;
  const size_t slot = std::max<size_t>(
      config_.message_bytes, kGrhBytes + nic::PathMtuBytes(config_.mtu));
  for (uint32_t i = 0; i < specs_.size(); ++i) {
    const FlowSpec& s = specs_[i];
    if (!results_[i].done || s.op == FlowOp::kUdSend) continue;
    const uint64_t len =
        s.stop_ns != 0 ? config_.message_bytes
                       : std::min<uint64_t>(s.bytes, config_.message_bytes);
    const uint8_t* in = hosts_[s.dst]->memory.data() + uint64_t{s.src} * slot;
    for (uint64_t b = 0; b < len; ++b) {
      if (in[b] != PatternByte(s.src, b)) return false;
    }
  }
  return true;
}

}  // namespace rocemu::ns3sim
