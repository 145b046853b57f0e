#include "config/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "config/status_macros.h"
#include "config/yaml_reader.h"
#include "yaml-cpp/yaml.h"

namespace rocemu::config {
namespace {

bool ValidName(absl::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' &&
        c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

absl::Status LoadEal(MapReader& m, EalConfig* eal) {
  YAML::Node args;
  RETURN_IF_ERROR(m.List("args", &args));
  if (args.IsDefined() && !args.IsNull()) {
    for (size_t i = 0; i < args.size(); ++i) {
      std::string key = absl::StrCat(m.Key("args"), "[", i, "]");
      if (!args[i].IsScalar()) {
        return m.errors().At(args[i].Mark(), key, "expected a string");
      }
      const std::string& a = args[i].Scalar();
      // These are generated from the typed fields; a second copy would
      // contradict them (e.g. --no-huge with --in-memory fails EAL init).
      for (absl::string_view managed :
           {"--no-huge", "--in-memory", "--file-prefix", "-l", "--lcores", "-m",
            "--no-shconf"}) {
        if (a == managed || absl::StartsWith(a, absl::StrCat(managed, "="))) {
          return m.errors().At(
              args[i].Mark(), key,
              absl::StrCat("'", a,
                           "' is set by eal.lcore(s)/hugepages/file_prefix/"
                           "memory_mb; use those keys"));
        }
      }
      eal->args.push_back(a);
    }
  }
  RETURN_IF_ERROR(m.Uint("lcore", 0, 1023, &eal->lcore));
  RETURN_IF_ERROR(m.Uint("lcores", 1, 16, &eal->lcores));
  if (eal->lcore + eal->lcores > 1024) {
    return m.errors().At(m.Get("lcores").Mark(), m.Key("lcores"),
                         "lcore + lcores - 1 must be at most 1023");
  }
  int huge = static_cast<int>(eal->hugepages);
  RETURN_IF_ERROR(m.Enum("hugepages", {"auto", "no", "yes"}, &huge));
  eal->hugepages = static_cast<Hugepages>(huge);
  RETURN_IF_ERROR(m.String("file_prefix", &eal->file_prefix));
  if (!eal->file_prefix.empty() && !ValidName(eal->file_prefix, 64)) {
    return m.errors().At(m.Get("file_prefix").Mark(), m.Key("file_prefix"),
                         "must be 1-64 of [A-Za-z0-9._-]");
  }
  RETURN_IF_ERROR(m.Uint("memory_mb", 64, 65536, &eal->memory_mb));
  RETURN_IF_ERROR(m.String("log_level", &eal->log_level));
  RETURN_IF_ERROR(m.Uint("idle_sleep_us", 0, 100000, &eal->idle_sleep_us));
  RETURN_IF_ERROR(m.Uint("idle_spin_us", 0, 1000000, &eal->idle_spin_us));
  RETURN_IF_ERROR(m.Bool("idle_yield", &eal->idle_yield));
  return m.Finish();
}

absl::Status LoadTrafficClass(MapReader& m, TrafficClassConfig* tc) {
  RETURN_IF_ERROR(m.Uint("roce_dscp", 0, 63, &tc->roce_dscp));
  RETURN_IF_ERROR(m.Uint("roce_prio", 0, 7, &tc->roce_prio));
  RETURN_IF_ERROR(m.Uint("cnp_dscp", 0, 63, &tc->cnp_dscp));
  RETURN_IF_ERROR(m.Uint("cnp_prio", 0, 7, &tc->cnp_prio));
  int ecn = static_cast<int>(tc->ecn);
  RETURN_IF_ERROR(m.Enum("ecn", {"not_ect", "ect0", "ect1"}, &ecn));
  tc->ecn = static_cast<EcnMode>(ecn);
  return m.Finish();
}

absl::Status LoadCongestionPoint(MapReader& m, CongestionPointPortConfig* c) {
  RETURN_IF_ERROR(m.Bool("enabled", &c->enabled));
  RETURN_IF_ERROR(m.Uint("rate_mbps", 1, 400000, &c->rate_mbps));
  RETURN_IF_ERROR(m.Uint("buffer_bytes", 16384, 1u << 30, &c->buffer_bytes));
  RETURN_IF_ERROR(m.Bool("pfc", &c->pfc));
  return m.Finish();
}

absl::Status LoadFaults(MapReader& m, FaultConfig* f) {
  RETURN_IF_ERROR(m.Double("drop", 0, 1, &f->drop));
  RETURN_IF_ERROR(m.Double("reorder", 0, 1, &f->reorder));
  RETURN_IF_ERROR(m.Double("duplicate", 0, 1, &f->duplicate));
  RETURN_IF_ERROR(m.Double("corrupt", 0, 1, &f->corrupt));
  RETURN_IF_ERROR(m.Double("delay", 0, 1, &f->delay));
  RETURN_IF_ERROR(m.Uint("delay_us", 1, 1000000, &f->delay_us));
  RETURN_IF_ERROR(m.Uint("seed", 0, UINT64_MAX, &f->seed));
  RETURN_IF_ERROR(m.Bool("rx", &f->rx));
  RETURN_IF_ERROR(m.Bool("tx", &f->tx));
  // One draw decides at most one fault per frame, so the rates share [0, 1].
  if (f->drop + f->reorder + f->duplicate + f->corrupt + f->delay > 1.0) {
    return m.errors().At(m.Mark(), m.Key("drop"),
                         "drop + reorder + duplicate + corrupt + delay "
                         "must not exceed 1");
  }
  return m.Finish();
}

// Unix socket paths must fit sockaddr_un.sun_path with its terminator.
bool ValidSocketPath(const std::string& path) {
  return !path.empty() && path.size() < 108;
}

// What a netdev port takes from its interface cannot be configured too.
absl::Status CheckNetdevPort(MapReader& m) {
  for (absl::string_view key :
       {"devargs", "mac", "mtu", "addresses", "neighbours", "vlan_id"}) {
    if (m.Has(key)) {
      return m.errors().At(
          m.Get(key).Mark(), m.Key(key),
          key == "devargs"
              ? std::string("a port has devargs or netdev, not both")
          : key == "vlan_id"
              ? std::string("a netdev port takes the VLAN of its "
                            "interface: name a VLAN interface (e.g. "
                            "eth0.100) as netdev")
              : absl::StrCat("a netdev port follows its interface's ",
                             key == "neighbours" ? "neighbour table" : key,
                             "; remove the key"));
    }
  }
  return absl::OkStatus();
}

absl::Status LoadPort(MapReader& m, PortConfig* p) {
  RETURN_IF_ERROR(m.String("netdev", &p->netdev));
  if (m.Has("netdev") && !ValidName(p->netdev, 15)) {
    return m.errors().At(m.Get("netdev").Mark(), m.Key("netdev"),
                         "must be an interface name: 1-15 of [A-Za-z0-9._-]");
  }
  int mode = static_cast<int>(p->netdev_mode);
  RETURN_IF_ERROR(
      m.Enum("netdev_mode", {"auto", "af_xdp", "af_packet"}, &mode));
  p->netdev_mode = static_cast<NetdevMode>(mode);
  if (m.Has("netdev_mode") && p->netdev.empty()) {
    return m.errors().At(m.Get("netdev_mode").Mark(), m.Key("netdev_mode"),
                         "only for a netdev port");
  }
  RETURN_IF_ERROR(m.String("name", &p->name));
  if (!m.Has("name")) {
    if (p->netdev.empty()) {
      return m.errors().At(m.Mark(), m.Key("name"), "required key is missing");
    }
    p->name = p->netdev;  // device rocemu_<interface>
  }
  if (!ValidName(p->name, 32)) {
    return m.errors().At(m.Get("name").Mark(), m.Key("name"),
                         "must be 1-32 of [A-Za-z0-9._-]");
  }
  if (!p->netdev.empty()) RETURN_IF_ERROR(CheckNetdevPort(m));
  RETURN_IF_ERROR(m.String("devargs", &p->devargs));
  if (p->devargs.empty() && p->netdev.empty()) {
    return m.errors().At(
        m.Has("devargs") ? m.Get("devargs").Mark() : m.Mark(), m.Key("devargs"),
        "required: a DPDK device, e.g. net_tap0,iface=rocemu0 (or netdev: "
        "a kernel interface)");
  }
  std::string mac;
  RETURN_IF_ERROR(m.String("mac", &mac));
  if (m.Has("mac")) {
    MacAddr a;
    if (!ParseMac(mac, &a)) {
      return m.errors().At(
          m.Get("mac").Mark(), m.Key("mac"),
          absl::StrCat("'", mac, "' is not a MAC (xx:xx:xx:xx:xx:xx)"));
    }
    if ((a[0] & 1) || a == MacAddr{}) {
      return m.errors().At(m.Get("mac").Mark(), m.Key("mac"),
                           "must be a non-zero unicast MAC");
    }
    p->mac = a;
  }
  RETURN_IF_ERROR(m.Uint("mtu", 68, 9000, &p->mtu));

  YAML::Node addrs;
  RETURN_IF_ERROR(m.List("addresses", &addrs));
  bool any_v6 = false;
  for (size_t i = 0; addrs.IsDefined() && i < addrs.size(); ++i) {
    std::string key = absl::StrCat(m.Key("addresses"), "[", i, "]");
    const YAML::Node& a = addrs[i];
    if (!a.IsScalar()) {
      return m.errors().At(a.Mark(), key, "expected ADDRESS/PREFIX");
    }
    std::vector<absl::string_view> parts = absl::StrSplit(a.Scalar(), '/');
    IpPrefix pre;
    uint64_t len = 0;
    if (parts.size() != 2 || !ParseIp(parts[0], &pre.addr, &pre.ipv6) ||
        !ParseUint(parts[1], &len)) {
      return m.errors().At(
          a.Mark(), key,
          absl::StrCat("'", a.Scalar(),
                       "' is not ADDRESS/PREFIX (e.g. 10.77.0.2/24)"));
    }
    uint64_t max_len = pre.ipv6 ? 128 : 32;
    if (len < 1 || len > max_len) {
      return m.errors().At(a.Mark(), key,
                           absl::StrFormat("prefix length %d is out of range "
                                           "[1, %d]",
                                           len, max_len));
    }
    pre.prefix_len = static_cast<uint8_t>(len);
    for (const IpPrefix& other : p->addresses) {
      if (other.addr == pre.addr) {
        return m.errors().At(a.Mark(), key, "duplicate address");
      }
    }
    any_v6 |= pre.ipv6;
    p->addresses.push_back(pre);
  }
  if (any_v6 && p->mtu < 1280) {
    return m.errors().At(m.Get("mtu").Mark(), m.Key("mtu"),
                         "IPv6 addresses need an MTU of at least 1280");
  }

  YAML::Node pkeys;
  RETURN_IF_ERROR(m.List("pkeys", &pkeys));
  if (pkeys.IsDefined() && !pkeys.IsNull()) {
    if (pkeys.size() == 0 || pkeys.size() > 128) {
      return m.errors().At(pkeys.Mark(), m.Key("pkeys"),
                           "needs 1 to 128 entries");
    }
    p->pkeys.clear();
    for (size_t i = 0; i < pkeys.size(); ++i) {
      std::string key = absl::StrCat(m.Key("pkeys"), "[", i, "]");
      uint64_t v = 0;
      if (!pkeys[i].IsScalar() || !ParseUint(pkeys[i].Scalar(), &v) ||
          v > 0xFFFF || (v & 0x7FFF) == 0) {
        return m.errors().At(pkeys[i].Mark(), key,
                             "expected a P_Key 0x0001..0xFFFF with a "
                             "non-zero base (low 15 bits)");
      }
      p->pkeys.push_back(static_cast<uint16_t>(v));
    }
  }

  YAML::Node neigh;
  RETURN_IF_ERROR(m.List("neighbours", &neigh));
  for (size_t i = 0; neigh.IsDefined() && i < neigh.size(); ++i) {
    MapReader nm(m.errors(), neigh[i],
                 absl::StrCat(m.Key("neighbours"), "[", i, "]"));
    RETURN_IF_ERROR(nm.Open());
    std::string ip, mac_s;
    RETURN_IF_ERROR(nm.String("ip", &ip));
    RETURN_IF_ERROR(nm.String("mac", &mac_s));
    StaticNeighbour sn;
    if (!ParseIp(ip, &sn.ip, &sn.ipv6)) {
      return m.errors().At(nm.Has("ip") ? nm.Get("ip").Mark() : nm.Mark(),
                           nm.Key("ip"), "required: an IPv4 or IPv6 address");
    }
    if (!ParseMac(mac_s, &sn.mac) || (sn.mac[0] & 1)) {
      return m.errors().At(nm.Has("mac") ? nm.Get("mac").Mark() : nm.Mark(),
                           nm.Key("mac"), "required: a unicast MAC");
    }
    RETURN_IF_ERROR(nm.Finish());
    p->neighbours.push_back(sn);
  }
  RETURN_IF_ERROR(
      m.Uint("neighbour_timeout_s", 1, 86400, &p->neighbour_timeout_s));

  RETURN_IF_ERROR(m.String("verbs_socket", &p->verbs_socket));
  if (m.Has("verbs_socket") && !ValidSocketPath(p->verbs_socket)) {
    return m.errors().At(m.Get("verbs_socket").Mark(), m.Key("verbs_socket"),
                         "must be a path of 1-107 characters");
  }

  MapReader tc(m.errors(), m.Get("traffic_class"), m.Key("traffic_class"));
  RETURN_IF_ERROR(tc.Open());
  RETURN_IF_ERROR(LoadTrafficClass(tc, &p->traffic_class));
  MapReader faults(m.errors(), m.Get("faults"), m.Key("faults"));
  RETURN_IF_ERROR(faults.Open());
  RETURN_IF_ERROR(LoadFaults(faults, &p->faults));
  RETURN_IF_ERROR(m.Uint("link_speed_mbps", 1, 800000, &p->link_speed_mbps));
  if (m.Has("vlan_id")) {
    uint16_t vid = 0;
    RETURN_IF_ERROR(m.Uint("vlan_id", 0, 4094, &vid));
    p->vlan_id = vid;
  }
  MapReader cp(m.errors(), m.Get("congestion_point"),
               m.Key("congestion_point"));
  RETURN_IF_ERROR(cp.Open());
  RETURN_IF_ERROR(LoadCongestionPoint(cp, &p->congestion_point));
  return m.Finish();
}

absl::Status LoadPfc(MapReader& m, PfcConfig* pfc) {
  YAML::Node prios;
  RETURN_IF_ERROR(m.List("priorities", &prios));
  if (prios.IsDefined()) {
    pfc->enabled.fill(false);
    for (size_t i = 0; !prios.IsNull() && i < prios.size(); ++i) {
      uint64_t v = 0;
      if (!prios[i].IsScalar() || !ParseUint(prios[i].Scalar(), &v) || v > 7) {
        return m.errors().At(prios[i].Mark(),
                             absl::StrCat(m.Key("priorities"), "[", i, "]"),
                             "expected a priority 0..7");
      }
      pfc->enabled[v] = true;
    }
  }
  RETURN_IF_ERROR(m.Uint("xoff_bytes", 1, 1u << 30, &pfc->xoff_bytes));
  RETURN_IF_ERROR(m.Uint("xon_bytes", 0, 1u << 30, &pfc->xon_bytes));
  if (pfc->xon_bytes >= pfc->xoff_bytes) {
    YAML::Node n = m.Get("xon_bytes");
    return m.errors().At(
        n.IsDefined() ? n.Mark() : m.Mark(), m.Key("xon_bytes"),
        absl::StrFormat("must be below xoff_bytes (%d)", pfc->xoff_bytes));
  }
  RETURN_IF_ERROR(m.Uint("pause_quanta", 1, 0xFFFF, &pfc->pause_quanta));
  return m.Finish();
}

absl::Status LoadEcn(MapReader& m, EcnConfig* ecn) {
  RETURN_IF_ERROR(m.Bool("enabled", &ecn->enabled));
  RETURN_IF_ERROR(m.Uint("kmin_bytes", 0, 1u << 30, &ecn->kmin_bytes));
  RETURN_IF_ERROR(m.Uint("kmax_bytes", 1, 1u << 30, &ecn->kmax_bytes));
  if (ecn->kmin_bytes > ecn->kmax_bytes) {
    YAML::Node n = m.Get("kmin_bytes");
    return m.errors().At(
        n.IsDefined() ? n.Mark() : m.Mark(), m.Key("kmin_bytes"),
        absl::StrFormat("must not exceed kmax_bytes (%d)", ecn->kmax_bytes));
  }
  RETURN_IF_ERROR(m.Uint("pmax_percent", 0, 100, &ecn->pmax_percent));
  return m.Finish();
}

absl::Status LoadDcqcn(MapReader& m, DcqcnConfig* d) {
  RETURN_IF_ERROR(m.Bool("enabled", &d->enabled));
  RETURN_IF_ERROR(m.Uint("prio_mask", 0, 0xFF, &d->prio_mask));
  RETURN_IF_ERROR(m.Uint("np_min_time_between_cnps", 0, 1000000,
                         &d->np_min_time_between_cnps));
  RETURN_IF_ERROR(m.Uint("np_cnp_dscp", 0, 63, &d->np_cnp_dscp));
  RETURN_IF_ERROR(m.Uint("np_cnp_prio", 0, 7, &d->np_cnp_prio));
  RETURN_IF_ERROR(m.Uint("rp_dce_tcp_rtt", 1, 131071, &d->rp_dce_tcp_rtt));
  RETURN_IF_ERROR(m.Uint("rp_dce_tcp_g", 0, 1023, &d->rp_dce_tcp_g));
  RETURN_IF_ERROR(
      m.Uint("rp_initial_alpha_value", 0, 1023, &d->rp_initial_alpha_value));
  RETURN_IF_ERROR(m.Uint("rp_rate_to_set_on_first_cnp", 0, 400000,
                         &d->rp_rate_to_set_on_first_cnp));
  RETURN_IF_ERROR(m.Uint("rp_gd", 0, 31, &d->rp_gd));
  RETURN_IF_ERROR(m.Uint("rp_min_dec_fac", 0, 100, &d->rp_min_dec_fac));
  RETURN_IF_ERROR(m.Uint("rp_min_rate", 0, 400000, &d->rp_min_rate));
  RETURN_IF_ERROR(m.Uint("rp_rate_reduce_monitor_period", 0, 1000000,
                         &d->rp_rate_reduce_monitor_period));
  RETURN_IF_ERROR(m.Uint("rp_time_reset", 1, 1000000, &d->rp_time_reset));
  RETURN_IF_ERROR(m.Uint("rp_byte_reset", 0, 0xFFFFFFFFu, &d->rp_byte_reset));
  RETURN_IF_ERROR(m.Uint("rp_threshold", 0, 31, &d->rp_threshold));
  RETURN_IF_ERROR(m.Uint("rp_ai_rate", 0, 400000, &d->rp_ai_rate));
  RETURN_IF_ERROR(m.Uint("rp_hai_rate", 0, 400000, &d->rp_hai_rate));
  RETURN_IF_ERROR(m.Uint("rp_max_rate", 0, 400000, &d->rp_max_rate));
  RETURN_IF_ERROR(m.Bool("rp_clamp_tgt_rate", &d->rp_clamp_tgt_rate));
  RETURN_IF_ERROR(m.Bool("rp_clamp_tgt_rate_ati", &d->rp_clamp_tgt_rate_ati));
  // Cross-field rules the RNIC would refuse later, reported here at the
  // offending key. The line rate is the RNIC's modelled 100 Gb/s.
  constexpr uint32_t kLineRateMbps = 100000;
  const uint32_t max_rate = d->rp_max_rate == 0
                                ? kLineRateMbps
                                : std::min(d->rp_max_rate, kLineRateMbps);
  for (const auto& [key, value] :
       {std::pair<const char*, uint32_t>{"rp_min_rate", d->rp_min_rate},
        {"rp_rate_to_set_on_first_cnp", d->rp_rate_to_set_on_first_cnp}}) {
    if (value > max_rate) {
      YAML::Node n = m.Get(key);
      return m.errors().At(
          n.IsDefined() ? n.Mark() : m.Mark(), m.Key(key),
          absl::StrFormat("%u Mb/s exceeds the maximum rate (rp_max_rate or "
                          "the line rate): %u Mb/s",
                          value, max_rate));
    }
  }
  return m.Finish();
}

absl::Status LoadCapture(MapReader& m, CaptureConfig* c) {
  RETURN_IF_ERROR(m.Bool("enabled", &c->enabled));
  RETURN_IF_ERROR(m.String("rx_path", &c->rx_path));
  RETURN_IF_ERROR(m.String("tx_path", &c->tx_path));
  for (const char* key : {"rx_path", "tx_path"}) {
    const std::string& v =
        absl::string_view(key) == "rx_path" ? c->rx_path : c->tx_path;
    if (v.empty()) {
      YAML::Node n = m.Get(key);
      return m.errors().At(n.IsDefined() ? n.Mark() : m.Mark(), m.Key(key),
                           "must not be empty");
    }
  }
  uint64_t rotate_mb = c->rotate_bytes >> 20;
  RETURN_IF_ERROR(m.Uint("rotate_mb", 0, 1u << 20, &rotate_mb));
  c->rotate_bytes = rotate_mb << 20;
  RETURN_IF_ERROR(m.Uint("snaplen", 64, 262144, &c->snaplen));
  int format = static_cast<int>(c->format);
  RETURN_IF_ERROR(m.Enum("format", {"pcapng", "pcap"}, &format));
  c->format = static_cast<CaptureFormat>(format);
  if (c->format == CaptureFormat::kPcap && c->rx_path == c->tx_path) {
    YAML::Node n = m.Get("tx_path");
    return m.errors().At(n.IsDefined() ? n.Mark() : m.Mark(), m.Key("tx_path"),
                         "one file for both directions needs format: pcapng");
  }
  return m.Finish();
}

absl::Status LoadRecorder(MapReader& m, RecorderConfig* c) {
  RETURN_IF_ERROR(m.Uint("events", 0, 4096, &c->events));
  RETURN_IF_ERROR(m.String("dump_dir", &c->dump_dir));
  RETURN_IF_ERROR(m.Uint("log_per_second", 0, 100000, &c->log_per_second));
  return m.Finish();
}

absl::Status LoadControl(MapReader& m, ControlConfig* c) {
  RETURN_IF_ERROR(m.String("socket", &c->socket_path));
  if (c->socket_path.empty() || c->socket_path.size() >= 108) {
    YAML::Node n = m.Get("socket");
    return m.errors().At(n.IsDefined() ? n.Mark() : m.Mark(), m.Key("socket"),
                         "must be a path of 1-107 characters");
  }
  RETURN_IF_ERROR(m.Mode("socket_mode", &c->socket_mode));
  RETURN_IF_ERROR(m.Uint("prometheus_port", 0, 65535, &c->prometheus_port));
  RETURN_IF_ERROR(m.Bool("test_hooks", &c->test_hooks));
  return m.Finish();
}

absl::Status LoadVerbsLimits(MapReader& m, VerbsLimitsConfig* l) {
  RETURN_IF_ERROR(m.Bool("memlock", &l->memlock));
  MapReader u(m.errors(), m.Get("per_uid"), m.Key("per_uid"));
  RETURN_IF_ERROR(u.Open());
  constexpr uint64_t kMax = uint64_t{1} << 32;
  RETURN_IF_ERROR(u.Uint("max_pds", 0, kMax, &l->per_uid.max_pds));
  RETURN_IF_ERROR(u.Uint("max_cqs", 0, kMax, &l->per_uid.max_cqs));
  RETURN_IF_ERROR(u.Uint("max_qps", 0, kMax, &l->per_uid.max_qps));
  RETURN_IF_ERROR(u.Uint("max_mrs", 0, kMax, &l->per_uid.max_mrs));
  RETURN_IF_ERROR(u.Uint("max_queue_bytes", 0, uint64_t{1} << 48,
                         &l->per_uid.max_queue_bytes));
  RETURN_IF_ERROR(u.Finish());
  return m.Finish();
}

absl::Status LoadVerbs(MapReader& m, VerbsConfig* v) {
  RETURN_IF_ERROR(m.Bool("enabled", &v->enabled));
  RETURN_IF_ERROR(m.String("socket", &v->socket_path));
  if (!ValidSocketPath(v->socket_path)) {
    YAML::Node n = m.Get("socket");
    return m.errors().At(n.IsDefined() ? n.Mark() : m.Mark(), m.Key("socket"),
                         "must be a path of 1-107 characters");
  }
  RETURN_IF_ERROR(m.Mode("socket_mode", &v->socket_mode));
  YAML::Node uids;
  RETURN_IF_ERROR(m.List("allowed_uids", &uids));
  for (size_t i = 0; uids.IsDefined() && !uids.IsNull() && i < uids.size();
       ++i) {
    uint64_t uid = 0;
    // (uid_t)-1 is "no uid" to chown(2) and never a peer's uid.
    if (!uids[i].IsScalar() || !ParseUint(uids[i].Scalar(), &uid) ||
        uid >= 0xFFFFFFFFu) {
      return m.errors().At(uids[i].Mark(),
                           absl::StrCat(m.Key("allowed_uids"), "[", i, "]"),
                           "expected a numeric uid 0..4294967294");
    }
    v->allowed_uids.push_back(static_cast<uint32_t>(uid));
  }
  RETURN_IF_ERROR(m.Uint("post_budget", 1, 4096, &v->post_budget));
  MapReader limits(m.errors(), m.Get("limits"), m.Key("limits"));
  RETURN_IF_ERROR(limits.Open());
  RETURN_IF_ERROR(LoadVerbsLimits(limits, &v->limits));
  return m.Finish();
}

absl::Status LoadLogging(MapReader& m, LoggingConfig* l) {
  int level = static_cast<int>(l->level);
  RETURN_IF_ERROR(
      m.Enum("level", {"debug", "info", "warning", "error"}, &level));
  l->level = static_cast<LogLevel>(level);
  RETURN_IF_ERROR(m.String("file", &l->file));
  return m.Finish();
}

template <typename T>
absl::Status LoadSection(MapReader& top, absl::string_view key,
                         absl::Status (*load)(MapReader&, T*), T* out) {
  MapReader m(top.errors(), top.Get(key), std::string(key));
  RETURN_IF_ERROR(m.Open());
  return load(m, out);
}

// Two listeners on one path would steal each other's clients.
absl::Status CheckSockets(const Config& cfg, const YAML::Node& ports,
                          MapReader& top) {
  std::vector<std::string> taken = {cfg.control.socket_path};
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    std::string path = cfg.VerbsSocketPath(i);
    if (path.empty()) continue;
    bool own = !cfg.ports[i].verbs_socket.empty();
    if (std::find(taken.begin(), taken.end(), path) != taken.end()) {
      YAML::Node where;
      std::string key;
      if (own) {
        where = ports[i]["verbs_socket"];
        key = absl::StrCat("ports[", i, "].verbs_socket");
      } else {
        MapReader verbs(top.errors(), top.Get("verbs"), "verbs");
        where = verbs.Get("socket");
        if (!where.IsDefined()) where = top.Get("verbs");
        key = "verbs.socket";
      }
      return top.errors().At(
          where.IsDefined() ? where.Mark() : top.Mark(), key,
          absl::StrCat("'", path,
                       "' is already used by another socket of this daemon"));
    }
    taken.push_back(path);
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> LoadNode(const YAML::Node& root, const Errors& errors) {
  Config cfg;
  cfg.source = errors.source();
  MapReader top(errors, root, "");
  RETURN_IF_ERROR(top.Open());
  RETURN_IF_ERROR(LoadSection(top, "eal", &LoadEal, &cfg.eal));

  YAML::Node ports;
  RETURN_IF_ERROR(top.List("ports", &ports));
  if (!ports.IsDefined() || ports.IsNull() || ports.size() == 0) {
    return errors.At(ports.IsDefined() ? ports.Mark() : top.Mark(), "ports",
                     "at least one port is required");
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    MapReader pm(errors, ports[i], absl::StrCat("ports[", i, "]"));
    RETURN_IF_ERROR(pm.Open());
    PortConfig port;
    RETURN_IF_ERROR(LoadPort(pm, &port));
    for (const PortConfig& other : cfg.ports) {
      if (other.name == port.name) {
        return errors.At(pm.Get("name").Mark(), pm.Key("name"),
                         absl::StrCat("duplicate port name '", port.name, "'"));
      }
      if (port.netdev.empty() && other.devargs == port.devargs) {
        return errors.At(pm.Get("devargs").Mark(), pm.Key("devargs"),
                         "duplicate device");
      }
      if (!port.netdev.empty() && other.netdev == port.netdev) {
        return errors.At(pm.Get("netdev").Mark(), pm.Key("netdev"),
                         "duplicate interface");
      }
    }
    cfg.ports.push_back(std::move(port));
  }
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    // The shards' lcores read the port's addresses and neighbours without
    // the port's lcore, which changes them as the interface does.
    if (!cfg.ports[i].netdev.empty() && cfg.eal.lcores > 1) {
      MapReader pm(errors, ports[i], absl::StrCat("ports[", i, "]"));
      return errors.At(pm.Get("netdev").Mark(), pm.Key("netdev"),
                       "a netdev port runs with eal.lcores 1");
    }
  }
  if (cfg.eal.lcores > 1 && cfg.ports.size() > 1) {
    // Each worker lcore runs one shard of one port (emulator/shard.h).
    return errors.At(ports.Mark(), "ports",
                     "eal.lcores above 1 takes a single port");
  }
  RETURN_IF_ERROR(LoadSection(top, "pfc", &LoadPfc, &cfg.pfc));
  RETURN_IF_ERROR(LoadSection(top, "ecn", &LoadEcn, &cfg.ecn));
  RETURN_IF_ERROR(LoadSection(top, "dcqcn", &LoadDcqcn, &cfg.dcqcn));
  RETURN_IF_ERROR(LoadSection(top, "capture", &LoadCapture, &cfg.capture));
  RETURN_IF_ERROR(LoadSection(top, "recorder", &LoadRecorder, &cfg.recorder));
  RETURN_IF_ERROR(LoadSection(top, "control", &LoadControl, &cfg.control));
  RETURN_IF_ERROR(LoadSection(top, "verbs", &LoadVerbs, &cfg.verbs));
  RETURN_IF_ERROR(LoadSection(top, "logging", &LoadLogging, &cfg.logging));
  RETURN_IF_ERROR(top.Finish());
  RETURN_IF_ERROR(CheckSockets(cfg, ports, top));
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    const CongestionPointPortConfig& cp = cfg.ports[i].congestion_point;
    // XOFF must leave headroom: what is in flight when it goes out still
    // has to fit, or PFC turns into tail drops.
    if (cp.enabled && cp.pfc && cfg.pfc.xoff_bytes >= cp.buffer_bytes) {
      MapReader pm(errors, ports[i], absl::StrCat("ports[", i, "]"));
      return errors.At(pm.Get("congestion_point").Mark(),
                       pm.Key("congestion_point.buffer_bytes"),
                       absl::StrFormat("must exceed pfc.xoff_bytes (%d)",
                                       cfg.pfc.xoff_bytes));
    }
  }
  return cfg;
}

absl::StatusOr<Config> ParseAndLoad(absl::string_view yaml,
                                    absl::string_view source) {
  Errors errors{std::string(source)};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return errors.At(e.mark, "(syntax)", e.msg);
  }
  try {
    return LoadNode(root, errors);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on malformed node access (e.g. aliases to nowhere).
    return errors.At(e.mark, "(structure)", e.msg);
  }
}

}  // namespace

