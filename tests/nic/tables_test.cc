// Protection domains, the handle table under them, address handles and the
// device counters.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "nic/address_handle.h"
#include "nic/counters.h"
#include "nic/gid_table.h"
#include "nic/handle_table.h"
#include "nic/pd_table.h"

namespace rocemu::nic {
namespace {

TEST(HandleTable, StaleHandlesAndOwnership) {
  HandleTable<int> t("thing", 3);
  uint32_t a = *t.Insert(1, std::make_unique<int>(10));
  uint32_t b = *t.Insert(2, std::make_unique<int>(20));
  EXPECT_NE(a, kInvalidHandle);
  EXPECT_EQ(*t.Get(a), 10);
  EXPECT_EQ(t.Get(a, 1), t.Get(a));
  EXPECT_EQ(t.Get(a, 2), nullptr);  // another client's object
  EXPECT_EQ(t.Owner(b), 2u);
  EXPECT_EQ(t.Get(kInvalidHandle), nullptr);
  EXPECT_EQ(t.Get(MakeHandle(1000, 1)), nullptr);
  int* pa = t.Get(a);
  for (int i = 0; i < 100; ++i) {  // pointers stay stable as slots grow
    uint32_t h = *t.Insert(1, std::make_unique<int>(i));
    ASSERT_TRUE(t.Erase(h).ok());
  }
  EXPECT_EQ(t.Get(a), pa);
  uint32_t a2 = t.Rekey(a);
  EXPECT_EQ(t.Get(a), nullptr);
  EXPECT_EQ(*t.Get(a2), 10);
  ASSERT_TRUE(t.Erase(a2).ok());
  EXPECT_EQ(t.Erase(a2).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.size(), 1u);
  std::set<uint32_t> live;
  t.ForEach([&](uint32_t h, int&) { live.insert(h); });
  EXPECT_EQ(live, std::set<uint32_t>{b});
}

TEST(PdTable, AllocDeallocAndUse) {
  PdTable pds(2);
  PdHandle p = *pds.Alloc(5);
  PdHandle q = *pds.Alloc(6);
  EXPECT_EQ(pds.Alloc(5).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(pds.OwnedBy(p, 5));
  EXPECT_FALSE(pds.OwnedBy(p, 6));
  EXPECT_EQ(pds.Dealloc(6, p).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(pds.Retain(p).ok());
  EXPECT_EQ(pds.Dealloc(5, p).code(), absl::StatusCode::kFailedPrecondition);
  pds.Release(p);
  ASSERT_TRUE(pds.Dealloc(5, p).ok());
  EXPECT_FALSE(pds.Valid(p));
  EXPECT_EQ(pds.Retain(p).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(pds.Valid(q));
  PdHandle r = *pds.Alloc(5);
  EXPECT_NE(r, p);  // a freed PD's handle is not reissued as is
}

class AhTest : public ::testing::Test {
 protected:
  AhTest() : pds_(4), gids_(4), ahs_(pds_, gids_, 8) {
    pd_ = *pds_.Alloc(1);
    (void)gids_.Set(0, GidFromIpv4(10, 0, 0, 1));
    (void)gids_.Set(1, *ParseGid("fd00::1"));
  }
  PdTable pds_;
  GidTable gids_;
  AhTable ahs_;
  PdHandle pd_;
};

TEST_F(AhTest, CreateResolveDestroy) {
  AhAttr attr;
  attr.dgid = GidFromIpv4(10, 0, 0, 2);
  attr.sgid_index = 0;
  attr.traffic_class = 26 << 2 | 2;  // DSCP 26, ECT(0)
  attr.flow_label = 0xABCDE;
  attr.sl = 3;
  AhHandle h = *ahs_.Create(1, pd_, attr);
  const AddressHandle* ah = ahs_.Get(h);
  ASSERT_NE(ah, nullptr);
  EXPECT_EQ(ah->sgid, GidFromIpv4(10, 0, 0, 1));
  EXPECT_FALSE(ah->ipv6());
  EXPECT_FALSE(ah->dmac_resolved);
  EXPECT_EQ(ah->attr.sl, 3);
  ASSERT_TRUE(ahs_.SetDmac(h, {2, 0, 0, 0, 0, 2}).ok());
  EXPECT_TRUE(ahs_.Get(h)->dmac_resolved);
  EXPECT_EQ(ahs_.Get(h)->dmac[5], 2);
  EXPECT_EQ(ahs_.Get(h, 2), nullptr);
  EXPECT_EQ(pds_.UseCount(pd_), 1u);
  EXPECT_EQ(ahs_.Destroy(2, h).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(ahs_.Destroy(1, h).ok());
  EXPECT_EQ(ahs_.Get(h), nullptr);
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
}

TEST_F(AhTest, RejectsWhatRoceCannotSend) {
  AhAttr attr;
  attr.dgid = GidFromIpv4(10, 0, 0, 2);
  auto code = [&](const AhAttr& a) {
    return ahs_.Create(1, pd_, a).status().code();
  };
  AhAttr x = attr;
  x.is_global = false;
  EXPECT_EQ(code(x), absl::StatusCode::kInvalidArgument);
  x = attr;
  x.sgid_index = 2;  // empty GID entry
  EXPECT_EQ(code(x), absl::StatusCode::kInvalidArgument);
  x = attr;
  x.sgid_index = 1;  // IPv6 source, IPv4 destination
  EXPECT_EQ(code(x), absl::StatusCode::kInvalidArgument);
  x = attr;
  x.flow_label = 0x100000;
  EXPECT_EQ(code(x), absl::StatusCode::kInvalidArgument);
  x = attr;
  x.port_num = 2;
  EXPECT_EQ(code(x), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ahs_.Create(9, pd_, attr).status().code(),
            absl::StatusCode::kNotFound);
  x = attr;
  x.sgid_index = 1;
  x.dgid = *ParseGid("fd00::2");
  absl::StatusOr<AhHandle> h = ahs_.Create(1, pd_, x);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(ahs_.Get(*h)->ipv6());
}

TEST(DeviceCounters, EnumerateUnderOperatorNames) {
  DeviceCounters c;
  c.out_of_sequence = 3;
  c.ack_deferred = 5;
  c.bad_pkey_cntr = 7;
  std::set<std::string> names;
  uint64_t sum = 0;
  c.Enumerate([&](std::string_view name, uint64_t v) {
    EXPECT_TRUE(names.insert(std::string(name)).second) << name;
    sum += v;
  });
  EXPECT_EQ(names.size(), sizeof(DeviceCounters) / sizeof(uint64_t));
  EXPECT_EQ(sum, 15u);
  EXPECT_EQ(c.Get("out_of_sequence"), 3u);
  EXPECT_EQ(c.Get("ack_deffered"), 5u);  // rxe's spelling
  EXPECT_EQ(c.Get("bad_pkey_cntr"), 7u);
  EXPECT_TRUE(names.count("duplicate_request"));
  EXPECT_TRUE(names.count("rx_icrc_encapsulated"));
  EXPECT_FALSE(c.Get("no_such_counter").has_value());
  c.Reset();
  EXPECT_EQ(c.Get("out_of_sequence"), 0u);
}

}  // namespace
}  // namespace rocemu::nic
