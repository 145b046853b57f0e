// What the control socket and the Prometheus endpoint show of a running
// daemon (counters, devices, ports, QPs, CM, sessions, PFC, DCQCN). The
// commands that choose among them are in control/control_dispatch.cc.
#include <rte_mempool.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "emulator/daemon.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

using Json = nlohmann::ordered_json;

// Every per-port counter with its exported name, in one place for JSON and
// Prometheus.
template <typename F>
void ForEachCounter(const PortCounters& c, const NetCounters& n,
                    const FaultCounters& rx, const FaultCounters& tx, F f) {
  f("rx_packets", c.rx_packets);
  f("rx_bytes", c.rx_bytes);
  f("tx_packets", c.tx_packets);
  f("tx_bytes", c.tx_bytes);
  f("tx_dropped", c.tx_dropped);
  f("tx_ring_full", c.tx_ring_full);
  f("tx_backpressure", c.tx_backpressure);
  f("rx_segmented", c.rx_segmented);
  f("rx_nic_no_endpoint", c.rx_nic_no_endpoint);
  f("tx_nombuf", c.tx_nombuf);
  f("loopback_packets", c.loopback_packets);
  f("rx_shard_ring_full", c.rx_shard_ring_full);
  f("rx_missed", c.rx_missed);
  f("rx_errors", c.rx_errors);
  f("tx_errors", c.tx_errors);
  f("rx_nombuf", c.rx_nombuf);
  f("memif_faults", c.memif_faults);
  f("rx_arp_requests", n.rx_arp_requests);
  f("rx_arp_replies", n.rx_arp_replies);
  f("tx_arp_requests", n.tx_arp_requests);
  f("tx_arp_replies", n.tx_arp_replies);
  f("rx_nd_solicits", n.rx_nd_solicits);
  f("rx_nd_adverts", n.rx_nd_adverts);
  f("tx_nd_solicits", n.tx_nd_solicits);
  f("tx_nd_adverts", n.tx_nd_adverts);
  f("rx_icmp_echo", n.rx_icmp_echo);
  f("rx_icmpv6_echo", n.rx_icmpv6_echo);
  f("tx_icmp_echo_reply", n.tx_icmp_echo_reply);
  f("tx_icmpv6_echo_reply", n.tx_icmpv6_echo_reply);
  f("rx_nic", n.rx_nic);
  f("rx_not_for_us", n.rx_not_for_us);
  f("rx_unhandled", n.rx_unhandled);
  f("tx_igmp_reports", n.tx_igmp_reports);
  f("tx_mld_reports", n.tx_mld_reports);
  f("rx_group_queries", n.rx_group_queries);
  f("rx_kernel", n.rx_kernel);
  f("rx_malformed", n.rx_malformed);
  f("rx_bad_checksum", n.rx_bad_checksum);
  f("reply_too_big", n.reply_too_big);
  f("rx_fault_dropped", rx.fault_dropped);
  f("rx_fault_reordered", rx.fault_reordered);
  f("rx_fault_duplicated", rx.fault_duplicated);
  f("rx_fault_corrupted", rx.fault_corrupted);
  f("rx_fault_delayed", rx.fault_delayed);
  f("tx_fault_dropped", tx.fault_dropped);
  f("tx_fault_reordered", tx.fault_reordered);
  f("tx_fault_duplicated", tx.fault_duplicated);
  f("tx_fault_corrupted", tx.fault_corrupted);
  f("tx_fault_delayed", tx.fault_delayed);
}

// A session's state, or null for a port without a verbs socket.
Json SessionJson(const verbs::SessionServer* session) {
  return session != nullptr ? session->StateJson() : Json(nullptr);
}

// The pid behind a session's client, and behind the client owning a QP.
std::optional<int64_t> ClientPid(const verbs::SessionServer* session,
                                 nic::ClientId client) {
  if (session == nullptr) return std::nullopt;
  std::optional<verbs::PeerCredentials> cred = session->Credentials(client);
  if (!cred.has_value()) return std::nullopt;
  return static_cast<int64_t>(cred->pid);
}

