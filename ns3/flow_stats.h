// Flow completion times and slowdowns. A flow's slowdown is its completion
// time over the ideal one: the same bytes alone on an idle path, i.e.
// serialization of payload plus per-packet headers at the path's slowest
// link, the last packet's store-and-forward at each further hop, the
// propagation there and back, and the acknowledgement's serialization.
#ifndef ROCEMU_NS3_FLOW_STATS_H_
#define ROCEMU_NS3_FLOW_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ns3/fabric.h"
#include "ns3/flow.h"

namespace rocemu::ns3sim {

struct FlowRecord {
  uint32_t id = 0;
  FlowSpec spec;
  FlowResult result;
  nic::TimeNs fct_ns = 0;    // finish - start (finished flows)
  nic::TimeNs ideal_ns = 0;  // alone on the path
  double slowdown = 0;
};

// Wire bytes per packet besides payload: Ethernet 14, IPv4 20, UDP 8, BTH
// 12, ICRC 4, and preamble, FCS and gap 24.
inline constexpr uint32_t kPacketOverheadBytes = 82;

nic::TimeNs IdealFctNs(uint64_t bytes, uint32_t payload_per_packet,
                       const PathInfo& path);

struct SlowdownRow {
  uint64_t min_bytes = 0;  // flows in [min_bytes, max_bytes]
  uint64_t max_bytes = 0;
  uint32_t flows = 0;
  double p50 = 0, p95 = 0, p99 = 0, mean = 0;
};

// Fixed size buckets (decades from 1 KB), over finished flows.
std::vector<SlowdownRow> SlowdownBySize(const std::vector<FlowRecord>& flows);
// `bins` groups of equal flow count in size order (the HPCC paper's x
// axis: flow-size percentiles).
std::vector<SlowdownRow> SlowdownByPercentile(
    const std::vector<FlowRecord>& flows, uint32_t bins);

absl::Status WriteFlowsCsv(const std::string& path,
                           const std::vector<FlowRecord>& flows);
absl::Status WriteSlowdownCsv(const std::string& path,
                              const std::vector<SlowdownRow>& rows);
std::string FormatSlowdownTable(const std::vector<SlowdownRow>& rows);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FLOW_STATS_H_
