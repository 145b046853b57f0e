// The pcapng writer against two readers that are not ours: libpcap (the
// frames, their times and lengths) and tshark (every option as Wireshark
// 4.0 decodes it: direction, packet id, hardware verdict, comment).
#include "emulator/capture/pcapng_writer.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/libpcap_frames.h"
#include "tests/temp_dir.h"

namespace rocemu::capture {
namespace {

using Frame = test_support::CapturedFrame;
using test_support::ReadWithLibpcap;

// tshark's fields, one vector per frame.
std::vector<std::vector<std::string>> Tshark(const std::string& path,
                                             const std::string& fields) {
  std::string cmd = "tshark -n -r " + path + " -T fields -E separator='|'";
  for (absl::string_view f : absl::StrSplit(fields, ' ')) {
    cmd += " -e " + std::string(f);
  }
  cmd += " 2>/dev/null";
  std::vector<std::vector<std::string>> rows;
  std::FILE* f = popen(cmd.c_str(), "r");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return rows;
  char line[4096];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    rows.push_back(absl::StrSplit(s, '|'));
  }
  EXPECT_EQ(pclose(f), 0) << cmd;
  return rows;
}

std::vector<uint8_t> ArpFrame(uint8_t fill, size_t len) {
  std::vector<uint8_t> f(len, fill);
  f[12] = 0x88;  // local experimental: Wireshark shows it as data
  f[13] = 0xB5;
  return f;
}

class PcapngWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tmp_.Make("pcapng")); }
  test_support::TempDir tmp_;
};

TEST_F(PcapngWriterTest, EveryOptionReadsBackInTshark) {
  const std::string path = tmp_.path() + "/a.pcapng";
  {
    PcapngWriter w;
    ASSERT_TRUE(w.Open(path, 65535, 0, "p0").ok());
    w.Write(ArpFrame(0x11, 60), 1795320326'155226304ull,
            {Direction::kInbound, 42, 12,
             "dropped: R_Key 0x2d5: VA 0x7f00+4096 outside MR [0x7f00,+2048)"});
    w.Write(ArpFrame(0x22, 61), 1795320326'155226999ull,
            {Direction::kOutbound, 43, 0, "answers packet 42"});
    w.Write(ArpFrame(0x33, 62), 1795320327'000000001ull, {});
    // A truncated copy (a flight recorder's snapshot) keeps its length.
    std::vector<uint8_t> big = ArpFrame(0x44, 1500);
    w.Write(std::span<const uint8_t>(big).first(96), 1795320327'5ull,
            {Direction::kInbound, 1ull << 48, 0x0102, ""}, 1500);
    EXPECT_EQ(w.frames(), 4u);
    ASSERT_TRUE(w.Close().ok());
  }
  std::vector<Frame> got = ReadWithLibpcap(path);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].ns, 1795320326'155226304ull);
  EXPECT_EQ(got[1].ns, 1795320326'155226999ull);
  EXPECT_EQ(got[0].data, ArpFrame(0x11, 60));
  EXPECT_EQ(got[1].data, ArpFrame(0x22, 61));  // padded on disk, not here
  EXPECT_EQ(got[3].data.size(), 96u);
  EXPECT_EQ(got[3].len, 1500u);

  auto rows = Tshark(path,
                     "frame.packet_flags_direction frame.packet_id "
                     "frame.verdict.hw frame.comment frame.interface_name "
                     "_ws.malformed");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{
                         "0x00000001", "42", "00 0c",
                         "dropped: R_Key 0x2d5: VA 0x7f00+4096 outside MR "
                         "[0x7f00,+2048)",
                         "p0", ""}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"0x00000002", "43", "",
                                               "answers packet 42", "p0", ""}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"", "", "", "", "p0", ""}));
  EXPECT_EQ(rows[3][1], "281474976710656");
  EXPECT_EQ(rows[3][2], "01 02");
  // Wireshark filters on them.
  EXPECT_EQ(
      Tshark(path + " -Y 'frame.verdict.hw == 00:0c'", "frame.number").size(),
      1u);
  EXPECT_EQ(Tshark(path + " -Y 'frame.comment contains \"packet 42\"'",
                   "frame.packet_id"),
            (std::vector<std::vector<std::string>>{{"43"}}));
}

TEST_F(PcapngWriterTest, RotatesReopensAndWritesToMemory) {
  const std::string path = tmp_.path() + "/r.pcapng";
  PcapngWriter w;
  ASSERT_TRUE(w.Open(path, 65535, 600).ok());
  for (int i = 0; i < 10; ++i) {
    w.Write(ArpFrame(static_cast<uint8_t>(i), 100), 1000 + i,
            {Direction::kInbound, static_cast<uint64_t>(i + 1), 0, ""});
  }
  EXPECT_GE(w.rotations(), 1u);
  ASSERT_TRUE(w.Reopen().ok());
  ASSERT_TRUE(w.Close().ok());
  // Every file is a whole section that libpcap reads; together they hold
  // every frame once.
  size_t total = 0;
  for (uint32_t r = 1; r <= w.rotations(); ++r) {
    total += ReadWithLibpcap(path + "." + std::to_string(r)).size();
  }
  total += ReadWithLibpcap(path).size();
  EXPECT_EQ(total, 10u);

  std::string mem;
  PcapngWriter m;
  ASSERT_TRUE(m.OpenMemory(&mem, 65535, "p1").ok());
  m.Write(ArpFrame(0x55, 64), 5, {Direction::kOutbound, 7, 0, "x"});
  ASSERT_TRUE(m.Close().ok());
  const std::string copy = tmp_.path() + "/m.pcapng";
  std::ofstream(copy, std::ios::binary) << mem;
  auto rows = Tshark(copy, "frame.packet_id frame.comment");
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"7", "x"}}));
}

TEST_F(PcapngWriterTest, UnwritablePathIsAnError) {
  PcapngWriter w;
  absl::Status s = w.Open(tmp_.path() + "/no/such/dir/x.pcapng", 65535);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot write capture"), std::string::npos);
  w.Write(ArpFrame(0, 60), 1, {});  // closed: ignored, no crash
  EXPECT_EQ(w.frames(), 0u);
}

}  // namespace
}  // namespace rocemu::capture
