// DCQCN parameters under the names of mlx5's cc_params (debugfs) and the
// NVIDIA firmware, with ConnectX defaults; Paper() maps the SIGCOMM'15
// constants onto the same knobs. Units are the firmware's: rates in Mb/s,
// times in microseconds, alpha and gain in 1/1024, byte counter in 64 B.
#ifndef ROCEMU_PFC_ECN_DCQCN_PARAMS_H_
#define ROCEMU_PFC_ECN_DCQCN_PARAMS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "pfc_ecn/notification_point.h"

namespace rocemu::pfc_ecn {

enum class DcqcnMode : uint8_t {
  // ConnectX firmware: CNPs raise flags; alpha, cut and increase run on
  // their own periodic timers (rp_dce_tcp_rtt, rp_rate_reduce_monitor_period,
  // rp_time_reset).
  kNvidia,
  // Zhu et al. 2015: every CNP cuts at once and updates alpha; alpha decays
  // every K without a CNP; fast recovery for F rounds, then AI, then HAI.
  kPaper,
};

enum class DcqcnArithmetic : uint8_t {
  // Real numbers (double): HPCC's ns-3 model and the paper's equations.
  kReal,
  // The firmware's integers: alpha in 1/1024 (truncating), rates in whole
  // Mb/s (truncating), as Google Isekai models ConnectX.
  kFixedPoint,
};

struct DcqcnParams {
  DcqcnMode mode = DcqcnMode::kNvidia;
  DcqcnArithmetic arithmetic = DcqcnArithmetic::kFixedPoint;
  // CC on for this flow's priority (ROCE_CC_PRIO_MASK); when false CNPs are
  // counted in rp_cnp_ignored and the rate stays at line rate.
  bool enabled = true;

  uint32_t line_rate_mbps = 100000;  // the port; not a firmware knob

  uint32_t rp_time_reset = 300;    // us, increase timer
  uint32_t rp_byte_reset = 32767;  // 64 B units, byte counter; 0 = off
  uint32_t rp_threshold = 1;       // stages of fast recovery (F)
  uint32_t rp_ai_rate = 5;         // Mb/s, additive increase step
  uint32_t rp_hai_rate = 50;       // Mb/s, hyper increase step
  uint32_t rp_gd = 11;             // cut = Rc * alpha_1024 >> rp_gd
  uint32_t rp_min_dec_fac = 50;    // %, one cut keeps >= this of Rc
  uint32_t rp_min_rate = 1;        // Mb/s
  uint32_t rp_max_rate = 0;        // Mb/s, 0 = line rate
  uint32_t rp_rate_reduce_monitor_period = 4;  // us, 0 = cut on each CNP
  uint32_t rp_dce_tcp_g = 1019;              // alpha <- alpha*G/1024 (+1024-G)
  uint32_t rp_dce_tcp_rtt = 1;               // us, alpha update period (K)
  uint32_t rp_initial_alpha_value = 1023;    // 1/1024; 1024 = exactly 1.0
  uint32_t rp_rate_to_set_on_first_cnp = 0;  // Mb/s, 0 = keep the rate
  bool rp_clamp_tgt_rate = false;            // Rt = Rc on every cut
  bool rp_clamp_tgt_rate_ati = true;  // ... once a timer increase happened

  NpParams np;

  // ConnectX firmware defaults at `line_rate_mbps`.
  static DcqcnParams Nvidia(uint32_t line_rate_mbps);
  // The paper's constants (N = 50 us, K = Tp = 55 us, B = 10 MB, F = 5,
  // g = 1/256, RAI = 40 Mb/s, RHAI = 200 Mb/s, alpha_0 = 1), real arithmetic.
  static DcqcnParams Paper(uint32_t line_rate_mbps);

  uint32_t max_rate_mbps() const {
    return rp_max_rate == 0 || rp_max_rate > line_rate_mbps ? line_rate_mbps
                                                            : rp_max_rate;
  }

  absl::Status Validate() const;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_DCQCN_PARAMS_H_
