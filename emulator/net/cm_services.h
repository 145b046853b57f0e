// The CM listeners of a port whose applications are split across RNIC
// shards (shard.h): which shard listens on which service ID, so that a REQ
// reaches the listener's shard (shard_dispatch.h) and two shards never
// listen on the same service. Shards claim and release on their control
// path and the port's lcore looks up on an incoming REQ: a mutex, never
// taken per data packet.
#ifndef ROCEMU_EMULATOR_NET_CM_SERVICES_H_
#define ROCEMU_EMULATOR_NET_CM_SERVICES_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "nic/cm/cm_service_registry.h"

namespace rocemu::emulator {

class PortCmServices final : public nic::CmServiceRegistry {
 public:
  absl::Status Claim(uint64_t service_id, uint64_t mask,
                     uint32_t shard) override;
  void Release(uint64_t service_id, uint64_t mask, uint32_t shard) override;
  std::optional<uint32_t> Lookup(uint64_t service_id) const override;

 private:
  struct Claimed {
    uint64_t service_id;  // already masked
    uint64_t mask;
    uint32_t shard;
  };
  mutable std::mutex mu_;
  std::vector<Claimed> claims_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_NET_CM_SERVICES_H_
