// Reaching another process's memory, as ibv_reg_mr reaches any buffer of the
// application: the region is a range of the client's address space and the
// daemon copies between it and frames with process_vm_readv/writev. That
// copy is the only one (the kernel moves the bytes straight between the
// client's pages and the frame), and the client's pages need not be shared
// or pinned: a page the client unmapped, or a client that exited, turns the
// copy into a counted fault (kFault) rather than a crash, as an RNIC with
// on-demand paging reports an access to an unmapped page.
//
// process_vm_* needs ptrace-attach permission on the target: same uid and
// kernel.yama.ptrace_scope <= 1 (0 when the daemon is not an ancestor of the
// client), or CAP_SYS_PTRACE.
#ifndef ROCEMU_NIC_PROCESS_MEMORY_H_
#define ROCEMU_NIC_PROCESS_MEMORY_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "nic/mr_status.h"

namespace rocemu::nic {

// One copy of [remote, remote + local.size()) of `pid`. kOk, or kFault when
// the kernel refused or moved fewer bytes (unmapped page, write to a
// read-only page, exited target, lost permission).
MrStatus ProcessRead(pid_t pid, uint64_t remote, std::span<uint8_t> local);
MrStatus ProcessWrite(pid_t pid, uint64_t remote,
                      std::span<const uint8_t> local);

// Collects the pieces of one copy that lie in process regions so that a
// scatter/gather list spanning several of them costs one system call per
// target process, not one per piece: consecutive pieces of the same process
// whose local side is contiguous share a call, one remote iovec each
// (adjacent remote pieces merge). Fixed arrays: nothing is allocated.
class ProcessVmBatch {
 public:
  explicit ProcessVmBatch(bool write) : write_(write) {}
  ~ProcessVmBatch() = default;
  ProcessVmBatch(const ProcessVmBatch&) = delete;
  ProcessVmBatch& operator=(const ProcessVmBatch&) = delete;

  // Queues [remote, remote + len) of `pid` <-> local[0, len). May run the
  // queued copy first (another process, a gap in the local buffer, full
  // arrays) and returns its outcome.
  MrStatus Add(pid_t pid, uint8_t* local, uint64_t remote, size_t len);
  // Runs the queued copy; the caller must call it before using the data.
  MrStatus Flush();

 private:
  static constexpr int kMaxIov = 16;
  bool write_;
  pid_t pid_ = 0;
  uint8_t* local_ = nullptr;
  size_t local_len_ = 0;
  iovec remote_[kMaxIov];
  int n_ = 0;
};

// Registration-time check, as ibv_reg_mr's pinning would fail: `pid` lets
// us read the first and the last byte of [addr, addr + length), and its
// /proc/pid/maps shows every page of the range mapped readable (and
// writable when `need_write`). PermissionDenied when ptrace access is
// refused; InvalidArgument for a process that does not exist, a hole in the
// range or a missing permission. The mapping can change afterwards: later
// accesses are checked by the copies themselves (kFault).
absl::Status ProbeProcessRange(pid_t pid, uint64_t addr, uint64_t length,
                               bool need_write = false);
// An on-demand-paging region (IBV_ACCESS_ON_DEMAND) needs no page mapped
// now: only that `pid` exists and lets us reach its memory (PermissionDenied
// / InvalidArgument as above). Each access then faults the pages in, as
// process_vm_readv/writev do, or fails (kFault) where nothing is mapped.
absl::Status ProbeProcessAccess(pid_t pid, uint64_t addr);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_PROCESS_MEMORY_H_
