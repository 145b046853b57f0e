// MemifGuard (emulator/port/memif_guard.h): a fault inside a guarded burst
// is contained, a fault outside one stays fatal.
#include "emulator/port/memif_guard.h"

#include <sys/mman.h>

#include <cstdint>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

// A page nothing may read: what a burst meets when the PMD's teardown
// unmapped the ring under it.
const volatile uint8_t* Unmapped() {
  static void* const page =
      mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return static_cast<const volatile uint8_t*>(page);
}

TEST(MemifGuard, BurstRunsAndReturnsItsCount) {
  MemifGuard::Install();
  bool faulted = false;
  EXPECT_EQ(MemifGuard::Run([] { return uint16_t{7}; }, &faulted), 7);
  EXPECT_FALSE(faulted);
}

TEST(MemifGuard, FaultInsideABurstIsContained) {
  MemifGuard::Install();
  const uint64_t before = MemifGuard::contained();
  int reached = 0;
  bool faulted = false;
  const uint16_t n = MemifGuard::Run(
      [&] {
        ++reached;
        return static_cast<uint16_t>(*Unmapped() + 5);
      },
      &faulted);
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(faulted);
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(MemifGuard::contained(), before + 1);
  // The thread carries on: the next burst runs normally, and another
  // fault is contained again (nothing stayed blocked).
  faulted = false;
  EXPECT_EQ(MemifGuard::Run([] { return uint16_t{3}; }, &faulted), 3);
  EXPECT_FALSE(faulted);
  MemifGuard::Run([] { return static_cast<uint16_t>(*Unmapped()); }, &faulted);
  EXPECT_TRUE(faulted);
  EXPECT_EQ(MemifGuard::contained(), before + 2);
}

TEST(MemifGuard, InjectedFaultHitsTheNextBurstOnly) {
  MemifGuard::Install();
  const uint64_t before = MemifGuard::contained();
  MemifGuard::InjectFault();
  int ran = 0;
  bool faulted = false;
  EXPECT_EQ(
      MemifGuard::Run([&] { return static_cast<uint16_t>(++ran); }, &faulted),
      0);
  EXPECT_TRUE(faulted);
  EXPECT_EQ(ran, 0);  // faulted before the PMD was entered
  faulted = false;
  EXPECT_EQ(
      MemifGuard::Run([&] { return static_cast<uint16_t>(++ran); }, &faulted),
      1);
  EXPECT_FALSE(faulted);
  EXPECT_EQ(MemifGuard::contained(), before + 1);
}

TEST(MemifGuardDeathTest, FaultOutsideABurstStaysFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        MemifGuard::Install();
        (void)*Unmapped();
      },
      "");
}

}  // namespace
}  // namespace rocemu::emulator
