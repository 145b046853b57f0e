#include "pfc_ecn/pfc_thresholds.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace rocemu::pfc_ecn {
namespace {

constexpr uint32_t kMinSpeedMbps = 40000;
constexpr uint64_t kJumboMtu = 9216;

}  // namespace

uint64_t Mlx5XoffHeadroomBytes(uint32_t speed_mbps, uint32_t cable_length_m,
                               uint32_t mtu_bytes) {
  const uint64_t speed = std::max(speed_mbps, kMinSpeedMbps);
  const uint64_t per_gbps = 301 + uint64_t{216} * cable_length_m / 100;
  return per_gbps * speed / 1000 + uint64_t{272} * mtu_bytes / 100;
}

absl::StatusOr<PfcThresholds> DeriveMlx5Thresholds(const Mlx5BufferParams& p) {
  if (p.speed_mbps == 0 || p.mtu_bytes == 0) {
    return absl::InvalidArgumentError("speed and MTU must be positive");
  }
  const uint64_t headroom =
      Mlx5XoffHeadroomBytes(p.speed_mbps, p.cable_length_m, p.mtu_bytes);
  const uint64_t max_mtu = std::max<uint64_t>(p.mtu_bytes, kJumboMtu);
  if (p.buffer_size_bytes < headroom + max_mtu + p.cell_size_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "lossless buffer of %d bytes is smaller than headroom %d + max MTU "
        "%d + cell %d",
        p.buffer_size_bytes, headroom, max_mtu, p.cell_size_bytes));
  }
  PfcThresholds t;
  t.xoff_bytes = p.buffer_size_bytes - headroom;
  t.xon_bytes = t.xoff_bytes - max_mtu;
  return t;
}

}  // namespace rocemu::pfc_ecn
