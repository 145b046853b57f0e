#include "emulator/capture/fault_injector.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

std::vector<FaultAction> Decisions(FaultInjector& f, int n) {
  std::vector<FaultAction> v;
  for (int i = 0; i < n; ++i) v.push_back(f.Decide());
  return v;
}

TEST(FaultInjectorTest, DisabledPassesEverything) {
  config::FaultConfig c;
  FaultInjector f(c, 0);
  EXPECT_FALSE(f.enabled());
  for (FaultAction a : Decisions(f, 1000)) EXPECT_EQ(a, FaultAction::kPass);
}

TEST(FaultInjectorTest, SameSeedSameDecisionsOtherStreamDiffers) {
  config::FaultConfig c;
  c.drop = 0.2;
  c.reorder = 0.2;
  c.seed = 7;
  FaultInjector a(c, 0), b(c, 0), other(c, 1);
  std::vector<FaultAction> da = Decisions(a, 500);
  EXPECT_EQ(da, Decisions(b, 500));
  EXPECT_NE(da, Decisions(other, 500));
  c.seed = 8;
  FaultInjector reseeded(c, 0);
  EXPECT_NE(da, Decisions(reseeded, 500));
}

TEST(FaultInjectorTest, RatesAndCountersMatch) {
  config::FaultConfig c;
  c.drop = 0.01;
  c.reorder = 0.01;
  c.corrupt = 0.001;
  c.duplicate = 0.02;
  c.delay = 0.05;
  FaultInjector f(c, 3);
  constexpr int kFrames = 200000;
  int counts[6] = {};
  for (FaultAction a : Decisions(f, kFrames)) ++counts[static_cast<int>(a)];
  const FaultCounters& k = f.counters();
  EXPECT_EQ(k.fault_dropped, static_cast<uint64_t>(counts[1]));
  EXPECT_EQ(k.fault_reordered, static_cast<uint64_t>(counts[2]));
  EXPECT_EQ(k.fault_duplicated, static_cast<uint64_t>(counts[3]));
  EXPECT_EQ(k.fault_corrupted, static_cast<uint64_t>(counts[4]));
  EXPECT_EQ(k.fault_delayed, static_cast<uint64_t>(counts[5]));
  // Binomial: 6 standard deviations either side.
  auto near = [&](int got, double p) {
    double mean = kFrames * p;
    double sd = std::sqrt(kFrames * p * (1 - p));
    return std::abs(got - mean) < 6 * sd;
  };
  EXPECT_TRUE(near(counts[1], 0.01)) << counts[1];
  EXPECT_TRUE(near(counts[2], 0.01)) << counts[2];
  EXPECT_TRUE(near(counts[3], 0.02)) << counts[3];
  EXPECT_TRUE(near(counts[4], 0.001)) << counts[4];
  EXPECT_TRUE(near(counts[5], 0.05)) << counts[5];
}

TEST(FaultInjectorTest, AllDropWhenRateIsOne) {
  config::FaultConfig c;
  c.drop = 1.0;
  FaultInjector f(c, 0);
  for (FaultAction a : Decisions(f, 100)) EXPECT_EQ(a, FaultAction::kDrop);
  EXPECT_EQ(f.counters().fault_dropped, 100u);
}

TEST(FaultInjectorTest, CorruptionSparesTheEthernetHeader) {
  config::FaultConfig c;
  c.corrupt = 1.0;
  c.delay_us = 250;
  FaultInjector f(c, 0);
  EXPECT_EQ(f.delay_ns(), 250000u);
  for (int i = 0; i < 1000; ++i) {
    uint32_t bit = f.CorruptBit(60);
    EXPECT_GE(bit, 14u * 8);
    EXPECT_LT(bit, 60u * 8);
  }
}

}  // namespace
}  // namespace rocemu::emulator
