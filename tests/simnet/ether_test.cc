#include "tests/simnet/ether.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/simnet/test_host.h"

namespace rocemu::simnet {
namespace {

std::vector<uint8_t> Hex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

constexpr MacAddr kSa = {0x02, 0, 0, 0, 0, 0x01};

// Golden vectors from ../shared/reference/congestion.md §1.2 (before FCS).
TEST(EtherTest, PfcFrameMatchesGoldenBytes) {
  std::vector<uint8_t> out(64);
  std::array<uint16_t, 8> q{};
  q[3] = 0x1234;
  q[6] = 0x0040;
  q[5] = 0x7777;  // not enabled: must not appear
  ASSERT_EQ(BuildPfcFrame(kSa, 0x48, q, out), 60u);
  out.resize(60);
  std::vector<uint8_t> want =
      Hex("0180c2000001020000000001880801010048"
          "0000000000001234000000000040"
          "0000");
  want.resize(60, 0);
  EXPECT_EQ(out, want);
  MacControl mc;
  ASSERT_TRUE(ParseMacControl(out, &mc));
  EXPECT_FALSE(mc.pause);
  EXPECT_EQ(mc.enable_vector, 0x48);
  EXPECT_EQ(mc.quanta[3], 0x1234);
  EXPECT_EQ(mc.quanta[6], 0x0040);
  EXPECT_EQ(mc.quanta[5], 0);
}

TEST(EtherTest, PauseFrameMatchesGoldenBytes) {
  std::vector<uint8_t> out(60);
  ASSERT_EQ(BuildPauseFrame(kSa, 0xFFFF, out), 60u);
  std::vector<uint8_t> want =
      Hex("0180c20000010200000000018808"
          "0001ffff");
  want.resize(60, 0);
  EXPECT_EQ(out, want);
  MacControl mc;
  ASSERT_TRUE(ParseMacControl(out, &mc));
  EXPECT_TRUE(mc.pause);
  EXPECT_EQ(mc.quanta[0], 0xFFFF);
  out[14] = 0x01;  // a PFC opcode with a non-zero high enable octet
  out[16] = 0x01;
  EXPECT_FALSE(ParseMacControl(out, &mc));
  out[16] = 0x00;
  EXPECT_TRUE(ParseMacControl(out, &mc));
  out[15] = 0x02;  // an opcode that is neither PAUSE nor PFC
  EXPECT_FALSE(ParseMacControl(out, &mc));
}

TEST(EtherTest, PauseQuantaToTime) {
  EXPECT_EQ(PauseQuantaToNs(1, 10'000'000'000), 52u);  // 51.2 ns, rounded up
  EXPECT_EQ(PauseQuantaToNs(65535, 100'000'000'000), 335540u);
  EXPECT_EQ(PauseQuantaToNs(1000, 100'000'000'000), 5120u);
  EXPECT_EQ(PauseQuantaToNs(0, 100'000'000'000), 0u);
}

TEST(EtherTest, MarkCeOnIpv4FixesTheChecksum) {
  StreamSpec spec{.frame_len = 200, .dscp = 26, .ecn = kEcnEct0};
  std::vector<uint8_t> f(200);
  ASSERT_EQ(TestHost::BuildTestFrame(spec, 9, f), 200u);
  const std::vector<uint8_t> before = f;
  ASSERT_EQ(Ipv4HeaderChecksum({&f[14], 20}), 0);
  EXPECT_EQ(MarkCe(f), CeMarkResult::kMarked);
  uint8_t dscp = 0, ecn = 0;
  ASSERT_TRUE(ReadDscpEcn(f, &dscp, &ecn));
  EXPECT_EQ(dscp, 26);
  EXPECT_EQ(ecn, kEcnCe);
  EXPECT_EQ(Ipv4HeaderChecksum({&f[14], 20}), 0);
  EXPECT_NE(f, before);
  // Only TOS and the checksum changed.
  for (size_t i = 0; i < f.size(); ++i) {
    if (i != 15 && i != 24 && i != 25) {
      EXPECT_EQ(f[i], before[i]) << i;
    }
  }
  EXPECT_EQ(MarkCe(f), CeMarkResult::kAlreadyCe);
}

TEST(EtherTest, MarkCeLeavesNotEctAndNonIpAlone) {
  StreamSpec spec{.frame_len = 100, .ecn = kEcnNotEct, .vlan_pcp = 5};
  std::vector<uint8_t> f(100);
  ASSERT_EQ(TestHost::BuildTestFrame(spec, 1, f), 100u);
  const L2Info l2 = ParseL2(f);
  EXPECT_TRUE(l2.has_vlan);
  EXPECT_EQ(l2.pcp, 5);
  EXPECT_TRUE(l2.ipv4);
  const std::vector<uint8_t> before = f;
  EXPECT_EQ(MarkCe(f), CeMarkResult::kNotEct);
  EXPECT_EQ(f, before);
  std::vector<uint8_t> pause(60);
  BuildPauseFrame(kSa, 1, pause);
  EXPECT_EQ(MarkCe(pause), CeMarkResult::kNotIp);
}

TEST(EtherTest, MarkCeOnIpv6SetsTrafficClassEcn) {
  std::vector<uint8_t> f(14 + 40 + 8, 0);
  Store16(&f[12], kEtherTypeIpv6);
  // Version 6, traffic class 0x6a (DSCP 26, ECT(0)), flow label 0x12345.
  f[14] = 0x66;
  f[15] = 0xa1;
  f[16] = 0x23;
  f[17] = 0x45;
  EXPECT_EQ(MarkCe(f), CeMarkResult::kMarked);
  uint8_t dscp = 0, ecn = 0;
  ASSERT_TRUE(ReadDscpEcn(f, &dscp, &ecn));
  EXPECT_EQ(dscp, 26);
  EXPECT_EQ(ecn, kEcnCe);
  EXPECT_EQ(f[14], 0x66);
  EXPECT_EQ(f[15], 0xb1);  // flow label nibble untouched
  EXPECT_EQ(f[16], 0x23);
}

}  // namespace
}  // namespace rocemu::simnet
