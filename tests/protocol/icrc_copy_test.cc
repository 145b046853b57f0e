#include "protocol/icrc_copy.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"
#include "protocol/opcode.h"
#include "tests/protocol/test_util.h"

namespace rocemu::protocol {
namespace {

using testing::TestNet;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 29 + seed);
  return v;
}

// Sizes around the chunk edges and the CRC's own 16/64-byte steps.
std::vector<size_t> Sizes() {
  std::vector<size_t> s;
  for (size_t n = 0; n <= 80; ++n) s.push_back(n);
  for (size_t n : {127, 128, 129, 255, 256, 257, 1000, 1024}) s.push_back(n);
  for (size_t k = 1; k <= 2; ++k) {
    for (size_t d : {kIcrcCopyChunk - 1, kIcrcCopyChunk, kIcrcCopyChunk + 1}) {
      s.push_back(k * d);
    }
  }
  for (size_t n : {4095, 4096, 4097, 9000}) s.push_back(n);
  return s;
}

// The copy and the CRC against zlib's crc32 over the same bytes, continuing
// a CRC already taken over a frame's headers, at every source and
// destination misalignment within 16 bytes.
TEST(IcrcCopyTest, CopiesAndExtendsTheCrcAsZlibDoes) {
  const std::vector<uint8_t> headers = Pattern(kIcrcMaskedLenIpv4 + 16, 3);
  for (size_t n : Sizes()) {
    for (size_t src_off : {0, 1, 3, 8, 13}) {
      for (size_t dst_off : {0, 2, 7, 15}) {
        const std::vector<uint8_t> src = Pattern(n + src_off, 91);
        std::vector<uint8_t> dst(n + dst_off + 8, 0xEE);
        IcrcAccumulator acc;
        ASSERT_TRUE(acc.Begin(headers, false));
        const uint32_t start = acc.value();
        CopyAndUpdateIcrc(acc, std::span(dst).subspan(dst_off, n),
                          std::span(src).subspan(src_off, n));
        // (memcmp of 0 bytes from an empty vector's null data() is UB.)
        ASSERT_TRUE(n == 0 || std::memcmp(dst.data() + dst_off,
                                          src.data() + src_off, n) == 0)
            << n << " " << src_off << " " << dst_off;
        // Nothing around the destination is written.
        for (size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xEE);
        for (size_t i = dst_off + n; i < dst.size(); ++i) {
          ASSERT_EQ(dst[i], 0xEE) << n << " " << i;
        }
        // zlib answers 0 for a null buffer, whatever the length.
        const uint32_t want =
            n == 0 ? start
                   : static_cast<uint32_t>(crc32(start, src.data() + src_off,
                                                 static_cast<uInt>(n)));
        ASSERT_EQ(acc.value(), want) << n << " " << src_off << " " << dst_off;
      }
    }
  }
}

// A frame built in one walk (headers' ICRC, the payload copied in SG-sized
// pieces with the CRC following, the pad) is byte for byte the frame
// BuildRoceFrame makes by copying and then taking the ICRC.
TEST(IcrcCopyTest, OneWalkFrameEqualsCopyThenIcrc) {
  for (bool ipv6 : {false, true}) {
    for (uint8_t opcode :
         {kRcRdmaWriteOnly, kRcRdmaWriteMiddle, kRcSendOnly, kUdSendOnly}) {
      for (UdpChecksumMode udp :
           {UdpChecksumMode::kAuto, UdpChecksumMode::kCompute}) {
        FrameSpec spec;
        spec.net = TestNet(ipv6, /*vlan=*/opcode == kRcSendOnly);
        spec.net.udp_checksum = udp;
        spec.hdr.bth.opcode = opcode;
        spec.hdr.bth.dest_qp = 0x12345;
        spec.hdr.bth.psn = 0x777;
        spec.hdr.reth = {.va = 0x1000, .rkey = 0x42, .dma_len = 1 << 20};
        spec.hdr.deth = {.qkey = 0x11111111, .src_qp = 7};
        for (size_t n : Sizes()) {
          if (n > 4096) continue;
          for (size_t src_off : {0, 5}) {
            for (size_t out_off : {0, 1, 6}) {
              const std::vector<uint8_t> src = Pattern(n + src_off, 17);
              const std::span<const uint8_t> payload =
                  std::span(src).subspan(src_off, n);
              const size_t len = RoceFrameLength(spec.net, opcode, n);
              std::vector<uint8_t> want(len);
              ASSERT_EQ(BuildRoceFrame(spec, payload, want), len);

              std::vector<uint8_t> buf(len + out_off, 0xA5);
              RoceFrameWriter w;
              ASSERT_EQ(w.Begin(spec, n, std::span(buf).subspan(out_off)),
                        BuildError::kOk);
              IcrcAccumulator acc;
              w.StartIcrc(acc);
              // Three pieces, as a gather over three SGEs would copy them.
              const size_t a = n / 3, b = n / 2;
              CopyAndUpdateIcrc(acc, w.payload().subspan(0, a),
                                payload.subspan(0, a));
              CopyAndUpdateIcrc(acc, w.payload().subspan(a, b - a),
                                payload.subspan(a, b - a));
              CopyAndUpdateIcrc(acc, w.payload().subspan(b),
                                payload.subspan(b));
              ASSERT_EQ(w.Finish(acc), len);
              ASSERT_TRUE(
                  std::equal(want.begin(), want.end(), buf.begin() + out_off))
                  << "ipv6 " << ipv6 << " opcode " << int{opcode} << " payload "
                  << n << " src_off " << src_off << " out_off " << out_off;
              ParsedFrame p;
              ASSERT_EQ(ParseFrame(std::span(buf).subspan(out_off), &p),
                        ParseError::kOk);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rocemu::protocol
