// RnicPort's control-plane views: what rocemu-ctl shows as devices, ports,
// QPs and PFC/DCQCN state. Control path only (allocates freely).
#include <arpa/inet.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "emulator/port/rnic_port.h"
#include "nic/cm/cm_agent.h"
#include "nic/qp.h"
#include "pfc_ecn/counters.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

// `"name":[p,...]` for the priorities whose bit is set in `mask`.
void AppendPriorityList(const char* name, uint8_t mask, std::string* out) {
  verbs::JsonList list(out, name);
  for (int p = 0; p < 8; ++p) {
    if ((mask >> p) & 1) absl::StrAppend(list.Next(), p);
  }
}

// GUIDs as ibv_devinfo prints them: four groups of four hex digits.
std::string FormatGuid(uint64_t guid) {
  return absl::StrFormat("%04x:%04x:%04x:%04x", (guid >> 48) & 0xFFFF,
                         (guid >> 32) & 0xFFFF, (guid >> 16) & 0xFFFF,
                         guid & 0xFFFF);
}

// A GID in the colon form ibv_devinfo -v and `rdma` use.
std::string FormatGid(const nic::Gid& g) {
  std::string s;
  for (size_t i = 0; i < g.size(); i += 2) {
    absl::StrAppendFormat(&s, "%s%02x%02x", i == 0 ? "" : ":", g[i], g[i + 1]);
  }
  return s;
}

// The address behind a GID, IPv4 for IPv4-mapped ones.
std::string GidIp(const nic::Gid& g) {
  char buf[INET6_ADDRSTRLEN];
  bool v4 = true;
  for (int i = 0; i < 10; ++i) v4 &= g[i] == 0;
  v4 &= g[10] == 0xFF && g[11] == 0xFF;
  if (v4) {
    inet_ntop(AF_INET, g.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, g.data(), buf, sizeof(buf));
  }
  return buf;
}

const char* GidTypeName(nic::GidType t) {
  switch (t) {
    case nic::GidType::kIb:
      return "IB";
    case nic::GidType::kRoceV1:
      return "RoCE v1";
    case nic::GidType::kRoceV2:
      return "RoCE v2";
  }
  return "?";
}

}  // namespace

void RnicPort::AppendDeviceJson(std::string* out) const {
  const nic::DeviceAttr& d = rnic_->device_attr();
  const uint64_t guid =
      d.node_guid != 0 ? d.node_guid : nic::GuidFromMac(rnic_->config().mac);
  const uint64_t sys_guid = d.sys_image_guid != 0 ? d.sys_image_guid : guid;
  absl::StrAppendFormat(
      out,
      "{\"transport\":\"InfiniBand\",\"fw_ver\":\"%s\",\"node_guid\":\"%s\","
      "\"sys_image_guid\":\"%s\",\"vendor_id\":\"0x%x\","
      "\"vendor_part_id\":%u,\"hw_ver\":\"0x%x\",\"phys_port_cnt\":1,"
      "\"max_qp\":%u,\"max_qp_wr\":%u,\"max_sge\":%u,\"max_cq\":%u,"
      "\"max_cqe\":%u,\"max_mr\":%u,\"max_pd\":%u,\"max_qp_rd_atom\":%u,"
      "\"max_qp_init_rd_atom\":%u,\"max_mr_size\":%u,\"qps\":%u}",
      d.fw_ver, FormatGuid(guid), FormatGuid(sys_guid), d.vendor_id,
      d.vendor_part_id, d.hw_ver, d.max_qp, d.max_qp_wr, d.max_sge, d.max_cq,
      d.max_cqe, d.max_mr, d.max_pd, d.max_qp_rd_atom, d.max_qp_init_rd_atom,
      d.max_mr_size, [this] {
        uint32_t n = 0;
        rnic_->ForEachQp([&](const nic::Qp&) { ++n; });
        return n;
      }());
}

