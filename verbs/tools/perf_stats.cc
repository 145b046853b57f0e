#include "verbs/tools/perf_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

std::string Common(const JsonContext& c, uint64_t bytes, uint64_t iters) {
  const PerfOptions& o = *c.options;
  std::string s = absl::StrFormat(
      "{\"test\":\"%s\",\"bytes\":%u,\"iterations\":%u,\"iterations_asked\":"
      "%u,\"qps\":%u,\"tx_depth\":%u,\"mtu\":%u,\"memory\":\"%s\","
      "\"verify\":%s,\"verified\":%s,\"peer_iterations\":%u",
      c.test, bytes, iters, o.iters, o.num_qps, o.tx_depth, o.mtu,
      o.memory == Memory::kShm ? "shm" : "malloc", o.verify ? "true" : "false",
      c.verified ? "true" : "false", c.peer_iterations);
  if (o.verb == Verb::kAtomic) {
    absl::StrAppend(&s, ",\"atomic\":\"", AtomicOpName(o.atomic_op), "\"");
  }
  return s;
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
  return absl::StrCat(
      Common(c, r.bytes, r.iterations),
      // Significant digits, not decimals: slow links must not print 0.
      absl::StrFormat(",\"seconds\":%.9g,\"bw_peak_gbps\":%.6g,"
                      "\"bw_avg_gbps\":%.6g,\"msg_rate_mpps\":%.6g}",
                      r.seconds, r.peak_gbps, r.avg_gbps, r.mpps));
}

std::string LatJson(const JsonContext& c, const LatResult& r) {
  return absl::StrCat(
      Common(c, r.bytes, r.iterations),
      absl::StrFormat(
          ",\"t_min_us\":%.3f,\"t_max_us\":%.3f,\"t_typical_us\":%.3f,"
          "\"t_avg_us\":%.3f,\"t_stdev_us\":%.3f,\"p50_us\":%.3f,"
          "\"p99_us\":%.3f,\"p99_9_us\":%.3f}",
          r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.p50_us,
          r.p99_us, r.p999_us));
}

}  // namespace rocemu::verbs::perf
