#include "protocol/pfc.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"
#include "tests/protocol/test_util.h"

namespace rocemu::protocol {
namespace {

using testing::FromHex;

constexpr MacAddr kSa = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

std::vector<uint8_t> Zeros(size_t n) { return std::vector<uint8_t>(n, 0); }

std::vector<uint8_t> Cat(std::vector<uint8_t> a,
                         const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ../shared/reference/congestion.md 1.2: 60 bytes, then the FCS LSB first.
struct Vector {
  const char* name;
  std::vector<uint8_t> bytes;  // with FCS
  bool pfc;
  PfcInfo info;
};

std::vector<Vector> Vectors() {
  const std::string head = "0180c2000001 020000000001 8808";
  PfcInfo xoff3{.enable_vector = 0x08, .quanta = {0, 0, 0, 0xFFFF}};
  PfcInfo xon3{.enable_vector = 0x08, .quanta = {}};
  PfcInfo two{.enable_vector = 0x48, .quanta = {0, 0, 0, 0x1234, 0, 0, 0x40}};
  PfcInfo pause{.enable_vector = 0xFF};
  pause.quanta.fill(0xFFFF);
  PfcInfo pause_xon{.enable_vector = 0xFF};
  return {
      {"pfc_xoff_prio3",
       Cat(Cat(FromHex(head + "0101 0008 0000 0000 0000 ffff 0000 0000 0000 "
                              "0000"),
               Zeros(26)),
           FromHex("b0b229c3")),
       true, xoff3},
      {"pfc_xon_prio3",
       Cat(Cat(FromHex(head + "0101 0008"), Zeros(16 + 26)),
           FromHex("d13178ac")),
       true, xon3},
      {"pfc_two_prios",
       Cat(Cat(FromHex(head + "0101 0048 0000 0000 0000 1234 0000 0000 0040 "
                              "0000"),
               Zeros(26)),
           FromHex("55bf7a57")),
       true, two},
      {"pause_ffff",
       Cat(Cat(FromHex(head + "0001 ffff"), Zeros(42)), FromHex("dd7cb2ff")),
       false, pause},
      {"pause_xon",
       Cat(Cat(FromHex(head + "0001 0000"), Zeros(42)), FromHex("5917bd86")),
       false, pause_xon},
  };
}

TEST(PfcTest, BuildMatchesGoldenVectors) {
  for (const Vector& v : Vectors()) {
    ASSERT_EQ(v.bytes.size(), 64u) << v.name;
    std::vector<uint8_t> out(64);
    const size_t n = v.pfc ? BuildPfcFrame(kSa, v.info, out, true)
                           : BuildPauseFrame(kSa, v.info.quanta[0], out, true);
    EXPECT_EQ(n, 64u) << v.name;
    EXPECT_EQ(out, v.bytes) << v.name;
    std::vector<uint8_t> no_fcs(60);
    EXPECT_EQ(v.pfc ? BuildPfcFrame(kSa, v.info, no_fcs)
                    : BuildPauseFrame(kSa, v.info.quanta[0], no_fcs),
              60u);
    EXPECT_TRUE(std::equal(no_fcs.begin(), no_fcs.end(), v.bytes.begin()));
  }
}

TEST(PfcTest, ParseReadsGoldenVectors) {
  for (const Vector& v : Vectors()) {
    for (size_t len : {size_t{60}, size_t{64}}) {
      ParsedFrame p;
      ASSERT_EQ(ParseFrame(std::span(v.bytes).first(len), &p), ParseError::kOk)
          << v.name;
      EXPECT_EQ(p.kind, v.pfc ? FrameKind::kPfc : FrameKind::kPause);
      EXPECT_EQ(p.pfc, v.info) << v.name;
      EXPECT_EQ(p.net.src_mac, kSa);
      EXPECT_EQ(p.ethertype, kEtherTypeMacControl);
    }
  }
}

TEST(PfcTest, RejectsMalformed) {
  std::vector<uint8_t> f(60);
  ASSERT_EQ(BuildPfcFrame(kSa, {.enable_vector = 1, .quanta = {5}}, f), 60u);
  PfcInfo info;
  bool is_pfc;
  ASSERT_EQ(ParseMacControl(f, &info, &is_pfc), ParseError::kOk);
  EXPECT_TRUE(is_pfc);
  EXPECT_EQ(info.quanta[0], 5);

  auto bad = f;
  bad[16] = 0x80;  // high octet of the class-enable vector
  EXPECT_EQ(ParseMacControl(bad, &info, &is_pfc), ParseError::kBadMacControl);
  bad = f;
  bad[15] = 0x02;  // opcode 0x0102
  EXPECT_EQ(ParseMacControl(bad, &info, &is_pfc), ParseError::kBadMacControl);
  bad = f;
  bad[5] = 0x02;  // PFC to another multicast address
  EXPECT_EQ(ParseMacControl(bad, &info, &is_pfc), ParseError::kBadMacControl);
  EXPECT_EQ(ParseMacControl(std::span(f).first(59), &info, &is_pfc),
            ParseError::kTooShort);

  // A tagged MAC Control frame is rejected by the frame parser.
  std::vector<uint8_t> tagged(f.begin(), f.begin() + 12);
  for (uint8_t b : {0x81, 0x00, 0x60, 0x01}) tagged.push_back(b);
  tagged.insert(tagged.end(), f.begin() + 12, f.end());
  ParsedFrame p;
  EXPECT_EQ(ParseFrame(tagged, &p), ParseError::kBadMacControl);

  // PAUSE may be addressed to the station itself, not to a group.
  std::vector<uint8_t> pause(60);
  ASSERT_EQ(BuildPauseFrame(kSa, 7, pause), 60u);
  pause[0] = 0x02;
  EXPECT_EQ(ParseMacControl(pause, &info, &is_pfc), ParseError::kOk);
  EXPECT_FALSE(is_pfc);
  pause[0] = 0x03;
  EXPECT_EQ(ParseMacControl(pause, &info, &is_pfc), ParseError::kBadMacControl);
  EXPECT_EQ(BuildPauseFrame(kSa, 7, std::span(pause).first(59)), 0u);
}

}  // namespace
}  // namespace rocemu::protocol
