#include "pfc_ecn/congestion_point.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace rocemu::pfc_ecn {
namespace {

CongestionPointConfig Config() {
  CongestionPointConfig c;
  c.drain_rate_bytes_per_sec = 1'000'000'000;  // 1 byte per ns
  c.capacity_bytes = 10'000;
  c.capacity_packets = 8;
  c.red = {.kmin_bytes = 1000, .kmax_bytes = 3000, .pmax = 0.5};
  c.seed = 5;
  return c;
}

TEST(CongestionPoint, FifoOrderAndDrainRate) {
  CongestionPoint<uint32_t> q(Config());
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(q.Enqueue(i, 100, Ecn::kNotEct), EnqueueResult::kQueued);
  }
  EXPECT_EQ(q.depth_bytes(), 400u);
  TimeNs t = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(q.NextDequeueTime(), t);
    if (t > 0) {
      EXPECT_FALSE(q.Dequeue(t - 1).has_value());  // link busy
    }
    auto d = q.Dequeue(t);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->handle, i);
    EXPECT_EQ(d->finish_time, t + 100);
    t = d->finish_time;
  }
  EXPECT_EQ(q.NextDequeueTime(), kNever);
  EXPECT_FALSE(q.Dequeue(t).has_value());
}

TEST(CongestionPoint, ExactRateOverFractionalNanoseconds) {
  auto c = Config();
  c.drain_rate_bytes_per_sec = 3'000'000'000;  // 1/3 ns per byte
  c.capacity_packets = 4;
  CongestionPoint<int> q(c);
  TimeNs t = 0;
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(q.Enqueue(i, 1000, Ecn::kNotEct), EnqueueResult::kQueued);
    auto d = q.Dequeue(t);
    ASSERT_TRUE(d.has_value());
    t = d->finish_time;
  }
  EXPECT_EQ(t, 1'000'000u);  // 3 MB at 3 GB/s
}

TEST(CongestionPoint, TailDropCountedByBytesAndPackets) {
  CongestionPoint<int> q(Config());
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(q.Enqueue(i, 10, Ecn::kEct0), EnqueueResult::kQueued);
  }
  EXPECT_EQ(q.Enqueue(8, 10, Ecn::kEct0), EnqueueResult::kTailDrop);
  ASSERT_TRUE(q.Dequeue(0).has_value());
  EXPECT_EQ(q.Enqueue(9, 9'931, Ecn::kEct0), EnqueueResult::kTailDrop);
  EXPECT_EQ(q.Enqueue(10, 9'930, Ecn::kEct0), EnqueueResult::kQueued);
  EXPECT_EQ(q.counters().tail_drop_packets, 2u);
  EXPECT_EQ(q.counters().tail_drop_bytes, 10u + 9'931u);
  EXPECT_EQ(q.depth_bytes(), 10'000u);
}

TEST(CongestionPoint, MarksEctAboveKmaxNeverNotEct) {
  CongestionPoint<int> q(Config());
  // Depth after each departure stays > Kmax = 3000 for the first ones.
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(q.Enqueue(i, 1000, i % 2 == 0 ? Ecn::kEct0 : Ecn::kNotEct),
              EnqueueResult::kQueued);
  }
  TimeNs t = 0;
  for (int i = 0; i < 8; ++i) {
    auto d = q.Dequeue(t);
    ASSERT_TRUE(d.has_value());
    t = d->finish_time;
    const uint64_t depth_after = q.depth_bytes();
    if (i % 2 == 1) {
      EXPECT_FALSE(d->marked);
      EXPECT_EQ(d->ecn, Ecn::kNotEct);
    } else if (depth_after > 3000) {
      EXPECT_TRUE(d->marked);
      EXPECT_EQ(d->ecn, Ecn::kCe);
    } else if (depth_after <= 1000) {
      EXPECT_FALSE(d->marked);
      EXPECT_EQ(d->ecn, Ecn::kEct0);
    }
  }
  EXPECT_GE(q.counters().ecn_marked_packets, 2u);
}

TEST(CongestionPoint, NotEctNeverMarkedAtAnyDepth) {
  auto c = Config();
  c.capacity_packets = 64;
  c.capacity_bytes = 1'000'000;
  CongestionPoint<int> q(c);
  for (int round = 0; round < 100; ++round) {
    while (q.Enqueue(round, 5000, Ecn::kNotEct) == EnqueueResult::kQueued) {
    }
    auto d = q.Dequeue(q.NextDequeueTime());
    ASSERT_TRUE(d.has_value());
    EXPECT_FALSE(d->marked);
    EXPECT_EQ(d->ecn, Ecn::kNotEct);
  }
  EXPECT_EQ(q.counters().ecn_marked_packets, 0u);
}

TEST(CongestionPoint, AlreadyCeStaysCeWithoutCounting) {
  CongestionPoint<int> q(Config());
  q.Enqueue(1, 100, Ecn::kCe);
  auto d = q.Dequeue(0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->ecn, Ecn::kCe);
  EXPECT_FALSE(d->marked);
}

TEST(CongestionPoint, DrivesPfcTransmitterOccupancy) {
  PfcTransmitterConfig pc;
  pc.port_rate_bps = 8'000'000'000;
  pc.pfc_enable = 1u << 3;
  pc.thresholds[3] = {.xoff_bytes = 3000, .xon_bytes = 1000};
  ASSERT_TRUE(pc.Validate().ok());
  PfcTransmitter pfc(pc);
  CongestionPoint<int> q(Config());
  q.AttachPfc(&pfc, 3);
  for (int i = 0; i < 3; ++i) q.Enqueue(i, 1000, Ecn::kEct0);
  EXPECT_EQ(pfc.occupancy(3), 3000u);
  auto f = pfc.Poll(0);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->quanta[3], 0);
  TimeNs t = 0;
  for (int i = 0; i < 2; ++i) t = q.Dequeue(t)->finish_time;
  EXPECT_EQ(pfc.occupancy(3), 1000u);
  f = pfc.Poll(t);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->quanta[3], 0);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
