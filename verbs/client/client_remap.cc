#include "verbs/client/client_remap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rocemu::verbs::client {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROCEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ROCEMU_ASAN 1
#endif

// Copies the pages behind a region into its new shared memory: whole
// pages, so also the bytes around the application's buffer, which are
// its own memory whatever its allocator says of them. Under ASan those
// bytes are redzones a checked memcpy refuses to read, so the copy there
// goes word by word, unchecked (volatile, so that it is not turned back
// into a memcpy call).
#ifdef ROCEMU_ASAN
__attribute__((no_sanitize("address"))) void CopyWholePages(void* dst,
                                                            const void* src,
                                                            size_t len) {
  auto* d = static_cast<volatile uint64_t*>(dst);
  auto* s = static_cast<const volatile uint64_t*>(src);
  for (size_t i = 0; i < len / sizeof(uint64_t); ++i) d[i] = s[i];
}
#else
void CopyWholePages(void* dst, const void* src, size_t len) {
  std::memcpy(dst, src, len);
}
#endif

struct Vma {
  uintptr_t start, end;
  char perms[5];
  uint64_t offset;
  uint64_t inode;
  std::string path;
};

// The mappings of this process overlapping [start, end), in order.
std::vector<Vma> MappingsIn(uintptr_t start, uintptr_t end) {
  std::vector<Vma> out;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    Vma v{};
    unsigned dev_major, dev_minor;
    int path_at = 0;
    if (std::sscanf(line,
                    "%" SCNxPTR "-%" SCNxPTR " %4s %" SCNx64 " %x:%x %" SCNu64
                    " %n",
                    &v.start, &v.end, v.perms, &v.offset, &dev_major,
                    &dev_minor, &v.inode, &path_at) < 7) {
      continue;
    }
    if (v.end <= start || v.start >= end) continue;
    v.path = line + path_at;
    while (!v.path.empty() && (v.path.back() == '\n' || v.path.back() == ' ')) {
      v.path.pop_back();
    }
    out.push_back(std::move(v));
  }
  std::fclose(f);
  return out;
}

// Moves the mapping of `len` bytes at `from` to exactly `to`, replacing
// what is there, in one step. By system call, not through libc's mremap:
// programs hook that for memory events (UCX's UCM patches it with a
// four-argument override), and a hook that drops the variadic fifth
// argument, the new address, moves the pages somewhere else (for root, to
// address 0) and still reports success; the program would keep its old
// private pages while the daemon writes into the memfd. A mapping that
// lands anywhere but `to` counts as failure. On failure the mapping that
// was at `from` is unmapped, wherever it went; `to` is untouched.
bool MoveMapping(void* from, void* to, size_t len) {
  void* got = reinterpret_cast<void*>(
      syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to));
  if (got == to) return true;
  munmap(got == MAP_FAILED ? from : got, len);
  return false;
}

// Pages moved onto a memfd, by start address.
struct Entry {
  uintptr_t end;
  int fd;
  uint64_t inode;
};

std::mutex& RegistryMu() {
  static std::mutex mu;
  return mu;
}
std::map<uintptr_t, Entry>& Registry() {
  static auto* m = new std::map<uintptr_t, Entry>;
  return *m;
}

// Still the memfd's pages at their place (the program may have unmapped
// them and reused the addresses since)?
bool StillShared(uintptr_t start, const Entry& e) {
  uintptr_t at = start;
  for (const Vma& v : MappingsIn(start, e.end)) {
    if (v.start != at || v.inode != e.inode || v.offset != v.start - start) {
      return false;
    }
    at = v.end;
  }
  return at >= e.end;
}

// Only private, writable, anonymous memory moves (heap or mmap'd; never
// the calling thread's stack or hugetlb pages).
bool Movable(uintptr_t start, uintptr_t end) {
  const uintptr_t sp = reinterpret_cast<uintptr_t>(&start);
  uintptr_t at = start;
  for (const Vma& v : MappingsIn(start, end)) {
    if (v.start > at) return false;  // a hole
    const bool anon = v.inode == 0 && (v.path.empty() || v.path == "[heap]");
    if (!anon || v.perms[0] != 'r' || v.perms[1] != 'w' || v.perms[3] != 'p') {
      return false;
    }
    if (sp >= v.start && sp < v.end) return false;
    at = v.end;
  }
  return at >= end;
}

// fork(): the child gets private copies of the moved pages (the parent's
// stay shared with the daemon), as kernels give a child copies of pinned
// pages. The child is single-threaded here.
void AtForkChild() {
  for (auto& [start, e] : Registry()) {
    const size_t len = e.end - start;
    void* tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tmp == MAP_FAILED) continue;
    CopyWholePages(tmp, reinterpret_cast<const void*>(start), len);
    MoveMapping(tmp, reinterpret_cast<void*>(start), len);
    close(e.fd);
  }
  Registry().clear();
}

}  // namespace

bool RemapEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("ROCEMU_MR_REMAP");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

std::optional<SharedRange> ShareRange(void* addr, size_t length) {
  if (!RemapEnabled() || length == 0) return std::nullopt;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (a + length < a) return std::nullopt;
  const uintptr_t start = a / page * page;
  const uintptr_t end = (a + length + page - 1) / page * page;
  std::lock_guard<std::mutex> lock(RegistryMu());
  static const bool atfork = pthread_atfork(nullptr, nullptr, AtForkChild) == 0;
  (void)atfork;
  auto& reg = Registry();
  // Moved before? Inside one moved range: reuse it; straddling one: not
  // movable (moving pages registered elsewhere would cut them off).
  for (auto it = reg.begin(); it != reg.end();) {
    if (it->second.end <= start || it->first >= end) {
      ++it;
      continue;
    }
    if (!StillShared(it->first, it->second)) {
      close(it->second.fd);
      it = reg.erase(it);
      continue;
    }
    if (it->first <= start && it->second.end >= end) {
      return SharedRange{it->second.fd, a - it->first};
    }
    return std::nullopt;
  }
  if (!Movable(start, end)) return std::nullopt;
  const size_t len = end - start;
  const int fd = memfd_create("rocemu-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return std::nullopt;
  if (ftruncate(fd, static_cast<off_t>(len)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return std::nullopt;
  }
  void* tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (tmp == MAP_FAILED) {
    close(fd);
    return std::nullopt;
  }
  CopyWholePages(tmp, reinterpret_cast<const void*>(start), len);
  // One step: the addresses never go unmapped, so nothing else in the
  // process can fault on them.
  if (!MoveMapping(tmp, reinterpret_cast<void*>(start), len)) {
    close(fd);
    return std::nullopt;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return std::nullopt;
  }
  reg[start] = Entry{end, fd, static_cast<uint64_t>(st.st_ino)};
  return SharedRange{fd, a - start};
}

}  // namespace rocemu::verbs::client
