#include "pfc_ecn/counters.h"

namespace rocemu::pfc_ecn {

PortCongestionCounters& PortCongestionCounters::operator+=(
    const PortCongestionCounters& o) {
  for (int p = 0; p < kNumPriorities; ++p) {
    rx_prio_pause[p] += o.rx_prio_pause[p];
    tx_prio_pause[p] += o.tx_prio_pause[p];
    rx_prio_pause_duration[p] += o.rx_prio_pause_duration[p];
  }
  rx_global_pause += o.rx_global_pause;
  tx_global_pause += o.tx_global_pause;
  rx_global_pause_duration += o.rx_global_pause_duration;
  return *this;
}

FlowCongestionCounters& FlowCongestionCounters::operator+=(
    const FlowCongestionCounters& o) {
  np_ecn_marked_roce_packets += o.np_ecn_marked_roce_packets;
  np_cnp_sent += o.np_cnp_sent;
  rp_cnp_handled += o.rp_cnp_handled;
  rp_cnp_ignored += o.rp_cnp_ignored;
  return *this;
}

}  // namespace rocemu::pfc_ecn
