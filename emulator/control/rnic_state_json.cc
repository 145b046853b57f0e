// RnicPort's control-plane views: what rocemu-ctl shows as counters, devices,
// QPs and PFC/DCQCN state. Control path only (allocates freely).
#include <arpa/inet.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/port/rnic_port.h"
#include "nic/cm/cm_agent.h"
#include "nic/qp.h"
#include "pfc_ecn/counters.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

using Json = nlohmann::ordered_json;
using verbs::RoundToDecimals;

// The priorities whose bit is set in `mask`.
Json PriorityList(uint8_t mask) {
  Json list = Json::array();
  for (int p = 0; p < 8; ++p) {
    if ((mask >> p) & 1) list.push_back(p);
  }
  return list;
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

Json RnicPort::CountersJson() const {
  Json j = Json::object();
  rnic_->QueryCounters().Enumerate(
      [&](std::string_view name, uint64_t v) { j[std::string(name)] = v; });
  Json qps = Json::object();
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    Json q = {{"type", nic::QpTypeName(qp.type())},
              {"state", nic::QpStateName(qp.state())},
              {"sq_outstanding", qp.sq_outstanding()},
              {"rq_outstanding", qp.rq_outstanding()}};
    ForEachQpCounter(qp.counters(),
                     [&](const char* name, uint64_t v) { q[name] = v; });
    qps[absl::StrCat(qp.qpn())] = std::move(q);
  });
  j["qps"] = std::move(qps);
  return j;
}

Json RnicPort::DeviceJson() const {
  const nic::DeviceAttr& d = rnic_->device_attr();
  const uint64_t guid =
      d.node_guid != 0 ? d.node_guid : nic::GuidFromMac(rnic_->config().mac);
  const uint64_t sys_guid = d.sys_image_guid != 0 ? d.sys_image_guid : guid;
  uint32_t qps = 0;
  rnic_->ForEachQp([&](const nic::Qp&) { ++qps; });
  Json j = {{"transport", "InfiniBand"},
            {"fw_ver", d.fw_ver},
            {"node_guid", FormatGuid(guid)},
            {"sys_image_guid", FormatGuid(sys_guid)},
            {"vendor_id", absl::StrFormat("0x%x", d.vendor_id)},
            {"vendor_part_id", d.vendor_part_id},
            {"hw_ver", absl::StrFormat("0x%x", d.hw_ver)},
            {"phys_port_cnt", 1},
            {"max_qp", d.max_qp},
            {"max_qp_wr", d.max_qp_wr},
            {"max_sge", d.max_sge},
            {"max_cq", d.max_cq},
            {"max_cqe", d.max_cqe},
            {"max_mr", d.max_mr},
            {"max_pd", d.max_pd},
            {"max_qp_rd_atom", d.max_qp_rd_atom},
            {"max_qp_init_rd_atom", d.max_qp_init_rd_atom},
            {"max_mr_size", d.max_mr_size},
            {"qps", qps}};
  return j;
}

Json RnicPort::PortJson() const {
  const nic::PortAttr& p = rnic_->port_attr();
  const auto& mac = rnic_->config().mac;
  Json j = {{"port", 1},
            {"state", nic::PortStateName(p.state)},
            {"max_mtu", nic::MtuToBytes(p.max_mtu)},
            {"active_mtu", nic::MtuToBytes(p.active_mtu)},
            {"link_layer", "Ethernet"},
            {"mac", absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
                                    mac[1], mac[2], mac[3], mac[4], mac[5])},
            {"gid_tbl_len", p.gid_tbl_len},
            {"pkey_tbl_len", p.pkey_tbl_len},
            {"max_msg_sz", p.max_msg_sz},
            {"gids", Json::array()},
            {"pkeys", Json::array()}};
  const nic::GidTable& gids = rnic_->gid_table();
  for (uint32_t i = 0, found = 0; i < gids.capacity() && found < gids.size();
       ++i) {
    std::optional<nic::Gid> g = gids.Get(i);
    if (!g.has_value()) continue;
    ++found;
    j["gids"].push_back(
        {{"index", i},
         {"gid", FormatGid(*g)},
         {"ip", GidIp(*g)},
         {"type", GidTypeName(gids.Type(i).value_or(nic::GidType::kRoceV2))}});
  }
  const nic::PKeyTable& pkeys = rnic_->pkey_table();
  for (uint16_t i = 0; i < pkeys.capacity(); ++i) {
    const uint16_t k = pkeys.Get(i);
    if ((k & 0x7FFF) == 0) continue;  // an empty slot
    j["pkeys"].push_back(
        {{"index", i}, {"pkey", absl::StrFormat("0x%04x", k)}});
  }
  return j;
}

Json RnicPort::QpsJson(const QpOwnerFn& owner) const {
  Json list = Json::array();
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    const nic::QpAttr& a = qp.attr();
    std::optional<int64_t> pid = owner ? owner(qp.qpn()) : std::nullopt;
    Json counters = Json::object();
    ForEachQpCounter(qp.counters(),
                     [&](const char* name, uint64_t v) { counters[name] = v; });
    const pfc_ecn::ReactionPoint& rp = qp.cc_.rp;
    list.push_back(
        {{"qpn", qp.qpn()},
         {"type", nic::QpTypeName(qp.type())},
         {"state", nic::QpStateName(qp.state())},
         {"rqpn", a.dest_qp_num},
         {"sq_psn", qp.req_.psn},
         {"rq_psn", qp.resp_.epsn},
         {"path_mtu", qp.mtu()},
         {"sq_outstanding", qp.sq_outstanding()},
         {"rq_outstanding", qp.rq_outstanding()},
         {"pid", pid.has_value() ? Json(*pid) : Json(nullptr)},
         {"owner", pid.has_value() ? "application" : "daemon"},
         {"counters", std::move(counters)},
         {"rate_limiter",
          {{"active", rp.active()},
           {"current_rate_mbps", RoundToDecimals(rp.current_rate_mbps(), 3)},
           {"target_rate_mbps", RoundToDecimals(rp.target_rate_mbps(), 3)},
           {"alpha", RoundToDecimals(rp.alpha(), 6)},
           {"time_stage", rp.time_stage()},
           {"byte_stage", rp.byte_stage()},
           {"pacer_rate_bps", qp.cc_.pacer.rate_bps()},
           {"pace_until_ns", qp.pace_until_},
           {"rp_cnp_handled", rp.rp_cnp_handled()},
           {"rp_cnp_ignored", rp.rp_cnp_ignored()},
           {"priority", rnic_->congestion().PriorityOf(qp)}}}});
  });
  return list;
}

