// Whether the EAL gets hugepages (--in-memory) or ordinary memory
// (--no-huge), decided from what the host has free rather than from what
// it once reserved: --in-memory with -m takes that many pages at EAL init,
// and when they are not there the EAL fails (several daemons each asking
// eal.memory_mb of one pool is the usual way to run out).
//
// The decision is a pure function of parsed facts, so that it is tested
// over made-up /proc contents; reading the files is separate.
#ifndef ROCEMU_EMULATOR_PORT_HUGEPAGES_H_
#define ROCEMU_EMULATOR_PORT_HUGEPAGES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace rocemu::emulator {

// The default hugepage size's pool, from /proc/meminfo, and its mount.
struct HugepageFacts {
  uint64_t page_kib = 0;  // Hugepagesize; 0: a kernel without hugetlb
  uint64_t total = 0;     // HugePages_Total (vm.nr_hugepages)
  uint64_t free = 0;      // HugePages_Free
  // HugePages_Rsvd: promised to mappings made but not yet faulted in, and
  // still counted in free.
  uint64_t reserved = 0;
  // A hugetlbfs mount of page_kib pages. --in-memory does not use one (the
  // EAL maps hugetlb memfds), so it is reported, not required.
  bool mounted = false;

  // Pages a new mapping can still get.
  uint64_t available() const { return free > reserved ? free - reserved : 0; }
};

// Parses /proc/meminfo and /proc/mounts text; missing lines leave zeros.
HugepageFacts ParseHugepageFacts(absl::string_view meminfo,
                                 absl::string_view mounts);
// The same from this host's /proc (zeros where a file cannot be read).
HugepageFacts ReadHugepageFacts();

struct HugepageChoice {
  bool use = false;  // --in-memory; else --no-huge
  std::string why;   // one log line: which, and the facts behind it
};

// auto: hugepages when the pool has memory_mb free, else --no-huge.
// no: --no-huge. yes: hugepages, or an error saying what is missing.
absl::StatusOr<HugepageChoice> ChooseHugepages(config::Hugepages mode,
                                               uint32_t memory_mb,
                                               const HugepageFacts& facts);

// Holds a host-wide lock (flock on a file in /tmp) from before the facts
// are read until the EAL has taken its pages: daemons starting together
// then see each other's pages gone instead of all counting the same free
// ones. Without the file (no /tmp) it holds nothing.
class HugepageLock {
 public:
  HugepageLock();
  ~HugepageLock();
  HugepageLock(const HugepageLock&) = delete;
  HugepageLock& operator=(const HugepageLock&) = delete;

 private:
  int fd_ = -1;
};

// ChooseHugepages over this host's facts. Where the mode may use hugepages
// and the host has some, the facts are read under *lock, taken here for
// the caller to hold until rte_eal_init has returned.
absl::StatusOr<HugepageChoice> ChooseHostHugepages(
    const config::EalConfig& eal, std::optional<HugepageLock>* lock);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_HUGEPAGES_H_
