#include "nic/gid_table.h"

#include <gtest/gtest.h>

namespace rocemu::nic {
namespace {

TEST(Gid, Ipv4MappedForm) {
  Gid g = GidFromIpv4(10, 0, 0, 1);
  EXPECT_TRUE(GidIsIpv4Mapped(g));
  EXPECT_EQ(g, GidFromIpv4(0x0A000001u));
  EXPECT_EQ(g[10], 0xFF);
  EXPECT_EQ(g[11], 0xFF);
  EXPECT_EQ(g[15], 1);
  EXPECT_EQ(GidToString(g), "10.0.0.1");
  EXPECT_EQ(ParseGid("10.0.0.1"), g);
  EXPECT_EQ(ParseGid("::ffff:10.0.0.1"), g);
  EXPECT_EQ(ParseGid("::ffff:a00:1"), g);
}

TEST(Gid, Ipv6) {
  std::optional<Gid> g = ParseGid("fd00::1:2");
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(GidIsIpv4Mapped(*g));
  EXPECT_EQ((*g)[0], 0xFD);
  EXPECT_EQ((*g)[13], 1);
  EXPECT_EQ((*g)[15], 2);
  EXPECT_EQ(GidToString(*g), "fd00:0:0:0:0:0:1:2");
  EXPECT_EQ(ParseGid(GidToString(*g)), g);
  EXPECT_FALSE(ParseGid("1::2::3").has_value());
  EXPECT_FALSE(ParseGid("10.0.0.256").has_value());
  EXPECT_FALSE(ParseGid("10.0.0").has_value());
  EXPECT_FALSE(ParseGid("1:2:3:4:5:6:7").has_value());
  EXPECT_FALSE(ParseGid("12345::").has_value());
}

TEST(Gid, LinkLocalFromMac) {
  Gid g = LinkLocalGidFromMac({0x02, 0x00, 0x00, 0xAA, 0xBB, 0xCC});
  EXPECT_EQ(GidToString(g), "fe80:0:0:0:0:ff:feaa:bbcc");
}

TEST(GidTable, LookupAndReverseLookup) {
  GidTable t(4);
  const Gid a = GidFromIpv4(192, 168, 1, 10);
  const Gid b = *ParseGid("2001:db8::10");
  ASSERT_TRUE(t.Set(0, a).ok());
  absl::StatusOr<uint32_t> bi = t.Add(b);
  ASSERT_TRUE(bi.ok());
  EXPECT_EQ(*bi, 1u);
  EXPECT_EQ(t.Get(0), a);
  EXPECT_EQ(t.Get(1), b);
  EXPECT_FALSE(t.Get(2).has_value());
  EXPECT_FALSE(t.Get(100).has_value());
  EXPECT_EQ(t.Find(a), 0u);
  EXPECT_EQ(t.FindIp(b), 1u);
  EXPECT_FALSE(t.Find(GidFromIpv4(192, 168, 1, 11)).has_value());
  EXPECT_EQ(t.Type(0), GidType::kRoceV2);
  // Adding a present GID returns its index; a duplicate Set is refused.
  EXPECT_EQ(*t.Add(a), 0u);
  EXPECT_EQ(t.Set(3, a).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(t.Set(4, a).code(), absl::StatusCode::kOutOfRange);
  // Replacing an entry drops the old reverse mapping.
  ASSERT_TRUE(t.Set(0, GidFromIpv4(192, 168, 1, 20)).ok());
  EXPECT_FALSE(t.Find(a).has_value());
  ASSERT_TRUE(t.Remove(1).ok());
  EXPECT_FALSE(t.Find(b).has_value());
  EXPECT_FALSE(t.Get(1).has_value());
  EXPECT_EQ(t.Remove(1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.size(), 1u);
}

TEST(GidTable, Full) {
  GidTable t(2);
  ASSERT_TRUE(t.Add(GidFromIpv4(1, 1, 1, 1)).ok());
  ASSERT_TRUE(t.Add(GidFromIpv4(1, 1, 1, 2)).ok());
  EXPECT_EQ(t.Add(GidFromIpv4(1, 1, 1, 3)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace rocemu::nic
