// Memory the daemon can reach without a syscall per packet.
//
// A region registered in ordinary process memory (malloc, posix_memalign,
// anonymous mmap: what perftest and most programs register) would cost the
// daemon one process_vm_readv/writev per packet. Instead, at registration
// the library moves the region's pages onto a sealed memfd: it copies the
// pages' contents into the memfd and mremap()s the memfd mapping over the
// original addresses in one atomic step, so the program keeps its pointers
// and data, and the daemon maps the same memfd. After that both processes
// share the pages, as an RNIC shares pinned pages with its host.
//
// What is not moved (the daemon then falls back to process_vm_*): file
// backed or already shared mappings, hugetlb pages, read-only memory, the
// calling thread's stack, a range that partly overlaps pages moved for
// another registration, and everything when $ROCEMU_MR_REMAP=0. Pages stay
// moved after deregistration (their contents are the program's), and a
// later registration inside them reuses the memfd.
//
// Caveats, documented in docs/verbs.md: a write another thread makes to
// these pages while ibv_reg_mr copies them is lost; after fork() the child
// gets private copies (an atfork handler), as with fork-safe pinned memory.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_REMAP_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_REMAP_H_

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rocemu::verbs::client {

struct SharedRange {
  int fd;           // the memfd; stays owned by the library (do not close)
  uint64_t offset;  // of the region's first byte in the memfd
};

// The memfd behind [addr, addr + length), moving the pages onto one if
// needed; nullopt when the range cannot be shared (see above).
std::optional<SharedRange> ShareRange(void* addr, size_t length);

// Whether ShareRange may move pages ($ROCEMU_MR_REMAP, default on).
bool RemapEnabled();

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_REMAP_H_
