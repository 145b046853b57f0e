#include "tests/simnet/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "tests/simnet/rng.h"
#include "tests/simnet/test_host.h"

namespace rocemu::simnet {
namespace {

constexpr uint64_t k10G = 10'000'000'000;
constexpr uint64_t k25G = 25'000'000'000;

// Floor of bits * 1e9 / rate, the simulator's rounding of wire time.
nic::TimeNs WireNs(uint64_t bytes, uint64_t rate) {
  return static_cast<nic::TimeNs>(static_cast<unsigned __int128>(bytes) * 8 *
                                  1'000'000'000 / rate);
}

struct Pair {
  explicit Pair(const LinkConfig& cfg, uint64_t seed = 1,
                uint32_t tx_queue_frames = 1)
      : net(NetworkConfig{.seed = seed, .tx_queue_frames = tx_queue_frames}) {
    a_id = net.AddNode(&a, 1, "a");
    b_id = net.AddNode(&b, 1, "b");
    link = *net.Connect(a_id, 0, b_id, 0, cfg);
  }
  Network net;
  TestHost a, b;
  NodeId a_id, b_id;
  LinkId link;
};

LinkConfig PlainLink(uint64_t rate, nic::TimeNs delay) {
  LinkConfig cfg;
  cfg.rate_bps = rate;
  cfg.propagation_delay_ns = delay;
  cfg.ethernet_overhead = false;
  return cfg;
}

std::vector<uint64_t> Seqs(const TestHost& h) {
  std::vector<uint64_t> s;
  for (const Arrival& a : h.arrivals()) s.push_back(a.seq);
  return s;
}

TEST(RngTest, UniformStaysInRangeAndCoversIt) {
  Rng rng(7, 3);
  std::vector<int> hits(10);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng.Uniform(10);
    ASSERT_LT(v, 10u);
    ++hits[v];
  }
  for (int h : hits) EXPECT_GT(h, 800);
}

TEST(RngTest, DegenerateProbabilitiesDrawNothing) {
  Rng a(1), b(1);
  EXPECT_FALSE(a.Bernoulli(Probability(0.0)));
  EXPECT_TRUE(a.Bernoulli(Probability(1.0)));
  EXPECT_TRUE(a.Bernoulli(Probability(2.0)));
  EXPECT_EQ(a.Next(), b.Next());
}

TEST(NetworkTest, DelayAndSerializationAreExact) {
  Pair p(PlainLink(k10G, 1000));
  p.a.AddStream({.count = 3, .frame_len = 1000});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), 3u);
  // 1000 B at 10 Gb/s = 800 ns, back to back, plus 1 us of propagation.
  EXPECT_EQ(p.b.arrivals()[0].time, 1800u);
  EXPECT_EQ(p.b.arrivals()[1].time, 2600u);
  EXPECT_EQ(p.b.arrivals()[2].time, 3400u);
  EXPECT_EQ(Seqs(p.b), (std::vector<uint64_t>{0, 1, 2}));
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_EQ(c.tx_frames, 3u);
  EXPECT_EQ(c.delivered, 3u);
  EXPECT_EQ(c.tx_bytes, 3000u);
  EXPECT_EQ(p.net.counters(p.link, Dir::kBtoA).tx_frames, 0u);
}

TEST(NetworkTest, EthernetOverheadCarriesFractionsExactly) {
  LinkConfig cfg = PlainLink(k10G, 500);
  cfg.ethernet_overhead = true;
  Pair p(cfg);
  constexpr int kFrames = 50;
  p.a.AddStream({.count = kFrames, .frame_len = 1001});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), size_t{kFrames});
  for (int k = 0; k < kFrames; ++k) {
    // Frame k starts after k frames of 1001+24 bytes and is received when
    // its preamble, body and FCS (8+1001+4 bytes) are in.
    EXPECT_EQ(p.b.arrivals()[k].time,
              WireNs(uint64_t(k) * 1025 + 1013, k10G) + 500)
        << k;
  }
}

