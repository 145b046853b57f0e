#include "protocol/crc32.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdint>
#include <iostream>
#include <vector>

#include "gtest/gtest.h"

namespace rocemu::protocol {
namespace {

std::vector<uint8_t> Bytes(size_t n) {
  std::vector<uint8_t> b(n);
  uint32_t x = 0x12345678;
  for (auto& v : b) {
    x = x * 1103515245 + 12345;
    v = static_cast<uint8_t>(x >> 16);
  }
  return b;
}

TEST(Crc32Test, MatchesZlibAtEveryLengthAndChains) {
  const std::vector<uint8_t> b = Bytes(4200);
  for (size_t n = 0; n <= b.size(); n += (n < 600 ? 1 : 37)) {
    const uint32_t want =
        static_cast<uint32_t>(crc32(0L, b.data(), static_cast<uInt>(n)));
    ASSERT_EQ(Crc32(0, b.data(), n), want) << n << " bytes";
    const size_t half = n / 3;
    ASSERT_EQ(Crc32(Crc32(0, b.data(), half), b.data() + half, n - half), want)
        << n << " bytes in two calls";
  }
}

#if defined(__x86_64__)
// XINUSE (XGETBV with ECX = 1): bit 2 is the upper halves of ymm0-15, bit
// 6 the upper halves of zmm0-15; set means dirty, as the core sees it.
bool ReadXinuse(uint64_t* out) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(0xD, 1, &a, &b, &c, &d) || (a & (1u << 2)) == 0) {
    return false;
  }
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  *out = (static_cast<uint64_t>(hi) << 32) | lo;
  return true;
}
constexpr uint64_t kDirtyUpper = (1u << 2) | (1u << 6);

TEST(Crc32Test, LeavesNoDirtyUpperVectorState) {
  unsigned a, b, c, d;
  ASSERT_TRUE(__get_cpuid(1, &a, &b, &c, &d));
  if (!kCpuHasAvx) {
    // Nothing to clear: without AVX there are no upper halves.
    EXPECT_EQ(c & bit_AVX, 0u) << "AVX reported by CPUID but not detected";
    return;
  }
  uint64_t x;
  if (!ReadXinuse(&x)) {
    GTEST_SKIP() << "this CPU does not report XINUSE (XGETBV ECX=1)";
  }
  const std::vector<uint8_t> buf = Bytes(4200);
  size_t raw_dirty = 0;
  for (size_t n = 1; n <= buf.size(); n += (n < 600 ? 1 : 37)) {
    ClearUpperVectorState();
    volatile uint32_t sink = crc32_gzip_refl(0, buf.data(), n);
    (void)sink;
    ASSERT_TRUE(ReadXinuse(&x));
    if ((x & kDirtyUpper) != 0) ++raw_dirty;
    ClearUpperVectorState();
    sink = Crc32(0, buf.data(), n);
    ASSERT_TRUE(ReadXinuse(&x));
    ASSERT_EQ(x & kDirtyUpper, 0u)
        << "upper vector state left dirty after Crc32 over " << n << " bytes";
  }
  // What the wrapper is for, on this CPU: how many lengths ISA-L alone
  // left dirty (0 where its kernel cleans up after itself).
  std::cout << "ISA-L alone left the upper state dirty at " << raw_dirty
            << " of the lengths tried\n";
}
#endif

}  // namespace
}  // namespace rocemu::protocol
