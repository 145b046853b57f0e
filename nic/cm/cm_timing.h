// The CM's clocks: IBTA encodes every CM time (response timeouts, packet
// life time, ACK timeouts, MRA service timeouts) as t in 4.096 us * 2^t.
#ifndef ROCEMU_NIC_CM_CM_TIMING_H_
#define ROCEMU_NIC_CM_CM_TIMING_H_

#include <algorithm>
#include <cstdint>

#include "nic/clock.h"

namespace rocemu::nic {

// 4.096 us * 2^t in nanoseconds (t is a 5-bit field).
constexpr TimeNs IbTimeNs(uint8_t t) { return TimeNs{4096} << (t & 0x1F); }

// The QP's local ACK timeout for a path: the ACK comes back after twice the
// packet life time plus the responder's CA ACK delay. In exponent form the
// sum is approximated by the larger term, rounded up once when the other is
// not much smaller (the REQ's Local ACK Timeout field: 4.096 us * 2^t
// covers 2 * PacketLifeTime + LocalCAAckDelay).
constexpr uint8_t CmAckTimeout(uint8_t ca_ack_delay, uint8_t packet_life_time) {
  const int round_trip = packet_life_time + 1;  // 2 * life time
  int t;
  if (round_trip >= ca_ack_delay) {
    t = round_trip + (ca_ack_delay >= round_trip - 1 ? 1 : 0);
  } else {
    t = ca_ack_delay + (round_trip >= ca_ack_delay - 1 ? 1 : 0);
  }
  return static_cast<uint8_t>(std::min(t, 31));
}
// rxe: CA ACK delay 15, rdma_cm's RoCE packet life time 18 -> 19 (2.1 s),
// what the REQ of a Linux rping carries.
static_assert(CmAckTimeout(15, 18) == 19);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CM_CM_TIMING_H_