void RnicPort::AppendPortJson(std::string* out) const {
  const nic::PortAttr& p = rnic_->port_attr();
  absl::StrAppendFormat(
      out,
      "{\"port\":1,\"state\":\"%s\",\"max_mtu\":%u,\"active_mtu\":%u,"
      "\"link_layer\":\"Ethernet\",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\","
      "\"gid_tbl_len\":%d,\"pkey_tbl_len\":%u,\"max_msg_sz\":%u,\"gids\":[",
      nic::PortStateName(p.state), nic::MtuToBytes(p.max_mtu),
      nic::MtuToBytes(p.active_mtu), rnic_->config().mac[0],
      rnic_->config().mac[1], rnic_->config().mac[2], rnic_->config().mac[3],
      rnic_->config().mac[4], rnic_->config().mac[5], p.gid_tbl_len,
      p.pkey_tbl_len, p.max_msg_sz);
  const nic::GidTable& gids = rnic_->gid_table();
  bool first = true;
  for (uint32_t i = 0, found = 0; i < gids.capacity() && found < gids.size();
       ++i) {
    std::optional<nic::Gid> g = gids.Get(i);
    if (!g.has_value()) continue;
    ++found;
    absl::StrAppendFormat(
        out, "%s{\"index\":%u,\"gid\":\"%s\",\"ip\":\"%s\",\"type\":\"%s\"}",
        first ? "" : ",", i, FormatGid(*g), GidIp(*g),
        GidTypeName(gids.Type(i).value_or(nic::GidType::kRoceV2)));
    first = false;
  }
  absl::StrAppend(out, "],\"pkeys\":[");
  const nic::PKeyTable& pkeys = rnic_->pkey_table();
  first = true;
  for (uint16_t i = 0; i < pkeys.capacity(); ++i) {
    const uint16_t k = pkeys.Get(i);
    if ((k & 0x7FFF) == 0) continue;  // an empty slot
    absl::StrAppendFormat(out, "%s{\"index\":%u,\"pkey\":\"0x%04x\"}",
                          first ? "" : ",", i, k);
    first = false;
  }
  absl::StrAppend(out, "]}");
}

void RnicPort::AppendQpsJson(const QpOwnerFn& owner, std::string* out) const {
  absl::StrAppend(out, "[");
  bool first = true;
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    const nic::QpAttr& a = qp.attr();
    std::optional<int64_t> pid = owner ? owner(qp.qpn()) : std::nullopt;
    absl::StrAppendFormat(
        out,
        "%s{\"qpn\":%u,\"type\":\"%s\",\"state\":\"%s\",\"rqpn\":%u,"
        "\"sq_psn\":%u,\"rq_psn\":%u,\"path_mtu\":%u,\"sq_outstanding\":%u,"
        "\"rq_outstanding\":%u,\"pid\":%s,\"owner\":\"%s\"",
        first ? "" : ",", qp.qpn(), nic::QpTypeName(qp.type()),
        nic::QpStateName(qp.state()), a.dest_qp_num, qp.req_.psn, qp.resp_.epsn,
        qp.mtu(), qp.sq_outstanding(), qp.rq_outstanding(),
        pid.has_value() ? absl::StrCat(*pid) : "null",
        pid.has_value() ? "application" : "daemon");
    first = false;
    absl::StrAppend(out, ",\"counters\":{");
    bool first_counter = true;
    ForEachQpCounter(qp.counters(), [&](const char* name, uint64_t v) {
      absl::StrAppend(out, first_counter ? "" : ",", "\"", name, "\":", v);
      first_counter = false;
    });
    const pfc_ecn::ReactionPoint& rp = qp.cc_.rp;
    absl::StrAppendFormat(
        out,
        "},\"rate_limiter\":{\"active\":%s,\"current_rate_mbps\":%.3f,"
        "\"target_rate_mbps\":%.3f,\"alpha\":%.6f,\"time_stage\":%u,"
        "\"byte_stage\":%u,\"pacer_rate_bps\":%u,\"pace_until_ns\":%u,"
        "\"rp_cnp_handled\":%u,\"rp_cnp_ignored\":%u,\"priority\":%u}}",
        rp.active() ? "true" : "false", rp.current_rate_mbps(),
        rp.target_rate_mbps(), rp.alpha(), rp.time_stage(), rp.byte_stage(),
        qp.cc_.pacer.rate_bps(), qp.pace_until_, rp.rp_cnp_handled(),
        rp.rp_cnp_ignored(), rnic_->congestion().PriorityOf(qp));
  });
  absl::StrAppend(out, "]");
}

