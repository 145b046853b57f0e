#include "verbs/tools/perf_stats.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "verbs/server/json_writer.h"

namespace rocemu::verbs::perf {
namespace {

double Gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0;
}

// Nearest-rank percentile of a sorted array.
double Percentile(std::span<const int64_t> sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * sorted.size()));
  if (rank == 0) rank = 1;
  return static_cast<double>(sorted[std::min(rank, sorted.size()) - 1]);
}

// The fields every result line starts with.
nlohmann::ordered_json Common(const JsonContext& c, uint64_t bytes,
                              uint64_t iters) {
  const PerfOptions& o = *c.options;
  nlohmann::ordered_json j = {
      {"test", c.test},
      {"bytes", bytes},
      {"iterations", iters},
      {"iterations_asked", o.iters},
      {"qps", o.num_qps},
      {"tx_depth", o.tx_depth},
      {"mtu", o.mtu},
      {"memory", o.memory == Memory::kShm ? "shm" : "malloc"},
      {"verify", o.verify},
      {"verified", c.verified},
      {"peer_iterations", c.peer_iterations}};
  if (o.verb == Verb::kAtomic) j["atomic"] = AtomicOpName(o.atomic_op);
  return j;
}

}  // namespace

BwResult ComputeBw(uint64_t bytes, int64_t start_ns,
                   std::span<const int64_t> done_ns, uint64_t window) {
  BwResult r;
  r.bytes = bytes;
  r.iterations = done_ns.size();
  if (done_ns.empty()) return r;
  r.seconds = static_cast<double>(done_ns.back() - start_ns) / 1e9;
  r.avg_gbps = Gbps(bytes * r.iterations, r.seconds);
  r.mpps = r.seconds > 0 ? r.iterations / r.seconds / 1e6 : 0;
  window = std::clamp<uint64_t>(window, 1, done_ns.size());
  // Messages per nanosecond over each window; the first one starts at the
  // first post.
  double best = static_cast<double>(window) /
                std::max<int64_t>(1, done_ns[window - 1] - start_ns);
  for (size_t i = window; i < done_ns.size(); ++i) {
    const int64_t d = std::max<int64_t>(1, done_ns[i] - done_ns[i - window]);
    best = std::max(best, static_cast<double>(window) / d);
  }
  r.peak_gbps = std::max(best * 1e9 * bytes * 8 / 1e9, r.avg_gbps);
  return r;
}

LatResult ComputeLat(uint64_t bytes, std::span<int64_t> s) {
  LatResult r;
  r.bytes = bytes;
  r.iterations = s.size();
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (int64_t v : s) sum += static_cast<double>(v);
  const double avg = sum / s.size();
  double var = 0;
  for (int64_t v : s) var += (v - avg) * (v - avg);
  r.min_us = s.front() / 1e3;
  r.max_us = s.back() / 1e3;
  r.avg_us = avg / 1e3;
  r.stdev_us = std::sqrt(var / s.size()) / 1e3;
  r.p50_us = Percentile(s, 0.50) / 1e3;
  r.typical_us = r.p50_us;
  r.p99_us = Percentile(s, 0.99) / 1e3;
  r.p999_us = Percentile(s, 0.999) / 1e3;
  return r;
}

std::string BwHeader() {
  return absl::StrFormat(" %-10s %-12s %-18s %-20s %-14s", "#bytes",
                         "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]",
                         "MsgRate[Mpps]");
}

std::string LatHeader() {
  return absl::StrFormat(
      " %-10s %-12s %-12s %-12s %-16s %-12s %-14s %-22s %-22s", "#bytes",
      "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
      "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]",
      "99.9% percentile[usec]");
}

std::string BwLine(const BwResult& r) {
  return absl::StrFormat(" %-10u %-12u %-18.2f %-20.2f %-14.6f", r.bytes,
                         r.iterations, r.peak_gbps, r.avg_gbps, r.mpps);
}

std::string LatLine(const LatResult& r) {
  return absl::StrFormat(
      " %-10u %-12u %-12.2f %-12.2f %-16.2f %-12.2f %-14.2f %-22.2f %-22.2f",
      r.bytes, r.iterations, r.min_us, r.max_us, r.typical_us, r.avg_us,
      r.stdev_us, r.p99_us, r.p999_us);
}

std::string BwJson(const JsonContext& c, const BwResult& r) {
  nlohmann::ordered_json j = Common(c, r.bytes, r.iterations);
  // Significant digits, not decimals: slow links must not print 0.
  j["seconds"] = RoundToSignificant(r.seconds, 9);
  j["bw_peak_gbps"] = RoundToSignificant(r.peak_gbps, 6);
  j["bw_avg_gbps"] = RoundToSignificant(r.avg_gbps, 6);
  j["msg_rate_mpps"] = RoundToSignificant(r.mpps, 6);
  return DumpJson(j);
}

std::string LatJson(const JsonContext& c, const LatResult& r) {
  nlohmann::ordered_json j = Common(c, r.bytes, r.iterations);
  j["t_min_us"] = RoundToDecimals(r.min_us, 3);
  j["t_max_us"] = RoundToDecimals(r.max_us, 3);
  j["t_typical_us"] = RoundToDecimals(r.typical_us, 3);
  j["t_avg_us"] = RoundToDecimals(r.avg_us, 3);
  j["t_stdev_us"] = RoundToDecimals(r.stdev_us, 3);
  j["p50_us"] = RoundToDecimals(r.p50_us, 3);
  j["p99_us"] = RoundToDecimals(r.p99_us, 3);
  j["p99_9_us"] = RoundToDecimals(r.p999_us, 3);
  return DumpJson(j);
}

}  // namespace rocemu::verbs::perf
