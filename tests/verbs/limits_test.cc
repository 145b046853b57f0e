// The limits a shared daemon enforces (verbs/server/resource_limits.h): a
// client that tries to exhaust each per-uid cap (PDs, CQs, QPs, MRs, queue
// memory) gets ENOMEM exactly at the cap, the server stays up, a client of
// another uid gets its own share meanwhile, and what a client held comes
// back when it releases it or goes. Registered memory counts against the
// process's RLIMIT_MEMLOCK unless it may lock memory (CAP_IPC_LOCK), and
// regions paging on demand pin nothing.
#include <errno.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "tests/verbs/session_fixture.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/server/memlock.h"
#include "verbs/server/resource_limits.h"
#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"

namespace rocemu::verbs::testing {
namespace {

// --- the accounting alone -------------------------------------------------

TEST(ResourceLimitsTest, CapsAreAllOrNothingPerUid) {
  ResourceLimits l({.pds = 2, .qps = 1, .queue_bytes = 100}, false);
  EXPECT_TRUE(l.Take(7, {.pds = 2}).ok());
  absl::Status st = l.Take(7, {.pds = 1});
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("uid 7 holds 2 PDs"), std::string::npos) << st;
  // Another uid has its own.
  EXPECT_TRUE(l.Take(8, {.pds = 2}).ok());
  // A charge passing one cap takes nothing of the others.
  EXPECT_FALSE(l.Take(7, {.qps = 1, .queue_bytes = 101}).ok());
  EXPECT_EQ(l.UseOf(7).qps, 0u);
  EXPECT_TRUE(l.Take(7, {.qps = 1, .queue_bytes = 100}).ok());
  // Uncapped kinds are only counted.
  EXPECT_TRUE(l.Take(7, {.cqs = 1000, .mrs = 1000}).ok());
  l.Give(7, {.pds = 1});
  EXPECT_TRUE(l.Take(7, {.pds = 1}).ok());
  EXPECT_EQ(l.UseOf(7).pds, 2u);
  EXPECT_EQ(l.UseOf(7).cqs, 1000u);
}

TEST(ResourceLimitsTest, PinnedPagesCountAgainstTheProcessLimit) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::optional<uint64_t> limit = 4 * page + page / 2;  // 4 whole pages
  ResourceLimits l({}, true, [&](pid_t) { return limit; });
  EXPECT_TRUE(l.Pin(100, 3).ok());
  EXPECT_TRUE(l.Pin(100, 1).ok());  // exactly the limit
  EXPECT_EQ(l.Pin(100, 1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(l.Pin(101, 4).ok());  // per process
  l.Unpin(100, 2);
  EXPECT_TRUE(l.Pin(100, 2).ok());
  EXPECT_EQ(l.PinnedPages(100), 4u);
  limit = std::nullopt;  // unlimited, or CAP_IPC_LOCK
  EXPECT_TRUE(l.Pin(100, 1u << 30).ok());
  ResourceLimits off({}, false,
                     [](pid_t) { return std::optional<uint64_t>(0); });
  EXPECT_TRUE(off.Pin(100, 10).ok());
  EXPECT_EQ(off.PinnedPages(100), 0u);
}

TEST(ResourceLimitsTest, PagesSpannedAsTheKernelPinsThem) {
  EXPECT_EQ(PagesSpanned(0, 0, 4096), 0u);
  EXPECT_EQ(PagesSpanned(0, 1, 4096), 1u);
  EXPECT_EQ(PagesSpanned(0, 4096, 4096), 1u);
  EXPECT_EQ(PagesSpanned(4095, 2, 4096), 2u);
  EXPECT_EQ(PagesSpanned(100, 8192, 4096), 3u);
}

TEST(ResourceLimitsTest, ReadsThisProcesssLimit) {
  rlimit r{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &r), 0);
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2] = {};
  ASSERT_EQ(syscall(SYS_capget, &h, d), 0);
  const bool ipc_lock = (d[0].effective & (1u << CAP_IPC_LOCK)) != 0;
  const std::optional<uint64_t> got = MemlockLimitBytes(getpid());
  // CAP_IPC_LOCK (root, usually): no limit, whatever the rlimit says.
  if (ipc_lock || r.rlim_cur == RLIM_INFINITY) {
    EXPECT_FALSE(got.has_value());
  } else {
    EXPECT_EQ(got, std::optional<uint64_t>(r.rlim_cur));
  }
}

// --- a server with limits, forked clients ---------------------------------