TEST(NetworkTest, ShortFramesArePaddedOnTheWire) {
  LinkConfig cfg = PlainLink(k10G, 0);
  cfg.ethernet_overhead = true;
  Pair p(cfg);
  p.a.AddStream({.count = 2, .frame_len = kTestFrameMinLen});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), 2u);
  EXPECT_EQ(p.b.arrivals()[0].len, kTestFrameMinLen);
  EXPECT_EQ(p.b.arrivals()[0].time, WireNs(8 + 60 + 4, k10G));
  EXPECT_EQ(p.b.arrivals()[1].time, WireNs(84 + 72, k10G));
}

TEST(NetworkTest, RateLimitsThroughput) {
  LinkConfig cfg = PlainLink(k25G, 2000);
  cfg.ethernet_overhead = true;
  Pair p(cfg);
  constexpr uint64_t kFrames = 2000;
  p.a.AddStream({.count = kFrames, .frame_len = 1500});
  p.net.Run(10'000'000);
  ASSERT_EQ(p.b.arrivals().size(), kFrames);
  const nic::TimeNs first = p.b.arrivals().front().time;
  const nic::TimeNs last = p.b.arrivals().back().time;
  // Goodput over the run is the link rate scaled by 1500/1524.
  const double bps =
      double((kFrames - 1) * 1500 * 8) / double(last - first) * 1e9;
  EXPECT_NEAR(bps, 25e9 * 1500 / 1524, 25e9 * 1e-4);
  EXPECT_EQ(last, WireNs((kFrames - 1) * 1524 + 1512, k25G) + 2000);
}

TEST(NetworkTest, PacedStreamKeepsItsInterval) {
  Pair p(PlainLink(k100G, 100));
  p.a.AddStream(
      {.count = 10, .frame_len = 1000, .start = 5000, .interval_ns = 1000});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), 10u);
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(p.b.arrivals()[k].time, 5000u + 1000u * k + 80 + 100);
  }
}

TEST(NetworkTest, FullDuplexDirectionsAreIndependent) {
  Pair p(PlainLink(k10G, 1000));
  p.a.AddStream({.count = 4, .frame_len = 1000});
  p.b.AddStream({.flow = 9, .count = 4, .frame_len = 500});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), 4u);
  ASSERT_EQ(p.a.arrivals().size(), 4u);
  EXPECT_EQ(p.b.arrivals()[3].time, 4u * 800 + 1000);
  EXPECT_EQ(p.a.arrivals()[3].time, 4u * 400 + 1000);
  EXPECT_EQ(p.a.arrivals()[0].flow, 9u);
}

