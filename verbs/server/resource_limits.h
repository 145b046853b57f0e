// The limits a daemon shared by many users enforces on what their verbs
// clients hold, as a kernel driver does for its processes: caps per user
// (uid) on PDs, CQs, QPs, MRs and the memory of their queues, and
// registered memory counted per process against RLIMIT_MEMLOCK
// (memlock.h). A request beyond one fails with ENOMEM (ResourceExhausted)
// and changes nothing; other users never notice.
//
// One object serves every session server of a daemon (its ports and
// shards, each on its own lcore), so a user cannot step around a cap by
// opening more devices: it takes a lock, and is called on the control
// path only (object creation and release), never per work request.
#ifndef ROCEMU_VERBS_SERVER_RESOURCE_LIMITS_H_
#define ROCEMU_VERBS_SERVER_RESOURCE_LIMITS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace rocemu::verbs {

// What a user holds, or may hold (0 in a cap: no cap). Queue bytes are
// the shared-memory rings the daemon makes for the user's send, receive,
// shared receive and completion queues.
struct ResourceUse {
  uint64_t pds = 0;
  uint64_t cqs = 0;
  uint64_t qps = 0;
  uint64_t mrs = 0;
  uint64_t queue_bytes = 0;

  ResourceUse& operator+=(const ResourceUse& o);
  ResourceUse& operator-=(const ResourceUse& o);
};

class ResourceLimits {
 public:
  // The bytes a process may pin (nullopt: no limit); MemlockLimitBytes
  // unless a test gives its own.
  using MemlockLimit = std::function<std::optional<uint64_t>(pid_t)>;

  // `per_uid`: the caps; `memlock`: count registered memory against
  // RLIMIT_MEMLOCK.
  ResourceLimits(const ResourceUse& per_uid, bool memlock,
                 MemlockLimit limit = nullptr);

  // Charges `more` to `uid`, all or nothing: ResourceExhausted naming the
  // first cap it would pass.
  absl::Status Take(uid_t uid, const ResourceUse& more);
  void Give(uid_t uid, const ResourceUse& less);
  // Pins `pages` more for process `pid`: ResourceExhausted when its
  // RLIMIT_MEMLOCK (read now, as the kernel reads it at each
  // registration) would be passed. Nothing is counted with memlock off.
  absl::Status Pin(pid_t pid, uint64_t pages);
  void Unpin(pid_t pid, uint64_t pages);

  bool memlock() const { return memlock_; }
  const ResourceUse& caps() const { return caps_; }
  ResourceUse UseOf(uid_t uid) const;
  uint64_t PinnedPages(pid_t pid) const;

 private:
  const ResourceUse caps_;
  const bool memlock_;
  const MemlockLimit limit_;
  const uint64_t page_size_;
  mutable std::mutex mu_;
  absl::flat_hash_map<uid_t, ResourceUse> used_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<pid_t, uint64_t> pinned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_RESOURCE_LIMITS_H_
