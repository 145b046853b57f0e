#include "emulator/port/rnic_port.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/logging.h"

namespace rocemu::emulator {

absl::StatusOr<nic::RnicConfig> MakeRnicConfig(const config::Config& config,
                                               unsigned port,
                                               const MacAddr& mac) {
  const config::PortConfig& p = config.ports.at(port);
  nic::RnicConfig rc;
  rc.mac = mac;
  rc.device.node_guid = nic::GuidFromMac(mac);
  rc.device.sys_image_guid = rc.device.node_guid;
  std::vector<IpAddr> gids = p.Gids();
  rc.gid = gids.empty() ? nic::LinkLocalGidFromMac(mac) : gids[0];
  // The largest IB MTU whose RoCEv2 frame fits the link for every address
  // family the port speaks.
  bool any_v6 = std::any_of(p.addresses.begin(), p.addresses.end(),
                            [](const config::IpPrefix& a) { return a.ipv6; });
  std::optional<nic::Mtu> mtu = nic::MtuForLinkMtu(p.mtu, any_v6);
  if (!mtu.has_value()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "port %s: mtu %u is too small for RoCEv2 (IB MTU 256)", p.name, p.mtu));
  }
  rc.port.active_mtu = *mtu;
  rc.port.max_mtu = *mtu;
  rc.port.pkey_tbl_len = static_cast<uint16_t>(
      std::max<size_t>(rc.port.pkey_tbl_len, p.pkeys.size()));

  nic::CongestionConfig& cc = rc.congestion;
  cc.ecn_capable = p.traffic_class.ecn != config::EcnMode::kNotEct;
  cc.roce_dscp = p.traffic_class.roce_dscp;
  cc.roce_prio = p.traffic_class.roce_prio;
  cc.np_enabled = config.dcqcn.enabled;
  pfc_ecn::DcqcnParams& d = cc.dcqcn;
  const config::DcqcnConfig& c = config.dcqcn;
  d.enabled = c.enabled;
  d.line_rate_mbps = p.link_speed_mbps;  // where a QP starts and recovers to
  d.rp_time_reset = c.rp_time_reset;
  d.rp_byte_reset = c.rp_byte_reset;
  d.rp_threshold = c.rp_threshold;
  d.rp_ai_rate = c.rp_ai_rate;
  d.rp_hai_rate = c.rp_hai_rate;
  d.rp_gd = c.rp_gd;
  d.rp_min_dec_fac = c.rp_min_dec_fac;
  d.rp_min_rate = c.rp_min_rate;
  d.rp_max_rate = c.rp_max_rate;
  d.rp_rate_reduce_monitor_period = c.rp_rate_reduce_monitor_period;
  d.rp_dce_tcp_g = c.rp_dce_tcp_g;
  d.rp_dce_tcp_rtt = c.rp_dce_tcp_rtt;
  d.rp_initial_alpha_value = c.rp_initial_alpha_value;
  d.rp_rate_to_set_on_first_cnp = c.rp_rate_to_set_on_first_cnp;
  d.rp_clamp_tgt_rate = c.rp_clamp_tgt_rate;
  d.rp_clamp_tgt_rate_ati = c.rp_clamp_tgt_rate_ati;
  d.np.np_min_time_between_cnps = c.np_min_time_between_cnps;
  d.np.np_cnp_dscp = p.traffic_class.cnp_dscp;
  d.np.np_cnp_prio = p.traffic_class.cnp_prio;
  uint8_t pfc_mask = 0;
  for (int i = 0; i < 8; ++i) {
    if (config.pfc.enabled[i]) pfc_mask |= static_cast<uint8_t>(1u << i);
  }
  cc.pfc_rx.pfc_enable = pfc_mask;
  cc.pfc_rx.port_rate_bps = p.link_speed_mbps * pfc_ecn::kBpsPerMbps;
  rc.vlan_id = p.vlan_id;
  // DPDK's ring PMD (net_ringN, one ring for RX and TX) hands back every
  // frame the port sends, as a looped cable would.
  rc.medium_loops_back = p.devargs.rfind("net_ring", 0) == 0;
  rc.flight_recorder_events = config.recorder.events;
  if (absl::Status s = cc.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("port ", p.name, ": congestion settings: ", s.message()));
  }
  return rc;
}

absl::StatusOr<std::unique_ptr<RnicPort>> RnicPort::Create(
    const config::Config& config, unsigned port, const MacAddr& mac,
    Resolver resolver, uint32_t shard, uint32_t shards) {
  absl::StatusOr<nic::RnicConfig> rc = MakeRnicConfig(config, port, mac);
  if (!rc.ok()) return rc.status();
  rc->shard = shard;
  rc->shards = shards;
  std::unique_ptr<RnicPort> rp(new RnicPort(*rc, std::move(resolver)));
  const config::PortConfig& p = config.ports[port];
  nic::Rnic& nic = rp->rnic();
  // GID 0 is set by the device; the other addresses follow in config order,
  // then the link-local GID as rxe and ConnectX list it.
  std::vector<IpAddr> gids = p.Gids();
  for (size_t i = 1; i < gids.size(); ++i) {
    if (absl::StatusOr<uint32_t> s = nic.gid_table().Add(gids[i]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("port ", p.name, ": GID table: ", s.status().message()));
    }
  }
  // A netdev port's GIDs are its interface's addresses, link-local
  // included: the kernel answers neighbour discovery for those only.
  if (!gids.empty() && p.netdev.empty()) {
    (void)nic.gid_table().Add(nic::LinkLocalGidFromMac(mac));
  }
  for (size_t i = 0; i < p.pkeys.size(); ++i) {
    if (absl::Status s =
            nic.pkey_table().Set(static_cast<uint16_t>(i), p.pkeys[i]);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("port ", p.name, ": P_Key table: ", s.message()));
    }
  }
  if (shard == 0) {
    ROCEMU_LOG_INFO("port %s: RNIC attached, %u GID(s), %zu P_Key(s), %s",
                    p.name, nic.gid_table().size(), p.pkeys.size(),
                    nic::MtuName(rc->port.active_mtu));
  }
  return rp;
}

void RnicPort::UntrackQp(uint32_t qpn) {
  qpns_.erase(std::remove(qpns_.begin(), qpns_.end(), qpn), qpns_.end());
}

size_t RnicPort::FlushAll() {
  size_t moved = 0;
  std::vector<uint32_t> all;
  rnic_->ForEachQp([&](const nic::Qp& qp) { all.push_back(qp.qpn()); });
  for (uint32_t qpn : all) {
    const nic::Qp* qp = rnic_->GetQp(qpn);
    if (qp == nullptr || qp->state() == nic::QpState::kReset ||
        qp->state() == nic::QpState::kErr) {
      continue;
    }
    nic::QpAttr a;
    a.qp_state = nic::QpState::kErr;
    if (rnic_->ModifyQp(qpn, a, nic::qp_attr::kState).ok()) ++moved;
  }
  return moved;
}

void RnicPort::AppendPrometheus(const std::string& port_name,
                                std::string* out) const {
  rnic_->QueryCounters().Enumerate([&](std::string_view name, uint64_t v) {
    absl::StrAppend(out, "rocemu_rnic_", std::string(name), "{port=\"",
                    port_name, "\"} ", v, "\n");
  });
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    ForEachQpCounter(qp.counters(), [&](const char* name, uint64_t v) {
      absl::StrAppend(out, "rocemu_qp_", name, "{port=\"", port_name,
                      "\",qpn=\"", qp.qpn(), "\"} ", v, "\n");
    });
  });
}

}  // namespace rocemu::emulator
