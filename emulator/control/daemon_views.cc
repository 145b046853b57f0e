// What the control socket and the Prometheus endpoint show of a running
// daemon (counters, devices, ports, QPs, CM, sessions, PFC, DCQCN). The
// commands that choose among them are in control/control_dispatch.cc.
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/daemon.h"

namespace rocemu::emulator {
namespace {

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
void AppendSessionJson(const verbs::SessionServer* session, std::string* out) {
  if (session != nullptr) {
    session->AppendStateJson(out);
  } else {
    absl::StrAppend(out, "null");
  }
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

// eal.lcores > 1: `,"shards":[{"shard":k,...},...]` with the other shards
// of a port, f(shard) writing each one's members; nothing with one lcore.
template <typename F>
void AppendShards(const std::vector<std::unique_ptr<Shard>>& shards,
                  std::string* out, F f) {
  if (shards.empty()) return;
  absl::StrAppend(out, ",\"shards\":[");
  for (const auto& s : shards) {
    absl::StrAppend(out, s->index() == 1 ? "" : ",", "{\"shard\":", s->index(),
                    ",");
    f(*s);
    absl::StrAppend(out, "}");
  }
  absl::StrAppend(out, "]");
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
  std::string out = absl::StrFormat(
      "{\"uptime_ns\":%d,\"rnic_attached\":%s,\"capture\":%s",
      clock_ ? clock_->Now() : 0, any_endpoint() ? "true" : "false",
      capture_on_ ? "true" : "false");
  absl::StrAppend(&out, ",\"loops\":", loops_);
  ForEachIdleCounter(idle_.counters(), [&](const char* name, uint64_t v) {
    absl::StrAppend(&out, ",\"", name, "\":", v);
  });
  absl::StrAppend(&out, ",\"ports\":{");
  bool first_port = true;
  for (const auto& p : ports_) {
    absl::StrAppend(&out, first_port ? "" : ",", "\"",
                    JsonEscape(p->config.name), "\":{\"mac\":\"",
                    config::FormatMac(p->stack->mac()), "\"");
    first_port = false;
    ForEachCounter(p->counters, p->stack->counters(), p->rx_faults->counters(),
                   p->tx_faults->counters(), [&](const char* name, uint64_t v) {
                     absl::StrAppend(&out, ",\"", name, "\":", v);
                   });
    absl::StrAppend(&out, ",\"neighbours\":", p->neighbours.size());
    const size_t index = static_cast<size_t>(&p - ports_.data());
    // Frames dropped, NAKed, ignored or held by the RNIC and the daemon,
    // per reason (nic/drop_reason.h): the reasons met at least once.
    absl::StrAppend(&out, ",\"drops\":{");
    const nic::DropReasonCounters drops = PortReasons(index);
    bool first_drop = true;
    for (size_t r = 1; r < nic::kDropReasonCount; ++r) {
      if (drops.count[r] == 0) continue;
      absl::StrAppend(&out, first_drop ? "" : ",", "\"",
                      nic::kDropReasonNames[r], "\":", drops.count[r]);
      first_drop = false;
    }
    absl::StrAppend(&out, "}");
    if (index < rnics_.size()) {
      absl::StrAppend(&out, ",\"rnic\":");
      rnics_[index]->AppendCountersJson(&out);
      absl::StrAppend(&out, ",\"pfc\":");
      rnics_[index]->AppendPfcJson(clock_->Now(), &out);
      absl::StrAppend(&out, ",\"dcqcn\":");
      rnics_[index]->AppendDcqcnJson(&out);
    }
    if (p->ingress != nullptr) {
      absl::StrAppend(&out, ",\"congestion_point\":");
      p->ingress->AppendJson(&out);
    }
    absl::StrAppend(&out, ",\"verbs\":");
    AppendSessionJson(
        index < sessions_.size() ? sessions_[index].get() : nullptr, &out);
    // Each other shard's RNIC counters and QPs, DCQCN state, verbs
    // session and loop counters.
    AppendShards(p->shards, &out, [&](const Shard& s) {
      absl::StrAppend(&out, "\"rnic\":");
      s.rnic().AppendCountersJson(&out);
      absl::StrAppend(&out, ",\"dcqcn\":");
      s.rnic().AppendDcqcnJson(&out);
      absl::StrAppend(&out, ",\"verbs\":");
      AppendSessionJson(s.session(), &out);
      const ShardCounters& c = s.counters();
      absl::StrAppend(&out, ",\"rx_frames\":", c.rx_frames,
                      ",\"tx_frames\":", c.tx_frames,
                      ",\"tx_backpressure\":", c.tx_backpressure,
                      ",\"tx_nombuf\":", c.tx_nombuf,
                      ",\"clients_adopted\":", c.clients_adopted);
      ForEachIdleCounter(s.idle_counters(), [&](const char* name, uint64_t v) {
        absl::StrAppend(&out, ",\"", name, "\":", v);
      });
    });
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "}}");
  return out;
}

// The views below are lists with one entry per port, each naming the port
// and its device, so rocemu-ctl can print them as tables.
namespace {

template <typename F>
std::string PerPort(const char* key, size_t n, F f) {
  std::string out = absl::StrCat("{\"", key, "\":[");
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    f(i, &out);
  }
  absl::StrAppend(&out, "]}");
  return out;
}

}  // namespace

std::string Daemon::DevicesJson() const {
  return PerPort("devices", rnics_.size(), [&](size_t i, std::string* out) {
    const Port& p = *ports_[i];
    const bool verbs = i < sessions_.size() && sessions_[i] != nullptr;
    absl::StrAppend(out, "{\"device\":\"rocemu_", JsonEscape(p.config.name),
                    "\",\"port\":\"", JsonEscape(p.config.name),
                    "\",\"devargs\":\"", JsonEscape(p.config.devargs),
                    "\",\"verbs_socket\":");
    if (verbs) {
      size_t clients = sessions_[i]->num_clients();
      for (const auto& s : p.shards) {
        if (s->session() != nullptr) clients += s->session()->num_clients();
      }
      absl::StrAppend(out, "\"", JsonEscape(sessions_[i]->socket_path()),
                      "\",\"clients\":", clients);
    } else {
      absl::StrAppend(out, "null,\"clients\":0");
    }
    absl::StrAppend(out, ",\"attr\":");
    rnics_[i]->AppendDeviceJson(out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::PortsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i, std::string* out) {
    const Port& p = *ports_[i];
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(p.config.name),
                    "\",\"device\":\"rocemu_", JsonEscape(p.config.name),
                    "\",\"mac\":\"", config::FormatMac(p.stack->mac()),
                    "\",\"link_mtu\":", p.config.mtu, ",\"netdev\":");
    if (p.netdev != nullptr) {
      const InterfaceState& st = p.netdev->state();
      absl::StrAppend(out, "{\"interface\":\"", JsonEscape(st.name),
                      "\",\"index\":", st.index,
                      ",\"exists\":", st.exists ? "true" : "false",
                      ",\"up\":", st.up ? "true" : "false", ",\"mtu\":", st.mtu,
                      ",\"mode\":\"", JsonEscape(p.netdev->Describe()), "\"}");
    } else {
      absl::StrAppend(out, "null");
    }
    absl::StrAppend(out, ",\"addresses\":[");
    for (size_t a = 0; a < p.config.addresses.size(); ++a) {
      const config::IpPrefix& pre = p.config.addresses[a];
      absl::StrAppend(out, a == 0 ? "" : ",", "\"",
                      config::FormatIp(pre.addr, pre.ipv6), "/", pre.prefix_len,
                      "\"");
    }
    absl::StrAppend(out, "],\"neighbours\":", p.neighbours.size(),
                    ",\"rx_packets\":", p.counters.rx_packets,
                    ",\"tx_packets\":", p.counters.tx_packets, ",\"attr\":");
    if (i < rnics_.size()) {
      rnics_[i]->AppendPortJson(out);
    } else {
      absl::StrAppend(out, "null");
    }
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::QpsJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"device\":\"rocemu_",
                    JsonEscape(ports_[i]->config.name), "\",\"qps\":");
    const verbs::SessionServer* session =
        i < sessions_.size() ? sessions_[i].get() : nullptr;
    rnics_[i]->AppendQpsJson(
        [session](uint32_t qpn) { return QpPid(session, qpn); }, out);
    absl::StrAppend(out, ",\"multicast_groups\":");
    rnics_[i]->AppendMulticastJson(out);
    AppendShards(ports_[i]->shards, out, [&](const Shard& s) {
      absl::StrAppend(out, "\"qps\":");
      s.rnic().AppendQpsJson(
          [&s](uint32_t qpn) { return QpPid(s.session(), qpn); }, out);
      absl::StrAppend(out, ",\"multicast_groups\":");
      s.rnic().AppendMulticastJson(out);
    });
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::CmJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"device\":\"rocemu_",
                    JsonEscape(ports_[i]->config.name), "\",\"cm_ids\":");
    const verbs::SessionServer* session =
        i < sessions_.size() ? sessions_[i].get() : nullptr;
    rnics_[i]->AppendCmJson(
        [session](uint32_t client) { return ClientPid(session, client); }, out);
    AppendShards(ports_[i]->shards, out, [&](const Shard& s) {
      absl::StrAppend(out, "\"cm_ids\":");
      s.rnic().AppendCmJson(
          [&s](uint32_t client) { return ClientPid(s.session(), client); },
          out);
    });
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::SessionsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"verbs\":");
    AppendSessionJson(i < sessions_.size() ? sessions_[i].get() : nullptr, out);
    AppendShards(ports_[i]->shards, out, [&](const Shard& s) {
      absl::StrAppend(out, "\"verbs\":");
      AppendSessionJson(s.session(), out);
    });
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::PfcJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"pfc\":");
    rnics_[i]->AppendPfcJson(clock_->Now(), out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::DcqcnJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"dcqcn\":");
    rnics_[i]->AppendDcqcnJson(out);
    absl::StrAppend(out, "}");
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
