// Moving a region's pages onto a memfd (client_remap.h) in a program that
// hooks mremap for memory events, as UCX's UCM does (issue 39): its
// override takes four arguments and so drops mremap's fifth, the new
// address of an MREMAP_FIXED move. This binary defines such a hook (its
// own mremap, which the library's calls bind to) that sends the pages to
// a wrong address; the library must still put the memfd at the region's
// own addresses, or not move it at all, never report a move that left the
// program on its old private pages while the daemon writes into the memfd.
#include <gtest/gtest.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "verbs/client/client_remap.h"

namespace {

void* g_wrong = nullptr;  // where the hook sends MREMAP_FIXED moves
int g_hooked_moves = 0;

}  // namespace

// The four-argument hook: an MREMAP_FIXED move goes to g_wrong, not to
// the address the caller gave (what a hook that never reads the fifth
// argument passes on is whatever that register holds).
extern "C" void* mremap(void* old_address, size_t old_size, size_t new_size,
                        int flags, ...) noexcept {
  void* to = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list ap;
    va_start(ap, flags);
    to = va_arg(ap, void*);
    va_end(ap);
    if (g_wrong != nullptr) {
      to = g_wrong;
      ++g_hooked_moves;
    }
  }
  return reinterpret_cast<void*>(
      syscall(SYS_mremap, old_address, old_size, new_size, flags, to));
}

namespace rocemu::verbs::client {
namespace {

TEST(RemapHookTest, MovedPagesStayAtTheRegionUnderAFourArgumentHook) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = 4 * page;
  auto* buf = static_cast<uint8_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(buf, MAP_FAILED);
  for (size_t i = 0; i < len; ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  // The wrong place: a reservation of its own, so that a move there cannot
  // land on anything else.
  void* wrong =
      mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(wrong, MAP_FAILED);
  // The hook is live: a direct call through it goes to the wrong place.
  {
    void* probe = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(probe, MAP_FAILED);
    void* target =
        mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(target, MAP_FAILED);
    g_wrong = wrong;
    void* got =
        mremap(probe, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    g_wrong = nullptr;
    EXPECT_EQ(got, wrong);
    EXPECT_EQ(g_hooked_moves, 1);
    munmap(got, page);
    munmap(target, page);
    wrong = mmap(wrong, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                 -1, 0);
    ASSERT_NE(wrong, MAP_FAILED);
  }

  g_wrong = wrong;
  g_hooked_moves = 0;
  const std::optional<SharedRange> shared = ShareRange(buf + 100, 2 * page);
  g_wrong = nullptr;
  ASSERT_TRUE(shared.has_value()) << "private anonymous memory is movable";
  EXPECT_EQ(shared->offset, 100u);
  // The program keeps its data at its own addresses...
  for (size_t i = 0; i < len; ++i) {
    ASSERT_EQ(buf[i], static_cast<uint8_t>(i * 7 + 1)) << "byte " << i;
  }
  // ...and those addresses are the memfd the daemon maps: what the daemon
  // writes there (a RECEIVE's payload) the program reads.
  void* daemon_view = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                           MAP_SHARED, shared->fd, 0);
  ASSERT_NE(daemon_view, MAP_FAILED);
  auto* d = static_cast<uint8_t*>(daemon_view);
  EXPECT_EQ(d[100], buf[100]);
  std::memset(d + 100, 0xA5, 64);
  EXPECT_EQ(buf[100], 0xA5) << "the daemon's write is not where the program "
                               "reads: the pages were moved elsewhere";
  EXPECT_EQ(buf[163], 0xA5);
  // Nothing was moved onto the wrong place.
  EXPECT_EQ(g_hooked_moves, 0);
  munmap(daemon_view, 2 * page);
  munmap(wrong, len);
  munmap(buf, len);
}

}  // namespace
}  // namespace rocemu::verbs::client
