#include "protocol/checksum.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"

namespace rocemu::protocol {
namespace {

// Reference: 16-bit big-endian words summed one at a time.
uint16_t Reference(const std::vector<uint8_t>& b, uint32_t initial) {
  uint64_t sum = initial;
  for (size_t i = 0; i < b.size(); i += 2) {
    sum += uint32_t{b[i]} << 8 | (i + 1 < b.size() ? b[i + 1] : 0);
  }
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

TEST(ChecksumTest, Rfc1071Example) {
  const std::vector<uint8_t> b = {0x00, 0x01, 0xf2, 0x03,
                                  0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(OnesComplementSum(b, 0), 0xddf2);
}

TEST(ChecksumTest, MatchesReferenceForEveryLengthAndSeed) {
  std::vector<uint8_t> b;
  for (size_t n = 0; n < 70; ++n) {
    for (uint32_t seed : {0u, 0x1234u, 0xFFFFu, 0x2FFFEu}) {
      EXPECT_EQ(OnesComplementSum(b, seed), Reference(b, seed)) << n;
    }
    b.push_back(static_cast<uint8_t>(0xFF - n * 37));
  }
}

TEST(ChecksumTest, ParserLeavesDefaultsForAbsentHeaders) {
  std::vector<uint8_t> lldp(60, 0);
  lldp[12] = 0x88;
  lldp[13] = 0xCC;
  lldp[0] = 0x01;
  ParsedFrame p;
  ParsedFrame dirty;
  dirty.hdr.reth.va = 1;
  dirty.net.dscp = 0;
  p = dirty;
  ASSERT_EQ(ParseFrame(lldp, &p), ParseError::kOk);
  EXPECT_EQ(p.hdr, TransportHeaders{});
  NetHeaders expected;
  expected.dst_mac[0] = 0x01;
  EXPECT_EQ(p.net, expected);
  EXPECT_EQ(p.op, nullptr);
  EXPECT_TRUE(p.payload.empty());
}

}  // namespace
}  // namespace rocemu::protocol
