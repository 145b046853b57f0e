#include "ns3/scenario.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "ns3/callback.h"
#include "ns3/ns3_clock.h"
#include "ns3/object-factory.h"
#include "ns3/pcap-file-wrapper.h"
#include "ns3/roce_net_device.h"
#include "ns3/simulator.h"

namespace rocemu::ns3sim {

namespace {

constexpr uint8_t kRocePrio = 3;

void CapturePacket(ns3::Ptr<ns3::PcapFileWrapper> file,
                   ns3::Ptr<const ns3::Packet> p) {
  file->Write(ns3::Simulator::Now(), p);
}

absl::Status SetScheduler(const std::string& name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"map", "ns3::MapScheduler"},
      {"heap", "ns3::HeapScheduler"},
      {"calendar", "ns3::CalendarScheduler"},
      {"list", "ns3::ListScheduler"},
      {"priority", "ns3::PriorityQueueScheduler"}};
  for (const auto& [key, type] : kNames) {
    if (name == key) {
      ns3::ObjectFactory f;
      f.SetTypeId(type);
      ns3::Simulator::SetScheduler(f);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown scheduler '", name, "' (map, heap, calendar, list, priority)"));
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

uint64_t ReadStatusKb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::strtoull(line.c_str() + n + 1, nullptr, 10);
    }
  }
  return 0;
}

