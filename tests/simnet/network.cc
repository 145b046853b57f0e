#include "tests/simnet/network.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/simnet/ether.h"

namespace rocemu::simnet {

namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

uint32_t DirIndex(LinkId link, Dir dir) {
  return link * 2 + static_cast<uint32_t>(dir);
}

}  // namespace

Network::Network(const NetworkConfig& config)
    : config_(config), pool_(config.frame_capacity) {
  if (config_.tx_queue_frames == 0) config_.tx_queue_frames = 1;
  if (config_.rx_burst == 0) config_.rx_burst = 1;
  heap_.reserve(config_.event_capacity);
  tx_scratch_.resize(config_.tx_queue_frames);
  tx_scratch_ids_.resize(config_.tx_queue_frames);
  rx_scratch_.resize(config_.rx_burst);
  rx_scratch_ids_.resize(config_.rx_burst);
}

Network::~Network() = default;

NodeId Network::AddNode(nic::FrameEndpoint* endpoint, uint16_t num_ports,
                        std::string name) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(Node{endpoint, static_cast<uint32_t>(ports_.size()),
                        num_ports, nic::kNever, std::move(name)});
  for (uint16_t p = 0; p < num_ports; ++p) {
    ports_.push_back(Port{id, p});
  }
  Kick(id);
  return id;
}

absl::StatusOr<LinkId> Network::Connect(NodeId a, uint16_t port_a, NodeId b,
                                        uint16_t port_b,
                                        const LinkConfig& config) {
  return Connect(a, port_a, b, port_b, config, config);
}

absl::StatusOr<LinkId> Network::Connect(NodeId a, uint16_t port_a, NodeId b,
                                        uint16_t port_b,
                                        const LinkConfig& a_to_b,
                                        const LinkConfig& b_to_a) {
  if (a >= nodes_.size() || b >= nodes_.size()) {
    return absl::InvalidArgumentError("no such node");
  }
  if (port_a >= nodes_[a].num_ports || port_b >= nodes_[b].num_ports) {
    return absl::InvalidArgumentError(
        absl::StrCat("no such port: ", nodes_[a].name, ":", port_a, " or ",
                     nodes_[b].name, ":", port_b));
  }
  const uint32_t pa = nodes_[a].first_port + port_a;
  const uint32_t pb = nodes_[b].first_port + port_b;
  if (pa == pb) return absl::InvalidArgumentError("port connected to itself");
  if (ports_[pa].out_dir >= 0 || ports_[pb].out_dir >= 0) {
    return absl::FailedPreconditionError("port already connected");
  }
  const LinkId link = static_cast<LinkId>(dirs_.size() / 2);
  for (int d = 0; d < 2; ++d) {
    DirState s;
    ApplyConfig(s, d == 0 ? a_to_b : b_to_a);
    s.src_port = d == 0 ? pa : pb;
    s.dst_port = d == 0 ? pb : pa;
    s.rng = Rng(config_.seed, DirIndex(link, static_cast<Dir>(d)));
    s.held.resize(config_.tx_queue_frames);
    dirs_.push_back(std::move(s));
  }
  ports_[pa].out_dir = static_cast<int32_t>(DirIndex(link, Dir::kAtoB));
  ports_[pa].in_dir = static_cast<int32_t>(DirIndex(link, Dir::kBtoA));
  ports_[pb].out_dir = static_cast<int32_t>(DirIndex(link, Dir::kBtoA));
  ports_[pb].in_dir = static_cast<int32_t>(DirIndex(link, Dir::kAtoB));
  Kick(a);
  Kick(b);
  return link;
}

void Network::ApplyConfig(DirState& d, const LinkConfig& config) {
  d.config = config;
  d.loss = Probability(config.loss);
  d.reorder = Probability(config.reorder);
  d.duplicate = Probability(config.duplicate);
  d.corrupt = Probability(config.corrupt);
}

void Network::SetLinkConfig(LinkId link, Dir dir, const LinkConfig& config) {
  ApplyConfig(dirs_[DirIndex(link, dir)], config);
}

