#include "pfc_ecn/counters.h"

#include <map>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "pfc_ecn/pfc_receiver.h"
#include "pfc_ecn/pfc_transmitter.h"

namespace rocemu::pfc_ecn {
namespace {

template <typename C>
std::map<std::string, uint64_t> Collect(const C& c) {
  std::map<std::string, uint64_t> m;
  c.ForEach([&](std::string_view name, uint64_t v) {
    EXPECT_TRUE(m.emplace(std::string(name), v).second) << name;
  });
  return m;
}

TEST(PortCongestionCounters, OperatorNamesAndValues) {
  PfcReceiver rx({.port_rate_bps = 10'000'000'000});
  std::array<uint16_t, kNumPriorities> q{};
  q[3] = 0xFFFF;  // 3.355 ms at 10G
  rx.OnPfcFrame(0, 1u << 3, q);
  PfcTransmitterConfig tc;
  tc.thresholds[3] = {.xoff_bytes = 10, .xon_bytes = 5};
  PfcTransmitter tx(tc);
  tx.SetOccupancy(3, 10);
  ASSERT_TRUE(tx.Poll(0).has_value());

  PortCongestionCounters c;
  rx.FillCounters(10'000'000, c);
  tx.FillCounters(c);
  const auto m = Collect(c);
  EXPECT_EQ(m.size(), 3u * kNumPriorities + 3);
  EXPECT_EQ(m.at("rx_prio3_pause"), 1u);
  EXPECT_EQ(m.at("rx_prio3_pause_duration"), 3355u);  // us
  EXPECT_EQ(m.at("tx_prio3_pause"), 1u);
  EXPECT_EQ(m.at("rx_prio0_pause"), 0u);
  EXPECT_EQ(m.at("tx_prio7_pause"), 0u);
  EXPECT_EQ(m.count("rx_global_pause"), 1u);

  PortCongestionCounters sum;
  sum += c;
  sum += c;
  EXPECT_EQ(sum.rx_prio_pause[3], 2u);
  EXPECT_EQ(sum.rx_prio_pause_duration[3], 6710u);
}

TEST(FlowCongestionCounters, OperatorNames) {
  FlowCongestionCounters a{.np_ecn_marked_roce_packets = 1,
                           .np_cnp_sent = 2,
                           .rp_cnp_handled = 3,
                           .rp_cnp_ignored = 4};
  FlowCongestionCounters b = a;
  b += a;
  const auto m = Collect(b);
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.at("np_ecn_marked_roce_packets"), 2u);
  EXPECT_EQ(m.at("np_cnp_sent"), 4u);
  EXPECT_EQ(m.at("rp_cnp_handled"), 6u);
  EXPECT_EQ(m.at("rp_cnp_ignored"), 8u);
}

}  // namespace
}  // namespace rocemu::pfc_ecn
