#include "protocol/icrc.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"
#include "protocol/opcode.h"
#include "tests/protocol/test_util.h"

namespace rocemu::protocol {
namespace {

using testing::FromHex;
using testing::TestNet;

// The ICRC as the RoCEv2 annex describes it, with zlib and no shared code.
uint32_t ZlibIcrc(std::vector<uint8_t> l3, bool ipv6) {
  l3.resize(l3.size() - 4);
  if (ipv6) {
    l3[0] |= 0x0F;
    l3[1] = l3[2] = l3[3] = 0xFF;
    l3[7] = 0xFF;
  } else {
    l3[1] = l3[8] = l3[10] = l3[11] = 0xFF;
  }
  const size_t udp = ipv6 ? 40 : 20;
  l3[udp + 6] = l3[udp + 7] = 0xFF;
  l3[udp + 8 + 4] = 0xFF;
  std::vector<uint8_t> pseudo(8 + l3.size(), 0xFF);
  std::copy(l3.begin(), l3.end(), pseudo.begin() + 8);
  return static_cast<uint32_t>(
      crc32(0, pseudo.data(), static_cast<uInt>(pseudo.size())));
}

std::vector<uint8_t> Build(bool ipv6, bool vlan, size_t payload_len,
                           uint8_t opcode = kRcSendOnly) {
  FrameSpec spec;
  spec.net = TestNet(ipv6, vlan);
  spec.hdr.bth.opcode = opcode;
  spec.hdr.bth.dest_qp = 0x123456;
  spec.hdr.bth.psn = 0xABCDEF;
  spec.hdr.reth = {.va = 0x1122334455667788, .rkey = 0x99, .dma_len = 4096};
  std::vector<uint8_t> payload(payload_len);
  for (size_t i = 0; i < payload_len; ++i) payload[i] = uint8_t(i * 7 + 1);
  std::vector<uint8_t> out(RoceFrameLength(spec.net, opcode, payload_len));
  BuildError e;
  EXPECT_EQ(BuildRoceFrame(spec, payload, out, &e), out.size());
  EXPECT_EQ(e, BuildError::kOk);
  return out;
}

size_t L3(bool vlan) { return vlan ? 18 : 14; }

bool Valid(const std::vector<uint8_t>& frame, bool ipv6, bool vlan) {
  return VerifyIcrc(std::span(frame).subspan(L3(vlan)), ipv6);
}

TEST(IcrcTest, MatchesZlibForManyShapes) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      for (size_t len : {0, 1, 3, 64, 1000, 4096}) {
        const std::vector<uint8_t> frame = Build(ipv6, vlan, len);
        std::vector<uint8_t> l3(frame.begin() + L3(vlan), frame.end());
        const uint32_t stored = LoadIcrc(&frame[frame.size() - 4]);
        EXPECT_EQ(stored, ZlibIcrc(l3, ipv6)) << ipv6 << vlan << len;
        EXPECT_TRUE(Valid(frame, ipv6, vlan));
      }
    }
  }
}

// Short frames are CRC'd in one call over a copy, longer ones in two (the
// masked prefix, then the frame in place): both sides of that limit, and an
// ACK, whose AETH is a 4-byte tail.
TEST(IcrcTest, MatchesZlibAcrossTheOneCallLimit) {
  for (bool ipv6 : {false, true}) {
    for (size_t len = 170; len <= 230; ++len) {
      const std::vector<uint8_t> frame = Build(ipv6, false, len);
      std::vector<uint8_t> l3(frame.begin() + 14, frame.end());
      EXPECT_EQ(LoadIcrc(&frame[frame.size() - 4]), ZlibIcrc(l3, ipv6))
          << ipv6 << " " << len;
    }
    const std::vector<uint8_t> ack = Build(ipv6, true, 0, kRcAcknowledge);
    std::vector<uint8_t> l3(ack.begin() + 18, ack.end());
    EXPECT_EQ(LoadIcrc(&ack[ack.size() - 4]), ZlibIcrc(l3, ipv6)) << ipv6;
    EXPECT_TRUE(Valid(ack, ipv6, true));
  }
}

TEST(IcrcTest, SegmentsChainToTheContiguousValue) {
  for (bool ipv6 : {false, true}) {
    const std::vector<uint8_t> frame = Build(ipv6, false, 777);
    const std::span<const uint8_t> l3 =
        std::span(frame).subspan(14, frame.size() - 14 - 4);
    const uint32_t whole = ComputeIcrc(l3, ipv6);
    // The first segment holds the masked headers and a bit more; the rest
    // comes in uneven pieces, as from an mbuf chain.
    const size_t first = (ipv6 ? kIcrcMaskedLenIpv6 : kIcrcMaskedLenIpv4) + 5;
    IcrcAccumulator acc;
    ASSERT_TRUE(acc.Begin(l3.first(first), ipv6));
    acc.Update(l3.subspan(first, 100));
    acc.Update(l3.subspan(first + 100, 1));
    acc.Update(l3.subspan(first + 101));
    EXPECT_EQ(acc.value(), whole);
    EXPECT_EQ(whole, LoadIcrc(&frame[frame.size() - 4]));
    IcrcAccumulator short_acc;
    EXPECT_FALSE(short_acc.Begin(l3.first(first - 6), ipv6));
  }
}

