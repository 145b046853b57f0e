#include "nic/pkey_table.h"

#include <gtest/gtest.h>

namespace rocemu::nic {
namespace {

TEST(PKeyMatch, MembershipRule) {
  // full/full, full/limited and limited/full of the same partition match.
  EXPECT_TRUE(PKeyMatch(0xFFFF, 0xFFFF));
  EXPECT_TRUE(PKeyMatch(0xFFFF, 0x7FFF));
  EXPECT_TRUE(PKeyMatch(0x7FFF, 0xFFFF));
  EXPECT_TRUE(PKeyMatch(0x8001, 0x0001));
  // Two limited members may not talk.
  EXPECT_FALSE(PKeyMatch(0x7FFF, 0x7FFF));
  EXPECT_FALSE(PKeyMatch(0x0001, 0x0001));
  // Different partitions never match.
  EXPECT_FALSE(PKeyMatch(0x8001, 0x8002));
  EXPECT_FALSE(PKeyMatch(0xFFFF, 0x8001));
  // Base 0 is the invalid key, whatever the membership bit.
  EXPECT_FALSE(PKeyMatch(0x8000, 0x8000));
  EXPECT_FALSE(PKeyMatch(0x0000, 0x8000));
  EXPECT_TRUE(PKeyIsFullMember(0x8123));
  EXPECT_FALSE(PKeyIsFullMember(0x0123));
}

TEST(PKeyTable, DefaultAndConfigured) {
  PKeyTable t(4);
  EXPECT_EQ(t.Get(0), 0xFFFF);
  EXPECT_EQ(t.Get(1), kInvalidPKey);
  EXPECT_EQ(t.Get(9), kInvalidPKey);
  EXPECT_EQ(t.IndexOf(0xFFFF), 0);
  absl::StatusOr<uint16_t> limited = t.Add(0x1234);  // limited member
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(*limited, 1);
  absl::StatusOr<uint16_t> full = t.Add(0x8055);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, 2);
  EXPECT_EQ(*t.Add(0x1234), 1);  // already present
  EXPECT_EQ(t.Set(3, 0x8055).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(t.Add(0x8000).ok());
  EXPECT_EQ(t.Set(4, 0x8001).code(), absl::StatusCode::kOutOfRange);

  // QP on the limited entry: full members of the partition get in, other
  // limited members and other partitions do not.
  EXPECT_TRUE(t.Accepts(*limited, 0x9234));
  EXPECT_FALSE(t.Accepts(*limited, 0x1234));
  EXPECT_FALSE(t.Accepts(*limited, 0xFFFF));
  // QP on the full entry accepts both memberships of its partition.
  EXPECT_TRUE(t.Accepts(*full, 0x8055));
  EXPECT_TRUE(t.Accepts(*full, 0x0055));
  // Default entry: full default accepts limited default.
  EXPECT_TRUE(t.Accepts(0, 0x7FFF));
  // Out-of-range or empty index accepts nothing.
  EXPECT_FALSE(t.Accepts(3, 0xFFFF));
  EXPECT_FALSE(t.Accepts(60, 0xFFFF));

  ASSERT_TRUE(t.Set(1, kInvalidPKey).ok());
  EXPECT_FALSE(t.IndexOf(0x1234).has_value());
  ASSERT_TRUE(t.Add(0x8077).ok());
  ASSERT_TRUE(t.Add(0x8078).ok());
  EXPECT_EQ(t.Add(0x8079).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace rocemu::nic
