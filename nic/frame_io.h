// The narrow interface between the RNIC model and whatever carries frames
// (DPDK mbufs in the daemon, slots in the simulated network, vectors in unit
// tests). Frames move in bursts so that no virtual call is made per packet.
#ifndef ROCEMU_NIC_FRAME_IO_H_
#define ROCEMU_NIC_FRAME_IO_H_

#include <cstdint>
#include <span>

#include "nic/clock.h"

namespace rocemu::nic {
class VerdictLog;
}  // namespace rocemu::nic

namespace rocemu::nic {

// A transmit buffer lent by the carrier: the RNIC writes a whole frame into
// data[0, capacity) and sets len. Unused buffers (len == 0) go back.
struct TxFrame {
  uint8_t* data = nullptr;
  uint32_t capacity = 0;
  uint32_t len = 0;
  uint8_t priority = 0;  // 802.1p priority the frame is queued on (PFC)
  // Set by the RNIC: the frame's id in its VerdictLog (nic/frame_verdict.h),
  // under which a capture finds why it was sent.
  uint64_t packet_id = 0;
};

// A received frame, borrowed for the duration of the call (zero copy).
// No member initializers, on purpose: carriers keep bursts of these on the
// stack every pass (up to 256), and zeroing them showed in profiles; every
// element is assigned {data, len} before it is read.
struct RxFrame {
  const uint8_t* data;
  uint32_t len;
  // The carrier verified the IPv4 header checksum already (the daemon's
  // net stack does for every frame it hands over, as a NIC's RX checksum
  // offload would): the RNIC does not sum the header again. {data, len}
  // leaves it false.
  bool ip_checksum_good;
  // The frame's id in the receiving RNIC's VerdictLog, given by a carrier
  // that captures it (it took the id from FrameEndpoint::verdict_log());
  // 0: the RNIC numbers it. Aggregate initialisation ({data, len}) sets 0.
  uint64_t packet_id;
  std::span<const uint8_t> bytes() const { return {data, len}; }
};

// What a carrier drives. Implemented by the RNIC device (nic/) and by the
// simulator's switches; the carrier calls it from one thread only.
class FrameEndpoint {
 public:
  virtual ~FrameEndpoint() = default;
  // Frames that arrived on `port`.
  virtual void Receive(uint16_t port, std::span<const RxFrame> frames,
                       TimeNs now) = 0;
  // Fill up to frames.size() buffers with frames to send on `port`; returns
  // how many were filled (the first n entries, each with len > 0).
  virtual size_t Transmit(uint16_t port, std::span<TxFrame> frames,
                          TimeNs now) = 0;
  // Earliest time at which Transmit may have something new without any
  // Receive in between (retransmission timer, pacer, pause expiry), or
  // kNever.
  virtual TimeNs NextEventTime() const = 0;
  // Bit n set: priority n is paused at `now` (PFC, or all eight for an
  // 802.3x PAUSE) and the carrier must hold the frames of that priority it
  // was already given. Asked once per transmit pass, not per frame.
  virtual uint8_t PausedPriorities(TimeNs /*now*/) { return 0; }
  // The endpoint's packet ids and verdicts (an RNIC's), for a carrier that
  // captures frames: asked once per burst. nullptr: none.
  virtual VerdictLog* verdict_log() { return nullptr; }
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_FRAME_IO_H_
