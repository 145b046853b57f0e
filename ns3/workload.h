// What the hosts send: flow sizes drawn from a CDF with Poisson arrivals at
// a given load, or an explicit flow list.
//
// CDF file: lines "bytes cumulative_percent", increasing, ending at 100;
// '#' starts a comment. Sizes between two points are linearly interpolated
// (workloads/websearch.cdf, workloads/hadoop.cdf).
//
// Flow list file: lines "src dst bytes start [op] [stop]": host indices,
// a byte count (units.h), a start time ("0", "10us"), optionally write |
// send | read | ud_send (default write) and a stop time that makes it a
// long-running flow.
#ifndef ROCEMU_NS3_WORKLOAD_H_
#define ROCEMU_NS3_WORKLOAD_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ns3/flow.h"

namespace rocemu::ns3sim {

class SizeCdf {
 public:
  static absl::StatusOr<SizeCdf> Parse(absl::string_view text);
  double MeanBytes() const;
  // The size at cumulative probability u in [0, 1).
  uint64_t Quantile(double u) const;

 private:
  std::vector<std::pair<double, double>> points_;  // (bytes, fraction)
};

struct PoissonWorkload {
  double load = 0.3;  // of each host's link rate, offered by each host
  nic::TimeNs start_ns = 0;
  nic::TimeNs duration_ns = 1'000'000;  // flows start in [start, +duration)
  FlowOp op = FlowOp::kWrite;
  uint64_t seed = 1;
};

// Every host sends flows with exponential inter-arrival times whose mean
// makes its offered load `load` x its link rate, each to a uniformly drawn
// other host. Flows are returned in start-time order.
std::vector<FlowSpec> GeneratePoisson(const SizeCdf& cdf,
                                      const PoissonWorkload& w,
                                      const std::vector<uint64_t>& host_rate);

absl::StatusOr<std::vector<FlowSpec>> ParseFlowList(absl::string_view text,
                                                    uint32_t hosts);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_WORKLOAD_H_
