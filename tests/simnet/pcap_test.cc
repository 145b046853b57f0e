#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/libpcap_frames.h"
#include "tests/simnet/network.h"
#include "tests/simnet/pcap_writer.h"
#include "tests/simnet/test_host.h"

namespace rocemu::simnet {
namespace {

using Record = test_support::CapturedFrame;

// Every frame, checked to be whole (the simulated ports capture all of it).
std::vector<Record> ReadPcap(const std::string& path) {
  std::vector<Record> out = test_support::ReadWithLibpcap(path);
  for (const Record& r : out) EXPECT_EQ(r.data.size(), r.len);
  return out;
}

std::string TempPath(const char* name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) +
         ".pcap";
}

TEST(PcapTest, PortCaptureHasVirtualTimestampsAndBytes) {
  Network net;
  TestHost a, b;
  b.set_keep_frames(true);
  const NodeId x = net.AddNode(&a, 1);
  const NodeId y = net.AddNode(&b, 1);
  LinkConfig cfg;
  cfg.rate_bps = 10'000'000'000;
  cfg.propagation_delay_ns = 1'500'000'000;  // crosses a second boundary
  cfg.ethernet_overhead = false;
  const LinkId link = *net.Connect(x, 0, y, 0, cfg);
  const std::string tx_path = TempPath("simnet_tx");
  const std::string rx_path = TempPath("simnet_rx");
  ASSERT_TRUE(net.CapturePort(x, 0, tx_path).ok());
  ASSERT_TRUE(net.CapturePort(y, 0, rx_path).ok());
  net.SetFaultHook(link, Dir::kAtoB, [](const FaultContext& c) {
    return c.index == 1 ? FaultAction::Corrupt(8 * 100) : FaultAction::Pass();
  });
  const StreamSpec spec{.count = 3, .frame_len = 1000};
  a.AddStream(spec);
  net.Run(2'000'000'000);
  net.CloseCaptures();

  const std::vector<Record> tx = ReadPcap(tx_path);
  const std::vector<Record> rx = ReadPcap(rx_path);
  ASSERT_EQ(tx.size(), 3u);
  ASSERT_EQ(rx.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    std::vector<uint8_t> sent(1000);
    TestHost::BuildTestFrame(spec, k, sent);
    EXPECT_EQ(tx[k].ns, 800u * k);
    EXPECT_EQ(tx[k].data, sent);
    EXPECT_EQ(rx[k].ns, 1'500'000'000u + 800u * (k + 1));
    EXPECT_EQ(rx[k].ns, b.arrivals()[k].time);
    EXPECT_EQ(rx[k].data, b.frames()[k]);
  }
  // The receive side shows the corruption, the send side does not.
  EXPECT_NE(rx[1].data, tx[1].data);
  unlink(tx_path.c_str());
  unlink(rx_path.c_str());
}

TEST(PcapTest, OpenFailsCleanlyOnABadPath) {
  EXPECT_FALSE(PcapWriter::Open("/nonexistent-dir/x.pcap").ok());
}

}  // namespace
}  // namespace rocemu::simnet
