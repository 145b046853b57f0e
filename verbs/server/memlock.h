// What the kernel would let a client process pin: rxe and mlx5 pin the
// pages of a memory region at registration (ib_umem_get) and count them
// per process against RLIMIT_MEMLOCK, unless the process has
// CAP_IPC_LOCK. The daemon counts the same pages (ResourceLimits::Pin),
// and reads the limit and the capability of the client's pid, as the
// kernel reads the caller's, at each registration.
#ifndef ROCEMU_VERBS_SERVER_MEMLOCK_H_
#define ROCEMU_VERBS_SERVER_MEMLOCK_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace rocemu::verbs {

// The bytes process `pid` may pin, or nullopt when it may pin without
// limit: RLIMIT_MEMLOCK is infinite, or the process has CAP_IPC_LOCK in
// its effective set and lives in the daemon's user namespace (a
// capability held in a child namespace is not one the kernel honours for
// pinning). The limit comes from prlimit(2), or /proc/<pid>/limits when
// the daemon may not ask; nullopt when neither can be read (the process
// is gone: its connection is about to close).
std::optional<uint64_t> MemlockLimitBytes(pid_t pid);

// Pages of `page_size` bytes that [start, start + length) touches.
uint64_t PagesSpanned(uint64_t start, uint64_t length, uint64_t page_size);

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_MEMLOCK_H_
