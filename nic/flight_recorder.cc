#include "nic/flight_recorder.h"

namespace rocemu::nic {

FlightRecorder::FlightRecorder(uint32_t events) {
  uint32_t n = 4;
  while (n < events) n <<= 1;
  events_.resize(n);
  snaps_.resize(static_cast<size_t>(n) * kSnapBytes);
  mask_ = n - 1;
}

RecorderEvent* FlightRecorder::FindFrame(uint64_t packet_id) {
  // A verdict follows its frame closely: a handful of events at most
  // (a NAK's own frame, a completion) come in between.
  const uint64_t n = std::min<uint64_t>(head_, 8);
  for (uint64_t k = 1; k <= n; ++k) {
    RecorderEvent& e = events_[(head_ - k) & mask_];
    if ((e.kind == RecorderEventKind::kRx ||
         e.kind == RecorderEventKind::kTx) &&
        e.id == packet_id) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace rocemu::nic
