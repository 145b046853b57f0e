#include "tests/simnet/switch.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rocemu::simnet {

Switch::Switch(const SwitchConfig& config)
    : config_(config),
      pool_(config.max_frame_len, 64),
      ports_(config.num_ports),
      rng_(config.seed, 0x5357) {
  for (uint16_t p = 0; p < config_.num_ports; ++p) {
    SetPortRate(p, config_.port_rate_bps);
  }
}

void Switch::SetPortRate(uint16_t port, uint64_t rate_bps) {
  PortState& p = ports_[port];
  p.rate_bps = rate_bps;
  // Refresh an XOFF halfway through the pause it asked for, so the upstream
  // port never resumes while this one is still congested.
  p.pfc_refresh_ns = std::max<nic::TimeNs>(
      PauseQuantaToNs(config_.pfc_quanta, rate_bps) / 2, 1);
}

uint64_t Switch::rx_pause_duration_ns(uint16_t port, uint8_t prio,
                                      nic::TimeNs now) const {
  const PortState& p = ports_[port];
  // PAUSE and PFC are exclusive on a real port; if both were received,
  // count each.
  return p.pause_timers[prio].Total(now) + p.pause_all_timer.Total(now);
}

Switch::~Switch() = default;

absl::Status Switch::AddRoute(const MacAddr& mac, uint16_t port) {
  if (port >= config_.num_ports) {
    return absl::InvalidArgumentError(absl::StrCat("no port ", port));
  }
  routes_[MacKey(mac)] = port;
  return absl::OkStatus();
}

void Switch::SetEcnMarker(std::unique_ptr<EcnMarker> marker) {
  marker_ = std::move(marker);
}

void Switch::SetPfcPolicy(std::unique_ptr<PfcPolicy> policy) {
  pfc_policy_ = std::move(policy);
}

MacAddr Switch::port_mac(uint16_t port) const {
  MacAddr m = config_.base_mac;
  m[4] = static_cast<uint8_t>(m[4] + (port >> 8));
  m[5] = static_cast<uint8_t>(m[5] + port);
  return m;
}

bool Switch::paused(uint16_t port, uint8_t prio, nic::TimeNs now) const {
  const PortState& p = ports_[port];
  return p.pause_all_until > now || p.paused_until[prio] > now;
}

uint8_t Switch::Classify(std::span<const uint8_t> frame) const {
  const L2Info l2 = ParseL2(frame);
  if (config_.trust == PriorityTrust::kDscp && (l2.ipv4 || l2.ipv6)) {
    uint8_t dscp = 0, ecn = 0;
    ReadDscpEcn(frame, &dscp, &ecn);
    return static_cast<uint8_t>(dscp >> 3);
  }
  return l2.has_vlan ? l2.pcp : config_.default_priority;
}

void Switch::Receive(uint16_t port, std::span<const nic::RxFrame> frames,
                     nic::TimeNs now) {
  now_ = now;
  PortState& in = ports_[port];
  for (const nic::RxFrame& f : frames) {
    const std::span<const uint8_t> b = f.bytes();
    ++in.counters.rx_frames;
    in.counters.rx_bytes += f.len;
    if (f.len < kEthHeaderLen) {
      ++in.counters.rx_runt;
      continue;
    }
    if (Load16(&b[12]) == kEtherTypeMacControl) {
      OnMacControl(port, b, now);
      continue;
    }
    if (f.len > config_.max_frame_len) {
      ++in.counters.rx_oversize;
      continue;
    }
    const uint8_t prio = Classify(b);
    const bool group = (b[0] & 1) != 0;
    auto it = group ? routes_.end() : routes_.find(MacKey(b.data()));
    if (it != routes_.end()) {
      Enqueue(it->second, prio, port, b);
    } else if (config_.flood_unknown || group) {
      for (uint16_t out = 0; out < config_.num_ports; ++out) {
        if (out != port) Enqueue(out, prio, port, b);
      }
    } else {
      ++in.counters.rx_unknown_dst;
    }
  }
}

void Switch::OnMacControl(uint16_t port, std::span<const uint8_t> frame,
                          nic::TimeNs now) {
  PortState& p = ports_[port];
  MacControl mc;
  if (!ParseMacControl(frame, &mc)) {
    ++p.counters.rx_bad_mac_control;
    return;
  }
  if (mc.pause) {
    ++p.counters.rx_pause;
  } else {
    for (int i = 0; i < kNumPriorities; ++i) {
      if (mc.enable_vector & (1u << i)) ++p.counters.rx_prio_pause[i];
    }
  }
  if (!config_.obey_pause) return;
  timers_used_ = true;
  if (mc.pause) {
    p.pause_all_until = now + PauseQuantaToNs(mc.quanta[0], p.rate_bps);
    p.pause_all_timer.Set(now, p.pause_all_until);
    return;
  }
  for (int i = 0; i < kNumPriorities; ++i) {
    if (mc.enable_vector & (1u << i)) {
      p.paused_until[i] = now + PauseQuantaToNs(mc.quanta[i], p.rate_bps);
      p.pause_timers[i].Set(now, p.paused_until[i]);
    }
  }
}

void Switch::Enqueue(uint16_t egress, uint8_t prio, uint16_t ingress,
                     std::span<const uint8_t> frame) {
  PortState& out = ports_[egress];
  Queue& q = out.queues[prio];
  const uint32_t len = static_cast<uint32_t>(frame.size());
  if (q.bytes + len > config_.queue_capacity_bytes) {
    ++out.counters.tail_drop[prio];
    return;
  }
  const uint32_t buf = pool_.Get();
  std::memcpy(pool_.data(buf), frame.data(), len);
  q.fifo.push_back(Entry{buf, len, ingress});
  q.bytes += len;
  q.max_bytes = std::max(q.max_bytes, q.bytes);
  ports_[ingress].ingress_bytes[prio] += len;
  EvaluatePfc(ingress, prio, now_);
}

