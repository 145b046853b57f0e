#include "verbs/server/memlock.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace rocemu::verbs {
namespace {

constexpr int kCapIpcLock = 14;  // linux/capability.h

// RLIMIT_MEMLOCK's soft limit (the one the kernel checks) from
// /proc/<pid>/limits: "Max locked memory  <soft>  <hard>  bytes".
std::optional<rlim_t> LimitFromProc(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/limits"));
  std::string line;
  while (std::getline(f, line)) {
    constexpr absl::string_view kName = "Max locked memory";
    if (!absl::StartsWith(line, kName)) continue;
    std::vector<absl::string_view> v =
        absl::StrSplit(absl::string_view(line).substr(kName.size()), ' ',
                       absl::SkipWhitespace());
    if (v.empty()) return std::nullopt;
    if (v[0] == "unlimited") return RLIM_INFINITY;
    uint64_t n = 0;
    if (!absl::SimpleAtoi(v[0], &n)) return std::nullopt;
    return static_cast<rlim_t>(n);
  }
  return std::nullopt;
}

bool HasIpcLock(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (!absl::StartsWith(line, "CapEff:")) continue;
    uint64_t caps = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line.substr(7)),
                             &caps)) {
      return false;
    }
    if ((caps & (uint64_t{1} << kCapIpcLock)) == 0) return false;
    // The capability counts in the namespace that owns the device (the
    // daemon's); a root of `unshare -r` has every capability of its own.
    struct stat theirs, ours;
    if (stat(absl::StrCat("/proc/", pid, "/ns/user").c_str(), &theirs) != 0 ||
        stat("/proc/self/ns/user", &ours) != 0) {
      return true;  // not ours to see (another uid): its CapEff stands
    }
    return theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev;
  }
  return false;
}

}  // namespace

std::optional<uint64_t> MemlockLimitBytes(pid_t pid) {
  // prlimit(2) needs the client's uid or CAP_SYS_RESOURCE (which a
  // container's root may lack); /proc/<pid>/limits is world-readable.
  rlimit r{};
  std::optional<rlim_t> soft;
  if (prlimit(pid, RLIMIT_MEMLOCK, nullptr, &r) == 0) {
    soft = r.rlim_cur;
  } else {
    soft = LimitFromProc(pid);
  }
  if (!soft.has_value() || *soft == RLIM_INFINITY || HasIpcLock(pid)) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(*soft);
}

uint64_t PagesSpanned(uint64_t start, uint64_t length, uint64_t page_size) {
  if (length == 0) return 0;
  const uint64_t first = start / page_size;
  const uint64_t last = (start + length - 1) / page_size;
  return last - first + 1;
}

}  // namespace rocemu::verbs
