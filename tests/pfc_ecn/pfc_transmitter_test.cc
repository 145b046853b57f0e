#include "pfc_ecn/pfc_transmitter.h"

#include "gtest/gtest.h"
#include "pfc_ecn/pfc_thresholds.h"

namespace rocemu::pfc_ecn {
namespace {

constexpr RateBps k100G = 100ull * 1000 * 1000 * 1000;

TEST(Mlx5Thresholds, HeadroomMatchesPortBufferFormula) {
  EXPECT_EQ(Mlx5XoffHeadroomBytes(100000, 7, 1500), 35680u);
  EXPECT_EQ(Mlx5XoffHeadroomBytes(100000, 7, 9216), 56667u);
  // Speeds below 40G are sized as 40G.
  EXPECT_EQ(Mlx5XoffHeadroomBytes(25000, 7, 1500), 16720u);
  EXPECT_EQ(Mlx5XoffHeadroomBytes(40000, 7, 9216), 37707u);
  EXPECT_EQ(Mlx5XoffHeadroomBytes(200000, 7, 1500), 67280u);
  EXPECT_EQ(Mlx5XoffHeadroomBytes(400000, 7, 1500), 130480u);
  // Longer cable, more in flight.
  EXPECT_GT(Mlx5XoffHeadroomBytes(100000, 100, 1500),
            Mlx5XoffHeadroomBytes(100000, 7, 1500));
}

TEST(Mlx5Thresholds, XoffAndXonFromBufferSize) {
  auto t = DeriveMlx5Thresholds({.buffer_size_bytes = 156096,
                                 .speed_mbps = 100000,
                                 .cable_length_m = 7,
                                 .mtu_bytes = 1500});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->xoff_bytes, 156096u - 35680u);
  EXPECT_EQ(t->xon_bytes, 156096u - 35680u - 9216u);
}

TEST(Mlx5Thresholds, RefusesBufferSmallerThanHeadroom) {
  auto t = DeriveMlx5Thresholds({.buffer_size_bytes = 40000,
                                 .speed_mbps = 100000,
                                 .cable_length_m = 7,
                                 .mtu_bytes = 1500});
  EXPECT_FALSE(t.ok());
}

PfcTransmitterConfig Config() {
  PfcTransmitterConfig c;
  c.port_rate_bps = k100G;
  c.pfc_enable = (1u << 3) | (1u << 4);
  c.thresholds[3] = {.xoff_bytes = 100'000, .xon_bytes = 90'000};
  c.thresholds[4] = {.xoff_bytes = 50'000, .xon_bytes = 40'000};
  c.pause_quanta = 0xFFFF;
  return c;
}

TEST(PfcTransmitter, ConfigValidation) {
  EXPECT_TRUE(Config().Validate().ok());
  auto bad = Config();
  bad.thresholds[3].xon_bytes = 100'000;
  EXPECT_FALSE(bad.Validate().ok());
  bad = Config();
  bad.refresh_interval_ns = 400'000;  // longer than the 335.5 us pause
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(PfcTransmitter, XoffAtThresholdXonAfterHysteresis) {
  PfcTransmitter tx(Config());
  tx.OnEnqueue(3, 99'999);
  EXPECT_FALSE(tx.Poll(0).has_value());
  tx.OnEnqueue(3, 1);
  auto f = tx.Poll(10);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->enable_vector, 1u << 3);
  EXPECT_EQ(f->quanta[3], 0xFFFF);
  EXPECT_TRUE(tx.IsAsserted(3));
  EXPECT_FALSE(tx.Poll(11).has_value());  // nothing new

  // Inside the hysteresis band: stay paused, send nothing.
  tx.OnDequeue(3, 5'000);
  EXPECT_FALSE(tx.Poll(20).has_value());
  EXPECT_TRUE(tx.IsAsserted(3));
  tx.OnEnqueue(3, 5'000);  // back above XOFF: already asserted, no resend
  EXPECT_FALSE(tx.Poll(30).has_value());

  tx.SetOccupancy(3, 90'000);
  f = tx.Poll(40);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->enable_vector, 1u << 3);
  EXPECT_EQ(f->quanta[3], 0);  // XON
  EXPECT_FALSE(tx.IsAsserted(3));
  EXPECT_EQ(tx.tx_prio_pause(3), 2u);
  EXPECT_EQ(tx.NextEventTime(), kNever);
}

TEST(PfcTransmitter, MovedThresholdsTakeEffectAtTheNextPoll) {
  // A shared-buffer switch lowers XOFF as its pool fills (dynamic
  // thresholds): the same occupancy then pauses, and XON follows the new
  // hysteresis band.
  PfcTransmitter tx(Config());
  tx.SetOccupancy(3, 60'000);
  EXPECT_FALSE(tx.Poll(0).has_value());
  tx.SetThresholds(3, {.xoff_bytes = 50'000, .xon_bytes = 40'000});
  auto f = tx.Poll(10);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->quanta[3], 0xFFFF);
  tx.SetOccupancy(3, 45'000);
  EXPECT_FALSE(tx.Poll(20).has_value());  // inside the new band
  tx.SetThresholds(3, {.xoff_bytes = 100'000, .xon_bytes = 90'000});
  f = tx.Poll(30);  // the pool drained: 45 KB is now below XON
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->quanta[3], 0);
  EXPECT_FALSE(tx.IsAsserted(3));
}

TEST(PfcTransmitter, RefreshesBeforeThePeerPauseExpires) {
  PfcTransmitter tx(Config());
  const TimeNs pause = PauseQuantaToNs(0xFFFF, k100G);
  EXPECT_EQ(tx.refresh_interval_ns(), pause / 2);
  tx.SetOccupancy(3, 200'000);
  TimeNs t = 1000;
  ASSERT_TRUE(tx.Poll(t).has_value());
  TimeNs last = t;
  int frames = 1;
  // Stay congested for 2 ms; whenever the transmitter asks, send.
  while (true) {
    t = tx.NextEventTime();
    ASSERT_NE(t, kNever);
    if (t > 2'000'000) break;
    EXPECT_FALSE(tx.Poll(t - 1).has_value());
    auto f = tx.Poll(t);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->quanta[3], 0xFFFF);
    // The peer's previous pause still holds when the refresh arrives.
    EXPECT_LT(t - last, pause);
    last = t;
    ++frames;
  }
  EXPECT_EQ(frames, static_cast<int>((2'000'000 - 1000) / (pause / 2)) + 1);
  EXPECT_EQ(tx.tx_prio_pause(3), static_cast<uint64_t>(frames));
}

TEST(PfcTransmitter, MergesPrioritiesIntoOneFrame) {
  PfcTransmitter tx(Config());
  tx.SetOccupancy(3, 100'000);
  tx.SetOccupancy(4, 50'000);
  auto f = tx.Poll(0);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->enable_vector, (1u << 3) | (1u << 4));
  // Priority 4 drains: its XON carries a refresh of still-congested 3.
  tx.SetOccupancy(4, 0);
  f = tx.Poll(100);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->enable_vector, (1u << 3) | (1u << 4));
  EXPECT_EQ(f->quanta[4], 0);
  EXPECT_EQ(f->quanta[3], 0xFFFF);
  EXPECT_EQ(tx.NextEventTime(), 100 + tx.refresh_interval_ns());
}

TEST(PfcTransmitter, DisabledPriorityNeverPaused) {
  PfcTransmitter tx(Config());
  tx.SetOccupancy(0, 1'000'000'000);
  EXPECT_FALSE(tx.Poll(0).has_value());
}

TEST(PfcTransmitter, WithoutSendXonThePeerTimesOut) {
  auto c = Config();
  c.send_xon = false;
  PfcTransmitter tx(c);
  tx.SetOccupancy(3, 100'000);
  ASSERT_TRUE(tx.Poll(0).has_value());
  tx.SetOccupancy(3, 0);
  EXPECT_FALSE(tx.Poll(1).has_value());
  EXPECT_FALSE(tx.IsAsserted(3));
  EXPECT_EQ(tx.NextEventTime(), kNever);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
