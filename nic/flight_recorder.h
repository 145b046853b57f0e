// A QP's flight recorder: the last N things that happened to it (frames
// received and sent, with their first bytes; timeouts; state changes and
// their cause; error completions), always on. The ring is allocated when
// the QP is created and written in place: recording a frame is one 40-byte
// record and a copy of the frame's first kSnapBytes (its headers), no
// allocation, no formatting. Words and pcapng come only when someone asks
// (the daemon, when the QP enters ERR or SQE; rocemu-ctl qp N --why).
#ifndef ROCEMU_NIC_FLIGHT_RECORDER_H_
#define ROCEMU_NIC_FLIGHT_RECORDER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "nic/clock.h"
#include "nic/drop_reason.h"

namespace rocemu::nic {

enum class RecorderEventKind : uint8_t {
  kNone = 0,
  kRx,          // a frame received for the QP
  kTx,          // a frame the QP sent
  kTimeout,     // the local ACK timer fired
  kState,       // the QP changed state
  kCompletion,  // a work request completed in error
};

struct RecorderEvent {
  TimeNs time = 0;
  // kRx/kTx: the packet id; kCompletion: the wr_id.
  uint64_t id = 0;
  // The packet id of what caused it (kTx: the NAK or timed-out frame of a
  // retransmission, the request a NAK answers; kState/kCompletion: the
  // frame behind the error), 0 if none.
  uint64_t cause = 0;
  // kRx/kTx: the PSN; kTimeout: the PSN awaited; kCompletion: the
  // WcStatus; kState: the new QpState.
  uint32_t psn = 0;
  uint16_t len = 0;  // kRx/kTx: the frame's length (65535 and above: 65535)
  RecorderEventKind kind = RecorderEventKind::kNone;
  DropReason reason = DropReason::kNone;
  // kRx/kTx: the BTH opcode; kState: the old QpState; kTimeout: retries
  // left; kCompletion: 1 for a receive WQE.
  uint8_t opcode = 0;
  uint8_t snap = 0;    // bytes of the frame kept (kRx/kTx)
  uint8_t resent = 0;  // kTx: a retransmission
  uint8_t pad = 0;
};

class FlightRecorder {
 public:
  // Enough for an Ethernet + IPv6 + UDP + BTH + RETH/AETH header, and the
  // whole of an ACK or CNP.
  static constexpr uint32_t kSnapBytes = 96;

  // `events` rounds up to a power of two (at least 4).
  explicit FlightRecorder(uint32_t events);

  // Hot path: one record and a bounded copy.
  void Frame(RecorderEventKind kind, TimeNs now, uint64_t packet_id,
             std::span<const uint8_t> bytes, uint8_t opcode, uint32_t psn) {
    const uint64_t i = head_++ & mask_;
    RecorderEvent& e = events_[i];
    const uint32_t snap =
        static_cast<uint32_t>(std::min<size_t>(bytes.size(), kSnapBytes));
    e.time = now;
    e.id = packet_id;
    e.cause = 0;
    e.psn = psn;
    e.len = static_cast<uint16_t>(std::min<size_t>(bytes.size(), 0xFFFF));
    e.kind = kind;
    e.reason = DropReason::kNone;
    e.opcode = opcode;
    e.snap = static_cast<uint8_t>(snap);
    e.resent = 0;
    // A constant-size copy compiles to a few vector moves; data frames are
    // longer than the snapshot, so most frames take it.
    if (snap == kSnapBytes) {
      std::memcpy(&snaps_[i * kSnapBytes], bytes.data(), kSnapBytes);
    } else {
      std::memcpy(&snaps_[i * kSnapBytes], bytes.data(), snap);
    }
  }
  // The newest event, to add a reason or a cause to the frame just
  // recorded (rare path).
  RecorderEvent* Newest() {
    return head_ == 0 ? nullptr : &events_[(head_ - 1) & mask_];
  }
  // The frame event of `packet_id` among the last few, or nullptr.
  RecorderEvent* FindFrame(uint64_t packet_id);
  void Add(const RecorderEvent& e) { events_[head_++ & mask_] = e; }

  // Events oldest first, with their kept bytes: f(const RecorderEvent&,
  // std::span<const uint8_t> snapshot).
  template <typename F>
  void ForEach(F&& f) const {
    const uint64_t n = std::min<uint64_t>(head_, events_.size());
    for (uint64_t k = head_ - n; k < head_; ++k) {
      const uint64_t i = k & mask_;
      f(events_[i],
        std::span<const uint8_t>(&snaps_[i * kSnapBytes], events_[i].snap));
    }
  }
  uint64_t recorded() const { return head_; }
  uint32_t capacity() const { return static_cast<uint32_t>(events_.size()); }

 private:
  std::vector<RecorderEvent> events_;
  std::vector<uint8_t> snaps_;
  uint64_t mask_;
  uint64_t head_ = 0;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_FLIGHT_RECORDER_H_