const LinkConfig& Network::link_config(LinkId link, Dir dir) const {
  return dirs_[DirIndex(link, dir)].config;
}

const LinkCounters& Network::counters(LinkId link, Dir dir) const {
  return dirs_[DirIndex(link, dir)].counters;
}

void Network::SetFaultHook(LinkId link, Dir dir, FaultHook hook) {
  dirs_[DirIndex(link, dir)].hook = std::move(hook);
}

absl::Status Network::CapturePort(NodeId node, uint16_t port,
                                  const std::string& path) {
  if (node >= nodes_.size() || port >= nodes_[node].num_ports) {
    return absl::InvalidArgumentError("no such port");
  }
  auto writer = PcapWriter::Open(path);
  if (!writer.ok()) return writer.status();
  ports_[nodes_[node].first_port + port].pcap = std::move(*writer);
  return absl::OkStatus();
}

void Network::CloseCaptures() {
  for (Port& p : ports_) p.pcap.reset();
}

void Network::AddSampler(nic::TimeNs period_ns,
                         std::function<void(nic::TimeNs)> fn,
                         nic::TimeNs first) {
  samplers_.push_back(
      Sampler{std::max<nic::TimeNs>(period_ns, 1), std::move(fn)});
  Push(std::max(first, now()), EventKind::kSample,
       static_cast<uint32_t>(samplers_.size() - 1));
}

void Network::SetDeliveryObserver(std::function<void(const DeliveryInfo&)> fn) {
  observer_ = std::move(fn);
}

void Network::Kick(NodeId node) {
  Node& n = nodes_[node];
  if (n.wake_at == now()) return;
  n.wake_at = now();
  Push(now(), EventKind::kWake, node);
}

void Network::MirrorClock(nic::ManualClock* clock) {
  clock->Set(now());
  mirrors_.push_back(clock);
}

void Network::SetTime(nic::TimeNs t) {
  clock_.Set(t);
  for (nic::ManualClock* m : mirrors_) m->Set(t);
}

void Network::Push(nic::TimeNs t, EventKind kind, uint32_t target, uint32_t buf,
                   uint32_t len) {
  heap_.push_back(Event{t, next_seq_++, target, buf, len, kind});
  std::push_heap(heap_.begin(), heap_.end(), EventLater{});
}

void Network::Run(nic::TimeNs until) {
  while (!heap_.empty() && heap_.front().time <= until) Step();
  if (now() < until) SetTime(until);
}

bool Network::RunUntil(const std::function<bool()>& done,
                       nic::TimeNs deadline) {
  if (done()) return true;
  while (!heap_.empty() && heap_.front().time <= deadline) {
    Step();
    if (done()) return true;
  }
  if (now() < deadline) SetTime(deadline);
  return done();
}

void Network::Step() {
  std::pop_heap(heap_.begin(), heap_.end(), EventLater{});
  const Event ev = heap_.back();
  heap_.pop_back();
  if (ev.time != now()) SetTime(ev.time);
  ++events_processed_;
  switch (ev.kind) {
    case EventKind::kWake: {
      Node& n = nodes_[ev.target];
      if (n.wake_at != ev.time) break;  // superseded
      n.wake_at = nic::kNever;
      Poll(ev.target);
      ScheduleWake(ev.target);
      break;
    }
    case EventKind::kTxDone:
      OnTxDone(ev.target);
      break;
    case EventKind::kDeliver:
      Deliver(ev);
      break;
    case EventKind::kSample: {
      Sampler& s = samplers_[ev.target];
      s.fn(ev.time);
      Push(ev.time + s.period, EventKind::kSample, ev.target);
      break;
    }
  }
}

