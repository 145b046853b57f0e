#include "emulator/capture/pcap_writer.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/libpcap_frames.h"
#include "tests/temp_dir.h"

namespace rocemu::emulator {
namespace {

using Frame = test_support::CapturedFrame;
using test_support::ReadWithLibpcap;

class PcapWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tmp_.Make("pcap")); }
  test_support::TempDir tmp_;
};

TEST_F(PcapWriterTest, WritesFramesWithNanosecondTimestamps) {
  std::string path = tmp_.path() + "/a.pcap";
  {
    PcapWriter w;
    ASSERT_TRUE(w.Open(path, 65535, 0).ok());
    std::vector<uint8_t> f1(60, 0x11), f2(1514, 0x22);
    w.Write(f1, 1795320326'155226304ull);
    w.Write(f2, 1795320326'155226999ull);
    EXPECT_EQ(w.frames(), 2u);
  }
  std::vector<Frame> got = ReadWithLibpcap(path);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].ns, 1795320326'155226304ull);
  EXPECT_EQ(got[1].ns, 1795320326'155226999ull);
  EXPECT_EQ(got[0].data, std::vector<uint8_t>(60, 0x11));
  EXPECT_EQ(got[1].data.size(), 1514u);
}

TEST_F(PcapWriterTest, RotatesBySizeWithoutLosingFrames) {
  std::string path = tmp_.path() + "/r.pcap";
  PcapWriter w;
  ASSERT_TRUE(w.Open(path, 65535, 4096).ok());
  std::vector<uint8_t> f(1000, 0);
  for (int i = 0; i < 20; ++i) {
    f[0] = static_cast<uint8_t>(i);
    w.Write(f, 1000 + i);
  }
  w.Close();
  EXPECT_GE(w.rotations(), 4u);
  EXPECT_EQ(w.errors(), 0u);
  std::vector<Frame> all;
  for (uint32_t r = 1; r <= w.rotations(); ++r) {
    std::vector<Frame> part = ReadWithLibpcap(path + "." + std::to_string(r));
    all.insert(all.end(), part.begin(), part.end());
  }
  std::vector<Frame> last = ReadWithLibpcap(path);
  all.insert(all.end(), last.begin(), last.end());
  ASSERT_EQ(all.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(all[i].data[0], i);
    EXPECT_EQ(all[i].ns, 1000u + i);
  }
}

TEST_F(PcapWriterTest, ReopenNeverTruncatesACapture) {
  std::string path = tmp_.path() + "/h.pcap";
  PcapWriter w;
  ASSERT_TRUE(w.Open(path, 65535, 0).ok());
  std::vector<uint8_t> f(64, 1);
  w.Write(f, 1);
  ASSERT_TRUE(w.Reopen().ok());  // file still in place: kept as h.pcap.1
  w.Write(f, 2);
  // Moved away by logrotate: a fresh file, nothing renamed.
  ASSERT_EQ(std::rename(path.c_str(), (tmp_.path() + "/moved.pcap").c_str()),
            0);
  ASSERT_TRUE(w.Reopen().ok());
  w.Write(f, 3);
  w.Close();
  ASSERT_EQ(ReadWithLibpcap(path + ".1").size(), 1u);
  EXPECT_EQ(ReadWithLibpcap(path + ".1")[0].ns, 1u);
  ASSERT_EQ(ReadWithLibpcap(tmp_.path() + "/moved.pcap").size(), 1u);
  EXPECT_EQ(ReadWithLibpcap(tmp_.path() + "/moved.pcap")[0].ns, 2u);
  ASSERT_EQ(ReadWithLibpcap(path).size(), 1u);
  EXPECT_EQ(ReadWithLibpcap(path)[0].ns, 3u);
}

TEST_F(PcapWriterTest, UnwritablePathIsAnError) {
  PcapWriter w;
  EXPECT_FALSE(w.Open(tmp_.path() + "/no/such/dir/x.pcap", 65535, 0).ok());
  EXPECT_FALSE(w.is_open());
  std::vector<uint8_t> f(60, 0);
  w.Write(f, 1);  // harmless when closed
  EXPECT_EQ(w.frames(), 0u);
}

}  // namespace
}  // namespace rocemu::emulator
