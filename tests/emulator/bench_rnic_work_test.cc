#include "emulator/port/bench_rnic_work.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"
#include "protocol/icrc.h"

namespace rocemu::emulator {
namespace {

constexpr protocol::MacAddr kSrc = {0x02, 0, 0, 0, 0, 1};
constexpr protocol::MacAddr kDst = {0x02, 0, 0, 0, 0, 2};

RnicFrameWork Make(uint32_t frame, bool middle, size_t mr = 1 << 16) {
  auto w = RnicFrameWork::Create(frame, middle, mr, kSrc, kDst);
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

// The frames are real RoCEv2 WRITEs of exactly the asked size, which the
// project's parser accepts with every check on.
TEST(BenchRnicWorkTest, BuildsParsableWritesOfTheAskedSize) {
  for (auto [frame, middle] : {std::pair{138u, false}, std::pair{4170u, false},
                               std::pair{4154u, true}}) {
    RnicFrameWork tx = Make(frame, middle);
    std::vector<uint8_t> buf(9216);
    ASSERT_EQ(tx.Build(buf), frame);
    protocol::ParsedFrame p;
    ASSERT_EQ(protocol::ParseFrame(std::span(buf).first(frame), &p),
              protocol::ParseError::kOk);
    EXPECT_EQ(p.hdr.bth.opcode, middle ? protocol::kRcRdmaWriteMiddle
                                       : protocol::kRcRdmaWriteOnly);
    EXPECT_EQ(p.payload.size(), tx.payload_len());
  }
  EXPECT_FALSE(RnicFrameWork::Create(139, false, 1 << 16, kSrc, kDst).ok());
  EXPECT_FALSE(RnicFrameWork::Create(4170, false, 1024, kSrc, kDst).ok());
}

// The receiver places good frames and counts, without placing, every frame
// whose ICRC fails or that is cut short: the benchmark's errors.
TEST(BenchRnicWorkTest, ReceiverCountsIcrcFailuresAndPlacesNothingOfThem) {
  RnicFrameWork tx = Make(1098, false);
  RnicFrameWork rx = Make(1098, false);
  std::vector<uint8_t> buf(2048);
  // Around the region's end: the walk wraps on both sides.
  for (int i = 0; i < 200; ++i) {
    const size_t n = tx.Build(buf);
    ASSERT_TRUE(rx.Receive(std::span(buf).first(n))) << i;
  }
  EXPECT_EQ(rx.placed_bytes(), 200 * tx.payload_len());
  EXPECT_EQ(rx.icrc_errors(), 0u);

  const size_t n = tx.Build(buf);
  for (size_t at : {size_t{14 + 20 + 8 + 12}, size_t{600}, n - 1}) {
    std::vector<uint8_t> bad(buf.begin(), buf.begin() + n);
    bad[at] ^= 0x10;  // a RETH byte, a payload byte, the ICRC itself
    EXPECT_FALSE(rx.Receive(bad)) << at;
  }
  EXPECT_EQ(rx.icrc_errors(), 3u);
  EXPECT_FALSE(rx.Receive(std::span(buf).first(40)));
  EXPECT_EQ(rx.malformed(), 1u);
  EXPECT_EQ(rx.placed_bytes(), 200 * tx.payload_len());
  // Variant fields (TTL, ECN) are masked: a frame a switch marked passes.
  buf[14 + 8] -= 1;
  buf[14 + 1] |= 0x3;
  EXPECT_TRUE(rx.Receive(std::span(buf).first(n)));
}

}  // namespace
}  // namespace rocemu::emulator