std::optional<int64_t> QpPid(const verbs::SessionServer* session,
                             uint32_t qpn) {
  if (session == nullptr) return std::nullopt;
  std::optional<nic::ClientId> client = session->QpOwner(qpn);
  if (!client.has_value()) return std::nullopt;
  return ClientPid(session, *client);
}

// eal.lcores > 1: "shards":[{"shard":k,...},...] in `port`, the other
// shards of a port, f(shard, &entry) adding each one's members; nothing
// with one lcore.
template <typename F>
void AddShards(const std::vector<std::unique_ptr<Shard>>& shards, Json& port,
               F f) {
  if (shards.empty()) return;
  Json list = Json::array();
  for (const auto& s : shards) {
    Json entry = {{"shard", s->index()}};
    f(*s, entry);
    list.push_back(std::move(entry));
  }
  port["shards"] = std::move(list);
}

}  // namespace

nic::DropReasonCounters Daemon::PortReasons(size_t i) const {
  nic::DropReasonCounters c = ports_[i]->reasons;
  if (i < rnics_.size() && rnics_[i] != nullptr) {
    rnics_[i]->rnic().reason_counters().AddTo(c);
  }
  for (const auto& s : ports_[i]->shards)
    s->rnic().rnic().reason_counters().AddTo(c);
  return c;
}

std::string Daemon::CountersJson() const {
  Json out = {{"uptime_ns", clock_ ? clock_->Now() : 0},
              {"rnic_attached", any_endpoint()},
              {"capture", capture_on_},
              {"loops", loops_}};
  ForEachIdleCounter(idle_.counters(),
                     [&](const char* name, uint64_t v) { out[name] = v; });
  Json ports = Json::object();
  for (const auto& p : ports_) {
    Json port = {{"mac", config::FormatMac(p->stack->mac())}};
    ForEachCounter(p->counters, p->stack->counters(), p->rx_faults->counters(),
                   p->tx_faults->counters(),
                   [&](const char* name, uint64_t v) { port[name] = v; });
    port["neighbours"] = p->neighbours.size();
    // Where the port's mbufs are: with the pool, waiting for the wire, or
    // elsewhere (the PMD's rings, a shard, a held fault).
    if (p->dev.has_value() && p->dev->pool() != nullptr) {
      // One walk of the per-lcore caches; in use is the rest of the pool.
      const rte_mempool* pool = p->dev->pool();
      const unsigned available = rte_mempool_avail_count(pool);
      port["mbufs_available"] = available;
      port["mbufs_in_use"] = pool->size - available;
    }
    port["tx_backlog"] = p->tx_backlog_count;
    const size_t index = static_cast<size_t>(&p - ports_.data());
    // Frames dropped, NAKed, ignored or held by the RNIC and the daemon,
    // per reason (nic/drop_reason.h): the reasons met at least once.
    Json drops = Json::object();
    const nic::DropReasonCounters reasons = PortReasons(index);
    for (size_t r = 1; r < nic::kDropReasonCount; ++r) {
      if (reasons.count[r] != 0) {
        drops[nic::kDropReasonNames[r]] = reasons.count[r];
      }
    }
    port["drops"] = std::move(drops);
    if (index < rnics_.size()) {
      port["rnic"] = rnics_[index]->CountersJson();
      port["pfc"] = rnics_[index]->PfcJson(clock_->Now());
      port["dcqcn"] = rnics_[index]->DcqcnJson();
    }
    if (p->ingress != nullptr) {
      port["congestion_point"] = p->ingress->StateJson();
    }
    port["verbs"] = SessionJson(
        index < sessions_.size() ? sessions_[index].get() : nullptr);
    // Each other shard's RNIC counters and QPs, DCQCN state, verbs
    // session and loop counters.
    AddShards(p->shards, port, [&](const Shard& s, Json& entry) {
      entry["rnic"] = s.rnic().CountersJson();
      entry["dcqcn"] = s.rnic().DcqcnJson();
      entry["verbs"] = SessionJson(s.session());
      const ShardCounters& c = s.counters();
      entry["rx_frames"] = c.rx_frames;
      entry["tx_frames"] = c.tx_frames;
      entry["tx_backpressure"] = c.tx_backpressure;
      entry["tx_nombuf"] = c.tx_nombuf;
      entry["clients_adopted"] = c.clients_adopted;
      ForEachIdleCounter(s.idle_counters(), [&](const char* name, uint64_t v) {
        entry[name] = v;
      });
    });
    ports[p->config.name] = std::move(port);
  }
  out["ports"] = std::move(ports);
  return verbs::DumpJson(out);
}

