#include "pfc_ecn/dcqcn_params.h"

namespace rocemu::pfc_ecn {

DcqcnParams DcqcnParams::Nvidia(uint32_t line_rate_mbps) {
  DcqcnParams p;
  p.line_rate_mbps = line_rate_mbps;
  return p;
}

DcqcnParams DcqcnParams::Paper(uint32_t line_rate_mbps) {
  DcqcnParams p;
  p.mode = DcqcnMode::kPaper;
  p.arithmetic = DcqcnArithmetic::kReal;
  p.line_rate_mbps = line_rate_mbps;
  p.rp_time_reset = 55;
  p.rp_byte_reset = 10 * 1000 * 1000 / 64;  // B = 10 MB
  p.rp_threshold = 5;
  p.rp_ai_rate = 40;
  p.rp_hai_rate = 200;
  p.rp_min_dec_fac = 50;  // never binds: the paper's cut is at most 1/2
  p.rp_rate_reduce_monitor_period = 0;
  p.rp_dce_tcp_g = 1020;  // g = 4/1024 = 1/256
  p.rp_dce_tcp_rtt = 55;
  p.rp_initial_alpha_value = 1024;
  p.rp_clamp_tgt_rate = true;  // eq. (1): Rt = Rc on every cut
  p.rp_clamp_tgt_rate_ati = false;
  p.np.np_min_time_between_cnps = 50;
  return p;
}

absl::Status DcqcnParams::Validate() const {
  if (line_rate_mbps == 0) {
    return absl::InvalidArgumentError("DCQCN: line rate must be positive");
  }
  if (rp_time_reset == 0) {
    return absl::InvalidArgumentError("DCQCN: rp_time_reset must be >= 1 us");
  }
  if (rp_dce_tcp_rtt == 0) {
    return absl::InvalidArgumentError("DCQCN: rp_dce_tcp_rtt must be >= 1 us");
  }
  if (rp_dce_tcp_g > 1024) {
    return absl::InvalidArgumentError("DCQCN: rp_dce_tcp_g must be <= 1024");
  }
  if (rp_initial_alpha_value > 1024) {
    return absl::InvalidArgumentError(
        "DCQCN: rp_initial_alpha_value must be <= 1024");
  }
  if (rp_gd > 31) {
    return absl::InvalidArgumentError("DCQCN: rp_gd must be in 0..31");
  }
  if (rp_min_dec_fac > 100) {
    return absl::InvalidArgumentError("DCQCN: rp_min_dec_fac must be <= 100");
  }
  if (rp_min_rate > max_rate_mbps()) {
    return absl::InvalidArgumentError(
        "DCQCN: rp_min_rate must not exceed the maximum rate");
  }
  if (rp_rate_to_set_on_first_cnp > max_rate_mbps()) {
    return absl::InvalidArgumentError(
        "DCQCN: rp_rate_to_set_on_first_cnp exceeds the maximum rate");
  }
  return np.Validate();
}

}  // namespace rocemu::pfc_ecn
