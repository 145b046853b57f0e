#include "pfc_ecn/pacer.h"

#include "gtest/gtest.h"
#include "pfc_ecn/reaction_point.h"

namespace rocemu::pfc_ecn {
namespace {

constexpr RateBps k10G = 10'000'000'000;

// A greedy sender that obeys the pacer: how many bytes leave by `end`.
uint64_t SendGreedy(Pacer& pacer, TimeNs start, TimeNs end, uint32_t pkt) {
  uint64_t bytes = 0;
  TimeNs t = start;
  while (true) {
    t = std::max(t, pacer.NextSendTime());
    if (t >= end) break;
    EXPECT_TRUE(pacer.CanSend(t, pkt));
    pacer.OnSent(t, pkt);
    bytes += pkt;
  }
  return bytes;
}

TEST(Pacer, SpacesPacketsAtTheRate) {
  Pacer pacer(k10G);
  EXPECT_TRUE(pacer.CanSend(0, 1000));
  pacer.OnSent(0, 1000);
  EXPECT_EQ(pacer.NextSendTime(), 800u);  // 8000 bits at 10 Gb/s
  EXPECT_FALSE(pacer.CanSend(799, 1000));
  EXPECT_TRUE(pacer.CanSend(800, 1000));
}

TEST(Pacer, LongRunRateIsExact) {
  Pacer pacer(3'000'000'000);  // 1000 B = 2666.67 ns
  EXPECT_EQ(SendGreedy(pacer, 0, 8'000'000, 1000), 3'000'000u);
  Pacer fast(k10G);
  EXPECT_EQ(SendGreedy(fast, 0, 1'000'000, 1000), 1'250'000u);
}

TEST(Pacer, IdleBanksNothingWithoutBurst) {
  Pacer pacer(k10G);
  pacer.OnSent(0, 1000);
  // After 1 ms idle, still one packet per 800 ns.
  pacer.OnSent(1'000'000, 1000);
  EXPECT_EQ(pacer.NextSendTime(), 1'000'800u);
}

TEST(Pacer, BurstToleranceAfterIdle) {
  Pacer pacer(k10G, /*burst_bytes=*/3000);
  pacer.OnSent(0, 1000);
  const TimeNs t = 1'000'000;
  int back_to_back = 0;
  while (pacer.CanSend(t, 1000) && back_to_back < 100) {
    pacer.OnSent(t, 1000);
    ++back_to_back;
  }
  EXPECT_EQ(back_to_back, 4);  // burst_bytes plus one packet
  // Long-run rate unchanged by the tolerance.
  // The burst used the tolerance up: the next packet waits until t + 800.
  EXPECT_EQ(SendGreedy(pacer, t, t + 1'000'000, 1000), 1'249'000u);
}

TEST(Pacer, FollowsTheReactionPointRate) {
  DcqcnParams p = DcqcnParams::Nvidia(10000);
  p.rp_dce_tcp_rtt = 55;
  ReactionPoint rp(&p);
  Pacer pacer(rp.current_rate_bps());
  rp.OnCnp(0);
  rp.OnTime(4000);
  pacer.SetRate(rp.current_rate_bps());
  // 10000 - (10000 * 1023 >> 11) = 5005 Mb/s.
  EXPECT_EQ(pacer.rate_bps(), 5'005'000'000u);
  EXPECT_EQ(SendGreedy(pacer, 4000, 4000 + 1'000'000, 1001), 625'625u);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
