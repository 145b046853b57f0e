// Rings made before a client asks for them.
//
// A create_qp makes two rings, each a memfd, its size and seals, a mapping
// and its header page: ~5 us a ring on the 2-vCPU VMs here, a third of the
// request's round trip, and rdma_cm's accepting thread (cmtime's server:
// create_qp then accept, one connection after another) waits for it. The
// pool hands out a ring made earlier, in a moment when the daemon had no
// request to serve, and remembers the geometry so that the next one is
// ready too. A spare is new: it was never mapped by a client, and goes to
// one client only.
#ifndef ROCEMU_VERBS_SERVER_RING_POOL_H_
#define ROCEMU_VERBS_SERVER_RING_POOL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/status/statusor.h"
#include "verbs/wire/shm_ring.h"

namespace rocemu::verbs {

class RingPool {
 public:
  // Spares kept of each geometry taken lately, the geometries remembered,
  // and the spares kept in all (room is made from forgotten geometries).
  static constexpr size_t kSparesPerGeometry = 2;
  static constexpr size_t kGeometries = 4;
  static constexpr size_t kMaxSpares = 8;

  // A ring as ShmRing::Create(name, slot_size, min_entries) makes it: a
  // spare of that geometry if one waits, else one made now. `name` must
  // outlive the pool (a literal).
  absl::StatusOr<ShmRing> Take(const char* name, uint32_t slot_size,
                               uint32_t min_entries);

  // Makes one spare for the most recent geometry that has fewer than
  // kSparesPerGeometry. False if none was needed or making it failed. One
  // ring a call: the caller runs it where nothing else waits.
  bool Refill();

  size_t spares() const { return spares_.size(); }
  // Rings handed out that were made ahead (for the counters).
  uint64_t hits() const { return hits_; }

 private:
  struct Geometry {
    const char* name = nullptr;
    uint32_t slot_size = 0;  // rounded as ShmRing rounds it
    uint32_t capacity = 0;
    bool operator==(const Geometry& o) const;
  };
  struct Spare {
    Geometry g;
    ShmRing ring;
  };
  static Geometry Of(const char* name, uint32_t slot_size,
                     uint32_t min_entries);
  void Remember(const Geometry& g);
  size_t Count(const Geometry& g) const;

  std::deque<Spare> spares_;
  // Most recent first; capacity 0 marks an empty entry.
  std::array<Geometry, kGeometries> recent_{};
  uint64_t hits_ = 0;
  bool failed_ = false;  // the last Refill could not make a ring
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_RING_POOL_H_