void RnicPort::AppendMulticastJson(std::string* out) const {
  absl::StrAppend(out, "[");
  bool first = true;
  rnic_->multicast_groups().ForEach(
      [&](const nic::Gid& mgid, const std::vector<uint32_t>& qpns) {
        absl::StrAppend(out, first ? "" : ",", "{\"gid\":\"",
                        nic::GidToString(mgid), "\",\"qpns\":[",
                        absl::StrJoin(qpns, ","), "]}");
        first = false;
      });
  absl::StrAppend(out, "]");
}

void RnicPort::AppendCmJson(const ClientPidFn& owner, std::string* out) const {
  absl::StrAppend(out, "[");
  bool first = true;
  rnic_->cm().ForEachId([&](const nic::CmIdInfo& i) {
    std::optional<int64_t> pid = owner ? owner(i.client) : std::nullopt;
    absl::StrAppendFormat(
        out,
        "%s{\"id\":%u,\"state\":\"%s\",\"listener\":%s,\"active\":%s,"
        "\"service_id\":\"0x%016x\",\"local_comm_id\":%u,"
        "\"remote_comm_id\":%u,\"lqpn\":%u,\"rqpn\":%u,\"remote\":%s,"
        "\"bound\":%s,\"client\":%u,\"pid\":%s}",
        first ? "" : ",", i.id, nic::CmStateName(i.state),
        i.listener ? "true" : "false", i.active ? "true" : "false",
        i.service_id, i.local_comm_id, i.remote_comm_id, i.local_qpn,
        i.remote_qpn,
        i.listener ? "null" : absl::StrCat("\"", GidIp(i.remote_gid), "\""),
        i.bound_addr.has_value()
            ? absl::StrCat("\"", GidIp(*i.bound_addr), "\"")
            : "null",
        i.client, pid.has_value() ? absl::StrCat(*pid) : "null");
    first = false;
  });
  absl::StrAppend(out, "]");
}

void RnicPort::AppendPfcJson(nic::TimeNs now, std::string* out) const {
  const nic::CongestionControl& cc = rnic_->congestion();
  const uint8_t enabled = cc.config().pfc_rx.pfc_enable;
  out->push_back('{');
  AppendPriorityList("enabled", enabled, out);
  out->push_back(',');
  AppendPriorityList("paused", cc.paused_mask(), out);
  absl::StrAppend(out, ",\"counters\":{");
  bool first = true;
  cc.PortCounters(now).ForEach([&](std::string_view name, uint64_t v) {
    absl::StrAppend(out, first ? "" : ",", "\"", std::string(name), "\":", v);
    first = false;
  });
  absl::StrAppend(out, "}}");
}

