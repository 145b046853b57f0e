// XOFF/XON thresholds of a lossless receive buffer, derived the way Linux
// mlx5 (en/port_buffer.c) sizes ConnectX port buffers.
//
// The headroom above XOFF must absorb what is still in flight once we decide
// to pause: the round trip of the cable plus the peer's response delay at the
// port speed, and a couple of maximum-size frames:
//   headroom = (301 + 2.16 * cable_m) * speed_Gbps + 2.72 * mtu     [bytes]
// with speed floored at 40 Gb/s, in mlx5's integer form
//   (301 + 216 * cable_m / 100) * speed_Mbps / 1000 + 272 * mtu / 100.
// Then xoff = buffer_size - headroom and xon = xoff - max(mtu, 9216): one
// jumbo frame of hysteresis so XON does not chase XOFF on every packet.
#ifndef ROCEMU_PFC_ECN_PFC_THRESHOLDS_H_
#define ROCEMU_PFC_ECN_PFC_THRESHOLDS_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace rocemu::pfc_ecn {

struct PfcThresholds {
  uint64_t xoff_bytes = 0;  // send XOFF when occupancy reaches this
  uint64_t xon_bytes = 0;   // send XON when occupancy falls to this
};

struct Mlx5BufferParams {
  uint64_t buffer_size_bytes = 156096;  // as `mlnx_qos` shows for a lossless
                                        // buffer on ConnectX
  uint32_t speed_mbps = 100000;
  uint32_t cable_length_m = 7;  // mlnx_qos default
  uint32_t mtu_bytes = 1500;
  uint32_t cell_size_bytes = 128;  // buffer granule; firmware-reported on HW
};

// mlx5's xoff headroom in bytes (35680 at 100G, 7 m, MTU 1500).
uint64_t Mlx5XoffHeadroomBytes(uint32_t speed_mbps, uint32_t cable_length_m,
                               uint32_t mtu_bytes);

// Thresholds for a lossless buffer; InvalidArgument when the buffer is too
// small to hold headroom + one jumbo frame + one cell (mlx5 refuses it too).
absl::StatusOr<PfcThresholds> DeriveMlx5Thresholds(const Mlx5BufferParams& p);

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_PFC_THRESHOLDS_H_
