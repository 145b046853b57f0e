// Congestion settings of one RNIC port: how RoCE frames are marked for the
// network (DSCP, 802.1p priority, ECN capability), the DCQCN notification and
// reaction points (mlx5 cc_params names, in pfc_ecn::DcqcnParams) and which
// PFC/PAUSE frames the port obeys.
#ifndef ROCEMU_NIC_CONGESTION_CONFIG_H_
#define ROCEMU_NIC_CONGESTION_CONFIG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "pfc_ecn/dcqcn_params.h"
#include "pfc_ecn/pfc_receiver.h"

namespace rocemu::nic {

struct CongestionConfig {
  // RoCE data and responses: ECT(0) unless disabled (then Not-ECT, so no
  // switch marks them and DCQCN never engages).
  bool ecn_capable = true;
  // Traffic class of RoCE frames whose address vector leaves it at 0: DSCP
  // 26 (AF31) on 802.1p priority 3, the usual lossless RoCE class.
  uint8_t roce_dscp = 26;
  uint8_t roce_prio = 3;
  // Notification point on/off (mlx5 roce_np_enable); its pacing and the
  // CNP's DSCP/priority are dcqcn.np (np_min_time_between_cnps 4 us,
  // np_cnp_dscp 48, np_cnp_prio 6).
  bool np_enabled = true;
  // Reaction point: dcqcn.enabled = false counts CNPs in rp_cnp_ignored and
  // leaves every QP at line rate. mode kNvidia | kPaper.
  pfc_ecn::DcqcnParams dcqcn = pfc_ecn::DcqcnParams::Nvidia(100000);
  // The PFC/PAUSE frames obeyed on the port; port_rate_bps must be the link
  // rate (a quantum is 512 bit times at that rate).
  pfc_ecn::PfcReceiverConfig pfc_rx;
  // CNPs waiting for the wire; more are dropped and counted.
  uint32_t cnp_queue_len = 256;
  // Burst tolerance of the per-QP pacer (bytes sent back to back after idle).
  uint64_t pacer_burst_bytes = 0;

  absl::Status Validate() const;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CONGESTION_CONFIG_H_
