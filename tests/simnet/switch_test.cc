#include "tests/simnet/switch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "tests/simnet/network.h"
#include "tests/simnet/test_host.h"

namespace rocemu::simnet {
namespace {

MacAddr HostMac(int i) {
  return {0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)};
}

// N single-port hosts on switch ports 0..N-1.
struct Star {
  Star(int n, SwitchConfig cfg, LinkConfig link = {})
      : sw([&] {
          cfg.num_ports = static_cast<uint16_t>(n);
          return cfg;
        }()) {
    link.ethernet_overhead = false;
    if (link.propagation_delay_ns == 0) link.propagation_delay_ns = 500;
    sw_id = net.AddNode(&sw, static_cast<uint16_t>(n), "switch");
    for (int i = 0; i < n; ++i) {
      hosts.push_back(std::make_unique<TestHost>());
      ids.push_back(net.AddNode(hosts.back().get(), 1));
      links.push_back(
          *net.Connect(ids.back(), 0, sw_id, static_cast<uint16_t>(i), link));
      EXPECT_TRUE(sw.AddRoute(HostMac(i), static_cast<uint16_t>(i)).ok());
    }
  }
  TestHost& host(int i) { return *hosts[i]; }
  StreamSpec Flow(int from, int to, uint32_t flow, uint64_t count,
                  uint32_t len = 1000) {
    StreamSpec s;
    s.flow = flow;
    s.count = count;
    s.frame_len = len;
    s.src_mac = HostMac(from);
    s.dst_mac = HostMac(to);
    return s;
  }
  Network net;
  Switch sw;
  NodeId sw_id;
  std::vector<std::unique_ptr<TestHost>> hosts;
  std::vector<NodeId> ids;
  std::vector<LinkId> links;
};

uint64_t Count(const TestHost& h, uint32_t flow) {
  uint64_t n = 0;
  for (const Arrival& a : h.arrivals()) n += a.test_frame && a.flow == flow;
  return n;
}

TEST(SwitchTest, ForwardsByDestinationMac) {
  Star s(3, SwitchConfig{});
  s.host(0).AddStream(s.Flow(0, 1, 1, 20));
  s.host(0).AddStream(s.Flow(0, 2, 2, 30));
  StreamSpec stray = s.Flow(0, 9, 3, 5);  // no route
  s.host(0).AddStream(stray);
  s.net.Run(1'000'000);
  EXPECT_EQ(Count(s.host(1), 1), 20u);
  EXPECT_EQ(Count(s.host(2), 2), 30u);
  EXPECT_EQ(s.host(1).received_frames(), 20u);
  EXPECT_EQ(s.host(2).received_frames(), 30u);
  EXPECT_EQ(s.host(0).received_frames(), 0u);
  EXPECT_EQ(s.sw.counters(0).rx_frames, 55u);
  EXPECT_EQ(s.sw.counters(0).rx_unknown_dst, 5u);
  EXPECT_EQ(s.sw.counters(1).tx_frames, 20u);
}

TEST(SwitchTest, StoreAndForwardLatency) {
  Star s(2, SwitchConfig{});
  s.host(0).AddStream(s.Flow(0, 1, 1, 1));
  s.net.Run(1'000'000);
  ASSERT_EQ(s.host(1).arrivals().size(), 1u);
  EXPECT_EQ(s.host(1).arrivals()[0].time, 2u * (80 + 500));
}

TEST(SwitchTest, ThreeSendersIntoOnePortShareItAndAllArrive) {
  Star s(4, SwitchConfig{.queue_capacity_bytes = 10 << 20});
  for (int i = 0; i < 3; ++i) s.host(i).AddStream(s.Flow(i, 3, i, 1000));
  s.net.Run(10'000'000);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Count(s.host(3), i), 1000u) << i;
  // The egress port is the bottleneck: 3000 frames of 80 ns back to back.
  const auto& arr = s.host(3).arrivals();
  ASSERT_EQ(arr.size(), 3000u);
  EXPECT_EQ(arr.back().time - arr.front().time, 2999u * 80);
  EXPECT_GT(s.sw.max_queue_bytes(3, 3), 1000u * 1000);
  EXPECT_EQ(s.sw.queue_bytes(3, 3), 0u);
  // Senders interleave at the bottleneck rather than take turns in blocks.
  int switches = 0;
  for (size_t k = 1; k < 300; ++k) switches += arr[k].flow != arr[k - 1].flow;
  EXPECT_GT(switches, 100);
}

