// ns3/'s parsers and generators, and small fabrics end to end: routes
// reach every host with ECMP over every core, each verb completes with the
// bytes in place, PFC headroom and dynamic thresholds behave; the report
// says what the run did and writes every file it names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ns3/report.h"
#include "ns3/scenario.h"
#include "ns3/topology.h"
#include "ns3/units.h"
#include "ns3/workload.h"

namespace rocemu::ns3sim {
namespace {

std::string ReadWorkload(const char* name) {
  std::ifstream f(std::string(ROCEMU_NS3_WORKLOADS) + "/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(Units, RatesTimesAndBytes) {
  EXPECT_EQ(*ParseRateBps("25G"), 25'000'000'000u);
  EXPECT_EQ(*ParseRateBps("100Gbps"), 100'000'000'000u);
  EXPECT_EQ(*ParseRateBps("400M"), 400'000'000u);
  EXPECT_EQ(*ParseTimeNs("1us"), 1000u);
  EXPECT_EQ(*ParseTimeNs("2.5ms"), 2'500'000u);
  EXPECT_EQ(*ParseTimeNs("0"), 0u);
  EXPECT_EQ(*ParseBytes("64KiB"), 65536u);
  EXPECT_EQ(*ParseBytes("30MB"), 30'000'000u);
  EXPECT_EQ(*ParseBytes("96K"), 96'000u);
  EXPECT_EQ(*ParseBytes("1500"), 1500u);
  EXPECT_FALSE(ParseTimeNs("10").ok());  // a time needs a unit
  EXPECT_FALSE(ParseRateBps("fast").ok());
  EXPECT_FALSE(ParseBytes("-1K").ok());
}

TEST(Topology, FatTreeShape) {
  const TopologySpec t = FatTree(4, 0, 100'000'000'000, 0, 1000);
  EXPECT_EQ(t.hosts, 16u);
  EXPECT_EQ(t.switches, 20u);
  EXPECT_EQ(t.links.size(), 48u);
  EXPECT_TRUE(t.Validate().ok());
  const TopologySpec big =
      FatTree(8, 10, 100'000'000'000, 250'000'000'000, 1000);
  EXPECT_EQ(big.hosts, 320u);
  EXPECT_EQ(big.switches, 80u);
  EXPECT_EQ(big.links.back().rate_bps, 250'000'000'000u);
}

TEST(Topology, ParsesShapesAndEdgeLists) {
  absl::StatusOr<TopologySpec> t =
      ParseTopology("# comment\nfattree k=8 hosts_per_edge=2 rate=25G\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->hosts, 64u);
  EXPECT_EQ(t->links.front().rate_bps, 25'000'000'000u);
  t = ParseTopology("incast senders=3 delay=2us");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->hosts, 4u);
  EXPECT_EQ(t->links[0].delay_ns, 2000u);
  t = ParseTopology(
      "edges hosts=2 switches=2 rate=10G\n"
      "link h0 s0\nlink h1 s1\nlink s0 s1 40G 500ns\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->links.size(), 3u);
  EXPECT_EQ(t->links[2].a, 2u);  // s0 is node hosts + 0
  EXPECT_EQ(t->links[2].rate_bps, 40'000'000'000u);
  EXPECT_EQ(t->links[2].delay_ns, 500u);

  EXPECT_FALSE(ParseTopology("fattree k=5").ok());           // odd k
  EXPECT_FALSE(ParseTopology("fattree k=4 colour=3").ok());  // unknown key
  EXPECT_FALSE(ParseTopology("ring n=4").ok());
  EXPECT_FALSE(ParseTopology("incast senders=2\nlink h0 s0").ok());
  // A host with two links: an RNIC has one port.
  EXPECT_FALSE(
      ParseTopology("edges hosts=2 switches=1\nlink h0 s0\nlink h1 s0\n"
                    "link h0 s0\n")
          .ok());
  EXPECT_FALSE(ParseTopology("edges hosts=2 switches=1\nlink h0 s9\n").ok());
}

TEST(Workload, CdfsFromTheirFiles) {
  absl::StatusOr<SizeCdf> web = SizeCdf::Parse(ReadWorkload("websearch.cdf"));
  ASSERT_TRUE(web.ok()) << web.status();
  EXPECT_NEAR(web->MeanBytes(), 1'711'250, 1);
  EXPECT_EQ(web->Quantile(0.15), 10'000u);
  EXPECT_EQ(web->Quantile(0.175), 15'000u);  // between two points
  EXPECT_EQ(web->Quantile(1.0), 30'000'000u);
  absl::StatusOr<SizeCdf> hadoop = SizeCdf::Parse(ReadWorkload("hadoop.cdf"));
  ASSERT_TRUE(hadoop.ok()) << hadoop.status();
  EXPECT_NEAR(hadoop->MeanBytes(), 120'420.75, 1);
  EXPECT_FALSE(SizeCdf::Parse("0 0\n100 50\n").ok());          // not to 100
  EXPECT_FALSE(SizeCdf::Parse("0 0\n100 60\n50 100\n").ok());  // decreasing
}

TEST(Workload, PoissonArrivalsOfferTheLoad) {
  // Every flow 1000 B: 0.5 x 10 Gb/s for 10 ms is 6250 flows per host.
  absl::StatusOr<SizeCdf> fixed = SizeCdf::Parse("1000 0\n1000 100\n");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  PoissonWorkload w;
  w.load = 0.5;
  w.duration_ns = 10'000'000;
  const std::vector<FlowSpec> flows =
      GeneratePoisson(*fixed, w, std::vector<uint64_t>(4, 10'000'000'000));
  std::vector<uint32_t> per_host(4, 0);
  for (const FlowSpec& f : flows) {
    ASSERT_NE(f.src, f.dst);
    ASSERT_LT(f.dst, 4u);
    ASSERT_LT(f.start_ns, w.duration_ns);
    EXPECT_EQ(f.bytes, 1000u);
    ++per_host[f.src];
  }
  for (uint32_t n : per_host) EXPECT_NEAR(n, 6250, 6250 * 0.05);
  for (size_t i = 1; i < flows.size(); ++i) {
    ASSERT_LE(flows[i - 1].start_ns, flows[i].start_ns);
  }
}

TEST(Workload, FlowLists) {
  absl::StatusOr<std::vector<FlowSpec>> f = ParseFlowList(
      "1 0 2MiB 0\n2 0 1M 10us read\n# long one\n3 1 0 0 send 1ms\n", 4);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].bytes, 2u << 20);
  EXPECT_EQ((*f)[1].start_ns, 10'000u);
  EXPECT_EQ((*f)[1].op, FlowOp::kRead);
  EXPECT_EQ((*f)[2].stop_ns, 1'000'000u);
  EXPECT_FALSE(ParseFlowList("1 1 1K 0\n", 4).ok());  // to itself
  EXPECT_FALSE(ParseFlowList("1 7 1K 0\n", 4).ok());  // no host 7
  EXPECT_FALSE(ParseFlowList("1 0 1K 0 atomic\n", 4).ok());
  EXPECT_FALSE(ParseFlowList("1 0 1K 5us write 2us\n", 4).ok());
}

ScenarioConfig Small(const TopologySpec& t) {
  ScenarioConfig c;
  c.topology = t;
  c.driver.per_host_memory = true;
  c.deadline_ns = 100'000'000;
  return c;
}

TEST(Fabric, EveryPairReachableOverEveryCore) {
  // All to all in a k=4 fat-tree, one 4 KiB WRITE flow per ordered pair.
  ScenarioConfig c = Small(FatTree(4, 0, 100'000'000'000, 0, 1000));
  for (uint32_t a = 0; a < 16; ++a) {
    for (uint32_t b = 0; b < 16; ++b) {
      if (a != b) c.flows.push_back({a, b, 4096, a * 1000 + b * 10});
    }
  }
  absl::StatusOr<ScenarioResult> r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 240u);
  EXPECT_TRUE(r->payload_ok);
  EXPECT_EQ(r->counters.no_route, 0u);
  EXPECT_EQ(r->counters.rx_unknown_qp + r->counters.rx_malformed, 0u);
  // Switches 16..19 are the cores: ECMP sends inter-pod flows over each.
  ASSERT_EQ(r->switch_frames.size(), 20u);
  for (size_t core = 16; core < 20; ++core) {
    EXPECT_GT(r->switch_frames[core], 0u) << "core " << core;
  }
  // A flow alone between two hosts of one edge switch takes two links.
  for (const FlowRecord& f : r->flows) {
    EXPECT_GE(f.slowdown, 0.9) << f.spec.src << "->" << f.spec.dst;
  }
}

TEST(Fabric, EveryVerbDeliversItsBytes) {
  ScenarioConfig c = Small(Dumbbell(2, 2, 25'000'000'000, 0, 1000));
  c.flows = {{0, 2, 300'000, 0, FlowOp::kWrite},
             {1, 3, 300'000, 0, FlowOp::kSend},
             {2, 1, 300'000, 0, FlowOp::kRead},
             {3, 0, 100'000, 0, FlowOp::kUdSend}};
  absl::StatusOr<ScenarioResult> r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 4u);
  EXPECT_TRUE(r->payload_ok);
  for (const FlowRecord& f : r->flows) {
    EXPECT_TRUE(f.result.done) << FlowOpName(f.spec.op);
    EXPECT_GE(f.result.bytes_done, f.spec.bytes) << FlowOpName(f.spec.op);
  }
}

ScenarioConfig Incast8(uint64_t headroom) {
  ScenarioConfig c = Small(Incast(8, 25'000'000'000, 1000));
  c.hosts.dcqcn = false;
  c.switches.headroom_bytes = headroom;
  for (uint32_t i = 1; i <= 8; ++i) c.flows.push_back({i, 0, 1 << 20, 0});
  return c;
}

TEST(Switch, PfcHeadroomAbsorbsWhatIsInFlight) {
  // With the derived headroom (mlx5's formula) nothing is lost.
  absl::StatusOr<ScenarioResult> r = RunScenario(Incast8(0));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 8u);
  EXPECT_GT(r->counters.pfc_frames, 0u);
  EXPECT_EQ(r->counters.headroom_drops, 0u);
  EXPECT_EQ(r->counters.retransmissions, 0u);
  // One frame of headroom cannot hold a round trip at 25 Gb/s: frames in
  // flight after the XOFF are dropped (and recovered by go-back-N).
  r = RunScenario(Incast8(1100));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 8u);
  EXPECT_TRUE(r->payload_ok);
  EXPECT_GT(r->counters.headroom_drops, 0u);
  EXPECT_GT(r->counters.retransmissions, 0u);
}

TEST(Switch, DynamicThresholdsPauseBeforeTheBufferFills) {
  ScenarioConfig c = Incast8(0);
  c.switches.buffer_bytes = 2'000'000;
  c.switches.pfc_dynamic_shift = 3;
  absl::StatusOr<ScenarioResult> r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 8u);
  EXPECT_GT(r->counters.pfc_frames, 0u);
  EXPECT_EQ(r->counters.tail_drops + r->counters.headroom_drops, 0u);
  EXPECT_LT(r->counters.max_switch_buffer, c.switches.buffer_bytes);
  // A static XOFF above what the buffer holds: the buffer overflows.
  c.switches.pfc_dynamic_shift = 0;
  c.switches.pfc_xoff_bytes = 400'000;
  c.switches.pfc_xon_bytes = 390'000;
  r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->counters.tail_drops, 0u);
}

TEST(Capture, PcapOfAHostPort) {
  ScenarioConfig c = Small(Incast(1, 25'000'000'000, 1000));
  c.flows = {{1, 0, 10'000, 0}};
  c.pcap_hosts = {0};
  // This run's own file, gone before (an earlier run's cannot stand in for
  // it) and after.
  c.pcap_prefix = testing::TempDir() + "/ns3cap-" + std::to_string(getpid());
  const std::string path = c.pcap_prefix + "-h0.pcap";
  std::filesystem::remove(path);
  absl::StatusOr<ScenarioResult> r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(f.good());
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::filesystem::remove(path);
  // Header + 10 data frames in + 1 ACK out, each with a 16-byte record.
  EXPECT_GT(bytes.size(), 24u + 10 * (16 + 1000));
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0xD4);  // pcap magic, LE
}

TEST(Report, SummaryAndFiles) {
  ScenarioConfig c = Small(Incast(2, 25'000'000'000, 1000));
  c.flows = {{1, 0, 200'000, 0}, {2, 0, 3000, 0, FlowOp::kSend}};
  c.idle_connections = 10;
  c.sample_ns = 10'000;
  c.queues = {{0, 0, 3}};
  c.series_flows = 2;
  absl::StatusOr<ScenarioResult> r = RunScenario(c);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string s = FormatSummary(c, *r);
  EXPECT_NE(s.find("topology: incast 2:1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("flows: 2 (finished 2, failed 0, unfinished 0)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("with 20 idle QPs"), std::string::npos) << s;
  EXPECT_NE(s.find("payload check: every finished flow's bytes arrived"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("1000-9999 B                  1"), std::string::npos) << s;
  const nlohmann::json j = SummaryJson(c, *r);
  EXPECT_EQ(j["finished"], 2);
  EXPECT_EQ(j["idle_qps"], 20);
  EXPECT_GT(j["events"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["cnp_sent"], r->counters.cnp_sent);
  EXPECT_EQ(j["pfc_frames"], r->counters.pfc_frames);
  EXPECT_EQ(j["slowdown_by_size"].size(), SlowdownBySize(r->flows).size());
  // A directory of this run's own that does not exist yet: WriteOutputs
  // creates it, and no earlier run's files can stand in for missing ones.
  const std::string root =
      testing::TempDir() + "/ns3report-" + std::to_string(getpid());
  std::filesystem::remove_all(root);
  const std::string dir = root + "/new";
  ASSERT_TRUE(WriteOutputs(dir, c, *r, 2).ok());
  for (const char* f :
       {"summary.txt", "summary.json", "flows.csv", "slowdown_by_size.csv",
        "slowdown_by_percentile.csv", "series.csv"}) {
    std::ifstream in(dir + "/" + f);
    std::string line;
    EXPECT_TRUE(std::getline(in, line) && !line.empty()) << f;
  }
  std::ifstream series(dir + "/series.csv");
  std::string header;
  std::getline(series, header);
  EXPECT_EQ(header,
            "time_us,s0_p0_prio3_kb,flow0_gbps,flow1_gbps,flow0_rp_gbps,"
            "flow1_rp_gbps,pfc_frames,ecn_marks,drops");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace rocemu::ns3sim
