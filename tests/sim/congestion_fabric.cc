#include "tests/sim/congestion_fabric.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "nic/rnic.h"
#include "pfc_ecn/pfc_transmitter.h"
#include "tests/simnet/network.h"
#include "tests/simnet/switch.h"
#include "tests/simnet/switch_hooks.h"

namespace rocemu::sim {
namespace {

using nic::TimeNs;

constexpr uint8_t kRocePrio = 3;

// pfc_ecn's RED on the switch's dequeue hook. The switch passes the depth
// with the departing frame; RED is evaluated without it (docs/congestion.md).
class RedEcnMarker final : public simnet::EcnMarker {
 public:
  RedEcnMarker(const pfc_ecn::RedProfile& profile, uint64_t seed)
      : marker_(profile, seed) {}
  bool ShouldMark(const simnet::DequeueContext& ctx) override {
    return marker_.ShouldMark(ctx.queue_bytes - ctx.frame_len);
  }

 private:
  pfc_ecn::RedMarker marker_;
};

// pfc_ecn's PfcTransmitter (one per ingress port) on the switch's ingress
// hook: the occupancy goes in, XOFF/XON decisions come out. Refreshes are
// the switch's own (it re-sends the XOFF at half the pause).
class PfcTransmitterPolicy final : public simnet::PfcPolicy {
 public:
  PfcTransmitterPolicy(int ports, const pfc_ecn::PfcTransmitterConfig& c) {
    for (int i = 0; i < ports; ++i) tx_.emplace_back(c);
  }
  simnet::PfcAction OnIngressChange(
      const simnet::IngressContext& ctx) override {
    pfc_ecn::PfcTransmitter& t = tx_[ctx.port];
    t.SetOccupancy(ctx.priority, ctx.ingress_bytes);
    const auto req = t.Poll(ctx.now);
    if (!req.has_value() || ((req->enable_vector >> ctx.priority) & 1) == 0) {
      return simnet::PfcAction::kNone;
    }
    const bool xoff = req->quanta[ctx.priority] != 0;
    if (xoff && !ctx.xoff_sent) return simnet::PfcAction::kXoff;
    if (!xoff && ctx.xoff_sent) return simnet::PfcAction::kXon;
    return simnet::PfcAction::kNone;
  }

 private:
  std::vector<pfc_ecn::PfcTransmitter> tx_;
};

struct Host {
  explicit Host(const nic::RnicConfig& c) : nic(c) {}
  nic::Rnic nic;
  nic::PdHandle pd = 0;
  nic::CqHandle cq = 0;
  std::vector<uint32_t> qpns;
  std::vector<uint8_t> buf;
  uint32_t key = 0;
  simnet::NodeId node = 0;
};

nic::RnicConfig HostConfig(uint8_t id, const FabricOptions& o) {
  nic::RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0, id};
  c.gid = nic::GidFromIpv4(10, 0, 0, id);
  c.port.active_mtu = nic::Mtu::k4096;
  const uint32_t mbps = static_cast<uint32_t>(o.link_rate_bps / 1'000'000);
  c.congestion.dcqcn = o.mode == pfc_ecn::DcqcnMode::kPaper
                           ? pfc_ecn::DcqcnParams::Paper(mbps)
                           : pfc_ecn::DcqcnParams::Nvidia(mbps);
  c.congestion.dcqcn.enabled = o.dcqcn;
  c.congestion.pfc_rx.port_rate_bps = o.link_rate_bps;
  return c;
}

absl::Status Setup(Host& h, size_t buf_bytes, int nqp, uint32_t max_wr) {
  absl::StatusOr<nic::PdHandle> pd = h.nic.AllocPd();
  if (!pd.ok()) return pd.status();
  h.pd = *pd;
  absl::StatusOr<nic::CqHandle> cq = h.nic.CreateCq(4096);
  if (!cq.ok()) return cq.status();
  h.cq = *cq;
  h.buf.assign(buf_bytes, 0);
  absl::StatusOr<uint32_t> key =
      h.nic.RegMr(h.pd, h.buf.data(), h.buf.size(),
                  nic::access::kLocalWrite | nic::access::kRemoteWrite);
  if (!key.ok()) return key.status();
  h.key = *key;
  for (int i = 0; i < nqp; ++i) {
    nic::QpInitAttr init;
    init.qp_type = nic::QpType::kRc;
    init.send_cq = h.cq;
    init.recv_cq = h.cq;
    init.cap = {max_wr, 16, 1, 1, 0};
    absl::StatusOr<uint32_t> qpn = h.nic.CreateQp(h.pd, init);
    if (!qpn.ok()) return qpn.status();
    h.qpns.push_back(*qpn);
  }
  return absl::OkStatus();
}

// RESET -> INIT -> RTR -> RTS towards the peer's QP.
absl::Status ConnectQp(const FabricOptions& o, Host& self, uint32_t qpn,
                       const Host& peer, uint32_t peer_qpn) {
  using namespace nic::qp_attr;  // NOLINT
  nic::QpAttr a;
  a.qp_state = nic::QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = nic::access::kRemoteWrite;
  absl::Status st =
      self.nic.ModifyQp(qpn, a, kState | kPkeyIndex | kPort | kAccessFlags);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRtr;
  a.path_mtu = o.mtu;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.dgid = peer.nic.config().gid;
  a.ah_attr.dmac = peer.nic.config().mac;
  st = self.nic.ModifyQp(qpn, a,
                         kState | kAv | kPathMtu | kDestQpn | kRqPsn |
                             kMaxDestRdAtomic | kMinRnrTimer);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRts;
  a.sq_psn = 0;
  a.timeout = o.qp_timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return self.nic.ModifyQp(
      qpn, a,
      kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic);
}

uint8_t Pattern(int flow, size_t i) {
  return static_cast<uint8_t>(flow * 37 + i * 13 + (i >> 9));
}

}  // namespace