TEST(SwitchTest, TailDropsAtQueueCapacity) {
  constexpr uint64_t kCap = 20'000;
  Star s(4, SwitchConfig{.queue_capacity_bytes = kCap});
  for (int i = 0; i < 3; ++i) s.host(i).AddStream(s.Flow(i, 3, i, 500));
  s.net.Run(10'000'000);
  const uint64_t drops = s.sw.counters(3).tail_drop[3];
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(s.host(3).received_frames() + drops, 1500u);
  EXPECT_EQ(s.sw.counters(3).tx_frames, s.host(3).received_frames());
  EXPECT_LE(s.sw.max_queue_bytes(3, 3), kCap);
  EXPECT_GT(s.sw.max_queue_bytes(3, 3), kCap - 1000);
}

TEST(SwitchTest, ClassifiesByDscpOrPcp) {
  Switch dscp_sw(SwitchConfig{.trust = PriorityTrust::kDscp});
  Switch pcp_sw(
      SwitchConfig{.trust = PriorityTrust::kPcp, .default_priority = 1});
  std::vector<uint8_t> f(100);
  StreamSpec spec{.frame_len = 100, .dscp = 48};
  TestHost::BuildTestFrame(spec, 0, f);
  EXPECT_EQ(dscp_sw.Classify(f), 6);
  EXPECT_EQ(pcp_sw.Classify(f), 1);
  spec.vlan_pcp = 2;
  TestHost::BuildTestFrame(spec, 0, f);
  EXPECT_EQ(dscp_sw.Classify(f), 6);
  EXPECT_EQ(pcp_sw.Classify(f), 2);
}

