// TxStash over a real (small) mbuf pool: the room offered stays contiguous,
// built frames leave with their lengths and priorities, only they are
// replaced, a short pool leaves what is left usable, and nothing leaks.
#include "emulator/port/tx_stash.h"

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

constexpr uint16_t kSlots = 8;
constexpr unsigned kPoolSize = 12;
constexpr uint32_t kMaxFrame = 1000;

class TxStashTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string prefix = "txstash-" + std::to_string(getpid());
    std::vector<std::string> args = {"tx_stash_test",
                                     "--no-huge",
                                     "-m",
                                     "64",
                                     "--no-pci",
                                     "--no-shconf",
                                     "--file-prefix",
                                     prefix,
                                     "--log-level=*:error"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
    // No per-lcore cache: the pool's count is then exact.
    pool_ = rte_pktmbuf_pool_create("tx_stash_test", kPoolSize, 0, 0,
                                    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr);
  }
  static void TearDownTestSuite() {
    rte_mempool_free(pool_);
    rte_eal_cleanup();
  }
  static unsigned Free() { return rte_mempool_avail_count(pool_); }

  static rte_mempool* pool_;
};
rte_mempool* TxStashTest::pool_ = nullptr;

// What the RNIC does with the room: fills the first `n` frames.
void Build(std::span<nic::TxFrame> room, size_t n, uint32_t len0) {
  for (size_t i = 0; i < n; ++i) {
    room[i].len = len0 + static_cast<uint32_t>(i);
    room[i].priority = static_cast<uint8_t>(i % 8);
    room[i].data[0] = static_cast<uint8_t>(len0 + i);
  }
}

TEST_F(TxStashTest, ReplacesOnlyTheBuiltFramesAndReleasesTheRest) {
  TxStash<kSlots> stash;
  EXPECT_EQ(stash.size(), 0);
  ASSERT_TRUE(stash.Fill(pool_, kMaxFrame));
  EXPECT_EQ(stash.size(), kSlots);
  EXPECT_EQ(Free(), kPoolSize - kSlots);
  for (const nic::TxFrame& f : stash.room()) {
    ASSERT_NE(f.data, nullptr);
    EXPECT_EQ(f.capacity, kMaxFrame);  // capped below the buffer's room
  }

  // Three built: they leave in order, lengths and priorities set.
  Build(stash.room(), 3, 60);
  rte_mbuf* out[kSlots];
  uint8_t prio[kSlots];
  stash.Take(3, out, prio);
  EXPECT_EQ(stash.size(), kSlots - 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rte_pktmbuf_data_len(out[i]), 60 + i);
    EXPECT_EQ(rte_pktmbuf_pkt_len(out[i]), 60u + i);
    EXPECT_EQ(prio[i], i);
    EXPECT_EQ(rte_pktmbuf_mtod(out[i], uint8_t*)[0], 60 + i);
  }
  // A pass that builds nothing changes nothing and allocates nothing.
  stash.Take(0, out, prio);
  EXPECT_EQ(stash.size(), kSlots - 3);

  // Refilled: only the three that left are allocated.
  ASSERT_TRUE(stash.Fill(pool_, kMaxFrame));
  EXPECT_EQ(stash.size(), kSlots);
  EXPECT_EQ(Free(), kPoolSize - kSlots - 3);
  rte_pktmbuf_free_bulk(out, 3);
  EXPECT_EQ(Free(), kPoolSize - kSlots);

  stash.Release();
  EXPECT_EQ(stash.size(), 0);
  EXPECT_EQ(Free(), kPoolSize);
  stash.Release();  // twice is harmless
  EXPECT_EQ(Free(), kPoolSize);
}

TEST_F(TxStashTest, AShortPoolLeavesTheRemainingRoomUsable) {
  TxStash<kSlots> stash;
  ASSERT_TRUE(stash.Fill(pool_, kMaxFrame));
  // Everything else in the pool is taken elsewhere.
  std::vector<rte_mbuf*> held(Free());
  ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool_, held.data(), held.size()), 0);
  EXPECT_EQ(Free(), 0u);

  Build(stash.room(), 5, 100);
  rte_mbuf* out[kSlots];
  stash.Take(5, out);  // priorities not asked for
  EXPECT_FALSE(stash.Fill(pool_, kMaxFrame));
  // The three still held are offered, contiguous, and untouched.
  ASSERT_EQ(stash.size(), kSlots - 5);
  std::span<nic::TxFrame> room = stash.room();
  ASSERT_EQ(room.size(), 3u);
  for (size_t i = 0; i < room.size(); ++i)
    EXPECT_EQ(room[i].capacity, kMaxFrame);
  Build(room, 1, 200);
  rte_mbuf* one[1];
  stash.Take(1, one);
  EXPECT_EQ(rte_pktmbuf_data_len(one[0]), 200);
  EXPECT_EQ(stash.size(), 2);

  // Buffers come back: the next Fill tops the stash up again.
  rte_pktmbuf_free_bulk(out, 5);
  rte_pktmbuf_free(one[0]);
  ASSERT_TRUE(stash.Fill(pool_, kMaxFrame));
  EXPECT_EQ(stash.size(), kSlots);
  rte_pktmbuf_free_bulk(held.data(), static_cast<unsigned>(held.size()));
  stash.Release();
  EXPECT_EQ(Free(), kPoolSize);
}

}  // namespace
}  // namespace rocemu::emulator