Json RnicPort::MulticastJson() const {
  Json list = Json::array();
  rnic_->multicast_groups().ForEach(
      [&](const nic::Gid& mgid, const std::vector<uint32_t>& qpns) {
        list.push_back({{"gid", nic::GidToString(mgid)}, {"qpns", qpns}});
      });
  return list;
}

Json RnicPort::CmJson(const ClientPidFn& owner) const {
  Json list = Json::array();
  rnic_->cm().ForEachId([&](const nic::CmIdInfo& i) {
    std::optional<int64_t> pid = owner ? owner(i.client) : std::nullopt;
    list.push_back(
        {{"id", i.id},
         {"state", nic::CmStateName(i.state)},
         {"listener", i.listener},
         {"active", i.active},
         {"service_id", absl::StrFormat("0x%016x", i.service_id)},
         {"local_comm_id", i.local_comm_id},
         {"remote_comm_id", i.remote_comm_id},
         {"lqpn", i.local_qpn},
         {"rqpn", i.remote_qpn},
         {"remote", i.listener ? Json(nullptr) : Json(GidIp(i.remote_gid))},
         {"bound", i.bound_addr.has_value() ? Json(GidIp(*i.bound_addr))
                                            : Json(nullptr)},
         {"client", i.client},
         {"pid", pid.has_value() ? Json(*pid) : Json(nullptr)}});
  });
  return list;
}

Json RnicPort::PfcJson(nic::TimeNs now) const {
  const nic::CongestionControl& cc = rnic_->congestion();
  Json j = {{"enabled", PriorityList(cc.config().pfc_rx.pfc_enable)},
            {"paused", PriorityList(cc.paused_mask())},
            {"counters", Json::object()}};
  cc.PortCounters(now).ForEach([&](std::string_view name, uint64_t v) {
    j["counters"][std::string(name)] = v;
  });
  return j;
}

Json RnicPort::DcqcnJson() const {
  const nic::CongestionControl& cc = rnic_->congestion();
  const pfc_ecn::DcqcnParams& d = cc.dcqcn();
  const nic::DeviceCounters c = rnic_->QueryCounters();
  Json j = {{"rp_enabled", d.enabled},
            {"np_enabled", cc.config().np_enabled},
            {"ecn_capable", cc.config().ecn_capable},
            {"roce_dscp", cc.config().roce_dscp},
            {"roce_prio", cc.config().roce_prio},
            {"np_cnp_dscp", d.np.np_cnp_dscp},
            {"np_cnp_prio", d.np.np_cnp_prio},
            {"np_min_time_between_cnps", d.np.np_min_time_between_cnps},
            {"line_rate_mbps", d.line_rate_mbps},
            {"rp_time_reset", d.rp_time_reset},
            {"rp_byte_reset", d.rp_byte_reset},
            {"rp_threshold", d.rp_threshold},
            {"rp_ai_rate", d.rp_ai_rate},
            {"rp_hai_rate", d.rp_hai_rate},
            {"rp_gd", d.rp_gd},
            {"rp_min_dec_fac", d.rp_min_dec_fac},
            {"rp_min_rate", d.rp_min_rate},
            {"rp_max_rate", d.rp_max_rate},
            {"rp_rate_reduce_monitor_period", d.rp_rate_reduce_monitor_period},
            {"rp_dce_tcp_g", d.rp_dce_tcp_g},
            {"rp_dce_tcp_rtt", d.rp_dce_tcp_rtt},
            {"rp_initial_alpha_value", d.rp_initial_alpha_value},
            {"rp_rate_to_set_on_first_cnp", d.rp_rate_to_set_on_first_cnp},
            {"counters",
             {{"np_ecn_marked_roce_packets", c.np_ecn_marked_roce_packets},
              {"np_cnp_sent", c.np_cnp_sent},
              {"rp_cnp_handled", c.rp_cnp_handled},
              {"rp_cnp_ignored", c.rp_cnp_ignored},
              {"cnp_dropped", cc.cnp_dropped()}}},
            {"qps", Json::array()}};
  rnic_->ForEachQp([&](const nic::Qp& qp) {
    const pfc_ecn::ReactionPoint& rp = qp.cc_.rp;
    j["qps"].push_back(
        {{"qpn", qp.qpn()},
         {"active", rp.active()},
         {"current_rate_mbps", RoundToDecimals(rp.current_rate_mbps(), 3)},
         {"target_rate_mbps", RoundToDecimals(rp.target_rate_mbps(), 3)},
         {"alpha", RoundToDecimals(rp.alpha(), 6)},
         {"rp_cnp_handled", rp.rp_cnp_handled()},
         {"rp_cnp_ignored", rp.rp_cnp_ignored()},
         {"cnp_received", qp.counters().cnp_received}});
  });
  return j;
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
