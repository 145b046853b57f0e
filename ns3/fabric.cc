#include "ns3/fabric.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/gid_table.h"
#include "ns3/mac48-address.h"
#include "ns3/roce_channel.h"
#include "ns3/roce_net_device.h"

namespace rocemu::ns3sim {

namespace {

constexpr uint32_t kUnreached = std::numeric_limits<uint32_t>::max();

ns3::Mac48Address ToNs3(const protocol::MacAddr& m) {
  ns3::Mac48Address a;
  a.CopyFrom(m.data());
  return a;
}

}  // namespace

std::optional<DcqcnPreset> DcqcnPresetFromName(absl::string_view name) {
  if (name == "nvidia") return DcqcnPreset::kNvidia;
  if (name == "paper") return DcqcnPreset::kPaper;
  if (name == "hpcc") return DcqcnPreset::kHpcc;
  return std::nullopt;
}

pfc_ecn::DcqcnParams DcqcnFor(DcqcnPreset preset, uint32_t mbps) {
  switch (preset) {
    case DcqcnPreset::kNvidia:
      return pfc_ecn::DcqcnParams::Nvidia(mbps);
    case DcqcnPreset::kPaper:
      return pfc_ecn::DcqcnParams::Paper(mbps);
    case DcqcnPreset::kHpcc:
      break;
  }
  // The HPCC artifact's run.py "dcqcn" settings on the firmware's knobs
  // (see ../shared/reference/congestion.md 2.3): timer-driven alpha (1 us)
  // and cuts (4 us), 300 us increase timer, no byte counter, F = 1.
  pfc_ecn::DcqcnParams p = pfc_ecn::DcqcnParams::Nvidia(mbps);
  p.arithmetic = pfc_ecn::DcqcnArithmetic::kReal;
  p.rp_time_reset = 300;
  p.rp_byte_reset = 0;
  p.rp_threshold = 1;
  p.rp_ai_rate = std::max<uint32_t>(1, 5 * mbps / 25000);
  p.rp_hai_rate = std::max<uint32_t>(1, 50 * mbps / 25000);
  p.rp_min_rate = std::min<uint32_t>(1000, mbps);
  p.rp_rate_reduce_monitor_period = 4;
  p.rp_dce_tcp_g = 1020;  // g = 1/256
  p.rp_dce_tcp_rtt = 1;
  p.rp_initial_alpha_value = 1024;
  p.rp_clamp_tgt_rate = false;
  p.rp_clamp_tgt_rate_ati = true;
  return p;
}

absl::StatusOr<std::unique_ptr<Fabric>> Fabric::Build(
    const TopologySpec& topology, const SwitchConfig& switch_config,
    const HostOptions& host_options) {
  absl::Status st = topology.Validate();
  if (!st.ok()) return st;
  if (topology.hosts >= (1u << 24) - 2) {
    return absl::InvalidArgumentError("topology: too many hosts for 10/8");
  }
  std::unique_ptr<Fabric> f(new Fabric());
  f->topology_ = topology;
  st = f->Wire(switch_config, host_options);
  if (!st.ok()) return st;
  f->Route();
  return f;
}

absl::Status Fabric::Wire(const SwitchConfig& sc, const HostOptions& ho) {
  const TopologySpec& t = topology_;
  host_rate_.assign(t.hosts, 0);
  host_delay_.assign(t.hosts, 0);
  host_switch_.assign(t.hosts, -1);
  host_port_.assign(t.hosts, 0);
  adj_.assign(t.switches, {});
  for (const LinkSpec& l : t.links) {
    for (uint32_t n : {l.a, l.b}) {
      if (n < t.hosts) {
        host_rate_[n] = l.rate_bps;
        host_delay_[n] = l.delay_ns;
      }
    }
  }
  for (uint32_t h = 0; h < t.hosts; ++h) {
    nic::RnicConfig c;
    const uint32_t ip = HostIpv4(h);
    c.mac = {0x02,
             0x00,
             0x0A,
             static_cast<uint8_t>(ip >> 16),
             static_cast<uint8_t>(ip >> 8),
             static_cast<uint8_t>(ip)};
    c.gid = nic::GidFromIpv4(ip);
    c.port.active_mtu = ho.active_mtu;
    c.port.gid_tbl_len = 4;
    c.port.pkey_tbl_len = 1;
    c.mad_queue_len = 4;
    c.async_event_queue_len = 16;
    c.congestion.cnp_queue_len = ho.cnp_queue_len;
    const uint32_t mbps = static_cast<uint32_t>(host_rate_[h] / 1'000'000);
    c.congestion.dcqcn = DcqcnFor(ho.preset, mbps);
    c.congestion.dcqcn.enabled = ho.dcqcn;
    c.congestion.dcqcn.np.np_min_time_between_cnps =
        ho.np_min_time_between_cnps_us;
    c.congestion.pfc_rx.port_rate_bps = host_rate_[h];
    absl::Status st = c.congestion.Validate();
    if (!st.ok()) return st;
    hosts_.push_back(ns3::CreateObject<RnicHost>(c));
  }
  for (uint32_t s = 0; s < t.switches; ++s) {
    switches_.push_back(ns3::CreateObject<RoceSwitch>(sc, s));
  }
  auto node_of = [&](uint32_t n) -> FrameNode* {
    return n < t.hosts ? static_cast<FrameNode*>(ns3::PeekPointer(hosts_[n]))
                       : ns3::PeekPointer(switches_[n - t.hosts]);
  };
  for (const LinkSpec& l : t.links) {
    ns3::Ptr<RoceChannel> ch = ns3::CreateObject<RoceChannel>();
    ch->set_delay_ns(l.delay_ns);
    uint16_t ports[2];
    const uint32_t ends[2] = {l.a, l.b};
    for (int i = 0; i < 2; ++i) {
      ns3::Ptr<RoceNetDevice> d = ns3::CreateObject<RoceNetDevice>();
      d->SetRate(l.rate_bps);
      ports[i] = node_of(ends[i])->AddPort(d);
      d->Attach(ch);
      if (ends[i] < t.hosts) {
        d->SetAddress(ToNs3(hosts_[ends[i]]->rnic().config().mac));
      }
    }
    for (int i = 0; i < 2; ++i) {
      const uint32_t me = ends[i], peer = ends[1 - i];
      if (me < t.hosts) {
        // The switch's port towards the host.
        host_port_[me] = ports[1 - i];
        if (peer >= t.hosts) host_switch_[me] = peer - t.hosts;
        continue;
      }
      const uint32_t s = me - t.hosts;
      switches_[s]->ConfigurePort(ports[i], l.rate_bps, l.delay_ns);
      adj_[s].push_back({peer, ports[i], l.rate_bps, l.delay_ns});
    }
  }
  return absl::OkStatus();
}

void Fabric::Route() {
  const TopologySpec& t = topology_;
  // Breadth-first from every switch that has hosts, over switches only.
  tor_index_.assign(t.switches, -1);
  for (uint32_t h = 0; h < t.hosts; ++h) {
    const int64_t s = host_switch_[h];
    if (s >= 0 && tor_index_[s] < 0) {
      tor_index_[s] = static_cast<int32_t>(tor_hops_.size());
      std::vector<uint32_t> hops(t.switches, kUnreached);
      std::vector<nic::TimeNs> delay(t.switches, 0);
      std::vector<uint64_t> rate(t.switches,
                                 std::numeric_limits<uint64_t>::max());
      std::deque<uint32_t> q{static_cast<uint32_t>(s)};
      hops[s] = 0;
      while (!q.empty()) {
        const uint32_t u = q.front();
        q.pop_front();
        for (const Adj& a : adj_[u]) {
          if (a.node < t.hosts) continue;
          const uint32_t v = a.node - t.hosts;
          if (hops[v] != kUnreached) continue;
          hops[v] = hops[u] + 1;
          delay[v] = delay[u] + a.delay_ns;
          rate[v] = std::min(rate[u], a.rate_bps);
          q.push_back(v);
        }
      }
      tor_hops_.push_back(std::move(hops));
      tor_delay_.push_back(std::move(delay));
      tor_rate_.push_back(std::move(rate));
    }
  }
  for (uint32_t s = 0; s < t.switches; ++s) {
    std::map<std::vector<uint16_t>, uint32_t> ids;
    std::vector<std::vector<uint16_t>> groups;
    std::vector<uint32_t> host_group(t.hosts, 0);
    auto group_id = [&](std::vector<uint16_t> ports) {
      auto [it, fresh] =
          ids.emplace(std::move(ports), static_cast<uint32_t>(groups.size()));
      if (fresh) groups.push_back(it->first);
      return it->second;
    };
    const uint32_t unreachable = group_id({});
    // Next hops towards each ToR, computed once per ToR.
    std::vector<int64_t> tor_group(tor_hops_.size(), -1);
    for (uint32_t h = 0; h < t.hosts; ++h) {
      const int64_t tor = host_switch_[h];
      if (tor < 0) {
        host_group[h] = unreachable;
        continue;
      }
      if (tor == s) {
        host_group[h] = group_id({host_port_[h]});
        continue;
      }
      const int32_t ti = tor_index_[tor];
      if (tor_group[ti] < 0) {
        const std::vector<uint32_t>& hops = tor_hops_[ti];
        std::vector<uint16_t> ports;
        if (hops[s] != kUnreached) {
          for (const Adj& a : adj_[s]) {
            if (a.node >= t.hosts && hops[a.node - t.hosts] + 1 == hops[s]) {
              ports.push_back(a.port);
            }
          }
        }
        tor_group[ti] = group_id(std::move(ports));
      }
      host_group[h] = static_cast<uint32_t>(tor_group[ti]);
    }
    switches_[s]->SetRoutes(std::move(host_group), std::move(groups));
  }
}

PathInfo Fabric::Path(uint32_t src, uint32_t dst) const {
  PathInfo p;
  p.links = 2;
  p.delay_ns = host_delay_[src] + host_delay_[dst];
  p.min_rate_bps = std::min(host_rate_[src], host_rate_[dst]);
  const int64_t a = host_switch_[src], b = host_switch_[dst];
  if (a < 0 || b < 0) {
    p.links = 1;
    p.delay_ns = host_delay_[src];
    return p;
  }
  const int32_t ti = tor_index_[b];
  p.links += tor_hops_[ti][a];
  p.delay_ns += tor_delay_[ti][a];
  p.min_rate_bps = std::min(p.min_rate_bps, tor_rate_[ti][a]);
  return p;
}

}  // namespace rocemu::ns3sim
