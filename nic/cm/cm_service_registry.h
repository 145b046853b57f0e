// The listeners of every CM agent that shares one port's QP1, when the
// daemon splits a port's applications across lcores (one Rnic, hence one
// CmAgent, per lcore; emulator/shard.h). A REQ or SIDR_REQ names a service
// ID, not a communication ID of ours, so whoever receives the port's MADs
// must learn which agent listens on it; and two agents must not listen on
// the same service, as one agent already refuses. Called on the control
// path only (listen, destroy, an incoming REQ): implementations may lock.
#ifndef ROCEMU_NIC_CM_CM_SERVICE_REGISTRY_H_
#define ROCEMU_NIC_CM_CM_SERVICE_REGISTRY_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace rocemu::nic {

class CmServiceRegistry {
 public:
  virtual ~CmServiceRegistry() = default;
  // AlreadyExists when another agent listens on `service_id` under `mask`
  // (same or overlapping: (a.id & b.mask) == b.id either way).
  virtual absl::Status Claim(uint64_t service_id, uint64_t mask,
                             uint32_t shard) = 0;
  virtual void Release(uint64_t service_id, uint64_t mask, uint32_t shard) = 0;
  // The agent listening on a service ID a peer asked for, if any.
  virtual std::optional<uint32_t> Lookup(uint64_t service_id) const = 0;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CM_CM_SERVICE_REGISTRY_H_
