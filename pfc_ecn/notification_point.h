// DCQCN notification point (the receiver of a congested flow): turns
// CE-marked RoCE packets into CNPs, at most one per flow per
// np_min_time_between_cnps.
//
// Pacing follows the DCQCN paper's NP (and htsim's): a marked packet makes a
// CNP now if no CNP went to that flow in the last N; marks inside the window
// are absorbed, not deferred. A mark exactly N after the last CNP does send,
// so continuous marking yields exactly one CNP per N. N = 0 sends one CNP per
// marked packet (ConnectX-4's default).
//
// Flows are dense indices chosen by the caller (e.g. a QP table slot); the
// table is sized on the control path, the hot path never allocates.
#ifndef ROCEMU_PFC_ECN_NOTIFICATION_POINT_H_
#define ROCEMU_PFC_ECN_NOTIFICATION_POINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "pfc_ecn/counters.h"
#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

struct NpParams {
  uint32_t np_min_time_between_cnps = 4;  // microseconds
  uint8_t np_cnp_dscp = 48;               // CS6
  uint8_t np_cnp_prio = 6;                // 802.1p priority of CNPs

  absl::Status Validate() const;
};

// What the NP remembers of one flow: when it last sent the flow a CNP.
struct NpFlowState {
  TimeNs last_cnp = 0;
  bool sent_any = false;
};

// The pacing rule for one flow, for owners that keep the flow's state with
// the flow (an RNIC keeps it in the QP) instead of in a NotificationPoint:
// true when a CE-marked packet at `now` makes a CNP, and records it.
inline bool NpCnpDue(NpFlowState& f, TimeNs min_gap_ns, TimeNs now) {
  if (f.sent_any && now - f.last_cnp < min_gap_ns) return false;
  f.sent_any = true;
  f.last_cnp = now;
  return true;
}

// The minimum gap between two CNPs to one flow.
inline TimeNs NpMinGapNs(const NpParams& params) {
  return TimeNs{params.np_min_time_between_cnps} * kNsPerUs;
}

class NotificationPoint {
 public:
  // `params` must have passed Validate().
  NotificationPoint(const NpParams& params, uint32_t num_flows);

  // Control path: grow/shrink the flow table (new flows start idle).
  void Resize(uint32_t num_flows);
  // Control path: forget a flow's history (e.g. QP reset or reuse).
  void ResetFlow(uint32_t flow) { flows_[flow] = NpFlowState{}; }

  // A CE-marked RoCE packet of `flow` arrived: true when a CNP must be sent
  // to the flow's sender now. `flow` must be < num_flows().
  bool OnCeMarkedPacket(uint32_t flow, TimeNs now) {
    ++counters_.np_ecn_marked_roce_packets;
    if (!NpCnpDue(flows_[flow], min_gap_ns_, now)) return false;
    ++counters_.np_cnp_sent;
    return true;
  }

  uint32_t num_flows() const { return static_cast<uint32_t>(flows_.size()); }
  const NpParams& params() const { return params_; }
  // Only the np_* fields are used.
  const FlowCongestionCounters& counters() const { return counters_; }

 private:
  NpParams params_;
  TimeNs min_gap_ns_;
  std::vector<NpFlowState> flows_;
  FlowCongestionCounters counters_;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_NOTIFICATION_POINT_H_
