// The session server's RingPool: a ring it hands out is as ShmRing::Create
// makes it, a spare goes to one taker only and is a memfd no one else
// maps, spares follow the geometries taken lately, and what ShmRing
// refuses is refused as before.
#include "verbs/server/ring_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <utility>

namespace rocemu::verbs {
namespace {

struct Slot {
  uint64_t v[6];
};

ino_t Inode(const ShmRing& r) {
  struct stat st;
  EXPECT_EQ(fstat(r.fd(), &st), 0);
  return st.st_ino;
}

TEST(RingPool, EmptyPoolMakesTheRingAndRefillPreparesTheNext) {
  RingPool pool;
  EXPECT_FALSE(pool.Refill());  // nothing taken yet: nothing to prepare
  absl::StatusOr<ShmRing> a = pool.Take("rocemu-sq", sizeof(Slot), 5);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->capacity(), 8u);
  EXPECT_EQ(a->slot_size(), sizeof(Slot));
  EXPECT_EQ(pool.hits(), 0u);

  EXPECT_TRUE(pool.Refill());
  EXPECT_TRUE(pool.Refill());
  EXPECT_FALSE(pool.Refill());  // kSparesPerGeometry of it wait
  EXPECT_EQ(pool.spares(), RingPool::kSparesPerGeometry);

  // 7 entries round to the same 8: a spare fits.
  absl::StatusOr<ShmRing> b = pool.Take("rocemu-sq", sizeof(Slot), 7);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(pool.hits(), 1u);
  EXPECT_EQ(pool.spares(), 1u);
  EXPECT_EQ(b->capacity(), 8u);
  EXPECT_NE(Inode(*a), Inode(*b));

  // A spare is a working ring, fresh: a consumer attached to its fd sees
  // it empty, then what the producer pushes.
  absl::StatusOr<ShmRing> peer = ShmRing::Attach(dup(b->fd()), sizeof(Slot), 8);
  ASSERT_TRUE(peer.ok()) << peer.status();
  Slot s{};
  EXPECT_EQ(peer->Pop(&s), RingResult::kEmpty);
  s.v[0] = 42;
  ASSERT_EQ(b->Push(s), RingResult::kOk);
  Slot got{};
  ASSERT_EQ(peer->Pop(&got), RingResult::kOk);
  EXPECT_EQ(got.v[0], 42u);
}

TEST(RingPool, EverySpareGoesToOneTakerOnly) {
  RingPool pool;
  std::set<ino_t> seen;
  std::vector<ShmRing> held;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<ShmRing> r = pool.Take("rocemu-cq", sizeof(Slot), 16);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(seen.insert(Inode(*r)).second) << "ring handed out twice";
    held.push_back(*std::move(r));
    pool.Refill();
  }
  EXPECT_EQ(pool.hits(), 19u);  // all but the first were made ahead
}

TEST(RingPool, NameAndGeometryMustMatch) {
  RingPool pool;
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 4).ok());
  ASSERT_TRUE(pool.Refill());
  // Another name, slot size or capacity: made now, the spare stays.
  ASSERT_TRUE(pool.Take("rocemu-rq", sizeof(Slot), 4).ok());
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot) + 8, 4).ok());
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 5).ok());
  EXPECT_EQ(pool.hits(), 0u);
  EXPECT_EQ(pool.spares(), 1u);
  // Each remembered geometry gets its spares.
  while (pool.Refill()) {
  }
  EXPECT_EQ(pool.spares(), 4 * RingPool::kSparesPerGeometry);
  absl::StatusOr<ShmRing> r = pool.Take("rocemu-sq", sizeof(Slot), 4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(pool.hits(), 1u);
  EXPECT_EQ(r->capacity(), 4u);
}

TEST(RingPool, SparesAreBoundedAndFollowRecentGeometries) {
  RingPool pool;
  // More geometries than remembered: the oldest drop out.
  for (uint32_t n = 1; n <= 64; n *= 2) {
    ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), n).ok());
    while (pool.Refill()) {
    }
    EXPECT_LE(pool.spares(), RingPool::kMaxSpares);
  }
  // The most recent one (64) has its spares; the first (1) none left.
  const uint64_t before = pool.hits();
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 64).ok());
  EXPECT_EQ(pool.hits(), before + 1);
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 1).ok());
  EXPECT_EQ(pool.hits(), before + 1);
}

TEST(RingPool, AFailedRefillWaitsForTheNextTake) {
  RingPool pool;
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 4).ok());
  // No fd number left below the limit: memfd_create fails with EMFILE.
  rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  const int lowest_free = dup(0);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const bool refilled = pool.Refill();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_FALSE(refilled);
  // Not tried again (the daemon calls it every pass) ...
  EXPECT_FALSE(pool.Refill());
  EXPECT_EQ(pool.spares(), 0u);
  // ... until the next take.
  ASSERT_TRUE(pool.Take("rocemu-sq", sizeof(Slot), 4).ok());
  EXPECT_TRUE(pool.Refill());
  EXPECT_EQ(pool.spares(), 1u);
}

TEST(RingPool, WhatShmRingRefusesIsRefused) {
  RingPool pool;
  EXPECT_FALSE(pool.Take("rocemu-sq", sizeof(Slot), 0).ok());
  EXPECT_FALSE(pool.Take("rocemu-sq", 0, 4).ok());
  EXPECT_FALSE(pool.Take("rocemu-sq", sizeof(Slot), 1u << 21).ok());
  EXPECT_FALSE(pool.Take("rocemu-sq", sizeof(Slot), 0xFFFFFFFFu).ok());
  EXPECT_FALSE(pool.Take("rocemu-sq", 0xFFFFFFFFu, 4).ok());
  EXPECT_FALSE(pool.Refill());  // none of them was remembered
  EXPECT_EQ(pool.spares(), 0u);
}

}  // namespace
}  // namespace rocemu::verbs
