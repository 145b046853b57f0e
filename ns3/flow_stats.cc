#include "ns3/flow_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rocemu::ns3sim {

namespace {

// Control packets (ACK, READ request): 62 bytes plus preamble, FCS, gap.
constexpr uint64_t kControlWireBytes = 86;

double Ns(uint64_t bytes, uint64_t rate_bps) {
  return static_cast<double>(bytes) * 8e9 / static_cast<double>(rate_bps);
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(
      v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - (p > 0));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

SlowdownRow Row(const std::vector<const FlowRecord*>& group) {
  SlowdownRow r;
  std::vector<double> s;
  for (const FlowRecord* f : group) s.push_back(f->slowdown);
  r.flows = static_cast<uint32_t>(s.size());
  if (s.empty()) return r;
  r.min_bytes = group.front()->spec.bytes;
  r.max_bytes = group.front()->spec.bytes;
  double sum = 0;
  for (const FlowRecord* f : group) {
    r.min_bytes = std::min(r.min_bytes, f->spec.bytes);
    r.max_bytes = std::max(r.max_bytes, f->spec.bytes);
    sum += f->slowdown;
  }
  r.mean = sum / static_cast<double>(s.size());
  r.p50 = Percentile(s, 0.50);
  r.p95 = Percentile(s, 0.95);
  r.p99 = Percentile(s, 0.99);
  return r;
}

std::vector<const FlowRecord*> Finished(const std::vector<FlowRecord>& flows) {
  std::vector<const FlowRecord*> out;
  for (const FlowRecord& f : flows) {
    if (f.result.done && f.spec.stop_ns == 0) out.push_back(&f);
  }
  return out;
}

}  // namespace

nic::TimeNs IdealFctNs(uint64_t bytes, uint32_t payload, const PathInfo& p) {
  const uint64_t packets =
      std::max<uint64_t>(1, (bytes + payload - 1) / payload);
  const uint64_t wire = bytes + packets * kPacketOverheadBytes;
  const uint64_t last =
      std::min<uint64_t>(bytes, payload) + kPacketOverheadBytes;
  const double ns = Ns(wire, p.min_rate_bps) +
                    (p.links - 1) * Ns(last, p.min_rate_bps) +
                    2.0 * static_cast<double>(p.delay_ns) +
                    p.links * Ns(kControlWireBytes, p.min_rate_bps);
  return static_cast<nic::TimeNs>(std::llround(ns));
}

std::vector<SlowdownRow> SlowdownBySize(const std::vector<FlowRecord>& flows) {
  static constexpr uint64_t kEdges[] = {
      0, 1'000, 10'000, 100'000, 1'000'000, 10'000'000, UINT64_MAX};
  std::vector<SlowdownRow> rows;
  const std::vector<const FlowRecord*> done = Finished(flows);
  for (size_t b = 0; b + 1 < std::size(kEdges); ++b) {
    std::vector<const FlowRecord*> g;
    for (const FlowRecord* f : done) {
      if (f->spec.bytes >= kEdges[b] && f->spec.bytes < kEdges[b + 1]) {
        g.push_back(f);
      }
    }
    SlowdownRow r = Row(g);
    r.min_bytes = kEdges[b];
    r.max_bytes = kEdges[b + 1] == UINT64_MAX ? UINT64_MAX : kEdges[b + 1] - 1;
    rows.push_back(r);
  }
  return rows;
}

std::vector<SlowdownRow> SlowdownByPercentile(
    const std::vector<FlowRecord>& flows, uint32_t bins) {
  std::vector<const FlowRecord*> done = Finished(flows);
  std::stable_sort(done.begin(), done.end(),
                   [](const FlowRecord* a, const FlowRecord* b) {
                     return a->spec.bytes < b->spec.bytes;
                   });
  std::vector<SlowdownRow> rows;
  if (done.empty() || bins == 0) return rows;
  for (uint32_t b = 0; b < bins; ++b) {
    const size_t from = done.size() * b / bins;
    const size_t to = done.size() * (b + 1) / bins;
    if (from == to) continue;
    rows.push_back(Row({done.begin() + from, done.begin() + to}));
  }
  return rows;
}

absl::Status WriteFlowsCsv(const std::string& path,
                           const std::vector<FlowRecord>& flows) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("open ", path));
  std::fprintf(f,
               "id,src,dst,op,bytes,start_ns,finish_ns,fct_ns,ideal_ns,"
               "slowdown,status\n");
  for (const FlowRecord& r : flows) {
    const char* status =
        r.result.done ? "done" : (r.result.failed ? "failed" : "unfinished");
    std::fprintf(f, "%u,%u,%u,%s,%llu,%llu,%llu,%llu,%llu,%.4f,%s\n", r.id,
                 r.spec.src, r.spec.dst, FlowOpName(r.spec.op),
                 static_cast<unsigned long long>(r.spec.bytes),
                 static_cast<unsigned long long>(r.spec.start_ns),
                 static_cast<unsigned long long>(r.result.finish_ns),
                 static_cast<unsigned long long>(r.fct_ns),
                 static_cast<unsigned long long>(r.ideal_ns), r.slowdown,
                 status);
  }
  return std::fclose(f) == 0 ? absl::OkStatus()
                             : absl::UnavailableError("write " + path);
}

absl::Status WriteSlowdownCsv(const std::string& path,
                              const std::vector<SlowdownRow>& rows) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("open ", path));
  std::fprintf(f, "min_bytes,max_bytes,flows,p50,p95,p99,mean\n");
  for (const SlowdownRow& r : rows) {
    std::fprintf(f, "%llu,%llu,%u,%.4f,%.4f,%.4f,%.4f\n",
                 static_cast<unsigned long long>(r.min_bytes),
                 static_cast<unsigned long long>(r.max_bytes), r.flows, r.p50,
                 r.p95, r.p99, r.mean);
  }
  return std::fclose(f) == 0 ? absl::OkStatus()
                             : absl::UnavailableError("write " + path);
}

std::string FormatSlowdownTable(const std::vector<SlowdownRow>& rows) {
  std::string s = absl::StrFormat("%-22s %7s %8s %8s %8s %8s\n", "flow size",
                                  "flows", "p50", "p95", "p99", "mean");
  for (const SlowdownRow& r : rows) {
    const std::string range =
        r.max_bytes == UINT64_MAX
            ? absl::StrFormat(">= %d B", r.min_bytes)
            : absl::StrFormat("%d-%d B", r.min_bytes, r.max_bytes);
    absl::StrAppendFormat(&s, "%-22s %7d %8.2f %8.2f %8.2f %8.2f\n", range,
                          r.flows, r.p50, r.p95, r.p99, r.mean);
  }
  return s;
}

}  // namespace rocemu::ns3sim
