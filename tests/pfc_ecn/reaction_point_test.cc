// DCQCN reaction point against the worked trajectories of
// shared/reference/congestion.md §2.4 and the semantics chosen in
// docs/congestion.md.
#include "pfc_ecn/reaction_point.h"

#include <cmath>

#include "gtest/gtest.h"

namespace rocemu::pfc_ecn {
namespace {

constexpr TimeNs kUs = 1000;

void ExpectRel(double actual, double expected, double rel = 1e-4) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * rel)
      << "actual " << actual << " expected " << expected;
}

// (a) Paper rules at 40G, one CNP at t = 0, timer-only increases.
TEST(ReactionPointPaper, TrajectoryA) {
  const DcqcnParams p = DcqcnParams::Paper(40000);
  ASSERT_TRUE(p.Validate().ok());
  ReactionPoint rp(&p);
  EXPECT_EQ(rp.current_rate_mbps(), 40000);
  EXPECT_EQ(rp.NextEventTime(), kNever);

  rp.OnCnp(0);
  ExpectRel(rp.current_rate_mbps(), 20000);
  ExpectRel(rp.target_rate_mbps(), 40000);
  ExpectRel(rp.alpha(), 1.0);
  EXPECT_EQ(rp.rp_cnp_handled(), 1u);

  const double fr[] = {30000, 35000, 37500, 38750, 39375};
  const double alpha[] = {0.996094, 0.992203, 0.988327, 0.984466, 0.980621};
  for (int k = 0; k < 5; ++k) {
    const TimeNs t = (k + 1) * 55 * kUs;
    EXPECT_EQ(rp.NextEventTime(), t);
    rp.OnTime(t - 1);
    EXPECT_NE(rp.current_rate_mbps(), fr[k]) << "increase came early";
    rp.OnTime(t);
    ExpectRel(rp.current_rate_mbps(), fr[k]);
    ExpectRel(rp.target_rate_mbps(), 40000);
    ExpectRel(rp.alpha(), alpha[k]);
  }
  // From T = 6: additive increase, Rt capped at the line rate.
  double rc = 39375;
  for (int k = 6; k <= 9; ++k) {
    rp.OnTime(k * 55 * kUs);
    rc = (rc + 40000) / 2;
    ExpectRel(rp.current_rate_mbps(), rc);
    ExpectRel(rp.target_rate_mbps(), 40000);
    EXPECT_EQ(rp.time_stage(), static_cast<uint32_t>(k));
  }
}

// Paper: AI below the cap, and HAI by i = min(T, BC) - F steps of RHAI.
TEST(ReactionPointPaper, AdditiveAndHyperIncrease) {
  const DcqcnParams p = DcqcnParams::Paper(40000);
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnCnp(10 * kUs);  // Rt = Rc = 20000, Rc = 20000 * (1 - 1/2)
  ExpectRel(rp.target_rate_mbps(), 20000);
  ExpectRel(rp.current_rate_mbps(), 10000);
  double rc = 10000, rt = 20000;
  TimeNs t = 10 * kUs;
  for (int k = 1; k <= 6; ++k) {
    t += 55 * kUs;
    rp.OnTime(t);
    if (k == 6) rt += p.rp_ai_rate;  // T = 6 > F
    rc = (rc + rt) / 2;
    ExpectRel(rp.current_rate_mbps(), rc);
    ExpectRel(rp.target_rate_mbps(), rt);
  }
  // Six byte-counter rounds (B = 10 MB each): BC 1..5 are AI (T = 6 > F),
  // BC = 6 makes min(T, BC) = 6 > F: HAI with i = 1.
  const uint64_t b = uint64_t{p.rp_byte_reset} * 64;
  for (int bc = 1; bc <= 6; ++bc) {
    rp.OnBytesSent(b, t + 1);
    rt += bc < 6 ? p.rp_ai_rate : p.rp_hai_rate;
    rc = (rc + rt) / 2;
    ExpectRel(rp.target_rate_mbps(), rt);
    ExpectRel(rp.current_rate_mbps(), rc);
  }
  EXPECT_EQ(rp.byte_stage(), 6u);
  // T = 7, BC = 6: i = 1. Then 12 more BC rounds: T = 7 caps i at 2.
  t += 55 * kUs;
  rp.OnTime(t);
  rt += p.rp_hai_rate;
  rc = (rc + rt) / 2;
  ExpectRel(rp.target_rate_mbps(), rt);
  rp.OnBytesSent(b, t + 1);  // BC = 7: min(7, 7) - 5 = 2
  rt += 2.0 * p.rp_hai_rate;
  rc = (rc + rt) / 2;
  ExpectRel(rp.target_rate_mbps(), rt);
  ExpectRel(rp.current_rate_mbps(), rc);
}

