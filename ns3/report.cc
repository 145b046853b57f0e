#include "ns3/report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ns3/flow_stats.h"

namespace rocemu::ns3sim {

namespace {

// Bytes per QP of the idle connections, from the resident memory they added.
double BytesPerIdleQp(const ScenarioConfig& c, const ScenarioResult& r) {
  if (c.idle_connections == 0) return 0;
  return (static_cast<double>(r.rss_idle_kb) -
          static_cast<double>(r.rss_built_kb)) *
         1024 / (2.0 * c.idle_connections);
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  return f ? absl::OkStatus()
           : absl::UnavailableError(absl::StrCat("cannot write ", path));
}

}  // namespace

std::string FormatSummary(const ScenarioConfig& c, const ScenarioResult& r) {
  const FabricCounters& k = r.counters;
  const double sim_ms = static_cast<double>(r.end_ns) / 1e6;
  // One line per call: GCC cannot check a format against its arguments at
  // compile time, and a mismatch yields an empty string.
  std::string s;
  absl::StrAppendFormat(&s, "topology: %s\n", r.topology);
  absl::StrAppendFormat(
      &s,
      "flows: %d (finished %d, failed %d, unfinished %d), virtual time %.3f "
      "ms\n",
      r.flows.size(), r.finished, r.failed, r.unfinished, sim_ms);
  absl::StrAppendFormat(
      &s,
      "run: %d ns-3 events (%d frames on wires, %d wake-ups) in %.2f s wall, "
      "%.2f s CPU (%.0f events/s of CPU, %.2f s CPU per simulated ms); build "
      "%.2f s\n",
      r.events, r.frames, r.wakeups, r.wall_s, r.cpu_s,
      r.cpu_s > 0 ? static_cast<double>(r.events) / r.cpu_s : 0.0,
      sim_ms > 0 ? r.cpu_s / sim_ms : 0.0, r.build_wall_s);
  absl::StrAppendFormat(
      &s,
      "memory: VmRSS %.1f MB before, %.1f MB built (%.1f KB per host), %.1f "
      "MB with %d idle QPs (%.0f B per QP); VmHWM %.1f MB; peak QPs %d in "
      "the fabric, %d on one host\n",
      r.rss_before_kb / 1e3, r.rss_built_kb / 1e3,
      (static_cast<double>(r.rss_built_kb) -
       static_cast<double>(r.rss_before_kb)) /
          std::max<uint32_t>(1, r.hosts),
      r.rss_idle_kb / 1e3, 2 * c.idle_connections, BytesPerIdleQp(c, r),
      r.peak_rss_kb / 1e3, r.max_fabric_qps, r.max_host_qps);
  absl::StrAppendFormat(
      &s,
      "switches: %d PFC frames sent, %d ECN marks, %d tail drops, %d "
      "headroom drops, %d unroutable, fullest buffer %.1f KB\n",
      k.pfc_frames, k.ecn_marks, k.tail_drops, k.headroom_drops, k.no_route,
      k.max_switch_buffer / 1e3);
  absl::StrAppendFormat(
      &s,
      "hosts: %d PFC frames obeyed, %d CNPs sent (%d dropped), %d handled, "
      "%d ignored, %d retransmissions (%d after a timeout), %d "
      "out-of-sequence\n",
      k.pfc_frames_rx_host, k.cnp_sent, k.cnp_dropped, k.cnp_handled,
      k.cnp_ignored, k.retransmissions, k.local_ack_timeouts,
      k.out_of_sequence);
  absl::StrAppendFormat(&s,
                        "host receive drops: %d malformed, %d bad ICRC, %d "
                        "unknown QP, %d wrong QP state\n",
                        k.rx_malformed, k.rx_icrc, k.rx_unknown_qp,
                        k.rx_wrong_state);
  if (c.driver.per_host_memory) {
    absl::StrAppend(
        &s, "payload check: ",
        r.payload_ok ? "every finished flow's bytes arrived\n" : "MISMATCH\n");
  }
  absl::StrAppend(&s, "\nFCT slowdown by flow size:\n",
                  FormatSlowdownTable(SlowdownBySize(r.flows)));
  return s;
}

nlohmann::json SummaryJson(const ScenarioConfig& c, const ScenarioResult& r) {
  const FabricCounters& k = r.counters;
  nlohmann::json j;
  j["topology"] = r.topology;
  j["hosts"] = r.hosts;
  j["switches"] = r.switches;
  j["flows"] = r.flows.size();
  j["finished"] = r.finished;
  j["failed"] = r.failed;
  j["unfinished"] = r.unfinished;
  j["virtual_ms"] = static_cast<double>(r.end_ns) / 1e6;
  j["events"] = r.events;
  j["frames"] = r.frames;
  j["wakeups"] = r.wakeups;
  j["wall_s"] = r.wall_s;
  j["cpu_s"] = r.cpu_s;
  j["build_wall_s"] = r.build_wall_s;
  j["rss_before_kb"] = r.rss_before_kb;
  j["rss_built_kb"] = r.rss_built_kb;
  j["rss_idle_kb"] = r.rss_idle_kb;
  j["idle_qps"] = 2 * c.idle_connections;
  j["peak_rss_kb"] = r.peak_rss_kb;
  j["max_fabric_qps"] = r.max_fabric_qps;
  j["max_host_qps"] = r.max_host_qps;
  j["pfc_frames"] = k.pfc_frames;
  j["pfc_frames_rx_host"] = k.pfc_frames_rx_host;
  j["ecn_marks"] = k.ecn_marks;
  j["tail_drops"] = k.tail_drops;
  j["headroom_drops"] = k.headroom_drops;
  j["no_route"] = k.no_route;
  j["cnp_sent"] = k.cnp_sent;
  j["cnp_dropped"] = k.cnp_dropped;
  j["cnp_handled"] = k.cnp_handled;
  j["retransmissions"] = k.retransmissions;
  j["local_ack_timeouts"] = k.local_ack_timeouts;
  j["max_switch_buffer"] = k.max_switch_buffer;
  j["slowdown_by_size"] = nlohmann::json::array();
  for (const SlowdownRow& row : SlowdownBySize(r.flows)) {
    j["slowdown_by_size"].push_back({{"min_bytes", row.min_bytes},
                                     {"max_bytes", row.max_bytes},
                                     {"flows", row.flows},
                                     {"p50", row.p50},
                                     {"p95", row.p95},
                                     {"p99", row.p99}});
  }
  return j;
}

absl::Status WriteSeriesCsv(const std::string& path, const ScenarioConfig& c,
                            const ScenarioResult& r) {
  std::string s = "time_us";
  for (const QueueRef& q : c.queues) {
    absl::StrAppendFormat(&s, ",s%d_p%d_prio%d_kb", q.sw, q.port, q.prio);
  }
  const size_t flows = r.samples.empty() ? 0 : r.samples[0].flow_gbps.size();
  for (size_t i = 0; i < flows; ++i) absl::StrAppend(&s, ",flow", i, "_gbps");
  for (size_t i = 0; i < flows; ++i) {
    absl::StrAppend(&s, ",flow", i, "_rp_gbps");
  }
  absl::StrAppend(&s, ",pfc_frames,ecn_marks,drops\n");
  for (const Sample& x : r.samples) {
    absl::StrAppendFormat(&s, "%.3f", x.t / 1e3);
    for (uint64_t b : x.queue_bytes)
      absl::StrAppendFormat(&s, ",%.3f", b / 1e3);
    for (double g : x.flow_gbps) absl::StrAppendFormat(&s, ",%.4f", g);
    for (double g : x.flow_rp_gbps) absl::StrAppendFormat(&s, ",%.4f", g);
    absl::StrAppendFormat(&s, ",%d,%d,%d\n", x.pfc_frames, x.ecn_marks,
                          x.drops);
  }
  return WriteText(path, s);
}

absl::Status WriteOutputs(const std::string& dir, const ScenarioConfig& c,
                          const ScenarioResult& r, uint32_t bins) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  absl::Status first;
  auto keep = [&first](absl::Status st) {
    if (first.ok() && !st.ok()) first = st;
  };
  keep(WriteText(dir + "/summary.txt", FormatSummary(c, r)));
  keep(WriteText(dir + "/summary.json", SummaryJson(c, r).dump(2) + "\n"));
  keep(WriteFlowsCsv(dir + "/flows.csv", r.flows));
  keep(
      WriteSlowdownCsv(dir + "/slowdown_by_size.csv", SlowdownBySize(r.flows)));
  keep(WriteSlowdownCsv(dir + "/slowdown_by_percentile.csv",
                        SlowdownByPercentile(r.flows, bins)));
  if (c.sample_ns > 0) keep(WriteSeriesCsv(dir + "/series.csv", c, r));
  return first;
}

}  // namespace rocemu::ns3sim