void Switch::EvaluatePfc(uint16_t port, uint8_t prio, nic::TimeNs now) {
  if (!pfc_policy_ || !(config_.pfc_priorities & (1u << prio))) return;
  PortState& p = ports_[port];
  XoffState& x = p.xoff[prio];
  const PfcAction action = pfc_policy_->OnIngressChange(
      IngressContext{port, prio, p.ingress_bytes[prio], x.sent, now});
  if (action == PfcAction::kXoff && !x.sent) {
    x.sent = true;
    x.refresh_at = now + p.pfc_refresh_ns;
    timers_used_ = true;
    SendPfc(port, prio, config_.pfc_quanta, now);
  } else if (action == PfcAction::kXon && x.sent) {
    x.sent = false;
    x.refresh_at = nic::kNever;
    SendPfc(port, prio, 0, now);
  }
}

void Switch::SendPfc(uint16_t port, uint8_t prio, uint16_t quanta,
                     nic::TimeNs /*now*/) {
  std::array<uint16_t, kNumPriorities> q{};
  q[prio] = quanta;
  const uint32_t buf = pool_.Get();
  const size_t len =
      BuildPfcFrame(port_mac(port), static_cast<uint8_t>(1u << prio), q,
                    {pool_.data(buf), pool_.buffer_size()});
  ports_[port].control.push_back(Entry{buf, static_cast<uint32_t>(len), port});
  ++control_pending_;
  ++ports_[port].counters.tx_prio_pause[prio];
}

int Switch::PickPriority(PortState& p, nic::TimeNs now) {
  auto eligible = [&](int prio) {
    return !p.queues[prio].fifo.empty() &&
           !(config_.obey_pause && p.paused_until[prio] > now);
  };
  if (config_.scheduling == Scheduling::kStrict) {
    for (int prio = kNumPriorities - 1; prio >= 0; --prio) {
      if (eligible(prio)) return prio;
    }
    return -1;
  }
  for (int i = 0; i < kNumPriorities; ++i) {
    const int prio = (p.rr_next + i) % kNumPriorities;
    if (eligible(prio)) {
      p.rr_next = static_cast<uint8_t>((prio + 1) % kNumPriorities);
      return prio;
    }
  }
  return -1;
}

size_t Switch::Transmit(uint16_t port, std::span<nic::TxFrame> frames,
                        nic::TimeNs now) {
  now_ = now;
  PortState& p = ports_[port];
  for (int prio = 0; prio < kNumPriorities; ++prio) {
    XoffState& x = p.xoff[prio];
    if (x.sent && now >= x.refresh_at) {
      x.refresh_at = now + p.pfc_refresh_ns;
      SendPfc(port, static_cast<uint8_t>(prio), config_.pfc_quanta, now);
    }
  }
  size_t n = 0;
  while (n < frames.size()) {
    nic::TxFrame& out = frames[n];
    if (!p.control.empty()) {
      const Entry e = p.control.front();
      p.control.pop_front();
      --control_pending_;
      std::memcpy(out.data, pool_.data(e.buf), e.len);
      out.len = e.len;
      out.priority = 0;
      pool_.Put(e.buf);
      ++p.counters.tx_frames;
      p.counters.tx_bytes += e.len;
      ++n;
      continue;
    }
    if (config_.obey_pause && p.pause_all_until > now) break;
    const int prio = PickPriority(p, now);
    if (prio < 0) break;
    Queue& q = p.queues[prio];
    const Entry e = q.fifo.front();
    const uint64_t depth = q.bytes;
    q.fifo.pop_front();
    q.bytes -= e.len;
    ports_[e.ingress].ingress_bytes[prio] -= e.len;
    if (e.len <= out.capacity) {
      std::memcpy(out.data, pool_.data(e.buf), e.len);
      out.len = e.len;
      out.priority = static_cast<uint8_t>(prio);
      if (marker_ &&
          marker_->ShouldMark(DequeueContext{port, static_cast<uint8_t>(prio),
                                             depth, e.len, now, &rng_}) &&
          MarkCe({out.data, out.len}) == CeMarkResult::kMarked) {
        ++p.counters.ecn_marked[prio];
      }
      ++p.counters.tx_frames;
      p.counters.tx_bytes += e.len;
      ++p.counters.tx_prio_frames[prio];
      ++n;
    }
    pool_.Put(e.buf);
    EvaluatePfc(e.ingress, static_cast<uint8_t>(prio), now);
  }
  return n;
}

nic::TimeNs Switch::NextEventTime() const {
  // A PFC frame made while serving one port may be due on another, idle one.
  if (control_pending_ > 0) return now_;
  if (!timers_used_) return nic::kNever;
  nic::TimeNs t = nic::kNever;
  for (const PortState& p : ports_) {
    bool any_queued = false;
    for (int prio = 0; prio < kNumPriorities; ++prio) {
      if (p.xoff[prio].sent) t = std::min(t, p.xoff[prio].refresh_at);
      if (p.queues[prio].fifo.empty()) continue;
      any_queued = true;
      if (p.paused_until[prio] > now_) t = std::min(t, p.paused_until[prio]);
    }
    if (any_queued && p.pause_all_until > now_) {
      t = std::min(t, p.pause_all_until);
    }
  }
  return t;
}

}  // namespace rocemu::simnet
