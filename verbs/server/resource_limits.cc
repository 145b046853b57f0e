#include "verbs/server/resource_limits.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "verbs/server/memlock.h"

namespace rocemu::verbs {

ResourceUse& ResourceUse::operator+=(const ResourceUse& o) {
  pds += o.pds;
  cqs += o.cqs;
  qps += o.qps;
  mrs += o.mrs;
  queue_bytes += o.queue_bytes;
  return *this;
}

ResourceUse& ResourceUse::operator-=(const ResourceUse& o) {
  // Never below zero: a release is only ever of what was taken.
  auto sub = [](uint64_t& a, uint64_t b) { a = a > b ? a - b : 0; };
  sub(pds, o.pds);
  sub(cqs, o.cqs);
  sub(qps, o.qps);
  sub(mrs, o.mrs);
  sub(queue_bytes, o.queue_bytes);
  return *this;
}

ResourceLimits::ResourceLimits(const ResourceUse& per_uid, bool memlock,
                               MemlockLimit limit)
    : caps_(per_uid),
      memlock_(memlock),
      limit_(limit != nullptr ? std::move(limit) : MemlockLimitBytes),
      page_size_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) {}

absl::Status ResourceLimits::Take(uid_t uid, const ResourceUse& more) {
  std::lock_guard<std::mutex> lock(mu_);
  ResourceUse& u = used_[uid];
  struct Item {
    const char* what;
    uint64_t used, more, cap;
  };
  const Item items[] = {
      {"PDs", u.pds, more.pds, caps_.pds},
      {"CQs", u.cqs, more.cqs, caps_.cqs},
      {"QPs", u.qps, more.qps, caps_.qps},
      {"MRs", u.mrs, more.mrs, caps_.mrs},
      {"queue bytes", u.queue_bytes, more.queue_bytes, caps_.queue_bytes},
  };
  for (const Item& i : items) {
    if (i.cap != 0 && i.more != 0 && i.used + i.more > i.cap) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("uid %u holds %u %s, %u more pass its limit of %u "
                          "(verbs.limits.per_uid)",
                          uid, i.used, i.what, i.more, i.cap));
    }
  }
  u += more;
  return absl::OkStatus();
}

void ResourceLimits::Give(uid_t uid, const ResourceUse& less) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(uid);
  if (it == used_.end()) return;
  it->second -= less;
  const ResourceUse& u = it->second;
  if (u.pds == 0 && u.cqs == 0 && u.qps == 0 && u.mrs == 0 &&
      u.queue_bytes == 0) {
    used_.erase(it);
  }
}

absl::Status ResourceLimits::Pin(pid_t pid, uint64_t pages) {
  if (!memlock_ || pages == 0) return absl::OkStatus();
  // Read outside the lock: it is a few file reads.
  const std::optional<uint64_t> limit = limit_(pid);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& pinned = pinned_[pid];
  if (limit.has_value() && pinned + pages > *limit / page_size_) {
    const uint64_t had = pinned;
    if (pinned == 0) pinned_.erase(pid);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "RLIMIT_MEMLOCK: process %d has %u pages pinned, %u more pass its "
        "limit of %u bytes",
        pid, had, pages, *limit));
  }
  pinned += pages;
  return absl::OkStatus();
}

void ResourceLimits::Unpin(pid_t pid, uint64_t pages) {
  if (!memlock_ || pages == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pinned_.find(pid);
  if (it == pinned_.end()) return;
  it->second = it->second > pages ? it->second - pages : 0;
  if (it->second == 0) pinned_.erase(it);
}

ResourceUse ResourceLimits::UseOf(uid_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(uid);
  return it != used_.end() ? it->second : ResourceUse{};
}

uint64_t ResourceLimits::PinnedPages(pid_t pid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pinned_.find(pid);
  return it != pinned_.end() ? it->second : 0;
}

}  // namespace rocemu::verbs