// The views below are lists with one entry per port, each naming the port
// and its device, so rocemu-ctl can print them as tables.
namespace {

template <typename F>
std::string PerPort(const char* key, size_t n, F f) {
  Json list = Json::array();
  for (size_t i = 0; i < n; ++i) list.push_back(f(i));
  return verbs::DumpJson(Json{{key, std::move(list)}});
}

}  // namespace

std::string Daemon::DevicesJson() const {
  return PerPort("devices", rnics_.size(), [&](size_t i) {
    const Port& p = *ports_[i];
    const bool verbs = i < sessions_.size() && sessions_[i] != nullptr;
    Json d = {{"device", "rocemu_" + p.config.name},
              {"port", p.config.name},
              {"devargs", p.config.devargs}};
    if (verbs) {
      size_t clients = sessions_[i]->num_clients();
      for (const auto& s : p.shards) {
        if (s->session() != nullptr) clients += s->session()->num_clients();
      }
      d["verbs_socket"] = sessions_[i]->socket_path();
      d["clients"] = clients;
    } else {
      d["verbs_socket"] = nullptr;
      d["clients"] = 0;
    }
    d["attr"] = rnics_[i]->DeviceJson();
    return d;
  });
}

std::string Daemon::PortsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i) {
    const Port& p = *ports_[i];
    Json j = {{"port", p.config.name},
              {"device", "rocemu_" + p.config.name},
              {"mac", config::FormatMac(p.stack->mac())},
              {"link_mtu", p.config.mtu},
              {"netdev", nullptr}};
    if (p.netdev != nullptr) {
      const InterfaceState& st = p.netdev->state();
      j["netdev"] = {{"interface", st.name}, {"index", st.index},
                     {"exists", st.exists},  {"up", st.up},
                     {"mtu", st.mtu},        {"mode", p.netdev->Describe()}};
    }
    Json addresses = Json::array();
    for (const config::IpPrefix& pre : p.config.addresses) {
      addresses.push_back(absl::StrCat(config::FormatIp(pre.addr, pre.ipv6),
                                       "/", pre.prefix_len));
    }
    j["addresses"] = std::move(addresses);
    j["neighbours"] = p.neighbours.size();
    j["rx_packets"] = p.counters.rx_packets;
    j["tx_packets"] = p.counters.tx_packets;
    j["attr"] = i < rnics_.size() ? rnics_[i]->PortJson() : Json(nullptr);
    return j;
  });
}

std::string Daemon::QpsJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i) {
    const verbs::SessionServer* session =
        i < sessions_.size() ? sessions_[i].get() : nullptr;
    Json j = {{"port", ports_[i]->config.name},
              {"device", "rocemu_" + ports_[i]->config.name},
              {"qps", rnics_[i]->QpsJson([session](uint32_t qpn) {
                 return QpPid(session, qpn);
               })},
              {"multicast_groups", rnics_[i]->MulticastJson()}};
    AddShards(ports_[i]->shards, j, [&](const Shard& s, Json& entry) {
      entry["qps"] = s.rnic().QpsJson(
          [&s](uint32_t qpn) { return QpPid(s.session(), qpn); });
      entry["multicast_groups"] = s.rnic().MulticastJson();
    });
    return j;
  });
}