// Paper: the cut uses the alpha from before the CNP, then alpha rises.
TEST(ReactionPointPaper, CutBeforeAlphaUpdate) {
  const DcqcnParams p = DcqcnParams::Paper(40000);
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(550 * kUs);  // ten decays: alpha = (255/256)^10
  const double a = std::pow(255.0 / 256.0, 10);
  ExpectRel(rp.alpha(), a);
  const double rc = rp.current_rate_mbps();
  rp.OnCnp(550 * kUs + 1);
  ExpectRel(rp.current_rate_mbps(), rc * (1 - a / 2));
  ExpectRel(rp.target_rate_mbps(), rc);
  ExpectRel(rp.alpha(), a * 255.0 / 256.0 + 1.0 / 256.0);
}

DcqcnParams HpccDcqcn() {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.arithmetic = DcqcnArithmetic::kReal;
  p.rp_dce_tcp_g = 1020;  // g = 1/256
  p.rp_dce_tcp_rtt = 1;
  p.rp_rate_reduce_monitor_period = 4;
  p.rp_time_reset = 300;
  p.rp_threshold = 1;
  p.rp_ai_rate = 20;
  p.rp_hai_rate = 200;
  p.rp_initial_alpha_value = 1024;  // alpha = 1 exactly
  p.rp_byte_reset = 0;              // HPCC has no byte counter
  p.rp_min_rate = 1000;
  return p;
}

// (b) The HPCC ns-3 firmware model at 100G.
TEST(ReactionPointNvidia, TrajectoryB) {
  const DcqcnParams p = HpccDcqcn();
  ASSERT_TRUE(p.Validate().ok());
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  EXPECT_EQ(rp.current_rate_mbps(), 100000);  // first CNP does not cut now
  EXPECT_EQ(rp.NextEventTime(), 4 * kUs);
  rp.OnTime(4 * kUs - 1);
  EXPECT_EQ(rp.current_rate_mbps(), 100000);
  rp.OnTime(4 * kUs);
  ExpectRel(rp.alpha(), 0.984466);
  ExpectRel(rp.current_rate_mbps(), 50776.7);
  ExpectRel(rp.target_rate_mbps(), 100000);  // no clamp at stage 0

  EXPECT_EQ(rp.NextEventTime(), 304 * kUs);
  rp.OnTime(304 * kUs);
  ExpectRel(rp.alpha(), 0.304274);
  ExpectRel(rp.current_rate_mbps(), 75388.3);
  const double rc[] = {87694.2, 93847.1, 96923.5, 98461.8};
  for (int k = 0; k < 4; ++k) {
    const TimeNs t = (604 + 300 * k) * kUs;
    EXPECT_EQ(rp.NextEventTime(), t);
    rp.OnTime(t);
    ExpectRel(rp.current_rate_mbps(), rc[k]);
    ExpectRel(rp.target_rate_mbps(), 100000);
  }
}

// (c) The firmware's integer arithmetic (Isekai model), exact.
TEST(ReactionPointNvidia, TrajectoryCExact) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  // Alpha ticks slower than the 4 us monitor, so the cut sees alpha = 1023.
  p.rp_dce_tcp_rtt = 55;
  ASSERT_TRUE(p.Validate().ok());
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(4 * kUs);
  EXPECT_EQ(rp.alpha() * 1024, 1023);
  EXPECT_EQ(rp.current_rate_mbps(), 50049);  // 100000 - (100000*1023 >> 11)
  EXPECT_EQ(rp.target_rate_mbps(), 100000);
  const double rc[] = {75024, 87512, 93756, 96878};
  for (int k = 0; k < 4; ++k) {
    const TimeNs t = (304 + 300 * k) * kUs;
    EXPECT_EQ(rp.NextEventTime(), t);
    rp.OnTime(t);
    EXPECT_EQ(rp.current_rate_mbps(), rc[k]) << k;
    EXPECT_EQ(rp.target_rate_mbps(), 100000);
  }
}

