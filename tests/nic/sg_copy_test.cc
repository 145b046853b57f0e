#include "nic/sg_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nic/mr_table.h"
#include "nic/pd_table.h"

namespace rocemu::nic {
namespace {

constexpr ClientId kClient = 1;

class SgCopyTest : public ::testing::Test {
 protected:
  SgCopyTest() : pds_(4), mrs_(pds_, 16, uint64_t{1} << 32) {
    pd_ = *pds_.Alloc(kClient);
    // Region A (writable) backed by two chunks; region B read-only.
    a1_.resize(50);
    a2_.resize(70);
    b_.resize(64);
    for (size_t i = 0; i < b_.size(); ++i) b_[i] = static_cast<uint8_t>(i + 1);
    const HostChunk ac[] = {{a1_.data(), 50}, {a2_.data(), 70}};
    ka_ = *mrs_.Register(kClient, pd_, 0x1000, 120, access::kLocalWrite, ac);
    const HostChunk bc[] = {{b_.data(), 64}};
    kb_ = *mrs_.Register(kClient, pd_, 0x9000, 64, access::kNone, bc);
  }
  std::vector<uint8_t> a1_, a2_, b_;
  PdTable pds_;
  MrTable mrs_;
  PdHandle pd_;
  uint32_t ka_, kb_;
};

TEST_F(SgCopyTest, GatherAcrossSgesInPieces) {
  SgList sg = {{0x9000 + 60, 4, kb_}, {0x9000, 10, kb_}};
  SgCursor cur;
  std::vector<uint8_t> out(6);
  size_t copied = 0;
  ASSERT_EQ(Gather(mrs_, pd_, sg.span(), cur, out, &copied), MrStatus::kOk);
  EXPECT_EQ(copied, 6u);
  EXPECT_EQ(out, (std::vector<uint8_t>{61, 62, 63, 64, 1, 2}));
  // Continues where it stopped; runs out after the remaining 8 bytes.
  std::vector<uint8_t> rest(10);
  EXPECT_EQ(SgRemaining(sg.span(), cur), 8u);
  EXPECT_EQ(Gather(mrs_, pd_, sg.span(), cur, rest, &copied),
            MrStatus::kLengthExceeded);
  EXPECT_EQ(copied, 8u);
  EXPECT_EQ(rest[7], 10);
}

TEST_F(SgCopyTest, ScatterAcrossChunksAndSges) {
  // Second SGE spans the chunk boundary of region A (offset 50).
  SgList sg = {{0x1000, 10, ka_}, {0x1000 + 45, 20, ka_}};
  std::vector<uint8_t> src(30);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<uint8_t>(i + 100);
  SgCursor cur;
  ASSERT_EQ(Scatter(mrs_, pd_, sg.span(), cur, std::span(src).first(12)),
            MrStatus::kOk);
  ASSERT_EQ(Scatter(mrs_, pd_, sg.span(), cur, std::span(src).subspan(12)),
            MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(a1_.data(), src.data(), 10));
  EXPECT_EQ(0, std::memcmp(a1_.data() + 45, src.data() + 10, 5));
  EXPECT_EQ(0, std::memcmp(a2_.data(), src.data() + 15, 15));
  EXPECT_EQ(a1_[10], 0);  // nothing between the SGEs was touched
  EXPECT_EQ(SgRemaining(sg.span(), cur), 0u);
}

TEST_F(SgCopyTest, ScatterChecksRightsLengthAndKeys) {
  std::vector<uint8_t> src(8, 0xAB);
  SgCursor cur;
  SgList ro = {{0x9000, 8, kb_}};
  EXPECT_EQ(Scatter(mrs_, pd_, ro.span(), cur, src), MrStatus::kAccessDenied);
  EXPECT_EQ(b_[0], 1);  // unchanged
  SgList small = {{0x1000, 4, ka_}};
  cur = {};
  EXPECT_EQ(Scatter(mrs_, pd_, small.span(), cur, src),
            MrStatus::kLengthExceeded);
  EXPECT_EQ(a1_[0], 0);  // nothing written for a too-small buffer
  SgList bad_key = {{0x1000, 8, ka_ + 1}};
  cur = {};
  EXPECT_EQ(Scatter(mrs_, pd_, bad_key.span(), cur, src),
            MrStatus::kInvalidKey);
  SgList oob = {{0x1000 + 116, 8, ka_}};
  cur = {};
  EXPECT_EQ(Scatter(mrs_, pd_, oob.span(), cur, src), MrStatus::kOutOfBounds);
  EXPECT_EQ(LocalWcStatus(MrStatus::kOutOfBounds), WcStatus::kLocProtErr);

  EXPECT_EQ(CheckSgList(mrs_, pd_, ro.span(), access::kNone), MrStatus::kOk);
  EXPECT_EQ(CheckSgList(mrs_, pd_, ro.span(), access::kLocalWrite),
            MrStatus::kAccessDenied);
  PdHandle other = *pds_.Alloc(kClient);
  EXPECT_EQ(CheckSgList(mrs_, other, ro.span(), access::kNone),
            MrStatus::kPdMismatch);
}

TEST_F(SgCopyTest, ZeroLengthSgesAreSkipped) {
  SgList sg = {{0, 0, 0}, {0x9000, 2, kb_}, {0, 0, 12345}};
  SgCursor cur;
  std::vector<uint8_t> out(2);
  EXPECT_EQ(Gather(mrs_, pd_, sg.span(), cur, out), MrStatus::kOk);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2}));
}

}  // namespace
}  // namespace rocemu::nic