void Network::Deliver(const Event& first) {
  DirState& d = dirs_[first.target];
  Port& port = ports_[d.dst_port];
  Node& node = nodes_[port.node];
  // Frames that arrive at the same instant on the same port go up together.
  size_t n = 0;
  rx_scratch_ids_[n] = first.buf;
  rx_scratch_[n++] = nic::RxFrame{pool_.data(first.buf), first.len};
  while (n < rx_scratch_.size() && !heap_.empty()) {
    const Event& top = heap_.front();
    if (top.kind != EventKind::kDeliver || top.time != first.time ||
        top.target != first.target) {
      break;
    }
    rx_scratch_ids_[n] = top.buf;
    rx_scratch_[n++] = nic::RxFrame{pool_.data(top.buf), top.len};
    std::pop_heap(heap_.begin(), heap_.end(), EventLater{});
    heap_.pop_back();
    ++events_processed_;
  }
  const LinkId link = first.target / 2;
  for (size_t i = 0; i < n; ++i) {
    ++d.counters.delivered;
    d.counters.delivered_bytes += rx_scratch_[i].len;
    if (port.pcap) port.pcap->Write(first.time, rx_scratch_[i].bytes());
    if (observer_) {
      observer_(DeliveryInfo{port.node, port.index, link, first.time,
                             rx_scratch_[i].bytes()});
    }
  }
  node.endpoint->Receive(port.index, std::span(rx_scratch_.data(), n),
                         first.time);
  for (size_t i = 0; i < n; ++i) pool_.Put(rx_scratch_ids_[i]);
  Poll(port.node);
  ScheduleWake(port.node);
}

void Network::Poll(NodeId node) {
  const Node& n = nodes_[node];
  for (uint32_t p = n.first_port; p < n.first_port + n.num_ports; ++p) {
    const int32_t dir = ports_[p].out_dir;
    if (dir < 0) continue;
    const DirState& d = dirs_[dir];
    if (d.held_count + (d.busy ? 1u : 0u) < config_.tx_queue_frames) {
      Pull(static_cast<uint32_t>(dir));
    }
  }
}

void Network::Pull(uint32_t dir) {
  DirState& d = dirs_[dir];
  const Port& port = ports_[d.src_port];
  const uint32_t want =
      config_.tx_queue_frames - d.held_count - (d.busy ? 1u : 0u);
  for (uint32_t i = 0; i < want; ++i) {
    const uint32_t id = pool_.Get();
    tx_scratch_ids_[i] = id;
    tx_scratch_[i] = nic::TxFrame{pool_.data(id), pool_.buffer_size(), 0, 0};
  }
  const size_t got = std::min<size_t>(
      nodes_[port.node].endpoint->Transmit(
          port.index, std::span(tx_scratch_.data(), want), now()),
      want);
  for (uint32_t i = 0; i < want; ++i) {
    const uint32_t len = tx_scratch_[i].len;
    if (i >= got || len == 0 || len > pool_.buffer_size()) {
      if (i < got) ++d.counters.tx_invalid;
      pool_.Put(tx_scratch_ids_[i]);
      continue;
    }
    const uint32_t slot =
        (d.held_head + d.held_count) % config_.tx_queue_frames;
    d.held[slot] = Held{tx_scratch_ids_[i], len};
    ++d.held_count;
  }
  if (!d.busy && d.held_count > 0) StartTx(dir);
}

