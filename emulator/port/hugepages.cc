#include "emulator/port/hugepages.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rocemu::emulator {
namespace {

// Shared by every rocemu process on the host (and mount namespace).
constexpr char kLockPath[] = "/tmp/rocemu-hugepages.lock";

uint64_t Number(absl::string_view s) {
  uint64_t v = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(s), &v) ? v : 0;
}

// hugetlbfs's pagesize= option: a number with a K, M or G suffix.
uint64_t SizeKib(absl::string_view s) {
  if (s.empty()) return 0;
  uint64_t shift = 0;
  switch (s.back()) {
    case 'K':
    case 'k':
      shift = 0;
      break;
    case 'M':
    case 'm':
      shift = 10;
      break;
    case 'G':
    case 'g':
      shift = 20;
      break;
    default:
      return Number(s) >> 10;  // bytes
  }
  return Number(s.substr(0, s.size() - 1)) << shift;
}

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Mib(uint64_t kib) {
  return kib % 1024 == 0 ? absl::StrCat(kib / 1024, " MiB")
                         : absl::StrCat(kib, " KiB");
}

}  // namespace

HugepageFacts ParseHugepageFacts(absl::string_view meminfo,
                                 absl::string_view mounts) {
  HugepageFacts f;
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    absl::string_view value = kv.second;
    if (kv.first == "Hugepagesize") {
      value = absl::StripAsciiWhitespace(value);
      absl::ConsumeSuffix(&value, "kB");
      f.page_kib = Number(value);
    } else if (kv.first == "HugePages_Total") {
      f.total = Number(value);
    } else if (kv.first == "HugePages_Free") {
      f.free = Number(value);
    } else if (kv.first == "HugePages_Rsvd") {
      f.reserved = Number(value);
    }
  }
  for (absl::string_view line : absl::StrSplit(mounts, '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 4 || fields[2] != "hugetlbfs") continue;
    // Without pagesize= the mount serves the default size.
    uint64_t kib = f.page_kib;
    for (absl::string_view opt : absl::StrSplit(fields[3], ',')) {
      if (absl::ConsumePrefix(&opt, "pagesize=")) kib = SizeKib(opt);
    }
    if (kib != 0 && kib == f.page_kib) f.mounted = true;
  }
  return f;
}

HugepageFacts ReadHugepageFacts() {
  return ParseHugepageFacts(ReadAll("/proc/meminfo"), ReadAll("/proc/mounts"));
}

absl::StatusOr<HugepageChoice> ChooseHugepages(config::Hugepages mode,
                                               uint32_t memory_mb,
                                               const HugepageFacts& facts) {
  if (mode == config::Hugepages::kNo) {
    return HugepageChoice{false, "hugepages: eal.hugepages is no; --no-huge"};
  }
  const uint64_t asked_kib = uint64_t{memory_mb} * 1024;
  std::string short_of;
  if (facts.page_kib == 0) {
    short_of = "the kernel has no hugetlb pages (no Hugepagesize)";
  } else if (facts.total == 0) {
    short_of = "none reserved (vm.nr_hugepages is 0)";
  } else if (facts.available() * facts.page_kib < asked_kib) {
    short_of = absl::StrCat(facts.available(), " free x ", Mib(facts.page_kib),
                            " < ", memory_mb, " MiB asked (eal.memory_mb)");
  }
  const std::string mount =
      facts.mounted ? "" : "; no hugetlbfs mounted, none needed for it";
  if (short_of.empty()) {
    return HugepageChoice{
        true, absl::StrCat("hugepages: ", facts.available(), " free x ",
                           Mib(facts.page_kib), " >= ", memory_mb,
                           " MiB asked; --in-memory", mount)};
  }
  if (mode == config::Hugepages::kYes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "eal.hugepages is yes but ", short_of,
        ": reserve more (sysctl vm.nr_hugepages, or scripts/setup.sh as "
        "root), lower eal.memory_mb, or set eal.hugepages to auto"));
  }
  return HugepageChoice{false,
                        absl::StrCat("hugepages: ", short_of, "; --no-huge")};
}

HugepageLock::HugepageLock() {
  fd_ = open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  // Another user's file (umask took its write bits): flock needs any fd.
  if (fd_ < 0) fd_ = open(kLockPath, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return;
  if (flock(fd_, LOCK_EX) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

HugepageLock::~HugepageLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

absl::StatusOr<HugepageChoice> ChooseHostHugepages(
    const config::EalConfig& eal, std::optional<HugepageLock>* lock) {
  HugepageFacts facts = ReadHugepageFacts();
  if (eal.hugepages != config::Hugepages::kNo && facts.total > 0) {
    lock->emplace();
    facts = ReadHugepageFacts();
  }
  return ChooseHugepages(eal.hugepages, eal.memory_mb, facts);
}

}  // namespace rocemu::emulator
