// bench_pktio --apps' applications, with this test as both daemons and
// the link between them: a message posted on one end lands on the other.
#include "emulator/port/bench_app_link.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

using Clock = std::chrono::steady_clock;

// Waits up to `limit` for `pid` to exit; its status, or -1 if it did not.
int WaitExit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return -1;
}

TEST(BenchAppLinkTest, EveryRoundTripIsAnsweredAndRecorded) {
  constexpr uint32_t kWarmup = 10;
  constexpr uint32_t kIterations = 2000;
  AppLink* a = MapAppLink(kWarmup, kIterations);
  AppLink* b = MapAppLink(kWarmup, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const pid_t pa = ForkApplication(a, /*initiator=*/true, -1, 64);
  const pid_t pb = ForkApplication(b, /*initiator=*/false, -1, 64);
  ASSERT_GT(pa, 0);
  ASSERT_GT(pb, 0);
  // The two daemons and the link: A's post lands on B, B's reply on A.
  uint64_t a_sent = 0, b_sent = 0, b_landed = 0, replies = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (a->done.v.load() == 0 && Clock::now() < deadline) {
    const uint64_t ap = a->post.v.load();
    if (ap != a_sent) {
      a_sent = ap;
      b->land.v.store(++b_landed);
    }
    const uint64_t bp = b->post.v.load();
    if (bp != b_sent) {
      b_sent = bp;
      ++replies;
      a->land.v.store(a_sent);
    }
    std::this_thread::yield();
  }
  ASSERT_EQ(a->done.v.load(), 1u) << "round trips: " << replies;
  EXPECT_EQ(a_sent, kWarmup + kIterations);
  EXPECT_EQ(replies, kWarmup + kIterations);
  // The responder answered each message with the count landed so far.
  EXPECT_EQ(b_sent, b_landed);
  for (uint32_t i = 0; i < kIterations; ++i) {
    ASSERT_GT(a->samples()[i], 0u) << "sample " << i;
  }
  a->stop.v.store(1);
  b->stop.v.store(1);
  const int sa = WaitExit(pa, std::chrono::seconds(5));
  const int sb = WaitExit(pb, std::chrono::seconds(5));
  ASSERT_NE(sa, -1);
  ASSERT_NE(sb, -1);
  EXPECT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
  EXPECT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
}

TEST(BenchAppLinkTest, AnUnansweredInitiatorLeavesWhenToldToStop) {
  AppLink* a = MapAppLink(10, 100);
  ASSERT_NE(a, nullptr);
  const pid_t pa = ForkApplication(a, /*initiator=*/true, -1, 64);
  ASSERT_GT(pa, 0);
  // It posts its first message and waits for an answer that never comes.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (a->post.v.load() == 0 && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(a->post.v.load(), 1u);
  EXPECT_EQ(WaitExit(pa, std::chrono::milliseconds(50)), -1)
      << "left without an answer or a stop";
  a->stop.v.store(1);
  const int status = WaitExit(pa, std::chrono::seconds(5));
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(a->done.v.load(), 0u);
}

}  // namespace
}  // namespace rocemu::emulator