// Host 0 sends priority 3 (DSCP 26) and priority 0 (DSCP 0) to host 1, which
// pauses priority 3 towards the switch.
TEST(SwitchTest, PfcPausedPriorityHoldsWhileOthersFlow) {
  Star s(2, SwitchConfig{});
  StreamSpec p3 = s.Flow(0, 1, 3, 200);
  p3.interval_ns = 200;
  StreamSpec p0 = s.Flow(0, 1, 0, 200);
  p0.dscp = 0;
  p0.interval_ns = 200;
  s.host(0).AddStream(p3);
  s.host(0).AddStream(p0);
  std::vector<uint8_t> xoff(60), xon(60);
  std::array<uint16_t, 8> q{};
  q[3] = 0xFFFF;
  BuildPfcFrame(HostMac(1), 1u << 3, q, xoff);
  q[3] = 0;
  BuildPfcFrame(HostMac(1), 1u << 3, q, xon);
  s.host(1).SendRaw(0, xoff, 5000);
  s.host(1).SendRaw(0, xon, 30'000);
  s.net.Run(25'000);
  // XOFF reaches the switch at 5000 + 4 (60 B = 4.8 ns, floored) + 500.
  const nic::TimeNs paused_at = 5504;
  EXPECT_EQ(s.sw.counters(1).rx_prio_pause[3], 1u);
  EXPECT_TRUE(s.sw.paused(1, 3, s.net.now()));
  EXPECT_FALSE(s.sw.paused(1, 0, s.net.now()));
  EXPECT_GT(s.sw.queue_bytes(1, 3), 0u);
  nic::TimeNs last_p3 = 0;
  for (const Arrival& a : s.host(1).arrivals()) {
    if (a.flow == 3) last_p3 = std::max(last_p3, a.time);
  }
  EXPECT_LE(last_p3, paused_at + 80 + 500);
  EXPECT_GT(Count(s.host(1), 0), 110u);  // priority 0 kept its pace
  EXPECT_LT(Count(s.host(1), 3), 30u);
  s.net.Run(1'000'000);
  EXPECT_EQ(Count(s.host(1), 3), 200u);
  EXPECT_EQ(Count(s.host(1), 0), 200u);
  EXPECT_EQ(s.sw.queue_bytes(1, 3), 0u);
}

TEST(SwitchTest, PfcPauseExpiresAfterItsQuanta) {
  Star s(2, SwitchConfig{});
  std::vector<uint8_t> xoff(60);
  std::array<uint16_t, 8> q{};
  q[3] = 1000;  // 5120 ns at 100 Gb/s
  BuildPfcFrame(HostMac(1), 1u << 3, q, xoff);
  s.host(1).SendRaw(0, xoff, 0);
  StreamSpec p3 = s.Flow(0, 1, 3, 5);
  p3.start = 1000;  // well after the XOFF arrived (at 504)
  s.host(0).AddStream(p3);
  s.net.Run(1'000'000);
  ASSERT_EQ(Count(s.host(1), 3), 5u);
  // Held until 504 + 5120, then 80 ns + 500 ns to host 1.
  EXPECT_EQ(s.host(1).arrivals()[0].time, 504u + 5120 + 80 + 500);
}

TEST(SwitchTest, PauseDurationAndPerPortRate) {
  Star s(2, SwitchConfig{});
  s.sw.SetPortRate(1, 10'000'000'000);  // quanta are 51.2 ns on port 1
  std::vector<uint8_t> xoff(60), xon(60);
  std::array<uint16_t, 8> q{};
  q[3] = 100;  // 5120 ns at 10 Gb/s
  BuildPfcFrame(HostMac(1), 1u << 3, q, xoff);
  q[3] = 0;
  BuildPfcFrame(HostMac(1), 1u << 3, q, xon);
  s.host(1).SendRaw(0, xoff, 0);       // at the switch at 504
  s.host(1).SendRaw(0, xoff, 3000);    // 3504: extends to 3504 + 5120
  s.host(1).SendRaw(0, xoff, 20'000);  // 20504
  s.host(1).SendRaw(0, xon, 21'000);   // 21504: ends it
  s.net.Run(4000);
  EXPECT_TRUE(s.sw.paused(1, 3, 8000));
  EXPECT_EQ(s.sw.rx_pause_duration_ns(1, 3, 4000), 4000u - 504);
  s.net.Run(100'000);
  EXPECT_EQ(s.sw.counters(1).rx_prio_pause[3], 4u);
  EXPECT_EQ(s.sw.rx_pause_duration_ns(1, 3, s.net.now()),
            (3504u + 5120 - 504) + (21'504u - 20'504));
  EXPECT_EQ(s.sw.rx_pause_duration_ns(1, 0, s.net.now()), 0u);
}

TEST(SwitchTest, PauseStopsEveryPriority) {
  Star s(2, SwitchConfig{});
  std::vector<uint8_t> pause(60);
  BuildPauseFrame(HostMac(1), 2000, pause);  // 10240 ns
  s.host(1).SendRaw(0, pause, 0);
  StreamSpec p3 = s.Flow(0, 1, 3, 3);
  p3.start = 1000;
  StreamSpec p0 = s.Flow(0, 1, 0, 3);
  p0.dscp = 0;
  p0.start = 1000;
  s.host(0).AddStream(p3);
  s.host(0).AddStream(p0);
  s.net.Run(1'000'000);
  EXPECT_EQ(s.sw.counters(1).rx_pause, 1u);
  ASSERT_EQ(s.host(1).received_frames(), 6u);
  nic::TimeNs first = nic::kNever;
  for (const Arrival& a : s.host(1).arrivals()) first = std::min(first, a.time);
  EXPECT_EQ(first, 504u + 10240 + 80 + 500);
}

TEST(SwitchTest, StrictAndRoundRobinScheduling) {
  for (Scheduling mode : {Scheduling::kStrict, Scheduling::kRoundRobin}) {
    Star s(3, SwitchConfig{.scheduling = mode});
    StreamSpec hi = s.Flow(0, 2, 6, 50);
    hi.dscp = 48;
    StreamSpec lo = s.Flow(1, 2, 1, 50);
    lo.dscp = 8;
    s.host(0).AddStream(hi);
    s.host(1).AddStream(lo);
    s.net.Run(1'000'000);
    const auto& arr = s.host(2).arrivals();
    ASSERT_EQ(arr.size(), 100u);
    // Both arrive at the switch at the same rate as it drains, so the queue
    // holds both priorities for most of the run.
    int hi_first_half = 0;
    for (size_t k = 0; k < 50; ++k) hi_first_half += arr[k].flow == 6;
    if (mode == Scheduling::kStrict) {
      EXPECT_GE(hi_first_half, 49) << "strict";
    } else {
      EXPECT_NEAR(hi_first_half, 25, 2) << "round robin";
    }
  }
}

TEST(SwitchTest, EcnMarksEctFramesAboveThreshold) {
  Star s(4, SwitchConfig{});
  s.sw.SetEcnMarker(std::make_unique<ThresholdEcnMarker>(20'000));
  for (int i = 0; i < 2; ++i) s.host(i).AddStream(s.Flow(i, 3, i, 300));
  StreamSpec not_ect = s.Flow(2, 3, 2, 300);
  not_ect.ecn = kEcnNotEct;
  s.host(2).AddStream(not_ect);
  s.host(3).set_keep_frames(true);
  s.net.Run(10'000'000);
  ASSERT_EQ(s.host(3).received_frames(), 900u);
  uint64_t ce = 0;
  for (size_t k = 0; k < 900; ++k) {
    const Arrival& a = s.host(3).arrivals()[k];
    if (a.ecn == kEcnCe) {
      ++ce;
      EXPECT_NE(a.flow, 2u);
      const auto& f = s.host(3).frames()[k];
      EXPECT_EQ(Ipv4HeaderChecksum({&f[14], 20}), 0);
    }
  }
  EXPECT_GT(ce, 100u);
  EXPECT_EQ(ce, s.sw.counters(3).ecn_marked[3]);
}

TEST(SwitchTest, RedMarkingFractionAtFixedDepth) {
  RedEcnMarker red(10'000, 30'000, 0.2);
  Rng rng(5);
  DequeueContext ctx;
  ctx.rng = &rng;
  ctx.queue_bytes = 10'000;
  EXPECT_FALSE(red.ShouldMark(ctx));
  ctx.queue_bytes = 30'001;
  EXPECT_TRUE(red.ShouldMark(ctx));
  // Halfway between Kmin and Kmax: p = 0.1.
  ctx.queue_bytes = 20'000;
  constexpr int kDraws = 20000;
  int marked = 0;
  for (int i = 0; i < kDraws; ++i) marked += red.ShouldMark(ctx);
  EXPECT_NEAR(marked, kDraws * 0.1, 5 * std::sqrt(kDraws * 0.1 * 0.9));
}

TEST(SwitchTest, PfcFromIngressOccupancyMakesTheFabricLossless) {
  Star s(3, SwitchConfig{.queue_capacity_bytes = 60'000, .pfc_quanta = 0xFFFF});
  s.sw.SetPfcPolicy(std::make_unique<ThresholdPfcPolicy>(20'000, 10'000));
  for (int i = 0; i < 2; ++i) {
    s.host(i).set_obey_pause(true, k100G);
    s.host(i).AddStream(s.Flow(i, 2, i, 2000));
  }
  s.net.Run(100'000'000);
  EXPECT_EQ(Count(s.host(2), 0), 2000u);
  EXPECT_EQ(Count(s.host(2), 1), 2000u);
  EXPECT_EQ(s.sw.counters(2).tail_drop[3], 0u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_GT(s.sw.counters(i).tx_prio_pause[3], 1u) << i;  // XOFF and XON
    uint64_t pfc_seen = 0;
    for (const Arrival& a : s.host(i).arrivals()) pfc_seen += a.mac_control;
    EXPECT_EQ(pfc_seen, s.sw.counters(i).tx_prio_pause[3]);
    EXPECT_FALSE(s.sw.xoff_sent(i, 3));
  }
  // Without PFC the same load overflows the queue.
  Star lossy(3, SwitchConfig{.queue_capacity_bytes = 60'000});
  for (int i = 0; i < 2; ++i)
    lossy.host(i).AddStream(lossy.Flow(i, 2, i, 2000));
  lossy.net.Run(100'000'000);
  EXPECT_GT(lossy.sw.counters(2).tail_drop[3], 0u);
}

// One sender through a 10G bottleneck: the XON made when the egress queue
// drains must leave at once on the otherwise idle port towards the sender,
// not wait for the XOFF refresh or for the sender's pause to run out.
TEST(SwitchTest, XonLeavesPromptlyOnAnIdlePort) {
  Network net;
  Switch sw(SwitchConfig{.num_ports = 2});
  sw.SetPfcPolicy(std::make_unique<ThresholdPfcPolicy>(20'000, 10'000));
  TestHost sender, sink;
  sender.set_obey_pause(true, k100G);
  sender.set_keep_frames(true);
  const NodeId s = net.AddNode(&sw, 2);
  LinkConfig fast;
  fast.propagation_delay_ns = 500;
  LinkConfig slow = fast;
  slow.rate_bps = 10'000'000'000;
  ASSERT_TRUE(net.Connect(net.AddNode(&sender, 1), 0, s, 0, fast).ok());
  ASSERT_TRUE(net.Connect(net.AddNode(&sink, 1), 0, s, 1, slow).ok());
  ASSERT_TRUE(sw.AddRoute(HostMac(1), 1).ok());
  StreamSpec spec;
  spec.count = 300;
  spec.dst_mac = HostMac(1);
  sender.AddStream(spec);
  net.Run(1'000'000);
  EXPECT_EQ(sink.received_frames(), 300u);
  nic::TimeNs first_xoff = 0, first_xon = 0;
  for (size_t k = 0; k < sender.arrivals().size(); ++k) {
    MacControl mc;
    ASSERT_TRUE(ParseMacControl(sender.frames()[k], &mc));
    nic::TimeNs& t = mc.quanta[3] ? first_xoff : first_xon;
    if (t == 0) t = sender.arrivals()[k].time;
  }
  ASSERT_GT(first_xoff, 0u);
  ASSERT_GT(first_xon, first_xoff);
  // Draining 10 kB at 10 Gb/s takes 8 us; the pause asked for is 335 us.
  EXPECT_LT(first_xon - first_xoff, 20'000u);
  EXPECT_EQ(sw.counters(1).tail_drop[3], 0u);
}

// Two switches in a line, two hosts on each: traffic crosses the inter-switch
// link in both directions and every frame reaches the right host.
TEST(SwitchTest, TwoSwitchFabric) {
  Network net(NetworkConfig{.seed = 9});
  Switch left(SwitchConfig{.num_ports = 3});
  Switch right(SwitchConfig{.num_ports = 3});
  TestHost h[4];
  const NodeId l = net.AddNode(&left, 3, "left");
  const NodeId r = net.AddNode(&right, 3, "right");
  LinkConfig edge;
  edge.propagation_delay_ns = 300;
  LinkConfig trunk = edge;
  trunk.rate_bps = 40'000'000'000;
  trunk.propagation_delay_ns = 2000;
  ASSERT_TRUE(net.Connect(l, 2, r, 2, trunk).ok());
  for (int i = 0; i < 4; ++i) {
    Switch& sw = i < 2 ? left : right;
    const NodeId id = net.AddNode(&h[i], 1);
    ASSERT_TRUE(net.Connect(id, 0, i < 2 ? l : r, i % 2, edge).ok());
    ASSERT_TRUE(sw.AddRoute(HostMac(i), static_cast<uint16_t>(i % 2)).ok());
    Switch& other = i < 2 ? right : left;
    ASSERT_TRUE(other.AddRoute(HostMac(i), 2).ok());
  }
  // Every host sends 200 frames to the host opposite it and 100 to its
  // neighbour.
  for (int i = 0; i < 4; ++i) {
    StreamSpec far;
    far.flow = 10 + i;
    far.count = 200;
    far.src_mac = HostMac(i);
    far.dst_mac = HostMac(3 - i);
    h[i].AddStream(far);
    StreamSpec near = far;
    near.flow = 20 + i;
    near.count = 100;
    near.dst_mac = HostMac(i ^ 1);
    h[i].AddStream(near);
  }
  net.Run(10'000'000);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Count(h[3 - i], 10 + i), 200u) << i;
    EXPECT_EQ(Count(h[i ^ 1], 20 + i), 100u) << i;
    EXPECT_EQ(h[i].received_frames(), 300u) << i;
  }
  EXPECT_EQ(left.counters(2).tx_frames, 400u);
  EXPECT_EQ(right.counters(2).tx_frames, 400u);
}

}  // namespace
}  // namespace rocemu::simnet