void Network::StartTx(uint32_t dir) {
  DirState& d = dirs_[dir];
  const Held h = d.held[d.held_head];
  d.held_head = (d.held_head + 1) % config_.tx_queue_frames;
  --d.held_count;
  d.busy = true;

  const nic::TimeNs t0 = now();
  const LinkConfig& cfg = d.config;
  // Bytes until the receiver has the FCS, and until the wire is free again.
  uint64_t arrive_bytes = h.len;
  uint64_t occupy_bytes = h.len;
  if (cfg.ethernet_overhead) {
    arrive_bytes =
        kPreambleBytes + std::max<uint64_t>(h.len, kMinFrameLen) + kFcsBytes;
    occupy_bytes = arrive_bytes + kIfgBytes;
  }
  nic::TimeNs arrive_ns = 0;
  nic::TimeNs occupy_ns = 0;
  if (cfg.rate_bps != 0) {
    // Exact over back-to-back frames: the sub-ns remainder is carried.
    if (d.free_at != t0) d.carry = 0;
    const uint64_t carry_in = d.carry;
    const uint64_t occ = occupy_bytes * 8 * kNsPerSecond + carry_in;
    occupy_ns = occ / cfg.rate_bps;
    d.carry = occ % cfg.rate_bps;
    arrive_ns = (arrive_bytes * 8 * kNsPerSecond + carry_in) / cfg.rate_bps;
  }
  d.free_at = t0 + occupy_ns;
  Push(d.free_at, EventKind::kTxDone, dir);

  ++d.counters.tx_frames;
  d.counters.tx_bytes += h.len;
  uint8_t* data = pool_.data(h.buf);
  Port& src = ports_[d.src_port];
  if (src.pcap) src.pcap->Write(t0, {data, h.len});

  FaultAction action;
  if (d.hook) {
    action = d.hook(FaultContext{d.counters.tx_frames - 1, t0, {data, h.len}});
  }
  if (h.len > cfg.max_frame_len) {
    ++d.counters.dropped_mtu;
    pool_.Put(h.buf);
    return;
  }
  if (action.kind == FaultAction::kDrop) {
    ++d.counters.dropped_fault;
    pool_.Put(h.buf);
    return;
  }
  if (d.rng.Bernoulli(d.loss)) {
    ++d.counters.dropped_loss;
    pool_.Put(h.buf);
    return;
  }
  const bool corrupt = action.kind == FaultAction::kCorrupt;
  if (corrupt || d.rng.Bernoulli(d.corrupt)) {
    uint64_t bit;
    if (corrupt && action.bit >= 0 &&
        static_cast<uint64_t>(action.bit) < uint64_t{h.len} * 8) {
      bit = static_cast<uint64_t>(action.bit);
    } else {
      const uint64_t from =
          cfg.corrupt_from_byte < h.len ? cfg.corrupt_from_byte : 0;
      bit = from * 8 + d.rng.Uniform((h.len - from) * 8);
    }
    data[bit / 8] ^= static_cast<uint8_t>(0x80u >> (bit % 8));
    ++d.counters.corrupted;
  }
  nic::TimeNs arrive = t0 + arrive_ns + cfg.propagation_delay_ns;
  if (action.kind == FaultAction::kDelay) {
    arrive += action.delay_ns;
    ++d.counters.reordered;
  }
  if (d.rng.Bernoulli(d.reorder)) {
    arrive += cfg.reorder_delay_ns;
    ++d.counters.reordered;
  }
  Push(arrive, EventKind::kDeliver, dir, h.buf, h.len);
  if (action.kind == FaultAction::kDuplicate || d.rng.Bernoulli(d.duplicate)) {
    const uint32_t copy = pool_.Get();
    std::memcpy(pool_.data(copy), data, h.len);
    Push(arrive + cfg.duplicate_gap_ns, EventKind::kDeliver, dir, copy, h.len);
    ++d.counters.duplicated;
  }
}

void Network::OnTxDone(uint32_t dir) {
  DirState& d = dirs_[dir];
  d.busy = false;
  if (d.held_count > 0) StartTx(dir);
  if (d.held_count + (d.busy ? 1u : 0u) < config_.tx_queue_frames) Pull(dir);
  ScheduleWake(ports_[d.src_port].node);
}

void Network::ScheduleWake(NodeId node) {
  Node& n = nodes_[node];
  nic::TimeNs t = n.endpoint->NextEventTime();
  if (t <= now()) {
    // Work that is due now: a call on one port may have made frames for
    // another (a switch's PFC frame towards an idle port). Poll the free
    // ports once more; whatever is still due waits for a busy port, which
    // is polled when it frees up.
    Poll(node);
    t = n.endpoint->NextEventTime();
    if (t <= now()) return;
  }
  if (t == nic::kNever) return;
  if (n.wake_at != nic::kNever && n.wake_at >= now() && n.wake_at <= t) return;
  n.wake_at = t;
  Push(t, EventKind::kWake, node);
}

}  // namespace rocemu::simnet
