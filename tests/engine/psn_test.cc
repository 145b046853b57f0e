#include "nic/psn.h"

#include <gtest/gtest.h>

namespace rocemu::nic {
namespace {

TEST(PsnTest, AddWrapsAt24Bits) {
  EXPECT_EQ(PsnAdd(0xFFFFFE, 3), 1u);
  EXPECT_EQ(PsnAdd(5, 0), 5u);
}

TEST(PsnTest, OrderIsDefinedWithinHalfTheSpace) {
  EXPECT_TRUE(PsnLess(0xFFFFF0, 0x000010));
  EXPECT_FALSE(PsnLess(0x000010, 0xFFFFF0));
  EXPECT_EQ(PsnDiff(0x000010, 0xFFFFF0), 0x20);
  EXPECT_EQ(PsnDiff(0xFFFFF0, 0x000010), -0x20);
  EXPECT_TRUE(PsnLessEq(7, 7));
  EXPECT_FALSE(PsnLess(7, 7));
  // Just under half the space ahead is "after"; just over is "before".
  EXPECT_TRUE(PsnLess(100, PsnAdd(100, kPsnHalfWindow - 1)));
  EXPECT_FALSE(PsnLess(100, PsnAdd(100, kPsnHalfWindow + 1)));
}

}  // namespace
}  // namespace rocemu::nic