TEST(ReactionPointNvidia, FixedPointAlphaDecayWithoutCnp) {
  const DcqcnParams p = DcqcnParams::Nvidia(100000);
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  EXPECT_EQ(rp.alpha() * 1024, 1023);
  const double seq[] = {1018, 1013, 1008, 1003, 998, 993};
  for (int k = 0; k < 6; ++k) {
    rp.OnTime((k + 1) * kUs);
    EXPECT_EQ(rp.alpha() * 1024, seq[k]) << k;
  }
  // Lazy catch-up over a long idle equals tick-by-tick replay.
  ReactionPoint a(&p), b(&p);
  a.OnCnp(0);
  b.OnCnp(0);
  for (TimeNs t = 1; t <= 300; ++t) a.OnTime(t * kUs);
  b.OnTime(300 * kUs);
  EXPECT_EQ(a.alpha(), b.alpha());
  EXPECT_EQ(a.current_rate_mbps(), b.current_rate_mbps());
  EXPECT_GT(b.alpha(), 0.0);
  b.OnTime(10'000 * kUs);
  EXPECT_EQ(b.alpha(), 0.0);
}

TEST(ReactionPointNvidia, FixedPointAlphaUnderContinuousCnps) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  for (uint32_t start : {820u, 900u, 1023u}) {
    p.rp_initial_alpha_value = start;
    ReactionPoint rp(&p);
    rp.OnCnp(0);
    for (int k = 1; k <= 50; ++k) {
      rp.OnCnp(k * kUs - 500);  // one CNP inside every alpha period
      rp.OnTime(k * kUs);
      EXPECT_EQ(rp.alpha() * 1024, start) << "start " << start << " k " << k;
    }
  }
  // From below 820, truncation lets alpha climb only to 820.
  p.rp_initial_alpha_value = 1;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  double prev = 1;
  for (int k = 1; k <= 2000; ++k) {
    rp.OnCnp(k * kUs - 500);
    rp.OnTime(k * kUs);
    EXPECT_GE(rp.alpha() * 1024, prev);
    prev = rp.alpha() * 1024;
  }
  EXPECT_EQ(prev, 820);
}

TEST(ReactionPointNvidia, CnpsWithinOneMonitorPeriodCutOnce) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.rp_dce_tcp_rtt = 55;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnCnp(1 * kUs);
  rp.OnCnp(3 * kUs);
  rp.OnTime(4 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 50049);
  EXPECT_EQ(rp.rp_cnp_handled(), 3u);
  // No CNP since: the next monitor tick does nothing.
  rp.OnTime(8 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 50049);
  EXPECT_EQ(rp.NextEventTime(), 304 * kUs);
  // A CNP at 9 us is cut on the monitor grid (12 us), not at once.
  rp.OnCnp(9 * kUs);
  EXPECT_EQ(rp.NextEventTime(), 12 * kUs);
  rp.OnTime(12 * kUs);
  EXPECT_LT(rp.current_rate_mbps(), 50049);
}

TEST(ReactionPointNvidia, RateToSetOnFirstCnpReplacesTheCut) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.rp_rate_to_set_on_first_cnp = 85000;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  EXPECT_EQ(rp.current_rate_mbps(), 85000);
  EXPECT_EQ(rp.target_rate_mbps(), 85000);
  EXPECT_EQ(rp.NextEventTime(), 300 * kUs);  // no cut pending
  rp.OnTime(200 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 85000);
  rp.OnCnp(201 * kUs);  // the second CNP cuts at the next tick (204 us)
  EXPECT_EQ(rp.NextEventTime(), 204 * kUs);
  rp.OnTime(204 * kUs);
  EXPECT_LT(rp.current_rate_mbps(), 85000);
}

TEST(ReactionPointNvidia, ClampTargetRateAfterTimerIncrease) {
  for (bool ati : {true, false}) {
    DcqcnParams p = DcqcnParams::Nvidia(100000);
    p.rp_clamp_tgt_rate_ati = ati;
    ReactionPoint rp(&p);
    rp.OnCnp(0);
    rp.OnTime(4 * kUs);
    rp.OnTime(304 * kUs);  // one timer increase: stage_t = 1
    ASSERT_EQ(rp.time_stage(), 1u);
    const double rc = rp.current_rate_mbps();
    rp.OnCnp(310 * kUs);
    rp.OnTime(312 * kUs);
    EXPECT_EQ(rp.target_rate_mbps(), ati ? rc : 100000) << ati;
    EXPECT_LT(rp.current_rate_mbps(), rc);
    EXPECT_EQ(rp.time_stage(), 0u);
  }
}

