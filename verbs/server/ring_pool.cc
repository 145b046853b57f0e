#include "verbs/server/ring_pool.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

namespace rocemu::verbs {

bool RingPool::Geometry::operator==(const Geometry& o) const {
  return slot_size == o.slot_size && capacity == o.capacity &&
         std::strcmp(name, o.name) == 0;
}

RingPool::Geometry RingPool::Of(const char* name, uint32_t slot_size,
                                uint32_t min_entries) {
  return Geometry{name, (slot_size + 7) & ~7u, std::bit_ceil(min_entries)};
}

absl::StatusOr<ShmRing> RingPool::Take(const char* name, uint32_t slot_size,
                                       uint32_t min_entries) {
  // What ShmRing refuses (or could not round) is left to it, unpooled.
  if (slot_size == 0 || min_entries == 0 || min_entries > (1u << 31) ||
      slot_size > UINT32_MAX - 7) {
    return ShmRing::Create(name, slot_size, min_entries);
  }
  failed_ = false;
  const Geometry g = Of(name, slot_size, min_entries);
  auto it = std::find_if(spares_.begin(), spares_.end(),
                         [&](const Spare& s) { return s.g == g; });
  if (it != spares_.end()) {
    ShmRing ring = std::move(it->ring);
    spares_.erase(it);
    ++hits_;
    Remember(g);
    return ring;
  }
  absl::StatusOr<ShmRing> ring = ShmRing::Create(name, slot_size, min_entries);
  if (ring.ok()) Remember(g);
  return ring;
}

bool RingPool::Refill() {
  // After a failure (out of fds or memory), not again until the next take:
  // the daemon calls this every pass while requests come.
  if (failed_) return false;
  for (const Geometry& g : recent_) {
    if (g.capacity == 0 || Count(g) >= kSparesPerGeometry) continue;
    // Full: a spare of a geometry no longer remembered makes room (the
    // oldest such). Every remembered one has its spares otherwise.
    if (spares_.size() >= kMaxSpares) {
      auto stale =
          std::find_if(spares_.begin(), spares_.end(), [&](const Spare& s) {
            return std::find(recent_.begin(), recent_.end(), s.g) ==
                   recent_.end();
          });
      if (stale == spares_.end()) return false;
      spares_.erase(stale);
    }
    absl::StatusOr<ShmRing> ring =
        ShmRing::Create(g.name, g.slot_size, g.capacity);
    if (!ring.ok()) {
      failed_ = true;
      return false;
    }
    spares_.push_back(Spare{g, *std::move(ring)});
    return true;
  }
  return false;
}

void RingPool::Remember(const Geometry& g) {
  auto it = std::find(recent_.begin(), recent_.end(), g);
  if (it == recent_.end()) it = recent_.end() - 1;  // the oldest goes
  std::move_backward(recent_.begin(), it, it + 1);
  recent_[0] = g;
}

size_t RingPool::Count(const Geometry& g) const {
  return static_cast<size_t>(
      std::count_if(spares_.begin(), spares_.end(),
                    [&](const Spare& s) { return s.g == g; }));
}

}  // namespace rocemu::verbs
