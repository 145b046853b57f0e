// One fabric run in ns-3: build the topology (fabric.h), set up the hosts'
// applications (flow_driver.h), start the flows, run ns-3's simulator until
// every flow has finished or the deadline, and collect flow completion
// times, counters, optional time series and the run's own cost (events,
// wall time, peak memory).
#ifndef ROCEMU_NS3_SCENARIO_H_
#define ROCEMU_NS3_SCENARIO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ns3/fabric.h"
#include "ns3/flow_driver.h"
#include "ns3/flow_stats.h"
#include "ns3/roce_switch.h"
#include "ns3/topology.h"

namespace rocemu::ns3sim {

struct QueueRef {
  uint32_t sw = 0;
  uint16_t port = 0;
  uint8_t prio = 3;
};

struct ScenarioConfig {
  TopologySpec topology;
  SwitchConfig switches;
  HostOptions hosts;
  FlowDriverConfig driver;
  std::vector<FlowSpec> flows;
  // The run stops here even if flows are unfinished.
  nic::TimeNs deadline_ns = 1'000'000'000;
  // Time series, every sample_ns when > 0: these queues' depth, and the
  // rate of the first `series_flows` flows (payload completed in the
  // period, and their requester's DCQCN rate).
  nic::TimeNs sample_ns = 0;
  std::vector<QueueRef> queues;
  uint32_t series_flows = 0;
  // Idle RC connections opened between random host pairs before the run
  // (their memory is reported per QP).
  uint32_t idle_connections = 0;
  // ns-3 scheduler: "calendar" (fastest here), "map" (ns-3's default),
  // "priority", "heap" or "list".
  std::string scheduler = "calendar";
  // Per-packet capture of these hosts' ports (pcap, one file per host
  // named <pcap_prefix>-h<N>.pcap); empty: none.
  std::vector<uint32_t> pcap_hosts;
  std::string pcap_prefix;
};

struct Sample {
  nic::TimeNs t = 0;
  std::vector<uint64_t> queue_bytes;  // per ScenarioConfig::queues
  std::vector<double> flow_gbps;      // per sampled flow
  std::vector<double> flow_rp_gbps;   // requester's DCQCN rate (line rate
                                      // until its first CNP)
  uint64_t pfc_frames = 0;            // sent by every switch so far
  uint64_t ecn_marks = 0;
  uint64_t drops = 0;
};

struct FabricCounters {
  uint64_t pfc_frames = 0;          // PFC frames switches sent, all priorities
  uint64_t pfc_frames_rx_host = 0;  // PFC frames the hosts obeyed
  uint64_t ecn_marks = 0;
  uint64_t tail_drops = 0;
  uint64_t headroom_drops = 0;
  uint64_t no_route = 0;
  uint64_t cnp_sent = 0;
  uint64_t cnp_handled = 0;
  uint64_t cnp_ignored = 0;
  uint64_t retransmissions = 0;  // completer_retry_err
  uint64_t out_of_sequence = 0;
  uint64_t local_ack_timeouts = 0;  // local_ack_timeout_err
  // Frames the RNICs dropped on receive: malformed (a bad IPv4 checksum
  // included), bad ICRC, unknown QP, QP in the wrong state, bad opcode.
  uint64_t rx_malformed = 0;
  uint64_t rx_icrc = 0;
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_wrong_state = 0;
  uint64_t max_switch_buffer = 0;  // bytes, the fullest switch
};

struct ScenarioResult {
  std::string topology;
  uint32_t hosts = 0;
  uint32_t switches = 0;
  std::vector<FlowRecord> flows;
  uint32_t finished = 0;
  uint32_t failed = 0;
  uint32_t unfinished = 0;
  bool payload_ok = false;  // with per_host_memory
  std::vector<Sample> samples;
  FabricCounters counters;
  std::vector<uint64_t> switch_frames;  // frames each switch sent
  nic::TimeNs end_ns = 0;               // virtual time at the end of the run
  uint64_t events = 0;                  // ns-3 events executed
  uint64_t frames = 0;   // frames put on a wire (every hop counted)
  uint64_t wakeups = 0;  // timer wake-ups of hosts and switches
  double cpu_s = 0;      // user + system CPU time of the run
  double wall_s = 0;     // run only (not the build)
  double build_wall_s = 0;
  uint64_t rss_before_kb = 0;  // VmRSS before building the fabric
  uint64_t rss_built_kb = 0;   // after building and setting up the hosts
  uint64_t rss_idle_kb = 0;    // after opening the idle connections too
  uint64_t peak_rss_kb = 0;    // VmHWM at the end
  uint32_t max_host_qps = 0;
  uint64_t max_fabric_qps = 0;
};

absl::StatusOr<ScenarioResult> RunScenario(const ScenarioConfig& config);

// What /proc/self/status says, in KiB (0 if unreadable).
uint64_t ReadStatusKb(const char* field);

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_SCENARIO_H_
