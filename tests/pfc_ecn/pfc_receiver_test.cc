#include "pfc_ecn/pfc_receiver.h"

#include <array>

#include "gtest/gtest.h"

namespace rocemu::pfc_ecn {
namespace {

constexpr RateBps k100G = 100ull * 1000 * 1000 * 1000;
constexpr RateBps k10G = 10ull * 1000 * 1000 * 1000;

std::array<uint16_t, kNumPriorities> Quanta(int prio, uint16_t q) {
  std::array<uint16_t, kNumPriorities> a{};
  a[prio] = q;
  return a;
}

TEST(PauseQuantaToNs, MatchesTableOfReference) {
  // 512 bit times per quantum: 51.2 ns at 10G, 5.12 ns at 100G.
  EXPECT_EQ(PauseQuantaToNs(10, k10G), 512u);
  EXPECT_EQ(PauseQuantaToNs(100, k100G), 512u);
  // 0xFFFF at 100G = 335539.2 ns, rounded up so the pause never ends early.
  EXPECT_EQ(PauseQuantaToNs(0xFFFF, k100G), 335540u);
  EXPECT_EQ(PauseQuantaToNs(0, k100G), 0u);
}

TEST(PfcReceiver, PausesOnlyThatPriorityForQuantaTimes512BitTimes) {
  PfcReceiver rx({.port_rate_bps = k10G});
  const TimeNs t0 = 1'000'000;
  const uint16_t q = 1000;  // 1000 * 51.2 ns = 51.2 us at 10G
  rx.OnPfcFrame(t0, 1u << 3, Quanta(3, q));
  const TimeNs end = t0 + 512 * q * 1'000'000'000ull / k10G;
  EXPECT_EQ(end, t0 + 51'200);
  EXPECT_TRUE(rx.IsPaused(3, t0));
  EXPECT_TRUE(rx.IsPaused(3, end - 1));
  EXPECT_FALSE(rx.IsPaused(3, end));
  EXPECT_EQ(rx.ResumeTime(3, t0), end);
  EXPECT_EQ(rx.NextResumeTime(t0 + 10), end);
  EXPECT_EQ(rx.NextResumeTime(end), kNever);
  for (int p = 0; p < kNumPriorities; ++p) {
    if (p == 3) continue;
    EXPECT_FALSE(rx.IsPaused(p, t0 + 1)) << p;
  }
  EXPECT_EQ(rx.PausedMask(t0 + 1), 1u << 3);
  EXPECT_EQ(rx.PausedMask(end), 0u);
  EXPECT_EQ(rx.PauseDurationNs(3, end + 5000), end - t0);
  EXPECT_EQ(rx.rx_prio_pause(3), 1u);
  EXPECT_EQ(rx.rx_prio_pause(2), 0u);
}

TEST(PfcReceiver, MaximumPauseAt100G) {
  PfcReceiver rx({.port_rate_bps = k100G});
  rx.OnPfcFrame(0, 1u << 3, Quanta(3, 0xFFFF));
  EXPECT_TRUE(rx.IsPaused(3, 335'539));
  EXPECT_FALSE(rx.IsPaused(3, 335'540));
}

TEST(PfcReceiver, XonResumesAtOnce) {
  PfcReceiver rx({.port_rate_bps = k100G});
  rx.OnPfcFrame(100, 1u << 3, Quanta(3, 0xFFFF));
  ASSERT_TRUE(rx.IsPaused(3, 5000));
  rx.OnPfcFrame(5000, 1u << 3, Quanta(3, 0));
  EXPECT_FALSE(rx.IsPaused(3, 5000));
  EXPECT_EQ(rx.ResumeTime(3, 5000), 5000u);
  EXPECT_EQ(rx.PauseDurationNs(3, 1'000'000), 4900u);
  EXPECT_EQ(rx.rx_prio_pause(3), 2u);
}

TEST(PfcReceiver, RefreshExtendsFromTheNewFrame) {
  PfcReceiver rx({.port_rate_bps = k10G});
  rx.OnPfcFrame(0, 1u << 5, Quanta(5, 100));  // 5120 ns
  rx.OnPfcFrame(4000, 1u << 5, Quanta(5, 100));
  EXPECT_TRUE(rx.IsPaused(5, 5120));
  EXPECT_TRUE(rx.IsPaused(5, 9119));
  EXPECT_FALSE(rx.IsPaused(5, 9120));
  // One continuous pause interval, not two overlapping ones.
  EXPECT_EQ(rx.PauseDurationNs(5, 20'000), 9120u);
}

TEST(PfcReceiver, DurationAccumulatesOverSeparatePauses) {
  PfcReceiver rx({.port_rate_bps = k10G});
  rx.OnPfcFrame(0, 1u << 1, Quanta(1, 10));       // 512 ns
  rx.OnPfcFrame(10'000, 1u << 1, Quanta(1, 20));  // 1024 ns
  EXPECT_EQ(rx.PauseDurationNs(1, 10'500), 512u + 500u);
  EXPECT_EQ(rx.PauseDurationNs(1, 50'000), 512u + 1024u);
  PortCongestionCounters c;
  rx.FillCounters(2'000'000, c);
  EXPECT_EQ(c.rx_prio_pause[1], 2u);
  EXPECT_EQ(c.rx_prio_pause_duration[1], 1u);  // 1536 ns -> 1 us
}

TEST(PfcReceiver, OneFrameCanPauseSeveralPrioritiesDifferently) {
  PfcReceiver rx({.port_rate_bps = k10G});
  std::array<uint16_t, kNumPriorities> q{};
  q[3] = 100;  // 5120 ns
  q[6] = 10;   // 512 ns
  q[0] = 500;  // enable bit clear: must be ignored
  rx.OnPfcFrame(0, (1u << 3) | (1u << 6), q);
  EXPECT_EQ(rx.PausedMask(1), (1u << 3) | (1u << 6));
  EXPECT_EQ(rx.PausedMask(600), 1u << 3);
  EXPECT_FALSE(rx.IsPaused(0, 1));
  EXPECT_EQ(rx.NextResumeTime(1), 512u);
  EXPECT_EQ(rx.rx_prio_pause(0), 0u);
}

TEST(PfcReceiver, PriorityNotEnabledIsNotObeyed) {
  PfcReceiver rx({.port_rate_bps = k10G, .pfc_enable = 1u << 3});
  rx.OnPfcFrame(0, 1u << 4, Quanta(4, 100));
  EXPECT_FALSE(rx.IsPaused(4, 1));
  EXPECT_EQ(rx.rx_prio_pause(4), 0u);
}

TEST(PfcReceiver, Ieee8023xPauseStopsAllPriorities) {
  PfcReceiver rx({.port_rate_bps = k10G});
  rx.OnPauseFrame(1000, 100);  // 5120 ns
  for (int p = 0; p < kNumPriorities; ++p) {
    EXPECT_TRUE(rx.IsPaused(p, 1000)) << p;
    EXPECT_TRUE(rx.IsPaused(p, 6119)) << p;
    EXPECT_FALSE(rx.IsPaused(p, 6120)) << p;
  }
  EXPECT_EQ(rx.PausedMask(2000), 0xFFu);
  EXPECT_EQ(rx.NextResumeTime(2000), 6120u);
  EXPECT_EQ(rx.rx_global_pause(), 1u);
  // PAUSE time is not charged to the per-priority PFC durations.
  EXPECT_EQ(rx.PauseDurationNs(3, 10'000), 0u);
  EXPECT_EQ(rx.GlobalPauseDurationNs(10'000), 5120u);
  rx.OnPauseFrame(1500, 100);
  rx.OnPauseFrame(2000, 0);  // XON
  EXPECT_EQ(rx.PausedMask(2000), 0u);
}

TEST(PfcReceiver, PauseDisabledIgnoresPauseFrames) {
  PfcReceiver rx({.port_rate_bps = k10G, .pause_enable = false});
  rx.OnPauseFrame(0, 100);
  EXPECT_EQ(rx.PausedMask(1), 0u);
  EXPECT_EQ(rx.rx_global_pause(), 0u);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
