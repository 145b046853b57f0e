// rocemu-ns3: runs a RoCE fabric scenario in ns-3 with a nic::Rnic per
// host (docs/ns3.md).
//
//   rocemu-ns3 --topology="fattree k=4 rate=100G delay=1us"
//       --cdf=websearch --load=0.3 --duration=2ms --out=DIR
//   rocemu-ns3 --topology_file=t.txt --flows=flows.txt --out=DIR
//
// Writes DIR/summary.txt (also printed), DIR/summary.json, DIR/flows.csv,
// DIR/slowdown_by_size.csv and DIR/slowdown_by_percentile.csv; with
// --sample, DIR/series.csv; with --pcap_hosts, DIR/capture-hN.pcap.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "ns3/scenario.h"
#include "ns3/units.h"
#include "ns3/workload.h"

ABSL_FLAG(std::string, topology, "",
          "topology in one line, e.g. \"fattree k=4 rate=100G delay=1us\"");
ABSL_FLAG(std::string, topology_file, "", "topology file (ns3/topology.h)");
ABSL_FLAG(std::string, flows, "", "explicit flow list file (ns3/workload.h)");
ABSL_FLAG(std::string, cdf, "websearch",
          "flow size CDF: websearch, hadoop or a file");
ABSL_FLAG(double, load, 0.3, "offered load per host, fraction of its link");
ABSL_FLAG(std::string, duration, "1ms", "flows start during this time");
ABSL_FLAG(std::string, op, "write", "write, send, read or ud_send");
ABSL_FLAG(std::string, deadline, "1s", "virtual time limit of the run");
ABSL_FLAG(std::string, dcqcn, "nvidia", "nvidia, paper, hpcc or off");
ABSL_FLAG(uint32_t, cnp_interval_us, 4, "np_min_time_between_cnps (us)");
ABSL_FLAG(bool, pfc, true, "switches send PFC on priority 3");
ABSL_FLAG(std::string, pfc_xoff, "96K", "static XOFF per ingress port");
ABSL_FLAG(std::string, pfc_xon, "86784", "static XON per ingress port");
ABSL_FLAG(uint32_t, pfc_dynamic_shift, 0,
          "dynamic XOFF = free buffer >> shift (0: static thresholds)");
ABSL_FLAG(std::string, headroom, "0",
          "PFC headroom per ingress port (0: derived from rate and cable)");
ABSL_FLAG(std::string, buffer, "32MB", "shared buffer per switch");
ABSL_FLAG(std::string, queue_capacity, "0",
          "per egress queue limit (0: the shared buffer only)");
ABSL_FLAG(bool, ecn, true, "switches mark ECN by RED");
ABSL_FLAG(std::string, kmin, "10K", "RED Kmin");
ABSL_FLAG(std::string, kmax, "100K", "RED Kmax");
ABSL_FLAG(double, pmax, 0.2, "RED Pmax");
ABSL_FLAG(std::string, red_reference_rate, "0",
          "scale Kmin/Kmax by port rate over this rate (0: no scaling)");
ABSL_FLAG(uint32_t, mtu, 1024, "path MTU: 256, 512, 1024, 2048 or 4096");
ABSL_FLAG(std::string, message, "64K", "largest message an application posts");
ABSL_FLAG(uint32_t, outstanding, 8, "messages in flight per flow");
ABSL_FLAG(uint32_t, qp_timeout, 14,
          "RC local ACK timeout code: 4.096 us << code (14: 67 ms)");
ABSL_FLAG(bool, check_data, false,
          "per-host memory and a payload check (small fabrics only)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the workload, RED and ECMP");
ABSL_FLAG(std::string, scheduler, "calendar",
          "ns-3 scheduler: calendar, map, priority, heap or list");
ABSL_FLAG(uint32_t, idle_connections, 0,
          "idle RC connections opened before the run (memory per QP)");
ABSL_FLAG(std::string, out, ".", "output directory");
ABSL_FLAG(std::string, sample, "0",
          "time-series period (e.g. 10us); 0: no time series");
ABSL_FLAG(std::string, queues, "",
          "queues to sample: all, or sS:pP[:prioN],... (default all)");
ABSL_FLAG(uint32_t, series_flows, 0, "sample the rate of the first N flows");
ABSL_FLAG(std::string, pcap_hosts, "",
          "hosts whose port is captured (comma list); per-packet traces");
ABSL_FLAG(uint32_t, bins, 20, "flow-size percentile bins");