// Exit codes of the children.
enum LimitFail {
  kOpenCtx = 50,
  kUnder,     // refused below the cap
  kNotAtCap,  // the request past the cap was not ENOMEM
  kRelease,
  kAfterRelease,
  kReport,
};

// Creates objects of one kind until the library says no; the count made,
// and the errno of the refusal.
template <typename Make>
std::pair<int, int> Exhaust(Make make, int max_tries = 64) {
  for (int n = 0; n < max_tries; ++n) {
    errno = 0;
    if (!make()) return {n, errno};
  }
  return {max_tries, 0};
}

rocemu_qp* MakeQp(rocemu_pd* pd, rocemu_cq* cq) {
  rocemu_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {16, 16, 1, 1, 0};
  init.qp_type = ROCEMU_QPT_RC;
  return rocemu_create_qp(pd, &init);
}

class VerbsLimitsTest : public VerbsSessionTest {
 protected:
  void StartWithLimits(const ResourceUse& caps, bool memlock) {
    ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);
    limits_ = std::make_shared<ResourceLimits>(caps, memlock);
    SessionServerOptions o;
    o.socket_mode = 0666;
    o.limits = limits_;
    StartServer(o);
  }
  std::shared_ptr<ResourceLimits> limits_;
};

// A client that takes every cap to its end: exactly the cap, then ENOMEM.
// Reports 'x' when it holds everything, then waits for the parent.
void Hog(const std::string& path, int up, int down) {
  rocemu_context* ctx = rocemu_open_device(path.c_str());
  if (ctx == nullptr) _exit(kOpenCtx);
  std::vector<rocemu_pd*> pds;
  auto [n_pd, e_pd] = Exhaust([&] {
    rocemu_pd* pd = rocemu_alloc_pd(ctx);
    if (pd != nullptr) pds.push_back(pd);
    return pd != nullptr;
  });
  if (n_pd != 2) _exit(kUnder);
  if (e_pd != ENOMEM) _exit(kNotAtCap);
  std::vector<rocemu_cq*> cqs;
  auto [n_cq, e_cq] = Exhaust([&] {
    rocemu_cq* cq = rocemu_create_cq(ctx, 16, nullptr, nullptr, 0);
    if (cq != nullptr) cqs.push_back(cq);
    return cq != nullptr;
  });
  if (n_cq != 2 || e_cq != ENOMEM) _exit(kNotAtCap);
  rocemu_buf* buf = rocemu_alloc_buf(ctx, 1 << 16);
  if (buf == nullptr) _exit(kUnder);
  std::vector<rocemu_mr*> mrs;
  auto [n_mr, e_mr] = Exhaust([&] {
    rocemu_mr* mr =
        rocemu_reg_mr(pds[0], buf->addr, 4096, ROCEMU_ACCESS_LOCAL_WRITE);
    if (mr != nullptr) mrs.push_back(mr);
    return mr != nullptr;
  });
  if (n_mr != 3 || e_mr != ENOMEM) _exit(kNotAtCap);
  std::vector<rocemu_qp*> qps;
  auto [n_qp, e_qp] = Exhaust([&] {
    rocemu_qp* qp = MakeQp(pds[0], cqs[0]);
    if (qp != nullptr) qps.push_back(qp);
    return qp != nullptr;
  });
  if (n_qp != 2 || e_qp != ENOMEM) _exit(kNotAtCap);
  // What is released may be taken again, no more.
  if (rocemu_dereg_mr(mrs.back()) != 0) _exit(kRelease);
  mrs.pop_back();
  if (rocemu_destroy_qp(qps.back()) != 0) _exit(kRelease);
  qps.pop_back();
  mrs.push_back(
      rocemu_reg_mr(pds[0], buf->addr, 4096, ROCEMU_ACCESS_LOCAL_WRITE));
  qps.push_back(MakeQp(pds[0], cqs[0]));
  if (mrs.back() == nullptr || qps.back() == nullptr) _exit(kAfterRelease);
  errno = 0;
  if (MakeQp(pds[0], cqs[0]) != nullptr || errno != ENOMEM) _exit(kNotAtCap);
  WriteAll(up, "x", 1);
  char end;
  ReadAll(down, &end, 1);
  // Gone without releasing: the server gives it all back.
}

