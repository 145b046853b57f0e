// rocemu-perf's figures and how they are printed: perftest's columns for
// people, one JSON object per result for scripts.
#ifndef ROCEMU_VERBS_TOOLS_PERF_STATS_H_
#define ROCEMU_VERBS_TOOLS_PERF_STATS_H_

#include <cstdint>
#include <span>
#include <string>

#include "verbs/tools/perf_options.h"

namespace rocemu::verbs::perf {

struct BwResult {
  uint64_t bytes = 0;       // message size
  uint64_t iterations = 0;  // completed
  double seconds = 0;       // first post to last completion
  double peak_gbps = 0;
  double avg_gbps = 0;
  double mpps = 0;
};

struct LatResult {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  double min_us = 0, max_us = 0, typical_us = 0, avg_us = 0, stdev_us = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;
};

// `done_ns[i]`: monotonic time of the i-th completion (ascending), `start_ns`
// the first post. Peak: the best rate over any `window` consecutive
// completions (perftest takes its peak from the fastest iteration; over a
// window, one lucky completion does not make the peak).
BwResult ComputeBw(uint64_t bytes, int64_t start_ns,
                   std::span<const int64_t> done_ns, uint64_t window);
// Sorts `samples_ns` in place (it is the caller's preallocated array).
LatResult ComputeLat(uint64_t bytes, std::span<int64_t> samples_ns);

std::string BwHeader();
std::string LatHeader();
std::string BwLine(const BwResult& r);
std::string LatLine(const LatResult& r);

// What every JSON line carries besides the figures.
struct JsonContext {
  std::string test;
  const PerfOptions* options = nullptr;
  uint64_t peer_iterations = 0;  // what the server counted (send tests)
  bool verified = false;
};
std::string BwJson(const JsonContext& c, const BwResult& r);
std::string LatJson(const JsonContext& c, const LatResult& r);

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_STATS_H_
