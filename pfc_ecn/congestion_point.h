// A congestion point: one egress queue of a switch port (or of a rocemu port
// playing a congested switch port) that drains at a fixed rate, tail-drops
// when full, and ECN-marks ECT packets by RED on dequeue at the
// instantaneous depth (the departing packet already removed, as HPCC's MMU
// does). Not-ECT packets are never marked; packets already CE stay CE.
//
// Generic over an opaque packet handle (an index, a pointer, an mbuf): the
// queue never looks inside a packet, it only records the handle, the frame
// length and the ECN codepoint, and tells the caller to set CE. Storage is a
// ring sized at construction, so steady state allocates nothing.
//
// PFC hook: with AttachPfc() every enqueue/dequeue also updates the
// occupancy of one priority of a PfcTransmitter, whose Poll() then says when
// to pause the upstream sender (ingress accounting equals egress accounting
// when one upstream port feeds the queue).
#ifndef ROCEMU_PFC_ECN_CONGESTION_POINT_H_
#define ROCEMU_PFC_ECN_CONGESTION_POINT_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "pfc_ecn/ecn.h"
#include "pfc_ecn/pfc_transmitter.h"
#include "pfc_ecn/red_marker.h"
#include "pfc_ecn/time_units.h"

namespace rocemu::pfc_ecn {

struct CongestionPointConfig {
  uint64_t drain_rate_bytes_per_sec = 40ull * 1000 * 1000 * 1000 / 8;
  uint64_t capacity_bytes = 12ull * 1000 * 1000;
  uint32_t capacity_packets = 16384;
  bool ecn_marking = true;
  RedProfile red;
  uint64_t seed = 1;

  absl::Status Validate() const {
    if (drain_rate_bytes_per_sec == 0) {
      return absl::InvalidArgumentError("congestion point: drain rate is 0");
    }
    if (capacity_packets == 0 || capacity_bytes == 0) {
      return absl::InvalidArgumentError("congestion point: zero capacity");
    }
    return red.Validate();
  }
};

enum class EnqueueResult : uint8_t { kQueued, kTailDrop };

template <typename Handle>
struct Departure {
  Handle handle;
  uint32_t bytes;
  Ecn ecn;             // codepoint to put on the wire (kCe if marked here)
  bool marked;         // this queue set CE
  TimeNs finish_time;  // serialization ends; the link is busy until then
};

struct CongestionPointCounters {
  uint64_t enqueued_packets = 0;
  uint64_t dequeued_packets = 0;
  uint64_t dequeued_bytes = 0;
  uint64_t tail_drop_packets = 0;
  uint64_t tail_drop_bytes = 0;
  uint64_t ecn_marked_packets = 0;
  uint64_t max_depth_bytes = 0;
};

template <typename Handle>
class CongestionPoint {
  // Copied in and out of the ring by value on the hot path.
  static_assert(std::is_trivially_copyable_v<Handle> &&
                    std::is_default_constructible_v<Handle>,
                "a packet handle is a small value: an index or a pointer");

 public:
  // `config` must have passed Validate().
  explicit CongestionPoint(const CongestionPointConfig& config)
      : config_(config),
        marker_(config.red, config.seed),
        ring_(config.capacity_packets) {}

  void AttachPfc(PfcTransmitter* pfc, int priority) {
    pfc_ = pfc;
    pfc_priority_ = priority;
  }

  EnqueueResult Enqueue(Handle handle, uint32_t bytes, Ecn ecn) {
    if (count_ == ring_.size() ||
        depth_bytes_ + bytes > config_.capacity_bytes) {
      ++counters_.tail_drop_packets;
      counters_.tail_drop_bytes += bytes;
      return EnqueueResult::kTailDrop;
    }
    size_t tail = head_ + count_;
    if (tail >= ring_.size()) tail -= ring_.size();
    ring_[tail] = Slot{handle, bytes, ecn};
    ++count_;
    depth_bytes_ += bytes;
    counters_.max_depth_bytes =
        std::max(counters_.max_depth_bytes, depth_bytes_);
    ++counters_.enqueued_packets;
    if (pfc_ != nullptr) pfc_->OnEnqueue(pfc_priority_, bytes);
    return EnqueueResult::kQueued;
  }

  // The head packet if the link is free at `now`, else nothing.
  std::optional<Departure<Handle>> Dequeue(TimeNs now) {
    if (count_ == 0 || now < link_free_at_) return std::nullopt;
    const Slot slot = ring_[head_];
    if (++head_ == ring_.size()) head_ = 0;
    --count_;
    depth_bytes_ -= slot.bytes;
    if (pfc_ != nullptr) pfc_->OnDequeue(pfc_priority_, slot.bytes);

    Departure<Handle> d{slot.handle, slot.bytes, slot.ecn, false, 0};
    if (config_.ecn_marking && IsEct(slot.ecn) &&
        marker_.ShouldMark(depth_bytes_)) {
      d.ecn = Ecn::kCe;
      d.marked = true;
      ++counters_.ecn_marked_packets;
    }
    link_free_at_ = now + SerializationNs(slot.bytes);
    d.finish_time = link_free_at_;
    ++counters_.dequeued_packets;
    counters_.dequeued_bytes += slot.bytes;
    return d;
  }

  // When Dequeue() can next return a packet; kNever if empty.
  TimeNs NextDequeueTime() const {
    return count_ == 0 ? kNever : link_free_at_;
  }

  uint64_t depth_bytes() const { return depth_bytes_; }
  size_t depth_packets() const { return count_; }
  const CongestionPointCounters& counters() const { return counters_; }
  const RedMarker& marker() const { return marker_; }

 private:
  struct Slot {
    Handle handle;
    uint32_t bytes;
    Ecn ecn;
  };

  // Carries the sub-nanosecond remainder so the long-run drain rate is exact.
  TimeNs SerializationNs(uint32_t bytes) {
    carry_ += uint64_t{bytes} * kNsPerSec;
    const TimeNs ns = carry_ / config_.drain_rate_bytes_per_sec;
    carry_ %= config_.drain_rate_bytes_per_sec;
    return ns;
  }

  CongestionPointConfig config_;
  RedMarker marker_;
  std::vector<Slot> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
  uint64_t depth_bytes_ = 0;
  TimeNs link_free_at_ = 0;
  uint64_t carry_ = 0;
  PfcTransmitter* pfc_ = nullptr;
  int pfc_priority_ = 0;
  CongestionPointCounters counters_;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_CONGESTION_POINT_H_