absl::StatusOr<ScenarioResult> RunScenario(const ScenarioConfig& c) {
  ScenarioResult r;
  r.rss_before_kb = ReadStatusKb("VmRSS");
  const auto t0 = std::chrono::steady_clock::now();
  absl::Status st = SetScheduler(c.scheduler);
  if (!st.ok()) return st;
  absl::StatusOr<std::unique_ptr<Fabric>> built =
      Fabric::Build(c.topology, c.switches, c.hosts);
  if (!built.ok()) return built.status();
  std::unique_ptr<Fabric> fabric = std::move(*built);
  r.topology = c.topology.description;
  r.hosts = c.topology.hosts;
  r.switches = c.topology.switches;

  bool ud = false;
  for (const FlowSpec& f : c.flows) ud |= f.op == FlowOp::kUdSend;
  auto driver = std::make_unique<FlowDriver>(c.driver, fabric->hosts());
  st = driver->Setup(ud);
  if (!st.ok()) return st;
  r.rss_built_kb = ReadStatusKb("VmRSS");
  st = driver->OpenIdleConnections(c.idle_connections, c.switches.seed);
  if (!st.ok()) return st;
  r.rss_idle_kb = ReadStatusKb("VmRSS");
  const size_t total = c.flows.size();
  st = driver->Schedule(c.flows, [&](uint32_t) {
    if (driver->finished() == total) ns3::Simulator::Stop();
  });
  if (!st.ok()) return st;

  std::vector<ns3::Ptr<ns3::PcapFileWrapper>> captures;
  for (uint32_t h : c.pcap_hosts) {
    if (h >= fabric->hosts().size()) {
      return absl::InvalidArgumentError(absl::StrCat("no host ", h));
    }
    auto file = ns3::CreateObject<ns3::PcapFileWrapper>();
    file->Open(absl::StrCat(c.pcap_prefix, "-h", h, ".pcap"), std::ios::out);
    file->Init(1 /* DLT_EN10MB */, 65535);
    RoceNetDevice* dev = fabric->hosts()[h]->port(0);
    for (const char* trace : {"PhyTxBegin", "PhyRxEnd"}) {
      dev->TraceConnectWithoutContext(
          trace, ns3::MakeBoundCallback(&CapturePacket, file));
    }
    captures.push_back(file);
  }

  auto switch_sum = [&](auto field) {
    uint64_t s = 0;
    for (const auto& sw : fabric->switches()) {
      for (uint16_t p = 0; p < sw->num_ports(); ++p) {
        for (uint64_t v : sw->counters(p).*field) s += v;
      }
    }
    return s;
  };
  const uint32_t series =
      std::min<uint32_t>(c.series_flows, static_cast<uint32_t>(total));
  std::vector<uint64_t> last_progress(series, 0);
  std::function<void()> sample;
  if (c.sample_ns > 0) {
    for (const QueueRef& q : c.queues) {
      if (q.sw >= fabric->switches().size() ||
          q.port >= fabric->switches()[q.sw]->num_ports() || q.prio > 7) {
        return absl::InvalidArgumentError("no such queue to sample");
      }
    }
    sample = [&] {
      Sample s;
      s.t = NowNs();
      for (const QueueRef& q : c.queues) {
        s.queue_bytes.push_back(
            fabric->switches()[q.sw]->queue_bytes(q.port, q.prio));
      }
      for (uint32_t i = 0; i < series; ++i) {
        const uint64_t b = driver->progress(i);
        s.flow_gbps.push_back(static_cast<double>(b - last_progress[i]) * 8 /
                              static_cast<double>(c.sample_ns));
        last_progress[i] = b;
        const FlowSpec& f = driver->flows()[i];
        const uint32_t req = f.op == FlowOp::kRead ? f.dst : f.src;
        const nic::Qp* qp =
            fabric->hosts()[req]->rnic().GetQp(driver->requester_qpn(i));
        const double line = static_cast<double>(fabric->host_rate_bps(req));
        s.flow_rp_gbps.push_back(qp != nullptr && qp->cc_.rp.active()
                                     ? qp->cc_.rp.current_rate_mbps() / 1000.0
                                     : line / 1e9);
      }
      s.pfc_frames = switch_sum(&SwitchPortCounters::tx_prio_pause);
      s.ecn_marks = switch_sum(&SwitchPortCounters::ecn_marked);
      s.drops = switch_sum(&SwitchPortCounters::tail_drop) +
                switch_sum(&SwitchPortCounters::headroom_drop);
      r.samples.push_back(std::move(s));
      ns3::Simulator::Schedule(NsToTime(c.sample_ns), sample);
    };
    ns3::Simulator::Schedule(NsToTime(c.sample_ns), sample);
  }

  const auto t1 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  r.build_wall_s = std::chrono::duration<double>(t1 - t0).count();
  if (total > 0) {
    ns3::Simulator::Stop(NsToTime(c.deadline_ns));
    ns3::Simulator::Run();
  }
  r.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1)
          .count();
  r.events = ns3::Simulator::GetEventCount();
  r.cpu_s = CpuSeconds() - cpu0;
  auto count_node = [&r](const FrameNode& n) {
    r.wakeups += n.wakeups();
    for (uint16_t p = 0; p < n.num_ports(); ++p) {
      r.frames += n.port(p)->counters().tx_frames;
    }
  };
  for (const auto& h : fabric->hosts()) count_node(*h);
  for (const auto& s : fabric->switches()) count_node(*s);
  r.end_ns = NowNs();

  for (uint32_t i = 0; i < total; ++i) {
    FlowRecord rec;
    rec.id = i;
    rec.spec = driver->flows()[i];
    rec.result = driver->result(i);
    if (rec.result.done) {
      ++r.finished;
      rec.fct_ns = rec.result.finish_ns - rec.spec.start_ns;
      rec.ideal_ns = IdealFctNs(rec.spec.bytes, nic::PathMtuBytes(c.driver.mtu),
                                fabric->Path(rec.spec.src, rec.spec.dst));
      rec.slowdown = rec.ideal_ns == 0 ? 0
                                       : static_cast<double>(rec.fct_ns) /
                                             static_cast<double>(rec.ideal_ns);
    } else if (rec.result.failed) {
      ++r.failed;
    } else {
      ++r.unfinished;
    }
    r.flows.push_back(rec);
  }
  r.payload_ok = driver->CheckPayloads();
  r.max_host_qps = driver->max_host_qps();
  r.max_fabric_qps = driver->max_fabric_qps();

  FabricCounters& k = r.counters;
  k.pfc_frames = switch_sum(&SwitchPortCounters::tx_prio_pause);
  k.ecn_marks = switch_sum(&SwitchPortCounters::ecn_marked);
  k.tail_drops = switch_sum(&SwitchPortCounters::tail_drop);
  k.headroom_drops = switch_sum(&SwitchPortCounters::headroom_drop);
  for (const auto& sw : fabric->switches()) {
    for (uint16_t p = 0; p < sw->num_ports(); ++p) {
      k.no_route += sw->counters(p).rx_no_route;
    }
    k.max_switch_buffer = std::max(k.max_switch_buffer, sw->max_buffer_used());
    uint64_t sent = 0;
    for (uint16_t p = 0; p < sw->num_ports(); ++p) {
      sent += sw->port(p)->counters().tx_frames;
    }
    r.switch_frames.push_back(sent);
  }
  for (const auto& h : fabric->hosts()) {
    const nic::DeviceCounters d = h->rnic().QueryCounters();
    k.cnp_sent += d.np_cnp_sent;
    k.cnp_handled += d.rp_cnp_handled;
    k.cnp_ignored += d.rp_cnp_ignored;
    k.retransmissions += d.completer_retry_err;
    k.out_of_sequence += d.out_of_sequence;
    k.local_ack_timeouts += d.local_ack_timeout_err;
    k.rx_malformed += d.rx_malformed;
    k.rx_icrc += d.rx_icrc_encapsulated;
    k.rx_unknown_qp += d.rx_unknown_qp;
    k.rx_wrong_state += d.rx_wrong_state;
    k.pfc_frames_rx_host +=
        h->rnic().congestion().PortCounters(r.end_ns).rx_prio_pause[kRocePrio];
  }
  for (auto& f : captures) f->Close();
  captures.clear();
  driver.reset();
  ns3::Simulator::Destroy();
  fabric.reset();
  r.peak_rss_kb = ReadStatusKb("VmHWM");
  return r;
}

}  // namespace rocemu::ns3sim
