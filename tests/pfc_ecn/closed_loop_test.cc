// The pieces together: two DCQCN senders (RP + pacer) at line rate into one
// congestion point that drains at the line rate of one, RED marking, NP
// pacing, CNPs fed straight back. Properties, not numbers: the queue is held
// near the RED band instead of growing without bound, the link stays busy,
// and the two flows share it.
#include <algorithm>
#include <array>
#include <cstdint>

#include "gtest/gtest.h"
#include "pfc_ecn/congestion_point.h"
#include "pfc_ecn/notification_point.h"
#include "pfc_ecn/pacer.h"
#include "pfc_ecn/reaction_point.h"

namespace rocemu::pfc_ecn {
namespace {

struct Result {
  std::array<uint64_t, 2> bytes_second_half{};
  uint64_t drops = 0;
  uint64_t marks = 0;
  uint64_t max_depth_second_half = 0;
  uint64_t cnps = 0;
};

Result Run(const DcqcnParams& p, TimeNs duration) {
  constexpr uint32_t kPkt = 1000;
  CongestionPointConfig cc;
  cc.drain_rate_bytes_per_sec = uint64_t{p.line_rate_mbps} * 1000 * 1000 / 8;
  cc.capacity_bytes = 4'000'000;
  cc.capacity_packets = 8192;
  cc.red = {.kmin_bytes = 5000, .kmax_bytes = 200000, .pmax = 0.01};
  EXPECT_TRUE(cc.Validate().ok());
  CongestionPoint<uint32_t> cp(cc);
  NotificationPoint np(p.np, 2);
  std::array<ReactionPoint, 2> rp{ReactionPoint(&p), ReactionPoint(&p)};
  std::array<Pacer, 2> pacer{Pacer(rp[0].current_rate_bps()),
                             Pacer(rp[1].current_rate_bps())};
  Result r;
  TimeNs now = 0;
  while (now < duration) {
    TimeNs next = cp.NextDequeueTime();
    for (int f = 0; f < 2; ++f) {
      next = std::min({next, std::max(now, pacer[f].NextSendTime()),
                       rp[f].NextEventTime()});
    }
    now = std::max(now, next);
    for (int f = 0; f < 2; ++f) {
      if (rp[f].NextEventTime() <= now) {
        rp[f].OnTime(now);
        pacer[f].SetRate(rp[f].current_rate_bps());
      }
      if (pacer[f].CanSend(now)) {
        if (cp.Enqueue(f, kPkt, Ecn::kEct0) == EnqueueResult::kTailDrop) {
          ++r.drops;
        }
        pacer[f].OnSent(now, kPkt);
        rp[f].OnBytesSent(kPkt, now);
      }
    }
    if (auto d = cp.Dequeue(now)) {
      const bool second_half = now >= duration / 2;
      if (second_half) {
        r.bytes_second_half[d->handle] += d->bytes;
        r.max_depth_second_half =
            std::max(r.max_depth_second_half, cp.depth_bytes());
      }
      if (d->marked && np.OnCeMarkedPacket(d->handle, now)) {
        rp[d->handle].OnCnp(now);
        pacer[d->handle].SetRate(rp[d->handle].current_rate_bps());
        ++r.cnps;
      }
    }
  }
  r.marks = cp.counters().ecn_marked_packets;
  return r;
}

void ExpectStableAndFair(const DcqcnParams& p, TimeNs duration) {
  const Result r = Run(p, duration);
  const double capacity_bytes =
      p.line_rate_mbps * 1e6 / 8 * (static_cast<double>(duration) / 2e9);
  const double a = static_cast<double>(r.bytes_second_half[0]);
  const double b = static_cast<double>(r.bytes_second_half[1]);
  EXPECT_EQ(r.drops, 0u);
  EXPECT_GT(r.cnps, 0u);
  // The link stays busy: DCQCN does not starve the bottleneck.
  EXPECT_GT((a + b) / capacity_bytes, 0.9);
  // The queue is held near the RED band, far below the 4 MB buffer.
  EXPECT_LT(r.max_depth_second_half, 400'000u);
  // Jain's index of the two shares.
  const double jain = (a + b) * (a + b) / (2 * (a * a + b * b));
  EXPECT_GT(jain, 0.95) << a << " vs " << b;
}

TEST(ClosedLoop, NvidiaModeHoldsQueueAndShares) {
  DcqcnParams p = DcqcnParams::Nvidia(40000);
  ASSERT_TRUE(p.Validate().ok());
  ExpectStableAndFair(p, 40'000'000);
}

TEST(ClosedLoop, PaperModeHoldsQueueAndShares) {
  DcqcnParams p = DcqcnParams::Paper(40000);
  ASSERT_TRUE(p.Validate().ok());
  ExpectStableAndFair(p, 40'000'000);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
