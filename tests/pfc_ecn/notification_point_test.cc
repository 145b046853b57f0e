#include "pfc_ecn/notification_point.h"

#include "gtest/gtest.h"

namespace rocemu::pfc_ecn {
namespace {

TEST(NotificationPoint, ContinuousMarksGiveOneCnpPerIntervalPerFlow) {
  NotificationPoint np({.np_min_time_between_cnps = 50}, 2);
  // Flow 0: a marked packet every 1 us for 1 ms. Flow 1: every 3 us, offset.
  int cnps[2] = {0, 0};
  TimeNs last_cnp[2] = {kNever, kNever};
  for (TimeNs t = 0; t < 1'000'000; t += 1000) {
    if (np.OnCeMarkedPacket(0, t)) {
      if (last_cnp[0] != kNever) {
        EXPECT_EQ(t - last_cnp[0], 50'000u);
      }
      last_cnp[0] = t;
      ++cnps[0];
    }
    if (t % 3000 == 0 && np.OnCeMarkedPacket(1, t + 700)) {
      if (last_cnp[1] != kNever) {
        EXPECT_GE(t + 700 - last_cnp[1], 50'000u);
      }
      last_cnp[1] = t + 700;
      ++cnps[1];
    }
  }
  EXPECT_EQ(cnps[0], 20);  // 1 ms / 50 us
  // Flow 1 sees marks on a 3 us grid: a CNP at the first mark >= 50 us after
  // the last, i.e. every 51 us -> ceil(1000/51) = 20 CNPs in 1 ms.
  EXPECT_EQ(cnps[1], 20);
  EXPECT_EQ(np.counters().np_cnp_sent, 40u);
  EXPECT_EQ(np.counters().np_ecn_marked_roce_packets, 1000u + 334u);
}

TEST(NotificationPoint, FlowsAreIndependent) {
  NotificationPoint np({.np_min_time_between_cnps = 50}, 3);
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 1000));
  EXPECT_TRUE(np.OnCeMarkedPacket(1, 1001));  // flow 0's CNP does not gate 1
  EXPECT_FALSE(np.OnCeMarkedPacket(0, 2000));
  EXPECT_TRUE(np.OnCeMarkedPacket(2, 2000));
  EXPECT_FALSE(np.OnCeMarkedPacket(1, 50'000));
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 51'000));
  EXPECT_TRUE(np.OnCeMarkedPacket(1, 51'001));
}

TEST(NotificationPoint, FirstMarkAfterIdleSendsAtOnce) {
  NotificationPoint np({.np_min_time_between_cnps = 50}, 1);
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 0));  // even at time 0
  EXPECT_FALSE(np.OnCeMarkedPacket(0, 49'999));
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 10'000'000));
}

TEST(NotificationPoint, ZeroIntervalOneCnpPerMarkedPacket) {
  NotificationPoint np({.np_min_time_between_cnps = 0}, 1);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(np.OnCeMarkedPacket(0, 5000));  // even back to back
  }
  EXPECT_EQ(np.counters().np_cnp_sent, 100u);
  EXPECT_EQ(np.counters().np_ecn_marked_roce_packets, 100u);
}

TEST(NotificationPoint, ResetAndResize) {
  NotificationPoint np({.np_min_time_between_cnps = 50}, 1);
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 0));
  np.ResetFlow(0);
  EXPECT_TRUE(np.OnCeMarkedPacket(0, 1));
  np.Resize(4);
  EXPECT_EQ(np.num_flows(), 4u);
  EXPECT_TRUE(np.OnCeMarkedPacket(3, 2));
  EXPECT_FALSE(np.OnCeMarkedPacket(0, 3));
}

TEST(NpParams, Validation) {
  EXPECT_TRUE(NpParams{}.Validate().ok());
  EXPECT_EQ(NpParams{}.np_cnp_dscp, 48);
  EXPECT_EQ(NpParams{}.np_cnp_prio, 6);
  EXPECT_FALSE((NpParams{.np_cnp_dscp = 64}).Validate().ok());
  EXPECT_FALSE((NpParams{.np_cnp_prio = 8}).Validate().ok());
}

}  // namespace
}  // namespace rocemu::pfc_ecn