absl::StatusOr<FabricResult> RunFabric(const FabricOptions& o) {
  const int n = o.senders;
  if (n < 1 || n > 32) return absl::InvalidArgumentError("1..32 senders");
  const bool incast = o.bytes_per_sender != 0;
  // Each flow owns a region of the receiver's buffer; a sender's buffer is
  // one region, written round-robin in message-size slots.
  const size_t region =
      incast ? o.bytes_per_sender : size_t{o.message_bytes} * o.outstanding;
  if (region % o.message_bytes != 0) {
    return absl::InvalidArgumentError("bytes_per_sender % message_bytes");
  }
  const uint64_t slots = region / o.message_bytes;

  auto net = std::make_unique<simnet::Network>(
      simnet::NetworkConfig{.seed = o.seed, .event_capacity = 1 << 16});
  simnet::SwitchConfig sc;
  sc.num_ports = static_cast<uint16_t>(n + 1);
  sc.port_rate_bps = o.link_rate_bps;
  sc.queue_capacity_bytes = o.queue_capacity_bytes;
  sc.scheduling = simnet::Scheduling::kStrict;
  sc.trust = simnet::PriorityTrust::kDscp;
  sc.pfc_priorities = 1u << kRocePrio;
  simnet::Switch sw(sc);
  if (o.ecn_marking) {
    sw.SetEcnMarker(std::make_unique<RedEcnMarker>(o.red, o.seed));
  }
  if (o.pfc) {
    pfc_ecn::PfcTransmitterConfig pc;
    pc.port_rate_bps = o.link_rate_bps;
    pc.pfc_enable = 1u << kRocePrio;
    pc.thresholds[kRocePrio] = {o.pfc_xoff_bytes, o.pfc_xon_bytes};
    absl::Status st = pc.Validate();
    if (!st.ok()) return st;
    sw.SetPfcPolicy(std::make_unique<PfcTransmitterPolicy>(n + 1, pc));
  }

  Host rx(HostConfig(1, o));
  std::vector<std::unique_ptr<Host>> tx;
  absl::Status st = Setup(rx, region * n, n, 16);
  if (!st.ok()) return st;
  for (int i = 0; i < n; ++i) {
    tx.push_back(
        std::make_unique<Host>(HostConfig(static_cast<uint8_t>(10 + i), o)));
    st = Setup(*tx[i], region, 1, 2 * o.outstanding);
    if (!st.ok()) return st;
    for (size_t b = 0; b < region; ++b) tx[i]->buf[b] = Pattern(i, b);
  }
  for (int i = 0; i < n; ++i) {
    st = ConnectQp(o, *tx[i], tx[i]->qpns[0], rx, rx.qpns[i]);
    if (st.ok()) st = ConnectQp(o, rx, rx.qpns[i], *tx[i], tx[i]->qpns[0]);
    if (!st.ok()) return st;
  }

  simnet::LinkConfig link{.propagation_delay_ns = o.propagation_delay_ns,
                          .rate_bps = o.link_rate_bps};
  const simnet::NodeId swn = net->AddNode(&sw, sc.num_ports, "switch");
  rx.node = net->AddNode(&rx.nic, 1, "rx");
  if (!net->Connect(rx.node, 0, swn, 0, link).ok() ||
      !sw.AddRoute(rx.nic.config().mac, 0).ok()) {
    return absl::InternalError("wiring the receiver");
  }
  for (int i = 0; i < n; ++i) {
    tx[i]->node = net->AddNode(&tx[i]->nic, 1, absl::StrFormat("tx%d", i));
    const uint16_t port = static_cast<uint16_t>(i + 1);
    if (!net->Connect(tx[i]->node, 0, swn, port, link).ok() ||
        !sw.AddRoute(tx[i]->nic.config().mac, port).ok()) {
      return absl::InternalError("wiring a sender");
    }
  }

  // Workload: keep `outstanding` WRITEs posted per sender.
  std::vector<uint64_t> posted(n, 0), completed(n, 0);
  const uint64_t total_msgs = incast ? slots : ~uint64_t{0};
  bool failed = false;
  bool stop_posting = false;
  auto pump = [&](TimeNs now) {
    if (!incast && now >= o.duration_ns) stop_posting = true;
    for (int i = 0; i < n; ++i) {
      Host& h = *tx[i];
      nic::WorkCompletion wc[32];
      size_t k;
      while ((k = h.nic.PollCq(h.cq, wc)) > 0) {
        for (size_t j = 0; j < k; ++j) {
          if (wc[j].status != nic::WcStatus::kSuccess) failed = true;
          ++completed[i];
        }
      }
      bool any = false;
      while (!stop_posting && posted[i] < total_msgs &&
             posted[i] - completed[i] < o.outstanding) {
        const uint64_t slot = posted[i] % slots;
        nic::SendWr wr;
        wr.wr_id = posted[i];
        wr.opcode = nic::WrOpcode::kRdmaWrite;
        wr.send_flags = nic::send_flags::kSignaled;
        wr.sg_list = {nic::Sge{
            reinterpret_cast<uint64_t>(h.buf.data() + slot * o.message_bytes),
            o.message_bytes, h.key}};
        wr.rdma.remote_addr = reinterpret_cast<uint64_t>(
            rx.buf.data() + i * region + slot * o.message_bytes);
        wr.rdma.rkey = rx.key;
        if (!h.nic.PostSend(h.qpns[0], wr).ok()) {
          failed = true;
          break;
        }
        ++posted[i];
        any = true;
      }
      if (any) net->Kick(h.node);
    }
  };
  pump(0);
  net->AddSampler(5'000, pump, 5'000);

  FabricResult r;
  std::vector<uint64_t> last_bytes(n, 0);
  auto flow_bytes = [&](int i) {
    return rx.nic.GetQp(rx.qpns[i])->counters().rcvd_bytes;
  };
  auto switch_pauses = [&] {
    uint64_t p = 0;
    for (int i = 0; i < n; ++i) {
      p += sw.counters(static_cast<uint16_t>(i + 1)).tx_prio_pause[kRocePrio];
    }
    return p;
  };
  auto switch_sum = [&](auto field) {
    uint64_t s = 0;
    for (int p = 0; p < sc.num_ports; ++p) {
      s += (sw.counters(static_cast<uint16_t>(p)).*field)[kRocePrio];
    }
    return s;
  };
  net->AddSampler(
      o.sample_ns,
      [&](TimeNs now) {
        FabricSample s;
        s.t = now;
        for (int i = 0; i < n; ++i) {
          const uint64_t b = flow_bytes(i);
          s.rate_gbps.push_back(static_cast<double>(b - last_bytes[i]) * 8 /
                                static_cast<double>(o.sample_ns));
          last_bytes[i] = b;
          const nic::Qp* q = tx[i]->nic.GetQp(tx[i]->qpns[0]);
          s.rp_rate_gbps.push_back(
              q->cc_.rp.active() ? q->cc_.rp.current_rate_mbps() / 1000.0
                                 : static_cast<double>(o.link_rate_bps) / 1e9);
        }
        s.queue_bytes = sw.queue_bytes(0, kRocePrio);
        s.pauses = switch_pauses();
        s.marks = switch_sum(&simnet::SwitchPortCounters::ecn_marked);
        s.drops = switch_sum(&simnet::SwitchPortCounters::tail_drop);
        r.samples.push_back(std::move(s));
      },
      o.sample_ns);

  auto all_done = [&] {
    if (failed) return true;
    if (!incast && !stop_posting) return false;
    for (int i = 0; i < n; ++i) {
      if (completed[i] < posted[i]) return false;
      if (incast && completed[i] < total_msgs) return false;
    }
    return true;
  };
  // Long flows drain for at most 20 ms after `duration`; incast has
  // `duration` as its deadline.
  const TimeNs deadline = incast ? o.duration_ns : o.duration_ns + 20'000'000;
  r.completed = net->RunUntil(all_done, deadline) && !failed;
  r.finish_ns = net->now();
  // Collect the completions of the last instant.
  pump(net->now());
  r.events = net->events_processed();

  r.byte_exact = r.completed;
  for (int i = 0; i < n && r.byte_exact; ++i) {
    // Every slot was written at least once (incast: exactly once).
    if (posted[i] < slots || std::memcmp(rx.buf.data() + i * region,
                                         tx[i]->buf.data(), region) != 0) {
      r.byte_exact = false;
    }
  }
  for (int i = 0; i < n; ++i) {
    r.flow_bytes.push_back(flow_bytes(i));
    const nic::DeviceCounters c = tx[i]->nic.QueryCounters();
    r.retransmissions += c.completer_retry_err;
    r.cnps_handled += c.rp_cnp_handled;
    r.cnps_ignored += c.rp_cnp_ignored;
    r.rx_pauses += tx[i]
                       ->nic.congestion()
                       .PortCounters(net->now())
                       .rx_prio_pause[kRocePrio];
  }
  r.cnps = rx.nic.QueryCounters().np_cnp_sent;
  r.drops = switch_sum(&simnet::SwitchPortCounters::tail_drop);
  r.marks = switch_sum(&simnet::SwitchPortCounters::ecn_marked);
  r.pauses = switch_pauses();
  return r;
}

double JainIndex(const FabricResult& r, TimeNs from, TimeNs to) {
  std::vector<double> x;
  for (const FabricSample& s : r.samples) {
    if (s.t < from || s.t >= to) continue;
    if (x.empty()) x.assign(s.rate_gbps.size(), 0.0);
    for (size_t i = 0; i < x.size(); ++i) x[i] += s.rate_gbps[i];
  }
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq == 0 ? 0.0 : sum * sum / (static_cast<double>(x.size()) * sq);
}

double MeanQueueBytes(const FabricResult& r, TimeNs from, TimeNs to) {
  double sum = 0;
  int k = 0;
  for (const FabricSample& s : r.samples) {
    if (s.t < from || s.t >= to) continue;
    sum += static_cast<double>(s.queue_bytes);
    ++k;
  }
  return k == 0 ? 0.0 : sum / k;
}

uint64_t PausesBetween(const FabricResult& r, TimeNs from, TimeNs to) {
  uint64_t first = 0, last = 0;
  bool any = false;
  for (const FabricSample& s : r.samples) {
    if (s.t < from) first = s.pauses;
    if (s.t >= from && s.t < to) {
      last = s.pauses;
      any = true;
    }
  }
  return any ? last - first : 0;
}

}  // namespace rocemu::sim