std::string Daemon::CmJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i) {
    const verbs::SessionServer* session =
        i < sessions_.size() ? sessions_[i].get() : nullptr;
    Json j = {{"port", ports_[i]->config.name},
              {"device", "rocemu_" + ports_[i]->config.name},
              {"cm_ids", rnics_[i]->CmJson([session](uint32_t client) {
                 return ClientPid(session, client);
               })}};
    AddShards(ports_[i]->shards, j, [&](const Shard& s, Json& entry) {
      entry["cm_ids"] = s.rnic().CmJson(
          [&s](uint32_t client) { return ClientPid(s.session(), client); });
    });
    return j;
  });
}

std::string Daemon::SessionsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i) {
    Json j = {{"port", ports_[i]->config.name},
              {"verbs", SessionJson(i < sessions_.size() ? sessions_[i].get()
                                                         : nullptr)}};
    AddShards(ports_[i]->shards, j, [&](const Shard& s, Json& entry) {
      entry["verbs"] = SessionJson(s.session());
    });
    return j;
  });
}

std::string Daemon::PfcJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i) {
    return Json{{"port", ports_[i]->config.name},
                {"pfc", rnics_[i]->PfcJson(clock_->Now())}};
  });
}

std::string Daemon::DcqcnJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i) {
    return Json{{"port", ports_[i]->config.name},
                {"dcqcn", rnics_[i]->DcqcnJson()}};
  });
}

std::string Daemon::PrometheusText() const {
  PausedShards paused(*this);
  std::string out;
  absl::StrAppend(&out, "rocemu_loops ", loops_, "\n");
  ForEachIdleCounter(idle_.counters(), [&](const char* name, uint64_t v) {
    absl::StrAppend(&out, "rocemu_", name, " ", v, "\n");
  });
  for (const auto& p : ports_) {
    ForEachCounter(p->counters, p->stack->counters(), p->rx_faults->counters(),
                   p->tx_faults->counters(), [&](const char* name, uint64_t v) {
                     absl::StrAppend(&out, "rocemu_port_", name, "{port=\"",
                                     p->config.name, "\"} ", v, "\n");
                   });
    const size_t index = static_cast<size_t>(&p - ports_.data());
    const nic::DropReasonCounters drops = PortReasons(index);
    for (size_t r = 1; r < nic::kDropReasonCount; ++r) {
      absl::StrAppend(&out, "rocemu_drops{port=\"", p->config.name,
                      "\",reason=\"", nic::kDropReasonNames[r], "\"} ",
                      drops.count[r], "\n");
    }
    if (index < rnics_.size()) {
      rnics_[index]->AppendPrometheus(p->config.name, &out);
      rnics_[index]->AppendCongestionPrometheus(p->config.name, clock_->Now(),
                                                &out);
    }
    if (index < sessions_.size() && sessions_[index] != nullptr) {
      const verbs::SessionCounters& c = sessions_[index]->counters();
      auto emit = [&](const char* name, uint64_t v) {
        absl::StrAppend(&out, "rocemu_verbs_", name, "{port=\"", p->config.name,
                        "\"} ", v, "\n");
      };
      emit("clients", sessions_[index]->num_clients());
      verbs::ForEachSessionCounter(c, emit);
    }
    // eal.lcores > 1: the other shards' series carry a shard label (the
    // label text rides in the port-name argument).
    for (const auto& s : p->shards) {
      const std::string label =
          absl::StrCat(p->config.name, "\",shard=\"", s->index());
      s->rnic().AppendPrometheus(label, &out);
      if (s->session() != nullptr) {
        verbs::ForEachSessionCounter(
            s->session()->counters(), [&](const char* name, uint64_t v) {
              absl::StrAppend(&out, "rocemu_verbs_", name, "{port=\"", label,
                              "\"} ", v, "\n");
            });
      }
    }
  }
  return out;
}

}  // namespace rocemu::emulator
