// Which of a port's RNIC shards (emulator/shard.h) a frame the net stack
// gave to the RNIC is for. Each shard's QPNs and CM communication IDs are
// those equal to its index modulo the shard count (nic::RnicConfig::shard),
// so BTH.DestQP names the shard of a transport frame or CNP, and a CM
// message's remote comm ID the shard of its connection. A REQ or SIDR_REQ
// names a service instead: the shard listening on it
// (nic::CmServiceRegistry), else shard 0, which answers REJ as any RNIC
// without a listener does. Frames every shard must see: PFC and PAUSE
// (each shard's QPs obey them), multicast SENDs (members may be anywhere).
// Anything unparsable goes to shard 0, whose RNIC counts the drop.
#ifndef ROCEMU_EMULATOR_PORT_SHARD_DISPATCH_H_
#define ROCEMU_EMULATOR_PORT_SHARD_DISPATCH_H_

#include <cstddef>
#include <cstdint>

#include "nic/cm/cm_service_registry.h"

namespace rocemu::emulator {

inline constexpr uint32_t kAllShards = UINT32_MAX;

// The offset of the BTH of a RoCEv2 frame (Ethernet, optional 802.1Q,
// IPv4 or IPv6, UDP to port 4791), or 0 when the frame is not one.
size_t RoceBthOffset(const uint8_t* frame, size_t len);

// The shard index, or kAllShards.
uint32_t ShardOf(const uint8_t* frame, size_t len, uint32_t shards,
                 const nic::CmServiceRegistry* services);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_SHARD_DISPATCH_H_