std::string Config::VerbsSocketPath(size_t port) const {
  if (!verbs.enabled || port >= ports.size()) return "";
  if (!ports[port].verbs_socket.empty()) return ports[port].verbs_socket;
  return port == 0 ? verbs.socket_path : "";
}

absl::StatusOr<Config> NetdevConfig(std::string_view iface,
                                    std::string_view run_dir) {
  const absl::string_view name(iface.data(), iface.size());
  if (!ValidName(name, 15)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--netdev '", name, "': an interface name is 1-15 of [A-Za-z0-9._-]"));
  }
  std::string dir(run_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  Config cfg;
  cfg.source = absl::StrCat("--netdev ", name);
  PortConfig port;
  port.name = std::string(name);
  port.netdev = std::string(name);
  cfg.ports.push_back(std::move(port));
  cfg.control.socket_path = absl::StrCat(dir, "/rocemud-", name, ".sock");
  cfg.verbs.socket_path = absl::StrCat(dir, "/verbs-", name, ".sock");
  for (const std::string& p :
       {cfg.control.socket_path, cfg.verbs.socket_path}) {
    if (!ValidSocketPath(p)) {
      return absl::InvalidArgumentError(
          absl::StrCat("socket path '", p, "' is longer than 107 characters"));
    }
  }
  return cfg;
}

std::vector<IpAddr> PortConfig::Gids() const {
  std::vector<IpAddr> gids;
  gids.reserve(addresses.size());
  for (const IpPrefix& p : addresses) gids.push_back(p.addr);
  return gids;
}

absl::StatusOr<Config> LoadConfigString(std::string_view yaml,
                                        std::string_view source_name) {
  return ParseAndLoad(
      absl::string_view(yaml.data(), yaml.size()),
      absl::string_view(source_name.data(), source_name.size()));
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        path, ":0:0: (file): cannot open: ", std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseAndLoad(ss.str(), path);
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                     LogLevel::kError}) {
    if (name == LogLevelName(l)) return l;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level '", std::string(name),
                   "' (debug, info, warning, error)"));
}

std::string FormatMac(const MacAddr& mac) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
                         mac[2], mac[3], mac[4], mac[5]);
}

std::string FormatIp(const IpAddr& ip, bool ipv6) {
  char buf[INET6_ADDRSTRLEN];
  if (ipv6) {
    inet_ntop(AF_INET6, ip.data(), buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET, ip.data() + 12, buf, sizeof(buf));
  }
  return buf;
}

}  // namespace rocemu::config
