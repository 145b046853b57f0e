#include "nic/process_memory.h"

#include <errno.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

namespace {

MrStatus Transfer(bool write, pid_t pid, const iovec& local,
                  const iovec* remote, int n) {
  const ssize_t done = write ? process_vm_writev(pid, &local, 1, remote, n, 0)
                             : process_vm_readv(pid, &local, 1, remote, n, 0);
  // A short count means a page in the middle was missing: the transfer
  // stopped there, as a page fault an RNIC could not resolve.
  return done == static_cast<ssize_t>(local.iov_len) ? MrStatus::kOk
                                                     : MrStatus::kFault;
}

}  // namespace

MrStatus ProcessRead(pid_t pid, uint64_t remote, std::span<uint8_t> local) {
  if (local.empty()) return MrStatus::kOk;
  const iovec l{local.data(), local.size()};
  const iovec r{reinterpret_cast<void*>(remote), local.size()};
  return Transfer(false, pid, l, &r, 1);
}

MrStatus ProcessWrite(pid_t pid, uint64_t remote,
                      std::span<const uint8_t> local) {
  if (local.empty()) return MrStatus::kOk;
  // process_vm_writev only reads the local iovec.
  const iovec l{const_cast<uint8_t*>(local.data()), local.size()};
  const iovec r{reinterpret_cast<void*>(remote), local.size()};
  return Transfer(true, pid, l, &r, 1);
}

MrStatus ProcessVmBatch::Add(pid_t pid, uint8_t* local, uint64_t remote,
                             size_t len) {
  if (len == 0) return MrStatus::kOk;
  if (n_ > 0) {
    iovec& last = remote_[n_ - 1];
    const bool same = pid == pid_ && local == local_ + local_len_;
    if (same &&
        reinterpret_cast<uint64_t>(last.iov_base) + last.iov_len == remote) {
      last.iov_len += len;
      local_len_ += len;
      return MrStatus::kOk;
    }
    if (!same || n_ == kMaxIov) {
      const MrStatus st = Flush();
      if (st != MrStatus::kOk) return st;
    }
  }
  if (n_ == 0) {
    pid_ = pid;
    local_ = local;
    local_len_ = 0;
  }
  remote_[n_++] = iovec{reinterpret_cast<void*>(remote), len};
  local_len_ += len;
  return MrStatus::kOk;
}

MrStatus ProcessVmBatch::Flush() {
  if (n_ == 0) return MrStatus::kOk;
  const iovec l{local_, local_len_};
  const MrStatus st = Transfer(write_, pid_, l, remote_, n_);
  n_ = 0;
  local_len_ = 0;
  return st;
}

namespace {

// Walks /proc/pid/maps (sorted by address) over [addr, end).
absl::Status CheckMaps(pid_t pid, uint64_t addr, uint64_t end,
                       bool need_write) {
  const std::string path = absl::StrFormat("/proc/%d/maps", pid);
  std::ifstream maps(path);
  if (!maps) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read %s: %s", path, std::strerror(errno)));
  }
  uint64_t at = addr;
  std::string line;
  while (at < end && std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;  // NOLINT(runtime/int): sscanf
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) {
      continue;
    }
    if (hi <= at) continue;
    if (lo > at) break;  // a hole at `at`
    if (perms[0] != 'r' || (need_write && perms[1] != 'w')) {
      return absl::InvalidArgumentError(
          absl::StrFormat("pid %d maps 0x%x %s, the region needs %s", pid, at,
                          perms, need_write ? "read and write" : "read"));
    }
    at = hi;
  }
  if (at < end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address 0x%x is not mapped in pid %d", at, pid));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ProbeProcessAccess(pid_t pid, uint64_t addr) {
  if (pid <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("invalid pid %d", pid));
  }
  uint8_t byte;
  const iovec l{&byte, 1};
  const iovec r{reinterpret_cast<void*>(addr), 1};
  if (process_vm_readv(pid, &l, 1, &r, 1, 0) == 1 || errno == EFAULT) {
    return absl::OkStatus();  // reachable; mapped or not does not matter
  }
  if (errno == EPERM) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "cannot reach the memory of pid %d: ptrace access refused", pid));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "cannot reach the memory of pid %d (%s)", pid, std::strerror(errno)));
}

absl::Status ProbeProcessRange(pid_t pid, uint64_t addr, uint64_t length,
                               bool need_write) {
  if (pid <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("invalid pid %d", pid));
  }
  if (length == 0 || addr + length < addr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "range [0x%x, +%u) of pid %d is empty or wraps", addr, length, pid));
  }
  const uint64_t probes[2] = {addr, addr + length - 1};
  for (uint64_t at : probes) {
    uint8_t byte;
    const iovec l{&byte, 1};
    const iovec r{reinterpret_cast<void*>(at), 1};
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) == 1) continue;
    const int e = errno;
    if (e == EPERM) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "cannot reach the memory of pid %d: ptrace access refused (needs "
          "the same uid and kernel.yama.ptrace_scope <= 1, or "
          "CAP_SYS_PTRACE)",
          pid));
    }
    if (e == ESRCH) {
      return absl::InvalidArgumentError(
          absl::StrFormat("no process with pid %d", pid));
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("address 0x%x is not mapped readable in pid %d (%s)",
                        at, pid, std::strerror(e)));
  }
  return CheckMaps(pid, addr, addr + length, need_write);
}

}  // namespace rocemu::nic