namespace {

using namespace rocemu::ns3sim;  // NOLINT

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "rocemu-ns3: %s: %s\n", what,
                 v.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(v);
}

absl::StatusOr<ScenarioConfig> Configure() {
  ScenarioConfig c;
  std::string topo_text = absl::GetFlag(FLAGS_topology);
  if (!absl::GetFlag(FLAGS_topology_file).empty()) {
    absl::StatusOr<std::string> t =
        ReadFile(absl::GetFlag(FLAGS_topology_file));
    if (!t.ok()) return t.status();
    topo_text = *t;
  }
  if (topo_text.empty()) {
    return absl::InvalidArgumentError("--topology or --topology_file");
  }
  absl::StatusOr<TopologySpec> topo = ParseTopology(topo_text);
  if (!topo.ok()) return topo.status();
  c.topology = *topo;

  const std::string dcqcn = absl::GetFlag(FLAGS_dcqcn);
  if (dcqcn == "off") {
    c.hosts.dcqcn = false;
  } else if (auto p = DcqcnPresetFromName(dcqcn); p.has_value()) {
    c.hosts.preset = *p;
  } else {
    return absl::InvalidArgumentError("--dcqcn: nvidia, paper, hpcc or off");
  }
  c.hosts.np_min_time_between_cnps_us = absl::GetFlag(FLAGS_cnp_interval_us);

  SwitchConfig& s = c.switches;
  s.pfc = absl::GetFlag(FLAGS_pfc);
  s.pfc_dynamic_shift = absl::GetFlag(FLAGS_pfc_dynamic_shift);
  s.ecn = absl::GetFlag(FLAGS_ecn);
  s.seed = absl::GetFlag(FLAGS_seed);
  s.red.pmax = absl::GetFlag(FLAGS_pmax);
  for (auto [flag, out] :
       {std::pair{&FLAGS_pfc_xoff, &s.pfc_xoff_bytes},
        std::pair{&FLAGS_pfc_xon, &s.pfc_xon_bytes},
        std::pair{&FLAGS_headroom, &s.headroom_bytes},
        std::pair{&FLAGS_buffer, &s.buffer_bytes},
        std::pair{&FLAGS_queue_capacity, &s.queue_capacity_bytes},
        std::pair{&FLAGS_kmin, &s.red.kmin_bytes},
        std::pair{&FLAGS_kmax, &s.red.kmax_bytes}}) {
    absl::StatusOr<uint64_t> v = ParseBytes(absl::GetFlag(*flag));
    if (!v.ok()) return v.status();
    *out = *v;
  }
  absl::StatusOr<uint64_t> ref =
      ParseRateBps(absl::GetFlag(FLAGS_red_reference_rate));
  if (!ref.ok()) return ref.status();
  s.red_reference_rate_bps = *ref;
  absl::Status st = s.red.Validate();
  if (!st.ok()) return st;
  if (s.pfc && s.pfc_dynamic_shift == 0 &&
      s.pfc_xon_bytes >= s.pfc_xoff_bytes) {
    return absl::InvalidArgumentError("--pfc_xon must be below --pfc_xoff");
  }

  FlowDriverConfig& d = c.driver;
  switch (absl::GetFlag(FLAGS_mtu)) {
    case 256:
      d.mtu = rocemu::nic::PathMtu::kMtu256;
      break;
    case 512:
      d.mtu = rocemu::nic::PathMtu::kMtu512;
      break;
    case 1024:
      d.mtu = rocemu::nic::PathMtu::kMtu1024;
      break;
    case 2048:
      d.mtu = rocemu::nic::PathMtu::kMtu2048;
      break;
    case 4096:
      d.mtu = rocemu::nic::PathMtu::kMtu4096;
      break;
    default:
      return absl::InvalidArgumentError("--mtu: 256..4096");
  }
  s.mtu_bytes = rocemu::nic::PathMtuBytes(d.mtu) + 82;
  absl::StatusOr<uint64_t> msg = ParseBytes(absl::GetFlag(FLAGS_message));
  if (!msg.ok()) return msg.status();
  if (*msg == 0 || *msg > (1u << 30)) {
    return absl::InvalidArgumentError("--message: 1 B .. 1 GiB");
  }
  d.message_bytes = static_cast<uint32_t>(*msg);
  d.outstanding = absl::GetFlag(FLAGS_outstanding);
  if (absl::GetFlag(FLAGS_qp_timeout) > 31) {
    return absl::InvalidArgumentError("--qp_timeout: 0..31");
  }
  d.timeout = static_cast<uint8_t>(absl::GetFlag(FLAGS_qp_timeout));
  d.per_host_memory = absl::GetFlag(FLAGS_check_data);

  std::vector<uint64_t> rates;
  {
    // Host link rates, for the offered load.
    std::vector<uint64_t> r(c.topology.hosts, 0);
    for (const LinkSpec& l : c.topology.links) {
      if (l.a < c.topology.hosts) r[l.a] = l.rate_bps;
      if (l.b < c.topology.hosts) r[l.b] = l.rate_bps;
    }
    rates = std::move(r);
  }
  if (!absl::GetFlag(FLAGS_flows).empty()) {
    absl::StatusOr<std::string> t = ReadFile(absl::GetFlag(FLAGS_flows));
    if (!t.ok()) return t.status();
    absl::StatusOr<std::vector<FlowSpec>> f =
        ParseFlowList(*t, c.topology.hosts);
    if (!f.ok()) return f.status();
    c.flows = *f;
  } else {
    std::string cdf_path = absl::GetFlag(FLAGS_cdf);
    if (cdf_path == "websearch" || cdf_path == "hadoop") {
      cdf_path = absl::StrCat(ROCEMU_NS3_WORKLOADS, "/", cdf_path, ".cdf");
    }
    absl::StatusOr<std::string> t = ReadFile(cdf_path);
    if (!t.ok()) return t.status();
    absl::StatusOr<SizeCdf> cdf = SizeCdf::Parse(*t);
    if (!cdf.ok()) return cdf.status();
    PoissonWorkload w;
    w.load = absl::GetFlag(FLAGS_load);
    absl::StatusOr<uint64_t> dur = ParseTimeNs(absl::GetFlag(FLAGS_duration));
    if (!dur.ok()) return dur.status();
    w.duration_ns = *dur;
    std::optional<FlowOp> op = FlowOpFromName(absl::GetFlag(FLAGS_op));
    if (!op.has_value()) return absl::InvalidArgumentError("--op");
    w.op = *op;
    w.seed = absl::GetFlag(FLAGS_seed);
    c.flows = GeneratePoisson(*cdf, w, rates);
  }
  absl::StatusOr<uint64_t> deadline =
      ParseTimeNs(absl::GetFlag(FLAGS_deadline));
  if (!deadline.ok()) return deadline.status();
  c.deadline_ns = *deadline;
  c.scheduler = absl::GetFlag(FLAGS_scheduler);
  c.idle_connections = absl::GetFlag(FLAGS_idle_connections);

  absl::StatusOr<uint64_t> sample = ParseTimeNs(absl::GetFlag(FLAGS_sample));
  if (!sample.ok()) return sample.status();
  c.sample_ns = *sample;
  c.series_flows = absl::GetFlag(FLAGS_series_flows);
  if (c.sample_ns > 0) {
    const std::string q = absl::GetFlag(FLAGS_queues);
    if (q.empty() || q == "all") {
      // Every switch port's RoCE queue (what a small fabric wants).
      uint32_t port_count = 0;
      std::vector<uint32_t> ports(c.topology.switches, 0);
      for (const LinkSpec& l : c.topology.links) {
        for (uint32_t n : {l.a, l.b}) {
          if (n >= c.topology.hosts) ++ports[n - c.topology.hosts];
        }
      }
      for (uint32_t sw = 0; sw < c.topology.switches; ++sw) {
        for (uint32_t p = 0; p < ports[sw]; ++p, ++port_count) {
          c.queues.push_back({sw, static_cast<uint16_t>(p), 3});
        }
      }
    } else {
      for (absl::string_view item : absl::StrSplit(q, ',')) {
        std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
        QueueRef r;
        uint32_t sw = 0, port = 0, prio = 3;
        if (parts.size() < 2 || parts.size() > 3 || parts[0].size() < 2 ||
            parts[0][0] != 's' || parts[1].size() < 2 || parts[1][0] != 'p' ||
            !absl::SimpleAtoi(parts[0].substr(1), &sw) ||
            !absl::SimpleAtoi(parts[1].substr(1), &port) ||
            (parts.size() == 3 &&
             (parts[2].rfind("prio", 0) != 0 ||
              !absl::SimpleAtoi(parts[2].substr(4), &prio)))) {
          return absl::InvalidArgumentError(
              absl::StrCat("--queues: bad '", item, "' (sS:pP[:prioN])"));
        }
        r.sw = sw;
        r.port = static_cast<uint16_t>(port);
        r.prio = static_cast<uint8_t>(prio);
        c.queues.push_back(r);
      }
    }
  }
  for (absl::string_view h : absl::StrSplit(absl::GetFlag(FLAGS_pcap_hosts),
                                            ',', absl::SkipEmpty())) {
    uint32_t v = 0;
    if (!absl::SimpleAtoi(h, &v)) {
      return absl::InvalidArgumentError("--pcap_hosts: host numbers");
    }
    c.pcap_hosts.push_back(v);
  }
  c.pcap_prefix = absl::GetFlag(FLAGS_out) + "/capture";
  return c;
}