TEST(ReactionPointNvidia, ByteCounterAndStageClassification) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.rp_clamp_tgt_rate = true;  // Rt below the cap makes AI/HAI visible
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(4 * kUs);
  const double rc_first_cut = rp.current_rate_mbps();
  rp.OnCnp(5 * kUs);
  rp.OnTime(8 * kUs);  // clamp: Rt = Rc before this cut
  const double rt0 = rp.target_rate_mbps();
  ASSERT_EQ(rt0, rc_first_cut);
  ASSERT_LT(rt0, 100000);
  const uint64_t b = uint64_t{p.rp_byte_reset} * 64;
  // Stages are classified before they advance (threshold F = 1):
  // byte event 1 (T=0,BC=0) FR; byte 2 (0,1) AI; timer (0,2) AI;
  // timer (1,2) AI; byte 3 (2,2) HAI.
  double rt = rt0, rc = rp.current_rate_mbps();
  auto step = [&](double inc) {
    rt = std::min(rt + inc, 100000.0);
    rc = std::floor((rc + rt) / 2);
    EXPECT_EQ(rp.target_rate_mbps(), rt);
    EXPECT_EQ(rp.current_rate_mbps(), rc);
  };
  rp.OnBytesSent(b - 1, 9 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), rc);  // not a full round yet
  rp.OnBytesSent(1, 9 * kUs);
  step(0);
  rp.OnBytesSent(b, 10 * kUs);
  step(p.rp_ai_rate);
  rp.OnTime(308 * kUs);
  step(p.rp_ai_rate);
  rp.OnTime(608 * kUs);
  step(p.rp_ai_rate);
  rp.OnBytesSent(b, 609 * kUs);
  step(p.rp_hai_rate);
  EXPECT_EQ(rp.byte_stage(), 3u);
  EXPECT_EQ(rp.time_stage(), 2u);
}

TEST(ReactionPointNvidia, MinRateAndMinDecFac) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.rp_min_dec_fac = 80;  // one cut keeps at least 80 %
  p.rp_min_rate = 60000;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(4 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 80000);
  rp.OnCnp(5 * kUs);
  rp.OnTime(8 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 64000);
  rp.OnCnp(9 * kUs);
  rp.OnTime(12 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 60000);  // floor at rp_min_rate
}

TEST(ReactionPointNvidia, RecoversToLineRateAndGoesQuiet) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.arithmetic = DcqcnArithmetic::kReal;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(4 * kUs);
  // Drive by NextEventTime only: the rate must climb back and the timers
  // must stop once nothing can change.
  int events = 0;
  while (rp.NextEventTime() != kNever && events < 1000) {
    rp.OnTime(rp.NextEventTime());
    ++events;
  }
  EXPECT_LT(events, 1000);
  EXPECT_EQ(rp.current_rate_mbps(), 100000);
  EXPECT_EQ(rp.current_rate_bps(), 100'000'000'000u);
}

TEST(ReactionPoint, DisabledCountsIgnored) {
  DcqcnParams p = DcqcnParams::Nvidia(100000);
  p.enabled = false;
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(1000 * kUs);
  EXPECT_EQ(rp.current_rate_mbps(), 100000);
  EXPECT_EQ(rp.rp_cnp_ignored(), 1u);
  EXPECT_EQ(rp.rp_cnp_handled(), 0u);
}

TEST(ReactionPoint, ResetReturnsToLineRate) {
  const DcqcnParams p = DcqcnParams::Nvidia(100000);
  ReactionPoint rp(&p);
  rp.OnCnp(0);
  rp.OnTime(4 * kUs);
  rp.Reset();
  EXPECT_EQ(rp.current_rate_mbps(), 100000);
  EXPECT_FALSE(rp.active());
  EXPECT_EQ(rp.NextEventTime(), kNever);
}

TEST(DcqcnParams, DefaultsAndValidation) {
  const DcqcnParams n = DcqcnParams::Nvidia(100000);
  EXPECT_TRUE(n.Validate().ok());
  EXPECT_EQ(n.rp_time_reset, 300u);
  EXPECT_EQ(n.rp_byte_reset, 32767u);
  EXPECT_EQ(n.rp_dce_tcp_g, 1019u);
  EXPECT_EQ(n.rp_gd, 11u);
  EXPECT_EQ(n.max_rate_mbps(), 100000u);
  DcqcnParams bad = n;
  bad.rp_min_dec_fac = 101;
  EXPECT_FALSE(bad.Validate().ok());
  bad = n;
  bad.rp_time_reset = 0;
  EXPECT_FALSE(bad.Validate().ok());
  bad = n;
  bad.rp_rate_to_set_on_first_cnp = 200000;
  EXPECT_FALSE(bad.Validate().ok());
  bad = n;
  bad.rp_max_rate = 25000;
  EXPECT_EQ(bad.max_rate_mbps(), 25000u);
  EXPECT_TRUE(DcqcnParams::Paper(40000).Validate().ok());
}

}  // namespace
}  // namespace rocemu::pfc_ecn