TEST(IcrcTest, VariantFieldsDoNotChangeIt) {
  for (bool vlan : {false, true}) {
    const size_t l3 = L3(vlan);
    const std::vector<uint8_t> base = Build(false, vlan, 33);
    auto mutate = [&](size_t off, uint8_t xor_mask) {
      std::vector<uint8_t> f = base;
      f[off] ^= xor_mask;
      return Valid(f, false, vlan);
    };
    EXPECT_TRUE(mutate(l3 + 1, 0x03)) << "ECN";
    EXPECT_TRUE(mutate(l3 + 1, 0xFC)) << "DSCP";
    EXPECT_TRUE(mutate(l3 + 8, 0x21)) << "TTL";
    EXPECT_TRUE(mutate(l3 + 10, 0x5A)) << "IP checksum";
    EXPECT_TRUE(mutate(l3 + 11, 0xA5)) << "IP checksum";
    EXPECT_TRUE(mutate(l3 + 26, 0x77)) << "UDP checksum";
    EXPECT_TRUE(mutate(l3 + 28 + 4, 0xC0)) << "FECN/BECN";
    EXPECT_TRUE(mutate(0, 0xFF)) << "MAC is outside";
    EXPECT_FALSE(mutate(l3 + 28 + 7, 0x01)) << "DestQP";
    EXPECT_FALSE(mutate(l3 + 28 + 11, 0x01)) << "PSN";
    EXPECT_FALSE(mutate(l3 + 28 + 12 + 5, 0x10)) << "payload";
    EXPECT_FALSE(mutate(l3 + 12, 0x01)) << "source address";
    EXPECT_FALSE(mutate(l3 + 20, 0x01)) << "UDP source port";
  }
  const std::vector<uint8_t> base6 = Build(true, false, 33);
  auto mutate6 = [&](size_t off, uint8_t xor_mask) {
    std::vector<uint8_t> f = base6;
    f[14 + off] ^= xor_mask;
    return Valid(f, true, false);
  };
  EXPECT_TRUE(mutate6(0, 0x0F)) << "traffic class high nibble";
  EXPECT_TRUE(mutate6(1, 0xF0)) << "traffic class low nibble";
  EXPECT_TRUE(mutate6(1, 0x0F)) << "flow label";
  EXPECT_TRUE(mutate6(3, 0xFF)) << "flow label";
  EXPECT_TRUE(mutate6(7, 0x10)) << "hop limit";
  EXPECT_TRUE(mutate6(46, 0x33)) << "UDP checksum";
  EXPECT_FALSE(mutate6(0, 0x10)) << "version";
  EXPECT_FALSE(mutate6(48 + 6, 0x01)) << "DestQP";
  EXPECT_FALSE(mutate6(48 + 10, 0x01)) << "PSN";
  EXPECT_FALSE(mutate6(48 + 12, 0x01)) << "payload";
  EXPECT_FALSE(mutate6(39, 0x01)) << "destination address";
}

// ../shared/reference/congestion.md 1.7: the libconntrack / NVIDIA CNP.
TEST(IcrcTest, CnpGoldenVector) {
  const std::vector<uint8_t> ip = FromHex(
      "4589003C98C640002011692716161608"
      "16161607DBAE12B7002800008100FFFF"
      "400000D2000000000000000000000000"
      "0000000000000000DAFC1BEF");
  NetHeaders net;
  net.src_ip = Ipv4Mapped(22, 22, 22, 8);
  net.dst_ip = Ipv4Mapped(22, 22, 22, 7);
  net.ip_id = 0x98C6;
  net.df = true;
  net.ttl = 0x20;
  net.dscp = 0x89 >> 2;
  net.ecn = 0x89 & 3;
  net.udp_src_port = 56238;
  std::vector<uint8_t> frame(RoceFrameLength(net, kCnp, 0));
  ASSERT_EQ(frame.size(), 74u);
  ASSERT_EQ(BuildCnp(net, 0xD2, 0xFFFF, frame), 74u);
  EXPECT_EQ(std::vector<uint8_t>(frame.begin() + 14, frame.end()), ip);
  EXPECT_EQ(ComputeIcrc(std::span(ip).first(ip.size() - 4), false),
            0xEF1BFCDAu);

  ParsedFrame parsed;
  ASSERT_EQ(ParseFrame(frame, &parsed), ParseError::kOk);
  EXPECT_EQ(parsed.kind, FrameKind::kRoce);
  EXPECT_EQ(parsed.op->engine, Engine::kCongestion);
  EXPECT_TRUE(parsed.hdr.bth.becn);
  EXPECT_FALSE(parsed.hdr.bth.mig_req);
  EXPECT_EQ(parsed.hdr.bth.dest_qp, 0xD2u);
  EXPECT_EQ(parsed.hdr.bth.psn, 0u);
  EXPECT_EQ(parsed.icrc, 0xEF1BFCDAu);
  EXPECT_EQ(parsed.net.dscp, 34);
  EXPECT_EQ(parsed.net.ecn, 1);
  EXPECT_TRUE(parsed.payload.empty());
}

}  // namespace
}  // namespace rocemu::protocol
