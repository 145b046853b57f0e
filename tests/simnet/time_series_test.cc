#include "tests/simnet/time_series.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/simnet/switch.h"
#include "tests/simnet/test_host.h"

namespace rocemu::simnet {
namespace {

TEST(TimeSeriesTest, SamplesQueueDepthAndFlowBytesAndWritesCsv) {
  Network net;
  Switch sw(SwitchConfig{.num_ports = 3});
  TestHost h[3];
  const NodeId s = net.AddNode(&sw, 3);
  LinkConfig cfg;
  cfg.ethernet_overhead = false;
  cfg.propagation_delay_ns = 1000;
  for (int i = 0; i < 3; ++i) {
    const MacAddr mac{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)};
    ASSERT_TRUE(net.Connect(net.AddNode(&h[i], 1), 0, s, i, cfg).ok());
    ASSERT_TRUE(sw.AddRoute(mac, i).ok());
  }
  for (int i = 0; i < 2; ++i) {
    StreamSpec spec;
    spec.flow = i;
    spec.count = 500;
    spec.src_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)};
    spec.dst_mac = {0x02, 0, 0, 0, 0, 3};
    h[i].AddStream(spec);
  }
  TimeSeries ts;
  ts.AddColumn("queue_bytes", [&] { return double(sw.queue_bytes(2, 3)); });
  ts.AddColumn("flow0_bytes", [&] { return double(h[2].received_bytes(0)); });
  ts.AddColumn("flow1_bytes", [&] { return double(h[2].received_bytes(1)); });
  ts.Attach(net, 1000);
  net.Run(200'000);
  ASSERT_EQ(ts.rows(), 201u);
  EXPECT_EQ(ts.time(200), 200'000u);
  double peak = 0;
  for (size_t r = 0; r < ts.rows(); ++r) {
    peak = std::max(peak, ts.value(r, 0));
    if (r > 0) {
      EXPECT_GE(ts.value(r, 1), ts.value(r - 1, 1));
      EXPECT_GE(ts.value(r, 2), ts.value(r - 1, 2));
    }
  }
  // Two 100G senders into one 100G port: the queue grows by about one frame
  // per frame time while both send (500 frames each).
  EXPECT_GT(peak, 400'000);
  EXPECT_EQ(peak, double(sw.max_queue_bytes(2, 3)));
  EXPECT_EQ(ts.value(200, 0), 0);
  EXPECT_EQ(ts.value(200, 1), 500'000);
  EXPECT_EQ(ts.value(200, 2), 500'000);

  const std::string path =
      ::testing::TempDir() + "/simnet_ts_" + std::to_string(getpid()) + ".csv";
  ASSERT_TRUE(ts.WriteCsv(path).ok());
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_ns,queue_bytes,flow0_bytes,flow1_bytes");
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 201);
  unlink(path.c_str());
  EXPECT_FALSE(ts.WriteCsv("/nonexistent-dir/x.csv").ok());
}

}  // namespace
}  // namespace rocemu::simnet
