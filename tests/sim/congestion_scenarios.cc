// Runs issue 4's congestion scenarios on the simulated network and writes
// their time series as CSV (one file per scenario) plus a summary line per
// scenario, for scripts/sim_congestion.sh to plot.
//
//   congestion_scenarios --out=DIR [--scenario=all|long2|long4|incast_pfc|
//                         incast_none|incast_both] [--mode=nvidia|paper]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "tests/sim/congestion_fabric.h"

ABSL_FLAG(std::string, out, ".", "directory for the CSV files");
ABSL_FLAG(std::string, scenario, "all",
          "all, long2, long4, incast_pfc, incast_none or incast_both");
ABSL_FLAG(std::string, mode, "nvidia", "DCQCN mode: nvidia or paper");
ABSL_FLAG(double, kmin_kb, 10, "RED Kmin at the bottleneck (KB)");
ABSL_FLAG(double, kmax_kb, 100, "RED Kmax at the bottleneck (KB)");
ABSL_FLAG(double, pmax, 0.2, "RED Pmax at the bottleneck");
ABSL_FLAG(int, long_ms, 20, "virtual duration of the long-flow scenarios");
ABSL_FLAG(int, live_ms, 2000, "virtual duration of the live-incast scenarios");

namespace {

using rocemu::sim::FabricOptions;
using rocemu::sim::FabricResult;

struct Scenario {
  std::string name;
  FabricOptions options;
};

std::vector<Scenario> Scenarios(rocemu::pfc_ecn::DcqcnMode mode) {
  std::vector<Scenario> s;
  const rocemu::pfc_ecn::RedProfile red{
      .kmin_bytes = uint64_t(absl::GetFlag(FLAGS_kmin_kb) * 1000),
      .kmax_bytes = uint64_t(absl::GetFlag(FLAGS_kmax_kb) * 1000),
      .pmax = absl::GetFlag(FLAGS_pmax)};
  for (int n : {2, 4}) {
    FabricOptions o;
    o.senders = n;
    o.mode = mode;
    o.red = red;
    o.duration_ns = uint64_t(absl::GetFlag(FLAGS_long_ms)) * 1'000'000;
    s.push_back({absl::StrFormat("long%d", n), o});
  }
  auto incast = [&](const char* name, bool pfc, bool dcqcn) {
    FabricOptions o;
    o.senders = 8;
    o.mode = mode;
    o.red = red;
    o.pfc = pfc;
    o.dcqcn = dcqcn;
    o.bytes_per_sender = 2 << 20;
    o.duration_ns = 200'000'000;
    o.sample_ns = 20'000;
    s.push_back({name, o});
  };
  incast("incast_pfc", true, false);
  incast("incast_none", false, false);
  incast("incast_both", true, true);
  // The live incast of tests/emulator/net_incast_test.py with the same
  // parameters (1 Gb/s links and bottleneck, 4 KiB MTU, the daemon's RED
  // defaults 40960/163840 B and 20 %, no PFC, 64 KiB WRITEs, perftest's
  // 128 in flight, firmware-default DCQCN at 1 Gb/s), sampled as
  // `rocemu-ctl watch` samples it: what the live run would do if its
  // senders were never short of CPU (scripts/live_vs_sim.sh).
  for (int n : {2, 3}) {
    FabricOptions o;
    o.senders = n;
    o.mode = mode;
    o.link_rate_bps = 1'000'000'000;
    o.mtu = rocemu::nic::PathMtu::kMtu4096;
    o.red = {.kmin_bytes = 40960, .kmax_bytes = 163840, .pmax = 0.2};
    o.pfc = false;
    o.queue_capacity_bytes = 4 << 20;
    o.outstanding = 128;
    // perftest's QP timeout (-u 14, 67 ms). 10 (4.2 ms) is shorter than
    // the 33 ms a full 4 MiB queue holds a frame at 1 Gb/s: with three
    // senders the start-up burst fills it, every frame in flight timed out
    // before its ACK came, and the retries ran out in 125 ms.
    o.qp_timeout = 14;
    o.duration_ns = uint64_t(absl::GetFlag(FLAGS_live_ms)) * 1'000'000;
    o.sample_ns = 50'000'000;
    s.push_back({absl::StrFormat("live%d", n), o});
  }
  return s;
}

bool WriteCsv(const std::string& path, const FabricResult& r) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const size_t n = r.flow_bytes.size();
  std::fprintf(f, "time_us");
  for (size_t i = 0; i < n; ++i) std::fprintf(f, ",flow%zu_gbps", i);
  for (size_t i = 0; i < n; ++i) std::fprintf(f, ",flow%zu_rp_gbps", i);
  std::fprintf(f, ",queue_kb,pfc_frames,ecn_marks,drops\n");
  for (const auto& s : r.samples) {
    std::fprintf(f, "%.1f", s.t / 1e3);
    for (double g : s.rate_gbps) std::fprintf(f, ",%.4f", g);
    for (double g : s.rp_rate_gbps) std::fprintf(f, ",%.4f", g);
    std::fprintf(f, ",%.3f,%llu,%llu,%llu\n", s.queue_bytes / 1e3,
                 static_cast<unsigned long long>(s.pauses),
                 static_cast<unsigned long long>(s.marks),
                 static_cast<unsigned long long>(s.drops));
  }
  return std::fclose(f) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("issue 4 congestion scenarios -> CSV");
  absl::ParseCommandLine(argc, argv);
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::string which = absl::GetFlag(FLAGS_scenario);
  const std::string mode_name = absl::GetFlag(FLAGS_mode);
  if (mode_name != "nvidia" && mode_name != "paper") {
    std::fprintf(stderr, "--mode must be nvidia or paper\n");
    return 2;
  }
  const auto mode = mode_name == "paper" ? rocemu::pfc_ecn::DcqcnMode::kPaper
                                         : rocemu::pfc_ecn::DcqcnMode::kNvidia;
  int ran = 0;
  for (const Scenario& sc : Scenarios(mode)) {
    // "all" is issue 4's set; the live counterparts run when named.
    const bool live = sc.name.rfind("live", 0) == 0;
    if (which == "all" ? live : which != sc.name) continue;
    ++ran;
    absl::StatusOr<FabricResult> r = rocemu::sim::RunFabric(sc.options);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", sc.name.c_str(),
                   r.status().ToString().c_str());
      return 1;
    }
    const std::string path = out + "/" + sc.name + ".csv";
    if (!WriteCsv(path, *r)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    const auto& o = sc.options;
    const bool incast = o.bytes_per_sender != 0;
    const uint64_t half = o.duration_ns / 2;
    std::printf(
        "%s mode=%s completed=%d byte_exact=%d finish_us=%.1f drops=%llu "
        "retransmissions=%llu pfc_frames=%llu ecn_marks=%llu cnp_sent=%llu "
        "rp_cnp_handled=%llu rp_cnp_ignored=%llu",
        sc.name.c_str(), mode_name.c_str(), r->completed, r->byte_exact,
        r->finish_ns / 1e3, static_cast<unsigned long long>(r->drops),
        static_cast<unsigned long long>(r->retransmissions),
        static_cast<unsigned long long>(r->pauses),
        static_cast<unsigned long long>(r->marks),
        static_cast<unsigned long long>(r->cnps),
        static_cast<unsigned long long>(r->cnps_handled),
        static_cast<unsigned long long>(r->cnps_ignored));
    if (!incast) {
      std::printf(
          " jain_2nd_half=%.4f mean_queue_kb_2nd_half=%.1f "
          "pfc_frames_2nd_half=%llu",
          rocemu::sim::JainIndex(*r, half, o.duration_ns),
          rocemu::sim::MeanQueueBytes(*r, half, o.duration_ns) / 1e3,
          static_cast<unsigned long long>(
              rocemu::sim::PausesBetween(*r, half, o.duration_ns)));
    }
    std::printf("\n");
  }
  if (ran == 0) {
    std::fprintf(stderr, "unknown --scenario %s\n", which.c_str());
    return 2;
  }
  return 0;
}
