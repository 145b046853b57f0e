// Handles of the RNIC's objects. A handle is (slot index << 8) | generation
// byte, the same layout as an L_Key/R_Key, so that a handle kept after its
// object was destroyed and the slot reused is recognised as stale.
#ifndef ROCEMU_NIC_HANDLES_H_
#define ROCEMU_NIC_HANDLES_H_

#include <cstdint>

namespace rocemu::nic {

using PdHandle = uint32_t;
using CqHandle = uint32_t;
using SrqHandle = uint32_t;
using AhHandle = uint32_t;
// Identifies an attached application (one per daemon client connection) so
// that one client can never name another client's objects.
using ClientId = uint32_t;

inline constexpr uint32_t kInvalidHandle = 0;
inline constexpr ClientId kKernelClient = 0;  // the daemon itself, tests

constexpr uint32_t HandleIndex(uint32_t h) { return h >> 8; }
constexpr uint8_t HandleGeneration(uint32_t h) {
  return static_cast<uint8_t>(h & 0xFF);
}
constexpr uint32_t MakeHandle(uint32_t index, uint8_t generation) {
  return (index << 8) | generation;
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_HANDLES_H_