TEST_F(VerbsLimitsTest, ClientExhaustingEachCapGetsEnomemOthersDoNot) {
  StartWithLimits({.pds = 2, .cqs = 2, .qps = 2, .mrs = 3}, false);
  const bool root = geteuid() == 0;
  const std::string path = path_;
  int from1, to1;
  const pid_t hog =
      Fork([&](int up, int down) { Hog(path, up, down); }, &from1, &to1);
  char c = 0;
  ASSERT_TRUE(PumpRead(from1, &c, 1)) << "hog exited " << PumpUntilExit(hog);
  EXPECT_EQ(limits_->UseOf(geteuid()).qps, 2u);
  EXPECT_GE(server_->counters().limit_refusals, 5u);
  // Another user (nobody, when the test may change uid) holds its own
  // share while the hog holds everything it may.
  int from2, to2;
  const pid_t other = Fork(
      [&](int up, int down) {
        (void)up;
        (void)down;
        if (root && (setgid(65534) != 0 || setuid(65534) != 0)) {
          _exit(kOpenCtx);
        }
        rocemu_context* ctx = rocemu_open_device(path.c_str());
        if (ctx == nullptr) _exit(kOpenCtx);
        rocemu_pd* pd = rocemu_alloc_pd(ctx);
        rocemu_cq* cq = rocemu_create_cq(ctx, 16, nullptr, nullptr, 0);
        if (pd == nullptr || cq == nullptr) _exit(kUnder);
        rocemu_qp* qp = MakeQp(pd, cq);
        rocemu_buf* buf = rocemu_alloc_buf(ctx, 4096);
        if (qp == nullptr || buf == nullptr ||
            rocemu_reg_mr(pd, buf->addr, 4096, ROCEMU_ACCESS_LOCAL_WRITE) ==
                nullptr) {
          _exit(kUnder);
        }
      },
      &from2, &to2);
  const int other_exit = PumpUntilExit(other);
  if (root) {
    EXPECT_EQ(other_exit, 0) << "another uid was refused";
  } else {
    // One uid for both: the hog's caps are this client's too.
    EXPECT_EQ(other_exit, kUnder);
  }
  ASSERT_EQ(write(to1, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(hog), 0);
  // The hog's uid holds nothing once it is gone: a new client of it may
  // take every cap again.
  const ResourceUse after = limits_->UseOf(geteuid());
  EXPECT_EQ(after.pds + after.cqs + after.qps + after.mrs + after.queue_bytes,
            0u);
  const pid_t again =
      Fork([&](int up, int down) { Hog(path, up, down); }, &from1, &to1);
  ASSERT_TRUE(PumpRead(from1, &c, 1)) << "exited " << PumpUntilExit(again);
  ASSERT_EQ(write(to1, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(again), 0);
  for (int fd : {from1, to1, from2, to2}) close(fd);
}

TEST_F(VerbsLimitsTest, QueueMemoryCapCountsEveryRing) {
  // Two CQ rings of 512 entries fill the cap (their size as the daemon
  // maps them: 40 KiB each with 72-byte completions).
  absl::StatusOr<ShmRing> probe =
      ShmRing::Create("limits-probe", sizeof(CqeSlot), 512);
  ASSERT_TRUE(probe.ok()) << probe.status();
  StartWithLimits({.queue_bytes = 2 * probe->map_bytes()}, false);
  const std::string path = path_;
  int from, to;
  const pid_t pid = Fork(
      [&](int, int) {
        rocemu_context* ctx = rocemu_open_device(path.c_str());
        if (ctx == nullptr) _exit(kOpenCtx);
        rocemu_pd* pd = rocemu_alloc_pd(ctx);
        if (pd == nullptr) _exit(kUnder);
        std::vector<rocemu_cq*> cqs;
        auto [n, e] = Exhaust([&] {
          rocemu_cq* cq = rocemu_create_cq(ctx, 512, nullptr, nullptr, 0);
          if (cq != nullptr) cqs.push_back(cq);
          return cq != nullptr;
        });
        if (n != 2 || e != ENOMEM) _exit(kNotAtCap);
        // A QP's rings need room too; resizing a CQ up is charged.
        errno = 0;
        if (MakeQp(pd, cqs[0]) != nullptr || errno != ENOMEM) {
          _exit(kNotAtCap);
        }
        int actual = 0;
        if (rocemu_resize_cq(cqs[0], 1024, &actual) != ENOMEM) {
          _exit(kNotAtCap);
        }
        if (rocemu_destroy_cq(cqs[1]) != 0) _exit(kRelease);
        if (rocemu_resize_cq(cqs[0], 1024, &actual) != 0) _exit(kAfterRelease);
        // Shrinking gives back: room for a QP.
        if (rocemu_resize_cq(cqs[0], 16, &actual) != 0) _exit(kAfterRelease);
        if (MakeQp(pd, cqs[0]) == nullptr) _exit(kAfterRelease);
      },
      &from, &to);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_GE(server_->counters().limit_refusals, 3u);
  EXPECT_EQ(limits_->UseOf(geteuid()).queue_bytes, 0u);
  close(from);
  close(to);
}

TEST_F(VerbsLimitsTest, RegisteredMemoryCountsAgainstRlimitMemlock) {
  StartWithLimits({}, true);
  const bool root = geteuid() == 0;
  const std::string path = path_;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  int from, to;
  const pid_t pid = Fork(
      [&](int up, int down) {
        // 1 MiB may be pinned; as root, nobody (no CAP_IPC_LOCK) too.
        const rlimit lim{1 << 20, 1 << 20};
        if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(kOpenCtx);
        if (root && (setgid(65534) != 0 || setuid(65534) != 0)) {
          _exit(kOpenCtx);
        }
        rocemu_context* ctx = rocemu_open_device(path.c_str());
        if (ctx == nullptr) _exit(kOpenCtx);
        rocemu_pd* pd = rocemu_alloc_pd(ctx);
        rocemu_buf* buf = rocemu_alloc_buf(ctx, 2 << 20);
        if (pd == nullptr || buf == nullptr) _exit(kUnder);
        auto* base = static_cast<uint8_t*>(buf->addr);
        rocemu_mr* a =
            rocemu_reg_mr(pd, base, 512 << 10, ROCEMU_ACCESS_LOCAL_WRITE);
        rocemu_mr* b = rocemu_reg_mr(pd, base + (512 << 10), 512 << 10,
                                     ROCEMU_ACCESS_LOCAL_WRITE);
        if (a == nullptr || b == nullptr) _exit(kUnder);  // exactly 1 MiB
        errno = 0;
        if (rocemu_reg_mr(pd, base + (1 << 20), page,
                          ROCEMU_ACCESS_LOCAL_WRITE) != nullptr ||
            errno != ENOMEM) {
          _exit(kNotAtCap);
        }
        // Overlapping registrations pin again, as the kernel counts them.
        errno = 0;
        if (rocemu_reg_mr(pd, base, page, ROCEMU_ACCESS_LOCAL_WRITE) !=
                nullptr ||
            errno != ENOMEM) {
          _exit(kNotAtCap);
        }
        // The count is the process's: its second context has no more.
        rocemu_context* ctx2 = rocemu_open_device(path.c_str());
        rocemu_pd* pd2 = ctx2 != nullptr ? rocemu_alloc_pd(ctx2) : nullptr;
        rocemu_buf* buf2 =
            ctx2 != nullptr ? rocemu_alloc_buf(ctx2, page) : nullptr;
        if (pd2 == nullptr || buf2 == nullptr) _exit(kUnder);
        errno = 0;
        if (rocemu_reg_mr(pd2, buf2->addr, page, ROCEMU_ACCESS_LOCAL_WRITE) !=
                nullptr ||
            errno != ENOMEM) {
          _exit(kNotAtCap);
        }
        // On-demand paging pins nothing.
        void* odp = std::malloc(4 << 20);
        if (odp == nullptr ||
            rocemu_reg_mr(pd, odp, 4 << 20,
                          ROCEMU_ACCESS_LOCAL_WRITE |
                              ROCEMU_ACCESS_ON_DEMAND) == nullptr) {
          _exit(kUnder);
        }
        // Deregistering gives the pages back.
        if (rocemu_dereg_mr(a) != 0) _exit(kRelease);
        if (rocemu_reg_mr(pd2, buf2->addr, page, ROCEMU_ACCESS_LOCAL_WRITE) ==
            nullptr) {
          _exit(kAfterRelease);
        }
        WriteAll(up, "x", 1);
        char end;
        ReadAll(down, &end, 1);
      },
      &from, &to);
  char c = 0;
  ASSERT_TRUE(PumpRead(from, &c, 1)) << "exited " << PumpUntilExit(pid);
  // b (512 KiB) and the page of the second context.
  EXPECT_EQ(limits_->PinnedPages(pid), (512u << 10) / page + 1);
  EXPECT_EQ(server_->counters().memlock_refusals, 3u);
  ASSERT_EQ(write(to, "e", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  EXPECT_EQ(limits_->PinnedPages(pid), 0u);
  close(from);
  close(to);
}

}  // namespace
}  // namespace rocemu::verbs::testing