absl::Status WriteSeries(const std::string& path, const ScenarioConfig& c,
                         const ScenarioResult& r) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("open ", path));
  std::fprintf(f, "time_us");
  for (const QueueRef& q : c.queues) {
    std::fprintf(f, ",s%u_p%u_prio%u_kb", q.sw, q.port, q.prio);
  }
  const size_t flows = r.samples.empty() ? 0 : r.samples[0].flow_gbps.size();
  for (size_t i = 0; i < flows; ++i) std::fprintf(f, ",flow%zu_gbps", i);
  for (size_t i = 0; i < flows; ++i) std::fprintf(f, ",flow%zu_rp_gbps", i);
  std::fprintf(f, ",pfc_frames,ecn_marks,drops\n");
  for (const Sample& s : r.samples) {
    std::fprintf(f, "%.3f", s.t / 1e3);
    for (uint64_t b : s.queue_bytes) std::fprintf(f, ",%.3f", b / 1e3);
    for (double g : s.flow_gbps) std::fprintf(f, ",%.4f", g);
    for (double g : s.flow_rp_gbps) std::fprintf(f, ",%.4f", g);
    std::fprintf(f, ",%llu,%llu,%llu\n",
                 static_cast<unsigned long long>(s.pfc_frames),
                 static_cast<unsigned long long>(s.ecn_marks),
                 static_cast<unsigned long long>(s.drops));
  }
  return std::fclose(f) == 0 ? absl::OkStatus()
                             : absl::UnavailableError("write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "RoCE fabric scenarios in ns-3 with the rocemu RNIC on every host "
      "(docs/ns3.md)");
  absl::ParseCommandLine(argc, argv);
  const ScenarioConfig c = Must(Configure(), "configuration");
  const std::string out = absl::GetFlag(FLAGS_out);
  const ScenarioResult r = Must(RunScenario(c), "run");

  const std::vector<SlowdownRow> by_size = SlowdownBySize(r.flows);
  const std::vector<SlowdownRow> by_pct =
      SlowdownByPercentile(r.flows, absl::GetFlag(FLAGS_bins));
  const FabricCounters& k = r.counters;
  const double sim_ms = r.end_ns / 1e6;
  std::string summary = absl::StrFormat(
      "topology: %s\n"
      "flows: %d (finished %d, failed %d, unfinished %d), virtual time %.3f "
      "ms\n"
      "run: %d ns-3 events (%d frames on wires, %d wake-ups) in %.2f s wall, "
      "%.2f s CPU (%.0f events/s of CPU, %.2f s CPU per simulated ms); "
      "build %.2f s\n"
      "memory: VmRSS %.1f MB before, %.1f MB built (%.1f KB per host), %.1f MB "
      "with %d idle QPs (%.0f B per QP); VmHWM %.1f MB; peak QPs %d in the "
      "fabric, %d on one host\n"
      "switches: %d PFC frames sent, %d ECN marks, %d tail drops, %d "
      "headroom drops, %d unroutable, fullest buffer %.1f KB\n"
      "hosts: %d PFC frames obeyed, %d CNPs sent, %d handled, %d ignored, "
      "%d retransmissions (%d after a timeout), %d out-of-sequence\n"
      "host receive drops: %d malformed, %d bad ICRC, %d unknown QP, %d "
      "wrong QP state\n\n"
      "FCT slowdown by flow size:\n%s",
      r.topology, r.flows.size(), r.finished, r.failed, r.unfinished, sim_ms,
      r.events, r.frames, r.wakeups, r.wall_s, r.cpu_s,
      r.cpu_s > 0 ? r.events / r.cpu_s : 0.0,
      sim_ms > 0 ? r.cpu_s / sim_ms : 0.0, r.build_wall_s,
      r.rss_before_kb / 1e3, r.rss_built_kb / 1e3,
      static_cast<double>(r.rss_built_kb - r.rss_before_kb) / r.hosts,
      r.rss_idle_kb / 1e3, 2 * c.idle_connections,
      c.idle_connections == 0
          ? 0.0
          : (static_cast<double>(r.rss_idle_kb) - r.rss_built_kb) * 1024 /
                (2.0 * c.idle_connections),
      r.peak_rss_kb / 1e3, r.max_fabric_qps, r.max_host_qps, k.pfc_frames,
      k.ecn_marks, k.tail_drops, k.headroom_drops, k.no_route,
      k.max_switch_buffer / 1e3, k.pfc_frames_rx_host, k.cnp_sent,
      k.cnp_handled, k.cnp_ignored, k.retransmissions, k.local_ack_timeouts,
      k.out_of_sequence, k.rx_malformed, k.rx_icrc, k.rx_unknown_qp,
      k.rx_wrong_state, FormatSlowdownTable(by_size));
  if (c.driver.per_host_memory) {
    absl::StrAppend(
        &summary, "payload check: ",
        r.payload_ok ? "every finished flow's bytes arrived\n" : "MISMATCH\n");
  }
  std::fputs(summary.c_str(), stdout);

  nlohmann::json j;
  j["topology"] = r.topology;
  j["hosts"] = r.hosts;
  j["switches"] = r.switches;
  j["flows"] = r.flows.size();
  j["finished"] = r.finished;
  j["failed"] = r.failed;
  j["unfinished"] = r.unfinished;
  j["virtual_ms"] = sim_ms;
  j["events"] = r.events;
  j["wall_s"] = r.wall_s;
  j["cpu_s"] = r.cpu_s;
  j["frames"] = r.frames;
  j["wakeups"] = r.wakeups;
  j["build_wall_s"] = r.build_wall_s;
  j["rss_before_kb"] = r.rss_before_kb;
  j["rss_built_kb"] = r.rss_built_kb;
  j["rss_idle_kb"] = r.rss_idle_kb;
  j["idle_qps"] = 2 * c.idle_connections;
  j["peak_rss_kb"] = r.peak_rss_kb;
  j["max_fabric_qps"] = r.max_fabric_qps;
  j["max_host_qps"] = r.max_host_qps;
  j["pfc_frames"] = k.pfc_frames;
  j["ecn_marks"] = k.ecn_marks;
  j["tail_drops"] = k.tail_drops;
  j["headroom_drops"] = k.headroom_drops;
  j["cnp_sent"] = k.cnp_sent;
  j["retransmissions"] = k.retransmissions;
  for (const SlowdownRow& row : by_size) {
    j["slowdown_by_size"].push_back({{"min_bytes", row.min_bytes},
                                     {"max_bytes", row.max_bytes},
                                     {"flows", row.flows},
                                     {"p50", row.p50},
                                     {"p95", row.p95},
                                     {"p99", row.p99}});
  }
  bool ok = true;
  for (auto [name, status] :
       {std::pair{"summary.txt",
                  [&] {
                    FILE* f = std::fopen((out + "/summary.txt").c_str(), "w");
                    if (f == nullptr) return absl::UnavailableError("open");
                    std::fputs(summary.c_str(), f);
                    return std::fclose(f) == 0 ? absl::OkStatus()
                                               : absl::UnavailableError("w");
                  }()},
        std::pair{"summary.json",
                  [&] {
                    std::ofstream f(out + "/summary.json");
                    f << j.dump(2) << "\n";
                    return f ? absl::OkStatus()
                             : absl::UnavailableError("write");
                  }()},
        std::pair{"flows.csv", WriteFlowsCsv(out + "/flows.csv", r.flows)},
        std::pair{"slowdown_by_size.csv",
                  WriteSlowdownCsv(out + "/slowdown_by_size.csv", by_size)},
        std::pair{
            "slowdown_by_percentile.csv",
            WriteSlowdownCsv(out + "/slowdown_by_percentile.csv", by_pct)},
        std::pair{"series.csv", c.sample_ns > 0
                                    ? WriteSeries(out + "/series.csv", c, r)
                                    : absl::OkStatus()}}) {
    if (!status.ok()) {
      std::fprintf(stderr, "rocemu-ns3: %s: %s\n", name,
                   status.ToString().c_str());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
