#include "ns3/roce_switch.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "ns3/roce_net_device.h"
#include "pfc_ecn/pfc_thresholds.h"
#include "pfc_ecn/time_units.h"
#include "protocol/pfc.h"

namespace rocemu::ns3sim {

namespace {

// Cable length the derived headroom assumes: light in fibre covers ~1 m
// in 5 ns.
constexpr uint64_t kNsPerCableMetre = 5;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

NS_OBJECT_ENSURE_REGISTERED(RoceSwitch);

ns3::TypeId RoceSwitch::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("rocemu::RoceSwitch")
                               .SetParent<FrameNode>()
                               .SetGroupName("Rocemu");
  return tid;
}

RoceSwitch::RoceSwitch(const SwitchConfig& config, uint32_t switch_index)
    : config_(config),
      switch_index_(switch_index),
      ecmp_seed_(SplitMix(config.seed ^ (uint64_t{switch_index} << 32))) {}

RoceSwitch::~RoceSwitch() {
  for (PortState& p : ports_) {
    for (Ring<Entry>& q : p.queues) {
      while (!q.empty()) q.pop_front().frame->Unref();
    }
    while (!p.control.empty()) p.control.pop_front()->Unref();
  }
}

void RoceSwitch::ConfigurePort(uint16_t port, uint64_t rate_bps,
                               uint64_t delay_ns) {
  if (ports_.size() < num_ports()) ports_.resize(num_ports());
  PortState& p = ports_[port];
  p.rate_bps = rate_bps;
  // Locally administered, unique per switch and port.
  const uint32_t id = switch_index_;
  p.mac = {0x02,
           0x53,
           static_cast<uint8_t>(id >> 16),
           static_cast<uint8_t>(id >> 8),
           static_cast<uint8_t>(id),
           static_cast<uint8_t>(port)};
  if (config_.pfc) {
    headroom_total_ -= p.headroom * std::popcount(config_.lossless_priorities);
    p.headroom = config_.headroom_bytes != 0
                     ? config_.headroom_bytes
                     : pfc_ecn::Mlx5XoffHeadroomBytes(
                           static_cast<uint32_t>(rate_bps / 1'000'000),
                           static_cast<uint32_t>(delay_ns / kNsPerCableMetre),
                           config_.mtu_bytes);
    headroom_total_ += p.headroom * std::popcount(config_.lossless_priorities);
    pfc_ecn::PfcTransmitterConfig pc;
    pc.port_rate_bps = rate_bps;
    pc.pfc_enable = config_.lossless_priorities;
    pc.pause_quanta = config_.pause_quanta;
    for (int prio = 0; prio < kPriorities; ++prio) {
      pc.thresholds[prio] = {config_.pfc_xoff_bytes, config_.pfc_xon_bytes};
    }
    p.pfc = std::make_unique<pfc_ecn::PfcTransmitter>(pc);
  }
  if (config_.ecn) {
    pfc_ecn::RedProfile red = config_.red;
    if (config_.red_reference_rate_bps != 0) {
      const double scale = static_cast<double>(rate_bps) /
                           static_cast<double>(config_.red_reference_rate_bps);
      red.kmin_bytes = static_cast<uint64_t>(red.kmin_bytes * scale);
      red.kmax_bytes = static_cast<uint64_t>(red.kmax_bytes * scale);
    }
    // Port 0 of switch 0 draws the seed's own sequence, as the in-tree
    // simulator's one marker does; every other port its own.
    const uint64_t seed = config_.seed + uint64_t{port} * 7919 +
                          uint64_t{switch_index_} * 1'000'003;
    p.red = std::make_unique<pfc_ecn::RedMarker>(red, seed);
  }
}

void RoceSwitch::SetRoutes(std::vector<uint32_t> host_group,
                           std::vector<std::vector<uint16_t>> groups) {
  host_group_ = std::move(host_group);
  group_start_.clear();
  groups_flat_.clear();
  for (const std::vector<uint16_t>& g : groups) {
    group_start_.push_back(static_cast<uint32_t>(groups_flat_.size()));
    groups_flat_.insert(groups_flat_.end(), g.begin(), g.end());
  }
  group_start_.push_back(static_cast<uint32_t>(groups_flat_.size()));
}

uint64_t RoceSwitch::paused_ns(uint16_t port, int prio, nic::TimeNs now) const {
  const PauseSpan& s = ports_[port].pause_spans[prio];
  const nic::TimeNs end = std::min(s.until, now);
  return s.closed_ns + (end > s.start ? end - s.start : 0);
}

void RoceSwitch::ReceiveFrame(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                              nic::TimeNs now) {
  now_ = now;
  PortState& in = ports_[port];
  const uint32_t len = frame->GetSize();
  std::array<uint8_t, kFieldBytes> head;
  const uint32_t n = frame->CopyData(
      head.data(), std::min<uint32_t>(len, static_cast<uint32_t>(kFieldBytes)));
  const FrameFields f = ParseFields(std::span(head.data(), n));
  if (f.mac_control) {
    OnMacControl(port, frame, now);
    return;
  }
  const int64_t host = f.ipv4 ? HostIndexOf(f.dst_ip) : -1;
  if (host < 0 || static_cast<uint64_t>(host) >= host_group_.size()) {
    ++in.counters.rx_no_route;
    return;
  }
  const uint32_t g = host_group_[host];
  const uint32_t first = group_start_[g];
  const uint32_t width = group_start_[g + 1] - first;
  if (width == 0) {
    ++in.counters.rx_no_route;
    return;
  }
  const uint16_t egress =
      groups_flat_[first + (width == 1 ? 0 : EcmpHash(f, ecmp_seed_) % width)];
  const int prio = f.dscp >> 3;
  PortState& out = ports_[egress];
  const bool lossless =
      config_.pfc && ((config_.lossless_priorities >> prio) & 1);
  if (lossless &&
      in.ingress_bytes[prio] + len > XoffThreshold() + in.headroom) {
    ++in.counters.headroom_drop[prio];
    return;
  }
  if ((config_.queue_capacity_bytes != 0 &&
       out.queue_bytes[prio] + len > config_.queue_capacity_bytes) ||
      used_ + len > config_.buffer_bytes) {
    ++out.counters.tail_drop[prio];
    return;
  }
  out.queues[prio].push_back(Entry{ns3::GetPointer(frame), len, port});
  out.queue_bytes[prio] += len;
  out.queued_mask |= static_cast<uint8_t>(1u << prio);
  out.counters.max_queue_bytes[prio] =
      std::max(out.counters.max_queue_bytes[prio], out.queue_bytes[prio]);
  in.ingress_bytes[prio] += len;
  used_ += len;
  max_used_ = std::max(max_used_, used_);
  MarkReady(egress);
  if (lossless) EvaluatePfc(port, prio, now);
}

void RoceSwitch::OnMacControl(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                              nic::TimeNs now) {
  PortState& p = ports_[port];
  std::array<uint8_t, protocol::kMacControlFrameLen> bytes{};
  const uint32_t n =
      frame->CopyData(bytes.data(), static_cast<uint32_t>(bytes.size()));
  protocol::PfcInfo info;
  bool is_pfc = false;
  if (protocol::ParseMacControl(std::span(bytes.data(), n), &info, &is_pfc) !=
      protocol::ParseError::kOk) {
    ++p.counters.rx_bad_mac_control;
    return;
  }
  AddTimerPort(port);
  if (!is_pfc) {
    ++p.counters.rx_pause;
    p.pause_all_until =
        now + pfc_ecn::PauseQuantaToNs(info.quanta[0], p.rate_bps);
    return;
  }
  for (int prio = 0; prio < kPriorities; ++prio) {
    if (((info.enable_vector >> prio) & 1) == 0) continue;
    ++p.counters.rx_prio_pause[prio];
    const nic::TimeNs until =
        now + pfc_ecn::PauseQuantaToNs(info.quanta[prio], p.rate_bps);
    PauseSpan& s = p.pause_spans[prio];
    s.closed_ns +=
        std::min(s.until, now) > s.start ? std::min(s.until, now) - s.start : 0;
    s.start = now;
    s.until = until;
    p.paused_until[prio] = until;
  }
}

uint64_t RoceSwitch::XoffThreshold() const {
  if (config_.pfc_dynamic_shift == 0) return config_.pfc_xoff_bytes;
  const uint64_t reserved = headroom_total_ + used_;
  const uint64_t free_bytes =
      config_.buffer_bytes > reserved ? config_.buffer_bytes - reserved : 0;
  // At least two jumbo frames, so that XON can sit below XOFF.
  return std::max<uint64_t>(free_bytes >> config_.pfc_dynamic_shift,
                            config_.pfc_xon_delta_bytes + 2 * 9216);
}

void RoceSwitch::EvaluatePfc(uint16_t port, int prio, nic::TimeNs now) {
  PortState& p = ports_[port];
  pfc_ecn::PfcTransmitter& t = *p.pfc;
  if (config_.pfc_dynamic_shift != 0) {
    const uint64_t xoff = XoffThreshold();
    t.SetThresholds(prio, {xoff, xoff - config_.pfc_xon_delta_bytes});
  }
  t.SetOccupancy(prio, p.ingress_bytes[prio]);
  const std::optional<pfc_ecn::PfcFrameRequest> req = t.Poll(now);
  if (!req.has_value()) return;
  for (int i = 0; i < kPriorities; ++i) {
    if (((req->enable_vector >> i) & 1) == 0) continue;
    if (req->quanta[i] != 0) {
      p.xoff_mask |= static_cast<uint8_t>(1u << i);
    } else {
      p.xoff_mask &= static_cast<uint8_t>(~(1u << i));
    }
  }
  if (p.xoff_mask != 0) AddTimerPort(port);
  protocol::PfcInfo info;
  info.enable_vector = req->enable_vector;
  info.quanta = req->quanta;
  std::array<uint8_t, protocol::kMacControlFrameLen> bytes{};
  const size_t len = protocol::BuildPfcFrame(p.mac, info, bytes);
  p.control.push_back(
      ns3::GetPointer(ns3::Create<ns3::Packet>(bytes.data(), len)));
  ++control_pending_;
  MarkReady(port);
  for (int i = 0; i < kPriorities; ++i) {
    if ((req->enable_vector >> i) & 1) ++p.counters.tx_prio_pause[i];
  }
}

int RoceSwitch::PickPriority(const PortState& p, nic::TimeNs now) const {
  for (int prio = kPriorities - 1; prio >= 0; --prio) {
    if (((p.queued_mask >> prio) & 1) && p.paused_until[prio] <= now) {
      return prio;
    }
  }
  return -1;
}

ns3::Ptr<ns3::Packet> RoceSwitch::PullFrame(uint16_t port, nic::TimeNs now) {
  now_ = now;
  PortState& p = ports_[port];
  // An XOFF in force is refreshed (PfcTransmitter says when).
  if (p.xoff_mask != 0 && p.pfc->NextEventTime() <= now) {
    for (int prio = 0; prio < kPriorities; ++prio) {
      if (p.pfc->IsAsserted(prio)) {
        EvaluatePfc(port, prio, now);
        break;
      }
    }
  }
  if (!p.control.empty()) {
    --control_pending_;
    return ns3::Ptr<ns3::Packet>(p.control.pop_front(), false);
  }
  if (p.pause_all_until > now) return nullptr;
  const int prio = PickPriority(p, now);
  if (prio < 0) return nullptr;
  Ring<Entry>& q = p.queues[prio];
  Entry e = q.pop_front();
  if (q.empty()) p.queued_mask &= static_cast<uint8_t>(~(1u << prio));
  p.queue_bytes[prio] -= e.len;
  ports_[e.ingress].ingress_bytes[prio] -= e.len;
  used_ -= e.len;
  ++p.counters.tx_frames[prio];
  p.counters.tx_bytes[prio] += e.len;
  ns3::Ptr<ns3::Packet> out(e.frame, false);  // adopts the queue's reference
  if (p.red != nullptr && p.red->ShouldMark(p.queue_bytes[prio])) {
    std::array<uint8_t, kFieldBytes> head;
    const uint32_t n = out->CopyData(
        head.data(),
        std::min<uint32_t>(e.len, static_cast<uint32_t>(kFieldBytes)));
    const FrameFields f = ParseFields(std::span(head.data(), n));
    // Only ECN-capable IPv4 frames get CE; CE stays CE.
    if (f.ipv4 && (f.ecn == 0b01 || f.ecn == 0b10)) {
      out = Mark(out, e.len, f.l3_offset);
      ++p.counters.ecn_marked[prio];
    }
  }
  if (config_.pfc && ((config_.lossless_priorities >> prio) & 1)) {
    EvaluatePfc(e.ingress, prio, now);
  }
  return out;
}

ns3::Ptr<ns3::Packet> RoceSwitch::Mark(ns3::Ptr<ns3::Packet> frame,
                                       uint32_t len, size_t l3_offset) {
  // A new packet with the rewritten header: the received one may be shared
  // (a capture holds it), and ns3::Packet has no in-place byte write.
  static std::array<uint8_t, 10240> scratch;
  if (len > scratch.size()) return frame;
  frame->CopyData(scratch.data(), len);
  MarkCeIpv4(scratch.data() + l3_offset);
  return ns3::Create<ns3::Packet>(scratch.data(), len);
}

void RoceSwitch::AddTimerPort(uint16_t port) {
  if (ports_[port].in_timer_set) return;
  ports_[port].in_timer_set = true;
  timer_ports_.push_back(port);
}

nic::TimeNs RoceSwitch::NextEventTime() const {
  // A PFC frame made while serving one port may be due on another, idle one.
  if (control_pending_ > 0) return now_;
  nic::TimeNs t = nic::kNever;
  for (size_t i = 0; i < timer_ports_.size();) {
    const uint16_t port = timer_ports_[i];
    const PortState& p = ports_[port];
    bool live = false;
    if (p.xoff_mask != 0) {
      t = std::min(t, p.pfc->NextEventTime());
      live = true;
    }
    if (p.pause_all_until > now_) {
      if (p.queued_mask != 0) t = std::min(t, p.pause_all_until);
      live = true;
    }
    for (int prio = 0; prio < kPriorities; ++prio) {
      if (p.paused_until[prio] <= now_) continue;
      live = true;
      if ((p.queued_mask >> prio) & 1) t = std::min(t, p.paused_until[prio]);
    }
    if (live) {
      ++i;
      continue;
    }
    // No timer left on this port: out of the set until the next one.
    p.in_timer_set = false;
    timer_ports_[i] = timer_ports_.back();
    timer_ports_.pop_back();
  }
  return t;
}

}  // namespace rocemu::ns3sim
