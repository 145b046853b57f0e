#include "emulator/capture/frame_notes.h"

#include "absl/strings/str_cat.h"

namespace rocemu::capture {

namespace {

bool Given(const DaemonVerdict* v) {
  return v != nullptr && v->reason != nic::DropReason::kNone;
}

void Append(const DaemonVerdict& v, std::string* out) {
  uint64_t args[6] = {v.args[0], v.args[1], v.args[2]};
  absl::StrAppend(out, out->empty() ? "" : "; ",
                  nic::VerdictActionName(v.action), ": ",
                  nic::DescribeReason(v.reason, args));
}

}  // namespace

FrameMeta DescribeFrame(Direction dir, uint64_t packet_id,
                        const nic::VerdictLog* log, const DaemonVerdict* daemon,
                        std::string* scratch, const DaemonVerdict* on_the_way) {
  FrameMeta meta;
  meta.direction = dir;
  meta.packet_id = packet_id;
  const nic::FrameVerdict* v = log != nullptr ? log->Find(packet_id) : nullptr;
  if (v == nullptr && !Given(daemon) && !Given(on_the_way)) return meta;
  scratch->clear();
  if (Given(on_the_way)) {
    Append(*on_the_way, scratch);
    meta.verdict = nic::DropReasonCode(on_the_way->reason);
  }
  if (Given(daemon)) {
    Append(*daemon, scratch);
    meta.verdict = nic::DropReasonCode(daemon->reason);
  }
  if (v != nullptr) {
    std::string words = nic::DescribeVerdict(*v);
    if (!words.empty()) {
      absl::StrAppend(scratch, scratch->empty() ? "" : "; ", words);
    }
    // The RNIC's verdict on what it received says more than the daemon's
    // (a corrupted frame: its ICRC verdict).
    if (v->reason != nic::DropReason::kNone) {
      meta.verdict = nic::DropReasonCode(v->reason);
    }
  }
  meta.comment = *scratch;
  return meta;
}

void WriteRecorder(const nic::FlightRecorder* rec, const nic::VerdictLog& log,
                   uint64_t time_base, PcapngWriter& out) {
  if (rec == nullptr) return;
  std::string scratch;
  rec->ForEach([&](const nic::RecorderEvent& e, std::span<const uint8_t> snap) {
    if (e.kind != nic::RecorderEventKind::kRx &&
        e.kind != nic::RecorderEventKind::kTx) {
      return;
    }
    const Direction dir = e.kind == nic::RecorderEventKind::kRx
                              ? Direction::kInbound
                              : Direction::kOutbound;
    FrameMeta meta = DescribeFrame(dir, e.id, &log, nullptr, &scratch);
    if (meta.comment.empty() && e.reason != nic::DropReason::kNone) {
      // The log moved on: the recorder still knows the reason.
      scratch = std::string(nic::DropReasonText(e.reason));
      if (e.cause != 0) absl::StrAppend(&scratch, " (packet ", e.cause, ")");
      meta.comment = scratch;
      if (e.kind == nic::RecorderEventKind::kRx) {
        meta.verdict = nic::DropReasonCode(e.reason);
      }
    }
    out.Write(snap, time_base + e.time, meta, e.len);
  });
}

}  // namespace rocemu::capture
