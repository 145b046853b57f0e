// Issue 4's network scenarios: DCQCN fairness and queue through one
// bottleneck, and 8:1 incast with and without PFC and DCQCN.
#include <gtest/gtest.h>

#include "tests/sim/congestion_fabric.h"

namespace rocemu::sim {
namespace {

void Report(const char* name, const FabricResult& r) {
  std::printf(
      "%s: events=%llu finish=%.2f ms drops=%llu retrans=%llu pauses=%llu "
      "rx_pauses=%llu marks=%llu cnps=%llu handled=%llu ignored=%llu\n",
      name, static_cast<unsigned long long>(r.events), r.finish_ns / 1e6,
      static_cast<unsigned long long>(r.drops),
      static_cast<unsigned long long>(r.retransmissions),
      static_cast<unsigned long long>(r.pauses),
      static_cast<unsigned long long>(r.rx_pauses),
      static_cast<unsigned long long>(r.marks),
      static_cast<unsigned long long>(r.cnps),
      static_cast<unsigned long long>(r.cnps_handled),
      static_cast<unsigned long long>(r.cnps_ignored));
}

class LongFlows : public ::testing::TestWithParam<int> {};

TEST_P(LongFlows, DcqcnSharesTheBottleneckFairly) {
  FabricOptions o;
  o.senders = GetParam();
  absl::StatusOr<FabricResult> r = RunFabric(o);
  ASSERT_TRUE(r.ok()) << r.status();
  Report("long", *r);
  const nic::TimeNs half = o.duration_ns / 2;
  const double jain = JainIndex(*r, half, o.duration_ns);
  const double queue = MeanQueueBytes(*r, half, o.duration_ns);
  std::printf(
      "senders=%d jain=%.4f mean_queue=%.0f B pauses_2nd_half=%llu\n",
      o.senders, jain, queue,
      static_cast<unsigned long long>(PausesBetween(*r, half, o.duration_ns)));
  EXPECT_TRUE(r->completed);
  EXPECT_TRUE(r->byte_exact);
  EXPECT_GT(r->cnps_handled, 0u);  // DCQCN did engage
  EXPECT_EQ(r->drops, 0u);
  EXPECT_GE(jain, 0.99);
  EXPECT_GT(queue, static_cast<double>(o.red.kmin_bytes));
  EXPECT_LT(queue, static_cast<double>(o.red.kmax_bytes));
  EXPECT_EQ(PausesBetween(*r, half, o.duration_ns), 0u);
}

INSTANTIATE_TEST_SUITE_P(Senders, LongFlows, ::testing::Values(2, 4));

FabricOptions Incast(bool pfc, bool dcqcn) {
  FabricOptions o;
  o.senders = 8;
  o.pfc = pfc;
  o.dcqcn = dcqcn;
  o.bytes_per_sender = 2 << 20;
  o.duration_ns = 200'000'000;  // deadline
  return o;
}

TEST(Incast, PfcAloneIsLosslessAndPauses) {
  absl::StatusOr<FabricResult> r = RunFabric(Incast(true, false));
  ASSERT_TRUE(r.ok()) << r.status();
  Report("pfc", *r);
  EXPECT_TRUE(r->completed);
  EXPECT_TRUE(r->byte_exact);
  EXPECT_EQ(r->drops, 0u);
  EXPECT_EQ(r->retransmissions, 0u);
  EXPECT_GT(r->pauses, 0u);
  EXPECT_GT(r->rx_pauses, 0u);
  EXPECT_GT(r->cnps_ignored, 0u);  // marks reached a sender with CC off
}

TEST(Incast, NeitherPfcNorDcqcnDropsAndRetransmits) {
  absl::StatusOr<FabricResult> r = RunFabric(Incast(false, false));
  ASSERT_TRUE(r.ok()) << r.status();
  Report("none", *r);
  EXPECT_TRUE(r->completed);
  EXPECT_TRUE(r->byte_exact);
  EXPECT_GT(r->drops, 0u);
  EXPECT_GT(r->retransmissions, 0u);
  EXPECT_EQ(r->pauses, 0u);
}

TEST(Incast, PfcAndDcqcnAreLosslessWithFewerPauses) {
  absl::StatusOr<FabricResult> pfc_only = RunFabric(Incast(true, false));
  ASSERT_TRUE(pfc_only.ok()) << pfc_only.status();
  absl::StatusOr<FabricResult> r = RunFabric(Incast(true, true));
  ASSERT_TRUE(r.ok()) << r.status();
  Report("both", *r);
  EXPECT_TRUE(r->completed);
  EXPECT_TRUE(r->byte_exact);
  EXPECT_EQ(r->drops, 0u);
  EXPECT_GT(r->cnps_handled, 0u);
  EXPECT_LT(r->pauses, pfc_only->pauses);
}

}  // namespace
}  // namespace rocemu::sim
