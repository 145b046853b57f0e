// One direction of a full-duplex link: what it does to frames (delay,
// serialization, MTU, impairments) and what it counts.
#ifndef ROCEMU_TESTS_SIMNET_LINK_H_
#define ROCEMU_TESTS_SIMNET_LINK_H_

#include <cstdint>
#include <functional>
#include <span>

#include "nic/clock.h"

namespace rocemu::simnet {

// Preamble+SFD, FCS and the minimum inter-frame gap: a frame of L bytes (as
// the endpoints see it, without FCS) occupies L + 24 bytes of wire time.
inline constexpr uint32_t kPreambleBytes = 8;
inline constexpr uint32_t kFcsBytes = 4;
inline constexpr uint32_t kIfgBytes = 12;

struct LinkConfig {
  nic::TimeNs propagation_delay_ns = 0;
  uint64_t rate_bps = 100'000'000'000;  // 0: no serialization delay
  // Count preamble, FCS, IFG and the 60-byte minimum frame in wire time. The
  // receiver sees the frame when its FCS has arrived; the transmitter is free
  // again after the IFG.
  bool ethernet_overhead = true;
  // Longest frame (without FCS) the receiving MAC accepts; longer frames use
  // the wire and are then dropped (dropped_mtu).
  uint32_t max_frame_len = 9216;
  // Impairments, each an independent per-frame probability.
  double loss = 0.0;
  double reorder = 0.0;  // frame delayed by reorder_delay_ns extra
  nic::TimeNs reorder_delay_ns = 10'000;
  double duplicate = 0.0;  // a copy arrives duplicate_gap_ns after it
  nic::TimeNs duplicate_gap_ns = 0;
  double corrupt = 0.0;             // one random bit flipped at or after byte
  uint32_t corrupt_from_byte = 14;  // (default: spare the MAC header)
};

struct LinkCounters {
  uint64_t tx_frames = 0;  // frames put on the wire
  uint64_t tx_bytes = 0;
  uint64_t delivered = 0;  // frames handed to the receiver (dups included)
  uint64_t delivered_bytes = 0;
  uint64_t dropped_loss = 0;
  uint64_t dropped_mtu = 0;
  uint64_t dropped_fault = 0;  // by the scripted fault hook
  uint64_t reordered = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t tx_invalid = 0;  // endpoint returned len 0 or len > capacity
};

// Scripted faults for exact negative tests: the hook sees each frame as it
// goes on the wire (before the random impairments) and decides its fate.
struct FaultContext {
  uint64_t index = 0;  // 0-based count of frames sent on this direction
  nic::TimeNs now = 0;
  std::span<const uint8_t> frame;
};
struct FaultAction {
  enum Kind : uint8_t { kPass, kDrop, kCorrupt, kDelay, kDuplicate };
  Kind kind = kPass;
  int64_t bit = -1;          // kCorrupt: bit to flip (-1: random)
  nic::TimeNs delay_ns = 0;  // kDelay: extra delay
  static FaultAction Pass() { return {}; }
  static FaultAction Drop() { return {kDrop}; }
  static FaultAction Corrupt(int64_t bit = -1) { return {kCorrupt, bit}; }
  static FaultAction Delay(nic::TimeNs d) { return {kDelay, -1, d}; }
  static FaultAction Duplicate() { return {kDuplicate}; }
};
using FaultHook = std::function<FaultAction(const FaultContext&)>;

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_LINK_H_
