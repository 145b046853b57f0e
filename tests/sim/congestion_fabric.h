// The congestion scenarios of issue 4 on the simulated network: N RNIC
// senders, each with one RC QP, WRITE into one RNIC receiver through one
// switch whose egress port towards the receiver is the bottleneck. The
// switch marks ECN with pfc_ecn's RED and pauses upstream with pfc_ecn's
// PfcTransmitter (through the simnet switch hooks); the RNICs run the NP,
// DCQCN RP and pacer of nic/congestion_control.h. Used by the sim tests and
// by the scenario driver behind scripts/sim_congestion.sh.
#ifndef ROCEMU_TESTS_SIM_CONGESTION_FABRIC_H_
#define ROCEMU_TESTS_SIM_CONGESTION_FABRIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nic/clock.h"
#include "nic/qp_attr.h"
#include "pfc_ecn/dcqcn_params.h"
#include "pfc_ecn/red_marker.h"

namespace rocemu::sim {

struct FabricOptions {
  int senders = 2;
  uint64_t link_rate_bps = 25'000'000'000;
  nic::TimeNs propagation_delay_ns = 1000;
  nic::PathMtu mtu = nic::PathMtu::kMtu1024;
  // DCQCN reaction point at the senders (NP always on at the receiver: with
  // dcqcn off its CNPs land in rp_cnp_ignored).
  bool dcqcn = true;
  pfc_ecn::DcqcnMode mode = pfc_ecn::DcqcnMode::kNvidia;
  bool ecn_marking = true;  // the switch's RED marker
  pfc_ecn::RedProfile red{
      .kmin_bytes = 10'000, .kmax_bytes = 100'000, .pmax = 0.2};
  bool pfc = true;                   // the switch sends PFC for priority 3
  uint64_t pfc_xoff_bytes = 96'000;  // per ingress port
  uint64_t pfc_xon_bytes = 96'000 - 9216;
  uint64_t queue_capacity_bytes = 1'000'000;  // per egress port and priority
  // Long flows: WRITEs until `duration`, then drain. Incast: bytes_per_sender
  // in total per sender, all starting at once (duration is then a deadline).
  nic::TimeNs duration_ns = 20'000'000;
  uint64_t bytes_per_sender = 0;
  uint32_t message_bytes = 64 * 1024;
  uint32_t outstanding = 8;  // WRITEs in flight per sender
  // The senders' local ACK timeout, 4.096 us x 2^qp_timeout, and retry count.
  uint8_t qp_timeout = 10;  // 4.2 ms
  uint8_t retry_cnt = 7;
  nic::TimeNs sample_ns = 50'000;
  uint64_t seed = 1;
};

struct FabricSample {
  nic::TimeNs t = 0;
  std::vector<double> rate_gbps;     // per flow, payload received this period
  std::vector<double> rp_rate_gbps;  // per flow, DCQCN current rate
  uint64_t queue_bytes = 0;          // bottleneck egress queue, priority 3
  uint64_t pauses = 0;  // PFC frames the switch sent so far (prio 3)
  uint64_t marks = 0;   // CE marks so far
  uint64_t drops = 0;   // tail drops so far
};

struct FabricResult {
  std::vector<FabricSample> samples;
  std::vector<uint64_t> flow_bytes;  // payload received per flow
  bool completed = false;            // every WRITE completed successfully
  bool byte_exact = false;           // receiver memory matches the senders'
  uint64_t drops = 0;
  uint64_t retransmissions = 0;  // completer_retry_err summed
  uint64_t pauses = 0;           // PFC frames sent by the switch (prio 3)
  uint64_t rx_pauses = 0;        // rx_prio3_pause summed over the senders
  uint64_t marks = 0;
  uint64_t cnps = 0;          // np_cnp_sent at the receiver
  uint64_t cnps_handled = 0;  // rp_cnp_handled summed
  uint64_t cnps_ignored = 0;  // rp_cnp_ignored summed
  nic::TimeNs finish_ns = 0;
  uint64_t events = 0;
};

absl::StatusOr<FabricResult> RunFabric(const FabricOptions& options);

// Jain's fairness index of per-flow throughput over samples with t in
// [from, to).
double JainIndex(const FabricResult& r, nic::TimeNs from, nic::TimeNs to);
// Mean bottleneck queue over samples with t in [from, to).
double MeanQueueBytes(const FabricResult& r, nic::TimeNs from, nic::TimeNs to);
// PFC frames the switch sent with t in [from, to).
uint64_t PausesBetween(const FabricResult& r, nic::TimeNs from, nic::TimeNs to);

}  // namespace rocemu::sim

#endif  // ROCEMU_TESTS_SIM_CONGESTION_FABRIC_H_