void RnicPort::AppendDcqcnJson(std::string* out) const {
  const nic::CongestionControl& cc = rnic_->congestion();
  const pfc_ecn::DcqcnParams& d = cc.dcqcn();
  const nic::DeviceCounters c = rnic_->QueryCounters();
  absl::StrAppendFormat(
      out,
      "{\"rp_enabled\":%s,\"np_enabled\":%s,\"ecn_capable\":%s,"
      "\"roce_dscp\":%u,\"roce_prio\":%u,\"np_cnp_dscp\":%u,"
      "\"np_cnp_prio\":%u,\"np_min_time_between_cnps\":%u,"
      "\"line_rate_mbps\":%u,\"rp_time_reset\":%u,\"rp_byte_reset\":%u,"
      "\"rp_threshold\":%u,\"rp_ai_rate\":%u,\"rp_hai_rate\":%u,"
      "\"rp_gd\":%u,\"rp_min_dec_fac\":%u,\"rp_min_rate\":%u,"
      "\"rp_max_rate\":%u,\"rp_rate_reduce_monitor_period\":%u,"
      "\"rp_dce_tcp_g\":%u,\"rp_dce_tcp_rtt\":%u,"
      "\"rp_initial_alpha_value\":%u,\"rp_rate_to_set_on_first_cnp\":%u,"
      "\"counters\":{\"np_ecn_marked_roce_packets\":%u,\"np_cnp_sent\":%u,"
      "\"rp_cnp_handled\":%u,\"rp_cnp_ignored\":%u,\"cnp_dropped\":%u},"
      "\"qps\":[",
      d.enabled ? "true" : "false", cc.config().np_enabled ? "true" : "false",
      cc.config().ecn_capable ? "true" : "false", cc.config().roce_dscp,
      cc.config().roce_prio, d.np.np_cnp_dscp, d.np.np_cnp_prio,
      d.np.np_min_time_between_cnps, d.line_rate_mbps, d.rp_time_reset,
      d.rp_byte_reset, d.rp_threshold, d.rp_ai_rate, d.rp_hai_rate, d.rp_gd,
      d.rp_min_dec_fac, d.rp_min_rate, d.rp_max_rate,
      d.rp_rate_reduce_monitor_period, d.rp_dce_tcp_g, d.rp_dce_tcp_rtt,
      d.rp_initial_alpha_value, d.rp_rate_to_set_on_first_cnp,
      c.np_ecn_marked_roce_packets, c.np_cnp_sent, c.rp_cnp_handled,
      c.rp_cnp_ignored, cc.cnp_dropped());
  bool first = true;
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    const pfc_ecn::ReactionPoint& rp = qp.cc_.rp;
    absl::StrAppendFormat(
        out,
        "%s{\"qpn\":%u,\"active\":%s,\"current_rate_mbps\":%.3f,"
        "\"target_rate_mbps\":%.3f,\"alpha\":%.6f,\"rp_cnp_handled\":%u,"
        "\"rp_cnp_ignored\":%u,\"cnp_received\":%u}",
        first ? "" : ",", qp.qpn(), rp.active() ? "true" : "false",
        rp.current_rate_mbps(), rp.target_rate_mbps(), rp.alpha(),
        rp.rp_cnp_handled(), rp.rp_cnp_ignored(), qp.counters().cnp_received);
    first = false;
  });
  absl::StrAppend(out, "]}");
}

void RnicPort::AppendCongestionPrometheus(const std::string& port_name,
                                          nic::TimeNs now,
                                          std::string* out) const {
  rnic_->congestion().PortCounters(now).ForEach(
      [&](std::string_view name, uint64_t v) {
        absl::StrAppend(out, "rocemu_port_", std::string(name), "{port=\"",
                        port_name, "\"} ", v, "\n");
      });
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    const pfc_ecn::ReactionPoint& rp = qp.cc_.rp;
    absl::StrAppendFormat(
        out,
        "rocemu_qp_rp_current_rate_mbps{port=\"%s\",qpn=\"%u\"} %.3f\n"
        "rocemu_qp_rp_target_rate_mbps{port=\"%s\",qpn=\"%u\"} %.3f\n"
        "rocemu_qp_rp_alpha{port=\"%s\",qpn=\"%u\"} %.6f\n"
        "rocemu_qp_rp_cnp_handled{port=\"%s\",qpn=\"%u\"} %u\n",
        port_name, qp.qpn(), rp.current_rate_mbps(), port_name, qp.qpn(),
        rp.target_rate_mbps(), port_name, qp.qpn(), rp.alpha(), port_name,
        qp.qpn(), rp.rp_cnp_handled());
  });
}

}  // namespace rocemu::emulator