TEST(NetworkTest, LossRateWithinBinomialBound) {
  LinkConfig cfg = PlainLink(k100G, 1000);
  cfg.loss = 0.05;
  Pair p(cfg, 42);
  constexpr uint64_t kFrames = 20000;
  p.a.AddStream({.count = kFrames, .frame_len = 100});
  p.net.Run(100'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_EQ(c.tx_frames, kFrames);
  EXPECT_EQ(c.dropped_loss + c.delivered, kFrames);
  EXPECT_EQ(p.b.arrivals().size(), c.delivered);
  const double mean = kFrames * 0.05;
  const double sigma = std::sqrt(kFrames * 0.05 * 0.95);
  EXPECT_NEAR(double(c.dropped_loss), mean, 5 * sigma);
  // The survivors keep their order.
  const std::vector<uint64_t> seqs = Seqs(p.b);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
}

TEST(NetworkTest, ReorderingHappensAndEveryFrameArrives) {
  LinkConfig cfg = PlainLink(k100G, 1000);
  cfg.reorder = 0.02;
  cfg.reorder_delay_ns = 5000;
  Pair p(cfg, 3);
  constexpr uint64_t kFrames = 5000;
  p.a.AddStream({.count = kFrames, .frame_len = 1000});
  p.net.Run(100'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_GT(c.reordered, 0u);
  EXPECT_NEAR(double(c.reordered), kFrames * 0.02,
              5 * std::sqrt(kFrames * 0.02 * 0.98));
  std::vector<uint64_t> seqs = Seqs(p.b);
  ASSERT_EQ(seqs.size(), kFrames);
  EXPECT_FALSE(std::is_sorted(seqs.begin(), seqs.end()));
  std::sort(seqs.begin(), seqs.end());
  for (uint64_t i = 0; i < kFrames; ++i) ASSERT_EQ(seqs[i], i);
}

TEST(NetworkTest, DuplicationDeliversCopies) {
  LinkConfig cfg = PlainLink(k100G, 1000);
  cfg.duplicate = 0.01;
  cfg.duplicate_gap_ns = 7;
  Pair p(cfg, 5);
  constexpr uint64_t kFrames = 5000;
  p.a.AddStream({.count = kFrames, .frame_len = 200});
  p.net.Run(100'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_GT(c.duplicated, 0u);
  EXPECT_EQ(c.delivered, kFrames + c.duplicated);
  std::vector<int> copies(kFrames);
  for (const Arrival& a : p.b.arrivals()) ++copies[a.seq];
  uint64_t twice = 0;
  for (int n : copies) {
    ASSERT_TRUE(n == 1 || n == 2);
    twice += n == 2;
  }
  EXPECT_EQ(twice, c.duplicated);
}

int BitDifference(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y,
                  size_t* first_byte) {
  int bits = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int d = __builtin_popcount(x[i] ^ y[i]);
    if (d && bits == 0) *first_byte = i;
    bits += d;
  }
  return bits;
}

TEST(NetworkTest, CorruptionFlipsExactlyOneBitOutsideTheMacHeader) {
  LinkConfig cfg = PlainLink(k100G, 1000);
  cfg.corrupt = 0.05;
  Pair p(cfg, 11);
  p.b.set_keep_frames(true);
  const StreamSpec spec{.count = 2000, .frame_len = 300};
  p.a.AddStream(spec);
  p.net.Run(100'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  ASSERT_EQ(p.b.frames().size(), spec.count);
  uint64_t changed = 0;
  for (uint64_t i = 0; i < spec.count; ++i) {
    std::vector<uint8_t> expect(spec.frame_len);
    TestHost::BuildTestFrame(spec, i, expect);
    ASSERT_EQ(p.b.frames()[i].size(), expect.size());
    size_t where = 0;
    const int bits = BitDifference(p.b.frames()[i], expect, &where);
    ASSERT_LE(bits, 1) << i;
    if (bits == 1) {
      ++changed;
      EXPECT_GE(where, kEthHeaderLen);
    }
  }
  EXPECT_GT(changed, 0u);
  EXPECT_EQ(changed, c.corrupted);
}

TEST(NetworkTest, MtuDropsLongFramesAndCountsThem) {
  LinkConfig cfg = PlainLink(k100G, 100);
  cfg.max_frame_len = 1200;
  Pair p(cfg);
  p.a.AddStream({.flow = 1, .count = 10, .frame_len = 1500});
  p.a.AddStream({.flow = 2, .count = 10, .frame_len = 1200});
  p.net.Run(1'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_EQ(c.tx_frames, 20u);
  EXPECT_EQ(c.dropped_mtu, 10u);
  EXPECT_EQ(c.delivered, 10u);
  EXPECT_EQ(p.b.received_bytes(1), 0u);
  EXPECT_EQ(p.b.received_bytes(2), 12000u);
}

TEST(NetworkTest, ScriptedFaultsHitExactlyTheChosenFrames) {
  Pair p(PlainLink(k100G, 100));
  p.b.set_keep_frames(true);
  const StreamSpec spec{.count = 10, .frame_len = 100};
  p.a.AddStream(spec);
  p.net.SetFaultHook(p.link, Dir::kAtoB, [](const FaultContext& ctx) {
    if (ctx.index == 2) return FaultAction::Drop();
    if (ctx.index == 4) return FaultAction::Corrupt(8 * 60 + 3);
    // A predicate on the bytes: the frame whose sequence number is 7.
    if (ctx.frame[14 + 28 + 11] == 7) return FaultAction::Delay(100'000);
    return FaultAction::Pass();
  });
  p.net.Run(10'000'000);
  const LinkCounters& c = p.net.counters(p.link, Dir::kAtoB);
  EXPECT_EQ(c.dropped_fault, 1u);
  EXPECT_EQ(c.corrupted, 1u);
  EXPECT_EQ(c.reordered, 1u);
  EXPECT_EQ(Seqs(p.b), (std::vector<uint64_t>{0, 1, 3, 4, 5, 6, 8, 9, 7}));
  std::vector<uint8_t> expect(spec.frame_len);
  TestHost::BuildTestFrame(spec, 4, expect);
  expect[60] ^= 0x80 >> 3;
  EXPECT_EQ(p.b.frames()[3], expect);
}

std::vector<std::pair<nic::TimeNs, uint64_t>> ImpairedTrace(uint64_t seed) {
  LinkConfig cfg = PlainLink(k25G, 3000);
  cfg.ethernet_overhead = true;
  cfg.loss = 0.01;
  cfg.reorder = 0.01;
  cfg.duplicate = 0.01;
  cfg.corrupt = 0.01;
  Pair p(cfg, seed);
  p.a.AddStream({.count = 3000, .frame_len = 700});
  p.a.AddStream(
      {.flow = 1, .count = 1000, .frame_len = 64, .interval_ns = 300});
  p.net.Run(10'000'000);
  std::vector<std::pair<nic::TimeNs, uint64_t>> trace;
  for (const Arrival& a : p.b.arrivals()) {
    trace.emplace_back(a.time, a.seq * 2 + a.flow);
  }
  return trace;
}

TEST(NetworkTest, SameSeedSameTraceOtherSeedOtherTrace) {
  const auto t1 = ImpairedTrace(1234);
  const auto t2 = ImpairedTrace(1234);
  const auto t3 = ImpairedTrace(1235);
  EXPECT_GT(t1.size(), 3500u);
  EXPECT_EQ(t1, t2);
  EXPECT_NE(t1, t3);
}

TEST(NetworkTest, RunUntilStopsWhenThePredicateHolds) {
  Pair p(PlainLink(k10G, 1000));
  p.a.AddStream({.count = 100, .frame_len = 1000});
  EXPECT_TRUE(
      p.net.RunUntil([&] { return p.b.received_frames() == 10; }, 1'000'000));
  EXPECT_EQ(p.net.now(), 1000u + 10 * 800);
  EXPECT_FALSE(p.net.RunUntil([] { return false; }, 20'000));
  EXPECT_EQ(p.net.now(), 20'000u);
}

TEST(NetworkTest, DeeperTxQueueKeepsTimingAndOrder) {
  Pair p(PlainLink(k10G, 1000), 1, 8);
  p.a.AddStream({.count = 20, .frame_len = 1000});
  p.net.Run(1'000'000);
  ASSERT_EQ(p.b.arrivals().size(), 20u);
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(p.b.arrivals()[k].time, 1000u + 800u * (k + 1));
    EXPECT_EQ(p.b.arrivals()[k].seq, uint64_t(k));
  }
}

TEST(NetworkTest, SamplerAndObserverSeeTheRun) {
  Pair p(PlainLink(k10G, 1000));
  p.a.AddStream({.count = 10, .frame_len = 1000});
  std::vector<std::pair<nic::TimeNs, uint64_t>> samples;
  p.net.AddSampler(2000, [&](nic::TimeNs t) {
    samples.emplace_back(t, p.b.received_frames());
  });
  uint64_t observed_bytes = 0;
  nic::ManualClock mirror;
  p.net.MirrorClock(&mirror);
  p.net.SetDeliveryObserver([&](const DeliveryInfo& d) {
    EXPECT_EQ(d.node, p.b_id);
    EXPECT_EQ(d.time, p.net.now());
    EXPECT_EQ(mirror.Now(), d.time);
    observed_bytes += d.frame.size();
  });
  p.net.Run(10'000);
  EXPECT_EQ(mirror.Now(), 10'000u);
  EXPECT_EQ(observed_bytes, 10'000u);
  ASSERT_EQ(samples.size(), 6u);  // 0, 2000, ..., 10000
  EXPECT_EQ(samples[1], (std::pair<nic::TimeNs, uint64_t>{2000, 1}));
  EXPECT_EQ(samples[5], (std::pair<nic::TimeNs, uint64_t>{10000, 10}));
}

TEST(NetworkTest, ConnectRejectsBadPorts) {
  Network net;
  TestHost a, b;
  const NodeId x = net.AddNode(&a, 1);
  const NodeId y = net.AddNode(&b, 2);
  EXPECT_FALSE(net.Connect(x, 1, y, 0, LinkConfig{}).ok());
  EXPECT_FALSE(net.Connect(x, 0, 7, 0, LinkConfig{}).ok());
  ASSERT_TRUE(net.Connect(x, 0, y, 1, LinkConfig{}).ok());
  EXPECT_FALSE(net.Connect(x, 0, y, 0, LinkConfig{}).ok());
}

TEST(NetworkTest, SteadyStateReusesFrameBuffers) {
  Pair p(PlainLink(k100G, 10'000));
  p.a.AddStream({.count = 100'000, .frame_len = 1000});
  p.net.Run(100'000'000);
  EXPECT_EQ(p.b.received_frames(), 100'000u);
  // In flight: one propagation delay's worth of frames (10 us / 80 ns).
  EXPECT_LT(p.net.frame_buffers_allocated(), 512u);
}

// Claims frames it did not fill (len 0) or overfills (len > capacity) and
// records the bursts it receives.
class Misbehaving : public nic::FrameEndpoint {
 public:
  void Receive(uint16_t, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override {
    bursts.emplace_back(now, frames.size());
  }
  size_t Transmit(uint16_t, std::span<nic::TxFrame> frames,
                  nic::TimeNs) override {
    if (calls++ >= 3 || frames.empty()) return 0;
    capacity = frames[0].capacity;
    frames[0].len = calls == 1 ? 0 : calls == 2 ? capacity + 1 : 100;
    return 1;
  }
  nic::TimeNs NextEventTime() const override {
    return calls < 3 ? wake_at : nic::kNever;
  }
  int calls = 0;
  uint32_t capacity = 0;
  nic::TimeNs wake_at = nic::kNever;
  std::vector<std::pair<nic::TimeNs, size_t>> bursts;
};

TEST(NetworkTest, BadFramesFromAnEndpointAreCountedNotSent) {
  Network net(NetworkConfig{.frame_capacity = 2048});
  Misbehaving m;
  TestHost sink;
  const NodeId x = net.AddNode(&m, 1);
  const LinkId link =
      *net.Connect(x, 0, net.AddNode(&sink, 1), 0, PlainLink(k100G, 10));
  net.Run(1000);
  EXPECT_EQ(m.capacity, 2048u);
  EXPECT_EQ(m.calls, 1);  // the endpoint is not polled again without cause
  m.wake_at = 2000;
  net.Kick(x);
  net.Run(5000);
  // Polled by the Kick at 1000, at NextEventTime 2000, and when the wire
  // freed at 2008.
  EXPECT_EQ(m.calls, 4);
  const LinkCounters& c = net.counters(link, Dir::kAtoB);
  EXPECT_EQ(c.tx_invalid, 2u);
  EXPECT_EQ(c.tx_frames, 1u);
  EXPECT_EQ(sink.received_frames(), 1u);
  EXPECT_EQ(sink.arrivals()[0].time, 2000u + 8 + 10);
}

TEST(NetworkTest, SimultaneousArrivalsComeUpInOneBurst) {
  Network net;
  TestHost src;
  Misbehaving dst;
  LinkConfig cfg = PlainLink(k100G, 10);
  cfg.duplicate = 1.0;  // every frame twice, at the same instant
  (void)net.Connect(net.AddNode(&src, 1), 0, net.AddNode(&dst, 1), 0, cfg);
  dst.calls = 3;  // sends nothing
  src.AddStream({.count = 3, .frame_len = 1000});
  net.Run(10'000);
  ASSERT_EQ(dst.bursts.size(), 3u);
  for (const auto& [t, n] : dst.bursts) EXPECT_EQ(n, 2u) << t;
}

}  // namespace
}  // namespace rocemu::simnet
